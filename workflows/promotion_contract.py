"""The public contract of `PromotionWorkflow`: what gateways, the CLI and the Temporal UI send and read.

Everything a caller needs to start, follow and decide a promotion lives here — the states, the start,
verification and approval payloads, the workflow id, the signal/update/query names and the error types the
workflow raises — so a gateway imports this module without importing the worker, its activities or even
temporalio. The workflow (workflows/promotion.py) implements it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from governance.approval import digest_of
from governance.instructions import QuarantinedItem
from governance.promotions import promotion_workflow_id
from governance.publication import NearbyMemory, PlanItem, PublishedMemory
from workflows.approval_contract import (
    APPROVAL_TIMEOUT_SECONDS,
    VERIFY_TIMEOUT_SECONDS,
    ApprovalAck,
    ApprovalRequest,
    DecisionNames,
    ErrorTypes,
    Refusal,
)

__all__ = [
    "NO_INPUT",
    "PromotionState",
    "FINAL_STATES",
    "STATE_ATTRIBUTE",
    "WORKFLOW_TYPE",
    "WORKFLOW_ID_PREFIX",
    "workflow_id_for",
    "task_id_of",
    "Names",
    "ErrorTypes",
    "Verification",
    "PromotionInput",
    "start_digest",
    "ApprovalRequest",
    "ApprovalAck",
    "PlanEntry",
    "Refusal",
    "PromotionStatus",
    "PromotionResult",
    "PublishedMemory",
    "NearbyMemory",
    "QuarantinedItem",
]


class PromotionState(StrEnum):
    """Where a promotion stands: the `LoregateState` search attribute and `PromotionStatus.state`."""

    AWAITING_VERIFICATION = "awaiting_verification"
    PLANNING = "planning"
    AWAITING_APPROVAL = "awaiting_approval"
    PUBLISHING = "publishing"
    PUBLISHED = "published"
    REJECTED = "rejected"
    UNVERIFIED = "unverified"
    FAILED = "failed"
    # the start's claims failed the gate's checks (requester unknown, disabled or not allowed): the workflow
    # fails, so a start through the API can still run the task's promotion afterwards
    REFUSED = "refused"


FINAL_STATES = frozenset(
    {
        PromotionState.PUBLISHED,
        PromotionState.REJECTED,
        PromotionState.UNVERIFIED,
        PromotionState.FAILED,
        PromotionState.REFUSED,
    }
)

# The keyword search attribute the Temporal UI filters and shows (`LoregateState = "awaiting_approval"`).
STATE_ATTRIBUTE = "LoregateState"
WORKFLOW_TYPE = "PromotionWorkflow"
WORKFLOW_ID_PREFIX = "promote-"


def workflow_id_for(task_id: str, number: int = 1) -> str:
    """The workflow id of promotion `number` of a task (by its key): `promote-<key>`, then `-<n>` from 2 on.

    Numbers are given out by loregate (governance/promotions.py), one at a time, so a second start of the
    same promotion finds the first.
    """
    return promotion_workflow_id(task_id, number)


def task_id_of(workflow_id: str) -> str | None:
    """The task a first promotion's workflow id names, or None for another workflow's id.

    A follow-up's id (`promote-<key>-<n>`) cannot be told apart from a task whose id ends in `-<n>`: the
    `promotions` table says whose it is (storage/promotions.py); this is the fallback for ids it lacks.
    """
    return workflow_id[len(WORKFLOW_ID_PREFIX) :] if workflow_id.startswith(WORKFLOW_ID_PREFIX) else None


class Names:
    """Signal, update and query names (the Temporal UI's *Send a Signal* uses these)."""

    VERIFY = "verify"  # signal and update
    APPROVE = DecisionNames.APPROVE  # signal and update
    REJECT = DecisionNames.REJECT  # signal and update
    STATE = "state"  # query: PromotionStatus
    PLAN = "plan"  # query: list[PlanEntry]


@dataclass
class Verification:
    """Evidence the task's work is right: `source` is a ValidationSource, `success` the outcome.

    `given_by` names who gives it (the API sets the caller; through the Temporal UI it is a claim the
    workflow checks: `human_approved` counts only from an enabled human allowed to approve the scope).
    `grant` is set only by the API gateway (its proof unless `approval_mode=trusting`). `commit` names the
    commit the evidence verified (what is published is valid from it); `branch` where it was. Both default
    to None, so histories written before they existed still deserialize.
    """

    source: str
    success: bool = True
    given_by: str | None = None
    grant: str | None = None
    commit: str | None = None
    branch: str | None = None


@dataclass
class PromotionInput:
    """Start input; timeouts come from the starter's settings (workflows read no environment)."""

    task_id: str
    target_scope: str
    verification: Verification | None = None
    verify_timeout_seconds: float = VERIFY_TIMEOUT_SECONDS
    approval_timeout_seconds: float = APPROVAL_TIMEOUT_SECONDS
    # who asks: checked by an activity before anything runs (exists, enabled, may promote into the scope)
    requested_by: str | None = None
    # the gateway's proof that the start came through the API (required unless `approval_mode=trusting`)
    grant: str | None = None


def start_digest(data: PromotionInput) -> str:
    """The digest of a start's input, its grant aside: the gateway's start grant names it, and the start
    check compares it with the input the workflow was given (storage/promotions.py)."""
    evidence = data.verification
    return digest_of(
        [
            "promotion",
            data.task_id,
            data.target_scope,
            None
            if evidence is None
            else [evidence.source, evidence.success, evidence.given_by, evidence.commit, evidence.branch],
            float(data.verify_timeout_seconds),
            float(data.approval_timeout_seconds),
            data.requested_by,
        ]
    )


# the default of the workflow's input, so a start that carried none builds the instance and then fails
# cleanly (workflows/input_decoding.py) instead of retrying its first task; never used to run
NO_INPUT = PromotionInput(task_id="", target_scope="")


# one line of the plan as the workflow shows it: the one plan-item type, which the activities share
PlanEntry = PlanItem


@dataclass
class PromotionStatus:
    """What the `state` query returns.

    `plan` and `published` hold the first entries only (at most 20 each, ids without texts); `plan_total`
    and `published_total` count them all. `critique` and `decision_note` stay empty: the API reads them,
    the full plan and the publication from the database (docs/privacy.md).
    """

    task_id: str
    target_scope: str
    state: str
    requires_approval: bool | None = None
    verification: Verification | None = None
    plan: list[PlanEntry] = field(default_factory=list)
    critique: str | None = None
    reward: float | None = None
    cognify_engine: str | None = None
    cognify_fallback: str | None = None
    redaction_counts: dict[str, int] = field(default_factory=dict)
    decided_by: str | None = None
    decision_note: str | None = None
    refusals: list[Refusal] = field(default_factory=list)
    published: list[PublishedMemory] = field(default_factory=list)
    error: str | None = None
    plan_total: int = 0
    published_total: int = 0
    # plan items carrying instructions aimed at agents: the promotion waits for a human's approval at any
    # scope; the first few by index, short title and reasons
    quarantined_total: int = 0
    quarantined: list[QuarantinedItem] = field(default_factory=list)


@dataclass
class PromotionResult:
    """The end state and what was published (`published`: the first 20; `published_total`: how many)."""

    task_id: str
    state: str
    published: list[PublishedMemory] = field(default_factory=list)
    decided_by: str | None = None
    reason: str | None = None
    published_total: int = 0
