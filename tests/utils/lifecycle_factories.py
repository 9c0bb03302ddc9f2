"""Factories for lifecycle/retention tests: fresh tenants and memories inserted straight with SQL."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import insert
from sqlalchemy.ext.asyncio import AsyncConnection

from governance.dedup import content_hash
from governance.scopes import Scope, visible_scope_keys
from governance.scopes import scope_key as make_scope_key
from governance.storage.memory_rows import make_citation
from governance.storage.tables import memories

__all__ = ["Place", "new_place", "insert_memory"]


@dataclass(frozen=True)
class Place:
    """A fresh org/project/worktree/task, so tests never see each other's memories."""

    org: str
    project: str
    worktree: str
    task_id: str

    def key(self, scope: Scope) -> str:
        return make_scope_key(
            scope, org=self.org, project=self.project, worktree=self.worktree, task_id=self.task_id
        )

    @property
    def visible(self) -> list[str]:
        return visible_scope_keys(
            org=self.org, project=self.project, worktree=self.worktree, task_id=self.task_id
        )


def new_place() -> Place:
    u = uuid.uuid4().hex[:10]
    return Place(org=f"org-{u}", project=f"proj-{u}", worktree="main", task_id=f"task-{u}")


async def insert_memory(
    conn: AsyncConnection,
    place: Place,
    *,
    memory_type: str = "episode",
    task_id: str | None = None,
    created_at: datetime | None = None,
    content: str | None = None,
    **columns: Any,
) -> str:
    """One active project-scope memory with the given columns; returns its id."""
    memory_id = str(uuid.uuid4())
    text_ = content or f"{memory_type} {memory_id}"
    values: dict[str, Any] = {
        "id": memory_id,
        "citation": make_citation(memory_id),
        "memory_type": memory_type,
        "scope": "project",
        "scope_key": place.key(Scope.PROJECT),
        "org": place.org,
        "project": place.project,
        "title": text_[:40],
        "content": text_,
        "content_hash": content_hash(text_),
        "confidence": 0.6,
        "source_task_ids": [task_id or place.task_id],
    }
    if created_at is not None:
        values["created_at"] = created_at
    values.update(columns)
    await conn.execute(insert(memories).values(**values))
    return memory_id
