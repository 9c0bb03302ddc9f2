"""Erasure's use case: what one erasure takes (a memory, a task, a subject) and taking it, with its receipt.

One home for the composition; `api/services/erasure.py` authorises, deletes the Temporal histories of the
workflows involved (no operation talks to Temporal) and calls these. `find_*` read what goes (and, for a
subject, which staging archive files hold it and what each becomes without it); `carry_out` reads the set
again inside its transaction, marks what builds on an erased memory stale, deletes and scrubs everything
(governance/storage/erasure.py), records the ERASED receipt (ids, counts per place, hashes: no content, no
subject), and after the commit removes or rewrites the staging archive files, so a retried erasure finds
what a crash left.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from sqlalchemy.ext.asyncio import AsyncEngine

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

__all__ = [
    "ErasureKind",
    "ArchiveRewrite",
    "Erasure",
    "Erased",
    "TEMPORAL_NOTE",
    "find_memory",
    "find_task",
    "find_subject",
    "carry_out",
]

ErasureKind = Literal["memory", "task", "subject"]

TEMPORAL_NOTE = (
    "Temporal histories of these workflows were deleted (a running one was terminated first, a change "
    "request still awaiting a decision among them): their promotion or change request pages are gone with "
    "them; they held ids, counts and states only"
)


@dataclass(frozen=True)
class ArchiveRewrite:
    """One archive file holding a subject: what it becomes without the subject's entries (None: it goes)."""

    relative: str
    data: bytes | None
    removed: tuple[ArchivedEntry, ...]


@dataclass
class Erasure:
    """What one erasure takes: the rows, the archive files a subject is in, and where it is read."""

    kind: ErasureKind
    found: ErasureSet
    org: str
    project: str | None
    scope: str
    memory_id: str | None = None  # a memory erasure's memory (the receipt names it)
    archives: tuple[ArchiveRewrite, ...] = ()


@dataclass
class Erased:
    """What an erasure took: the set (read again in its transaction), the counts per place, the receipt."""

    found: ErasureSet
    counts: dict[str, int] = field(default_factory=dict)
    receipt_id: int | None = None


async def find_memory(engine: AsyncEngine, memory_id: str, tenant: tuple[str, str | None, str]) -> Erasure:
    """One memory (by uuid) and the memories derived only from it."""
    async with engine.begin() as conn:
        found = await memory_erasure_set(conn, memory_id)
    org, project, scope = tenant
    return Erasure("memory", found, org, project, scope, memory_id=memory_id)


async def find_task(engine: AsyncEngine, task_id: str, tenant: tuple[str, str | None, str]) -> Erasure:
    """A task's staging, plans, approaches, subtasks, and the memories derived only from it."""
    async with engine.connect() as conn:
        found = await task_erasure_set(conn, task_id)
    org, project, scope = tenant
    return Erasure("task", found, org, project, scope)


async def find_subject(
    engine: AsyncEngine, subject: str, *, org: str, project: str | None, scope: str, archive_dir: Path
) -> Erasure:
    """Every text of a tenant that contains `subject`, the archive files included."""
    async with engine.connect() as conn:
        found = await subject_erasure_set(conn, subject, org=org, project=project)
        files = await tenant_archive_files(conn, org=org, project=project)
    archives = await asyncio.to_thread(_scan_archives, archive_dir, files, subject)
    return Erasure("subject", _with_archives(found, archives), org, project, scope, archives=archives)


async def carry_out(
    engine: AsyncEngine,
    erasure: Erasure,
    *,
    actor_id: str,
    actor_type: str,
    histories: list[str],
    archive_dir: Path,
) -> Erased:
    """Take everything in one transaction with its receipt; then the archive files (after the commit).

    `histories` are the workflows whose Temporal histories the caller deleted (counted in the receipt).
    """
    async with engine.begin() as conn:
        found = erasure.found
        if erasure.kind == "task" and found.task_id is not None:
            found = await task_erasure_set(conn, found.task_id)
        elif erasure.kind == "subject" and found.subject is not None and found.org is not None:
            found = await subject_erasure_set(conn, found.subject, org=found.org, project=found.project)
        found = _with_archives(found, erasure.archives)
        erased = set(found.memory_ids)
        for memory_id in found.memory_ids:  # what builds on an erased memory, and survives, is stale
            await mark_derived_stale(
                conn, memory_id, cause="erased", reason=None, actor_id=actor_id, actor_type=actor_type
            )
        counts = await erase(conn, found)
        counts["temporal_histories"] = len(histories)
        counts["archive_files_removed"] = (
            len(found.archive_files)
            if erasure.kind == "task"
            else sum(1 for a in erasure.archives if a.data is None)
        )
        counts["archive_files_rewritten"] = sum(1 for a in erasure.archives if a.data is not None)
        counts["archived_entries"] = sum(len(a.removed) for a in erasure.archives)
        receipt_id = await record_receipt(
            conn,
            Event(
                event_type=EventType.ERASED,
                actor_id=actor_id,
                actor_type=actor_type,
                memory_id=erasure.memory_id if erasure.memory_id in erased else None,
                task_id=found.task_id if found.task_id is not None and erasure.kind == "task" else None,
                reason=f"erasure of a {erasure.kind}",
                payload=_receipt(erasure, found, counts, histories),
            ),
        )
    if erasure.kind == "task":
        await asyncio.to_thread(_remove_archives, archive_dir, found.archive_files)
    await asyncio.to_thread(_rewrite_archives, archive_dir, erasure.archives)
    return Erased(found, counts, receipt_id)


def _receipt(
    erasure: Erasure, found: ErasureSet, counts: dict[str, int], histories: list[str]
) -> dict[str, object]:
    """The ERASED event's payload: ids, counts and hashes; never a content, a title or the subject.

    `org`, `project` and `scope` say where the receipt is read (GET /v1/events): what it erased is gone.
    `counts` names every place erasure reaches, with how many rows, files or histories it took there.
    """
    return {
        "kind": erasure.kind,
        "task_id": found.task_id,
        "subject_sha256": content_sha256(found.subject) if found.subject is not None else None,
        "org": erasure.org,
        "project": erasure.project,
        "scope": erasure.scope,
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
        "temporal_histories_deleted": sorted(histories),
        "temporal_note": TEMPORAL_NOTE,
    }


def _inside(archive_dir: Path, relative: str) -> Path | None:
    """The archive file `relative` names, or None when the name would leave the archive directory."""
    path = (archive_dir / relative).resolve()
    return path if archive_dir.resolve() in path.parents else None


def _scan_archives(archive_dir: Path, files: list[str], subject: str) -> tuple[ArchiveRewrite, ...]:
    """The tenant's archive files that hold `subject`, each with its bytes once the subject's entries go."""
    rewrites: list[ArchiveRewrite] = []
    for relative in files:
        path = _inside(archive_dir, relative)
        if path is None or not path.is_file():
            continue
        entries = list(decode_chunk(path.read_bytes()))
        removed = tuple(e for e in entries if holds(e, subject))
        if removed:
            kept = [e for e in entries if not holds(e, subject)]
            rewrites.append(ArchiveRewrite(relative, encode_chunk(kept).data if kept else None, removed))
    return tuple(rewrites)


def _with_archives(found: ErasureSet, archives: tuple[ArchiveRewrite, ...]) -> ErasureSet:
    """`found` with the archived entries the rewrites take (listed, and their texts scrubbed from events)."""
    for rewrite in archives:
        if rewrite.relative not in found.archive_files:
            found.archive_files.append(rewrite.relative)
        listed = {e.id for e in found.entries}
        for e in rewrite.removed:
            if e.id not in listed:
                found.entries.append(ErasedEntry(e.id, e.task_id, e.seq, e.kind, content_sha256(e.content)))
            found.texts.append(e.content)
    return found


def _rewrite_archives(archive_dir: Path, archives: tuple[ArchiveRewrite, ...]) -> None:
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
