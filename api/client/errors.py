"""The client's exceptions: every refusal of the gateway as one typed error carrying its problem details.

Each is also the domain's own type: `NotFoundError` is both a `LoregateError` (its `error` code, its `detail`
message, its HTTP `status_code`) and a `governance.errors.NotFound`, so code written against the service
layer catches the same errors whether it runs in-process or over the network.

    GovernanceError
     └── LoregateError
          ├── UnauthenticatedError   401        (also ge.Unauthenticated)
          ├── PolicyDeniedError      403        (also ge.PolicyDenied)
          ├── NotFoundError          404        (also ge.NotFound)
          ├── ConflictError          409        (also ge.Conflict)
          ├── ApprovalRequiredError  409        (also ge.ApprovalRequired)
          ├── LimitExceededError     413        (also ge.LimitExceeded)
          ├── InvalidInputError      400, 422   (also ge.InvalidInput)
          ├── RateLimitedError       429        (also ge.RateLimited)
          ├── UnavailableError       503, none  (also ge.Unavailable)
          └── ServerError            500
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx
from pydantic import ValidationError

from api.schemas.errors import ErrorBody
from governance import errors as ge

__all__ = [
    "LoregateError",
    "UnauthenticatedError",
    "PolicyDeniedError",
    "NotFoundError",
    "ConflictError",
    "LimitExceededError",
    "InvalidInputError",
    "RateLimitedError",
    "ApprovalRequiredError",
    "UnavailableError",
    "ServerError",
    "error_from_response",
    "foreign_answer",
    "unreachable",
]


class LoregateError(ge.GovernanceError):
    """A refusal from the gateway: `error` is its type, `detail` its message, `status_code` its status."""

    def __init__(
        self, error: str, detail: str, status_code: int, body: Mapping[str, Any] | None = None
    ) -> None:
        super().__init__(detail)
        self.error = error
        self.status_code = status_code
        self.body: dict[str, Any] = dict(body or {})

    def __str__(self) -> str:
        return f"{self.error} ({self.status_code}): {self.detail}"


class UnauthenticatedError(LoregateError, ge.Unauthenticated):
    """No API key, or an unknown or revoked one (401)."""


class PolicyDeniedError(LoregateError, ge.PolicyDenied):
    """The policy does not let this key do this (403)."""


class NotFoundError(LoregateError, ge.NotFound):
    """Unknown task, memory or promotion (404)."""


class ConflictError(LoregateError, ge.Conflict):
    """Idempotency key reused with another body, or a state clash (409)."""


class LimitExceededError(LoregateError, ge.LimitExceeded):
    """Entry, batch or request over the configured limits (413)."""


class InvalidInputError(LoregateError, ge.InvalidInput):
    """The request breaks a schema or domain rule (400, 422)."""


class RateLimitedError(LoregateError, ge.RateLimited):
    """Too many requests, or a staging quota reached (429); retry after `retry_after` seconds."""


class ApprovalRequiredError(LoregateError, ge.ApprovalRequired):
    """The target scope needs an approval first (409)."""


class UnavailableError(LoregateError, ge.Unavailable):
    """The gateway, its database or Temporal cannot be reached (503, or no connection); retry later."""


class ServerError(LoregateError):
    """The gateway failed in a way that is not the client's doing (500), or answered what it never should."""


_BY_KIND: dict[str, type[LoregateError]] = {
    "unauthenticated": UnauthenticatedError,
    "forbidden": PolicyDeniedError,
    "not_found": NotFoundError,
    "conflict": ConflictError,
    "approval_required": ApprovalRequiredError,
    "payload_too_large": LimitExceededError,
    "invalid_input": InvalidInputError,
    "validation_error": InvalidInputError,
    "bad_request": InvalidInputError,
    "rate_limited": RateLimitedError,
    "unavailable": UnavailableError,
}

_BY_STATUS: dict[int, type[LoregateError]] = {
    400: InvalidInputError,
    401: UnauthenticatedError,
    403: PolicyDeniedError,
    404: NotFoundError,
    405: InvalidInputError,
    409: ConflictError,
    413: LimitExceededError,
    415: InvalidInputError,
    422: InvalidInputError,
    429: RateLimitedError,
    502: UnavailableError,
    503: UnavailableError,
    504: UnavailableError,
}


def error_from_response(response: httpx.Response) -> LoregateError:
    """The typed exception for a refusal, from its `{"error", "detail"}` body (else from its status)."""
    try:
        body = response.json()
    except ValueError:
        body = None
    try:
        problem = ErrorBody.model_validate(body)
    except ValidationError:  # not the gateway's error body (a proxy's page, say): the status decides
        problem = ErrorBody(error="error", detail=foreign_answer(response))
        body = problem.model_dump()
    cls = _BY_KIND.get(problem.error) or _BY_STATUS.get(response.status_code) or ServerError
    error = cls(problem.error, problem.detail, response.status_code, body)
    if isinstance(error, ge.RateLimited):
        try:  # the seconds the gateway asks to wait (rate limits, the day's staging quota)
            error.retry_after = float(response.headers.get("retry-after", "1"))
        except ValueError:
            error.retry_after = 1.0
    return error


def foreign_answer(response: httpx.Response) -> str:
    """One line for an answer that is not loregate's JSON (an HTML page, a proxy's error, another server):
    the request's URL, what came back, and the question to ask; never the page itself."""
    request = response.request
    url = request.url.copy_with(query=None, fragment=None)
    origin = f"{url.scheme}://{url.netloc.decode('ascii')}"
    kind = response.headers.get("content-type", "").split(";")[0].strip() or "no content type"
    return (
        f"{request.method} {url} answered {response.status_code} {response.reason_phrase} with {kind}, "
        f"not loregate's JSON: is {origin} a loregate gateway (LOREGATE_URL), and no proxy in the way?"
    )


def unreachable(base_url: str, exc: httpx.TransportError) -> UnavailableError:
    """No answer at all (refused, reset, timed out): retry later. A request httpx would not send (a header
    value it refuses) is named by its kind only: httpx's message repeats the header, API key and all."""
    if isinstance(exc, httpx.LocalProtocolError):
        return UnavailableError(
            "unavailable", f"the request to {base_url} could not be sent (a header or value httpx refuses)", 0
        )
    return UnavailableError("unavailable", f"cannot reach the gateway at {base_url}: {exc}", 0)
