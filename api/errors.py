"""The one mapping from errors to HTTP statuses and gRPC codes, and the JSON error body of every refusal."""

from __future__ import annotations

import logging

import grpc
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from sqlalchemy import exc as sa_exc
from starlette.exceptions import HTTPException as StarletteHTTPException

from governance import errors as ge

__all__ = [
    "HTTP_STATUS",
    "GRPC_CODE",
    "ErrorBody",
    "ERROR_RESPONSES",
    "install_error_handlers",
    "error_body",
    "is_unavailable",
]

_log = logging.getLogger("loregate.api")

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


class ErrorBody(BaseModel):
    """Every refusal: a machine-readable type and a message that says what is wrong."""

    error: str
    detail: str


# Documented on every route, so clients (and schema-driven tests) know the shape of each refusal.
ERROR_RESPONSES: dict[int | str, dict[str, object]] = {
    401: {"model": ErrorBody, "description": "No, malformed, unknown or revoked API key"},
    403: {"model": ErrorBody, "description": "The policy does not allow this principal to do this"},
    404: {"model": ErrorBody, "description": "Unknown task, memory or promotion"},
    409: {"model": ErrorBody, "description": "Conflicts with what is stored (e.g. idempotency key reuse)"},
    413: {"model": ErrorBody, "description": "Entry, batch or request over the configured limits"},
    422: {"model": ErrorBody, "description": "Malformed input or a broken domain rule"},
    503: {"model": ErrorBody, "description": "Database or Temporal unavailable; retry later"},
}

_STATUS_KIND = {
    400: "bad_request",
    401: "unauthenticated",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "validation_error",
    429: "rate_limited",
    503: "unavailable",
}


def error_body(kind: str, detail: str, **extra: object) -> dict[str, object]:
    return {"error": kind, "detail": detail, **extra}


def status_of(error: ge.GovernanceError) -> int:
    for cls in type(error).__mro__:
        if cls in HTTP_STATUS:
            return HTTP_STATUS[cls]
    return 400


def is_unavailable(error: BaseException) -> bool:
    """Database down, unreachable, or too slow: the client should retry, this is not its fault."""
    return isinstance(
        error, (sa_exc.OperationalError, sa_exc.TimeoutError, sa_exc.InterfaceError, OSError, TimeoutError)
    ) or (isinstance(error, sa_exc.DBAPIError) and bool(error.connection_invalidated))


def _validation_detail(exc: RequestValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err.get("loc", ()) if p != "body")
        parts.append(f"{loc}: {err.get('msg')}" if loc else str(err.get("msg")))
    return "; ".join(parts) or "invalid request"


def install_error_handlers(app: FastAPI) -> None:
    """Every refusal is `{"error": <type>, "detail": <message>}` with the mapped status."""

    @app.exception_handler(ge.GovernanceError)
    async def _governance(_: Request, exc: ge.GovernanceError) -> JSONResponse:
        status = status_of(exc)
        headers = {"Retry-After": "1"} if status == 503 else None
        if status == 401:
            headers = {"WWW-Authenticate": "Bearer"}
        return JSONResponse(error_body(exc.kind, exc.detail), status_code=status, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [{k: v for k, v in e.items() if k in ("loc", "msg", "type")} for e in exc.errors()]
        return JSONResponse(
            error_body("validation_error", _validation_detail(exc), errors=errors), status_code=422
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        kind = _STATUS_KIND.get(exc.status_code, "error")
        return JSONResponse(
            error_body(kind, str(exc.detail)),
            status_code=exc.status_code,
            headers=getattr(exc, "headers", None),
        )

    @app.exception_handler(sa_exc.DataError)
    async def _data(_: Request, exc: sa_exc.DataError) -> JSONResponse:
        # input Postgres cannot represent (e.g. an out-of-range number in a payload)
        return JSONResponse(
            error_body("invalid_input", f"the database refused the value: {exc.orig}"), status_code=422
        )

    def _unavailable() -> JSONResponse:
        return JSONResponse(
            error_body(
                "unavailable", "the database is unavailable; retry later (with your idempotency keys)"
            ),
            status_code=503,
            headers={"Retry-After": "1"},
        )

    # Database outages get handlers of their own: the catch-all below runs in Starlette's outermost
    # middleware, which re-raises after answering and so drops the client's keep-alive connection.
    async def _database(_: Request, exc: Exception) -> JSONResponse:
        if is_unavailable(exc):
            return _unavailable()
        _log.exception("database error")
        return JSONResponse(error_body("internal", "internal error; it has been logged"), status_code=500)

    for database_error in (
        sa_exc.DBAPIError,
        sa_exc.TimeoutError,
        sa_exc.InterfaceError,
        OSError,
        TimeoutError,
    ):
        app.add_exception_handler(database_error, _database)

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
        if is_unavailable(exc):
            return _unavailable()
        _log.exception("unhandled error")
        return JSONResponse(error_body("internal", "internal error; it has been logged"), status_code=500)
