"""Circular-fix detection over HTTP: record an attempted approach, ask whether a proposal already failed.

Both need `write` on the task (the check counts refusals and may mark the subtask stuck). The logic is in
governance/approaches.py and governance/storage/approaches.py; the same calls back the activity.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, Field

from api import service
from api.deps import CurrentPrincipal, EngineDep, SettingsDep, TaskFor
from governance.approaches import ApproachOutcome, PastApproach
from governance.embedders import embed_passages_async, make_embedder
from governance.storage.approaches import record_attempt
from governance.storage.staging import TaskInfo

__all__ = ["router"]

router = APIRouter(prefix="/v1/tasks", tags=["approaches"])


class ApproachIn(BaseModel):
    """One attempted approach and how it ended."""

    approach: str = Field(min_length=1, max_length=8000)
    outcome: ApproachOutcome
    reason: str | None = Field(default=None, max_length=4000)
    subtask: str = Field(default="", max_length=500)
    idempotency_key: str | None = Field(default=None, max_length=200)


class CheckIn(BaseModel):
    """A proposed approach."""

    approach: str = Field(min_length=1, max_length=8000)
    subtask: str = Field(default="", max_length=500)


class ApproachPublic(BaseModel):
    """An approach as recorded for a task/subtask."""

    approach: str
    attempts: int
    failures: int
    last_outcome: str
    failure_reasons: list[str]
    last_attempt_at: datetime
    similarity: float | None = None


class CheckPublic(BaseModel):
    """`valid: false` when the approach (or a near-duplicate) already failed, with history and suggestion."""

    valid: bool
    reason: str
    suggestion: str | None
    stuck: bool
    refusals: int
    history: list[ApproachPublic]


def public_approach(p: PastApproach) -> ApproachPublic:
    """An approach as the API shows it (shared with the gRPC gateway through api/service.py)."""
    return ApproachPublic(
        approach=p.approach,
        attempts=p.attempts,
        failures=p.failures,
        last_outcome=p.last_outcome,
        failure_reasons=list(p.failure_reasons),
        last_attempt_at=p.last_attempt_at,
        similarity=p.similarity,
    )


async def _embed(settings: SettingsDep, text: str) -> list[float]:
    return [float(x) for x in (await embed_passages_async(make_embedder(settings), [text]))[0]]


@router.post("/{task_id}/approaches", status_code=201, response_model=ApproachPublic)
async def record_approach(
    body: ApproachIn,
    task: Annotated[TaskInfo, Depends(TaskFor("write"))],
    principal: CurrentPrincipal,
    engine: EngineDep,
    settings: SettingsDep,
) -> ApproachPublic:
    """Record an attempted approach and its outcome (failures keep their reason)."""
    embedding = await _embed(settings, body.approach)
    async with engine.begin() as conn:
        past = await record_attempt(
            conn,
            task_id=task.id,
            subtask=body.subtask,
            approach=body.approach,
            outcome=body.outcome,
            reason=body.reason,
            embedding=embedding,
            actor_id=principal.id,
            actor_type=principal.actor_type.value,
            idempotency_key=f"http:{principal.id}:approach:{body.idempotency_key}"
            if body.idempotency_key
            else None,
        )
    return public_approach(past)


@router.post("/{task_id}/approaches/check", response_model=CheckPublic)
async def check_approach(
    body: CheckIn,
    request: Request,
    task: Annotated[TaskInfo, Depends(TaskFor("write"))],
    principal: CurrentPrincipal,
) -> CheckPublic:
    """Has this approach (or a near-duplicate) already failed on this task? Refusals may mark it stuck."""
    return await service.check_approach(request.app.state, principal, task, body)
