"""The error hierarchy of loregate. The gateways map each type to one HTTP status and gRPC code.

GovernanceError                  any refusal a client can act on
├── Unauthenticated  (401)       no key, unknown or revoked key
├── PolicyDenied     (403)       Casbin said no; nothing was written
│   └── SelfEndorsement (403)    a principal's evidence on a memory it wrote, published or superseded
├── NotFound         (404)       unknown task, memory, promotion
├── Conflict         (409)       idempotency key reused with another body, state clash
├── LimitExceeded    (413)       entry, batch or request over the configured limits
│   └── TaskQuotaExceeded (413)  the task's staging already holds its quota of entries or bytes
├── InvalidInput     (422)       well-formed JSON that breaks a domain rule
├── RateLimited      (429)       a rate limit's bucket is empty; `retry_after` seconds say when to retry
│   └── DailyQuotaExceeded (429) the tenant's staging quota for the day is spent (retry after midnight UTC)
├── ApprovalRequired (409)       the scope needs an approval that has not been given
└── Unavailable      (503)       the database (or Temporal) cannot be reached; retry later
"""

from __future__ import annotations

__all__ = [
    "GovernanceError",
    "Unauthenticated",
    "PolicyDenied",
    "SelfEndorsement",
    "NotFound",
    "Conflict",
    "LimitExceeded",
    "TaskQuotaExceeded",
    "InvalidInput",
    "RateLimited",
    "DailyQuotaExceeded",
    "ApprovalRequired",
    "Unavailable",
]


class GovernanceError(Exception):
    """Base of every error a client can be told about; `kind` is the JSON `error` field."""

    kind = "governance_error"

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class Unauthenticated(GovernanceError):
    """The request carries no API key, or one that is unknown or revoked."""

    kind = "unauthenticated"


class PolicyDenied(GovernanceError):
    """The authorisation policy does not let this principal do this."""

    kind = "forbidden"


class SelfEndorsement(PolicyDenied):
    """A principal's validation, vote or observation of a memory it is involved in (others give trust)."""

    kind = "self_endorsement"


class NotFound(GovernanceError):
    """The named task, memory or promotion does not exist (or is not visible to the caller)."""

    kind = "not_found"


class Conflict(GovernanceError):
    """The request clashes with what is stored (idempotency key reuse, state)."""

    kind = "conflict"


class LimitExceeded(GovernanceError):
    """An entry, batch or request is larger than the configured limit."""

    kind = "payload_too_large"


class InvalidInput(GovernanceError):
    """Input that parses but breaks a domain rule (unknown scope, downward promotion...)."""

    kind = "invalid_input"


class TaskQuotaExceeded(LimitExceeded):
    """The task's staging holds its quota of entries or bytes: start another task (nothing was written)."""

    kind = "quota_exceeded"

    def __init__(self, detail: str, *, quota: str) -> None:
        super().__init__(detail)
        self.quota = quota


class RateLimited(GovernanceError):
    """Too many requests; retry after `retry_after` seconds (the gateways send it as Retry-After)."""

    kind = "rate_limited"

    def __init__(self, detail: str, *, retry_after: float = 1.0) -> None:
        super().__init__(detail)
        self.retry_after = retry_after


class DailyQuotaExceeded(RateLimited):
    """The tenant's staging quota of entries or bytes for the UTC day is spent (nothing was written)."""

    kind = "quota_exceeded"

    def __init__(self, detail: str, *, quota: str, retry_after: float) -> None:
        super().__init__(detail, retry_after=retry_after)
        self.quota = quota


class ApprovalRequired(GovernanceError):
    """The target scope needs a human approval first."""

    kind = "approval_required"


class Unavailable(GovernanceError):
    """A backing service is down; the client may retry (with its idempotency key)."""

    kind = "unavailable"
