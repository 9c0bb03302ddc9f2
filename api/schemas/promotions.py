"""Request and response models of the promotion gate (HTTP, gRPC, CLI and client share them)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from api.schemas.text import Text
from governance.item_decisions import MAX_REASON_CHARS, MAX_TITLE_CHARS
from governance.scopes import Scope, ValidationSource
from governance.validity import COMMIT_PATTERN
from workflows.promotion_contract import PromotionState

__all__ = [
    "PromotionState",
    "VerificationIn",
    "PromotionStart",
    "DecisionIn",
    "ItemDecisionIn",
    "MAX_ITEM_DECISIONS",
    "PromotionStarted",
    "VerificationPublic",
    "PlanEntryPublic",
    "DiffOpPublic",
    "NearestPublic",
    "PromotionPlanPage",
    "PLAN_PAGE_SIZE",
    "PLAN_PAGE_MAX",
    "PlanPageIn",
    "RefusalPublic",
    "PublishedPublic",
    "PromotionPublic",
    "DecisionPublic",
    "PromotionSummary",
    "PromotionList",
    "TaskPromotionPublic",
    "TaskPromotions",
]


# `GET /v1/promotions/{task_id}` shows the plan's first page; `.../plan?offset=&limit=` pages through it
# the highest promotion number a read may name (HTTP's `?number=`, gRPC's `number`): a task never has more
MAX_PROMOTION_NUMBER = 1_000_000
PLAN_PAGE_SIZE = 100
PLAN_PAGE_MAX = 1000


class PlanPageIn(BaseModel):
    """Which page of a promotion's plan (the query of `GET /v1/promotions/{task_id}/plan`)."""

    model_config = ConfigDict(extra="forbid")

    offset: int = Field(default=0, ge=0, description="Entries to skip")
    limit: int = Field(default=PLAN_PAGE_SIZE, ge=1, le=PLAN_PAGE_MAX, description="Entries at most")


class VerificationIn(BaseModel):
    """Evidence the task's work is right (tests passed, PR merged...) and whether it succeeded."""

    model_config = ConfigDict(extra="forbid")

    source: ValidationSource
    success: bool = True
    commit: str | None = Field(
        default=None,
        pattern=COMMIT_PATTERN,
        description="The commit the evidence verified (7-64 hex digits): published memory is valid from it",
    )
    branch: str | None = Field(default=None, min_length=1, max_length=255, description="Where the commit is")


class PromotionStart(BaseModel):
    """Promote a task's staging into `target_scope`, optionally with the verification evidence already."""

    model_config = ConfigDict(extra="forbid")

    target_scope: Scope
    verification: VerificationIn | None = None


# per-item decisions in one approval, at most (a plan page's maximum: an approver reads them all)
MAX_ITEM_DECISIONS = 1000


class ItemDecisionIn(BaseModel):
    """One plan item's decision within an approval: rejected (with a reason) or edited (new title and/or
    content, redacted as the gate redacts staging, then planned again against published memory)."""

    model_config = ConfigDict(extra="forbid")

    index: int = Field(description="The plan item's `index`, as the plan lists it (from 0)")
    decision: Literal["reject", "edit"]
    reason: Text = Field(
        default="", max_length=MAX_REASON_CHARS, description="Why (required for a rejection)"
    )
    title: Text | None = Field(
        default=None, max_length=MAX_TITLE_CHARS, description="An edit's new title (omit to keep it)"
    )
    content: Text | None = Field(default=None, description="An edit's new content (omit to keep it)")


class DecisionIn(BaseModel):
    """An approval or rejection; the approver is whoever owns the API key.

    `items` (approvals only): plan items rejected or edited; the rest publish as planned.
    """

    model_config = ConfigDict(extra="forbid")

    note: str = Field(default="", max_length=4000)
    items: list[ItemDecisionIn] = Field(default_factory=list, max_length=MAX_ITEM_DECISIONS)


class PromotionStarted(BaseModel):
    """The promotion's workflow; `created` is false when it was already running (a task has one)."""

    task_id: str
    workflow_id: str
    run_id: str | None
    target_scope: str
    created: bool
    requested_by: str
    number: int = Field(
        default=1, description="Which of the task's promotions this is (1, then 2, 3… for follow-ups)"
    )


class VerificationPublic(BaseModel):
    """The evidence the promotion holds, and who gave it (checked by the gate on every channel)."""

    source: str
    success: bool
    given_by: str | None = None


class DiffOpPublic(BaseModel):
    """One run of a word diff: `equal`, `delete` (only in the old text) or `insert` (only in the new)."""

    op: str
    text: str


class NearestPublic(BaseModel):
    """An active memory near a new plan item, at the promotion's target scope."""

    id: str
    citation: str
    title: str
    similarity: float
    trust: float


class PlanEntryPublic(BaseModel):
    """One memory the promotion will publish, and what it does to published memory."""

    index: int = Field(default=0, description="Position in the plan (the order publish follows)")
    memory_type: str
    title: str
    content: str
    canonical_key: str | None
    decision: str = Field(description="new, duplicate (merge and boost) or supersede")
    target_id: str | None
    similarity: float | None
    reason: str
    target_title: str | None = Field(
        default=None, description="The published memory a duplicate merges into or a supersede replaces"
    )
    target_content: str | None = Field(default=None, description="That memory's content, as published now")
    target_citation: str | None = Field(default=None, description="That memory's citation (`mem:<this>`)")
    target_trust: float | None = Field(default=None, description="That memory's confidence now (0.1..1.0)")
    target_validation_count: int | None = Field(default=None, description="How often it was validated")
    target_published_by: str | None = Field(
        default=None, description="The principal that published it (its PROMOTED or SUPERSEDED event)"
    )
    target_approved_by: str | None = Field(
        default=None,
        description="The approver recorded when it was published (its APPROVED event); null when its scope "
        "needed no approval",
    )
    target_approved_at: datetime | None = Field(default=None, description="When that approval was given")
    target_withheld: bool = Field(
        default=False,
        description="True when the caller may not read the target memory: its title, content and diff are "
        "left out (as GET /v1/memories/{id} would answer 404)",
    )
    diff: list[DiffOpPublic] | None = Field(
        default=None,
        description="Word-level diff from the target's content to this item's (supersede, duplicate): "
        "runs of `equal`, `delete` (only in the published text) and `insert` (only in the new one)",
    )
    diff_text: str | None = Field(
        default=None, description="The same diff as one text: `[-removed-]{+added+}` (git --word-diff=plain)"
    )
    nearest: list[NearestPublic] = Field(
        default_factory=list,
        description="For a `new` item: the nearest active memories at the target scope (at most 3), most "
        "similar first",
    )
    quarantine: str | None = Field(
        default=None,
        description="Why this item is quarantined (it carries instructions aimed at agents: commands, code "
        "sending data out, overrides, hijacks, or the same encoded), or null: a plan holding one waits for a "
        "human's approval at any scope",
    )
    fate: Literal["planned", "published", "edited", "rejected_by_approver"] = Field(
        default="planned",
        description="What became of the item: `planned` (not published, or not yet), `published`, `edited` "
        "(the approver's text replaced the item's; `published_memory_id` says whether it is out) or "
        "`rejected_by_approver` (`approver_reason` says why)",
    )
    published_memory_id: str | None = Field(default=None, description="The memory it published, if any")
    approver_reason: str | None = Field(default=None, description="The approver's reason for its fate")
    original_title: str | None = Field(default=None, description="An edited item's title before the edit")
    original_content: str | None = Field(default=None, description="An edited item's content before the edit")
    edit_diff: list[DiffOpPublic] | None = Field(
        default=None, description="An edited item's word diff from its planned content to the approver's"
    )
    edit_title_diff: list[DiffOpPublic] | None = Field(
        default=None, description="An edited item's word diff from its planned title to the approver's"
    )


class RefusalPublic(BaseModel):
    """An approval or rejection that was not accepted."""

    approver: str
    decision: str
    channel: str = Field(description="signal (Temporal UI) or update (API)")
    reason: str


class PublishedPublic(BaseModel):
    memory_id: str
    citation: str
    action: str
    memory_type: str
    title: str
    superseded_id: str | None
    replayed: bool


class QuarantinedPublic(BaseModel):
    """A plan item held for a human: it carries instructions aimed at agents."""

    index: int = Field(description="Its position in the plan (as `PlanEntryPublic.index`)")
    title: str
    reason: str = Field(description="What the detector found, and where it hid (base64, reversed...)")


class PromotionPublic(BaseModel):
    """Where a promotion stands, with the plan an approver is asked to approve."""

    task_id: str
    workflow_id: str
    number: int = Field(default=1, description="Which of the task's promotions this is")
    run_id: str | None
    workflow_status: str = Field(description="Temporal's execution status: RUNNING, COMPLETED...")
    state: str = Field(description=f"One of: {', '.join(PromotionState)}")
    target_scope: str
    live: bool = Field(
        description="False when the worker did not answer; state then comes from "
        "the LoregateState search attribute (plan and publication still come from the database)"
    )
    requires_approval: bool | None = None
    verification: VerificationPublic | None = None
    plan: list[PlanEntryPublic] = Field(
        default_factory=list,
        description=f"The plan's first {PLAN_PAGE_SIZE} entries (full content); "
        "`GET /v1/promotions/{task_id}/plan` pages through all of them",
    )
    plan_total: int = Field(default=0, description="How many entries the plan has")
    critique: str | None = None
    reward: float | None = None
    cognify_engine: str | None = None
    cognify_fallback: str | None = None
    redaction_counts: dict[str, int] = Field(default_factory=dict)
    decided_by: str | None = None
    decision_note: str | None = None
    refusals: list[RefusalPublic] = Field(default_factory=list)
    published: list[PublishedPublic] = Field(
        default_factory=list, description=f"The first {PLAN_PAGE_SIZE} published memories, in plan order"
    )
    published_total: int = Field(default=0, description="How many plan entries were published")
    quarantined_total: int = Field(
        default=0,
        description="How many plan entries carry instructions aimed at agents; while any does, the "
        "promotion waits in awaiting_approval for a human who may approve at least project scope",
    )
    quarantined: list[QuarantinedPublic] = Field(
        default_factory=list, description=f"The first {PLAN_PAGE_SIZE} quarantined entries, in plan order"
    )
    error: str | None = None
    started_at: datetime | None = None
    closed_at: datetime | None = None


class PromotionPlanPage(BaseModel):
    """A page of a promotion's plan, from the database (full contents), in plan order."""

    task_id: str
    total: int = Field(description="How many entries the plan has (0 until the plan is complete)")
    offset: int
    limit: int
    next_offset: int | None = Field(description="The offset of the next page, or null after the last")
    items: list[PlanEntryPublic]


class DecisionPublic(BaseModel):
    """The promotion's answer to an approval or rejection."""

    task_id: str
    workflow_id: str
    decision: str
    approver: str
    accepted: bool
    state: str
    reason: str
    rejected_items: list[int] = Field(default_factory=list, description="Plan items rejected by the approver")
    edited_items: list[int] = Field(default_factory=list, description="Plan items edited by the approver")


class PromotionSummary(BaseModel):
    """One promotion in a listing."""

    task_id: str
    workflow_id: str
    number: int = Field(default=1, description="Which of the task's promotions this is")
    state: str | None
    workflow_status: str
    target_scope: str | None
    org: str
    project: str
    description: str
    started_at: datetime | None


class PromotionList(BaseModel):
    promotions: list[PromotionSummary]


class TaskPromotionPublic(BaseModel):
    """One of a task's promotions, as loregate records it: which staging it took and how it ended."""

    number: int
    workflow_id: str
    target_scope: str | None
    after_seq: int = Field(description="It takes the task's entries with a seq above this one…")
    last_seq: int | None = Field(description="…up to this one, its snapshot (null until it took it)")
    outcome: str | None = Field(description="published, unverified, rejected or failed; null while it runs")
    requested_by: str | None
    started_at: datetime | None
    snapshot_at: datetime | None
    ended_at: datetime | None


class TaskPromotions(BaseModel):
    """Every promotion of a task, by number, and the number its next entries belong to."""

    task_id: str
    closed: str | None = Field(
        default=None, description="Why the task is closed (closed, erased); null: open"
    )
    next_entries_promotion: int = Field(description="The promotion an entry appended now belongs to")
    promotions: list[TaskPromotionPublic]
