"""The approval token's answer: what a human pastes into a Temporal UI signal to decide as themselves."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel

__all__ = ["ApprovalTokenPublic"]


class ApprovalTokenPublic(BaseModel):
    """A short-lived token bound to the caller, the workflow and what it decides (plan or change digest).

    Paste `signal_input` as the input of the `approve` (or `reject`) signal in the Temporal UI; the token
    stops counting at `expires_at`, or as soon as the plan or change request changes.
    """

    token: str
    principal: str
    workflow_id: str
    digest: str
    expires_at: datetime
    approval_mode: str
    signal_input: str
