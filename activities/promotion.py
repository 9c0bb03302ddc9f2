"""Activities of the promotion gate: idempotent I/O around governance/ (collect, cognify, plan, publish).

Each method takes one dataclass carrying what makes a retry safe (task id, workflow id, a request id) and
gets its clients from `PromotionActivities.__init__`, never from globals. Temporal owns retries; permanent
failures (unknown task, invalid input) are non-retryable `ApplicationError`s.

Claim check: a task's candidates, its plan and their embeddings stay in Postgres
(governance/storage/plans.py), keyed by the workflow id and the run whose cognify wrote them. Inputs and
results carry that key, counts, states and ids (`PREVIEW_ITEMS` first items: type, decision, target id,
similarity, trust), never a title, a critique, a description, a note or content: a Temporal history is out
of erasure's reach once written (docs/privacy.md), so nothing erasable is written there. The critique is a
column of the run's plan; a decision's note is read from the gateway's grant row.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from temporalio import activity
from temporalio.exceptions import ApplicationError

from governance.adapters.embedders import (
    EMBEDDING_TENANT,
    Embedder,
    EmbeddingDimensionMismatch,
    embed_in_turns,
)
from governance.adapters.exemplar_vectors import exemplar_vectors
from governance.adapters.llm_cognifier import LLMCognifier, cognify
from governance.adapters.llm_judge import make_judge
from governance.code_locations import MAX_LOCATIONS
from governance.cognify import (
    Candidate,
    StagedEntry,
    episode_candidate,
    rule_proposal_reason,
    skill_candidate,
)
from governance.config import Settings
from governance.dedup import Decision, classify, content_hash
from governance.episodes import EntryView, episode_structure
from governance.errors import InvalidInput, NotFound
from governance.instruction_exemplars import nearest_exemplars
from governance.instructions import QuarantinedItem, quarantine_reason
from governance.operations import working_memory
from governance.operations.promotion_publish import PlanMissing, PlanPublication, publish_plan, with_critique
from governance.publication import NearbyMemory, PlanItem, PublishedMemory
from governance.redaction import redact, redact_json
from governance.scopes import Scope, keys_at_or_above, scope_key
from governance.storage.events import EventType, record_event
from governance.storage.plan_review import NearMemory, PublishedTarget, nearest_memories, published_targets
from governance.storage.plans import (
    PlanItemForReview,
    PlanItemPublished,
    PlanItemToWrite,
    PlanKey,
    StoredCandidate,
    cache_vectors,
    cached_vectors,
    candidate_indexes,
    finish_plan,
    get_plan,
    load_candidates,
    plan_counts,
    plan_page,
    planned_count,
    quarantined_items,
    save_candidates,
    save_plan_items,
    text_digest,
)
from governance.storage.promotions import end_promotion, grant_note, promotion_by_workflow, record_snapshot
from governance.storage.publish import NeighbourProbe, find_neighbours_many
from governance.storage.staging import (
    ENDED_STATUSES,
    get_task,
    set_task_status,
    snapshot_entries,
    snapshot_size,
    written_by_non_humans,
)
from governance.supersession import ContradictionJudge
from governance.validity import candidate_expiry, entry_expiry
from policy.enforcer import Authorizer

__all__ = [
    "PromotionActivities",
    "CollectInput",
    "CollectResult",
    "CognifyInput",
    "CognifyResult",
    "PlanInput",
    "PlanItem",
    "PlanResult",
    "PublishInput",
    "PublishResult",
    "DecisionRecordInput",
    "OutcomeInput",
    "PLAN_CHUNK",
    "PUBLISH_CHUNK",
    "PREVIEW_ITEMS",
    "PREVIEW_CHARS",
    "preview",
]

_HEARTBEAT_EVERY_SECONDS = 2.0  # well inside the workflow's heartbeat timeout
# plan embeds and classifies this many candidates at a time, committing each chunk (a retry resumes after it)
PLAN_CHUNK = 256
# rule-based cognify runs as a local activity up to this many staged entries (milliseconds), regular above
LOCAL_COGNIFY_ENTRIES = 200
# texts embedded per turn at the worker's embedder: other promotions' turns come between a big plan's slices
EMBED_SLICE = 8
# what travels through Temporal of a plan or a publication: the first items, each text shortened (the full
# plan is in the database, governance/storage/plans.py, and the API serves it page by page)
PREVIEW_ITEMS = 20
PREVIEW_CHARS = 200
_CRITIQUE_CHARS = 2000
# plan items publish decides and writes at a time, in one transaction (a retry resumes after the last one)
PUBLISH_CHUNK = 250
_PUBLISH_JUDGE_TIMEOUT = (
    5.0  # seconds one LLM contradiction call may take inside publish (a 30 s local activity)
)

_S = TypeVar("_S")
_A = TypeVar("_A")
_R = TypeVar("_R")


def _heartbeating(fn: Callable[[_S, _A], Awaitable[_R]]) -> Callable[[_S, _A], Coroutine[Any, Any, _R]]:
    """Heartbeat in the background while a long activity runs, so that a worker which dies holding it is
    noticed after the heartbeat timeout (the activity then retries on another worker) rather than after
    the whole start-to-close timeout."""

    @functools.wraps(fn)
    async def run(self: _S, data: _A) -> _R:
        async def beat() -> None:
            while True:
                activity.heartbeat()
                await asyncio.sleep(_HEARTBEAT_EVERY_SECONDS)

        if activity.info().is_local:  # a local activity has no heartbeat: the workflow task carries it
            return await fn(self, data)
        beating = asyncio.create_task(beat())
        try:
            return await fn(self, data)
        finally:
            beating.cancel()

    return run


@dataclass
class CollectInput:
    """Which task to collect; `workflow_id` ties what is recorded to this promotion."""

    task_id: str
    workflow_id: str
    target_scope: str


@dataclass
class CollectResult:
    """The task, the staging snapshot (entries up to `last_seq`), what redaction removed, the gate rule."""

    task_id: str
    org: str
    project: str
    worktree: str
    description: str
    entry_count: int
    last_seq: int
    redaction_counts: dict[str, int]
    requires_approval: bool
    scope_key: str
    visible_scope_keys: list[str]
    # cognify runs by rules only (no LLM configured): a few milliseconds, so a local activity, which
    # saves a round trip through the Temporal server (~40 ms of a small promotion's latency)
    cognify_local: bool = False
    # where the approver reads the plan in loregate's console (the workflow's details link there)
    console_url: str = ""


@dataclass
class CognifyInput:
    """Analyse the snapshot `seq <= last_seq` of the task, given the verification outcome.

    `description` is empty (cognify reads the task's description from the database); histories written
    before carry it, and cognify then still reads the database's.
    """

    task_id: str
    workflow_id: str
    description: str
    last_seq: int
    success: bool


@dataclass
class CognifyResult:
    """The analysis, and where its candidates (Reflexion episode and skill included) are: the database.

    The candidates are rows of `promotion_candidates` under (workflow id, `run_id`); this result carries
    counts only, so it fits Temporal's history however large the task: `critique`, `key_decisions` and
    `summary` stay empty (the critique is the plan header's column), kept so older histories deserialize.
    """

    success: bool
    reward: float
    critique: str
    key_decisions: list[str]  # the first PREVIEW_ITEMS titles
    repeatable: bool
    summary: str  # a preview
    engine: str
    fallback_reason: str | None = None
    redaction_counts: dict[str, int] = field(default_factory=dict)
    run_id: str = ""  # the run whose cognify wrote the candidates: with the workflow id, the plan's key
    candidate_count: int = 0
    candidate_types: dict[str, int] = field(default_factory=dict)
    key_decision_count: int = 0


@dataclass
class PlanInput:
    """Classify the run's stored candidates (only `memory_types`, when given) against visible memory."""

    task_id: str
    workflow_id: str
    run_id: str
    scope_key: str
    visible_scope_keys: list[str]
    memory_types: list[str] | None = None


@dataclass
class PlanResult:
    """The plan's size and decisions, and its first items; the plan itself is in the database."""

    run_id: str
    total: int
    decisions: dict[str, int]
    preview: list[PlanItem]
    embedded: int = 0  # texts this attempt embedded (embedding cache misses)
    cached: int = 0  # texts this attempt found in the embedding cache
    resumed_from: int = 0  # plan items an earlier attempt had written, not redone
    # items carrying instructions aimed at agents (governance/instructions.py): how many, and the first few
    # by index, short title and reasons (labels, never the text); the plan then waits for a human
    quarantined: int = 0
    quarantined_items: list[QuarantinedItem] = field(default_factory=list)


# Publish the stored plan of (workflow id, `run_id`), `total` items, into `scope`, chunk by chunk: the
# operation's input, as the workflow hands it over (ids, counts and the approval; never a text)
PublishInput = PlanPublication


@dataclass
class PublishResult:
    """How many plan items were published, by action, and the first of them (all are in the database)."""

    total: int
    actions: dict[str, int]
    memories: list[PublishedMemory]


@dataclass
class DecisionRecordInput:
    """A REJECTED event for a promotion that publishes nothing (human rejection or approval timeout)."""

    workflow_id: str
    task_id: str
    actor_id: str | None
    actor_type: str | None
    reason: str
    payload: dict[str, Any] = field(default_factory=dict)
    # the gateway's grant of the rejection (its row holds the note) and the run whose plan has the critique
    grant: str | None = None
    run_id: str = ""


@dataclass
class OutcomeInput:
    """How a promotion that wrote no decision ended (`unverified` by timeout, `failed`), for the task row."""

    workflow_id: str
    task_id: str
    status: str


def preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    """`text` shortened to `limit` characters (an ellipsis says it was), for what travels through Temporal."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


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


def _published(row: PlanItemPublished) -> PublishedMemory:
    return PublishedMemory(
        memory_id=row.memory_id,
        citation=row.citation,
        action=row.action,
        memory_type=row.memory_type,
        title="",  # the API lists the publication with its titles; the history only ids
        superseded_id=row.superseded_id,
        replayed=row.replayed,
    )


def _resume_hint() -> int | None:
    """The progress the last attempt heartbeated (plan items done), if any."""
    details = activity.info().heartbeat_details
    if details and isinstance(details[0], int) and not isinstance(details[0], bool):
        return details[0]
    return None


@dataclass
class _Progress:
    """What a running plan has done: its heartbeat's detail, its embedding counts, its time per phase."""

    done: int = 0
    embedded: int = 0
    cached: int = 0
    phases: dict[str, float] = field(default_factory=dict)

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
        return ", ".join(f"{name} {seconds:.2f} s" for name, seconds in ordered)


def _keys_from(scope: Scope, keys: dict[str, str]) -> list[str]:
    # a target scope is classified against itself and wider scopes, never against narrower ones
    return keys_at_or_above(scope, **keys)


async def _rule_proposal(conn: AsyncConnection, candidate: StoredCandidate, scope_key: str) -> str | None:
    """A rule a non-human proposed, planned above task scope, waits for a human like a quarantined item."""
    if candidate.memory_type != "code_rule":
        return None
    return rule_proposal_reason(
        candidate.memory_type,
        scope_key.split(":", 1)[0],
        written_by_non_human=await written_by_non_humans(conn, candidate.source_entry_ids),
    )


# the instruction screen: its rules read each text once per worker process (governance/instructions.py
# caches them by text); the resemblance, measured per chunk, is not part of that key
_screened = quarantine_reason


def _structure(
    description: str, analysis: Any, entries: list[StagedEntry], tracked: tuple[list[str], list[str]]
) -> dict[str, Any]:
    """The episode's structured fields (governance/episodes.py) from the redacted entries and the files and
    symbols the task's working memory tracked (redacted too: an agent names them freely)."""
    views = [
        EntryView(
            seq=e.seq,
            kind=e.kind,
            content=e.content,
            payload=e.payload,
            created_at_ms=e.created_at.timestamp() * 1000 if e.created_at is not None else None,
        )
        for e in entries
    ]
    files, symbols = ([redact(v).text for v in values] for values in tracked)
    return episode_structure(
        description, views, success=analysis.success, tracked_files=files, tracked_symbols=symbols
    ).to_json()


def _distilled(
    task_id: str,
    description: str,
    analysis: Any,
    entries: list[StagedEntry],
    tracked: tuple[list[str], list[str]] = ([], []),
) -> list[Candidate]:
    """The analysis's candidates redacted again, with their expiry, the skill and the episode with its
    structured fields (CPU work)."""
    entry_ids = [e.id for e in entries]
    # an entry's expires_at / ttl_seconds travels to what is distilled from it (not to the episode or a
    # generated skill, which quote the whole task)
    expiries = {e.id: t for e in entries if (t := entry_expiry(e.payload, e.created_at)) is not None}
    # the model could echo a secret it was never shown in full; candidates are redacted again
    candidates = [
        Candidate(
            **{
                **c.__dict__,
                "title": redact(c.title).text,
                "content": redact(c.content).text,
                "expires_at": candidate_expiry(c.source_entry_ids, expiries),
            }
        )
        for c in analysis.candidates
        if redact(c.content).text.strip()
    ]
    skill = skill_candidate(description, analysis, entry_ids)
    if skill is not None:
        candidates.append(skill)
    structure = _structure(description, analysis, entries, tracked)
    episode = episode_candidate(task_id, description, analysis, entry_ids, structure)
    candidates.append(Candidate(**{**episode.__dict__, "content": redact(episode.content).text}))
    return candidates


class PromotionActivities:
    """The promotion gate's I/O; one instance per worker, sharing its clients."""

    def __init__(
        self,
        *,
        engine: AsyncEngine,
        embedder: Embedder,
        authorizer: Authorizer,
        settings: Settings,
        llm: LLMCognifier | None = None,
        judge: ContradictionJudge | None = None,
        plan_chunk: int = PLAN_CHUNK,
        publish_chunk: int = PUBLISH_CHUNK,
    ) -> None:
        self._engine = engine
        self._embedder = embedder
        self._plan_chunk = max(1, plan_chunk)
        self._publish_chunk = max(1, publish_chunk)
        self._authorizer = authorizer
        self._settings = settings
        self._llm = llm
        # the configured LLM judges contradictions too (rule-based without one); plan and publish share it
        self._judge = judge if judge is not None else make_judge(settings)
        # publish re-judges under its row locks, inside a 30 s local activity: there a slow endpoint must
        # give way to the rules quickly instead of timing the whole transaction out
        self._publish_judge = (
            judge if judge is not None else make_judge(settings, timeout=_PUBLISH_JUDGE_TIMEOUT)
        )

    async def _entries(
        self, conn: AsyncConnection, task_id: str, last_seq: int, after_seq: int = 0
    ) -> tuple[list[StagedEntry], dict[str, int]]:
        rows = await snapshot_entries(conn, task_id, up_to_seq=last_seq, after_seq=after_seq)
        # redaction is CPU work (a big task's snapshot takes seconds): off the event loop
        return await asyncio.to_thread(self._redacted, rows)

    @staticmethod
    def _redacted(rows: Sequence[Any]) -> tuple[list[StagedEntry], dict[str, int]]:
        entries: list[StagedEntry] = []
        counts: dict[str, int] = {}
        for row in rows:
            cleaned = redact(row.content)
            for kind, n in cleaned.counts.items():
                counts[kind] = counts.get(kind, 0) + n
            payload = row.payload if isinstance(row.payload, dict) else None
            if payload is not None:
                # key-aware: {"password": "hunter2"} has no secret shape, only a secret name
                payload, payload_counts = redact_json(payload)
                for kind, n in payload_counts.items():
                    counts[kind] = counts.get(kind, 0) + n
            entries.append(
                StagedEntry(
                    id=row.id,
                    seq=row.seq,
                    kind=row.kind,
                    content=cleaned.text,
                    payload=payload,
                    created_at=row.created_at,
                    actor_type=row.actor_type,  # an agent's insight is a fact; its rule needs a human
                )
            )
        return entries, counts

    @activity.defn
    async def collect_staging(self, data: CollectInput) -> CollectResult:
        """Fix the task's staging snapshot (up to its current last seq) and mark the task as being promoted.

        It reads no content: cognify reads the snapshot, redacts it and reports what redaction removed.
        """
        async with self._engine.begin() as conn:
            task = await get_task(conn, data.task_id)
            if task is None:
                raise ApplicationError(
                    f"task {data.task_id} does not exist", type=NotFound.__name__, non_retryable=True
                )
            # a follow-up promotion takes the entries after the last snapshot that published
            # (governance/promotions.py); one with no record (a workflow from before numbering) takes all
            promotion = await promotion_by_workflow(conn, data.workflow_id)
            after_seq = promotion.after_seq if promotion is not None else 0
            entry_count, snapshot_end = await snapshot_size(conn, data.task_id, after_seq)
            await record_snapshot(conn, data.workflow_id, snapshot_end)
            # a promotion under way: the staging archive leaves this task alone until it ends
            await set_task_status(conn, data.task_id, "promoting")
        scope = Scope(data.target_scope)
        keys = {"org": task.org, "project": task.project, "worktree": task.worktree, "task_id": task.id}
        return CollectResult(
            task_id=task.id,
            org=task.org,
            project=task.project,
            worktree=task.worktree,
            description="",  # cognify reads it from the database: the history holds no text
            entry_count=entry_count,
            last_seq=snapshot_end,
            redaction_counts={},  # cognify's, which reads the content
            requires_approval=self._authorizer.requires_validation(scope),
            console_url=self._settings.console_base(),
            # a big task's cognify takes seconds: a regular activity then, so that no workflow task is held
            # open meanwhile
            cognify_local=self._llm is None and entry_count <= LOCAL_COGNIFY_ENTRIES,
            scope_key=scope_key(scope, **keys),
            visible_scope_keys=_keys_from(scope, keys),
        )

    @activity.defn
    @_heartbeating
    async def cognify(self, data: CognifyInput) -> CognifyResult:
        """Analyse the redacted snapshot (LLM if configured, rule-based otherwise or on any LLM failure)."""
        async with self._engine.connect() as conn:
            promotion = await promotion_by_workflow(conn, data.workflow_id)
            after_seq = promotion.after_seq if promotion is not None else 0
            entries, counts = await self._entries(conn, data.task_id, data.last_seq, after_seq)
            task = await get_task(conn, data.task_id)
        # the episode and a generated skill quote the description (title included): it is redacted too
        description = redact(task.description if task is not None else data.description).text
        outcome = await cognify(description, entries, success=data.success, llm=self._llm)
        analysis = outcome.analysis
        # working memory feeds the episode: the files and symbols the agent tracked
        tracked = await working_memory.tracked(self._engine, data.task_id, MAX_LOCATIONS)
        candidates = await asyncio.to_thread(
            _distilled, data.task_id, description, analysis, entries, tracked
        )
        # the candidates stay in the database; the history gets where they are and how many
        run_id = activity.info().workflow_run_id or "-"
        critique = preview(redact(analysis.critique).text, _CRITIQUE_CHARS)
        async with self._engine.begin() as conn:
            await save_candidates(
                conn, PlanKey(data.workflow_id, run_id), data.task_id, candidates, critique=critique
            )
        return CognifyResult(
            success=analysis.success,
            reward=analysis.reward,
            critique="",
            key_decisions=[],
            repeatable=analysis.repeatable,
            summary="",
            engine=analysis.engine,
            fallback_reason=outcome.fallback_reason,
            redaction_counts=counts,
            run_id=run_id,
            candidate_count=len(candidates),
            candidate_types=dict(Counter(c.memory_type for c in candidates)),
            key_decision_count=len(analysis.key_decisions),
        )

    @activity.defn
    async def plan(self, data: PlanInput) -> PlanResult:
        """Embed and classify the stored candidates a chunk at a time, against memory visible from the target.

        Each chunk's plan items are committed before the next chunk starts and the progress heartbeated
        (`activity.heartbeat(done)`), so an attempt after a worker crash or a timeout resumes after the
        chunks already written (the rows decide; the heartbeat detail is what the Temporal UI shows). A text
        is embedded once per model: vectors come from the embedding cache first, only misses are embedded.
        """
        key = PlanKey(data.workflow_id, data.run_id)
        async with self._engine.connect() as conn:
            indexes = await candidate_indexes(conn, key, data.memory_types)
            written = await planned_count(conn, key)
        progress = _Progress(done=min(written, len(indexes)))
        resumed_from = progress.done
        hint = _resume_hint()
        if hint is not None or resumed_from:
            activity.logger.info(
                "plan of %s resumes at item %d of %d (last heartbeat: %s)",
                data.workflow_id,
                resumed_from,
                len(indexes),
                hint,
            )

        async def beat() -> None:
            while True:
                activity.heartbeat(progress.done)
                await asyncio.sleep(_HEARTBEAT_EVERY_SECONDS)

        beating = asyncio.create_task(beat())
        # identical candidates (same text, key and type) meet the same neighbours: decided once per attempt
        decided: dict[tuple[str, str | None, str], Decision] = {}
        try:
            for start in range(progress.done, len(indexes), self._plan_chunk):
                chunk = indexes[start : start + self._plan_chunk]
                items = await self._plan_chunk_items(data, key, start, chunk, progress, decided)
                with progress.phase("save"):
                    async with self._engine.begin() as conn:
                        await save_plan_items(conn, key, items)
                progress.done = start + len(chunk)
                activity.heartbeat(progress.done)
            with progress.phase("finish"):
                async with self._engine.begin() as conn:
                    await finish_plan(conn, key, len(indexes))
                    decisions = await plan_counts(conn, key)
                    first = await plan_page(conn, key, offset=0, limit=PREVIEW_ITEMS)
                    targets = await published_targets(
                        conn, [r.target_id for r in first if r.target_id is not None]
                    )
                    nearest = await nearest_memories(
                        conn, key, [r.idx for r in first if r.decision == "new"], data.scope_key
                    )
                    quarantined, held = await quarantined_items(conn, key, limit=PREVIEW_ITEMS)
        finally:
            beating.cancel()
        activity.logger.info(
            "plan of %s: %d items from %d (%d embedded, %d cached): %s",
            data.workflow_id,
            len(indexes),
            resumed_from,
            progress.embedded,
            progress.cached,
            progress.timings(),
        )
        return PlanResult(
            run_id=data.run_id,
            total=len(indexes),
            decisions=decisions,
            preview=[_preview_item(row, targets, nearest) for row in first],
            embedded=progress.embedded,
            cached=progress.cached,
            resumed_from=resumed_from,
            quarantined=quarantined,
            # by index and reason labels (never the title)
            quarantined_items=[QuarantinedItem(h.idx, "", h.reason) for h in held],
        )

    async def _plan_chunk_items(
        self,
        data: PlanInput,
        key: PlanKey,
        start: int,
        chunk: Sequence[int],
        progress: _Progress,
        decided: dict[tuple[str, str | None, str], Decision],
    ) -> list[PlanItemToWrite]:
        with progress.phase("load"):
            async with self._engine.connect() as conn:
                candidates = await load_candidates(conn, key, chunk)
        return await self._plan_candidates(data, start, candidates, progress, decided)

    async def _plan_candidates(
        self,
        data: PlanInput,
        start: int,
        candidates: Sequence[StoredCandidate],
        progress: _Progress,
        decided: dict[tuple[str, str | None, str], Decision],
    ) -> list[PlanItemToWrite]:
        """Plan items `start`.. for `candidates`: embedded, decided against visible memory, screened."""
        vectors = await self._vectors([c.content for c in candidates], progress)
        exemplars = await self._exemplar_vectors(progress)
        digests = [content_hash(c.content) for c in candidates]
        sames = [(text_digest(c.content), c.canonical_key, c.memory_type) for c in candidates]
        # identical candidates meet the same neighbours: each distinct one is looked up and decided once
        todo: dict[tuple[str, str | None, str], int] = {}
        for n, same in enumerate(sames):
            if same not in decided and same not in todo:
                todo[same] = n
        with progress.phase("neighbours"):
            async with self._engine.connect() as conn:
                found = await find_neighbours_many(
                    conn,
                    scope_keys=data.visible_scope_keys,
                    target_scope_key=data.scope_key,
                    probes=[
                        NeighbourProbe(digests[n], candidates[n].canonical_key, vectors[n])
                        for n in todo.values()
                    ],
                )
                proposals = [await _rule_proposal(conn, c, data.scope_key) for c in candidates]

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
                        dup_threshold=self._settings.dedup_similarity_threshold,
                        related_threshold=self._settings.related_similarity_threshold,
                        judge=self._judge,
                        scope_key=data.scope_key,
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

    async def _exemplar_vectors(self, progress: _Progress) -> Any:
        """The known injections' vectors (rows, unit), or None with an uncalibrated embedder."""
        with progress.phase("exemplars"):  # shipped and verified, or embedded once per process
            return await exemplar_vectors(self._embedder)

    async def _embed_in_turns(self, texts: list[str]) -> list[Any]:
        """Embed `texts` a few at a time, each slice its own turn at the worker's embedder.

        The embedder takes callers in turns, least recently served first (`FairEmbedder`), and each promotion
        is its own caller: a small promotion's candidates wait for one slice of a big plan's, not for its
        whole chunk (measured by `tests/bench/fairness.py`); slices grow while no other caller is about.
        """
        EMBEDDING_TENANT.set(f"promotion:{activity.info().workflow_id}")
        return await embed_in_turns(self._embedder, texts, first=EMBED_SLICE)

    async def _vectors(self, texts: list[str], progress: _Progress) -> list[list[float]]:
        """One vector per text: from the embedding cache, embedding (once) only the texts it lacks."""
        model = self._embedder.model_id
        digests = [text_digest(t) for t in texts]
        with progress.phase("cache"):
            async with self._engine.connect() as conn:
                found = await cached_vectors(conn, model, digests)
        progress.cached += len(found)
        missing = {d: t for d, t in zip(digests, texts, strict=True) if d not in found}
        if missing:
            try:
                with progress.phase("embed"):
                    embedded = await self._embed_in_turns(list(missing.values()))
            except EmbeddingDimensionMismatch as exc:
                # retrying cannot fix a misconfigured endpoint; fail the promotion now, saying why
                raise ApplicationError(
                    str(exc), type=EmbeddingDimensionMismatch.__name__, non_retryable=True
                ) from exc
            fresh = {d: [float(x) for x in row] for d, row in zip(missing, embedded, strict=True)}
            with progress.phase("cache"):
                async with self._engine.begin() as conn:
                    await cache_vectors(conn, model, fresh)
            found.update(fresh)
            progress.embedded += len(fresh)
        return [found[d] for d in digests]

    @activity.defn
    @_heartbeating
    async def publish(self, data: PublishInput) -> PublishResult:
        """Publish the stored plan a chunk at a time (governance/operations/promotion_publish.py): each chunk
        one transaction under the scopes' locks, the summary, derivations and the task's end in a last one.

        A retry publishes nothing twice: the committed chunks replay by their items' idempotency keys. The
        plan items come from the database (the history only names them); the result carries counts and the
        first few. A regular (non-local) attempt heartbeats the items done after each chunk, so no timeout
        guesses the plan's size.
        """
        timing = _Progress()

        async def replan(
            target_key: str, visible: list[str], idx: int, candidate: StoredCandidate
        ) -> PlanItemToWrite:
            # an edited item is planned as plan plans it: embedded, decided against visible memory, screened
            again = PlanInput(data.task_id, data.workflow_id, data.run_id, target_key, visible)
            return (await self._plan_candidates(again, idx, [candidate], _Progress(), {}))[0]

        try:
            results = await publish_plan(
                self._engine,
                data,
                replan=replan,
                chunk_size=self._publish_chunk,
                dup_threshold=self._settings.dedup_similarity_threshold,
                related_threshold=self._settings.related_similarity_threshold,
                judge=self._publish_judge,
                on_chunk=None if activity.info().is_local else activity.heartbeat,
                timings=timing.phases,
            )
        except PlanMissing as exc:
            raise ApplicationError(str(exc), type=NotFound.__name__, non_retryable=True) from exc
        activity.logger.info("publish of %s: %d items: %s", data.workflow_id, data.total, timing.timings())
        return PublishResult(
            total=len(results),
            actions=dict(Counter(r.action for r in results)),
            memories=[_published(r) for r in results[:PREVIEW_ITEMS]],
        )

    @activity.defn
    async def record_decision(self, data: DecisionRecordInput) -> None:
        """Record a rejection (human or timeout) that publishes nothing."""
        async with self._engine.begin() as conn:
            note = await grant_note(conn, workflow_id=data.workflow_id, grant=data.grant)
            header = await get_plan(conn, PlanKey(data.workflow_id, data.run_id)) if data.run_id else None
            await record_event(
                conn,
                event_type=EventType.REJECTED,
                actor_id=data.actor_id,
                actor_type=data.actor_type,
                task_id=data.task_id,
                workflow_id=data.workflow_id,
                reason=note or data.reason,
                payload=with_critique(data.payload, header),
                idempotency_key=f"{data.workflow_id}:rejected",
                if_absent=True,
            )
            await set_task_status(conn, data.task_id, "rejected")
            await end_promotion(conn, data.workflow_id, "rejected")

    @activity.defn
    async def record_outcome(self, data: OutcomeInput) -> None:
        """Record on the task that its promotion ended without publishing or deciding (timeout, failure)."""
        if data.status not in ENDED_STATUSES:
            raise ApplicationError(
                f"{data.status!r} is not how a promotion ends", type=InvalidInput.__name__, non_retryable=True
            )
        async with self._engine.begin() as conn:
            await set_task_status(conn, data.task_id, data.status)
            await end_promotion(conn, data.workflow_id, data.status)
