"""`loregate migrate`: idempotent, says which database it used, fails in one line when it cannot connect."""

from __future__ import annotations

import psycopg

from tests.utils.cli import cli_env, free_port, run_cli


def _tables(database_url: str) -> set[str]:
    with psycopg.connect(database_url) as conn:
        rows = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'").fetchall()
    return {name for (name,) in rows}


def test_migrate_twice_is_idempotent(empty_database_url: str) -> None:
    env = cli_env(LOREGATE_DATABASE_URL=empty_database_url)
    first = run_cli("migrate", env=env)
    assert first.returncode == 0, first.stderr
    assert "LOREGATE_DATABASE_URL" in first.stderr
    tables = _tables(empty_database_url)
    assert {"tasks", "staging_entries", "memories", "principals", "api_keys", "casbin_rule"} <= tables

    second = run_cli("migrate", env=env)
    assert second.returncode == 0, second.stderr
    assert _tables(empty_database_url) == tables


def test_migrate_unreachable_database_fails_in_one_line() -> None:
    url = f"postgresql://loregate:secret-pw@127.0.0.1:{free_port()}/nowhere"
    result = run_cli("migrate", env=cli_env(LOREGATE_DATABASE_URL=url))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr + result.stdout
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "database unreachable" in errors[0]
    assert "secret-pw" not in result.stderr + result.stdout
