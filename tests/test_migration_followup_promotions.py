"""Migration 0025: each task's existing promotion becomes its promotion 1, with its outcome and snapshot."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from alembic import command

from governance.storage.migrate import alembic_config

_BEFORE = "0024_item_decisions"
_AFTER = "0025_followup_promotions"


@pytest.fixture
def database_url(pg_server: Any) -> Iterator[str]:
    name = f"migrations_{uuid.uuid4().hex[:12]}"
    pg_server.psql(f"CREATE DATABASE {name};")
    try:
        yield str(pg_server.get_uri(name))
    finally:
        pg_server.psql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE);")


def _task(conn: psycopg.Connection[Any], key: str, status: str, workflow: str | None, last: int) -> None:
    conn.execute(
        "INSERT INTO tasks (id, public_id, org, project, worktree, description, status, next_seq, "
        "promotion_workflow_id, created_by) VALUES (%s, %s, 'o', 'p', 'main', 'd', %s, %s, %s, 'someone')",
        (key, key.rpartition("/")[2], status, last, workflow),
    )


def test_migration_0025_records_existing_promotions_and_goes_back(database_url: str) -> None:
    config = alembic_config(database_url)
    command.upgrade(config, _BEFORE)
    with psycopg.connect(database_url, autocommit=True) as conn:
        _task(conn, "o/published", "promoted", "promote-o/published", 5)
        _task(conn, "o/rejected", "rejected", "promote-o/rejected", 3)
        _task(conn, "o/waiting", "open", "promote-o/waiting", 2)
        _task(conn, "o/failed", "failed", "promote-o/failed", 4)
        _task(conn, "o/never", "open", None, 1)
    command.upgrade(config, _AFTER)
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            "SELECT task_id, number, workflow_id, after_seq, last_seq, outcome "
            "FROM promotions ORDER BY task_id"
        ).fetchall()
        closed = conn.execute("SELECT count(*) FROM tasks WHERE closed_at IS NOT NULL").fetchone()
    assert rows == [
        ("o/failed", 1, "promote-o/failed", 0, None, "failed"),
        ("o/published", 1, "promote-o/published", 0, 5, "published"),
        ("o/rejected", 1, "promote-o/rejected", 0, 3, "rejected"),
        ("o/waiting", 1, "promote-o/waiting", 0, None, None),
    ]
    assert closed == (0,)
    command.downgrade(config, _BEFORE)
    with psycopg.connect(database_url) as conn:
        tables = {r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}
        columns = {
            r[0]
            for r in conn.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = 'tasks'"
            )
        }
        kept = conn.execute("SELECT promotion_workflow_id FROM tasks WHERE id = 'o/published'").fetchone()
    assert "promotions" not in tables and "closed_at" not in columns
    assert kept == ("promote-o/published",)
