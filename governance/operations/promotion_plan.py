"""Plan a promotion run: its stored candidates embedded, decided against visible memory and screened.

The plan activity heartbeats, logs and maps failures; this is the use case, a chunk of candidates at a time:
`Planner.start` finds where the plan stands (the chunks an earlier attempt committed are not redone), and
`Planner.run` plans the rest: each chunk's candidates loaded, embedded (`_vectors`: from the embedding cache
first, only misses embedded, a few texts per turn at the worker's embedder), their neighbours found in
visible memory, decided (`governance/dedup.classify`, off the event loop), screened for instructions aimed
at agents and for a rule a non-human proposed (`_plan_candidates`), and committed before the next chunk
starts; then the plan is marked complete and its first items read back as a Temporal history may hold them
(`_preview_item`: kinds, ids, numbers, no text). Publish plans an approver's edited item the same way
(`Planner.replan`). The inputs are already authorised; every statement is `governance/storage/`'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from governance.adapters.embedders import (
    EMBEDDING_TENANT,
    Embedder,
    EmbeddingDimensionMismatch,
    embed_in_turns,
)
from governance.adapters.exemplar_vectors import exemplar_vectors
from governance.cognify import rule_proposal_reason
from governance.dedup import Decision, classify, content_hash
from governance.instruction_exemplars import nearest_exemplars
from governance.instructions import QuarantinedItem, quarantine_reason
from governance.operations.promotion_publish import Replan
from governance.publication import NearbyMemory, PlanItem
from governance.storage.embedding_cache import cache_vectors, cached_vectors, text_digest
from governance.storage.plan_items import PlanItemToWrite, finish_plan, save_plan_items
from governance.storage.plan_review import NearMemory, PublishedTarget, nearest_memories, published_targets
from governance.storage.plans import (
    PlanItemForReview,
    PlanKey,
    StoredCandidate,
    candidate_indexes,
    load_candidates,
    plan_counts,
    plan_page,
    planned_count,
    quarantined_items,
)
from governance.storage.publish import NeighbourProbe, find_neighbours_many
from governance.storage.staging import written_by_non_humans
from governance.supersession import ContradictionJudge

__all__ = ["EMBED_SLICE", "EmbeddingRefused", "PlanProgress", "PlanRun", "PlannedRun", "Planner"]

# texts embedded per turn at the worker's embedder: other promotions' turns come between a big plan's slices
EMBED_SLICE = 8

# identical candidates (same text digest, canonical key and type) meet the same neighbours: decided once
_Same = tuple[str, str | None, str]


class EmbeddingRefused(Exception):
    """The embedder answered the candidates' texts with vectors the schema cannot hold (the cause, an
    `EmbeddingDimensionMismatch`): retrying cannot fix a misconfigured endpoint."""


@dataclass
class PlanProgress:
    """What a running plan has done: its heartbeat's detail, its embedding counts, its time per phase."""

    done: int = 0
    embedded: int = 0
    cached: int = 0
    phases: dict[str, float] = field(default_factory=dict)
    # the process's CPU seconds while it embedded: about twice the wall time when the engine's two threads
    # had both cores, about the wall time when other work took one (contention, not more work)
    embed_cpu: float = 0.0

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Add the wall time of the block to phase `name` (the log line at the end says where time went)."""
        started = time.perf_counter()
        try:
            yield
        finally:
            self.phases[name] = self.phases.get(name, 0.0) + time.perf_counter() - started

    def timings(self) -> str:
        ordered = sorted(self.phases.items(), key=lambda kv: -kv[1])
        return ", ".join(
            f"{name} {seconds:.2f} s" + (f" (CPU {self.embed_cpu:.2f} s)" if name == "embed" else "")
            for name, seconds in ordered
        )


@dataclass
class PlanRun:
    """A plan about to run: its key, the candidates it plans (by index) and where an earlier attempt left it
    (`progress.done`, also `resumed_from`)."""

    key: PlanKey
    indexes: list[int]
    resumed_from: int
    progress: PlanProgress


@dataclass(frozen=True)
class PlannedRun:
    """A complete plan: its size, decisions, first items and quarantined items, as a history may hold them."""

    total: int
    decisions: dict[str, int]
    preview: list[PlanItem]
    quarantined: int
    # by index and reason labels (never the title)
    quarantined_items: list[QuarantinedItem]


# the instruction screen: its rules read each text once per worker process (governance/instructions.py
# caches them by text); the resemblance, measured per chunk, is not part of that key
_screened = quarantine_reason


class Planner:
    """Plans promotion runs; one per worker, sharing its embedder and the known injections' vectors."""

    def __init__(
        self,
        *,
        engine: AsyncEngine,
        embedder: Embedder,
        judge: ContradictionJudge,
        dup_threshold: float,
        related_threshold: float,
        chunk_size: int,
    ) -> None:
        self._engine = engine
        self._embedder = embedder
        self._judge = judge
        self._dup_threshold = dup_threshold
        self._related_threshold = related_threshold
        self._chunk_size = max(1, chunk_size)

    async def start(self, key: PlanKey, memory_types: Sequence[str] | None) -> PlanRun:
        """The run's candidates to plan (only `memory_types`, when given) and the items already written."""
        async with self._engine.connect() as conn:
            indexes = await candidate_indexes(conn, key, memory_types)
            written = await planned_count(conn, key)
        progress = PlanProgress(done=min(written, len(indexes)))
        return PlanRun(key, indexes, progress.done, progress)

    async def run(
        self,
        run: PlanRun,
        *,
        scope_key: str,
        visible: list[str],
        tenant: str,
        preview_items: int,
        on_chunk: Callable[[int], None],
    ) -> PlannedRun:
        """Plan the rest of `run` a chunk at a time, each chunk committed before the next starts (`on_chunk`
        hears the items done: the activity's heartbeat), then mark the plan complete and read its first
        `preview_items` items back. `tenant` is who takes the turns at the embedder."""
        key, indexes, progress = run.key, run.indexes, run.progress
        # identical candidates (same text, key and type) meet the same neighbours: decided once per attempt
        decided: dict[_Same, Decision] = {}
        for start in range(progress.done, len(indexes), self._chunk_size):
            chunk = indexes[start : start + self._chunk_size]
            with progress.phase("load"):
                async with self._engine.connect() as conn:
                    candidates = await load_candidates(conn, key, chunk)
            items = await self._plan_candidates(
                scope_key, visible, start, candidates, progress, decided, tenant
            )
            with progress.phase("save"):
                async with self._engine.begin() as conn:
                    await save_plan_items(conn, key, items)
            progress.done = start + len(chunk)
            on_chunk(progress.done)
        with progress.phase("finish"):
            async with self._engine.begin() as conn:
                return await _finished(conn, key, len(indexes), scope_key, preview_items)

    def replan(self, tenant: str) -> Replan:
        """Plan one edited item as `run` plans it (embedded, decided against visible memory, screened): what
        publish hands `apply_item_decisions`."""

        async def replan(
            target_key: str, visible: list[str], idx: int, candidate: StoredCandidate
        ) -> PlanItemToWrite:
            items = await self._plan_candidates(
                target_key, visible, idx, [candidate], PlanProgress(), {}, tenant
            )
            return items[0]

        return replan

    async def _plan_candidates(
        self,
        scope_key: str,
        visible: list[str],
        start: int,
        candidates: Sequence[StoredCandidate],
        progress: PlanProgress,
        decided: dict[_Same, Decision],
        tenant: str,
    ) -> list[PlanItemToWrite]:
        """Plan items `start`.. for `candidates`: embedded, decided against visible memory, screened."""
        vectors = await self._vectors([c.content for c in candidates], progress, tenant)
        exemplars = await self._exemplar_vectors(progress)
        digests = [content_hash(c.content) for c in candidates]
        sames = [(text_digest(c.content), c.canonical_key, c.memory_type) for c in candidates]
        # identical candidates meet the same neighbours: each distinct one is looked up and decided once
        todo: dict[_Same, int] = {}
        for n, same in enumerate(sames):
            if same not in decided and same not in todo:
                todo[same] = n
        with progress.phase("neighbours"):
            async with self._engine.connect() as conn:
                found = await find_neighbours_many(
                    conn,
                    scope_keys=visible,
                    target_scope_key=scope_key,
                    probes=[
                        NeighbourProbe(digests[n], candidates[n].canonical_key, vectors[n])
                        for n in todo.values()
                    ],
                )
                proposals = [await _rule_proposal(conn, c, scope_key) for c in candidates]

        def decide_all() -> list[str | None]:
            """The chunk's CPU work, off the event loop: the decisions, then the quarantine checks."""
            with progress.phase("decide"):
                for (same, n), neighbours in zip(todo.items(), found, strict=True):
                    candidate = candidates[n]
                    decided[same] = classify(
                        content=candidate.content,
                        content_hash=digests[n],
                        canonical_key=candidate.canonical_key,
                        neighbours=neighbours,
                        dup_threshold=self._dup_threshold,
                        related_threshold=self._related_threshold,
                        judge=self._judge,
                        scope_key=scope_key,
                        memory_type=candidate.memory_type,
                    )
            with progress.phase("screen"):
                resemblances = nearest_exemplars(vectors, exemplars)
                return [
                    _screened(c.title, c.content, resemblance=r)
                    for c, r in zip(candidates, resemblances, strict=True)
                ]

        reasons = await asyncio.to_thread(decide_all)
        return [
            PlanItemToWrite(
                idx=start + offset,
                candidate_idx=candidate.idx,
                decision=decided[sames[offset]].kind.value,
                target_id=decided[sames[offset]].target_id,
                similarity=decided[sames[offset]].similarity,
                reason=decided[sames[offset]].reason,
                content_hash=digests[offset],
                embedding=vectors[offset],
                quarantine=reasons[offset] or proposals[offset],
            )
            for offset, candidate in enumerate(candidates)
        ]

    async def _exemplar_vectors(self, progress: PlanProgress) -> Any:
        """The known injections' vectors (rows, unit), or None with an uncalibrated embedder."""
        with progress.phase("exemplars"):  # shipped and verified, or embedded once per process
            return await exemplar_vectors(self._embedder)

    async def _embed_in_turns(self, texts: list[str], tenant: str) -> list[Any]:
        """Embed `texts` a few at a time, each slice its own turn at the worker's embedder.

        The embedder takes callers in turns, least recently served first (`FairEmbedder`), and each promotion
        is its own caller: a small promotion's candidates wait for one slice of a big plan's, not for its
        whole chunk (measured by `tests/bench/fairness.py`); slices grow while no other caller is about.
        """
        EMBEDDING_TENANT.set(tenant)
        return await embed_in_turns(self._embedder, texts, first=EMBED_SLICE)

    async def _vectors(self, texts: list[str], progress: PlanProgress, tenant: str) -> list[list[float]]:
        """One vector per text: from the embedding cache, embedding (once) only the texts it lacks."""
        model = self._embedder.model_id
        digests = [text_digest(t) for t in texts]
        with progress.phase("cache"):
            async with self._engine.connect() as conn:
                found = await cached_vectors(conn, model, digests)
        progress.cached += len(found)
        missing = {d: t for d, t in zip(digests, texts, strict=True) if d not in found}
        if missing:
            cpu = time.process_time()
            try:
                with progress.phase("embed"):
                    embedded = await self._embed_in_turns(list(missing.values()), tenant)
            except EmbeddingDimensionMismatch as exc:
                raise EmbeddingRefused(str(exc)) from exc
            finally:
                progress.embed_cpu += time.process_time() - cpu
            fresh = {d: [float(x) for x in row] for d, row in zip(missing, embedded, strict=True)}
            with progress.phase("cache"):
                async with self._engine.begin() as conn:
                    await cache_vectors(conn, model, fresh)
            found.update(fresh)
            progress.embedded += len(fresh)
        return [found[d] for d in digests]


async def _rule_proposal(conn: AsyncConnection, candidate: StoredCandidate, scope_key: str) -> str | None:
    """A rule a non-human proposed, planned above task scope, waits for a human like a quarantined item."""
    if candidate.memory_type != "code_rule":
        return None
    return rule_proposal_reason(
        candidate.memory_type,
        scope_key.split(":", 1)[0],
        written_by_non_human=await written_by_non_humans(conn, candidate.source_entry_ids),
    )


async def _finished(
    conn: AsyncConnection, key: PlanKey, total: int, scope_key: str, preview_items: int
) -> PlannedRun:
    """Mark the plan complete with `total` items and read back its decisions, its first `preview_items`
    items (with their targets' trust and approvers and a new item's nearest memories) and its quarantine."""
    await finish_plan(conn, key, total)
    decisions = await plan_counts(conn, key)
    first = await plan_page(conn, key, offset=0, limit=preview_items)
    targets = await published_targets(conn, [r.target_id for r in first if r.target_id is not None])
    nearest = await nearest_memories(conn, key, [r.idx for r in first if r.decision == "new"], scope_key)
    quarantined, held = await quarantined_items(conn, key, limit=preview_items)
    return PlannedRun(
        total=total,
        decisions=decisions,
        preview=[_preview_item(row, targets, nearest) for row in first],
        quarantined=quarantined,
        quarantined_items=[QuarantinedItem(h.idx, "", h.reason) for h in held],
    )


def _preview_item(
    row: PlanItemForReview, targets: dict[str, PublishedTarget], nearest: dict[int, list[NearMemory]]
) -> PlanItem:
    """A plan item as Temporal's history may hold it: kinds, ids, numbers, trust and approver.

    No text at all: no title (its own or its target's), no reason, no canonical key (each may quote the
    staging); the nearest memories by citation and similarity. The texts stay in Postgres (the API, the
    CLI and the console serve them), so erasing them there leaves no copy in a history.
    """
    target = targets.get(row.target_id or "") if row.decision in ("supersede", "duplicate") else None
    return PlanItem(
        target_title=None,
        target_trust=target.confidence if target is not None else None,
        target_approved_by=target.approved_by if target is not None else None,
        # the nearest by citation and similarity, not title: nothing records which histories named them,
        # so an erasure receipt could not name those histories (a target's is found by target_id)
        nearest=[
            NearbyMemory(n.id, n.citation, "", round(n.similarity, 3)) for n in nearest.get(row.idx, [])
        ],
        index=row.idx,
        memory_type=row.memory_type,
        title="",
        content="",
        canonical_key=None,
        decision=row.decision,
        target_id=row.target_id,
        similarity=row.similarity,
        reason="",
    )
