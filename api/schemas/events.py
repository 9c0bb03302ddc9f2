"""Request and response models of the readable audit trail (`memory_events`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

__all__ = ["MAX_EVENTS_PAGE", "CURSOR_PATTERN", "EventKind", "EventPublic", "EventsPage"]

MAX_EVENTS_PAGE = 200
# the cursors this API gives out: an event id
CURSOR_PATTERN = r"^[0-9]{1,18}$"

# every `memory_events` type (governance/storage/events.py `EventType`; a test keeps the two equal), spelled
# out here so the schema states them and the client imports no storage code
EventKind = Literal[
    "PROMOTED",
    "MERGED",
    "SUPERSEDED",
    "BOOSTED",
    "DECAYED",
    "EXPIRED",
    "PRUNED",
    "RETIRED",
    "STALE",
    "CONFIRMED",
    "APPROVED",
    "REJECTED",
    "FEEDBACK",
    "STUCK",
    "APPROACH",
    "APPROACH_REFUSED",
    "PROMOTION",
    "APPROVAL_GRANT",
    "STAGING_ARCHIVED",
    "ERASED",
    "OBSERVED",
    "RESTORED",
    "LIFTED",
    "DISTILLED",
    "DECAY_POLICY",
    "ITEM_REJECTED",
    "ITEM_EDITED",
]


class EventPublic(BaseModel):
    """One audit event: what happened to which memory or task, who did it, why, and when."""

    id: int
    type: str
    memory_id: str | None
    citation: str | None
    actor_id: str | None
    actor_type: str | None
    task_id: str | None
    workflow_id: str | None
    reason: str | None
    payload: dict[str, Any] | None
    created_at: datetime


class EventsPage(BaseModel):
    """A page of events; pass `next_cursor` as `cursor` for the next page (None: no more)."""

    events: list[EventPublic]
    next_cursor: str | None = Field(
        default=None, description="Opaque; the next page starts after the last event of this one"
    )
