"""Alembic migrations go both ways: `downgrade base` leaves nothing behind, `upgrade head` rebuilds all."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from alembic import command

from governance.storage.migrate import alembic_config, downgrade_base, upgrade_head


@pytest.fixture
def fresh_database_url(pg_server: Any) -> Iterator[str]:
    """A database of its own, so dropping every table cannot disturb the session's test database."""
    name = f"migrations_{uuid.uuid4().hex[:12]}"
    pg_server.psql(f"CREATE DATABASE {name};")
    try:
        yield str(pg_server.get_uri(name))
    finally:
        pg_server.psql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE);")


def _tables(database_url: str) -> set[str]:
    with psycopg.connect(database_url) as conn:
        rows = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'").fetchall()
    return {name for (name,) in rows}


def _policy_rows(database_url: str) -> int:
    with psycopg.connect(database_url) as conn:
        return int(conn.execute("SELECT count(*) FROM casbin_rule").fetchone()[0])  # type: ignore[index]


def test_migrations_downgrade_base_then_upgrade_head_round_trips(fresh_database_url: str) -> None:
    upgrade_head(fresh_database_url)
    schema = _tables(fresh_database_url)
    policy_rows = _policy_rows(fresh_database_url)
    assert {
        "tasks",
        "staging_entries",
        "memories",
        "memory_events",
        "approaches",
        "principals",
        "api_keys",
        "casbin_rule",
    } <= schema
    assert policy_rows > 0

    downgrade_base(fresh_database_url)
    assert _tables(fresh_database_url) <= {"alembic_version"}

    upgrade_head(fresh_database_url)
    assert _tables(fresh_database_url) == schema
    assert _policy_rows(fresh_database_url) == policy_rows


def _key_columns(database_url: str) -> dict[str, set[str]]:
    """The key column and unique constraint names of the two tables that hold an idempotency key."""
    with psycopg.connect(database_url) as conn:
        columns = conn.execute(
            "SELECT table_name, column_name FROM information_schema.columns "
            "WHERE table_schema = 'public' AND table_name IN ('memory_events', 'change_requests') "
            "AND column_name IN ('dedupe_key', 'idempotency_key')"
        ).fetchall()
        constraints = conn.execute(
            "SELECT conname FROM pg_constraint WHERE contype = 'u' "
            "AND conrelid IN ('memory_events'::regclass, 'change_requests'::regclass)"
        ).fetchall()
    return {
        "columns": {f"{table}.{column}" for table, column in columns},
        "constraints": {name for (name,) in constraints},
    }


def test_migrations_idempotency_key_rename_keeps_keys_both_ways(fresh_database_url: str) -> None:
    upgrade_head(fresh_database_url)
    assert _key_columns(fresh_database_url) == {
        "columns": {"memory_events.idempotency_key", "change_requests.idempotency_key"},
        "constraints": {"memory_events_idempotency_key_key", "change_requests_idempotency_key_key"},
    }
    with psycopg.connect(fresh_database_url) as conn:
        conn.execute(
            "INSERT INTO memory_events (event_type, idempotency_key) VALUES ('PROMOTED', 'promote-t:0')"
        )

    command.downgrade(alembic_config(fresh_database_url), "0023_idempotency_key-1")
    assert _key_columns(fresh_database_url) == {
        "columns": {"memory_events.dedupe_key", "change_requests.dedupe_key"},
        "constraints": {"memory_events_dedupe_key_key", "change_requests_dedupe_key_key"},
    }
    with psycopg.connect(fresh_database_url) as conn:
        kept = conn.execute("SELECT dedupe_key FROM memory_events").fetchall()
        assert kept == [("promote-t:0",)]
        with pytest.raises(psycopg.errors.UniqueViolation):
            conn.execute(
                "INSERT INTO memory_events (event_type, dedupe_key) VALUES ('PROMOTED', 'promote-t:0')"
            )

    upgrade_head(fresh_database_url)
    with psycopg.connect(fresh_database_url) as conn:
        assert conn.execute("SELECT idempotency_key FROM memory_events").fetchall() == [("promote-t:0",)]
