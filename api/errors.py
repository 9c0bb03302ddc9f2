"""The one mapping from the domain's errors to HTTP statuses and gRPC codes, and the body of every refusal.

Both gateways answer a refusal with `{"error": <type>, "detail": <message>}` (gRPC in the status details);
api/http/errors.py installs the HTTP handlers, api/grpc/server.py aborts with the mapped code.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import grpc
from sqlalchemy import exc as sa_exc

from api.schemas.text import PATTERN_WORDS
from governance import errors as ge

__all__ = [
    "HTTP_STATUS",
    "GRPC_CODE",
    "error_body",
    "status_of",
    "grpc_code_of",
    "is_unavailable",
    "validation_detail",
    "validation_errors",
    "printable",
]

HTTP_STATUS: dict[type[ge.GovernanceError], int] = {
    ge.Unauthenticated: 401,
    ge.PolicyDenied: 403,
    ge.NotFound: 404,
    ge.Conflict: 409,
    ge.ApprovalRequired: 409,
    ge.LimitExceeded: 413,
    ge.InvalidInput: 422,
    ge.RateLimited: 429,
    ge.Unavailable: 503,
}

GRPC_CODE: dict[type[ge.GovernanceError], grpc.StatusCode] = {
    ge.Unauthenticated: grpc.StatusCode.UNAUTHENTICATED,
    ge.PolicyDenied: grpc.StatusCode.PERMISSION_DENIED,
    ge.NotFound: grpc.StatusCode.NOT_FOUND,
    ge.Conflict: grpc.StatusCode.ALREADY_EXISTS,
    ge.ApprovalRequired: grpc.StatusCode.FAILED_PRECONDITION,
    ge.LimitExceeded: grpc.StatusCode.RESOURCE_EXHAUSTED,
    ge.InvalidInput: grpc.StatusCode.INVALID_ARGUMENT,
    ge.RateLimited: grpc.StatusCode.RESOURCE_EXHAUSTED,
    ge.Unavailable: grpc.StatusCode.UNAVAILABLE,
}


def error_body(kind: str, detail: str, **extra: object) -> dict[str, object]:
    return {"error": kind, "detail": printable(detail), **extra}


def status_of(error: ge.GovernanceError) -> int:
    """The HTTP status of a domain error, by its nearest mapped base class."""
    for cls in type(error).__mro__:
        if cls in HTTP_STATUS:
            return HTTP_STATUS[cls]
    return 400


def grpc_code_of(error: ge.GovernanceError) -> grpc.StatusCode:
    """The gRPC status of a domain error, by its nearest mapped base class (as HTTP statuses are found)."""
    for cls in type(error).__mro__:
        if cls in GRPC_CODE:
            return GRPC_CODE[cls]
    return grpc.StatusCode.FAILED_PRECONDITION


def is_unavailable(error: BaseException) -> bool:
    """Database down, unreachable, or too slow: the client should retry, this is not its fault."""
    return isinstance(
        error, (sa_exc.OperationalError, sa_exc.TimeoutError, sa_exc.InterfaceError, OSError, TimeoutError)
    ) or (isinstance(error, sa_exc.DBAPIError) and bool(error.connection_invalidated))


def printable(text: str) -> str:
    """`text` with lone surrogates written as escapes: a refusal must never fail to encode."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _message(err: Any) -> str:
    """Pydantic's message, or for a pattern loregate names (api/schemas/text.py) what it asks, in words."""
    if err.get("type") == "string_pattern_mismatch":
        words = PATTERN_WORDS.get(str((err.get("ctx") or {}).get("pattern")))
        if words is not None:
            return words
    return str(err.get("msg"))


def validation_errors(errors: Sequence[Any]) -> list[dict[str, Any]]:
    """Pydantic's errors as the body shows them: `loc`, `msg` and `type`, never the input, printable."""
    return [
        {
            "loc": [printable(p) if isinstance(p, str) else p for p in err.get("loc", ())],
            "msg": printable(_message(err)),
            "type": err.get("type"),
        }
        for err in errors
    ]


def validation_detail(errors: Sequence[Any]) -> str:
    """Pydantic's errors as one line: `field: message; ...`."""
    parts = []
    for err in errors:
        loc = ".".join(str(p) for p in err.get("loc", ()) if p != "body")
        parts.append(f"{loc}: {_message(err)}" if loc else _message(err))
    return printable("; ".join(parts)) or "invalid request"
