"""What publishing one planned memory did, and what a plan item is near: records the gate's steps return."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PublishedMemory", "NearbyMemory"]


@dataclass
class PublishedMemory:
    """One published memory: promoted (new), merged into a duplicate, or superseding an older head."""

    memory_id: str
    citation: str
    action: str
    memory_type: str
    title: str
    superseded_id: str | None
    replayed: bool


@dataclass
class NearbyMemory:
    """A published memory near a plan item (its nearest at the target scope): ids and similarity.

    `title` is empty where it travels through Temporal (workflows/promotion.py shows citations there).
    """

    memory_id: str
    citation: str
    title: str
    similarity: float
