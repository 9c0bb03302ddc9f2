"""Activities of the promotion gate: idempotent I/O around governance/ (collect, cognify, plan, publish).

Each method takes one dataclass carrying what makes a retry safe (task id, workflow id, a request id) and
gets its clients from `PromotionActivities.__init__`, never from globals; it heartbeats, calls the step's
operation (`governance/operations/promotion_collect.py`, `promotion_cognify.py`, `promotion_plan.py`,
`promotion_publish.py`, `promotion_end.py`) and maps its result and failures. Temporal owns retries;
permanent failures (unknown task, invalid input, a misconfigured embedder) are non-retryable
`ApplicationError`s.

Claim check: a task's candidates, its plan and their embeddings stay in Postgres
(governance/storage/plans.py), keyed by the workflow id and the run whose cognify wrote them. Inputs and
results carry that key, counts, states and ids (`PREVIEW_ITEMS` first items: type, decision, target id,
similarity, trust), never a title, a critique, a description, a note or content: a Temporal history is out
of erasure's reach once written (docs/privacy.md), so nothing erasable is written there. The critique is a
column of the run's plan; a decision's note is read from the gateway's grant row.
"""

from __future__ import annotations

import asyncio
import functools
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio import activity
from temporalio.exceptions import ApplicationError

from governance.adapters.embedders import Embedder, EmbeddingDimensionMismatch
from governance.adapters.llm_cognifier import LLMCognifier
from governance.adapters.llm_judge import make_judge
from governance.config import Settings
from governance.errors import GovernanceError, InvalidInput, NotFound
from governance.instructions import QuarantinedItem
from governance.operations import promotion_end
from governance.operations.promotion_cognify import PREVIEW_CHARS, distil, preview
from governance.operations.promotion_collect import collect_snapshot
from governance.operations.promotion_plan import EmbeddingRefused, Planner, PlanProgress
from governance.operations.promotion_publish import PlanMissing, PlanPublication, publish_plan
from governance.publication import PlanItem, PublishedMemory
from governance.storage.plans import PlanItemPublished, PlanKey
from governance.supersession import ContradictionJudge
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
# what travels through Temporal of a plan or a publication: the first items (the full plan is in the
# database, governance/storage/plans.py, and the API serves it page by page)
PREVIEW_ITEMS = 20
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


def _tenant() -> str:
    """Who takes the turns at the worker's embedder: each promotion is its own caller (`FairEmbedder`)."""
    return f"promotion:{activity.info().workflow_id}"


def _permanent(exc: GovernanceError) -> ApplicationError:
    """A failure no retry can mend, typed by its governance error."""
    return ApplicationError(str(exc), type=type(exc).__name__, non_retryable=True)


def _embedder_refused(exc: EmbeddingRefused) -> ApplicationError:
    """Retrying cannot fix a misconfigured endpoint: the promotion fails now, saying why."""
    return ApplicationError(str(exc), type=EmbeddingDimensionMismatch.__name__, non_retryable=True)


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
        # plans and re-plans candidates; keeps the known injections' vectors once per worker
        self._planner = Planner(
            engine=engine,
            embedder=embedder,
            judge=self._judge,
            dup_threshold=settings.dedup_similarity_threshold,
            related_threshold=settings.related_similarity_threshold,
            chunk_size=plan_chunk,
        )

    @activity.defn
    async def collect_staging(self, data: CollectInput) -> CollectResult:
        """Fix the task's staging snapshot (up to its current last seq) and mark the task as being promoted.

        It reads no content: cognify reads the snapshot, redacts it and reports what redaction removed.
        """
        try:
            snapshot = await collect_snapshot(self._engine, data.task_id, data.workflow_id, data.target_scope)
        except NotFound as exc:
            raise _permanent(exc) from None
        task = snapshot.task
        return CollectResult(
            task_id=task.id,
            org=task.org,
            project=task.project,
            worktree=task.worktree,
            description="",  # cognify reads it from the database: the history holds no text
            entry_count=snapshot.entry_count,
            last_seq=snapshot.last_seq,
            redaction_counts={},  # cognify's, which reads the content
            requires_approval=self._authorizer.requires_validation(snapshot.scope),
            console_url=self._settings.console_base(),
            # a big task's cognify takes seconds: a regular activity then, so that no workflow task is held
            # open meanwhile
            cognify_local=self._llm is None and snapshot.entry_count <= LOCAL_COGNIFY_ENTRIES,
            scope_key=snapshot.scope_key,
            visible_scope_keys=snapshot.visible_scope_keys,
        )

    @activity.defn
    @_heartbeating
    async def cognify(self, data: CognifyInput) -> CognifyResult:
        """Analyse the redacted snapshot (LLM if configured, rule-based otherwise or on any LLM failure)."""
        # the candidates stay in the database; the history gets where they are and how many
        run_id = activity.info().workflow_run_id or "-"
        distilled = await distil(
            self._engine,
            PlanKey(data.workflow_id, run_id),
            task_id=data.task_id,
            description=data.description,
            last_seq=data.last_seq,
            success=data.success,
            llm=self._llm,
        )
        analysis = distilled.analysis
        return CognifyResult(
            success=analysis.success,
            reward=analysis.reward,
            critique="",
            key_decisions=[],
            repeatable=analysis.repeatable,
            summary="",
            engine=analysis.engine,
            fallback_reason=distilled.fallback_reason,
            redaction_counts=distilled.redaction_counts,
            run_id=run_id,
            candidate_count=distilled.candidate_count,
            candidate_types=distilled.candidate_types,
            key_decision_count=len(analysis.key_decisions),
        )

    @activity.defn
    async def plan(self, data: PlanInput) -> PlanResult:
        """Embed and classify the stored candidates a chunk at a time, against memory visible from the target.

        Each chunk's plan items are committed before the next chunk starts and the progress heartbeated
        (`activity.heartbeat(done)`), so an attempt after a worker crash or a timeout resumes after the
        chunks already written (the rows decide; the heartbeat detail is what the Temporal UI shows). A text
        is embedded once per model: vectors come from the embedding cache first, only misses are embedded
        (governance/operations/promotion_plan.py).
        """
        run = await self._planner.start(PlanKey(data.workflow_id, data.run_id), data.memory_types)
        progress = run.progress
        hint = _resume_hint()
        if hint is not None or run.resumed_from:
            activity.logger.info(
                "plan of %s resumes at item %d of %d (last heartbeat: %s)",
                data.workflow_id,
                run.resumed_from,
                len(run.indexes),
                hint,
            )

        async def beat() -> None:
            while True:
                activity.heartbeat(progress.done)
                await asyncio.sleep(_HEARTBEAT_EVERY_SECONDS)

        beating = asyncio.create_task(beat())
        try:
            planned = await self._planner.run(
                run,
                scope_key=data.scope_key,
                visible=data.visible_scope_keys,
                tenant=_tenant(),
                preview_items=PREVIEW_ITEMS,
                on_chunk=activity.heartbeat,
            )
        except EmbeddingRefused as exc:
            raise _embedder_refused(exc) from exc.__cause__
        finally:
            beating.cancel()
        activity.logger.info(
            "plan of %s: %d items from %d (%d embedded, %d cached): %s",
            data.workflow_id,
            planned.total,
            run.resumed_from,
            progress.embedded,
            progress.cached,
            progress.timings(),
        )
        return PlanResult(
            run_id=data.run_id,
            total=planned.total,
            decisions=planned.decisions,
            preview=planned.preview,
            embedded=progress.embedded,
            cached=progress.cached,
            resumed_from=run.resumed_from,
            quarantined=planned.quarantined,
            quarantined_items=planned.quarantined_items,
        )

    @activity.defn
    @_heartbeating
    async def publish(self, data: PublishInput) -> PublishResult:
        """Publish the stored plan a chunk at a time (governance/operations/promotion_publish.py): each chunk
        one transaction under the scopes' locks, the summary, derivations and the task's end in a last one.

        A retry publishes nothing twice: the committed chunks replay by their items' idempotency keys. The
        plan items come from the database (the history only names them); the result carries counts and the
        first few. A regular (non-local) attempt heartbeats the items done after each chunk, so no timeout
        guesses the plan's size. An approver's edited item is planned again as plan plans it.
        """
        timing = PlanProgress()
        try:
            results = await publish_plan(
                self._engine,
                data,
                replan=self._planner.replan(_tenant()),
                chunk_size=self._publish_chunk,
                dup_threshold=self._settings.dedup_similarity_threshold,
                related_threshold=self._settings.related_similarity_threshold,
                judge=self._publish_judge,
                on_chunk=None if activity.info().is_local else activity.heartbeat,
                timings=timing.phases,
            )
        except PlanMissing as exc:
            raise ApplicationError(str(exc), type=NotFound.__name__, non_retryable=True) from exc
        except EmbeddingRefused as exc:
            raise _embedder_refused(exc) from exc.__cause__
        activity.logger.info("publish of %s: %d items: %s", data.workflow_id, data.total, timing.timings())
        return PublishResult(
            total=len(results),
            actions=dict(Counter(r.action for r in results)),
            memories=[_published(r) for r in results[:PREVIEW_ITEMS]],
        )

    @activity.defn
    async def record_decision(self, data: DecisionRecordInput) -> None:
        """Record a rejection (human or timeout) that publishes nothing."""
        await promotion_end.record_rejection(
            self._engine,
            workflow_id=data.workflow_id,
            task_id=data.task_id,
            actor_id=data.actor_id,
            actor_type=data.actor_type,
            reason=data.reason,
            payload=data.payload,
            grant=data.grant,
            run_id=data.run_id,
        )

    @activity.defn
    async def record_outcome(self, data: OutcomeInput) -> None:
        """Record on the task that its promotion ended without publishing or deciding (timeout, failure)."""
        try:
            await promotion_end.record_outcome(
                self._engine, workflow_id=data.workflow_id, task_id=data.task_id, status=data.status
            )
        except InvalidInput as exc:
            raise _permanent(exc) from None
