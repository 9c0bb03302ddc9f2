"""Erasure with receipts: one memory, a task, or a subject, with a dry run, leaving an ERASED event.

Who may erase: principals with Casbin's `erase` at the target's scope in its tenant (humans and system by
default, policy/loregate_policy.csv; agents and orchestrators may not): a memory at its own scope, a task at
task scope in the task's tenant, a subject at project scope in the named project (org scope without one).
A caller who may not even read the target is told it does not exist (404), as everywhere else.

A dry run lists what would go: ids, citations, titles and content hashes, never contents. The real run is
governance/operations/erasure.py (one transaction, its receipt listing every place with a count: rows,
archive files, Temporal histories), preceded by what no operation does: deleting the Temporal histories of
the workflows involved (the promotions that staged, planned or published what goes, the change requests
about it or quoting it, running ones terminated first: workflows/histories.py). The histories hold ids,
counts and states only (docs/privacy.md); they go anyway, with the pages they back. With Temporal
unreachable the erasure is refused (503) and nothing changes; a retry finishes it.
"""

from __future__ import annotations

from temporalio.service import RPCError

from api.schemas.erasure import (
    ErasedCandidatePublic,
    ErasedEntryPublic,
    ErasedMemoryPublic,
    ErasureIn,
    ErasureKind,
    ErasurePublic,
)
from api.services.gateway import GatewayResources, authorize_memory, authorized_task, temporal_client
from governance.errors import NotFound, Unavailable
from governance.identity import Principal
from governance.operations.erasure import Erasure, carry_out, find_memory, find_subject, find_task
from governance.scopes import Scope
from governance.staging import public_task_id
from governance.storage.erasure import ErasureSet
from governance.storage.memory_changes import memory_tenant
from workflows.histories import delete_histories

__all__ = ["ERASE_ACTION", "erase_memory", "erase_task", "erase_subject", "erasure"]

ERASE_ACTION = "erase"


async def erase_memory(
    resources: GatewayResources, principal: Principal, ref: str, *, dry_run: bool
) -> ErasurePublic:
    """Erase one memory (uuid or citation) and the memories derived only from it."""
    async with resources.engine.connect() as conn:
        memory = await memory_tenant(conn, ref)
    authorize_memory(
        resources,
        principal,
        ref,
        org=memory.org,
        project=memory.project,
        scope=memory.scope,
        action=ERASE_ACTION,
    )
    erasure = await find_memory(resources.engine, memory.id, (memory.org, memory.project, memory.scope))
    return await _run(resources, principal, erasure, dry_run=dry_run)


async def erase_task(
    resources: GatewayResources, principal: Principal, task_id: str, *, dry_run: bool
) -> ErasurePublic:
    """Erase a task's staging, its promotion plans, and the memories derived only from it."""
    task = await authorized_task(resources, principal, task_id, ERASE_ACTION, Scope.TASK)
    erasure = await find_task(resources.engine, task.id, (task.org, task.project, Scope.TASK.value))
    return await _run(resources, principal, erasure, dry_run=dry_run)


async def erase_subject(
    resources: GatewayResources,
    principal: Principal,
    subject: str,
    *,
    org: str,
    project: str | None,
    dry_run: bool,
) -> ErasurePublic:
    """Erase every staging entry, candidate and memory of a tenant that contains `subject`."""
    scope = Scope.PROJECT if project is not None else Scope.ORG
    authorizer = resources.authorizer
    if not authorizer.allowed(principal, org=org, project=project, scope=scope, action=ERASE_ACTION):
        if authorizer.allowed(principal, org=org, project=project, scope=scope, action="read"):
            authorizer.check(principal, org=org, project=project, scope=scope, action=ERASE_ACTION)
        raise NotFound(f"tenant {org}/{project or '*'} does not exist")
    erasure = await find_subject(
        resources.engine,
        subject,
        org=org,
        project=project,
        scope=scope.value,
        archive_dir=resources.settings.archive_dir(),
    )
    return await _run(resources, principal, erasure, dry_run=dry_run)


async def erasure(resources: GatewayResources, principal: Principal, body: ErasureIn) -> ErasurePublic:
    """`POST /v1/erasures`: the one target the body names."""
    if body.memory is not None:
        return await erase_memory(resources, principal, body.memory, dry_run=body.dry_run)
    if body.task is not None:
        return await erase_task(resources, principal, body.task, dry_run=body.dry_run)
    assert body.subject is not None and body.org is not None  # the schema's validator
    return await erase_subject(
        resources, principal, body.subject, org=body.org, project=body.project, dry_run=body.dry_run
    )


async def _run(
    resources: GatewayResources, principal: Principal, erasure: Erasure, *, dry_run: bool
) -> ErasurePublic:
    if dry_run:
        return _public(erasure.kind, erasure.found, {}, dry_run=True, receipt_id=None)
    histories = await _delete_histories(resources, erasure.found.workflows)
    erased = await carry_out(
        resources.engine,
        erasure,
        actor_id=principal.id,
        actor_type=principal.actor_type.value,
        histories=histories,
        archive_dir=resources.settings.archive_dir(),
    )
    # workflows that arrived between the first read and the transaction
    late = await _delete_histories(resources, sorted(set(erased.found.workflows) - set(histories)))
    erased.counts["temporal_histories"] += len(late)
    return _public(erasure.kind, erased.found, erased.counts, dry_run=False, receipt_id=erased.receipt_id)


async def _delete_histories(resources: GatewayResources, workflow_ids: list[str]) -> list[str]:
    """Delete the Temporal histories of `workflow_ids`; Temporal unreachable is a 503 (nothing erased)."""
    if not workflow_ids:
        return []
    try:
        return await delete_histories(await temporal_client(resources), workflow_ids)
    except RPCError as err:
        raise Unavailable(
            f"Temporal did not delete the workflow histories involved ({err.message}); nothing was erased, "
            "retry when Temporal answers"
        ) from err


def _public(
    kind: ErasureKind, found: ErasureSet, counts: dict[str, int], *, dry_run: bool, receipt_id: int | None
) -> ErasurePublic:
    return ErasurePublic(
        kind=kind,
        dry_run=dry_run,
        memories=[
            ErasedMemoryPublic(
                id=m.id, citation=m.citation, scope=m.scope, title=m.title, content_sha256=m.content_sha256
            )
            for m in found.memories
        ],
        staging_entries=[
            ErasedEntryPublic(
                id=e.id,
                task_id=public_task_id(e.task_id),
                seq=e.seq,
                kind=e.kind,
                content_sha256=e.content_sha256,
            )
            for e in found.entries
        ],
        candidates=[
            ErasedCandidatePublic(
                workflow_id=c.workflow_id, idx=c.idx, title=c.title, content_sha256=c.content_sha256
            )
            for c in found.candidates
        ],
        plans=len(found.plans),
        archive_files=found.archive_files,
        counts=counts,
        temporal_workflows=found.workflows,
        receipt_event_id=receipt_id,
    )
