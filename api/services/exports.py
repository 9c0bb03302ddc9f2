"""Export one scope's published memory as JSON Lines (`GET /v1/exports`, `loregate export`).

Authorised as reading is: the caller needs `read` at the scope in its tenant (`browse.authorize_scope`), and
a scope it may not read is a 404, as an unknown one. Staging is included only on request and only for a
caller who may read the staging of every task the scope's memories came from (`read` at task scope in each
task's tenant); otherwise the export is refused with 403 before a byte is sent. Each memory's provenance is
shown as `GET /v1/memories/{id}` shows it: raw to readers of the task's staging, redacted to everyone else.

Every check runs before the stream starts; the records are then read in pages from one REPEATABLE READ
transaction, so the file is one consistent snapshot however long it takes, and its trailer counts what it
holds. Erased memories, entries and event texts are gone from the tables, so they are gone from exports.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel
from sqlalchemy.ext.asyncio import AsyncConnection

from api.schemas.transfer import (
    EventRecord,
    HeaderRecord,
    MemoryRecord,
    ProvenanceRecord,
    StagingRecord,
    TrailerRecord,
    WorkingMemoryRecord,
)
from api.services.browse import authorize_scope, scope_tenant
from api.services.gateway import GatewayResources, load_task
from api.services.search import provenance_entry
from governance.errors import PolicyDenied
from governance.identity import Principal
from governance.operations import working_memory as working
from governance.scopes import Scope
from governance.storage import working_memory as working_statements
from governance.storage.staging import get_tasks
from governance.storage.transfer import (
    MemoryKey,
    entries_by_ids,
    event_page,
    memory_page,
    source_task_ids,
    staging_page,
)
from governance.transfer import EXPORT_VERSION

__all__ = ["EXPORT_PAGE", "PreparedExport", "prepare_export", "export_lines"]

# records read per query while streaming
EXPORT_PAGE = 500


@dataclass(frozen=True)
class PreparedExport:
    """An export the caller may take: its header, and which tasks' staging is raw to it."""

    header: HeaderRecord
    readable_tasks: frozenset[str]
    staging_tasks: tuple[str, ...]

    def filename(self) -> str:
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in self.header.scope_key)
        return f"loregate-{safe}.jsonl"


async def prepare_export(
    resources: GatewayResources, principal: Principal, scope_key: str, *, include_staging: bool
) -> PreparedExport:
    """Check the caller may export `scope_key` (and its staging); NotFound / PolicyDenied otherwise."""
    tenant = scope_tenant(scope_key)
    scope_key = await authorize_scope(resources, principal, scope_key)
    org, project = tenant.org, tenant.project
    if tenant.task_id is not None:
        task = await load_task(resources, principal, tenant.task_id)
        org, project = task.org, task.project
    async with resources.engine.connect() as conn:
        task_ids = await source_task_ids(conn, scope_key)
        tasks = await get_tasks(conn, task_ids)
    readable = frozenset(
        t.id
        for t in tasks.values()
        if resources.authorizer.allowed(
            principal, org=t.org, project=t.project, scope=Scope.TASK, action="read"
        )
    )
    if include_staging:
        hidden = len(set(tasks) - readable)
        if hidden:
            raise PolicyDenied(
                f"{principal.actor_type} '{principal.name}' ({principal.id}) may not read the staging of "
                f"{hidden} of the {len(tasks)} tasks the memories of {scope_key} came from; "
                "export without staging (the memories' provenance is then redacted where you may not read it)"
            )
    header = HeaderRecord(
        version=EXPORT_VERSION,
        org=org,
        project=project,
        scope_key=scope_key,
        exported_at=datetime.now(UTC),
        exported_by=principal.id,
        includes_staging=include_staging,
    )
    return PreparedExport(
        header=header,
        readable_tasks=readable,
        staging_tasks=tuple(sorted(tasks)) if include_staging else (),
    )


def _staging(row: dict[str, Any]) -> StagingRecord:
    return StagingRecord(
        id=row["id"],
        task_id=row["task_id"],
        seq=row["seq"],
        entry_kind=row["kind"],
        content=row["content"],
        payload=row["payload"],
        actor_id=row["actor_id"],
        actor_type=row["actor_type"],
        idempotency_key=row["idempotency_key"],
        created_at=row["created_at"],
    )


def _line(record: BaseModel) -> bytes:
    return record.model_dump_json().encode("utf-8") + b"\n"


async def export_lines(resources: GatewayResources, export: PreparedExport) -> AsyncIterator[bytes]:
    """The file, a line at a time: header, memories, their events, staging and the working memory of its
    tasks (if asked), trailer."""
    counts = {"memory": 0, "event": 0, "staging": 0}
    scope_key = export.header.scope_key
    for task_id in export.staging_tasks:  # a reader folds first: the append path leaves it to readers
        await working.catch_up(resources.engine, task_id)
    yield _line(export.header)
    async with resources.engine.connect() as base:
        conn = await base.execution_options(isolation_level="REPEATABLE READ")
        async with conn.begin():
            after: MemoryKey | None = None
            while True:
                page = await memory_page(conn, scope_key, after=after, limit=EXPORT_PAGE)
                entries = await entries_by_ids(conn, [i for m in page for i in m["source_entry_ids"]])
                for memory in page:
                    provenance = [
                        ProvenanceRecord.model_validate(
                            provenance_entry(entries[i], raw=entries[i]["task_id"] in export.readable_tasks)
                        )
                        for i in memory["source_entry_ids"]
                        if i in entries
                    ]
                    yield _line(MemoryRecord.model_validate({**memory, "provenance": provenance}))
                    counts["memory"] += 1
                if len(page) < EXPORT_PAGE:
                    break
                after = MemoryKey(page[-1]["created_at"], page[-1]["id"])
            after_id = 0
            while True:
                events = await event_page(conn, scope_key, after_id=after_id, limit=EXPORT_PAGE)
                for event in events:
                    yield _line(EventRecord.model_validate(event))
                    counts["event"] += 1
                if len(events) < EXPORT_PAGE:
                    break
                after_id = events[-1]["id"]
            after_entry: tuple[str, int] | None = None
            while export.staging_tasks:
                rows = await staging_page(conn, export.staging_tasks, after=after_entry, limit=EXPORT_PAGE)
                for row in rows:
                    yield _line(_staging(row))
                    counts["staging"] += 1
                if len(rows) < EXPORT_PAGE:
                    break
                after_entry = (rows[-1]["task_id"], rows[-1]["seq"])
            for task_id in export.staging_tasks:  # a task's working memory travels with its staging
                record = await _working_memory(conn, task_id)
                if record is not None:
                    yield _line(record)
                    counts["working_memory"] = counts.get("working_memory", 0) + 1
    yield _line(TrailerRecord(counts=counts))


async def _working_memory(conn: AsyncConnection, task_id: str) -> WorkingMemoryRecord | None:
    """A task's hypotheses, files and symbols as an export record (None when it has none)."""
    hypotheses = await working_statements.hypotheses_of(conn, task_id, EXPORT_PAGE * 10)
    files = await working_statements.locations_of(conn, task_id, "file", EXPORT_PAGE * 10)
    symbols = await working_statements.locations_of(conn, task_id, "symbol", EXPORT_PAGE * 10)
    if not (hypotheses or files or symbols):
        return None
    return WorkingMemoryRecord(
        task_id=task_id,
        hypotheses=[asdict(h) for h in hypotheses],
        files=[asdict(f) for f in files],
        symbols=[asdict(x) for x in symbols],
    )
