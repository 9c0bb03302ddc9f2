"""Reflection's last step: link published insights to the episodes they were distilled from.

`link_distilled` runs in the transaction that records how a reflection ended: insight → episode
`memory_derivations` (so an insight goes stale with its sources) and one DISTILLED event per episode, once
(keyed by the reflection and the episode), so the retention rules may take a distilled episode.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncConnection

from governance.storage.derivations import record_derivations
from governance.storage.events import Event, EventType, record_events
from governance.storage.reflections import InsightLink, existing_memory_ids

__all__ = ["link_distilled"]


async def link_distilled(
    conn: AsyncConnection,
    links: Sequence[InsightLink],
    *,
    reflection_id: str,
    task_id: str,
    workflow_id: str,
    actor_id: str,
) -> int:
    """Write insight → episode derivations and one DISTILLED event per episode (once); returns new links."""
    # an episode erased meanwhile is left out
    alive = await existing_memory_ids(conn, {e for link in links for e in link.episode_ids})
    pairs = [(link.memory_id, e) for link in links for e in link.episode_ids if e in alive]
    added = await record_derivations(conn, pairs, task_id=task_id)
    into: dict[str, list[str]] = {}
    for insight, episode in pairs:
        into.setdefault(episode, []).append(insight)
    await record_events(
        conn,
        [
            Event(
                event_type=EventType.DISTILLED,
                actor_id=actor_id,
                actor_type="system",
                memory_id=episode,
                task_id=task_id,
                workflow_id=workflow_id,
                reason=f"distilled into {len(insights)} insight(s) by reflection {reflection_id}",
                payload={"insights": sorted(insights), "reflection": reflection_id},
                idempotency_key=f"{reflection_id}:distilled:{episode}",
            )
            for episode, insights in sorted(into.items())
        ],
        if_absent=True,
    )
    return added
