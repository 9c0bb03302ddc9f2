"""Moving trust: a validation, a feedback vote, an observation of a code rule, a decay policy chosen.

Each is one transaction over an input already authorised (the caller may act at the memory's scope): the
involvement check and the statement that moves the memory run in it, so a principal involved in the memory
(it wrote its source, opened its task, published, merged, lifted or superseded it: storage/trust.py) is
refused with nothing written (`SelfEndorsement`, `trust.self_endorsement_refusal`). The arithmetic is
`governance/trust.py`'s and runs inside the single statement that applies it (storage/memory_changes.py,
storage/code_rules.py): never a read-modify-write here.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from governance.errors import SelfEndorsement
from governance.scopes import ValidationSource
from governance.storage import decay_policy
from governance.storage.code_rules import Observation, observe_rule
from governance.storage.memory_changes import Validation, boost_memory, record_feedback
from governance.storage.trust import involvement_of
from governance.trust import RuleOutcome, self_endorsement_refusal

__all__ = [
    "Endorser",
    "involved",
    "refuse_self_endorsement",
    "validate",
    "feedback",
    "observe",
    "set_decay_policy",
]


@dataclass(frozen=True)
class Endorser:
    """Who moves a memory's trust, and the idempotency key and request hash its call is bound to."""

    actor_id: str
    actor_type: str
    idempotency_key: str | None = None
    request_hash: str | None = None


async def involved(conn: AsyncConnection, actor_id: str, memory_id: str) -> bool:
    """Whether the actor authored, published, superseded or wrote the staging of the memory: its use, vote
    or validation of that memory moves nothing (docs/trust.md)."""
    return actor_id in (await involvement_of(conn, memory_id)).everyone


async def refuse_self_endorsement(conn: AsyncConnection, actor_id: str, memory_id: str, what: str) -> None:
    """SelfEndorsement when `actor_id` is involved in the memory (`trust.self_endorsement_refusal`)."""
    refusal = self_endorsement_refusal(actor_id, await involvement_of(conn, memory_id), what)
    if refusal is not None:
        raise SelfEndorsement(refusal)


@asynccontextmanager
async def _endorsing(
    engine: AsyncEngine, by: Endorser, memory_id: str, what: str
) -> AsyncIterator[AsyncConnection]:
    """One transaction in which `by` may move the memory's trust: refused first if it is involved in it."""
    async with engine.begin() as conn:
        await refuse_self_endorsement(conn, by.actor_id, memory_id, what)
        yield conn


async def validate(
    engine: AsyncEngine, memory_id: str, source: ValidationSource, by: Endorser, *, reason: str | None
) -> Validation:
    """Boost a memory by the source's amount, once per (principal, source), under `trust.boost_ceiling`."""
    async with _endorsing(engine, by, memory_id, "validation") as conn:
        return await boost_memory(
            conn,
            memory_id,
            source,
            actor_id=by.actor_id,
            actor_type=by.actor_type,
            reason=reason,
            idempotency_key=by.idempotency_key,
            request_hash=by.request_hash,
        )


async def feedback(engine: AsyncEngine, memory_id: str, helpful: bool, by: Endorser) -> float:
    """Record whether a memory helped (one vote per principal, its latest); its usefulness after the vote."""
    async with _endorsing(engine, by, memory_id, "feedback") as conn:
        return await record_feedback(
            conn,
            memory_id,
            helpful,
            actor_id=by.actor_id,
            actor_type=by.actor_type,
            idempotency_key=by.idempotency_key,
            request_hash=by.request_hash,
        )


async def observe(
    engine: AsyncEngine,
    memory_id: str,
    outcome: RuleOutcome,
    by: Endorser,
    *,
    note: str | None,
    task_id: str | None,
) -> Observation:
    """One observation of a code rule: an EMA step towards the outcome, once per (principal, task)."""
    async with _endorsing(engine, by, memory_id, "observation") as conn:
        return await observe_rule(
            conn,
            memory_id,
            outcome,
            actor_id=by.actor_id,
            actor_type=by.actor_type,
            note=note,
            task_id=task_id,
        )


async def set_decay_policy(
    engine: AsyncEngine, memory_id: str, policy: str, by: Endorser, *, reason: str | None
) -> bool:
    """Set how a memory's confidence decays, with its event; whether it changed."""
    async with engine.begin() as conn:
        return await decay_policy.set_decay_policy(
            conn, memory_id, policy, actor_id=by.actor_id, actor_type=by.actor_type, reason=reason
        )
