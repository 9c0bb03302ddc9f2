"""A memory's derivation links in both directions, for its page: what it builds on and what builds on it.

`memory_derivations` (storage/derivations.py writes it) links a memory built on others (a skill or a bug
pattern from a decision, an insight from episodes) to its sources. A reviewer on a memory's page reads both
sides with titles and states, so a change to a source shows what it makes stale.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

__all__ = ["LinkedMemory", "DerivationLinks", "derivation_links", "derivation_sources", "LINKS_LIMIT"]

# a page lists at most this many links each way (an insight can rest on many episodes)
LINKS_LIMIT = 200


@dataclass(frozen=True)
class LinkedMemory:
    """A memory at the other end of a derivation link: enough to name it, judge it and link to it."""

    id: str
    citation: str
    title: str
    memory_type: str
    scope: str
    org: str
    project: str | None
    active: bool
    stale_at: datetime | None


@dataclass(frozen=True)
class DerivationLinks:
    """The memories one memory is derived from, and those derived from it."""

    sources: list[LinkedMemory]
    derived: list[LinkedMemory]


_LINKS = text(
    """
    SELECT 'source' AS side, m.id::text AS id, m.citation, m.title, m.memory_type, m.scope, m.org, m.project,
           m.deprecated_at IS NULL AS active, m.stale_at, d.created_at
    FROM memory_derivations d JOIN memories m ON m.id = d.derived_from_id
    WHERE d.memory_id = CAST(:id AS uuid)
    UNION ALL
    SELECT 'derived', m.id::text, m.citation, m.title, m.memory_type, m.scope, m.org, m.project,
           m.deprecated_at IS NULL, m.stale_at, d.created_at
    FROM memory_derivations d JOIN memories m ON m.id = d.memory_id
    WHERE d.derived_from_id = CAST(:id AS uuid)
    ORDER BY side, created_at, citation
    LIMIT :limit
    """
)


async def derivation_links(conn: AsyncConnection, memory_id: str) -> DerivationLinks:
    """Both sides of `memory_id`'s derivation links (at most LINKS_LIMIT in all), oldest link first."""
    rows = await conn.execute(_LINKS, {"id": memory_id, "limit": 2 * LINKS_LIMIT})
    links = DerivationLinks(sources=[], derived=[])
    for r in rows:
        side = links.sources if r.side == "source" else links.derived
        if len(side) < LINKS_LIMIT:
            side.append(
                LinkedMemory(
                    id=r.id,
                    citation=r.citation,
                    title=r.title,
                    memory_type=r.memory_type,
                    scope=r.scope,
                    org=r.org,
                    project=r.project,
                    active=bool(r.active),
                    stale_at=r.stale_at,
                )
            )
    return links


async def derivation_sources(conn: AsyncConnection, memory_ids: Sequence[str]) -> dict[str, list[str]]:
    """The citations each memory builds on, by memory id (oldest link first)."""
    if not memory_ids:
        return {}
    rows = await conn.execute(
        text(
            """
            SELECT d.memory_id::text AS id, s.citation FROM memory_derivations d
            JOIN memories s ON s.id = d.derived_from_id
            WHERE d.memory_id = ANY(CAST(:ids AS uuid[])) ORDER BY d.created_at, s.citation
            """
        ),
        {"ids": list(memory_ids)},
    )
    found: dict[str, list[str]] = {}
    for r in rows:
        found.setdefault(r.id, []).append(r.citation)
    return found
