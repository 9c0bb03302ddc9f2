"""The HTTP gateway's error handlers: every refusal is `{"error": <type>, "detail": <message>}`.

The status comes from the one mapping in api/errors.py; routes document these answers (`ERROR_RESPONSES`).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy import exc as sa_exc
from starlette.exceptions import HTTPException as StarletteHTTPException

from api.errors import error_body, is_unavailable, printable, status_of, validation_detail, validation_errors
from api.schemas.errors import ErrorBody
from api.schemas.text import MAX_JSON_DEPTH
from governance import errors as ge
from governance.limits import retry_after_header

__all__ = ["ERROR_RESPONSES", "install_error_handlers", "error_response"]

_log = logging.getLogger("loregate.api")

# Documented on every route, so clients (and schema-driven tests) know the shape of each refusal.
ERROR_RESPONSES: dict[int | str, dict[str, object]] = {
    401: {"model": ErrorBody, "description": "No, malformed, unknown or revoked API key"},
    403: {"model": ErrorBody, "description": "The policy does not allow this principal to do this"},
    404: {"model": ErrorBody, "description": "Unknown task, memory or promotion"},
    409: {"model": ErrorBody, "description": "Conflicts with what is stored (e.g. idempotency key reuse)"},
    413: {"model": ErrorBody, "description": "Entry, batch or request over the configured limits"},
    422: {"model": ErrorBody, "description": "Malformed input or a broken domain rule"},
    429: {
        "model": ErrorBody,
        "description": "A rate limit or the day's staging quota is reached; retry after Retry-After seconds",
    },
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


def _unparsable_body(exc: StarletteHTTPException) -> str | None:
    """Why FastAPI could not parse a JSON body its parser failed on (its 400 "error parsing the body")."""
    cause = exc.__cause__
    if exc.status_code != 400:
        return None
    if isinstance(cause, RecursionError):
        return f"body: the JSON is nested too deeply to parse (payloads hold at most {MAX_JSON_DEPTH} levels)"
    if isinstance(cause, UnicodeDecodeError):
        return "body: the JSON is not valid UTF-8"
    if isinstance(cause, ValueError):  # e.g. an integer of more digits than Python converts
        return f"body: the JSON cannot be parsed: {cause}"
    return None


async def _governance(_: Request, exc: ge.GovernanceError) -> JSONResponse:
    status = status_of(exc)
    headers = {"Retry-After": "1"} if status == 503 else None
    if isinstance(exc, ge.RateLimited):
        headers = {"Retry-After": retry_after_header(exc.retry_after)}
    if status == 401:
        headers = {"WWW-Authenticate": "Bearer"}
    return JSONResponse(error_body(exc.kind, exc.detail), status_code=status, headers=headers)


async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
    errors = validation_errors(exc.errors())
    detail = _not_json_body(request, exc) or validation_detail(exc.errors())
    return JSONResponse(error_body("validation_error", detail, errors=errors), status_code=422)


def _not_json_body(request: Request, exc: RequestValidationError) -> str | None:
    """Why a body came as no object: sent without a JSON media type (`curl -d` sends a form), FastAPI never
    parses it as JSON, and its own message ("a valid dictionary") hides that."""
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media_type == "application/json" or media_type.endswith("+json"):
        return None
    if not any(e.get("loc") == ("body",) and e.get("type") == "model_attributes_type" for e in exc.errors()):
        return None
    sent = f"`{media_type}`" if media_type else "none"
    return (
        f"body: send a JSON object with the header `Content-Type: application/json` (this request's: {sent})"
    )


async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    unparsable = _unparsable_body(exc)
    if unparsable is not None:
        return JSONResponse(error_body("validation_error", unparsable), status_code=422)
    kind = _STATUS_KIND.get(exc.status_code, "error")
    detail = str(exc.detail)
    if exc.status_code == 404 and detail == "Not Found":  # the router's own: no route has this path
        detail = _no_route(request)
    return JSONResponse(
        error_body(kind, detail),
        status_code=exc.status_code,
        headers=getattr(exc, "headers", None),
    )


def _no_route(request: Request) -> str:
    """Starlette's bare "Not Found" for a path no route takes, said as such: an id holding `/` (sent
    quoted, as clients do) or `..` lands here rather than at its route's own 404 naming the id."""
    path = printable(request.url.path)
    shown = path if len(path) <= 200 else f"{path[:200]}…"
    return f"no API route matches {request.method} {shown} (ids hold no `/`; the routes are at /docs)"


async def _data(_: Request, exc: sa_exc.DataError) -> JSONResponse:
    # input Postgres cannot represent (e.g. an out-of-range number in a payload)
    return JSONResponse(
        error_body("invalid_input", f"the database refused the value: {exc.orig}"), status_code=422
    )


def _unavailable() -> JSONResponse:
    return JSONResponse(
        error_body("unavailable", "the database is unavailable; retry later (with your idempotency keys)"),
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


async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
    if is_unavailable(exc):
        return _unavailable()
    _log.exception("unhandled error")
    return JSONResponse(error_body("internal", "internal error; it has been logged"), status_code=500)


# the handler of each error type, found by the error's nearest class (as Starlette finds them); `Exception`
# itself is left to the outermost middleware (see `_database`)
_HANDLERS: dict[type[Exception], Callable[[Request, Any], Awaitable[JSONResponse]]] = {
    ge.GovernanceError: _governance,
    RequestValidationError: _validation,
    StarletteHTTPException: _http,
    sa_exc.DataError: _data,
    sa_exc.DBAPIError: _database,
    sa_exc.TimeoutError: _database,
    sa_exc.InterfaceError: _database,
    OSError: _database,
    TimeoutError: _database,
}


async def error_response(request: Request, exc: Exception) -> JSONResponse | None:
    """The answer the installed handlers give `exc` (None: an unexpected error, for the outermost
    middleware to answer and log). Routes that bypass FastAPI's exception middleware answer through it."""
    for cls in type(exc).__mro__:
        handler = _HANDLERS.get(cls)
        if handler is not None:
            return await handler(request, exc)
    return None


def install_error_handlers(app: FastAPI) -> None:
    """Every refusal is `{"error": <type>, "detail": <message>}` with the mapped status."""
    for error_type, handler in _HANDLERS.items():
        app.add_exception_handler(error_type, handler)
    app.add_exception_handler(Exception, _unexpected)
