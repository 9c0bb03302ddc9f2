"""FastAPI dependencies: the process's resources, the authenticated principal, and an authorised task.

Handlers declare what they need (`Resources`, `CurrentPrincipal`, `TaskFor("write")`) and contain no
permission `if`s: authentication and authorisation are the services' (api/services/gateway.py).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Annotated, Any

from fastapi import Depends, Header, Path, Request

from api.services.gateway import GatewayResources, authorized_task, principal_from_authorization
from governance.identity import Principal
from governance.scopes import Scope
from governance.staging import TASK_ID_PATTERN
from governance.storage.staging import TaskInfo

__all__ = ["Resources", "CurrentPrincipal", "TaskFor", "TaskId"]


async def _resources(request: Request) -> GatewayResources:
    # async: FastAPI runs a plain `def` dependency in its thread pool, a thread hop on every request
    return request.app.state.resources  # type: ignore[no-any-return]


Resources = Annotated[GatewayResources, Depends(_resources)]

# the pattern refuses ids no task can have (422) before they reach the database
TaskId = Annotated[str, Path(description="The task id", max_length=128, pattern=TASK_ID_PATTERN)]


async def current_principal(
    resources: Resources,
    authorization: Annotated[str | None, Header(description="`Bearer <api key>`")] = None,
) -> Principal:
    """The principal behind the bearer key; the actor of every write is this, never a client field."""
    return await principal_from_authorization(resources, authorization)


CurrentPrincipal = Annotated[Principal, Depends(current_principal)]


def TaskFor(action: str, scope: Scope = Scope.TASK) -> Callable[..., Coroutine[Any, Any, TaskInfo]]:  # noqa: N802
    """A dependency: the path's task, after Casbin allowed the caller `action` at `scope` in its tenant.

    It runs before the body is validated, so a caller outside the tenant learns nothing from a 422.
    """

    async def _dependency(resources: Resources, principal: CurrentPrincipal, task_id: TaskId) -> TaskInfo:
        return await authorized_task(resources, principal, task_id, action, scope)

    return _dependency
