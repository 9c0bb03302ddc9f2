"""Migration 0018 (task ids belong to their tenant) both ways, on a database holding tasks and their traces.

Up: tasks opened before keep their id as key (nothing of theirs is rewritten); the same id may then be
opened in another org, never twice in one. Down: every task gets its public id back as its id, in every
table that names it; while two orgs share an id the downgrade refuses, naming it, and changes nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from alembic import command

from governance.storage.migrate import alembic_config, upgrade_head


@pytest.fixture
def fresh_database_url(pg_server: Any) -> Iterator[str]:
    name = f"tenant_ids_{uuid.uuid4().hex[:12]}"
    pg_server.psql(f"CREATE DATABASE {name};")
    try:
        yield str(pg_server.get_uri(name))
    finally:
        pg_server.psql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE);")


def _task(conn: psycopg.Connection[Any], key: str, org: str, public_id: str | None = None) -> None:
    """A task as the application writes it, with a staging entry, an approach, a task-scope memory and
    an event naming it."""
    if public_id is None:
        conn.execute(
            "INSERT INTO tasks (id, org, project, worktree, description, created_by, next_seq) "
            "VALUES (%s, %s, 'p', 'main', 'd', 'x', 1)",
            (key, org),
        )
    else:
        conn.execute(
            "INSERT INTO tasks (id, public_id, org, project, worktree, description, created_by, next_seq) "
            "VALUES (%s, %s, %s, 'p', 'main', 'd', 'x', 1)",
            (key, public_id, org),
        )
    conn.execute(
        "INSERT INTO staging_entries (task_id, seq, actor_id, actor_type, kind, content, request_hash) "
        "VALUES (%s, 0, 'a-1', 'agent', 'fact', %s, 'h')",
        (key, f"entry of {key}"),
    )
    conn.execute(
        "INSERT INTO approaches (task_id, fingerprint, text, last_outcome) "
        "VALUES (%s, 'f', 'retry', 'failure')",
        (key,),
    )
    memory_id = str(uuid.uuid4())
    conn.execute(
        "INSERT INTO memories (id, citation, memory_type, scope, scope_key, org, title, content, "
        "content_hash, confidence, source_task_ids) "
        "VALUES (%s, %s, 'fact', 'task', %s, %s, 't', %s, 'h', 0.5, %s)",
        (memory_id, uuid.uuid4().hex[:10], f"task:{key}", org, f"fact of {key}", [key, "elsewhere"]),
    )
    conn.execute(
        "INSERT INTO memory_events (memory_id, event_type, task_id) VALUES (%s, 'PROMOTED', %s)",
        (memory_id, key),
    )


def _traces(conn: psycopg.Connection[Any]) -> list[tuple[Any, ...]]:
    """Every place a task is named, sorted: (table, task, what)."""
    rows: list[tuple[Any, ...]] = []
    rows += conn.execute("SELECT 'tasks', id, org FROM tasks").fetchall()
    rows += conn.execute("SELECT 'staging', task_id, content FROM staging_entries").fetchall()
    rows += conn.execute("SELECT 'approaches', task_id, text FROM approaches").fetchall()
    rows += conn.execute("SELECT 'events', task_id, event_type FROM memory_events").fetchall()
    rows += conn.execute(
        "SELECT 'memories', scope_key, array_to_string(source_task_ids, ',') FROM memories"
    ).fetchall()
    return sorted(rows)


def test_migration_0018_keeps_old_tasks_and_gives_public_ids_back_on_downgrade(
    fresh_database_url: str,
) -> None:
    cfg = alembic_config(fresh_database_url)
    command.upgrade(cfg, "0017_quarantine")
    with psycopg.connect(fresh_database_url, autocommit=True) as conn:
        _task(conn, "t-1", "acme")
        before = _traces(conn)

    command.upgrade(cfg, "0018_tenant_task_ids")  # this migration alone: later ones add tables of their own
    with psycopg.connect(fresh_database_url, autocommit=True) as conn:
        assert _traces(conn) == before  # nothing of an existing task is rewritten
        assert conn.execute("SELECT public_id FROM tasks").fetchall() == [(None,)]
        # another org opens the same id; one org cannot open it twice (the key differs, the index holds)
        _task(conn, "globex/t-1", "globex", "t-1")
        _task(conn, "acme/t-2", "acme", "t-2")
        with pytest.raises(psycopg.errors.UniqueViolation):
            conn.execute(
                "INSERT INTO tasks (id, public_id, org, project, worktree, description, created_by) "
                "VALUES ('acme/t-1', 't-1', 'acme', 'p', 'main', 'd', 'x')"
            )
        shared = _traces(conn)

    with pytest.raises(Exception, match=r"'t-1' in acme, globex"):
        command.downgrade(cfg, "0017_quarantine")
    with psycopg.connect(fresh_database_url, autocommit=True) as conn:
        assert _traces(conn) == shared  # the refused downgrade changed nothing
        assert conn.execute("SELECT version_num FROM alembic_version").fetchone() == ("0018_tenant_task_ids",)
        # globex's t-1 goes (as an erasure would take it), then the downgrade can give every id back
        conn.execute("DELETE FROM memory_events WHERE task_id = 'globex/t-1'")
        conn.execute("DELETE FROM memories WHERE scope_key = 'task:globex/t-1'")
        conn.execute("DELETE FROM approaches WHERE task_id = 'globex/t-1'")
        conn.execute("DELETE FROM staging_entries WHERE task_id = 'globex/t-1'")
        conn.execute("DELETE FROM tasks WHERE id = 'globex/t-1'")

    command.downgrade(cfg, "0017_quarantine")
    with psycopg.connect(fresh_database_url, autocommit=True) as conn:
        after = _traces(conn)
        assert [r for r in after if "t-2" in str(r)] == [
            ("approaches", "t-2", "retry"),
            ("events", "t-2", "PROMOTED"),
            ("memories", "task:t-2", "t-2,elsewhere"),
            ("staging", "t-2", "entry of acme/t-2"),
            ("tasks", "t-2", "acme"),
        ]
        assert [r for r in after if "t-1" in str(r)] == [r for r in before]
        columns = dict(
            conn.execute(
                "SELECT column_name, character_maximum_length FROM information_schema.columns "
                "WHERE table_name = 'tasks'"
            ).fetchall()
        )
        assert "public_id" not in columns and columns["id"] == 128

    upgrade_head(fresh_database_url)  # and up again
    with psycopg.connect(fresh_database_url, autocommit=True) as conn:
        assert _traces(conn) == after
