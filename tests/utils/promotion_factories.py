"""Tasks with staging entries written straight into Postgres (the HTTP staging path is tested elsewhere)."""

from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.scopes import ActorType
from governance.storage.identity import create_api_key, create_principal
from governance.storage.tables import memories, memory_events, staging_entries, tasks
from tests.utils.tenancy import task_key_of

__all__ = [
    "StagedTask",
    "Entry",
    "make_task",
    "make_large_task",
    "active_memories",
    "events_of",
    "all_memories_text",
]


@dataclass(frozen=True)
class Entry:
    """A staging entry to write: kind, content, optional payload."""

    kind: str
    content: str
    payload: dict[str, Any] | None = None


@dataclass(frozen=True)
class StagedTask:
    """A task row and the ids of its entries."""

    task_id: str
    org: str
    project: str
    worktree: str
    entry_ids: list[int] = field(default_factory=list)
    # an orchestrator of the task's tenant, with a key: the `requested_by` a promotion's start names
    requested_by: str = ""


async def make_requester(engine: AsyncEngine, org: str, project: str) -> str:
    """An enabled orchestrator of (org, project), allowed to promote: who starts a test's promotion."""
    async with engine.begin() as conn:
        principal = await create_principal(
            conn,
            name=f"orchestrator-{uuid.uuid4().hex[:6]}",
            actor_type=ActorType.ORCHESTRATOR,
            org=org,
            project=project,
        )
        await create_api_key(conn, principal.id)
    return principal.id


async def requester_for(engine: AsyncEngine, task_id: str) -> str:
    """An enabled orchestrator of the tenant of an existing task (`make_requester` for it)."""
    async with engine.connect() as conn:
        row = (await conn.execute(select(tasks.c.org, tasks.c.project).where(tasks.c.id == task_id))).one()
    return await make_requester(engine, row.org, row.project)


async def make_task(
    engine: AsyncEngine,
    org: str,
    project: str,
    entries: list[Entry],
    *,
    description: str = "a task",
    worktree: str = "main",
    actor_id: str = "agent-test",
) -> StagedTask:
    """A task with `entries` (seq 0..n-1), as the staging path would have written them."""
    task_id = f"t-{uuid.uuid4().hex[:12]}"
    ids: list[int] = []
    async with engine.begin() as conn:
        await conn.execute(
            insert(tasks).values(
                id=task_id,
                org=org,
                project=project,
                worktree=worktree,
                description=description,
                next_seq=len(entries),
                created_by=actor_id,
            )
        )
        for seq, entry in enumerate(entries):
            body = json.dumps([entry.kind, entry.content, entry.payload], sort_keys=True)
            row = await conn.execute(
                insert(staging_entries)
                .values(
                    task_id=task_id,
                    seq=seq,
                    actor_id=actor_id,
                    actor_type="agent",
                    kind=entry.kind,
                    content=entry.content,
                    payload=entry.payload,
                    request_hash=hashlib.sha256(body.encode()).hexdigest(),
                )
                .returning(staging_entries.c.id)
            )
            ids.append(int(row.scalar_one()))
    return StagedTask(task_id, org, project, worktree, ids, await make_requester(engine, org, project))


async def make_large_task(
    engine: AsyncEngine,
    org: str,
    project: str,
    entries: list[Entry],
    *,
    description: str = "a large task",
    worktree: str = "main",
    actor_id: str = "agent-test",
    batch: int = 1000,
) -> StagedTask:
    """`make_task` for thousands of entries: the same rows, written `batch` at a time in one statement."""
    task_id = f"t-{uuid.uuid4().hex[:12]}"
    ids: list[int] = []
    async with engine.begin() as conn:
        await conn.execute(
            insert(tasks).values(
                id=task_id,
                org=org,
                project=project,
                worktree=worktree,
                description=description,
                next_seq=len(entries),
                created_by=actor_id,
            )
        )
        for start in range(0, len(entries), batch):
            rows = [
                {
                    "task_id": task_id,
                    "seq": seq,
                    "actor_id": actor_id,
                    "actor_type": "agent",
                    "kind": entry.kind,
                    "content": entry.content,
                    "payload": entry.payload,
                    "request_hash": hashlib.sha256(
                        json.dumps([entry.kind, entry.content, entry.payload], sort_keys=True).encode()
                    ).hexdigest(),
                }
                for seq, entry in enumerate(entries[start : start + batch], start=start)
            ]
            written = await conn.execute(
                insert(staging_entries).values(rows).returning(staging_entries.c.id, staging_entries.c.seq)
            )
            ids += [int(r.id) for r in sorted(written, key=lambda r: int(r.seq))]
    return StagedTask(task_id, org, project, worktree, ids, await make_requester(engine, org, project))


async def active_memories(
    engine: AsyncEngine, *, task_id: str | None = None, scope_key: str | None = None
) -> list[Any]:
    """Active (not deprecated) memories from a task or in a scope key."""
    query = select(memories).where(memories.c.deprecated_at.is_(None))
    if task_id is not None:
        query = query.where(memories.c.source_task_ids.any(task_key_of(task_id)))
    if scope_key is not None:
        query = query.where(memories.c.scope_key == scope_key)
    async with engine.connect() as conn:
        return list(await conn.execute(query.order_by(memories.c.created_at)))


async def all_memories_text(engine: AsyncEngine, task_id: str) -> str:
    """Titles and contents of every memory (active or not) a task contributed to."""
    async with engine.connect() as conn:
        rows = await conn.execute(
            select(memories.c.title, memories.c.content).where(
                memories.c.source_task_ids.any(task_key_of(task_id))
            )
        )
        return "\n".join(f"{r.title}\n{r.content}" for r in rows)


async def events_of(engine: AsyncEngine, task_id: str) -> list[Any]:
    """Every memory event of a task, oldest first."""
    async with engine.connect() as conn:
        return list(
            await conn.execute(
                select(memory_events)
                .where(memory_events.c.task_id == task_key_of(task_id))
                .order_by(memory_events.c.id)
            )
        )
