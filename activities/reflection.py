"""Activities of reflection: idempotent I/O around governance/reflection.py.

- `reflection_due`: is a project's pending importance over the threshold? (a promotion asks once published)
- `reflection_due_scopes`: the projects the scheduled sweep should reflect on;
- `reflection_claim`: check who asks (a start from the Temporal UI or `temporal workflow start` carries only
  claims: a named requester must be an enabled principal allowed to approve the project's scope, a manual
  reflection must name one, and the org must exist, so no reflector principal is made for an org nobody
  created; a refusal is a REJECTED event and fails the run), then record the reflection and claim the
  project's pending episodes (a retry finds its claim);
- `reflection_stage`: read the episode window and its tasks' redacted staging, distil the insights (rules,
  worded by the LLM when one is configured) and stage them as `insight` entries of a reflection task, each
  payload naming the episodes it was distilled from; the task's promotion then runs the normal gate;
- `reflection_finish`: once that promotion ended, link each published insight to its episodes
  (`memory_derivations`, DISTILLED events) and record how the reflection ended.

Inputs and results carry ids and counts only (no titles: an insight's quotes its episodes, and a history is
out of erasure's reach, docs/privacy.md); episodes and insights live in Postgres.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio import activity
from temporalio.exceptions import ApplicationError

from governance.adapters.llm_reflector import LLMReflector, word
from governance.cognify import StagedEntry
from governance.config import Settings
from governance.errors import InvalidInput
from governance.identity import Principal
from governance.operations.reflection import link_distilled
from governance.redaction import redact, redact_json
from governance.reflection import EpisodeEvidence, ReflectionParams, distil
from governance.scopes import ActorType, EntryKind
from governance.staging import EntryDraft
from governance.storage.events import EventType, record_event
from governance.storage.identity import get_enabled_principal
from governance.storage.promotions import record_approval_grant, use_approval_grant
from governance.storage.reflections import (
    claim_episodes,
    claimed_episode_ids,
    due_scopes,
    ensure_reflector,
    entries_by_id,
    episode_window,
    get_reflection,
    insight_links,
    org_known,
    pending_scope,
    update_reflection,
)
from governance.storage.staging import last_seq, open_task, set_promotion_workflow
from governance.storage.staging_append import append_entries
from policy.enforcer import Authorizer

__all__ = [
    "ReflectionActivities",
    "DueInput",
    "DueResult",
    "ScopesInput",
    "DueScope",
    "ClaimInput",
    "ClaimResult",
    "StageInput",
    "StageResult",
    "FinishInput",
    "FinishResult",
]

REFLECTION_WORKTREE = "reflection"
# the failure type of a start whose claims the check refuses (the gate's ErrorTypes.START_REFUSED)
START_REFUSED = "StartRefused"
# a human's reflection through the API (the contract's ReflectionTrigger.MANUAL): it always names them
_MANUAL = "manual"


@dataclass
class DueInput:
    """Which project to check (after `task_id`'s promotion published)."""

    org: str
    project: str
    task_id: str


@dataclass
class DueResult:
    """Whether the project's pending importance reached the threshold (0: the trigger is off)."""

    due: bool
    episodes: int
    importance: float
    threshold: float


@dataclass
class ScopesInput:
    """The sweep's request id (its workflow id) and the orgs it covers (None: every org)."""

    workflow_id: str
    orgs: list[str] | None = None


@dataclass
class DueScope:
    """A project the sweep reflects on."""

    org: str
    project: str


@dataclass
class ClaimInput:
    """The reflection's id (chosen by the workflow: a retry finds its row) and what it reflects on."""

    reflection_id: str
    workflow_id: str
    org: str
    project: str
    trigger: str
    requested_by: str | None = None
    grant: str | None = None  # the gateway's proof that `requested_by` asked (approval_mode)


@dataclass
class ClaimResult:
    """How many episodes it claimed, who asks for its promotion and the gate's settings for it."""

    episodes: int
    reflector: str | None
    target_scope: str
    verify_timeout_seconds: float
    approval_timeout_seconds: float


@dataclass
class StageInput:
    """Stage the claimed reflection's insights; the promotion that will publish them has this id."""

    reflection_id: str
    org: str
    project: str
    reflector: str
    task_id: str
    promotion_workflow_id: str


@dataclass
class StageResult:
    """The reflection task (None: nothing to publish), its insights' count, the engine (`titles` stays
    empty; older histories carry them)."""

    task_id: str | None
    insights: int
    titles: list[str] = field(default_factory=list)
    engine: str = "rule_based"
    fallback_reason: str | None = None
    grant: str | None = None


@dataclass
class FinishInput:
    """How the reflection's promotion ended."""

    reflection_id: str
    workflow_id: str
    task_id: str | None
    promotion_state: str
    reflector: str | None = None


@dataclass
class FinishResult:
    """Derivation links written and the published insights' ids."""

    linked: int
    insight_ids: list[str] = field(default_factory=list)


def _entries(rows: list[dict[str, Any]]) -> dict[str, list[StagedEntry]]:
    by_task: dict[str, list[StagedEntry]] = {}
    for row in rows:
        payload = row["payload"] if isinstance(row["payload"], dict) else None
        if payload is not None:
            payload, _ = redact_json(payload)
        by_task.setdefault(row["task_id"], []).append(
            StagedEntry(
                id=row["id"],
                seq=row["seq"],
                kind=row["kind"],
                content=redact(row["content"]).text,
                payload=payload,
                created_at=row["created_at"],
            )
        )
    return by_task


class ReflectionActivities:
    """Reflection's I/O; one instance per worker, sharing its clients."""

    def __init__(
        self,
        *,
        engine: AsyncEngine,
        settings: Settings,
        llm: LLMReflector | None = None,
        authorizer: Authorizer | None = None,
    ) -> None:
        self._engine = engine
        self._settings = settings
        self._llm = llm
        # the process's Casbin enforcer: who may ask for a reflection (None: a named requester is refused)
        self._authorizer = authorizer

    def functions(self) -> list[Callable[..., Any]]:
        """Every reflection activity, for a worker."""
        return [self.due, self.due_scopes, self.claim, self.stage, self.finish]

    @activity.defn(name="reflection_due")
    async def due(self, data: DueInput) -> DueResult:
        """The project's pending episodes and whether their importance reached the threshold."""
        threshold = self._settings.reflection_importance_threshold
        async with self._engine.connect() as conn:
            pending = await pending_scope(conn, data.org, data.project)
        due = threshold > 0 and pending.episodes >= 2 and pending.importance >= threshold
        return DueResult(due, pending.episodes, round(pending.importance, 4), threshold)

    @activity.defn(name="reflection_due_scopes")
    async def due_scopes(self, data: ScopesInput) -> list[DueScope]:
        """Every project with at least `reflection_min_episodes` pending episodes."""
        async with self._engine.connect() as conn:
            scopes = await due_scopes(
                conn, min_episodes=self._settings.reflection_min_episodes, orgs=data.orgs
            )
        return [DueScope(s.org, s.project) for s in scopes]

    @activity.defn(name="reflection_claim")
    async def claim(self, data: ClaimInput) -> ClaimResult:
        """Record the reflection, claim the pending episodes and make sure the org's reflector exists."""
        if not data.org or not data.project:
            raise ApplicationError(
                "org and project are required", type=InvalidInput.__name__, non_retryable=True
            )
        await self._check_start(data)
        async with self._engine.begin() as conn:
            # a disabled reflector claims nothing: the episodes wait for a reflection that can publish
            reflector = await ensure_reflector(conn, data.org)
            episodes = await claim_episodes(
                conn,
                reflection_id=data.reflection_id,
                workflow_id=data.workflow_id,
                org=data.org,
                project=data.project,
                trigger=data.trigger,
                requested_by=data.requested_by,
                limit=self._settings.reflection_max_episodes if reflector is not None else 0,
            )
            if not episodes:
                state = "nothing" if reflector is not None else "failed"
                await update_reflection(conn, data.reflection_id, state=state, finished=True)
        return ClaimResult(
            episodes=len(episodes),
            reflector=reflector,
            target_scope=self._settings.reflection_target_scope,
            verify_timeout_seconds=self._settings.verify_timeout_seconds,
            approval_timeout_seconds=self._settings.approval_timeout_seconds,
        )

    async def _check_start(self, data: ClaimInput) -> None:
        """Fail the run, recorded as a REJECTED event, when its claims do not hold (see the module)."""
        reason = await self._start_refusal(data)
        if reason is None:
            return
        run_id = activity.info().workflow_run_id if activity.in_activity() else ""
        async with self._engine.begin() as conn:
            await record_event(
                conn,
                event_type=EventType.REJECTED,
                actor_id=(data.requested_by or "")[:64] or None,
                actor_type=None,
                workflow_id=data.workflow_id,
                reason=f"reflection refused: {reason}",
                payload={
                    "refused": "reflection",
                    "channel": "start",
                    "org": data.org[:200],
                    "project": data.project[:200],
                    "trigger": data.trigger[:50],
                },
                idempotency_key=f"{data.workflow_id}:{run_id}:refused-reflection",
                if_absent=True,
            )
        raise ApplicationError(f"reflection refused: {reason}", type=START_REFUSED, non_retryable=True)

    async def _start_refusal(self, data: ClaimInput) -> str | None:
        async with self._engine.begin() as conn:  # a grant's first use binds it to this run
            if not await org_known(conn, data.org):
                return f"org {data.org!r} does not exist"
            if data.requested_by is None:
                if data.trigger == _MANUAL:
                    return "a manual reflection names its requester (requested_by)"
                return None  # the sweep's or a promotion's: what the schedule would start anyway
            principal = await get_enabled_principal(conn, data.requested_by)
            if principal is None:
                return f"unknown or disabled principal {data.requested_by!r}"
            if self._settings.proof_required:
                unproven = (
                    "no grant"
                    if data.grant is None
                    else await use_approval_grant(
                        conn,
                        workflow_id=data.workflow_id,
                        grant=data.grant,
                        principal_id=principal.id,
                        decision="start",
                        run_id=(activity.info().workflow_run_id or "") if activity.in_activity() else "",
                    )
                )
                if unproven is not None:
                    return (
                        f"approval_mode is {self._settings.gate_mode.value}: reflections must be started "
                        f"through the API (a start without the gateway's grant proves no requester: "
                        f"{unproven})"
                    )
        if self._authorizer is None or not self._authorizer.allowed(
            principal, org=data.org, project=data.project, scope="project", action="approve"
        ):
            return (
                f"{principal.actor_type.value} {principal.id} may not start a reflection of "
                f"{data.org}/{data.project}: it needs the right to approve the project scope"
            )
        return None

    @activity.defn(name="reflection_stage")
    async def stage(self, data: StageInput) -> StageResult:
        """Distil the insights and stage them in the reflection task (once: a retry finds them staged)."""
        async with self._engine.connect() as conn:
            reflection = await get_reflection(conn, data.reflection_id)
            if reflection is None:
                raise ApplicationError(
                    f"reflection {data.reflection_id} was never claimed",
                    type=InvalidInput.__name__,
                    non_retryable=True,
                )
            if reflection.task_id is not None and await last_seq(conn, reflection.task_id) > 0:
                return StageResult(
                    reflection.task_id, reflection.insight_count, engine=reflection.engine or ""
                )
            window = await episode_window(
                conn, data.org, data.project, limit=self._settings.reflection_max_episodes
            )
            claimed = set(await claimed_episode_ids(conn, data.reflection_id))
            rows = await entries_by_id(conn, [i for e in window for i in e.source_entry_ids])
        by_task = _entries(rows)
        evidence = [
            EpisodeEvidence(
                id=e.id,
                task_id=e.task_id,
                title=e.title,
                success=e.success,
                importance=e.importance,
                entries=tuple(by_task.get(e.task_id, [])),
                embedding=tuple(e.embedding) if e.embedding is not None else None,
            )
            for e in window
        ]
        params = ReflectionParams(
            min_support=self._settings.reflection_min_support, similarity=self._settings.reflection_similarity
        )
        worded = await word(distil(evidence, claimed, params), self._llm)
        # the model could echo what it was never shown in full; titles and contents are redacted again
        insights = [i for i in worded.insights if redact(i.content).text.strip()]
        if not insights:
            async with self._engine.begin() as conn:
                await update_reflection(
                    conn,
                    data.reflection_id,
                    state="nothing",
                    insight_count=0,
                    engine=worded.engine,
                    finished=True,
                )
            return StageResult(None, 0, engine=worded.engine, fallback_reason=worded.fallback_reason)
        reflector = Principal(
            id=data.reflector, name="reflection", actor_type=ActorType.SYSTEM, org=data.org, project=None
        )
        await open_task(
            self._engine,
            task_id=data.task_id,
            org=data.org,
            project=data.project,
            worktree=REFLECTION_WORKTREE,
            description=f"Reflection over {len(claimed)} new episodes of {data.org}/{data.project}",
            created_by=data.reflector,
            key=data.task_id,  # `reflect-<uuid>`: unique by construction, and what the workflow carries
        )
        drafts = [
            EntryDraft(
                kind=EntryKind.INSIGHT,
                content=redact(i.content).text,
                payload={
                    "key": i.key,
                    "title": redact(i.title).text,
                    "importance": i.importance,
                    "reflection": {
                        "id": data.reflection_id,
                        "kind": i.kind,
                        "support": i.support,
                        "successes": i.successes,
                        "episodes": list(i.episode_ids),
                    },
                },
                idempotency_key=f"{data.reflection_id}:{n}",
            )
            for n, i in enumerate(insights)
        ]
        await append_entries(self._engine, data.task_id, reflector, drafts)
        grant = f"reflection-{data.reflection_id}"
        async with self._engine.begin() as conn:
            await set_promotion_workflow(conn, data.task_id, data.promotion_workflow_id)
            # the worker's own proof for the start (approval_mode=api_only accepts starts only with one)
            await record_approval_grant(
                conn,
                workflow_id=data.promotion_workflow_id,
                task_id=data.task_id,
                grant=grant,
                principal=reflector,
                decision="start",
                note=f"reflection {data.reflection_id}",
            )
            await update_reflection(
                conn,
                data.reflection_id,
                state="staged",
                task_id=data.task_id,
                insight_count=len(insights),
                engine=worded.engine,
            )
        return StageResult(
            data.task_id,
            len(insights),
            [],  # no titles: they quote the episodes (a history is out of erasure's reach)
            engine=worded.engine,
            fallback_reason=worded.fallback_reason,
            grant=grant,
        )

    @activity.defn(name="reflection_finish")
    async def finish(self, data: FinishInput) -> FinishResult:
        """Link published insights to their episodes and record how the reflection ended."""
        state = {"published": "published", "rejected": "rejected"}.get(data.promotion_state, "failed")
        async with self._engine.begin() as conn:
            linked, ids = 0, []
            if state == "published" and data.task_id is not None:
                links = await insight_links(conn, data.task_id)
                ids = [link.memory_id for link in links]
                linked = await link_distilled(
                    conn,
                    links,
                    reflection_id=data.reflection_id,
                    task_id=data.task_id,
                    workflow_id=data.workflow_id,
                    actor_id=data.reflector or f"workflow:{data.workflow_id}"[:64],
                )
            await update_reflection(conn, data.reflection_id, state=state, finished=True)
        return FinishResult(linked, ids)
