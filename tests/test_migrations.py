"""Alembic migrations go both ways: `downgrade base` leaves nothing behind, `upgrade head` rebuilds all."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from governance.storage.migrate import downgrade_base, upgrade_head


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
