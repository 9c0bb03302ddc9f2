"""The append route's own way through the gateway: `POST /v1/tasks/{task_id}/entries` as plain ASGI.

Appends are most of what a gateway serves, and FastAPI's generic path (exception middleware, the exit
stack, routing, dependency resolution, query parsing, response building) cost about as much CPU as the
append itself. This middleware answers a well-formed append directly, calling exactly what the route's
dependencies and handler call, in their order: the principal behind the key (`principal_from_authorization`,
which also takes the rate limiter's token), the task authorised for `write` (`authorized_task`), then the
use case (`api/services/staging.append_drafts`, which the route's `append_entries` calls too). Its
refusals are the installed handlers' answers (`api/http/errors.error_response`), so they are the route's to
the byte.

An append carrying an `Idempotency-Key` header goes to the route, which merges it with the body's keys
(api/http/idempotency.py).

Anything else goes to FastAPI untouched, body included: another method or path, a task id the route's
pattern refuses, a body that is not `application/json`, JSON that does not parse or does not validate as
`EntriesIn`. The body is decoded and checked by msgspec first (`api/schemas/staging_json.py`, `EntriesIn`'s
checks in C); what that refuses meets pydantic's `EntriesIn`, and what pydantic refuses then meets FastAPI's
own `json.loads` and validation, which answer as they always did. The route itself stays (OpenAPI, and those
answers): whatever this path is not sure of, the route answers as before.
"""

from __future__ import annotations

import re
from typing import Any

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.http.errors import error_response
from api.http.routes import staging as staging_routes
from api.schemas.staging import EntriesIn
from api.schemas.staging_json import decode_entries
from api.services import staging
from api.services.gateway import (
    GatewayResources,
    authorized_task,
    presented_key_hash,
    principal_from_authorization,
)
from governance.staging import TASK_ID_PATTERN

__all__ = ["AppendPath", "APPEND_PATH"]

# the route's path template (its Prometheus label) and what it matches
APPEND_PATH = "/v1/tasks/{task_id}/entries"
_MATCH = re.compile(r"/v1/tasks/([^/]+)/entries")
_TASK_ID = re.compile(TASK_ID_PATTERN)
_TASK_ID_MAX = 128  # the route's `TaskId` (api/http/deps.py)
_JSON = re.compile(rb"application/json\s*(;.*)?", re.IGNORECASE | re.DOTALL)


class AppendPath:
    """Pure ASGI middleware: answers well-formed appends itself, passes everything else on."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._route: Any = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        found = _MATCH.fullmatch(scope["path"])
        if found is None:
            await self.app(scope, receive, send)
            return
        task_id = found.group(1)
        authorization: str | None = None
        content_type: bytes | None = None
        keyed = False
        for name, value in scope["headers"]:
            if name == b"authorization" and authorization is None:
                authorization = value.decode("latin-1")
            elif name == b"content-type" and content_type is None:
                content_type = value
            elif name == b"idempotency-key":
                keyed = True
        if (
            keyed
            or len(task_id) > _TASK_ID_MAX
            or _TASK_ID.fullmatch(task_id) is None
            or content_type is None
            or _JSON.fullmatch(content_type) is None
        ):
            await self.app(scope, receive, send)
            return
        raw = await _read_body(receive)
        # msgspec's decoder, checking what `EntriesIn` checks, in C: a tenth of pydantic's time for a batch
        drafts = decode_entries(raw)
        if drafts is None:
            try:
                # pydantic's own JSON parser: one pass instead of `json.loads` and a walk over its objects.
                # What it refuses that `json.loads` takes (a byte-order mark) goes to the route.
                body = EntriesIn.model_validate_json(raw)
            except Exception:  # noqa: BLE001 (whatever it is, the route answers it as it always did)
                # e.g. its 422s, saying precisely what is wrong, after authenticating first
                await self.app(scope, _replay(raw, receive), send)
                return
            drafts = staging.drafts_of(body)
        scope["route"] = self._route_of(scope)  # the metrics' label, as for the route
        resources: GatewayResources = scope["app"].state.resources
        try:
            principal = await principal_from_authorization(resources, authorization)
            task = await authorized_task(resources, principal, task_id, "write")
            ack = await staging.append_drafts(
                resources, principal, task, drafts, key_hash=presented_key_hash(authorization)
            )
        except Exception as exc:
            answer = await error_response(Request(scope), exc)
            if answer is None:
                raise  # the outermost middleware answers 500 and logs it, as for the route
            await answer(scope, receive, send)
            return
        content = ack.model_dump_json().encode()
        await send(
            {
                "type": "http.response.start",
                "status": 201,
                "headers": [
                    (b"content-length", str(len(content)).encode()),
                    (b"content-type", b"application/json"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": content})

    def _route_of(self, scope: Scope) -> Any:
        if self._route is None:
            self._route = next(
                r
                for r in staging_routes.router.routes
                if getattr(r, "path", None) == APPEND_PATH and "POST" in getattr(r, "methods", ())
            )
        return self._route


async def _read_body(receive: Receive) -> bytes:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def _replay(raw: bytes, receive: Receive) -> Receive:
    """A receive that hands the app the body already read, then the connection's own messages."""
    replayed = False

    async def _receive() -> Message:
        nonlocal replayed
        if not replayed:
            replayed = True
            return {"type": "http.request", "body": raw, "more_body": False}
        return await receive()

    return _receive
