"""A project's knowledge as the scheduled workflow last computed it: hotspots and statistics.

Readers of the project's scope only (the permission search asks in that project): the snapshot counts
active project-scope memory, which exactly those readers may search. The org is the caller's own.
"""

from __future__ import annotations

from api.schemas.episodes import ProjectKnowledgePublic
from api.services.gateway import GatewayResources
from governance.errors import InvalidInput, NotFound, PolicyDenied
from governance.identity import Principal
from governance.scopes import Scope
from governance.storage.knowledge import latest_snapshot, project_exists

__all__ = ["project_knowledge"]


async def project_knowledge(
    resources: GatewayResources, principal: Principal, project: str
) -> ProjectKnowledgePublic:
    """The latest snapshot of `project` (of the caller's org), with when it was computed."""
    name = project.strip()
    if not name:
        raise InvalidInput("project: give a project name, not white space")
    org = principal.org
    if not resources.authorizer.allowed(principal, org=org, project=name, scope=Scope.PROJECT, action="read"):
        raise PolicyDenied(f"{principal.id} may not read project {name!r} of {org!r}")
    async with resources.engine.connect() as conn:
        if not await project_exists(conn, org=org, project=name):
            raise NotFound(f"project {name!r} has no tasks or memories in org {org!r}")
        latest = await latest_snapshot(conn, org=org, project=name)
    if latest is None:
        raise NotFound(
            f"project {name!r} has no computed knowledge yet: the loregate-knowledge schedule computes it "
            "(or run `loregate schedules trigger`)"
        )
    computed_at, snapshot = latest
    return ProjectKnowledgePublic.model_validate({**snapshot, "computed_at": computed_at})
