"""A chunk's items decided: their neighbours looked up under the locks, dedup's rules run in plan order.

What `publishing.publish_chunk` writes is decided here, before a row is written: each item meets its
neighbours in published memory (`ChunkLookup`) and the items of the chunk decided before it (`decide_chunk`),
as if published one after another.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from sqlalchemy.ext.asyncio import AsyncConnection

from governance.dedup import Decision, DecisionKind, Neighbour, classify, content_hash
from governance.storage.memory_rows import NEIGHBOURS_K, NewMemory
from governance.storage.publish import NeighbourProbe, find_identical_many, find_nearest_many
from governance.supersession import ContradictionJudge

__all__ = ["ChunkItem", "ChunkLookup", "Planned", "decide_chunk"]


@dataclass(frozen=True)
class ChunkItem:
    """One plan item of a chunk publishing at once: the memory and its (per item) idempotency key."""

    mem: NewMemory
    idempotency_key: str


@dataclass
class Planned:
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


class ChunkLookup:
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
        self._nearest: dict[int, list[Neighbour]] = {}  # distinct probe -> its nearest, once read

    def _settled(self, probe: NeighbourProbe, identical: Sequence[Neighbour]) -> bool:
        return any(n.content_hash == probe.content_hash and n.scope_key == self._target for n in identical)

    async def neighbours(self, *, everyone: bool = False) -> list[list[Neighbour]]:
        """Each item's neighbours, in order: identical and canonical-key matches, and the k nearest of those
        without an identical memory in the target scope (of every item with `everyone`)."""
        if self._identical is None:
            self._identical = await find_identical_many(
                self._conn, scope_keys=self._keys, target_scope_key=self._target, probes=self._probes
            )
        self._skipped = (
            set()
            if everyone
            else {n for n, p in enumerate(self._probes) if self._settled(p, self._identical[n])}
        )
        # a probe's nearest read before in this transaction are still what it would read (nothing was written
        # in between): a second call reads only those of the probes the first one skipped
        asked = [n for n in range(len(self._probes)) if n not in self._skipped and n not in self._nearest]
        nearest = await find_nearest_many(
            self._conn, scope_keys=self._keys, probes=[self._probes[n] for n in asked]
        )
        self._nearest.update(zip(asked, nearest, strict=True))
        near: list[list[Neighbour]] = [
            self._nearest.get(n, []) if n not in self._skipped else [] for n in range(len(self._probes))
        ]
        per_probe = [_union(a, b) for a, b in zip(self._identical, near, strict=True)]
        return [per_probe[slot] for slot in self._slot]

    def shortcut_invalid(self, planned: Sequence[Planned]) -> bool:
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


def decide_chunk(
    items: Sequence[ChunkItem],
    found: Sequence[Sequence[Neighbour]],
    *,
    target_scope_key: str,
    dup_threshold: float,
    related_threshold: float,
    judge: ContradictionJudge | None,
    k: int = NEIGHBOURS_K,
) -> list[Planned]:
    """Each item's decision in plan order, as if published one after another (pure; run off the event loop).

    An item meets its neighbours in published memory (`found`, read under the locks at the chunk's start)
    and the items of this chunk decided before it (a new memory joins the neighbours, a superseded one
    leaves): the same neighbour set one-by-one publishing would read, bounded by `k` nearest plus exact and
    canonical-key matches, whatever the number of close memories. The chunk's new memories are scored
    against each item in one matrix product.
    """
    planned: list[Planned] = []
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
            planned.append(Planned(item, chash, decision, target, target.id))
            continue
        superseded = target if decision.kind is DecisionKind.SUPERSEDE else None
        memory_id = str(uuid.uuid4())
        if superseded is not None:
            gone.add(superseded.id)
            fresh.remove(superseded.id)
        planned.append(Planned(item, chash, decision, superseded, memory_id))
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
