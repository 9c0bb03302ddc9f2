"""uvicorn's HTTP protocol with TCP_NODELAY on every connection, whatever made the listening socket.

With `--workers N > 1` uvicorn binds the shared socket itself (`socket.socket(family)`, protocol 0), and
asyncio only turns Nagle's algorithm off for sockets whose protocol is IPPROTO_TCP. A response written as
headers then body then waits for the client's delayed ACK: every request took ~40 ms more (measured: one
client, 48 ms p50 per append with 2 workers against 3 ms with 1). Setting the option on each accepted
connection makes the multi-process gateway as quick as the single one.
"""

from __future__ import annotations

import asyncio
import socket

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = ["NoDelayHttpToolsProtocol", "PROTOCOL_PATH"]

# what `uvicorn.run(http=...)` takes: an import path survives the spawn of worker processes
PROTOCOL_PATH = "api.http.protocol:NoDelayHttpToolsProtocol"


def _no_delay(transport: asyncio.BaseTransport) -> None:
    sock = transport.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:  # the peer may already be gone; the request fails on its own
            pass


class NoDelayHttpToolsProtocol(HttpToolsProtocol):
    """httptools' parser (faster than h11) on connections with Nagle's algorithm off."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        _no_delay(transport)
        super().connection_made(transport)
