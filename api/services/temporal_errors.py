"""Temporal's failures as the domain's errors, for the use cases that talk to a workflow.

A validator's or handler's `ApplicationError` becomes the error its type names (Conflict, InvalidInput, a
refused approver's PolicyDenied); an update that gets no answer, or Temporal not answering, is Unavailable;
a workflow that is not there is whatever the caller says that means (`not_found`), and one that is there but
closed (or closed while the request waited) a Conflict. The gateways then map
the domain's errors to statuses (api/errors.py), so a client never sees a 500 for them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from temporalio.client import (
    RPCError,
    RPCStatusCode,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)
from temporalio.exceptions import ApplicationError

from governance.errors import Conflict, GovernanceError, InvalidInput, PolicyDenied, Unavailable
from workflows.promotion_contract import ErrorTypes

__all__ = ["temporal_errors"]

_UPDATE_ERRORS: dict[str, type[GovernanceError]] = {
    ErrorTypes.CONFLICT: Conflict,
    ErrorTypes.INVALID_INPUT: InvalidInput,
    ErrorTypes.APPROVAL_REFUSED: PolicyDenied,
}
_UNAVAILABLE = {
    RPCStatusCode.UNAVAILABLE,
    RPCStatusCode.DEADLINE_EXCEEDED,
    RPCStatusCode.CANCELLED,
    RPCStatusCode.RESOURCE_EXHAUSTED,
}


# Temporal's NOT_FOUND for a workflow that is there but closed: a signal or update to a completed run, or an
# update admitted while another one's decision ended the run (concurrent approvals: all but one land here)
_CLOSED_MESSAGES = ("already completed", "aborted by closing workflow")


def _closed(message: str) -> bool:
    return any(words in message for words in _CLOSED_MESSAGES)


@asynccontextmanager
async def temporal_errors(
    subject: str, not_found: Callable[[RPCError], GovernanceError]
) -> AsyncIterator[None]:
    """Translate inside the block; `subject` names the workflow's object in messages."""
    try:
        yield
    except WorkflowUpdateFailedError as exc:
        cause = exc.cause
        if isinstance(cause, ApplicationError) and cause.type in _UPDATE_ERRORS:
            raise _UPDATE_ERRORS[cause.type](cause.message) from exc
        raise
    except WorkflowUpdateRPCTimeoutOrCancelledError as exc:
        raise Unavailable(f"{subject} did not answer in time; is a worker running?") from exc
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND and _closed(exc.message):
            raise Conflict(
                f"{subject} has already ended: another decision was taken first, or it ended before this "
                "request reached it"
            ) from exc
        if exc.status == RPCStatusCode.NOT_FOUND:
            raise not_found(exc) from exc
        if exc.status in _UNAVAILABLE:
            raise Unavailable(f"Temporal is unavailable: {exc.message}") from exc
        raise
