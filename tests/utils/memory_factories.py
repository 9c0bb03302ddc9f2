"""Factories for read-path tests: tasks, staging entries and published memories inserted straight with SQL.

Each call gets fresh uuid-based tenants, so tests isolate by ids and never see each other's rows.
"""

from __future__ import annotations

import hashlib
import secrets
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
from sqlalchemy import insert, text
from sqlalchemy.ext.asyncio import AsyncConnection

from governance.scopes import Scope, scope_key
from governance.storage.tables import memories, staging_entries, tasks

__all__ = ["TaskRef", "new_task", "add_entries", "add_memory"]


@dataclass(frozen=True)
class TaskRef:
    """A task and its tenant, as stored."""

    task_id: str
    org: str
    project: str
    worktree: str

    def key(self, scope: Scope) -> str:
        """The scope key of `scope` as seen from this task."""
        return scope_key(
            scope, org=self.org, project=self.project, worktree=self.worktree, task_id=self.task_id
        )


async def new_task(
    conn: AsyncConnection,
    *,
    org: str | None = None,
    project: str | None = None,
    worktree: str = "main",
    created_by: str = "test",
) -> TaskRef:
    """A task in a fresh (or the given) tenant."""
    ref = TaskRef(
        task_id=f"t-{uuid.uuid4().hex[:12]}",
        org=org or f"org-{uuid.uuid4().hex[:8]}",
        project=project or f"proj-{uuid.uuid4().hex[:8]}",
        worktree=worktree,
    )
    await conn.execute(
        insert(tasks).values(
            id=ref.task_id,
            org=ref.org,
            project=ref.project,
            worktree=ref.worktree,
            description="read-path test task",
            created_by=created_by,
        )
    )
    return ref


async def add_entries(
    conn: AsyncConnection, task: TaskRef, contents: Sequence[str], *, kind: str = "fact"
) -> list[int]:
    """Append staging entries to `task` (seq from the task's counter) and return their ids."""
    ids: list[int] = []
    for content in contents:
        seq = (
            await conn.execute(
                text("UPDATE tasks SET next_seq = next_seq + 1 WHERE id = :id RETURNING next_seq - 1"),
                {"id": task.task_id},
            )
        ).scalar_one()
        entry_id = (
            await conn.execute(
                insert(staging_entries)
                .values(
                    task_id=task.task_id,
                    seq=seq,
                    actor_id="agent-test",
                    actor_type="agent",
                    kind=kind,
                    content=content,
                    payload={"source": "test"},
                    request_hash=hashlib.sha256(content.encode()).hexdigest(),
                )
                .returning(staging_entries.c.id)
            )
        ).scalar_one()
        ids.append(int(entry_id))
    return ids


async def add_memory(
    conn: AsyncConnection,
    task: TaskRef,
    *,
    title: str,
    content: str,
    embedding: np.ndarray | Sequence[float] | None,
    memory_type: str = "fact",
    scope: Scope = Scope.PROJECT,
    scope_key_override: str | None = None,
    confidence: float = 0.6,
    importance: float = 0.5,
    created_at: datetime | None = None,
    deprecated_at: datetime | None = None,
    expires_at: datetime | None = None,
    supersedes_id: str | None = None,
    source_entry_ids: Sequence[int] = (),
    canonical_key: str | None = None,
    citation: str | None = None,
    **extra: Any,
) -> dict[str, str]:
    """Insert one published memory in `task`'s tenant at `scope`; returns its id and citation."""
    memory_id = str(uuid.uuid4())
    cite = citation or secrets.token_hex(4)
    when = created_at or datetime.now(UTC)
    await conn.execute(
        insert(memories).values(
            id=memory_id,
            citation=cite,
            memory_type=memory_type,
            scope=scope.value,
            scope_key=scope_key_override or task.key(scope),
            org=task.org,
            project=None if scope is Scope.ORG else task.project,
            canonical_key=canonical_key,
            title=title,
            content=content,
            embedding=None if embedding is None else np.asarray(embedding, dtype=np.float32),
            content_hash=hashlib.sha256(content.encode()).hexdigest(),
            confidence=confidence,
            importance=importance,
            source_task_ids=[task.task_id],
            source_entry_ids=list(source_entry_ids),
            supersedes_id=supersedes_id,
            deprecated_at=deprecated_at,
            expires_at=expires_at,
            created_at=when,
            updated_at=when,
            **extra,
        )
    )
    return {"id": memory_id, "citation": cite}
