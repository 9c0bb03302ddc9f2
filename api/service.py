"""The operations both gateways run: HTTP handlers and gRPC methods call these, so they answer alike.

Each function takes the gateway's shared state (engine, authoriser, caches, settings — FastAPI's
`app.state` or the gRPC server's `GatewayResources`), the authenticated principal and a request model of
`api/schemas.py`, and returns the public response model. Authentication and authorisation happen here
too, through the same `authenticate` and `Authorizer.check` calls, never re-implemented per transport.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from sqlalchemy.ext.asyncio import AsyncEngine

from api.metrics import ENTRIES_APPENDED, ENTRIES_REPLAYED
from api.schemas import EntriesAck, EntriesIn, EntryAck, TaskCreate, TaskPublic
from governance.config import Settings
from governance.errors import InvalidInput, NotFound, Unauthenticated, Unavailable
from governance.identity import Principal, key_id_of
from governance.scopes import Scope
from governance.staging import TASK_ID_PATTERN, EntryDraft, validate_batch
from governance.storage import staging
from governance.storage.identity import authenticate
from governance.storage.staging import TaskInfo
from policy.enforcer import Authorizer

if TYPE_CHECKING:
    from api.deps import KeyCache, TaskCache
    from api.routes.approaches import CheckIn, CheckPublic
    from api.routes.promotions import (
        DecisionIn,
        DecisionPublic,
        PromotionList,
        PromotionPublic,
        PromotionStart,
        PromotionStarted,
        VerificationIn,
    )
    from api.routes.search import ContextIn, ContextPublic, SearchIn, SearchPublic

__all__ = [
    "GatewayState",
    "GatewayResources",
    "principal_from_authorization",
    "load_task",
    "authorized_task",
    "temporal_client",
    "task_public",
    "open_task",
    "append_entries",
    "readable_scope_keys",
    "search",
    "context",
    "count_retrievals",
    "check_approach",
    "start_promotion",
    "promotion_status",
    "verify_promotion",
    "decide_promotion",
    "list_promotions",
]


class GatewayState(Protocol):
    """What a gateway process shares between requests (FastAPI's `app.state` has these attributes)."""

    settings: Settings
    engine: AsyncEngine
    authorizer: Authorizer
    key_cache: KeyCache
    task_cache: TaskCache
    temporal: Any


@dataclass
class GatewayResources:
    """A `GatewayState` for a gateway that is not a FastAPI app (the gRPC server on its own)."""

    settings: Settings
    engine: AsyncEngine
    authorizer: Authorizer
    key_cache: KeyCache
    task_cache: TaskCache
    temporal: Any = field(default=None)


async def principal_from_authorization(state: GatewayState, authorization: str | None) -> Principal:
    """The principal behind `Bearer <api key>` (cached briefly); the actor of every write is this."""
    if not authorization:
        raise Unauthenticated("missing Authorization header; send `Authorization: Bearer <api key>`")
    scheme, _, key = authorization.partition(" ")
    key = key.strip()
    if scheme.lower() != "bearer" or not key:
        raise Unauthenticated("Authorization must be `Bearer <api key>`")
    if key_id_of(key) is None:
        raise Unauthenticated("malformed API key")
    principal = state.key_cache.get(key)
    if principal is None:
        async with state.engine.connect() as conn:
            principal = await authenticate(conn, key)
        if principal is None:
            raise Unauthenticated("unknown or revoked API key")
        state.key_cache.put(key, principal)
    return principal


async def load_task(state: GatewayState, task_id: str) -> TaskInfo:
    """The task (its tenant is cached: tasks never move), or NotFound."""
    if re.fullmatch(TASK_ID_PATTERN, task_id) is None:  # no task can have this id; spare the database
        raise NotFound(f"task {task_id!r} does not exist")
    task = state.task_cache.get(task_id)
    if task is None:
        async with state.engine.connect() as conn:
            task = await staging.get_task(conn, task_id)
        if task is None:
            raise NotFound(f"task {task_id!r} does not exist")
        state.task_cache.put(task)
    return task


async def authorized_task(
    state: GatewayState, principal: Principal, task_id: str, action: str, scope: Scope = Scope.TASK
) -> TaskInfo:
    """The task, after Casbin allowed `principal` to `action` at `scope` in the task's tenant."""
    task = await load_task(state, task_id)
    state.authorizer.check(principal, org=task.org, project=task.project, scope=scope, action=action)
    return task


async def temporal_client(state: GatewayState) -> Any:
    """The process's Temporal client, connected on first use (gateways start without Temporal)."""
    if getattr(state, "temporal", None) is None:
        from workflows.worker import connect_temporal

        try:
            state.temporal = await connect_temporal(state.settings)
        except Exception as exc:  # connection refused, DNS, TLS: all mean "retry later"
            raise Unavailable(f"Temporal is unavailable: {exc}") from exc
    return state.temporal


def task_public(task: TaskInfo) -> TaskPublic:
    return TaskPublic(
        task_id=task.id,
        org=task.org,
        project=task.project,
        worktree=task.worktree,
        description=task.description,
        status=task.status,
        created_by=task.created_by,
        created_at=task.created_at,
        promotion_workflow_id=task.promotion_workflow_id,
    )


async def open_task(state: GatewayState, principal: Principal, body: TaskCreate) -> tuple[TaskPublic, bool]:
    """Open a task; the same request again returns it with `created` False. Returns (task, created)."""
    state.authorizer.check(principal, org=body.org, project=body.project, scope=Scope.TASK, action="open")
    task, created = await staging.open_task(
        state.engine,
        task_id=body.task_id or f"task-{uuid.uuid4().hex}",
        org=body.org,
        project=body.project,
        worktree=body.worktree,
        description=body.description,
        created_by=principal.id,
    )
    return task_public(task), created


async def append_entries(
    state: GatewayState, principal: Principal, task: TaskInfo, body: EntriesIn
) -> EntriesAck:
    """Append a batch to an authorised task, all or nothing, idempotency keys honoured."""
    drafts = [
        EntryDraft(kind=e.kind, content=e.content, payload=e.payload, idempotency_key=e.idempotency_key)
        for e in body.entries
    ]
    limits = state.settings
    validate_batch(drafts, max_entry_bytes=limits.max_entry_bytes, max_batch_entries=limits.max_batch_entries)
    results = await staging.append_entries(state.engine, task.id, principal, drafts)
    replayed = sum(r.replayed for r in results)
    ENTRIES_APPENDED.inc(len(results) - replayed)
    ENTRIES_REPLAYED.inc(replayed)
    return EntriesAck(
        task_id=task.id, entries=[EntryAck(id=r.id, seq=r.seq, replayed=r.replayed) for r in results]
    )


# ---- read path ------------------------------------------------------------------------------------------
# The read models live with their router (api/routes/search.py), which imports api.deps, which imports this
# module: they are imported inside the functions to keep that cycle out of import time.


async def readable_scope_keys(state: GatewayState, principal: Principal, task_id: str) -> list[str]:
    """Scope keys of the task the caller may read; NotFound for an unknown task, PolicyDenied without read.

    Each scope (task, worktree, project, org) is searched only if the policy lets the caller read it, so a
    deny row for one scope hides exactly that scope.
    """
    from governance.scopes import scope_key

    task = await authorized_task(state, principal, task_id, "read")
    return [
        scope_key(s, org=task.org, project=task.project, worktree=task.worktree, task_id=task.id)
        for s in Scope
        if state.authorizer.allowed(principal, org=task.org, project=task.project, scope=s, action="read")
    ]


def _k(requested: int | None, settings: Settings) -> int:
    k = requested or settings.search_default_k
    if k > settings.search_max_k:
        raise InvalidInput(f"k must be at most {settings.search_max_k}")
    return k


async def search(
    state: GatewayState, principal: Principal, body: SearchIn, *, compact: bool = False
) -> tuple[SearchPublic, list[str]]:
    """Hybrid search over what the task sees; returns the answer and the ids whose retrieval count rises."""
    from api.routes.search import CompactResultPublic, SearchPublic, SearchResultPublic, public_hit
    from governance.embedders import make_embedder
    from governance.reading import search_memories

    keys = await readable_scope_keys(state, principal, body.task_id)
    settings = state.settings
    outcome = await search_memories(
        state.engine,
        make_embedder(settings),
        settings,
        query=body.query,
        scope_keys=keys,
        k=_k(body.k, settings),
        types=[t.value for t in body.types] if body.types else None,
        intent=body.intent,
        include_history=body.include_history,
    )
    results: list[SearchResultPublic] | list[CompactResultPublic]
    if compact or body.compact:
        results = [
            CompactResultPublic(citation=h.citation, title=h.title, type=h.memory_type, score=h.parts.score)
            for h in outcome.hits
        ]
    else:
        results = [public_hit(h) for h in outcome.hits]
    types = list(outcome.types) if outcome.types is not None else None
    answer = SearchPublic(
        query=body.query, intent=outcome.intent, types=types, widened=outcome.widened, results=results
    )
    return answer, [h.id for h in outcome.hits]


async def context(
    state: GatewayState, principal: Principal, body: ContextIn
) -> tuple[ContextPublic, list[str]]:
    """The `[MEMORY CONTEXT]` block within budget; returns it and the ids of the memories it cites."""
    from api.routes.search import ContextPublic
    from governance.embedders import make_embedder
    from governance.reading import build_context

    settings = state.settings
    max_tokens = body.max_tokens or settings.context_default_max_tokens
    if max_tokens > settings.context_max_tokens_limit:
        raise InvalidInput(f"max_tokens must be at most {settings.context_max_tokens_limit}")
    keys = await readable_scope_keys(state, principal, body.task_id)
    outcome = await build_context(
        state.engine,
        make_embedder(settings),
        settings,
        query=body.query,
        scope_keys=keys,
        max_tokens=max_tokens,
        types=[t.value for t in body.types] if body.types else None,
        intent=body.intent,
    )
    cited = set(outcome.block.citations)
    answer = ContextPublic(
        context=outcome.block.text,
        citations=outcome.block.citations,
        tokens=outcome.block.tokens,
        max_tokens=max_tokens,
        intent=outcome.search.intent,
    )
    return answer, [h.id for h in outcome.search.hits if h.citation in cited]


async def count_retrievals(state: GatewayState, ids: list[str]) -> None:
    """Raise the retrieval counts of returned memories (run after the answer is sent)."""
    from governance.reading import count_retrievals as count

    await count(state.engine, ids)


async def check_approach(
    state: GatewayState, principal: Principal, task: TaskInfo, body: CheckIn
) -> CheckPublic:
    """Circular-fix detection on an authorised task: did this approach (or a near-duplicate) already fail?"""
    from api.routes.approaches import CheckPublic, public_approach
    from governance.embedders import embed_passages_async, make_embedder
    from governance.storage.approaches import check_proposal

    settings = state.settings
    vectors = await embed_passages_async(make_embedder(settings), [body.approach])
    async with state.engine.begin() as conn:
        answer = await check_proposal(
            conn,
            task_id=task.id,
            subtask=body.subtask,
            approach=body.approach,
            embedding=[float(x) for x in vectors[0]],
            similarity_threshold=settings.approach_similarity_threshold,
            refusals_before_stuck=settings.approach_refusals_before_stuck,
            actor_id=principal.id,
            actor_type=principal.actor_type.value,
        )
    return CheckPublic(
        valid=answer.check.valid,
        reason=answer.check.reason,
        suggestion=answer.check.suggestion,
        stuck=answer.stuck,
        refusals=answer.refusals,
        history=[public_approach(p) for p in answer.check.history],
    )


# ---- promotion gate -------------------------------------------------------------------------------------
# The work is in api/promotion_service.py (it talks to Temporal); imported inside the functions because it
# imports this module and the promotion models of api/routes/promotions.py.


async def start_promotion(
    state: GatewayState, principal: Principal, task_id: str, body: PromotionStart
) -> PromotionStarted:
    """Start the task's promotion (or return the running one); `promote` at the target scope."""
    from api import promotion_service

    return await promotion_service.start_promotion(state, principal, task_id, body)


async def promotion_status(state: GatewayState, principal: Principal, task_id: str) -> PromotionPublic:
    """Where the task's promotion stands, with its plan; `read` on the task."""
    from api import promotion_service

    return await promotion_service.promotion_status(state, principal, task_id)


async def verify_promotion(
    state: GatewayState, principal: Principal, task_id: str, body: VerificationIn
) -> PromotionPublic:
    """The verification evidence the promotion waits for; `promote` at the target scope."""
    from api import promotion_service

    return await promotion_service.verify_promotion(state, principal, task_id, body)


async def decide_promotion(
    state: GatewayState, principal: Principal, task_id: str, decision: str, body: DecisionIn
) -> DecisionPublic:
    """Approve or reject (`decision`) as the caller; `approve` at the target scope."""
    from api import promotion_service

    return await promotion_service.decide_promotion(state, principal, task_id, decision, body)


async def list_promotions(
    state: GatewayState, principal: Principal, promotion_state: str | None, limit: int
) -> PromotionList:
    """Promotions of the tasks the caller may read, optionally in one state."""
    from api import promotion_service

    return await promotion_service.list_promotions(state, principal, promotion_state, limit)
