"""Publish an approved promotion's stored plan: its per-item decisions, then chunk by chunk, then its end.

The promotion's publish activity reads its input, heartbeats and maps failures; this is the use case, each
step its own function: the approved plan and the approver's note (`_approved_plan`), the per-item decisions
applied once (`apply_item_decisions`), the items held back (`_held_items`), each chunk in one transaction
under the scopes' locks (`_publish_chunk_of`, over `publishing.publish_chunk`), and the promotion's end in a
last one (`_finish`: its derivations, the APPROVED and PROMOTION events, the task's status). The inputs are
already authorised (the approval gate decided); every statement is `governance/storage/`'s.

A retry publishes nothing twice: the committed chunks replay by their items' idempotency keys, applied
decisions are found applied, and the end's events are written if absent.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from governance.errors import NotFound
from governance.item_decisions import ItemDecisionKind
from governance.operations.chunk_decisions import ChunkItem
from governance.operations.publishing import publish_chunk
from governance.scopes import ActorType, Scope, keys_at_or_above, scope_key
from governance.storage.derivations import record_derivations
from governance.storage.episodes import record_episode
from governance.storage.events import Event, EventType, record_event, record_events
from governance.storage.item_decisions import (
    ItemDecisionRow,
    item_decisions_of,
    mark_applied,
    plan_item_views,
    rewrite_candidate_text,
)
from governance.storage.memory_rows import NewMemory
from governance.storage.plan_items import (
    PlanItemToPublish,
    PlanItemToWrite,
    publish_rows,
    record_outcomes,
    record_published,
    save_plan_items,
)
from governance.storage.plans import (
    PlanHeader,
    PlanItemPublished,
    PlanKey,
    StoredCandidate,
    get_plan,
    load_candidates,
    quarantined_indexes,
)
from governance.storage.promotions import end_promotion, grant_note
from governance.storage.publish import lock_for_publication
from governance.storage.staging import entry_decay_policies, set_task_status
from governance.supersession import ContradictionJudge
from governance.trust import published_decay_policy, published_trust
from governance.validity import PublishedItem, derivation_links

__all__ = [
    "PlanMissing",
    "PlanPublication",
    "Replan",
    "apply_item_decisions",
    "publish_plan",
    "with_critique",
]

# plan one edited item again: (target scope key, visible scope keys, plan index, the candidate with the
# approver's text) -> its plan line (embedded, decided against published memory, screened), as plan does
Replan = Callable[[str, list[str], int, StoredCandidate], Awaitable[PlanItemToWrite]]


class PlanMissing(NotFound):
    """The approved plan, or the per-item decisions it names, are not in the database: publish nothing."""


@dataclass
class PlanPublication:
    """What an approved promotion publishes: its stored plan (workflow id, `run_id`), `total` items, into
    `scope`, with the approval that let it. The publish activity's input (`PublishInput`) is this type:
    ids, counts and the approval, never a text, as a Temporal history may hold them."""

    workflow_id: str
    run_id: str
    task_id: str
    org: str
    project: str
    worktree: str
    scope: str
    total: int
    verified: bool
    validation_source: str | None
    approver: str | None = None
    approver_type: str | None = None
    approval_note: str = ""
    summary: dict[str, Any] = field(default_factory=dict)
    # the commit the verification evidence named: what is published is valid from it
    valid_from_commit: str | None = None
    # the gateway's grant of the approval: its row holds the approver's note (the history never does)
    approval_grant: str | None = None
    # the approver's per-item decisions (rows of promotion_item_decisions under this id): rejected items
    # are skipped, edited ones re-planned and published with the approver's text
    item_decisions: str | None = None


@dataclass(frozen=True)
class _Target:
    """Where a publication goes and who publishes it, worked out once from its input."""

    scope: Scope
    key: str
    visible: list[str]
    confidence: float
    validation_source: str | None
    actor_id: str
    actor_type: str

    @staticmethod
    def of(publication: PlanPublication) -> _Target:
        scope = Scope(publication.scope)
        keys = {
            "org": publication.org,
            "project": publication.project,
            "worktree": publication.worktree,
            "task_id": publication.task_id,
        }
        confidence, validation_source = published_trust(
            publication.verified,
            publication.validation_source,
            human_approved=publication.approver_type == ActorType.HUMAN.value,
        )
        return _Target(
            scope=scope,
            key=scope_key(scope, **keys),
            visible=keys_at_or_above(scope, **keys),
            confidence=confidence,
            validation_source=validation_source,
            actor_id=publication.approver or f"workflow:{publication.workflow_id}"[:64],
            actor_type=publication.approver_type or "system",
        )


@contextlib.contextmanager
def _phase(timings: dict[str, float], name: str) -> Iterator[None]:
    """Add the wall time of the block to `timings[name]` (the caller's log line says where time went)."""
    started = time.perf_counter()
    try:
        yield
    finally:
        timings[name] = timings.get(name, 0.0) + time.perf_counter() - started


async def publish_plan(
    engine: AsyncEngine,
    publication: PlanPublication,
    *,
    replan: Replan,
    chunk_size: int,
    dup_threshold: float,
    related_threshold: float,
    judge: ContradictionJudge | None,
    on_chunk: Callable[[int], None] | None = None,
    timings: dict[str, float] | None = None,
) -> list[PlanItemPublished]:
    """Publish the stored plan a chunk at a time, each chunk one transaction under the scopes' locks; the
    derivations, the promotion's events and the task's end in a last one. What each item did, in plan order.

    `on_chunk` hears the items done (published and held back) after each chunk: the activity's heartbeat.
    Raises `PlanMissing` when the plan or its per-item decisions are not (or no longer) in the database.
    """
    timings = {} if timings is None else timings
    target = _Target.of(publication)
    key = PlanKey(publication.workflow_id, publication.run_id)
    note, summary = await _approved_plan(engine, publication, key)
    decided = await apply_item_decisions(
        engine, publication, key, target.key, target.visible, target.actor_type, replan
    )
    held = await _held_items(engine, publication, key, decided)
    results: list[PlanItemPublished] = []
    derivation: list[PublishedItem] = []
    for start in range(0, publication.total, chunk_size):
        chunk, links = await _publish_chunk_of(
            engine,
            publication,
            target,
            key,
            range(start, min(publication.total, start + chunk_size)),
            held,
            dup_threshold=dup_threshold,
            related_threshold=related_threshold,
            judge=judge,
            timings=timings,
        )
        results += chunk
        derivation += links
        if on_chunk is not None:
            on_chunk(len(results) + len(held))
    if len(results) + len(held) != publication.total:
        raise PlanMissing(
            f"the plan of {publication.workflow_id} has {len(results)} of its {publication.total} items"
        )
    await _finish(engine, publication, key, target, results, derivation, decided, note, summary)
    return results


async def _approved_plan(
    engine: AsyncEngine, publication: PlanPublication, key: PlanKey
) -> tuple[str | None, dict[str, Any]]:
    """The approver's note and the run's summary (with its critique), once the approved plan is found."""
    async with engine.connect() as conn:
        header = await get_plan(conn, key)
        note = publication.approval_note or await grant_note(
            conn, workflow_id=publication.workflow_id, grant=publication.approval_grant
        )
        summary = with_critique(publication.summary, header)
        if header is None or header.plan_total != publication.total:
            # the plan this promotion approved is not there (or not that plan): publish nothing
            raise PlanMissing(
                f"the plan of {publication.workflow_id} (run {publication.run_id}) with {publication.total} "
                f"items is not in the database (found {header.plan_total if header else 'none'})"
            )
    return note, summary


async def _held_items(
    engine: AsyncEngine, publication: PlanPublication, key: PlanKey, decided: Sequence[ItemDecisionRow]
) -> set[int]:
    """The plan indexes not published: those the approver rejected, and without a human's approval those
    quarantined (instructions aimed at agents leave only with a human's approval: a plan holding them waits
    for one; a failed task's episodes, published without waiting, keep them back)."""
    held = {r.idx for r in decided if r.decision == ItemDecisionKind.REJECT}
    async with engine.connect() as conn:
        if publication.approver_type != ActorType.HUMAN.value:
            held |= await quarantined_indexes(conn, key)
    return held


async def _publish_chunk_of(
    engine: AsyncEngine,
    publication: PlanPublication,
    target: _Target,
    key: PlanKey,
    indexes: range,
    held: set[int],
    *,
    dup_threshold: float,
    related_threshold: float,
    judge: ContradictionJudge | None,
    timings: dict[str, float],
) -> tuple[list[PlanItemPublished], list[PublishedItem]]:
    """Publish the plan items at `indexes` (but those `held`) in one transaction, under the scopes' locks
    taken again (and expired memories retired): what each did, written back onto its plan line, and what
    each derives from. A retry replays a committed chunk by its items' idempotency keys."""
    async with engine.begin() as conn:
        with _phase(timings, "lock"):
            await lock_for_publication(conn, target.scope.value, target.key, target.visible)
        with _phase(timings, "rows"):
            rows = [
                r for r in await publish_rows(conn, key, indexes.start, indexes.stop) if r.idx not in held
            ]
            asked = await entry_decay_policies(
                conn, sorted({i for row in rows for i in row.candidate.source_entry_ids})
            )
        outcomes = await publish_chunk(
            conn,
            [
                ChunkItem(
                    _new_memory(publication, target, row, asked),
                    # by plan index, as before the plan moved to the database: one event per item
                    idempotency_key=f"{publication.workflow_id}:publish:{row.idx}",
                )
                for row in rows
            ],
            scope=target.scope.value,
            target_scope_key=target.key,
            visible_scope_keys=target.visible,
            actor_id=target.actor_id,
            actor_type=target.actor_type,
            task_id=publication.task_id,
            workflow_id=publication.workflow_id,
            dup_threshold=dup_threshold,
            related_threshold=related_threshold,
            judge=judge,
            timings=timings,
        )
        chunk = [
            PlanItemPublished(
                idx=row.idx,
                memory_id=outcome.memory_id,
                citation=outcome.citation,
                action=outcome.action,
                memory_type=row.candidate.memory_type,
                title=row.candidate.title,
                superseded_id=outcome.superseded_id,
                replayed=outcome.replayed,
            )
            for row, outcome in zip(rows, outcomes, strict=True)
        ]
        await _record_episodes(conn, publication, target, rows, chunk)
        with _phase(timings, "outcomes"):
            await record_outcomes(conn, key, chunk)
    links = [
        PublishedItem(
            o.memory_id,
            r.candidate.memory_type,
            tuple(r.candidate.source_entry_ids),
            r.candidate.canonical_key,
        )
        for r, o in zip(rows, chunk, strict=True)
    ]
    return chunk, links


def _new_memory(
    publication: PlanPublication, target: _Target, row: PlanItemToPublish, asked: dict[int, str]
) -> NewMemory:
    """A plan item as the memory it publishes: the candidate's text and kind, the approval's trust."""
    c = row.candidate
    return NewMemory(
        memory_type=c.memory_type,
        scope=target.scope.value,
        scope_key=target.key,
        org=publication.org,
        project=publication.project if target.scope is not Scope.ORG else None,
        canonical_key=c.canonical_key,
        title=c.title,
        content=c.content,
        embedding=row.embedding,
        confidence=target.confidence,
        validation_source=target.validation_source,
        importance=c.importance,
        reward=publication.summary.get("reward") if c.memory_type == "episode" else None,
        success=publication.summary.get("success")
        if c.memory_type in ("episode", "skill", "bug_pattern")
        else None,
        source_task_ids=[publication.task_id],
        source_entry_ids=list(c.source_entry_ids),
        # a decay policy asked in the source entries' payloads (governance/trust.py)
        decay_policy=published_decay_policy(
            c.memory_type,
            [asked.get(i) for i in c.source_entry_ids],
            human_approved=publication.approver_type == ActorType.HUMAN.value,
        ).value,
        expires_at=c.expires_at,
        valid_from_commit=publication.valid_from_commit,
    )


async def _record_episodes(
    conn: AsyncConnection,
    publication: PlanPublication,
    target: _Target,
    rows: Sequence[PlanItemToPublish],
    chunk: Sequence[PlanItemPublished],
) -> None:
    """An episode's structured fields beside it, in its chunk's transaction (once per memory)."""
    for row, published in zip(rows, chunk, strict=True):
        if row.candidate.structure is not None and row.candidate.memory_type == "episode":
            await record_episode(
                conn,
                memory_id=published.memory_id,
                org=publication.org,
                project=publication.project if target.scope is not Scope.ORG else None,
                task_id=publication.task_id,
                structure=row.candidate.structure,
            )


async def _finish(
    engine: AsyncEngine,
    publication: PlanPublication,
    key: PlanKey,
    target: _Target,
    results: Sequence[PlanItemPublished],
    derivation: Sequence[PublishedItem],
    decided: Sequence[ItemDecisionRow],
    note: str | None,
    summary: dict[str, Any],
) -> None:
    """The promotion's end, one transaction: the count, the derivations, the approval's and the summary's
    events (each once), the task's status and the promotion's outcome."""
    memory_ids = [r.memory_id for r in results]
    async with engine.begin() as conn:
        await record_published(conn, key, [], count=len(results))
        # what builds on what, within this promotion: a source's later change marks these stale
        await record_derivations(conn, derivation_links(derivation), task_id=publication.task_id)
        if publication.approver is not None:
            await record_event(
                conn,
                event_type=EventType.APPROVED,
                actor_id=publication.approver,
                actor_type=publication.approver_type,
                task_id=publication.task_id,
                workflow_id=publication.workflow_id,
                reason=note or "approved",
                payload={"memory_ids": memory_ids, **_item_counts(decided), **summary},
                idempotency_key=f"{publication.workflow_id}:approved",
                if_absent=True,
            )
        # one summary per promotion: redaction counts, cognify engine and any LLM fallback reason
        await record_event(
            conn,
            event_type=EventType.PROMOTION,
            actor_id=target.actor_id,
            actor_type=target.actor_type,
            task_id=publication.task_id,
            workflow_id=publication.workflow_id,
            reason=f"published {len(results)} memories into {target.key}",
            payload={"memory_ids": memory_ids, **_item_counts(decided), "scope_key": target.key, **summary},
            idempotency_key=f"{publication.workflow_id}:summary",
            if_absent=True,
        )
        await set_task_status(conn, publication.task_id, "promoted" if publication.verified else "unverified")
        await end_promotion(
            conn, publication.workflow_id, "published" if publication.verified else "unverified"
        )


async def apply_item_decisions(
    engine: AsyncEngine,
    publication: PlanPublication,
    key: PlanKey,
    target_key: str,
    visible: list[str],
    actor_type: str,
    replan: Replan,
) -> list[ItemDecisionRow]:
    """Apply the approver's per-item decisions once, before anything is published; the decisions.

    An edited item is planned again with the approver's text (`replan`: embedded, decided against published
    memory as plan decides, screened for instructions aimed at agents) and its candidate and plan line
    rewritten; each rejection and edit writes its event (the reason; the word diff), all in one
    transaction with the rows' `applied_at`. A retry after it finds them applied and only skips.
    """
    if publication.item_decisions is None:
        return []
    async with engine.connect() as conn:
        rows = await item_decisions_of(conn, publication.workflow_id, publication.item_decisions)
    if not rows or any(r.run_id != publication.run_id for r in rows):
        raise PlanMissing(
            f"the per-item decisions {publication.item_decisions} of {publication.workflow_id} are not in "
            "the database"
        )
    if all(r.applied for r in rows):
        return rows
    edits = [r for r in rows if r.decision == ItemDecisionKind.EDIT]
    async with engine.connect() as conn:
        views = await plan_item_views(conn, key, [r.idx for r in edits])
        candidates = await load_candidates(conn, key, [views[r.idx].candidate_index for r in edits])
    edited = [
        replace(
            c,
            title=r.title if r.title is not None else c.title,
            content=r.content if r.content is not None else c.content,
        )
        for r, c in zip(edits, candidates, strict=True)
    ]
    planned = [await replan(target_key, visible, r.idx, c) for r, c in zip(edits, edited, strict=True)]
    async with engine.begin() as conn:
        for candidate in edited:
            await rewrite_candidate_text(
                conn, key, candidate.idx, title=candidate.title, content=candidate.content
            )
        await save_plan_items(conn, key, planned)
        await mark_applied(conn, publication.workflow_id, publication.item_decisions)
        replanned = {p.idx: p.decision for p in planned}
        await record_events(
            conn,
            [_item_event(publication, r, actor_type, replanned.get(r.idx)) for r in rows],
            if_absent=True,
        )
    return rows


def with_critique(summary: dict[str, Any], header: PlanHeader | None) -> dict[str, Any]:
    """The run's summary for its events, with the critique from the plan header (the history has none)."""
    if header is None or not header.critique or summary.get("critique"):
        return summary
    return {**summary, "critique": header.critique}


def _item_counts(decided: Sequence[ItemDecisionRow]) -> dict[str, list[int]]:
    """The plan indexes the approver rejected and edited, for the decision's and the summary's events."""
    if not decided:
        return {}
    return {
        "rejected_items": [r.idx for r in decided if r.decision == ItemDecisionKind.REJECT],
        "edited_items": [r.idx for r in decided if r.decision == ItemDecisionKind.EDIT],
    }


def _item_event(
    publication: PlanPublication, row: ItemDecisionRow, actor_type: str, replanned: str | None
) -> Event:
    """The audit row of one per-item decision: a rejection with its reason, an edit with its word diff."""
    rejected = row.decision == ItemDecisionKind.REJECT
    diff = row.diff or {}
    return Event(
        event_type=EventType.ITEM_REJECTED if rejected else EventType.ITEM_EDITED,
        actor_id=row.decided_by,
        actor_type=actor_type,
        task_id=publication.task_id,
        workflow_id=publication.workflow_id,
        reason=row.reason if rejected else (row.reason or "edited by the approver"),
        payload={"index": row.idx, "decision_id": row.decision_id}
        if rejected
        else {
            "index": row.idx,
            "decision_id": row.decision_id,
            "plan_decision": replanned,
            "title_diff": _diff_text(diff.get("title")),
            "content_diff": _diff_text(diff.get("content")),
        },
        idempotency_key=f"{publication.workflow_id}:item:{row.idx}:{row.decision}",
    )


def _diff_text(ops: Any) -> str | None:
    """A stored diff (`[{"op", "text"}…]`) as one `[-removed-]{+added+}` line; None without one."""
    if not ops:
        return None
    marks = {"equal": "{}", "delete": "[-{}-]", "insert": "{{+{}+}}"}
    return "".join(marks.get(o.get("op"), "{}").format(o.get("text", "")) for o in ops)
