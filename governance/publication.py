"""What publishing one planned memory did: the record the gate's publish step returns and its status shows."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PublishedMemory"]


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
