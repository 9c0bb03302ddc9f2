"""Principals with real API keys, and tasks, made through the same code the CLI uses."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncEngine

from governance.identity import Principal
from governance.scopes import ActorType
from governance.storage import staging
from governance.storage.identity import create_api_key, create_principal

__all__ = ["Actor", "make_actor", "new_tenant", "open_task"]


@dataclass(frozen=True)
class Actor:
    """A principal and its key, ready to put in an Authorization header."""

    principal: Principal
    key: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}


async def make_actor(
    engine: AsyncEngine, actor_type: ActorType, org: str, project: str | None, *, is_admin: bool = False
) -> Actor:
    async with engine.begin() as conn:
        principal = await create_principal(
            conn,
            name=f"{actor_type.value}-{uuid.uuid4().hex[:6]}",
            actor_type=actor_type,
            org=org,
            project=project,
            is_admin=is_admin,
        )
        key = await create_api_key(conn, principal.id)
    return Actor(principal, key)


def new_tenant() -> tuple[str, str]:
    """A fresh (org, project) so tests never see each other's rows."""
    suffix = uuid.uuid4().hex[:8]
    return f"org-{suffix}", f"proj-{suffix}"


async def open_task(engine: AsyncEngine, org: str, project: str, description: str = "test task") -> str:
    """A new open task on worktree `main` of (org, project), opened as the gateway opens one; its id."""
    task, _ = await staging.open_task(
        engine,
        task_id=f"t-{uuid.uuid4().hex}",
        org=org,
        project=project,
        worktree="main",
        description=description,
        created_by="test",
    )
    return task.id
