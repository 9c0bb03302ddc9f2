"""The public contract of `ChangeRequestWorkflow`: what gateways, the CLI and the Temporal UI send and read.

A change request (a supersede, retire or lift of published memory at a scope that requires validation) is
decided like a promotion: the same `approve`/`reject` payload (`ApprovalRequest`, `{"approver":
"<principal id>", "note": "..."}`), the same acknowledgement and error types, and the same `LoregateState`
search attribute, so the Temporal UI lists both with one filter. This module imports no temporalio; the
workflow (workflows/change_requests.py) implements it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from governance.approval import digest_of
from workflows.approval_contract import (
    APPROVAL_TIMEOUT_SECONDS,
    ApprovalAck,
    ApprovalRequest,
    DecisionNames,
    ErrorTypes,
    Refusal,
)
from workflows.promotion_contract import STATE_ATTRIBUTE

__all__ = [
    "NO_INPUT",
    "ChangeRequestState",
    "FINAL_STATES",
    "STATE_ATTRIBUTE",
    "WORKFLOW_TYPE",
    "WORKFLOW_ID_PREFIX",
    "workflow_id_for",
    "Names",
    "ErrorTypes",
    "ApprovalRequest",
    "ApprovalAck",
    "Refusal",
    "ChangeRequestInput",
    "start_digest",
    "ChangeRequestStatus",
    "ChangeRequestResult",
]


class ChangeRequestState(StrEnum):
    """Where a change request stands: the `LoregateState` search attribute and the stored request's state."""

    AWAITING_APPROVAL = "awaiting_approval"
    APPLYING = "applying"
    APPLIED = "applied"
    REJECTED = "rejected"
    # approved, but the memory was superseded or retired meanwhile: nothing was applied
    CONFLICT = "conflict"
    # nobody decided before the approval timeout
    EXPIRED = "expired"
    # the requester failed the gate's checks (unknown, disabled, may not write there)
    REFUSED = "refused"
    FAILED = "failed"


FINAL_STATES = frozenset(
    {
        ChangeRequestState.APPLIED,
        ChangeRequestState.REJECTED,
        ChangeRequestState.CONFLICT,
        ChangeRequestState.EXPIRED,
        ChangeRequestState.REFUSED,
        ChangeRequestState.FAILED,
    }
)

WORKFLOW_TYPE = "ChangeRequestWorkflow"
WORKFLOW_ID_PREFIX = "change-"


def workflow_id_for(request_id: str) -> str:
    """The one workflow id of a change request."""
    return f"{WORKFLOW_ID_PREFIX}{request_id}"


class Names:
    """Signal, update and query names (the Temporal UI's *Send a Signal* uses these)."""

    APPROVE = DecisionNames.APPROVE  # signal and update
    REJECT = DecisionNames.REJECT  # signal and update
    STATE = "state"  # query: ChangeRequestStatus


@dataclass
class ChangeRequestInput:
    """Start input: the stored request's id (its content stays in Postgres) and who asks."""

    request_id: str
    requested_by: str | None = None
    approval_timeout_seconds: float = APPROVAL_TIMEOUT_SECONDS
    # the gateway's proof that the start came through the API (required unless `approval_mode=trusting`)
    grant: str | None = None


def start_digest(data: ChangeRequestInput) -> str:
    """The digest of a start's input, its grant aside: the gateway's start grant names it."""
    return digest_of(
        ["change_request", data.request_id, data.requested_by, float(data.approval_timeout_seconds)]
    )


# the default of the workflow's input, so a start that carried none builds the instance and then fails
# cleanly (workflows/input_decoding.py) instead of retrying its first task; never used to run
NO_INPUT = ChangeRequestInput(request_id="")


@dataclass
class ChangeRequestStatus:
    """What the `state` query returns: ids, scopes, counts and states.

    `reason`, `old_*`, `new_*`, `decision_note` and `lift_titles` stay empty (docs/privacy.md; histories
    recorded before carry them shortened): the API serves the texts (`GET /v1/change-requests/{id}`).
    """

    request_id: str
    state: str
    operation: str = ""
    memory_id: str = ""
    scope: str = ""
    requested_by: str | None = None
    reason: str = ""
    old_title: str = ""
    old_content: str = ""
    new_title: str | None = None
    new_content: str | None = None
    decided_by: str | None = None
    decision_note: str | None = None
    refusals: list[Refusal] = field(default_factory=list)
    result_memory_id: str | None = None
    error: str | None = None
    # a lift: the scope key it lifts to, the scope keys it lifts from, the first titles and how many
    target_scope_key: str | None = None
    lift_from: list[str] = field(default_factory=list)
    lift_titles: list[str] = field(default_factory=list)
    lift_count: int = 0


@dataclass
class ChangeRequestResult:
    """The end state, who decided, and the memory the change produced (the new head, or the retired one)."""

    request_id: str
    state: str
    decided_by: str | None = None
    result_memory_id: str | None = None
    reason: str | None = None
