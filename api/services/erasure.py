"""Erasure with receipts: one memory, a task, or a subject, with a dry run, leaving an ERASED event.

Who may erase: principals with Casbin's `erase` at the target's scope in its tenant (humans and system by
default, policy/loregate_policy.csv; agents and orchestrators may not): a memory at its own scope, a task at
task scope in the task's tenant, a subject at project scope in the named project (org scope without one).
A caller who may not even read the target is told it does not exist (404), as everywhere else.

A dry run lists what would go: ids, citations, titles and content hashes, never contents. The real run
deletes and scrubs everything in one transaction (governance/storage/erasure.py) and records the receipt in
it: an ERASED event with ids, counts, sha256 of each erased content, who and when — no content, no subject
(only its hash). Staging archive files of an erased task are removed after the commit; a subject's
entries are taken out of every archive file of the tenant that holds them (the file is rewritten without
them, or removed when nothing is left), after the commit too, so a retried erasure finds what a crash left.
Temporal histories of the workflows involved (the promotions that staged, planned or published what goes,
the change requests about it) may hold what they showed while they ran (titles, a critique, an approval
note): erasure cannot rewrite a history, so it deletes them through Temporal's API before it touches the
database (a running one is terminated first; workflows/histories.py) and the receipt names them. With
Temporal unreachable the erasure is refused (503) and nothing changes; a retry finishes it.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.ext.asyncio import AsyncConnection
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
from governance.scopes import Scope
from governance.staging import public_task_id
from governance.staging_archive import ArchivedEntry, decode_chunk, encode_chunk, holds
from governance.storage.derivations import mark_derived_stale
from governance.storage.erasure import (
    ErasedEntry,
    ErasureSet,
    content_sha256,
    erase,
    memory_erasure_set,
    record_receipt,
    subject_erasure_set,
    task_erasure_set,
    tenant_archive_files,
)
from governance.storage.events import Event, EventType
from governance.storage.memory_changes import memory_tenant
from workflows.histories import delete_histories

__all__ = ["ERASE_ACTION", "erase_memory", "erase_task", "erase_subject", "erasure"]

ERASE_ACTION = "erase"
TEMPORAL_NOTE = (
    "Temporal histories of these workflows were deleted (a running one was terminated first): "
    "their promotion or change request pages are gone with them"
)


async def erase_memory(
    state: GatewayResources, principal: Principal, ref: str, *, dry_run: bool
) -> ErasurePublic:
    """Erase one memory (uuid or citation) and the memories derived only from it."""
    async with state.engine.connect() as conn:
        memory = await memory_tenant(conn, ref)
    authorize_memory(
        state,
        principal,
        ref,
        org=memory.org,
        project=memory.project,
        scope=memory.scope,
        action=ERASE_ACTION,
    )
    async with state.engine.begin() as conn:
        found = await memory_erasure_set(conn, memory.id)
    tenant = (memory.org, memory.project, memory.scope)
    return await _run(state, principal, "memory", found, tenant, dry_run=dry_run, receipt_memory=memory.id)


async def erase_task(
    state: GatewayResources, principal: Principal, task_id: str, *, dry_run: bool
) -> ErasurePublic:
    """Erase a task's staging, its promotion plans, and the memories derived only from it."""
    task = await authorized_task(state, principal, task_id, ERASE_ACTION, Scope.TASK)
    async with state.engine.connect() as conn:
        found = await task_erasure_set(conn, task.id)
    tenant = (task.org, task.project, Scope.TASK.value)
    return await _run(state, principal, "task", found, tenant, dry_run=dry_run)


async def erase_subject(
    state: GatewayResources,
    principal: Principal,
    subject: str,
    *,
    org: str,
    project: str | None,
    dry_run: bool,
) -> ErasurePublic:
    """Erase every staging entry, candidate and memory of a tenant that contains `subject`."""
    scope = Scope.PROJECT if project is not None else Scope.ORG
    authorizer = state.authorizer
    if not authorizer.allowed(principal, org=org, project=project, scope=scope, action=ERASE_ACTION):
        if authorizer.allowed(principal, org=org, project=project, scope=scope, action="read"):
            authorizer.check(principal, org=org, project=project, scope=scope, action=ERASE_ACTION)
        raise NotFound(f"tenant {org}/{project or '*'} does not exist")
    async with state.engine.connect() as conn:
        found = await subject_erasure_set(conn, subject, org=org, project=project)
        files = await tenant_archive_files(conn, org=org, project=project)
    archives = await asyncio.to_thread(_scan_archives, state.settings.archive_dir(), files, subject)
    tenant = (org, project, scope.value)
    return await _run(state, principal, "subject", found, tenant, dry_run=dry_run, archives=archives)


async def erasure(state: GatewayResources, principal: Principal, body: ErasureIn) -> ErasurePublic:
    """`POST /v1/erasures`: the one target the body names."""
    if body.memory is not None:
        return await erase_memory(state, principal, body.memory, dry_run=body.dry_run)
    if body.task is not None:
        return await erase_task(state, principal, body.task, dry_run=body.dry_run)
    assert body.subject is not None and body.org is not None  # the schema's validator
    return await erase_subject(
        state, principal, body.subject, org=body.org, project=body.project, dry_run=body.dry_run
    )


async def _run(
    state: GatewayResources,
    principal: Principal,
    kind: ErasureKind,
    found: ErasureSet,
    tenant: tuple[str, str | None, str],
    *,
    dry_run: bool,
    receipt_memory: str | None = None,
    archives: tuple[_ArchiveRewrite, ...] = (),
) -> ErasurePublic:
    counts: dict[str, int] = {}
    receipt_id: int | None = None
    if dry_run:
        found = _with_archives(found, archives)
    else:
        histories = await _delete_histories(state, found.workflows)
        async with state.engine.begin() as conn:
            found = _with_archives(await _fresh(conn, kind, found), archives)
            erased = set(found.memory_ids)
            for memory_id in found.memory_ids:  # what builds on an erased memory, and survives, is stale
                await mark_derived_stale(
                    conn,
                    memory_id,
                    cause="erased",
                    reason=None,
                    actor_id=principal.id,
                    actor_type=principal.actor_type.value,
                )
            counts = await erase(conn, found)
            counts["temporal_histories"] = len(histories)
            if archives:
                counts["archived_entries"] = sum(len(a.removed) for a in archives)
                counts["archive_files_rewritten"] = len(archives)
            receipt_id = await record_receipt(
                conn,
                Event(
                    event_type=EventType.ERASED,
                    actor_id=principal.id,
                    actor_type=principal.actor_type.value,
                    memory_id=receipt_memory if receipt_memory in erased else None,
                    task_id=found.task_id if found.task_id is not None and kind == "task" else None,
                    reason=f"erasure of a {kind}",
                    payload=_receipt(kind, found, counts, tenant),
                ),
            )
        # workflows that arrived between the first read and the transaction
        await _delete_histories(state, sorted(set(found.workflows) - set(histories)))
        if kind == "task":
            await asyncio.to_thread(_remove_archives, state.settings.archive_dir(), found.archive_files)
        await asyncio.to_thread(_rewrite_archives, state.settings.archive_dir(), archives)
    return _public(kind, found, counts, dry_run=dry_run, receipt_id=receipt_id)


async def _delete_histories(state: GatewayResources, workflow_ids: list[str]) -> list[str]:
    """Delete the Temporal histories of `workflow_ids`; Temporal unreachable is a 503 (nothing erased)."""
    if not workflow_ids:
        return []
    try:
        return await delete_histories(await temporal_client(state), workflow_ids)
    except RPCError as err:
        raise Unavailable(
            f"Temporal did not delete the workflow histories involved ({err.message}); nothing was erased, "
            "retry when Temporal answers"
        ) from err


async def _fresh(conn: AsyncConnection, kind: ErasureKind, found: ErasureSet) -> ErasureSet:
    """The set read again inside the erasing transaction (rows may have arrived since the first read)."""
    if kind == "task" and found.task_id is not None:
        return await task_erasure_set(conn, found.task_id)
    if kind == "subject" and found.subject is not None and found.org is not None:
        return await subject_erasure_set(conn, found.subject, org=found.org, project=found.project)
    return found


def _receipt(
    kind: ErasureKind, found: ErasureSet, counts: dict[str, int], tenant: tuple[str, str | None, str]
) -> dict[str, object]:
    """The ERASED event's payload: ids, counts and hashes; never a content, a title or the subject.

    `org`, `project` and `scope` say where the receipt is read (GET /v1/events): what it erased is gone.
    """
    org, project, scope = tenant
    return {
        "kind": kind,
        "task_id": found.task_id,
        "subject_sha256": content_sha256(found.subject) if found.subject is not None else None,
        "org": org,
        "project": project,
        "scope": scope,
        "memories": [
            {"id": m.id, "citation": m.citation, "content_sha256": m.content_sha256} for m in found.memories
        ],
        "staging_entries": [
            {"id": e.id, "task_id": e.task_id, "content_sha256": e.content_sha256} for e in found.entries
        ],
        "candidates": [
            {"workflow_id": c.workflow_id, "idx": c.idx, "content_sha256": c.content_sha256}
            for c in found.candidates
        ],
        "archive_files": found.archive_files,
        "counts": counts,
        "temporal_workflows": found.workflows,
        "temporal_note": TEMPORAL_NOTE,
    }


@dataclass(frozen=True)
class _ArchiveRewrite:
    """One archive file holding a subject: what it becomes without the subject's entries (None: it goes)."""

    relative: str
    data: bytes | None
    removed: tuple[ArchivedEntry, ...]


def _inside(archive_dir: Path, relative: str) -> Path | None:
    """The archive file `relative` names, or None when the name would leave the archive directory."""
    path = (archive_dir / relative).resolve()
    return path if archive_dir.resolve() in path.parents else None


def _scan_archives(archive_dir: Path, files: list[str], subject: str) -> tuple[_ArchiveRewrite, ...]:
    """The tenant's archive files that hold `subject`, each with its bytes once the subject's entries go."""
    rewrites: list[_ArchiveRewrite] = []
    for relative in files:
        path = _inside(archive_dir, relative)
        if path is None or not path.is_file():
            continue
        entries = list(decode_chunk(path.read_bytes()))
        removed = tuple(e for e in entries if holds(e, subject))
        if removed:
            kept = [e for e in entries if not holds(e, subject)]
            rewrites.append(_ArchiveRewrite(relative, encode_chunk(kept).data if kept else None, removed))
    return tuple(rewrites)


def _with_archives(found: ErasureSet, archives: tuple[_ArchiveRewrite, ...]) -> ErasureSet:
    """`found` with the archived entries the rewrites take (listed, and their texts scrubbed from events)."""
    for rewrite in archives:
        found.archive_files.append(rewrite.relative)
        for e in rewrite.removed:
            found.entries.append(ErasedEntry(e.id, e.task_id, e.seq, e.kind, content_sha256(e.content)))
            found.texts.append(e.content)
    return found


def _rewrite_archives(archive_dir: Path, archives: tuple[_ArchiveRewrite, ...]) -> None:
    """Each file replaced whole (a new file renamed over it, owner-only) or removed when nothing is left."""
    for rewrite in archives:
        path = _inside(archive_dir, rewrite.relative)
        if path is None:
            continue
        if rewrite.data is None:
            path.unlink(missing_ok=True)
            continue
        fresh = path.with_name(path.name + ".erasing")
        fd = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(rewrite.data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(fresh, path)


def _remove_archives(archive_dir: Path, files: list[str]) -> None:
    for relative in files:
        path = _inside(archive_dir, relative)
        if path is not None:
            path.unlink(missing_ok=True)


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
