"""staging_entries is partitioned by month: partitions ahead of time, the default partition as a safety net,
and migration 0005 moving existing rows (ids, keys and sequence numbers kept) both ways."""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from alembic import command
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from activities.retention import months_ahead
from governance.storage.migrate import alembic_config, upgrade_head
from governance.storage.staging_archive import (
    drop_empty_partitions,
    ensure_staging_partitions,
    staging_partitions,
)
from tests.utils.promotion_factories import Entry, make_task


async def _partition_of(engine: AsyncEngine, entry_id: int) -> str:
    async with engine.connect() as conn:
        return str(
            (
                await conn.execute(
                    text("SELECT tableoid::regclass::text FROM staging_entries WHERE id = :i"),
                    {"i": entry_id},
                )
            ).scalar_one()
        )


async def test_staging_partitions_exist_for_this_and_next_month(engine: AsyncEngine) -> None:
    async with engine.connect() as conn:
        names = {p.name for p in await staging_partitions(conn)}
    this, following, _ = months_ahead(datetime.now(UTC))
    assert {f"staging_entries_y{m:%Y}m{m:%m}" for m in (this, following)} <= names
    assert "staging_entries_default" in names
    task = await make_task(engine, "org-p", "proj-p", [Entry("fact", "routed by month")])
    assert await _partition_of(engine, task.entry_ids[0]) == f"staging_entries_y{this:%Y}m{this:%m}"


async def test_staging_partition_created_later_takes_rows_from_default(engine: AsyncEngine) -> None:
    month = datetime(random.randint(1970, 1999), random.randint(1, 12), 1, tzinfo=UTC)
    name = f"staging_entries_y{month:%Y}m{month:%m}"
    task = await make_task(engine, "org-p", "proj-p", [Entry("fact", "an old row")])
    (entry_id,) = task.entry_ids
    async with engine.begin() as conn:
        await conn.execute(
            text("UPDATE staging_entries SET created_at = :at WHERE id = :i"),
            {"at": month.replace(day=15), "i": entry_id},
        )
    assert await _partition_of(engine, entry_id) == "staging_entries_default"
    async with engine.begin() as conn:
        assert await ensure_staging_partitions(conn, [month]) == [name]
        assert await ensure_staging_partitions(conn, [month]) == []  # idempotent
    assert await _partition_of(engine, entry_id) == name
    async with engine.begin() as conn:
        assert name not in await drop_empty_partitions(conn, before=month.replace(year=month.year + 1))
        await conn.execute(text("DELETE FROM staging_entries WHERE id = :i"), {"i": entry_id})
        assert name in await drop_empty_partitions(conn, before=month.replace(year=month.year + 1))


@pytest.fixture
def fresh_database_url(pg_server: Any) -> Iterator[str]:
    name = f"partitions_{uuid.uuid4().hex[:12]}"
    pg_server.psql(f"CREATE DATABASE {name};")
    try:
        yield str(pg_server.get_uri(name))
    finally:
        pg_server.psql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE);")


_ROWS = (
    "SELECT id, task_id, seq, content, payload::text, idempotency_key, created_at FROM staging_entries "
    "ORDER BY id"
)
_INSERT = "INSERT INTO staging_entries (task_id, seq, actor_id, actor_type, kind, content, request_hash) "


def test_migration_0005_keeps_staging_rows_both_ways(fresh_database_url: str) -> None:
    cfg = alembic_config(fresh_database_url)
    command.upgrade(cfg, "0004_promotion_plans")
    with psycopg.connect(fresh_database_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO tasks (id, org, project, worktree, description, created_by, next_seq) "
            "VALUES ('t-1', 'o', 'p', 'main', 'd', 'x', 3)"
        )
        for seq, (at, key) in enumerate(
            [("2024-01-31 23:59:59+00", "k-1"), ("2024-02-01 00:00:00+00", None), ("now", "k-3")], start=1
        ):
            conn.execute(
                "INSERT INTO staging_entries (task_id, seq, actor_id, actor_type, kind, content, payload, "
                "idempotency_key, request_hash, created_at) "
                "VALUES ('t-1', %s, 'a-1', 'agent', 'fact', %s, '{\"n\": 1.50}', %s, 'h', %s)",
                (seq, f"entry {seq}", key, at),
            )
        before = conn.execute(_ROWS).fetchall()
    upgrade_head(fresh_database_url)
    with psycopg.connect(fresh_database_url, autocommit=True) as conn:
        assert conn.execute(_ROWS).fetchall() == before
        parts = [
            r[0] for r in conn.execute("SELECT tableoid::regclass::text FROM staging_entries ORDER BY id")
        ]
        assert parts[:2] == ["staging_entries_y2024m01", "staging_entries_y2024m02"]
        keys = conn.execute(
            "SELECT idempotency_key, entry_id FROM staging_idempotency ORDER BY seq"
        ).fetchall()
        assert keys == [("k-1", before[0][0]), ("k-3", before[2][0])]
        new_id = conn.execute(
            _INSERT + "VALUES ('t-1', 4, 'a-1', 'agent', 'fact', 'after', 'h') RETURNING id"
        ).fetchone()
        assert new_id is not None and new_id[0] > before[-1][0]
        after = conn.execute(_ROWS).fetchall()
    command.downgrade(cfg, "0004_promotion_plans")
    with psycopg.connect(fresh_database_url, autocommit=True) as conn:
        assert conn.execute(_ROWS).fetchall() == after
        with pytest.raises(psycopg.errors.UniqueViolation):
            conn.execute(_INSERT + "VALUES ('t-1', 4, 'a-1', 'agent', 'fact', 'a duplicate seq', 'h')")
