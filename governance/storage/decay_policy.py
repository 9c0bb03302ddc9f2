"""Setting how a memory's confidence decays (`memories.decay_policy`), with its event.

`updated_at` is left alone: it is the memory's recency in search, and the policy changes nothing it says.
"""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from governance.errors import NotFound
from governance.storage.events import EventType, record_event

__all__ = ["set_decay_policy"]

_SET = text(
    """
    WITH old AS (SELECT decay_policy FROM memories WHERE id = CAST(:id AS uuid) FOR UPDATE)
    UPDATE memories m SET decay_policy = CAST(:policy AS varchar)
    FROM old WHERE m.id = CAST(:id AS uuid)
    RETURNING old.decay_policy AS before
    """
)


async def set_decay_policy(
    conn: AsyncConnection, memory_id: str, policy: str, *, actor_id: str, actor_type: str, reason: str | None
) -> bool:
    """Set the policy; True if it changed (then a DECAY_POLICY event records from what, to what and why)."""
    row = (await conn.execute(_SET, {"id": memory_id, "policy": policy})).first()
    if row is None:
        raise NotFound(f"memory {memory_id!r} does not exist")
    if row.before == policy:
        return False
    await record_event(
        conn,
        event_type=EventType.DECAY_POLICY,
        actor_id=actor_id,
        actor_type=actor_type,
        memory_id=memory_id,
        reason=reason or f"decay policy {row.before} -> {policy}",
        payload={"from": row.before, "to": policy},
    )
    return True
