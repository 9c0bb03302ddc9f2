"""The public contract of the approval gate every human-decided workflow shares (workflows/approval.py).

A promotion and a change request are decided alike: the same `approve`/`reject` names (a signal from the
Temporal UI, an update from the API), the same payload (`ApprovalRequest`), acknowledgement and refusal
record, and the same error types. This module imports no temporalio, so gateways import it freely.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from governance.approval import APPROVAL_TIMEOUT_SECONDS, VERIFY_TIMEOUT_SECONDS
from governance.errors import Conflict, InvalidInput, NotFound
from governance.item_decisions import ItemChoice

__all__ = [
    "APPROVAL_TIMEOUT_SECONDS",
    "VERIFY_TIMEOUT_SECONDS",
    "DecisionNames",
    "ErrorTypes",
    "ApprovalRequest",
    "ItemChoice",
    "ApprovalAck",
    "Refusal",
]


class DecisionNames:
    """The decision's signal and update names (the Temporal UI's *Send a Signal* uses these)."""

    APPROVE = "approve"  # signal and update
    REJECT = "reject"  # signal and update


class ErrorTypes:
    """`ApplicationError.type` values the gated workflows' validators and activities raise.

    The domain's errors keep their class names (governance/errors.py), so a gateway maps them back.
    """

    CONFLICT = Conflict.__name__
    INVALID_INPUT = InvalidInput.__name__
    NOT_FOUND = NotFound.__name__
    # a claimed approver the policy, the principals table or the proof check refuses (a 403 for the API)
    APPROVAL_REFUSED = "ApprovalRefused"
    # a start whose requester the gate refuses (the workflow fails with it)
    START_REFUSED = "StartRefused"
    # the embedding endpoint's vectors do not fit the schema: retrying cannot help
    EMBEDDING_DIMENSION_MISMATCH = "EmbeddingDimensionMismatch"


@dataclass
class ApprovalRequest:
    """Payload of `approve`/`reject` (signal or update): `{"approver": "<principal id>", "note": "...",
    "token": "<approval token>", "items": [{"index": 2, "decision": "reject", "reason": "..."}]}`.

    `grant` is set only by the API gateway (a row it wrote for the authenticated caller). `token` is what
    a human pastes into a Temporal UI signal: minted by loregate for their own key
    (`loregate approval-token`), bound to them, the workflow and what they decide, and short-lived.
    `items` (an approval of a promotion only): plan items rejected (with a reason) or edited (new title
    and/or content), governance/item_decisions.py. The API sends indexes and decisions only (the reasons
    and texts are rows under its grant); a Temporal UI signal carries them as the human typed them.
    """

    approver: str
    note: str = ""
    grant: str | None = None
    token: str | None = None
    items: list[ItemChoice] = field(default_factory=list)


@dataclass
class ApprovalAck:
    """Answer of the `approve`/`reject` update."""

    accepted: bool
    state: str
    reason: str


@dataclass
class Refusal:
    """A decision (approve, reject) or evidence (verify) that was not accepted, and why."""

    approver: str
    decision: str
    channel: str
    reason: str
