"""Live warnings across tasks: record what staging entries signal, and tell other tasks of the project.

Who sees a warning is who may read the staging it comes from: Casbin's `read` at task scope in that task's
tenant (the same check that guards `GET /v1/tasks/{id}/entries`). A caller that may not gets no warning,
and nothing in the answer says there was one. Warnings are screened (redacted, instructions aimed at agents
dropped) by `governance/live.screen`, and never become memories, citations or retrievals.

Signals are recorded after the append committed, in a transaction of their own, idempotently (a replayed
entry records nothing new): like retrieval counts, a failure to record one is logged and never fails the
append, whose entries are already durable; the next replay of the batch records it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from api.schemas.live import FixHintPublic, LiveWarningPublic
from api.schemas.staging import EntryAck
from api.services.gateway import GatewayResources
from api.services.metrics import LIVE_WARNINGS
from governance.adapters.embedders import embed_query_async, make_embedder
from governance.identity import Principal
from governance.live import (
    LiveWarning,
    Signal,
    SignalKind,
    WarningKind,
    distinct,
    screen,
    shares_words,
    signal_of,
)
from governance.scopes import Scope
from governance.staging import EntryDraft, public_task_id
from governance.storage import live
from governance.storage.staging import TaskInfo

__all__ = [
    "public_warning",
    "may_read_staging",
    "record_signals",
    "fix_hints",
    "approach_warnings",
    "context_warnings",
]

_log = logging.getLogger("loregate.live")


def public_warning(warning: LiveWarning) -> LiveWarningPublic:
    """The API form of a warning."""
    return LiveWarningPublic(
        kind=warning.kind.value,
        text=warning.text,
        detail=warning.detail,
        task_id=public_task_id(warning.task_id),  # the id its tenant names it by
        agent=warning.actor_id,
        at=warning.at,
        task_status=warning.task_status,
        same_worktree=warning.same_worktree,
        similarity=warning.similarity,
        standing=warning.standing,
    )


def may_read_staging(resources: GatewayResources, principal: Principal, task: TaskInfo) -> bool:
    """Whether the caller may read the staging of the tasks of `task`'s project (the other tasks live in
    the same tenant; the enforcer decides)."""
    return resources.authorizer.allowed(
        principal, org=task.org, project=task.project, scope=Scope.TASK, action="read"
    )


def _since(resources: GatewayResources) -> datetime:
    return datetime.now(UTC) - timedelta(days=resources.settings.live_window_days)


async def record_signals(
    resources: GatewayResources,
    task: TaskInfo,
    principal: Principal,
    drafts: Sequence[EntryDraft],
    acks: Sequence[EntryAck],
) -> list[tuple[int, int, Signal]]:
    """Record the signals of an appended batch; returns (index in the batch, seq, signal) of each."""
    found = [
        (index, ack, signal)
        for index, (draft, ack) in enumerate(zip(drafts, acks, strict=True))
        if (signal := signal_of(draft.kind.value, draft.content, draft.payload)) is not None
    ]
    if not found:
        return []
    rows = [
        live.SignalRow(
            entry_id=ack.id,
            task_id=task.id,
            seq=ack.seq,
            signal=signal.kind.value,
            key=signal.key,
            actor_id=principal.id,
        )
        for _, ack, signal in found
    ]
    try:
        async with resources.engine.begin() as conn:
            await live.record_signals(conn, rows)
    except Exception:  # the entries are durable; a replay of the batch records the signals again
        _log.warning("could not record %d live signals of task %s", len(rows), task.id, exc_info=True)
    return [(index, ack.seq, signal) for index, ack, signal in found]


def _keep(warnings: list[LiveWarning], limit: int) -> list[LiveWarning]:
    kept: list[LiveWarning] = []
    for warning in distinct(warnings):
        screened = screen(warning)
        if screened is not None:
            kept.append(screened)
        if len(kept) >= limit:
            break
    LIVE_WARNINGS.labels(warnings[0].kind.value if warnings else "none").inc(len(kept))
    return kept


async def _fixes(
    resources: GatewayResources, task: TaskInfo, keys: Sequence[str]
) -> list[tuple[str, LiveWarning]]:
    async with resources.engine.connect() as conn:
        rows = await live.fixes_elsewhere(
            conn,
            task_id=task.id,
            org=task.org,
            project=task.project,
            worktree=task.worktree,
            keys=keys,
            since=_since(resources),
            limit=resources.settings.live_max_warnings * max(1, len(keys)),
        )
    return [
        (
            r.key,
            LiveWarning(
                kind=WarningKind.FIX,
                text=r.error,
                detail=r.fix,
                task_id=public_task_id(r.task_id),
                actor_id=r.actor_id,
                at=r.at,
                task_status=r.status,
                same_worktree=r.worktree == task.worktree,
                signature=r.key,
            ),
        )
        for r in rows
    ]


async def fix_hints(
    resources: GatewayResources,
    principal: Principal,
    task: TaskInfo,
    errors: Sequence[tuple[int, int, Signal]],
) -> list[FixHintPublic]:
    """For each appended error, the fixes other tasks wrote after the same signature (unreviewed)."""
    errors = [e for e in errors if e[2].kind is SignalKind.ERROR]
    if not errors or not resources.settings.live_warnings or not may_read_staging(resources, principal, task):
        return []
    by_key: dict[str, list[LiveWarning]] = {}
    for key, warning in await _fixes(resources, task, sorted({s.key for _, _, s in errors})):
        by_key.setdefault(key, []).append(warning)
    hints: list[FixHintPublic] = []
    for index, seq, signal in errors:
        for warning in _keep(by_key.get(signal.key, []), resources.settings.live_max_warnings):
            hints.append(FixHintPublic(**public_warning(warning).model_dump(), entry_index=index, seq=seq))
    return hints


async def _failed(
    resources: GatewayResources,
    task: TaskInfo,
    *,
    fingerprint: str,
    embedding: Sequence[float] | None,
    threshold: float,
) -> list[LiveWarning]:
    async with resources.engine.connect() as conn:
        rows = await live.failed_approaches_elsewhere(
            conn,
            task_id=task.id,
            org=task.org,
            project=task.project,
            worktree=task.worktree,
            fingerprint=fingerprint,
            embedding=embedding,
            threshold=threshold,
            since=_since(resources),
            limit=resources.settings.live_max_warnings * 2,
        )
    return [
        LiveWarning(
            kind=WarningKind.FAILED_APPROACH,
            text=r.approach,
            detail="; ".join(r.reasons[-3:]) or None,
            task_id=public_task_id(r.task_id),
            actor_id=r.actor_id,
            at=r.at,
            task_status=r.status,
            same_worktree=r.worktree == task.worktree,
            similarity=r.similarity,
        )
        for r in rows
    ]


async def approach_warnings(
    resources: GatewayResources,
    principal: Principal,
    task: TaskInfo,
    *,
    fingerprint: str,
    embedding: Sequence[float] | None,
) -> list[LiveWarningPublic]:
    """The same approach (or a near-same one) failed in other tasks of the project: unreviewed warnings."""
    if not resources.settings.live_warnings or not may_read_staging(resources, principal, task):
        return []
    found = await _failed(
        resources,
        task,
        fingerprint=fingerprint,
        embedding=embedding,
        threshold=resources.settings.approach_similarity_threshold,
    )
    return [public_warning(w) for w in _keep(found, resources.settings.live_max_warnings)]


async def context_warnings(
    resources: GatewayResources, principal: Principal, task: TaskInfo, query: str
) -> list[LiveWarning]:
    """For the context block: fixes of the errors this task met, then approaches near the query that failed
    elsewhere (screened, at most `live_max_warnings`)."""
    if not resources.settings.live_warnings or not may_read_staging(resources, principal, task):
        return []
    try:  # the query's vector: the read path embeds it too, and the query cache answers the second ask
        query_vector: Sequence[float] | None = [
            float(x) for x in await embed_query_async(make_embedder(resources.settings), query)
        ]
    except Exception:  # an unreachable embedding endpoint: the fixes still answer
        _log.warning("query embedding failed; live warnings by error signature only", exc_info=True)
        query_vector = None
    async with resources.engine.connect() as conn:
        keys = await live.task_signal_keys(conn, task.id, SignalKind.ERROR.value)
    fixes = [w for _, w in await _fixes(resources, task, keys)] if keys else []
    failed = (
        await _failed(
            resources,
            task,
            fingerprint="",
            embedding=query_vector,
            threshold=resources.settings.live_context_similarity,
        )
        if query_vector is not None
        else []
    )
    failed = [w for w in failed if shares_words(query, w.text)]  # near the query and about it
    limit = resources.settings.live_max_warnings
    return (_keep(fixes, limit) + _keep(failed, limit))[:limit]
