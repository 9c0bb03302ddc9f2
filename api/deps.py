"""FastAPI dependencies: the database, the authenticated principal, the authoriser, Temporal, tasks.

Handlers declare what they need (`CurrentPrincipal`, `TaskFor("write")`...) and contain no permission
`if`s: authentication happens in `current_principal`, authorisation in `Authorizer.check`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Coroutine
from typing import Annotated, Any

from fastapi import Depends, Header, Path, Request
from sqlalchemy.ext.asyncio import AsyncEngine

from api.service import load_task as load_cached_task
from api.service import principal_from_authorization, temporal_client
from governance.config import Settings
from governance.identity import Principal
from governance.scopes import Scope
from governance.staging import TASK_ID_PATTERN
from governance.storage.staging import TaskInfo
from policy.enforcer import Authorizer

__all__ = [
    "EngineDep",
    "SettingsDep",
    "AuthorizerDep",
    "CurrentPrincipal",
    "TemporalDep",
    "KeyCache",
    "TaskCache",
    "TaskFor",
    "load_task",
]

# Authenticated keys are cached briefly per process; any policy/key change (NOTIFY) clears the cache.
KEY_CACHE_SECONDS = 30.0


class KeyCache:
    """key → (principal, expiry). Cleared on every policy notification (e.g. a revoked key)."""

    def __init__(self) -> None:
        self._entries: dict[str, tuple[Principal, float]] = {}

    def get(self, key: str) -> Principal | None:
        hit = self._entries.get(key)
        if hit is None or hit[1] < time.monotonic():
            return None
        return hit[0]

    def put(self, key: str, principal: Principal) -> None:
        if len(self._entries) > 10_000:
            self._entries.clear()
        self._entries[key] = (principal, time.monotonic() + KEY_CACHE_SECONDS)

    def clear(self) -> None:
        self._entries.clear()


class TaskCache:
    """Tasks never change tenant, so their tenant lookup is cached per process (bounded)."""

    def __init__(self, size: int = 50_000) -> None:
        self._size = size
        self._entries: dict[str, TaskInfo] = {}

    def get(self, task_id: str) -> TaskInfo | None:
        return self._entries.get(task_id)

    def put(self, task: TaskInfo) -> None:
        if len(self._entries) >= self._size:
            self._entries.clear()
        self._entries[task.id] = task


def _engine(request: Request) -> AsyncEngine:
    return request.app.state.engine  # type: ignore[no-any-return]


def _settings(request: Request) -> Settings:
    return request.app.state.settings  # type: ignore[no-any-return]


def _authorizer(request: Request) -> Authorizer:
    return request.app.state.authorizer  # type: ignore[no-any-return]


EngineDep = Annotated[AsyncEngine, Depends(_engine)]
SettingsDep = Annotated[Settings, Depends(_settings)]
AuthorizerDep = Annotated[Authorizer, Depends(_authorizer)]


async def current_principal(
    request: Request,
    authorization: Annotated[str | None, Header(description="`Bearer <api key>`")] = None,
) -> Principal:
    """The principal behind the bearer key; the actor of every write is this, never a client field."""
    principal = await principal_from_authorization(request.app.state, authorization)
    request.state.principal = principal
    return principal


CurrentPrincipal = Annotated[Principal, Depends(current_principal)]


async def _temporal(request: Request) -> Any:
    """The process's Temporal client, connected on first use (the gateway starts without Temporal)."""
    return await temporal_client(request.app.state)


TemporalDep = Annotated[Any, Depends(_temporal)]


async def load_task(request: Request, task_id: str) -> TaskInfo:
    """The task (cached), or 404."""
    return await load_cached_task(request.app.state, task_id)


def TaskFor(action: str, scope: Scope = Scope.TASK) -> Callable[..., Coroutine[Any, Any, TaskInfo]]:  # noqa: N802
    """A dependency: the path's task, after Casbin allowed the caller `action` at `scope` in its tenant."""

    async def _dependency(
        request: Request,
        principal: CurrentPrincipal,
        authorizer: AuthorizerDep,
        # the pattern refuses ids no task can have (422) before they reach the database
        task_id: Annotated[str, Path(description="The task id", max_length=128, pattern=TASK_ID_PATTERN)],
    ) -> TaskInfo:
        task = await load_task(request, task_id)
        authorizer.check(principal, org=task.org, project=task.project, scope=scope, action=action)
        return task

    return _dependency
