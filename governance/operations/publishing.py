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
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from types import SimpleNamespace
from typing import Any

import numpy as np
from sqlalchemy.ext.asyncio import AsyncConnection

from governance.bug_signature import error_signature, failed_fixes, split_bug_pattern
from governance.dedup import BUG_PATTERN, Decision, DecisionKind, Neighbour, classify, content_hash
from governance.errors import Conflict, InvalidInput
from governance.scopes import ValidationSource
from governance.storage.bug_patterns import record_occurrence
from governance.storage.derivations import derived_from_any, mark_derived_stale
from governance.storage.events import (
    Event,
    EventType,
    record_events,
    recorded_payload,
    recorded_payloads,
)
from governance.storage.memory_rows import (
    NEIGHBOURS_K,
    HeadDeprecation,
    MemoryInsert,
    MergeInto,
    NewMemory,
    PublishOutcome,
    deprecate_head,
    deprecate_heads,
    insert_memories,
    make_citation,
    merge_many,
    outcome_dict,
    replay_outcome,
    wider_scope_keys,
)
from governance.storage.publish import (
    NeighbourProbe,
    find_identical_many,
    find_nearest_many,
    lock_for_publication,
)
from governance.supersession import ContradictionJudge
from governance.trust import VALIDATION_BOOSTS

__all__ = ["ChunkItem", "lock_for_publication", "publish_candidate", "publish_chunk"]


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


@dataclass(frozen=True)
class ChunkItem:
    """One plan item of a chunk publishing at once: the memory and its (per item) idempotency key."""

    mem: NewMemory
    idempotency_key: str


@dataclass
class _Planned:
    """What the chunk's decision loop chose for one item (`publish_chunk`)."""

    item: ChunkItem
    chash: str
    decision: Decision
    target: Neighbour | None
    memory_id: str  # the new memory's id (insert, supersede) or the target's (merge)


def _vector(values: Sequence[float] | None) -> np.ndarray | None:
    if values is None:
        return None
    v = np.asarray(values, dtype=np.float32)
    norm = float(np.linalg.norm(v))
    return v / norm if norm else None


class _Lookup:
    """The neighbours of a chunk's items in published memory, read in few statements under the locks.

    Identical items (same text, key and vector) are looked up once. Every item's identical and canonical-key
    matches come from one statement, by index. Its k nearest come from the exact scan only when it has no
    identical memory in the target scope: such an item is a duplicate of it whatever else is near
    (`dedup.classify`'s first rule), so in a plan that repeats itself most items cost an index lookup.
    `shortcut_invalid` says when that did not hold (the identical memory superseded within the chunk).
    """

    def __init__(
        self,
        conn: AsyncConnection,
        scope_keys: list[str],
        target_scope_key: str,
        items: Sequence[ChunkItem],
    ) -> None:
        self._conn = conn
        self._keys = scope_keys
        self._target = target_scope_key
        self._slot: list[int] = []  # item -> its distinct probe
        self._probes: list[NeighbourProbe] = []
        seen: dict[tuple[str, str | None, bytes | None], int] = {}
        for item in items:
            mem = item.mem
            vector = np.asarray(mem.embedding, dtype=np.float32).tobytes() if mem.embedding else None
            key = (content_hash(mem.content), mem.canonical_key, vector)
            if key not in seen:
                seen[key] = len(self._probes)
                self._probes.append(NeighbourProbe(key[0], mem.canonical_key, mem.embedding))
            self._slot.append(seen[key])
        self._identical: list[list[Neighbour]] | None = None
        self._skipped: set[int] = set()  # distinct probes whose nearest were not read

    def _settled(self, probe: NeighbourProbe, identical: Sequence[Neighbour]) -> bool:
        return any(n.content_hash == probe.content_hash and n.scope_key == self._target for n in identical)

    async def neighbours(self, *, everyone: bool = False) -> list[list[Neighbour]]:
        """Each item's neighbours, in order: identical and canonical-key matches, and the k nearest of those
        without an identical memory in the target scope (of every item with `everyone`)."""
        if self._identical is None:
            # the probes' vectors as text (~0.2 ms each) in a thread, not on the worker's event loop
            await asyncio.to_thread(lambda: [p.vector_text for p in self._probes])
            self._identical = await find_identical_many(
                self._conn, scope_keys=self._keys, target_scope_key=self._target, probes=self._probes
            )
        self._skipped = (
            set()
            if everyone
            else {n for n, p in enumerate(self._probes) if self._settled(p, self._identical[n])}
        )
        asked = [n for n in range(len(self._probes)) if n not in self._skipped]
        nearest = await find_nearest_many(
            self._conn, scope_keys=self._keys, probes=[self._probes[n] for n in asked]
        )
        near: list[list[Neighbour]] = [[] for _ in self._probes]
        for n, found in zip(asked, nearest, strict=True):
            near[n] = found
        per_probe = [_union(a, b) for a, b in zip(self._identical, near, strict=True)]
        return [per_probe[slot] for slot in self._slot]

    def shortcut_invalid(self, planned: Sequence[_Planned]) -> bool:
        """Whether an item whose nearest were not read was decided other than as a duplicate of an identical
        memory in the target scope (its identical memory was superseded by an earlier item of the chunk)."""
        for slot, p in zip(self._slot, planned, strict=True):
            if slot in self._skipped and not (
                p.decision.kind is DecisionKind.DUPLICATE
                and p.target is not None
                and p.target.content_hash == p.chash
                and p.target.scope_key == self._target
            ):
                return True
        return False


def _union(first: Sequence[Neighbour], second: Sequence[Neighbour]) -> list[Neighbour]:
    seen = {n.id for n in first}
    return [*first, *(n for n in second if n.id not in seen)]


class _Fresh:
    """The new memories of a chunk decided so far, as neighbours of the items after them: their vectors in one
    matrix (one product scores them all against an item), their hashes and canonical keys indexed."""

    def __init__(self, capacity: int, dim: int) -> None:
        self.memories: list[Neighbour] = []
        self._matrix = np.zeros((max(1, capacity), dim), dtype=np.float32)
        self._live = np.zeros(max(1, capacity), dtype=bool)  # has a vector and was not superseded
        self._by_hash: dict[str, list[int]] = {}
        self._by_key: dict[str, list[int]] = {}
        self._gone: set[int] = set()
        self._index: dict[str, int] = {}

    def add(self, memory: Neighbour, vector: np.ndarray | None) -> None:
        n = len(self.memories)
        self.memories.append(memory)
        self._index[memory.id] = n
        if vector is not None and n < len(self._matrix):
            self._matrix[n] = vector
            self._live[n] = True
        self._by_hash.setdefault(memory.content_hash, []).append(n)
        if memory.canonical_key is not None:
            self._by_key.setdefault(memory.canonical_key, []).append(n)

    def remove(self, memory_id: str) -> None:
        n = self._index.get(memory_id)
        if n is not None:
            self._gone.add(n)
            self._live[n] = False

    def near(
        self, vector: np.ndarray | None, chash: str, canonical_key: str | None, k: int
    ) -> list[Neighbour]:
        """The fresh memories an item meets: its identical and canonical-key matches and its k nearest (by
        similarity, then id), each with its similarity to the item (0 without vectors)."""
        count = len(self.memories)
        if not count:
            return []
        sims = np.zeros(count, dtype=np.float32)
        live = self._live[:count]
        if vector is not None:
            sims = np.where(live, self._matrix[:count] @ vector, 0.0).astype(np.float32)
        pool = [n for n in range(count) if n not in self._gone]
        if len(pool) > k:
            # the k-th best similarity; every memory at least that close competes, ties broken by id
            ranked = np.sort(sims[pool])[::-1]
            floor = ranked[k - 1]
            pool = [n for n in pool if sims[n] >= floor]
        nearest = sorted(pool, key=lambda n: (-float(sims[n]), self.memories[n].id))[:k]
        matches = self._by_hash.get(chash, []) + (
            self._by_key.get(canonical_key, []) if canonical_key is not None else []
        )
        chosen = dict.fromkeys(n for n in (*matches, *nearest) if n not in self._gone)
        return [replace(self.memories[n], similarity=float(sims[n])) for n in chosen]


def _decide_chunk(
    items: Sequence[ChunkItem],
    found: Sequence[Sequence[Neighbour]],
    *,
    target_scope_key: str,
    dup_threshold: float,
    related_threshold: float,
    judge: ContradictionJudge | None,
    k: int = NEIGHBOURS_K,
) -> list[_Planned]:
    """Each item's decision in plan order, as if published one after another (pure; run off the event loop).

    An item meets its neighbours in published memory (`found`, read under the locks at the chunk's start)
    and the items of this chunk decided before it (a new memory joins the neighbours, a superseded one
    leaves): the same neighbour set one-by-one publishing would read, bounded by `k` nearest plus exact and
    canonical-key matches, whatever the number of close memories. The chunk's new memories are scored
    against each item in one matrix product.
    """
    planned: list[_Planned] = []
    gone: set[str] = set()  # superseded within the chunk
    dims = [len(i.mem.embedding) for i in items if i.mem.embedding]
    fresh = _Fresh(len(items), dims[0] if dims else 1)
    for item, neighbours in zip(items, found, strict=True):
        mem = item.mem
        chash = content_hash(mem.content)
        vector = _vector(mem.embedding)
        if vector is not None and dims and vector.shape[0] != dims[0]:
            vector = None  # a vector of another space cannot be compared
        near = [n for n in neighbours if n.id not in gone]
        if fresh.memories:
            seen = {n.id for n in near}
            near += [n for n in fresh.near(vector, chash, mem.canonical_key, k) if n.id not in seen]
            keep = {n.id for n in sorted(near, key=lambda n: (-n.similarity, n.id))[:k]}
            near = [
                n
                for n in near
                if n.id in keep
                or n.content_hash == chash
                or (mem.canonical_key is not None and n.canonical_key == mem.canonical_key)
            ]
        decision = classify(
            content=mem.content,
            content_hash=chash,
            canonical_key=mem.canonical_key,
            neighbours=near,
            dup_threshold=dup_threshold,
            related_threshold=related_threshold,
            judge=judge,
            scope_key=mem.scope_key,
            memory_type=mem.memory_type,
        )
        target = next((n for n in near if n.id == decision.target_id), None)
        if decision.kind is DecisionKind.DUPLICATE and target is not None:
            planned.append(_Planned(item, chash, decision, target, target.id))
            continue
        superseded = target if decision.kind is DecisionKind.SUPERSEDE else None
        memory_id = str(uuid.uuid4())
        if superseded is not None:
            gone.add(superseded.id)
            fresh.remove(superseded.id)
        planned.append(_Planned(item, chash, decision, superseded, memory_id))
        fresh.add(
            Neighbour(
                id=memory_id,
                scope_key=target_scope_key,
                canonical_key=mem.canonical_key
                if superseded is None
                else (mem.canonical_key or superseded.canonical_key),
                content_hash=chash,
                similarity=0.0,
                title=mem.title,
                content=mem.content,
                memory_type=mem.memory_type,
            ),
            vector,
        )
    return planned


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
    order off the event loop against one neighbour lookup for the chunk (`_decide_chunk`), then written: one
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
    lookup = _Lookup(conn, [target_scope_key, *wider], target_scope_key, [i for _, i in todo])
    found = await lookup.neighbours()
    lap("neighbours")
    planned = await asyncio.to_thread(
        _decide_chunk,
        [i for _, i in todo],
        found,
        target_scope_key=target_scope_key,
        dup_threshold=dup_threshold,
        related_threshold=related_threshold,
        judge=judge,
    )
    lap("decide")
    if lookup.shortcut_invalid(planned):
        # an identical memory the lookup relied on was superseded within the chunk (rare): decide again with
        # every item's nearest neighbours, as without the shortcut
        found = await lookup.neighbours(everyone=True)
        lap("neighbours again")
        planned = await asyncio.to_thread(
            _decide_chunk,
            [i for _, i in todo],
            found,
            target_scope_key=target_scope_key,
            dup_threshold=dup_threshold,
            related_threshold=related_threshold,
            judge=judge,
        )
        lap("decide again")
    common: dict[str, Any] = {
        "actor_id": actor_id,
        "actor_type": actor_type,
        "task_id": task_id,
        "workflow_id": workflow_id,
    }
    inserts: list[MemoryInsert] = []
    merges: dict[str, list[_Planned]] = {}
    merged: dict[str, tuple[str, float]] = {}
    citations: dict[str, str] = {}
    olds: dict[str, Any] = {}

    async def flush() -> None:
        citations.update(
            zip([r.memory_id for r in inserts], await insert_memories(conn, inserts), strict=True)
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

    def merge(p: _Planned) -> bool:
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
    await record_events(conn, events)
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
    )
