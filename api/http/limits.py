"""Refuse oversized or encoded request bodies before anything parses them (413, 415; nothing written).

A request body is read as sent: a `Content-Encoding` other than `identity` (gzip, br …) is refused with
415 rather than parsed as plain bytes.
"""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["BodySizeLimit"]


class BodySizeLimit:
    """Pure ASGI middleware: checks Content-Length, and counts chunked bodies as they arrive."""

    def __init__(self, app: ASGIApp, max_bytes: int, *, larger: dict[str, int] | None = None) -> None:
        self.app = app
        self.max_bytes = max_bytes
        # paths whose bodies are files (an export sent back) get a limit of their own
        self.larger = larger or {}

    async def _refuse(self, send: Send, size: str, limit: int) -> None:
        detail = f"request body of {size} bytes exceeds the limit of {limit} bytes"
        await self._answer(send, 413, "payload_too_large", detail)

    async def _answer(self, send: Send, status: int, error: str, detail: str) -> None:
        body = json.dumps({"error": error, "detail": detail}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.larger.get(scope.get("path", ""), self.max_bytes)
        headers = dict(scope.get("headers") or [])
        encoding = headers.get(b"content-encoding", b"").decode("latin-1").strip()
        if encoding and encoding.lower() != "identity":
            detail = (
                f"Content-Encoding '{encoding[:40]}' is not supported: send the request body unencoded "
                "(no Content-Encoding header, or 'identity')"
            )
            await self._answer(send, 415, "unsupported_media_type", detail)
            return
        declared = headers.get(b"content-length")
        if declared is not None:
            try:
                length = int(declared)
            except ValueError:
                length = -1
            if length > limit:
                await self._refuse(send, str(length), limit)
                return
            await self.app(scope, receive, send)
            return
        if scope.get("method") in ("GET", "HEAD", "DELETE", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        # no declared length: buffer up to the limit, then replay the body to the app
        chunks: list[bytes] = []
        total = 0
        more = True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunk = message.get("body", b"")
            total += len(chunk)
            if total > limit:
                await self._refuse(send, f"more than {limit}", limit)
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        replayed = False

        async def _receive() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        await self.app(scope, _receive, send)
