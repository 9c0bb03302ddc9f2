"""Tasks and their staging log: open a task, append entries, read them back.

Operations on an existing task take it already authorised (`authorized_task` in api/services/gateway.py):
every transport authorises the task before it reads the request body, so a caller outside the tenant learns
nothing from validation errors.
"""

from __future__ import annotations

import dataclasses
import uuid
from datetime import UTC, datetime

from pydantic import TypeAdapter

from api.schemas.staging import (
    EntriesAck,
    EntriesIn,
    EntriesPage,
    EntryAck,
    EntryPublic,
    TaskCreate,
    TaskPublic,
)
from api.services import citations, correction_counts, live
from api.services.gateway import GatewayResources
from api.services.metrics import ENTRIES_APPENDED, ENTRIES_REPLAYED, QUOTA_REFUSED
from governance.errors import DailyQuotaExceeded, TaskQuotaExceeded, Unauthenticated
from governance.identity import Principal
from governance.limits import StagingQuota
from governance.promotions import promotion_of_append
from governance.scopes import Scope
from governance.secret_names import refuse_secret_names
from governance.staging import EntryDraft, validate_batch
from governance.storage import staging, staging_append
from governance.storage.staging import TaskInfo
from governance.trust import DECAY_POLICY_FIELD, check_entry_decay_policy
from governance.validity import EXPIRY_FIELDS, check_entry_expiry

__all__ = [
    "task_public",
    "open_task",
    "show_task",
    "append_entries",
    "append_drafts",
    "drafts_of",
    "list_entries",
]


_ACKS = TypeAdapter(list[EntryAck])
# the payload fields an append checks (expiry, decay policy): a payload holding none of them passes both
_CHECKED_FIELDS = frozenset((*EXPIRY_FIELDS, DECAY_POLICY_FIELD))


def task_public(task: TaskInfo) -> TaskPublic:
    """A task as the API shows it: by the id its tenant gave it (its key stays inside). A closed task that
    no promotion ended shows why it is closed (`closed`, `erased`) as its status, not `open`."""
    status = task.closed_reason if task.closed_reason is not None and task.status == "open" else task.status
    return TaskPublic.model_validate(
        {**dataclasses.asdict(task), "task_id": task.public_id, "status": status}
    )


async def open_task(
    resources: GatewayResources, principal: Principal, body: TaskCreate
) -> tuple[TaskPublic, bool]:
    """Open a task; the same request again returns it with `created` False. Returns (task, created)."""
    resources.authorizer.check(principal, org=body.org, project=body.project, scope=Scope.TASK, action="open")
    refuse_secret_names(task_id=body.task_id, worktree=body.worktree)
    task, created = await staging.open_task(
        resources.engine,
        task_id=body.task_id or f"task-{uuid.uuid4().hex}",
        org=body.org,
        project=body.project,
        worktree=body.worktree,
        description=body.description,
        created_by=principal.id,
    )
    return task_public(task), created


async def show_task(resources: GatewayResources, task: TaskInfo) -> TaskPublic:
    """A task (authorised for `read`) and its current status."""
    async with resources.engine.connect() as conn:
        fresh = await staging.get_task(conn, task.id)
    return task_public(fresh or task)


async def append_entries(
    resources: GatewayResources,
    principal: Principal,
    task: TaskInfo,
    body: EntriesIn,
    *,
    key_hash: str | None = None,
) -> EntriesAck:
    """Append a batch to a task authorised for `write`, all or nothing, idempotency keys honoured.

    `key_hash` (the transports pass the hash of the key the caller presented): the key is checked again
    inside the append statement, so a key revoked since this process cached it appends nothing (401).
    """
    return await append_drafts(resources, principal, task, drafts_of(body), key_hash=key_hash)


def drafts_of(body: EntriesIn) -> list[EntryDraft]:
    """The entries of a body as drafts (the actor is the caller's, added when they are stored)."""
    return [
        EntryDraft(kind=e.kind, content=e.content, payload=e.payload, idempotency_key=e.idempotency_key)
        for e in body.entries
    ]


async def append_drafts(
    resources: GatewayResources,
    principal: Principal,
    task: TaskInfo,
    drafts: list[EntryDraft],
    *,
    key_hash: str | None = None,
) -> EntriesAck:
    """`append_entries` for a body already read into drafts (as `EntriesIn` takes it: the append path
    decodes it without pydantic, api/schemas/staging_json.py)."""
    limits = resources.settings
    prepared = validate_batch(
        drafts, max_entry_bytes=limits.max_entry_bytes, max_batch_entries=limits.max_batch_entries
    )
    now = datetime.now(UTC)
    for index, draft in enumerate(drafts):
        payload = draft.payload  # parsed JSON: an object is a dict
        if isinstance(payload, dict) and not _CHECKED_FIELDS.isdisjoint(payload):
            check_entry_expiry(payload, now=now, where=f"entries[{index}].payload")
            check_entry_decay_policy(payload, where=f"entries[{index}].payload")
    quota = StagingQuota(
        task_entries=limits.staging_max_task_entries,
        task_bytes=limits.staging_max_task_bytes,
        tenant_entries_per_day=limits.staging_max_tenant_entries_per_day,
        tenant_bytes_per_day=limits.staging_max_tenant_bytes_per_day,
    )
    try:
        appended = await staging_append.append_batch(
            resources.engine,
            task.id,
            principal,
            drafts,
            (task.org, quota),
            key_hash=key_hash,
            prepared=prepared,
            group=limits.append_group,
        )
    except (TaskQuotaExceeded, DailyQuotaExceeded) as exc:
        QUOTA_REFUSED.labels(exc.quota).inc()
        raise
    except Unauthenticated:
        resources.key_cache.clear()  # revoked: as the policy notification will, a moment later
        raise
    results = appended.entries
    # Files and symbols the entries name reach the task's working memory when it is next read: every
    # reader folds first (governance/operations/working_memory.py). Scanning each entry's text here cost
    # about a third of a batch's gateway CPU, for a table only readers look at.
    replayed = sum(r.replayed for r in results)
    ENTRIES_APPENDED.inc(len(results) - replayed)
    ENTRIES_REPLAYED.inc(replayed)
    # one validation of plain dicts (pydantic's core) instead of a model built in Python per entry
    acks = _ACKS.validate_python([{"id": r.id, "seq": r.seq, "replayed": r.replayed} for r in results])
    # what other tasks learn from this batch at once, and what it learns from them (api/services/live.py)
    signals = await live.record_signals(resources, task, principal, drafts, acks)
    await citations.count_entry_citations(resources, principal, task, drafts, acks)
    hints = await live.fix_hints(resources, principal, task, signals)
    await correction_counts.after_append(resources, principal, task, drafts, acks)  # docs/patch-patterns.md
    # which promotion takes them: the running one before its snapshot, the next one after (a follow-up);
    # the task's latest promotion was read in the append's own round trip
    latest = [] if appended.promotion is None else [appended.promotion]
    number = promotion_of_append(latest, max(r.seq for r in results))
    return EntriesAck(task_id=task.public_id, entries=acks, hints=hints, promotion=number)


async def list_entries(
    resources: GatewayResources, task: TaskInfo, *, after_seq: int, limit: int
) -> EntriesPage:
    """The staging log of a task authorised for `read`, in sequence order, a page at a time."""
    limit = min(limit, resources.settings.max_page_size)
    async with resources.engine.connect() as conn:
        rows = await staging.read_entries(conn, task.id, after_seq=after_seq, limit=limit)
    entries = [EntryPublic.model_validate(r, from_attributes=True) for r in rows]
    return EntriesPage(
        task_id=task.public_id,
        entries=entries,
        next_after_seq=entries[-1].seq if len(entries) == limit else None,
    )
