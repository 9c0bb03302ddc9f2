"""Who is involved in a memory, and the standing of memories, read for the trust rules (governance/trust.py).

A memory's involved principals are read from what is already recorded, so nothing new has to be written
for them:
- **authors**: the principals who wrote staging entries of its source tasks, and who opened those tasks;
- **publishers**: the actors of its PROMOTED, MERGED, SUPERSEDED, LIFTED and RESTORED events, and the
  requesters of the change requests whose result it is (a supersede or lift proposed through the gate).
A memory built on others (a lifted copy on its original, a skill on a fact, an insight on episodes:
`memory_derivations`) carries their involvement too: it is the same knowledge, or made of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from governance.trust import Involvement, Standing, standing_of

__all__ = [
    "CONFIRMERS",
    "MemoryStanding",
    "involvement_of",
    "took_part_in",
    "standings_of",
    "independent_validators",
]

_PUBLISHING_EVENTS = ("PROMOTED", "MERGED", "SUPERSEDED", "LIFTED", "RESTORED")
# the distinct principals who confirmed memory `m`: counted validations and counted followed_passed
# observations (a column expression over the alias `m`)
CONFIRMERS = """(
    SELECT count(DISTINCT c.actor_id) FROM (
        SELECT v.actor_id FROM memory_validations v WHERE v.memory_id = m.id
        UNION
        SELECT e.actor_id FROM memory_events e
        WHERE e.memory_id = m.id AND e.event_type = 'OBSERVED'
          AND e.payload->>'outcome' = 'followed_passed' AND e.payload->>'counted' = 'true'
    ) c
)"""


@dataclass(frozen=True)
class MemoryStanding:
    """A memory's trust as the context block shows it."""

    id: str
    confidence: float
    validation_source: str | None
    confirmers: int = 0

    @property
    def standing(self) -> Standing:
        """human-approved, verified or unreviewed (`trust.standing_of`)."""
        return standing_of(self.validation_source, self.confidence, self.confirmers)


async def involvement_of(conn: AsyncConnection, memory_id: str) -> Involvement:
    """The principals involved in `memory_id` and in the memories it builds on (four links deep)."""
    rows = await conn.execute(
        text(
            """
            WITH RECURSIVE line AS (
                SELECT CAST(:id AS uuid) AS id, 0 AS depth
                UNION
                SELECT d.derived_from_id, l.depth + 1
                FROM memory_derivations d JOIN line l ON d.memory_id = l.id
                WHERE l.depth < 4
            ), tasks_of AS (
                SELECT DISTINCT unnest(m.source_task_ids) AS task_id
                FROM memories m JOIN line l ON m.id = l.id
            )
            SELECT 'author' AS how, s.actor_id FROM staging_entries s
                WHERE s.task_id IN (SELECT task_id FROM tasks_of)
            UNION
            SELECT 'author', t.created_by FROM tasks t WHERE t.id IN (SELECT task_id FROM tasks_of)
            UNION
            SELECT 'publisher', e.actor_id FROM memory_events e
                WHERE e.memory_id IN (SELECT id FROM line) AND e.event_type = ANY(:events)
                  AND e.actor_id IS NOT NULL
            UNION
            SELECT 'publisher', c.requested_by FROM change_requests c
                WHERE c.result_memory_id IN (SELECT id FROM line)
            UNION
            SELECT 'publisher', c.requested_by FROM change_requests c
                JOIN change_request_items i ON i.request_id = c.id
                WHERE i.result_memory_id IN (SELECT id FROM line)
            """
        ),
        {"id": memory_id, "events": list(_PUBLISHING_EVENTS)},
    )
    authors: set[str] = set()
    publishers: set[str] = set()
    for how, actor in rows:
        (authors if how == "author" else publishers).add(str(actor))
    return Involvement(authors=frozenset(authors), publishers=frozenset(publishers))


async def took_part_in(conn: AsyncConnection, task_key: str, principal_id: str) -> bool:
    """Whether the principal opened the task (by its key), wrote in its staging or asked for a promotion."""
    return bool(
        (
            await conn.execute(
                text(
                    "SELECT EXISTS (SELECT 1 FROM tasks WHERE id = :t AND created_by = :p) "
                    "OR EXISTS (SELECT 1 FROM staging_entries WHERE task_id = :t AND actor_id = :p) "
                    "OR EXISTS (SELECT 1 FROM promotions WHERE task_id = :t AND requested_by = :p)"
                ),
                {"t": task_key, "p": principal_id},
            )
        ).scalar_one()
    )


async def standings_of(conn: AsyncConnection, ids: Sequence[str]) -> dict[str, MemoryStanding]:
    """The trust of the memories `ids` by id (unknown ids are left out)."""
    if not ids:
        return {}
    rows = await conn.execute(
        text(
            f"SELECT m.id::text AS id, m.confidence, m.validation_source, {CONFIRMERS} AS confirmers "
            "FROM memories m WHERE m.id = ANY(CAST(:ids AS uuid[]))"
        ),
        {"ids": list(ids)},
    )
    return {
        r.id: MemoryStanding(r.id, float(r.confidence), r.validation_source, int(r.confirmers)) for r in rows
    }


async def independent_validators(conn: AsyncConnection, memory_id: str, *, besides: str) -> int:
    """Distinct principals other than `besides` whose validation of the memory counted."""
    row = (
        await conn.execute(
            text(
                "SELECT count(DISTINCT actor_id) AS n FROM memory_validations "
                "WHERE memory_id = CAST(:id AS uuid) AND actor_id <> :actor"
            ),
            {"id": memory_id, "actor": besides},
        )
    ).one()
    return int(row.n)
