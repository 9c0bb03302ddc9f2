"""Publish candidate memories: lock, find neighbours, classify, then merge, supersede or insert.

One path for all: a plan publishes chunk by chunk (`publish_chunk`, set-based), and a single candidate (a
lift's copy, an import) is a chunk of one (`publish_candidate`). Each runs in the caller's transaction, so
a lift publishes its copies with the rest of the lift. The decision is the pure rules'
(`governance/dedup.py`, over `governance/supersession.py`'s judge); the trust of a merge is
`governance/trust.py`'s; a bug pattern counts one more occurrence of its signature
(`governance/bug_signature.py`). Every statement is `governance/storage/`'s.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from governance.bug_signature import error_signature, failed_fixes, split_bug_pattern
from governance.dedup import BUG_PATTERN, DecisionKind
from governance.errors import Conflict, InvalidInput
from governance.operations.chunk_decisions import ChunkItem, ChunkLookup, Planned, decide_chunk
from governance.scopes import ValidationSource
from governance.storage.bug_patterns import record_occurrence
from governance.storage.derivations import derived_from_any, mark_derived_stale
from governance.storage.events import (
    Event,
    EventType,
    event_rows,
    insert_event_rows,
    recorded_payload,
    recorded_payloads,
)
from governance.storage.memory_rows import (
    HeadDeprecation,
    MemoryInsert,
    MergeInto,
    NewMemory,
    PublishOutcome,
    deprecate_head,
    deprecate_heads,
    make_citation,
    merge_many,
    outcome_dict,
    replay_outcome,
    wider_scope_keys,
)
from governance.storage.publish import insert_chunk_memories, lock_for_publication
from governance.supersession import ContradictionJudge
from governance.trust import VALIDATION_BOOSTS

__all__ = ["lock_for_publication", "publish_candidate", "publish_chunk"]


async def publish_candidate(
    conn: AsyncConnection,
    mem: NewMemory,
    *,
    visible_scope_keys: list[str],
    actor_id: str,
    actor_type: str,
    task_id: str | None,
    workflow_id: str | None,
    idempotency_key: str,
    dup_threshold: float,
    related_threshold: float,
    judge: ContradictionJudge | None = None,
    locked: bool = False,
) -> PublishOutcome:
    """Publish one candidate (a lift's copy, an import's memory): `publish_chunk` of a chunk of one.

    Runs inside the caller's transaction; idempotent on `idempotency_key` (a replay writes nothing). `locked`:
    the transaction already ran `lock_for_publication` for this scope key (a whole plan publishing).
    """
    recorded = await recorded_payload(conn, idempotency_key)
    if recorded is not None:
        return replay_outcome(recorded)
    if mem.scope_key not in visible_scope_keys:
        raise InvalidInput(f"scope key {mem.scope_key!r} is not among the visible scope keys")
    if not locked:
        # a concurrent attempt with the same key may commit while we wait: publish_chunk asks again
        await lock_for_publication(conn, mem.scope, mem.scope_key, visible_scope_keys)
    (outcome,) = await publish_chunk(
        conn,
        [ChunkItem(mem, idempotency_key)],
        scope=mem.scope,
        target_scope_key=mem.scope_key,
        visible_scope_keys=visible_scope_keys,
        actor_id=actor_id,
        actor_type=actor_type,
        task_id=task_id,
        workflow_id=workflow_id,
        dup_threshold=dup_threshold,
        related_threshold=related_threshold,
        judge=judge,
    )
    return outcome


async def publish_chunk(
    conn: AsyncConnection,
    items: Sequence[ChunkItem],
    *,
    scope: str,
    target_scope_key: str,
    visible_scope_keys: list[str],
    actor_id: str,
    actor_type: str,
    task_id: str | None,
    workflow_id: str | None,
    dup_threshold: float,
    related_threshold: float,
    judge: ContradictionJudge | None = None,
    timings: dict[str, float] | None = None,
) -> list[PublishOutcome]:
    """Publish a chunk of a plan in the caller's transaction, which ran `lock_for_publication`: what
    `publish_candidate` does for each item in turn, in a few set-based statements.

    Items already published (their idempotency key recorded) are replayed. The others are decided in plan
    order off the event loop against one neighbour lookup for the chunk (`decide_chunk`), then written: one
    INSERT for the new memories, one UPDATE for the merges, one INSERT for the events; a supersession
    (rare) deprecates its head in turn, after what was pending is written. One outcome per item, in order.
    """
    lap = _Laps(timings)
    recorded = await recorded_payloads(conn, [i.idempotency_key for i in items])
    outcomes: dict[int, PublishOutcome] = {
        n: replay_outcome(recorded[i.idempotency_key])
        for n, i in enumerate(items)
        if i.idempotency_key in recorded
    }
    todo = [(n, i) for n, i in enumerate(items) if n not in outcomes]
    for _, item in todo:
        if item.mem.scope_key != target_scope_key or item.mem.scope_key not in visible_scope_keys:
            raise InvalidInput(f"scope key {item.mem.scope_key!r} is not the plan's target scope key")
    wider = wider_scope_keys(scope, visible_scope_keys, target_scope_key)
    lookup = ChunkLookup(conn, [target_scope_key, *wider], target_scope_key, [i for _, i in todo])
    decide = functools.partial(
        decide_chunk,
        [i for _, i in todo],
        target_scope_key=target_scope_key,
        dup_threshold=dup_threshold,
        related_threshold=related_threshold,
        judge=judge,
    )
    found = await lookup.neighbours()
    lap("neighbours")
    planned = await asyncio.to_thread(decide, found)
    lap("decide")
    if lookup.shortcut_invalid(planned):
        # an identical memory the lookup relied on was superseded within the chunk (rare): decide again with
        # every item's nearest neighbours, as without the shortcut
        found = await lookup.neighbours(everyone=True)
        lap("neighbours again")
        planned = await asyncio.to_thread(decide, found)
        lap("decide again")
    common: dict[str, Any] = {
        "actor_id": actor_id,
        "actor_type": actor_type,
        "task_id": task_id,
        "workflow_id": workflow_id,
    }
    inserts: list[MemoryInsert] = []
    merges: dict[str, list[Planned]] = {}
    merged: dict[str, tuple[str, float]] = {}
    citations: dict[str, str] = {}
    olds: dict[str, Any] = {}

    async def flush() -> None:
        citations.update(
            zip([r.memory_id for r in inserts], await insert_chunk_memories(conn, inserts), strict=True)
        )
        inserts.clear()
        merged.update(
            await merge_many(
                conn,
                [
                    MergeInto(
                        target,
                        len(ps),
                        [t for p in ps for t in p.item.mem.source_task_ids],
                        [e for p in ps for e in p.item.mem.source_entry_ids],
                        approved=any(p.item.mem.validation_source == "human_approved" for p in ps),
                    )
                    for target, ps in merges.items()
                ],
                boost=VALIDATION_BOOSTS[ValidationSource.REPEATED_SUCCESS],
            )
        )
        for target in merges:
            if target not in merged:
                raise Conflict(f"memory {target} was deprecated while merging; retry the publication")
        merges.clear()

    def merge(p: Planned) -> bool:
        return p.decision.kind is DecisionKind.DUPLICATE and p.target is not None

    superseding = {p.target.id: p for p in planned if p.target is not None and not merge(p)}
    if superseding.keys() & {p.target.id for p in planned if merge(p) and p.target is not None}:
        # a memory merged into and then superseded within the chunk (rare): in turn, as one by one would
        for p in planned:
            mem = p.item.mem
            if merge(p) and p.target is not None:
                merges.setdefault(p.target.id, []).append(p)
                continue
            old = None
            if p.target is not None:
                await flush()  # what the head's deprecation must see written (it may be new in this chunk)
                old = await deprecate_head(
                    conn, p.target.id, note=p.decision.reason, valid_to_commit=mem.valid_from_commit
                )
                if old is None:
                    raise Conflict(
                        f"memory {p.target.id} is no longer the head of its chain; retry the publication"
                    )
                olds[p.memory_id] = old
            inserts.append(
                MemoryInsert(
                    mem,
                    memory_id=p.memory_id,
                    chash=p.chash,
                    supersedes_id=p.target.id if p.target is not None else None,
                    canonical_key=mem.canonical_key
                    if old is None
                    else (mem.canonical_key or old.canonical_key),
                    version=old.version + 1 if old is not None else 1,
                    related_ids=p.decision.related_ids if p.target is None else (),
                )
            )
    else:
        # set-based: the published heads superseded by the chunk deprecated in one statement, then every new
        # memory in one INSERT, those superseded within the chunk written deprecated already
        fresh = {p.memory_id for p in planned if not merge(p)}
        heads = await deprecate_heads(
            conn,
            [
                HeadDeprecation(head, p.decision.reason, p.item.mem.valid_from_commit)
                for head, p in superseding.items()
                if head not in fresh
            ],
        )
        for head in superseding.keys() - fresh:
            if head not in heads:
                raise Conflict(f"memory {head} is no longer the head of its chain; retry the publication")
        chain: dict[str, tuple[int, str | None, str]] = {
            head: (row.version, row.canonical_key, row.citation) for head, row in heads.items()
        }
        for p in planned:
            mem = p.item.mem
            if merge(p) and p.target is not None:
                merges.setdefault(p.target.id, []).append(p)
                continue
            version, key = 1, mem.canonical_key
            if p.target is not None:
                old_version, old_key, old_citation = chain[p.target.id]
                version, key = old_version + 1, mem.canonical_key or old_key
                olds[p.memory_id] = SimpleNamespace(citation=old_citation)
            chain[p.memory_id] = (version, key, make_citation(p.memory_id))
            successor = superseding.get(p.memory_id)
            inserts.append(
                MemoryInsert(
                    mem,
                    memory_id=p.memory_id,
                    chash=p.chash,
                    supersedes_id=p.target.id if p.target is not None else None,
                    canonical_key=key,
                    version=version,
                    related_ids=p.decision.related_ids if p.target is None else (),
                    deprecated_note=successor.decision.reason if successor is not None else None,
                    valid_to_commit=successor.item.mem.valid_from_commit if successor is not None else None,
                )
            )
    await flush()
    lap("write")

    events: list[Event] = []
    for (n, item), p in zip(todo, planned, strict=True):
        mem = item.mem
        if p.decision.kind is DecisionKind.DUPLICATE and p.target is not None:
            citation, confidence = merged[p.target.id]
            outcome = PublishOutcome(p.target.id, citation, "merged")
            event: dict[str, Any] = {
                "memory_id": p.target.id,
                "event_type": EventType.MERGED,
                "reason": p.decision.reason,
                "payload": {
                    "outcome": outcome_dict(outcome),
                    "duplicate_of": p.target.id,
                    "candidate": {
                        "title": mem.title,
                        "content": mem.content,
                        "content_hash": p.chash,
                        "scope_key": mem.scope_key,
                        "source_task_ids": list(mem.source_task_ids),
                        "source_entry_ids": list(mem.source_entry_ids),
                    },
                    "similarity": p.decision.similarity,
                    # after every merge of this chunk into it
                    "confidence": confidence,
                },
            }
        elif p.target is None:
            outcome = PublishOutcome(p.memory_id, citations[p.memory_id], "promoted")
            event = {
                "memory_id": p.memory_id,
                "event_type": EventType.PROMOTED,
                "reason": p.decision.reason,
                "payload": {
                    "outcome": outcome_dict(outcome),
                    "related_ids": list(p.decision.related_ids),
                    "scope_key": mem.scope_key,
                    "source_entry_ids": list(mem.source_entry_ids),
                },
            }
        else:
            outcome = PublishOutcome(
                p.memory_id, citations[p.memory_id], "superseded", superseded_id=p.target.id
            )
            event = {
                "memory_id": p.memory_id,
                "event_type": EventType.SUPERSEDED,
                "reason": p.decision.reason,
                "payload": {
                    "outcome": outcome_dict(outcome),
                    "old": p.target.id,
                    "new": p.memory_id,
                    "old_citation": olds[p.memory_id].citation,
                    "similarity": p.decision.similarity,
                },
            }
        outcomes[n] = outcome
        events.append(Event(idempotency_key=item.idempotency_key, **event, **common))
    # the events' free text is redacted off the event loop (thousands of them in a big chunk)
    await insert_event_rows(conn, await asyncio.to_thread(event_rows, events))
    lap("events")
    # only a memory something was derived from has derivations to mark stale (none are new in this chunk)
    sources = await derived_from_any(
        conn, [p.target.id for p in planned if p.target is not None and not merge(p)]
    )
    for (_, item), p in zip(todo, planned, strict=True):
        mem = item.mem
        if p.target is not None and not merge(p) and p.target.id in sources:
            await mark_derived_stale(
                conn,
                p.target.id,
                cause="superseded",
                reason=p.decision.reason,
                successor_id=p.memory_id,
                **common,
            )
        if mem.memory_type == BUG_PATTERN:
            await _count_occurrence(conn, p.memory_id, mem)
    lap("derived")
    return [outcomes[n] for n in range(len(items))]


class _Laps:
    """A stopwatch whose laps add up by name in a caller's `timings` (where it asked where time goes)."""

    def __init__(self, timings: dict[str, float] | None) -> None:
        self._timings = timings
        self._last = time.perf_counter()

    def __call__(self, name: str) -> None:
        now = time.perf_counter()
        if self._timings is not None:
            self._timings[name] = self._timings.get(name, 0.0) + now - self._last
        self._last = now


async def _count_occurrence(conn: AsyncConnection, memory_id: str, mem: NewMemory) -> None:
    """One more occurrence of a bug pattern's signature, with the fix tried."""
    error, fix = split_bug_pattern(mem.content)
    await record_occurrence(
        conn,
        memory_id=memory_id,
        scope_key=mem.scope_key,
        signature=error_signature(error),
        solution=fix,
        failed=failed_fixes(mem.content),
        # bug patterns come from verified tasks (cognify); an unknown outcome is not a success
        succeeded=mem.success is True,
        # a human approved this promotion: its fixes are reviewed, not an agent's own word
        reviewed=mem.validation_source == ValidationSource.HUMAN_APPROVED.value,
    )
