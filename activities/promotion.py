"""Activities of the promotion gate: idempotent I/O around governance/ (collect, cognify, plan, publish).

Each method takes one dataclass carrying what makes a retry safe (task id, workflow id, a request id) and
gets its clients from `PromotionActivities.__init__`, never from globals. Temporal owns retries; permanent
failures (unknown task, invalid input) are non-retryable `ApplicationError`s.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from temporalio import activity
from temporalio.exceptions import ApplicationError

from governance.adapters.embedders import Embedder, EmbeddingDimensionMismatch, embed_passages_async
from governance.adapters.llm_cognifier import LLMCognifier, cognify
from governance.adapters.llm_judge import make_judge
from governance.cognify import Candidate, StagedEntry, episode_candidate, skill_candidate
from governance.config import Settings
from governance.dedup import classify, content_hash
from governance.errors import NotFound
from governance.publication import PublishedMemory
from governance.redaction import redact, redact_json
from governance.scopes import SCOPE_LEVEL, ActorType, Scope, scope_key
from governance.storage.events import EventType, record_event
from governance.storage.identity import get_principal
from governance.storage.lifecycle import NewMemory, find_neighbours, publish_candidate
from governance.storage.promotions import approval_grant_exists
from governance.storage.staging import get_task, last_seq, set_task_status, snapshot_entries
from governance.supersession import ContradictionJudge
from governance.trust import published_trust
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
    "ApproverCheckInput",
    "ApproverCheckResult",
    "PublishInput",
    "PublishResult",
    "DecisionRecordInput",
]

_HEARTBEAT_EVERY_SECONDS = 2.0  # well inside the workflow's heartbeat timeout
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


@dataclass
class CognifyInput:
    """Analyse the snapshot `seq <= last_seq` of the task, given the verification outcome."""

    task_id: str
    workflow_id: str
    description: str
    last_seq: int
    success: bool


@dataclass
class CognifyResult:
    """The analysis and its candidates, Reflexion episode (and skill) included; `engine` says who made it."""

    success: bool
    reward: float
    critique: str
    key_decisions: list[str]
    repeatable: bool
    summary: str
    candidates: list[Candidate]
    engine: str
    fallback_reason: str | None = None
    redaction_counts: dict[str, int] = field(default_factory=dict)


@dataclass
class PlanInput:
    """Candidates to classify against active memory visible from the target scope."""

    task_id: str
    workflow_id: str
    scope_key: str
    visible_scope_keys: list[str]
    candidates: list[Candidate]


@dataclass
class PlanItem:
    """One candidate with the decision the gate expects (publish re-decides under locks)."""

    candidate: Candidate
    decision: str
    target_id: str | None
    similarity: float | None
    reason: str
    content_hash: str
    embedding: list[float]


@dataclass
class PlanResult:
    """The plan, in candidate order."""

    items: list[PlanItem]


@dataclass
class ApproverCheckInput:
    """Is `approver` (a claim when it came through a signal) allowed to decide this promotion?"""

    request_id: str
    workflow_id: str
    task_id: str
    approver: str
    decision: str  # "approve" | "reject"
    channel: str  # "signal" (Temporal UI) | "update" (API or UI)
    org: str
    project: str
    target_scope: str
    grant: str | None = None
    note: str = ""


@dataclass
class ApproverCheckResult:
    """Accepted, or refused with the reason (the refusal is already recorded as an event)."""

    accepted: bool
    reason: str
    approver_name: str | None = None
    approver_type: str | None = None


@dataclass
class PublishInput:
    """Publish `items` into `scope` in one transaction, with the decision that allowed it."""

    workflow_id: str
    task_id: str
    org: str
    project: str
    worktree: str
    scope: str
    items: list[PlanItem]
    verified: bool
    validation_source: str | None
    approver: str | None = None
    approver_type: str | None = None
    approval_note: str = ""
    summary: dict[str, Any] = field(default_factory=dict)


@dataclass
class PublishResult:
    """Every published memory of the promotion."""

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


def _keys_from(scope: Scope, keys: dict[str, str]) -> list[str]:
    # a target scope is classified against itself and wider scopes, never against narrower ones
    return [scope_key(s, **keys) for s in Scope if SCOPE_LEVEL[s] >= SCOPE_LEVEL[scope]]


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
    ) -> None:
        self._engine = engine
        self._embedder = embedder
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
        self, conn: AsyncConnection, task_id: str, last_seq: int
    ) -> tuple[list[StagedEntry], dict[str, int]]:
        rows = await snapshot_entries(conn, task_id, up_to_seq=last_seq)
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
                StagedEntry(id=row.id, seq=row.seq, kind=row.kind, content=cleaned.text, payload=payload)
            )
        return entries, counts

    @activity.defn
    async def collect_staging(self, data: CollectInput) -> CollectResult:
        """Snapshot the task's staging (up to its current last seq) and note what redaction removes."""
        async with self._engine.connect() as conn:
            task = await get_task(conn, data.task_id)
            if task is None:
                raise ApplicationError(
                    f"task {data.task_id} does not exist", type=NotFound.__name__, non_retryable=True
                )
            snapshot_end = await last_seq(conn, data.task_id)
            entries, counts = await self._entries(conn, data.task_id, snapshot_end)
        scope = Scope(data.target_scope)
        keys = {"org": task.org, "project": task.project, "worktree": task.worktree, "task_id": task.id}
        return CollectResult(
            task_id=task.id,
            org=task.org,
            project=task.project,
            worktree=task.worktree,
            description=redact(task.description).text,  # it travels in the history approvers read
            entry_count=len(entries),
            last_seq=snapshot_end,
            redaction_counts=counts,
            requires_approval=self._authorizer.requires_validation(scope),
            scope_key=scope_key(scope, **keys),
            visible_scope_keys=_keys_from(scope, keys),
        )

    @activity.defn
    @_heartbeating
    async def cognify(self, data: CognifyInput) -> CognifyResult:
        """Analyse the redacted snapshot (LLM if configured, rule-based otherwise or on any LLM failure)."""
        async with self._engine.connect() as conn:
            entries, counts = await self._entries(conn, data.task_id, data.last_seq)
        # the episode and a generated skill quote the description (title included): it is redacted too
        description = redact(data.description).text
        outcome = await cognify(description, entries, success=data.success, llm=self._llm)
        analysis = outcome.analysis
        entry_ids = [e.id for e in entries]
        # the model could echo a secret it was never shown in full; candidates are redacted again
        candidates = [
            Candidate(**{**c.__dict__, "title": redact(c.title).text, "content": redact(c.content).text})
            for c in analysis.candidates
            if redact(c.content).text.strip()
        ]
        skill = skill_candidate(description, analysis, entry_ids)
        if skill is not None:
            candidates.append(skill)
        episode = episode_candidate(data.task_id, description, analysis, entry_ids)
        candidates.append(Candidate(**{**episode.__dict__, "content": redact(episode.content).text}))
        return CognifyResult(
            success=analysis.success,
            reward=analysis.reward,
            critique=redact(analysis.critique).text,
            key_decisions=[redact(d).text for d in analysis.key_decisions],
            repeatable=analysis.repeatable,
            summary=redact(analysis.summary).text,
            candidates=candidates,
            engine=analysis.engine,
            fallback_reason=outcome.fallback_reason,
            redaction_counts=counts,
        )

    @activity.defn
    @_heartbeating
    async def plan(self, data: PlanInput) -> PlanResult:
        """Embed each candidate and classify it against active memory visible from the target scope."""
        if not data.candidates:
            return PlanResult(items=[])
        try:
            vectors = await embed_passages_async(self._embedder, [c.content for c in data.candidates])
        except EmbeddingDimensionMismatch as exc:
            # retrying cannot fix a misconfigured endpoint; fail the promotion now, saying why
            raise ApplicationError(
                str(exc), type=EmbeddingDimensionMismatch.__name__, non_retryable=True
            ) from exc
        items: list[PlanItem] = []
        async with self._engine.connect() as conn:
            for candidate, vector in zip(data.candidates, vectors, strict=True):
                digest = content_hash(candidate.content)
                neighbours = await find_neighbours(
                    conn,
                    scope_keys=data.visible_scope_keys,
                    target_scope_key=data.scope_key,
                    content_hash=digest,
                    canonical_key=candidate.canonical_key,
                    embedding=vector.tolist(),
                )
                decide = functools.partial(
                    classify,
                    content=candidate.content,
                    content_hash=digest,
                    canonical_key=candidate.canonical_key,
                    neighbours=neighbours,
                    dup_threshold=self._settings.dedup_similarity_threshold,
                    related_threshold=self._settings.related_similarity_threshold,
                    judge=self._judge,
                    scope_key=data.scope_key,
                    memory_type=candidate.memory_type,
                )
                # an LLM judge blocks on the network: keep the event loop (and the heartbeat) running
                decision = await asyncio.to_thread(decide) if self._judge.blocking else decide()
                items.append(
                    PlanItem(
                        candidate=candidate,
                        decision=decision.kind.value,
                        target_id=decision.target_id,
                        similarity=decision.similarity,
                        reason=decision.reason,
                        content_hash=digest,
                        embedding=[float(x) for x in vector],
                    )
                )
        return PlanResult(items=items)

    @activity.defn
    async def check_approver(self, data: ApproverCheckInput) -> ApproverCheckResult:
        """Accept an approval only from an existing principal Casbin lets `approve` this scope and tenant.

        A refusal is recorded as a REJECTED event (payload `refused_approval: true`) so the audit trail
        shows who tried; the promotion itself keeps waiting.
        """
        reason, principal = await self._refusal(data)
        if reason is None and principal is not None:
            return ApproverCheckResult(
                accepted=True,
                reason="accepted",
                approver_name=principal.name,
                approver_type=principal.actor_type.value,
            )
        async with self._engine.begin() as conn:
            await record_event(
                conn,
                event_type=EventType.REJECTED,
                actor_id=data.approver[:64] or None,
                actor_type=principal.actor_type.value if principal else None,
                task_id=data.task_id,
                workflow_id=data.workflow_id,
                reason=f"{data.decision} refused: {reason}",
                payload={"refused_approval": True, "decision": data.decision, "channel": data.channel},
                dedupe_key=f"{data.workflow_id}:refusal:{data.request_id}",
                if_absent=True,
            )
        return ApproverCheckResult(accepted=False, reason=str(reason))

    async def _refusal(self, data: ApproverCheckInput) -> tuple[str | None, Any]:
        if data.channel == "signal" and self._settings.approval_mode == "api_only":
            return "approval_mode is api_only: approvals must come through the authenticated API", None
        async with self._engine.connect() as conn:
            principal = await get_principal(conn, data.approver) if data.approver else None
            if principal is None:
                return f"unknown principal {data.approver!r}", None
            if self._settings.approval_mode == "api_only":
                granted = data.grant is not None and await approval_grant_exists(
                    conn,
                    workflow_id=data.workflow_id,
                    grant=data.grant,
                    principal_id=principal.id,
                    decision=data.decision,
                )
                if not granted:
                    return "approval_mode is api_only and no API-authenticated grant matches", principal
        if not self._authorizer.allowed(
            principal, org=data.org, project=data.project, scope=data.target_scope, action="approve"
        ):
            return (
                f"{principal.actor_type.value} {principal.id} may not approve {data.target_scope} scope "
                f"in {data.org}/{data.project}",
                principal,
            )
        return None, principal

    @activity.defn
    async def publish(self, data: PublishInput) -> PublishResult:
        """Publish the plan in one transaction with its events; a retry or replay publishes nothing twice."""
        scope = Scope(data.scope)
        keys = {"org": data.org, "project": data.project, "worktree": data.worktree, "task_id": data.task_id}
        target_key = scope_key(scope, **keys)
        visible = _keys_from(scope, keys)
        confidence, validation_source = published_trust(
            data.verified, data.validation_source, human_approved=data.approver_type == ActorType.HUMAN.value
        )
        actor_id = data.approver or f"workflow:{data.workflow_id}"[:64]
        actor_type = data.approver_type or "system"
        results: list[PublishedMemory] = []
        async with self._engine.begin() as conn:
            for index, item in enumerate(data.items):
                c = item.candidate
                outcome = await publish_candidate(
                    conn,
                    NewMemory(
                        memory_type=c.memory_type,
                        scope=scope.value,
                        scope_key=target_key,
                        org=data.org,
                        project=data.project if scope is not Scope.ORG else None,
                        canonical_key=c.canonical_key,
                        title=c.title,
                        content=c.content,
                        embedding=item.embedding,
                        confidence=confidence,
                        validation_source=validation_source,
                        importance=c.importance,
                        reward=data.summary.get("reward") if c.memory_type == "episode" else None,
                        success=data.summary.get("success")
                        if c.memory_type in ("episode", "skill")
                        else None,
                        source_task_ids=[data.task_id],
                        source_entry_ids=list(c.source_entry_ids),
                        decay_policy="recency_bias" if c.memory_type == "episode" else "stable",
                        expires_at=None,
                        valid_from_commit=None,
                    ),
                    visible_scope_keys=visible,
                    actor_id=actor_id,
                    actor_type=actor_type,
                    task_id=data.task_id,
                    workflow_id=data.workflow_id,
                    dedupe_key=f"{data.workflow_id}:publish:{index}",
                    dup_threshold=self._settings.dedup_similarity_threshold,
                    related_threshold=self._settings.related_similarity_threshold,
                    judge=self._publish_judge,
                )
                results.append(
                    PublishedMemory(
                        memory_id=outcome.memory_id,
                        citation=outcome.citation,
                        action=outcome.action,
                        memory_type=c.memory_type,
                        title=c.title,
                        superseded_id=outcome.superseded_id,
                        replayed=outcome.replayed,
                    )
                )
            if data.approver is not None:
                await record_event(
                    conn,
                    event_type=EventType.APPROVED,
                    actor_id=data.approver,
                    actor_type=data.approver_type,
                    task_id=data.task_id,
                    workflow_id=data.workflow_id,
                    reason=data.approval_note or "approved",
                    payload={"memory_ids": [r.memory_id for r in results], **data.summary},
                    dedupe_key=f"{data.workflow_id}:approved",
                    if_absent=True,
                )
            # one summary per promotion: redaction counts, cognify engine and any LLM fallback reason
            await record_event(
                conn,
                event_type=EventType.PROMOTION,
                actor_id=actor_id,
                actor_type=actor_type,
                task_id=data.task_id,
                workflow_id=data.workflow_id,
                reason=f"published {len(results)} memories into {target_key}",
                payload={
                    "memory_ids": [r.memory_id for r in results],
                    "scope_key": target_key,
                    **data.summary,
                },
                dedupe_key=f"{data.workflow_id}:summary",
                if_absent=True,
            )
            await set_task_status(conn, data.task_id, "promoted")
        return PublishResult(memories=results)

    @activity.defn
    async def record_decision(self, data: DecisionRecordInput) -> None:
        """Record a rejection (human or timeout) that publishes nothing."""
        async with self._engine.begin() as conn:
            await record_event(
                conn,
                event_type=EventType.REJECTED,
                actor_id=data.actor_id,
                actor_type=data.actor_type,
                task_id=data.task_id,
                workflow_id=data.workflow_id,
                reason=data.reason,
                payload=data.payload,
                dedupe_key=f"{data.workflow_id}:rejected",
                if_absent=True,
            )
            await set_task_status(conn, data.task_id, "rejected")
