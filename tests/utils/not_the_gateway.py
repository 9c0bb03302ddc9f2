"""A server on loopback that is not loregate's gateway, for what clients say when pointed at one.

GET `/v1/tasks/...` answers 200 with JSON that is no loregate model; `/v1/promotions/t-1/plan` a proxy's
502 page; `/v1/memories/...` and `/v1/exports` 200 with an HTML page, and anything else (and every POST) a
404 HTML page: a web server's, as when `LOREGATE_URL` names the wrong port.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["HTML_PAGE", "not_the_gateway"]

HTML_PAGE = b"<!doctype html>\n<html>\n<head><title>Welcome</title></head>\n<body>It works!</body>\n</html>\n"


class _NotTheGateway(BaseHTTPRequestHandler):
    def _answer(self, status: int, kind: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802 (the http.server hook's name)
        if self.path.startswith("/v1/promotions/t-1/plan"):
            self._answer(502, "text/html", b"<html>bad gateway</html>")
        elif self.path.startswith("/v1/tasks/"):
            self._answer(200, "application/json", b'{"hello": "world"}')
        elif self.path.startswith(("/v1/memories/", "/v1/exports")):
            self._answer(200, "text/html; charset=utf-8", HTML_PAGE)
        else:
            self._answer(404, "text/html", b"<html><body><h1>404 Not Found</h1>\n</body></html>")

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._answer(404, "text/html", b"<html><body><h1>404 Not Found</h1>\n</body></html>")

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def not_the_gateway() -> Iterator[str]:
    """The base URL of a fresh such server, shut down afterwards."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _NotTheGateway)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
