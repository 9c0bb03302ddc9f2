"""Refuse a path holding an encoded `/` (`%2F`) before any route sees it (404, nothing read or written).

Starlette routes on the decoded path, so `POST /v1/memories/abc%2Fretire` reached the retire route for
memory `abc`, and `GET /v1/memories/abc%2Fhistory` its history: one id, sent quoted, became another route
or another resource. No id holds a `/`, so a path with `%2F` in it names nothing and is refused as such.
"""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Receive, Scope, Send

from api.errors import error_body

__all__ = ["EncodedSlash"]

_DETAIL = (
    "path {path} holds an encoded '/' (%2F): ids hold no '/', and an encoded one is not read as a path "
    "separator nor as part of an id (the routes are at /docs)"
)


class EncodedSlash:
    """Pure ASGI middleware: answers 404 for any HTTP request whose raw path holds `%2F` (any case)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        raw = scope.get("raw_path") if scope["type"] == "http" else None
        if not raw or b"%2f" not in raw.lower():
            await self.app(scope, receive, send)
            return
        path = raw.decode("latin-1")
        shown = path if len(path) <= 200 else f"{path[:200]}…"
        encoded = json.dumps(error_body("not_found", _DETAIL.format(path=shown))).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 404,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(encoded)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": encoded})
