"""Trust and lifecycle of published memory over HTTP: validate, feedback, supersede, retire, lift, history.

`{memory_id}` is a memory's uuid or its citation; api/services/memories.py says who may do what. Supersede
and retire answer 202 with a change request where the memory's scope needs an approval the caller cannot
give (api/services/change_requests.py).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Response

from api.http.deps import CurrentPrincipal, Resources
from api.http.idempotency import IdempotencyKeyHeader, with_header_key
from api.schemas.change_requests import ChangeRequestPublic, LiftIn
from api.schemas.memories import (
    DecayPolicyIn,
    DecayPolicyPublic,
    FeedbackIn,
    FeedbackPublic,
    HistoryPublic,
    MemoryListPublic,
    MemoryStateName,
    RetireIn,
    RetirePublic,
    SupersedeIn,
    SupersedePublic,
    ValidateIn,
    ValidatePublic,
)
from api.services import browse, lifting, memories
from api.services.browse import SCOPE_KEY_PATTERN
from governance.scopes import MemoryType

__all__ = ["router"]

router = APIRouter(prefix="/v1/memories", tags=["memory lifecycle"])


@router.get("", response_model=MemoryListPublic)
async def list_memories(
    principal: CurrentPrincipal,
    resources: Resources,
    scope_key: Annotated[
        str,
        Query(
            max_length=600,
            pattern=SCOPE_KEY_PATTERN,
            description="`project:<org>/<project>`, `org:<org>`, `worktree:<org>/<project>/<worktree>`, "
            "`task:<id>`",
        ),
    ],
    q: Annotated[str | None, Query(max_length=500, description="Text in the title or content")] = None,
    types: Annotated[
        list[MemoryType] | None, Query(alias="type", description="Memory types (repeatable)")
    ] = None,
    min_trust: Annotated[float | None, Query(ge=0, le=1)] = None,
    max_trust: Annotated[float | None, Query(ge=0, le=1)] = None,
    state: MemoryStateName | None = None,
    offset: Annotated[int, Query(ge=0, le=2**31)] = 0,
    limit: Annotated[int, Query(ge=1, le=browse.BROWSE_PAGE_MAX)] = 50,
) -> MemoryListPublic:
    """One scope's memories, newest first, filtered by text, type, trust (confidence) range and state."""
    filters = browse.MemoryFilter(
        query=q,
        types=tuple(t.value for t in types or ()),
        min_trust=min_trust,
        max_trust=max_trust,
        state=state,
        offset=offset,
        limit=limit,
    )
    return await browse.browse_memories(resources, principal, scope_key, filters)


MemoryRef = Annotated[str, Path(description="A memory's uuid or citation", min_length=1, max_length=64)]


@router.post("/{memory_id}/validate", response_model=ValidatePublic)
async def validate_memory(
    body: ValidateIn,
    memory_id: MemoryRef,
    principal: CurrentPrincipal,
    resources: Resources,
    idempotency_key: IdempotencyKeyHeader = None,
) -> ValidatePublic:
    """Boost a memory's confidence by the validation source's amount (once per principal and source)."""
    body = with_header_key(body, idempotency_key)
    return await memories.validate(resources, principal, memory_id, body)


@router.post("/{memory_id}/feedback", response_model=FeedbackPublic)
async def memory_feedback(
    body: FeedbackIn,
    memory_id: MemoryRef,
    principal: CurrentPrincipal,
    resources: Resources,
    idempotency_key: IdempotencyKeyHeader = None,
) -> FeedbackPublic:
    """Record whether a memory helped: one vote per principal, the latest counts; usefulness follows them."""
    body = with_header_key(body, idempotency_key)
    return await memories.feedback(resources, principal, memory_id, body)


@router.put("/{memory_id}/decay-policy", response_model=DecayPolicyPublic)
async def set_decay_policy(
    body: DecayPolicyIn, memory_id: MemoryRef, principal: CurrentPrincipal, resources: Resources
) -> DecayPolicyPublic:
    """Set how the memory's confidence decays (`manual_only`: never by age); needs `approve` at its scope."""
    return await memories.set_decay_policy(resources, principal, memory_id, body)


# a change that waits for an approval answers 202 with the change request
PROPOSED: dict[int | str, dict[str, Any]] = {
    202: {"model": ChangeRequestPublic, "description": "A change request, awaiting approval"}
}


def _status(response: Response, result: object, applied: int) -> None:
    response.status_code = 202 if isinstance(result, ChangeRequestPublic) else applied


@router.post(
    "/{memory_id}/supersede",
    status_code=201,
    response_model=SupersedePublic | ChangeRequestPublic,
    responses=PROPOSED,
)
async def supersede(
    body: SupersedeIn,
    memory_id: MemoryRef,
    principal: CurrentPrincipal,
    resources: Resources,
    response: Response,
    idempotency_key: IdempotencyKeyHeader = None,
) -> SupersedePublic | ChangeRequestPublic:
    """Replace the head of a chain (201), or propose it for approval (202); 409 if not the head."""
    body = with_header_key(body, idempotency_key)
    result = await memories.supersede(resources, principal, memory_id, body)
    _status(response, result, 201)
    return result


@router.post("/{memory_id}/retire", response_model=RetirePublic | ChangeRequestPublic, responses=PROPOSED)
async def retire(
    body: RetireIn,
    memory_id: MemoryRef,
    principal: CurrentPrincipal,
    resources: Resources,
    response: Response,
    idempotency_key: IdempotencyKeyHeader = None,
) -> RetirePublic | ChangeRequestPublic:
    """Deprecate a memory without a successor (200), or propose it for approval (202); 409 if deprecated."""
    body = with_header_key(body, idempotency_key)
    result = await memories.retire(resources, principal, memory_id, body)
    _status(response, result, 200)
    return result


@router.post("/lift", status_code=201, response_model=ChangeRequestPublic, responses=PROPOSED)
async def lift(
    body: LiftIn,
    principal: CurrentPrincipal,
    resources: Resources,
    response: Response,
    idempotency_key: IdempotencyKeyHeader = None,
) -> ChangeRequestPublic:
    """Lift memories to a wider scope: applied at once (201), or a change request for approval (202)."""
    body = with_header_key(body, idempotency_key)
    result = await lifting.lift(resources, principal, body)
    response.status_code = 202 if result.state == "awaiting_approval" else 201
    return result


@router.get("/{memory_id}/history", response_model=HistoryPublic)
async def history(memory_id: MemoryRef, principal: CurrentPrincipal, resources: Resources) -> HistoryPublic:
    """The supersession chain through a memory, oldest first."""
    return await memories.history(resources, principal, memory_id)
