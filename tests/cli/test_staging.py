"""`loregate staging archive`: a preview that writes nothing, then the archive itself, against a database."""

from __future__ import annotations

from pathlib import Path

import psycopg

from governance.staging_archive import decode_chunk
from tests.utils.cli import cli_env, run_cli


def _seed(url: str) -> None:
    """A task published 40 days ago with two staging entries."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO tasks (id, org, project, worktree, description, created_by, next_seq, status, "
            "ended_at) VALUES ('t-old', 'acme', 'shop', 'main', 'd', 'x', 2, 'promoted', "
            "now() - interval '40 days')"
        )
        for seq in (1, 2):
            conn.execute(
                "INSERT INTO staging_entries (task_id, seq, actor_id, actor_type, kind, content, "
                "request_hash) VALUES ('t-old', %s, 'a-1', 'agent', 'fact', %s, 'h')",
                (seq, f"entry {seq}"),
            )


def _staged(url: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT count(*) FROM staging_entries WHERE task_id = 't-old'").fetchone()
    assert row is not None
    return int(row[0])


def test_staging_archive_dry_run_then_archive(migrated_database_url: str, tmp_path: Path) -> None:
    _seed(migrated_database_url)
    env = cli_env(LOREGATE_DATABASE_URL=migrated_database_url)
    preview = run_cli("staging", "archive", "--dry-run", env=env)
    assert preview.returncode == 0, preview.stderr
    assert "would archive 2 staging entries of 1 tasks" in preview.stdout
    assert _staged(migrated_database_url) == 2

    done = run_cli("staging", "archive", "--archive-dir", str(tmp_path), env=env)
    assert done.returncode == 0, done.stderr
    assert "archived 2 staging entries of 1 tasks" in done.stdout
    (path,) = tmp_path.rglob("*.jsonl.gz")
    assert [e.content for e in decode_chunk(path.read_bytes())] == ["entry 1", "entry 2"]
    assert _staged(migrated_database_url) == 0


def test_staging_archive_refuses_a_zero_age(migrated_database_url: str) -> None:
    result = run_cli(
        "staging", "archive", "--after-days", "0", env=cli_env(LOREGATE_DATABASE_URL=migrated_database_url)
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr + result.stdout
