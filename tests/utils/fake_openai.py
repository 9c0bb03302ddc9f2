"""A real OpenAI-compatible HTTP endpoint on loopback, scripted per test.

Production code reaches it through the real `openai` client configured by settings (`llm_base_url`,
`embedding_base_url`), so transport, status codes, timeouts and response parsing are all exercised.
The server records every request body, so tests can assert on exactly what left the process.
"""

from __future__ import annotations

import base64
import json
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

__all__ = [
    "Reply",
    "Recorded",
    "FakeOpenAI",
    "chat_reply",
    "is_cognify",
    "is_judge",
    "judge_input",
    "unreachable_base_url",
]


@dataclass(frozen=True)
class Reply:
    """What the fake answers: a status, a JSON (or raw text) body, after an optional delay."""

    status: int = 200
    body: dict[str, Any] | str = field(default_factory=dict)
    delay: float = 0.0


@dataclass(frozen=True)
class Recorded:
    """One request the fake received (header names lower-cased)."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]


ChatHandler = Callable[[dict[str, Any]], Reply]
EmbedHandler = Callable[[list[str]], list[list[float]]]


def chat_reply(content: str, model: str = "fake-model") -> Reply:
    """A well-formed chat completion whose assistant message is `content`."""
    return Reply(
        body={
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [
                {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
    )


def is_cognify(body: dict[str, Any]) -> bool:
    """The cognify call asks for a JSON-schema answer."""
    return (body.get("response_format") or {}).get("type") == "json_schema"


def is_judge(body: dict[str, Any]) -> bool:
    """The contradiction judge asks for a plain JSON object."""
    return (body.get("response_format") or {}).get("type") == "json_object"


def judge_input(body: dict[str, Any]) -> dict[str, str]:
    """The `{"old", "new"}` pair a judge request carries in its user message."""
    user = next(m for m in body["messages"] if m["role"] == "user")
    return dict(json.loads(user["content"]))


def unreachable_base_url() -> str:
    """A loopback URL nothing listens on (a port bound, then released)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def _default_chat(body: dict[str, Any]) -> Reply:
    return Reply(status=500, body={"error": {"message": "no chat handler scripted", "type": "server_error"}})


def _default_embed(texts: list[str]) -> list[list[float]]:
    raise AssertionError("no embeddings handler scripted")


class FakeOpenAI:
    """`with FakeOpenAI(chat=..., embed=...) as fake:` serves `fake.base_url` until the block ends."""

    def __init__(self, *, chat: ChatHandler | None = None, embed: EmbedHandler | None = None) -> None:
        self.chat: ChatHandler = chat or _default_chat
        self.embed: EmbedHandler = embed or _default_embed
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = (
            True  # a handler sleeping past the client's timeout must not block shutdown
        )
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-openai", daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def chat_requests(self) -> list[dict[str, Any]]:
        """Bodies of every `/v1/chat/completions` request, oldest first."""
        with self._lock:
            return [r.body for r in self.requests if r.path == "/v1/chat/completions"]

    def embedding_requests(self) -> list[dict[str, Any]]:
        """Bodies of every `/v1/embeddings` request, oldest first."""
        with self._lock:
            return [r.body for r in self.requests if r.path == "/v1/embeddings"]

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _answer(self, path: str, body: dict[str, Any]) -> Reply:
        if path == "/v1/chat/completions":
            return self.chat(body)
        if path == "/v1/embeddings":
            texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
            vectors = self.embed([str(t) for t in texts])
            as_base64 = body.get("encoding_format") == "base64"
            return Reply(
                body={
                    "object": "list",
                    "model": body.get("model", "fake-embedder"),
                    "data": [
                        {
                            "object": "embedding",
                            "index": i,
                            # the real API packs little-endian float32 when asked for base64
                            "embedding": base64.b64encode(struct.pack(f"<{len(v)}f", *v)).decode()
                            if as_base64
                            else v,
                        }
                        for i, v in enumerate(vectors)
                    ],
                    "usage": {"prompt_tokens": 1, "total_tokens": 1},
                }
            )
        return Reply(status=404, body={"error": {"message": f"no route {path}", "type": "not_found"}})

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                with fake._lock:
                    fake.requests.append(
                        Recorded(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                    )
                try:
                    reply = fake._answer(self.path, body)
                except Exception as exc:  # noqa: BLE001 - a broken script answers 500, visibly
                    reply = Reply(status=500, body={"error": {"message": repr(exc), "type": "script_error"}})
                if reply.delay:
                    time.sleep(reply.delay)
                raw = reply.body if isinstance(reply.body, str) else json.dumps(reply.body)
                data = raw.encode("utf-8")
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (its timeout), as the test intended

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server's signature
                pass

        return Handler
