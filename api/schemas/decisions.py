"""Batch decisions: several pending promotions and change requests approved or rejected in one action.

Each item is decided on its own, exactly as its single decision would be
(`POST /v1/promotions/{task}/approve`, `POST /v1/change-requests/{id}/approve`): the same checks, the same
answer, and a refusal of one item (not found, not allowed, already decided) is reported for that item while
the others are still decided.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from governance.staging import TASK_ID_PATTERN

__all__ = ["MAX_BATCH_DECISIONS", "BatchDecisionIn", "BatchItemPublic", "BatchDecisionPublic"]

# one action decides at most this many promotions, and as many change requests (each item is a workflow
# update; a change request waits for its apply)
MAX_BATCH_DECISIONS = 50

TaskRef = Annotated[str, StringConstraints(pattern=TASK_ID_PATTERN, max_length=128)]
RequestRef = Annotated[str, StringConstraints(pattern=r"^[0-9a-fA-F-]{1,64}$")]


class BatchDecisionIn(BaseModel):
    """Approve or reject every listed promotion (by task id) and change request (by id) as the caller."""

    # the rules the validator below enforces, stated in the OpenAPI schema too (clients and fuzzers read it)
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "anyOf": [
                {"required": [name], "properties": {name: {"minItems": 1}}}
                for name in ("promotions", "change_requests")
            ]
        },
    )

    decision: Literal["approve", "reject"]
    note: str = Field(default="", max_length=4000, description="The note every item's decision carries")
    promotions: list[TaskRef] = Field(
        default_factory=list,
        max_length=MAX_BATCH_DECISIONS,
        json_schema_extra={"uniqueItems": True},
        description="Task ids of pending promotions",
    )
    change_requests: list[RequestRef] = Field(
        default_factory=list,
        max_length=MAX_BATCH_DECISIONS,
        json_schema_extra={"uniqueItems": True},
        description="Ids of pending change requests",
    )

    @model_validator(mode="after")
    def _some_and_each_once(self) -> BatchDecisionIn:
        if not self.promotions and not self.change_requests:
            raise ValueError("name at least one promotion or change request to decide")
        for name, ids in (("promotions", self.promotions), ("change_requests", self.change_requests)):
            if len(set(ids)) != len(ids):
                raise ValueError(f"{name} names an item twice")
        return self


class BatchItemPublic(BaseModel):
    """One item's outcome: its decision accepted (with where it stands now), or its refusal."""

    kind: Literal["promotion", "change_request"]
    id: str = Field(description="The task id of a promotion, the id of a change request")
    accepted: bool
    state: str | None = Field(default=None, description="Where the item stands after the decision")
    reason: str | None = None
    workflow_id: str | None = None
    error: str | None = Field(
        default=None, description="The refusal's type, as the single decision's `error`"
    )
    detail: str | None = Field(default=None, description="The refusal's message")


class BatchDecisionPublic(BaseModel):
    """Every item's outcome, in the order asked (promotions first)."""

    decision: str
    approver: str
    accepted: int
    refused: int
    items: list[BatchItemPublic]
