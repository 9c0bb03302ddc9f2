"""Trust and lifecycle of published memory over HTTP: validate, feedback, supersede, retire, history.

`{memory_id}` is a memory's uuid or its citation. The caller needs, in the memory's tenant and at the
memory's scope (Casbin): `write` to supersede or retire, `write` to report tests_passed / pr_merged /
repeated_success and `approve` to report human_approved, `read` to give feedback or read the history.
Each change is one statement with its event, in one transaction (governance/storage/lifecycle.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Depends, Path
from pydantic import BaseModel, Field
from sqlalchemy import text

from api.deps import AuthorizerDep, CurrentPrincipal, EngineDep, SettingsDep
from governance.embedders import embed_passages_async, make_embedder
from governance.errors import NotFound
from governance.identity import Principal
from governance.scopes import ValidationSource
from governance.storage.lifecycle import (
    boost_memory,
    memory_history,
    record_feedback,
    resolve_memory_id,
    retire_memory,
    supersede_memory,
)
from policy.enforcer import Authorizer

__all__ = ["router"]

router = APIRouter(prefix="/v1/memories", tags=["memory lifecycle"])

# which Casbin action reporting each validation source needs
VALIDATION_ACTION: dict[ValidationSource, str] = {
    ValidationSource.TESTS_PASSED: "write",
    ValidationSource.PR_MERGED: "write",
    ValidationSource.REPEATED_SUCCESS: "write",
    ValidationSource.HUMAN_APPROVED: "approve",
}

MemoryRef = Annotated[str, Path(description="A memory's uuid or citation", min_length=1, max_length=64)]
IdempotencyKey = Field(default=None, max_length=200, description="A retry with the same key changes nothing")


@dataclass(frozen=True)
class _Memory:
    id: str
    citation: str
    org: str
    project: str | None
    scope: str


async def _load(engine: EngineDep, memory_id: MemoryRef) -> _Memory:
    async with engine.connect() as conn:
        resolved = await resolve_memory_id(conn, memory_id)
        row = (
            await conn.execute(
                text(
                    "SELECT id::text AS id, citation, org, project, scope FROM memories "
                    "WHERE id = CAST(:i AS uuid)"
                ),
                {"i": resolved},
            )
        ).first()
    if row is None:
        raise NotFound(f"memory {memory_id!r} not found")
    return _Memory(row.id, row.citation, row.org, row.project, row.scope)


MemoryDep = Annotated[_Memory, Depends(_load)]


def _authorize(authorizer: Authorizer, principal: Principal, memory: _Memory, action: str) -> None:
    authorizer.check(principal, org=memory.org, project=memory.project, scope=memory.scope, action=action)


def _dedupe(principal: Principal, verb: str, key: str | None) -> str | None:
    return f"http:{principal.id}:{verb}:{key}" if key else None


class ValidateIn(BaseModel):
    """Evidence that a memory is right."""

    source: ValidationSource
    reason: str | None = Field(default=None, max_length=2000)
    idempotency_key: str | None = IdempotencyKey


class ValidatePublic(BaseModel):
    """The memory's confidence after the boost (capped at 1.0)."""

    id: str
    citation: str
    confidence: float
    validation_source: ValidationSource


class FeedbackIn(BaseModel):
    """Whether the memory helped."""

    helpful: bool
    idempotency_key: str | None = IdempotencyKey


class FeedbackPublic(BaseModel):
    """The memory's usefulness after the feedback (EMA, alpha 0.3)."""

    id: str
    citation: str
    usefulness: float


class SupersedeIn(BaseModel):
    """New content replacing the memory, and why."""

    content: str = Field(min_length=1, max_length=64 * 1024)
    reason: str = Field(min_length=1, max_length=2000)
    title: str | None = Field(default=None, max_length=500)
    canonical_key: str | None = Field(default=None, max_length=500)
    valid_from_commit: str | None = Field(default=None, max_length=100)
    idempotency_key: str | None = IdempotencyKey


class SupersedePublic(BaseModel):
    """The new head of the chain and the memory it replaced."""

    id: str
    citation: str
    superseded_id: str


class RetireIn(BaseModel):
    """Why the memory no longer holds."""

    reason: str = Field(min_length=1, max_length=2000)
    idempotency_key: str | None = IdempotencyKey


class RetirePublic(BaseModel):
    """The retired memory."""

    id: str
    citation: str
    retired: bool = True


class VersionPublic(BaseModel):
    """One link of a supersession chain."""

    id: str
    citation: str
    version: int
    title: str
    content: str
    canonical_key: str | None
    scope_key: str
    confidence: float
    supersedes_id: str | None
    active: bool
    deprecated_at: datetime | None
    valid_from_commit: str | None
    valid_to_commit: str | None
    contradiction_note: str | None
    created_at: datetime


class HistoryPublic(BaseModel):
    """The whole chain through the memory, oldest first."""

    id: str
    versions: list[VersionPublic]


@router.post("/{memory_id}/validate", response_model=ValidatePublic)
async def validate_memory(
    body: ValidateIn,
    memory: MemoryDep,
    principal: CurrentPrincipal,
    authorizer: AuthorizerDep,
    engine: EngineDep,
) -> ValidatePublic:
    """Boost a memory's confidence by the validation source's amount (seed 003)."""
    _authorize(authorizer, principal, memory, VALIDATION_ACTION[body.source])
    async with engine.begin() as conn:
        confidence = await boost_memory(
            conn,
            memory.id,
            body.source,
            actor_id=principal.id,
            actor_type=principal.actor_type.value,
            reason=body.reason,
            dedupe_key=_dedupe(principal, "validate", body.idempotency_key),
        )
    return ValidatePublic(
        id=memory.id, citation=memory.citation, confidence=confidence, validation_source=body.source
    )


@router.post("/{memory_id}/feedback", response_model=FeedbackPublic)
async def memory_feedback(
    body: FeedbackIn,
    memory: MemoryDep,
    principal: CurrentPrincipal,
    authorizer: AuthorizerDep,
    engine: EngineDep,
) -> FeedbackPublic:
    """Record whether a memory helped; usefulness moves by an exponential moving average."""
    _authorize(authorizer, principal, memory, "read")
    async with engine.begin() as conn:
        usefulness = await record_feedback(
            conn,
            memory.id,
            body.helpful,
            actor_id=principal.id,
            actor_type=principal.actor_type.value,
            dedupe_key=_dedupe(principal, "feedback", body.idempotency_key),
        )
    return FeedbackPublic(id=memory.id, citation=memory.citation, usefulness=usefulness)


@router.post("/{memory_id}/supersede", status_code=201, response_model=SupersedePublic)
async def supersede(
    body: SupersedeIn,
    memory: MemoryDep,
    principal: CurrentPrincipal,
    authorizer: AuthorizerDep,
    engine: EngineDep,
    settings: SettingsDep,
) -> SupersedePublic:
    """Replace the head of a chain with new content; 409 if the memory is not the head."""
    _authorize(authorizer, principal, memory, "write")
    title = body.title or ""
    vectors = await embed_passages_async(
        make_embedder(settings), [f"{title}: {body.content}" if title else body.content]
    )
    async with engine.begin() as conn:
        outcome = await supersede_memory(
            conn,
            memory.id,
            content=body.content,
            reason=body.reason,
            title=body.title,
            canonical_key=body.canonical_key,
            embedding=[float(x) for x in vectors[0]],
            valid_from_commit=body.valid_from_commit,
            actor_id=principal.id,
            actor_type=principal.actor_type.value,
            dedupe_key=_dedupe(principal, "supersede", body.idempotency_key),
        )
    return SupersedePublic(id=outcome.memory_id, citation=outcome.citation, superseded_id=memory.id)


@router.post("/{memory_id}/retire", response_model=RetirePublic)
async def retire(
    body: RetireIn,
    memory: MemoryDep,
    principal: CurrentPrincipal,
    authorizer: AuthorizerDep,
    engine: EngineDep,
) -> RetirePublic:
    """Deprecate a memory without a successor; 409 if it is already deprecated."""
    _authorize(authorizer, principal, memory, "write")
    async with engine.begin() as conn:
        await retire_memory(
            conn,
            memory.id,
            reason=body.reason,
            actor_id=principal.id,
            actor_type=principal.actor_type.value,
            dedupe_key=_dedupe(principal, "retire", body.idempotency_key),
        )
    return RetirePublic(id=memory.id, citation=memory.citation)


@router.get("/{memory_id}/history", response_model=HistoryPublic)
async def history(
    memory: MemoryDep, principal: CurrentPrincipal, authorizer: AuthorizerDep, engine: EngineDep
) -> HistoryPublic:
    """The supersession chain through a memory, oldest first."""
    _authorize(authorizer, principal, memory, "read")
    async with engine.connect() as conn:
        chain = await memory_history(conn, memory.id)
    return HistoryPublic(
        id=memory.id,
        versions=[
            VersionPublic(
                id=v.id,
                citation=v.citation,
                version=v.version,
                title=v.title,
                content=v.content,
                canonical_key=v.canonical_key,
                scope_key=v.scope_key,
                confidence=v.confidence,
                supersedes_id=v.supersedes_id,
                active=v.deprecated_at is None,
                deprecated_at=v.deprecated_at,
                valid_from_commit=v.valid_from_commit,
                valid_to_commit=v.valid_to_commit,
                contradiction_note=v.contradiction_note,
                created_at=v.created_at,
            )
            for v in chain
        ],
    )
