"""Reflection's use cases: a human starts a project's reflection; readers list its reflections.

Starting one needs the right to `approve` the project scope (humans, system, admins): a reflection stages
insights for that scope, and its promotion asks the same approvers. Agents and orchestrators get 403; a
caller of another tenant gets 404, as if the project did not exist. Listing needs `read` in the project.
"""

from __future__ import annotations

from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError

from api.schemas.reflections import ReflectionPublic, ReflectionsPage, ReflectionStart, ReflectionStarted
from api.services.approvals import proof_grant
from api.services.gateway import GatewayResources, temporal_client
from api.services.temporal_errors import temporal_errors
from governance.errors import InvalidInput, NotFound, PolicyDenied
from governance.identity import Principal
from governance.storage.reflections import list_reflections
from workflows.reflection_contract import WORKFLOW_TYPE, ReflectionInput, ReflectionTrigger, workflow_id_for

__all__ = ["start_reflection", "reflections"]

_LIST_LIMIT = 50


def _project_of(principal: Principal, org: str | None, project: str | None) -> tuple[str, str]:
    """The project named (or the caller's; an org-wide key must name one); another tenant's is NotFound."""
    org = org or principal.org
    project = project or principal.project
    if project is None:
        raise InvalidInput("name the project to reflect on (your key is org-wide)")
    if not principal.is_admin and (org != principal.org or principal.project not in (None, project)):
        raise NotFound(f"project {org}/{project} does not exist")
    return org, project


async def start_reflection(
    resources: GatewayResources, principal: Principal, body: ReflectionStart
) -> ReflectionStarted:
    """Start the project's ReflectionWorkflow (or find the one running); needs `approve` at project scope."""
    org, project = _project_of(principal, body.org, body.project)
    if not resources.authorizer.allowed(
        principal, org=org, project=project, scope="project", action="approve"
    ):
        raise PolicyDenied(
            f"{principal.actor_type.value} {principal.id} may not start a reflection of {org}/{project}: it "
            "needs the right to approve the project scope"
        )
    client = await temporal_client(resources)
    workflow_id = workflow_id_for(org, project)
    # the worker's proof that this caller asked (a raw start naming them proves nothing)
    grant = await proof_grant(resources, principal, workflow_id, "", "start")

    def _not_found(exc: Exception) -> NotFound:
        return NotFound(f"the reflection of {org}/{project} is not there: {exc}")

    async with temporal_errors(f"the reflection of {org}/{project}", _not_found):
        try:
            await client.start_workflow(
                WORKFLOW_TYPE,
                ReflectionInput(
                    org, project, ReflectionTrigger.MANUAL.value, requested_by=principal.id, grant=grant
                ),
                id=workflow_id,
                task_queue=resources.settings.task_queue,
                id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
                id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
                static_summary=f"Reflect on {org}/{project}, requested by {principal.id}",
            )
        except WorkflowAlreadyStartedError:
            return ReflectionStarted(workflow_id=workflow_id, org=org, project=project, started=False)
    return ReflectionStarted(workflow_id=workflow_id, org=org, project=project, started=True)


async def reflections(
    resources: GatewayResources, principal: Principal, org: str | None, project: str | None
) -> ReflectionsPage:
    """The project's newest reflections; needs `read` in the project."""
    org, project = _project_of(principal, org, project)
    if not resources.authorizer.allowed(principal, org=org, project=project, scope="project", action="read"):
        raise NotFound(f"project {org}/{project} does not exist")
    async with resources.engine.connect() as conn:
        rows = await list_reflections(conn, org, project, limit=_LIST_LIMIT)
    return ReflectionsPage(reflections=[ReflectionPublic(**r.__dict__) for r in rows])
