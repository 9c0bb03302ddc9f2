"""What the gate's steps return: a plan item as a workflow shows it, what it is near, what publishing did.

Shared by the `plan` and `publish` activities and the promotion's public contract (which re-exports
`PlanItem` as `PlanEntry`, its first name), so one plan-item shape travels through Temporal.
"""

# no `from __future__ import annotations`: Temporal's converter resolves these hints at run time, inside
# the workflow sandbox too, so they stay real types there
from dataclasses import dataclass, field

__all__ = ["PlanItem", "PublishedMemory", "NearbyMemory"]


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


@dataclass
class PlanItem:
    """One plan item as the workflow shows it (no embeddings, no content; title and reason shortened).

    The workflow holds the first few items only (the history stays small however large the task); the
    whole plan, with full contents, is in the database and the API serves it page by page
    (`GET /v1/promotions/{task_id}/plan`). `index` is the item's place in the plan.
    """

    memory_type: str
    title: str
    content: str
    canonical_key: str | None
    decision: str
    target_id: str | None
    similarity: float | None
    reason: str
    # what an approver weighs in the Temporal UI, still without content: the target's short title, trust and
    # the approver recorded when it was published (supersede, duplicate); the nearest memories (new)
    target_title: str | None = None
    target_trust: float | None = None
    target_approved_by: str | None = None
    nearest: list[NearbyMemory] = field(default_factory=list)
    index: int = 0
