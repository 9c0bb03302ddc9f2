"""Helpers for retention tests on promoted memory: age what a task published, add a reflection's insight."""

from __future__ import annotations

import uuid

from sqlalchemy import insert, select, text
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.dedup import content_hash
from governance.storage.derivations import record_derivations
from governance.storage.memory_rows import make_citation
from governance.storage.tables import memories
from tests.utils.tenancy import task_key_of

__all__ = ["age_memories", "add_insight", "pruned_events"]


async def age_memories(engine: AsyncEngine, task_id: str, days: int) -> int:
    """Move the creation (and last validation) of every memory `task_id` published `days` into the past."""
    async with engine.begin() as conn:
        result = await conn.execute(
            text(
                "UPDATE memories SET created_at = created_at - make_interval(days => :d), "
                "last_validated_at = last_validated_at - make_interval(days => :d) "
                "WHERE :t = ANY(source_task_ids)"
            ),
            {"d": days, "t": task_key_of(task_id)},
        )
        return int(result.rowcount or 0)


async def add_insight(engine: AsyncEngine, episode_id: str, title: str) -> str:
    """An active insight in the episode's scope, derived from it (what reflection writes)."""
    async with engine.begin() as conn:
        episode = (await conn.execute(select(memories).where(memories.c.id == episode_id))).one()
        memory_id = str(uuid.uuid4())
        body = f"{title}: what the episodes taught"
        await conn.execute(
            insert(memories).values(
                id=memory_id,
                citation=make_citation(memory_id),
                memory_type="insight",
                scope=episode.scope,
                scope_key=episode.scope_key,
                org=episode.org,
                project=episode.project,
                title=title,
                content=body,
                content_hash=content_hash(body),
                confidence=0.6,
                source_task_ids=list(episode.source_task_ids),
            )
        )
        await record_derivations(conn, [(memory_id, episode_id)], task_id=None)
    return memory_id


async def pruned_events(
    engine: AsyncEngine, memory_ids: list[str]
) -> list[tuple[str, str, dict[str, object]]]:
    """(memory id, reason, payload) of the PRUNED events about these memories."""
    async with engine.connect() as conn:
        rows = await conn.execute(
            text(
                "SELECT memory_id::text, reason, payload FROM memory_events WHERE event_type = 'PRUNED' "
                "AND memory_id = ANY(CAST(:ids AS uuid[])) ORDER BY id"
            ),
            {"ids": memory_ids},
        )
        return [(r[0], r[1], r[2]) for r in rows]
