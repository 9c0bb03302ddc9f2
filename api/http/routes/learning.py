"""Memory that learns, over HTTP: bug patterns matched to an error; code rules observed, weak ones listed,
proposed from patches."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Response

from api.http.deps import CurrentPrincipal, Resources, TaskFor
from api.http.idempotency import IdempotencyKeyHeader, with_header_key
from api.schemas.learning import (
    BugMatchIn,
    BugMatchPublic,
    ObservationIn,
    ObservationPublic,
    RuleCandidatesPublic,
)
from api.schemas.patterns import CorrectionIn, CorrectionPublic, FromPatchIn, FromPatchPublic
from api.services import bug_patterns, code_rules, corrections, patch_patterns
from governance.storage.staging import TaskInfo

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["learning"])


@router.post("/bug-patterns/match", response_model=BugMatchPublic)
async def match_bug_patterns(
    body: BugMatchIn, resources: Resources, principal: CurrentPrincipal
) -> BugMatchPublic:
    """Bug patterns matching an error: same signature first, then nearest, best solutions first."""
    return await bug_patterns.match(resources, principal, body)


@router.post("/memories/{ref}/observations", response_model=ObservationPublic)
async def observe_code_rule(
    ref: Annotated[str, Path(max_length=64, description="`mem:<citation>`, the citation, or the memory id")],
    body: ObservationIn,
    resources: Resources,
    principal: CurrentPrincipal,
) -> ObservationPublic:
    """Report how a code rule fared (orchestrators and humans); its confidence moves by EMA (α 0.2)."""
    return await code_rules.observe(resources, principal, ref, body)


@router.get("/code-rules/candidates", response_model=RuleCandidatesPublic)
async def code_rule_candidates(resources: Resources, principal: CurrentPrincipal) -> RuleCandidatesPublic:
    """Code rules below 0.3 you may read: candidates to retire, weakest first."""
    return await code_rules.candidates(resources, principal)


@router.post(
    "/code-rules/from-patch",
    response_model=FromPatchPublic,
    status_code=201,
    responses={200: {"model": FromPatchPublic, "description": "No pattern found: nothing staged"}},
)
async def code_rules_from_patch(
    body: FromPatchIn,
    resources: Resources,
    principal: CurrentPrincipal,
    response: Response,
    idempotency_key: IdempotencyKeyHeader = None,
) -> FromPatchPublic:
    """Stage the code patterns a unified diff shows into a task, as rule proposals for its promotion."""
    body = with_header_key(body, idempotency_key)
    answer = await patch_patterns.from_patch(resources, principal, body)
    if not answer.proposals:
        response.status_code = 200  # nothing staged
    return answer


@router.post("/tasks/{task_id}/corrections", response_model=CorrectionPublic, status_code=201)
async def correct(
    body: CorrectionIn,
    resources: Resources,
    principal: CurrentPrincipal,
    task: Annotated[TaskInfo, Depends(TaskFor("read"))],
    idempotency_key: IdempotencyKeyHeader = None,
) -> CorrectionPublic:
    """A human corrects an agent's work in a task; the same correction in N tasks proposes a preference."""
    body = with_header_key(body, idempotency_key)
    return await corrections.correct(resources, principal, task, body)
