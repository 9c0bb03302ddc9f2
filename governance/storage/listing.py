"""Published memory listed by scope, for people browsing it (the console): filters, no ranking.

Search ranks what a task sees (storage/retrieval.py); this lists one scope instance (`scope_key`) in a stable
order, newest first, with the filters a reviewer uses: memory types, a trust (confidence) range, a lifecycle
state and a plain substring match on title and content. Who may list a scope is the services' question.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from sqlalchemy import and_, exists, false, func, literal, not_, or_, select
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import ColumnElement

from governance.storage.tables import memories

__all__ = ["MemoryState", "MemoryRow", "list_memories"]


class MemoryState(StrEnum):
    """Where a memory stands in its life, as the browser filters it."""

    ACTIVE = "active"  # not deprecated, not past expires_at
    SUPERSEDED = "superseded"  # deprecated, and a newer version names it
    RETIRED = "retired"  # deprecated without a successor (retired, pruned or expired by retention)
    EXPIRED = "expired"  # past expires_at (whether or not retention has deprecated it yet)


@dataclass(frozen=True)
class MemoryRow:
    """A memory as a listing shows it."""

    id: str
    citation: str
    memory_type: str
    scope: str
    scope_key: str
    title: str
    confidence: float
    version: int
    created_at: datetime
    deprecated_at: datetime | None
    expires_at: datetime | None
    state: MemoryState


def _successor_exists() -> ColumnElement[bool]:
    newer = memories.alias("newer")
    return exists(select(literal(1)).select_from(newer).where(newer.c.supersedes_id == memories.c.id))


def _expired() -> ColumnElement[bool]:
    return and_(memories.c.expires_at.is_not(None), memories.c.expires_at <= func.now())


def _state_filter(state: MemoryState) -> ColumnElement[bool]:
    deprecated = memories.c.deprecated_at.is_not(None)
    if state is MemoryState.ACTIVE:
        return and_(not_(deprecated), not_(_expired()))
    if state is MemoryState.SUPERSEDED:
        return and_(deprecated, _successor_exists())
    if state is MemoryState.RETIRED:
        return and_(deprecated, not_(_successor_exists()), not_(_expired()))
    return _expired()


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


async def list_memories(
    conn: AsyncConnection,
    scope_key: str,
    *,
    query: str | None = None,
    types: Sequence[str] = (),
    min_trust: float | None = None,
    max_trust: float | None = None,
    state: MemoryState | None = None,
    limit: int = 50,
    offset: int = 0,
) -> list[MemoryRow]:
    """The memories of one scope key that pass every filter given, newest first."""
    if "\x00" in scope_key or (query and "\x00" in query):  # Postgres text never holds NUL: nothing matches
        return []
    successor = _successor_exists().label("has_successor")
    expired = _expired().label("is_expired")
    conditions: list[ColumnElement[bool]] = [memories.c.scope_key == scope_key]
    if query:
        pattern = f"%{_escape_like(query)}%"
        conditions.append(
            or_(memories.c.title.ilike(pattern, escape="\\"), memories.c.content.ilike(pattern, escape="\\"))
        )
    if types:
        conditions.append(memories.c.memory_type.in_(list(types)))
    if min_trust is not None:
        conditions.append(memories.c.confidence >= min_trust)
    if max_trust is not None:
        conditions.append(memories.c.confidence <= max_trust)
    if state is not None:
        conditions.append(_state_filter(state))
    if min_trust is not None and max_trust is not None and min_trust > max_trust:
        conditions.append(false())
    statement = (
        select(
            memories.c.id,
            memories.c.citation,
            memories.c.memory_type,
            memories.c.scope,
            memories.c.scope_key,
            memories.c.title,
            memories.c.confidence,
            memories.c.version,
            memories.c.created_at,
            memories.c.deprecated_at,
            memories.c.expires_at,
            successor,
            expired,
        )
        .where(*conditions)
        .order_by(memories.c.created_at.desc(), memories.c.id)
        .limit(limit)
        .offset(offset)
    )
    rows = (await conn.execute(statement)).all()
    return [
        MemoryRow(
            id=str(r.id),
            citation=r.citation,
            memory_type=r.memory_type,
            scope=r.scope,
            scope_key=r.scope_key,
            title=r.title,
            confidence=r.confidence,
            version=r.version,
            created_at=r.created_at,
            deprecated_at=r.deprecated_at,
            expires_at=r.expires_at,
            state=_state_of(r.deprecated_at, r.has_successor, r.is_expired),
        )
        for r in rows
    ]


def _state_of(deprecated_at: datetime | None, has_successor: bool, is_expired: bool) -> MemoryState:
    if deprecated_at is not None and has_successor:
        return MemoryState.SUPERSEDED
    if is_expired:
        return MemoryState.EXPIRED
    return MemoryState.ACTIVE if deprecated_at is None else MemoryState.RETIRED
