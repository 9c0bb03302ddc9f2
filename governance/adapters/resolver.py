"""Name resolution: how webhooks ask the network where a host is (governance/webhooks.py judges it)."""

from __future__ import annotations

import asyncio
import socket

__all__ = ["resolve_addresses"]


async def resolve_addresses(host: str) -> list[str]:
    """Every address `host` resolves to; none when it does not resolve or is not a name the resolver takes."""
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError, ValueError):
        return []
    return sorted({str(info[4][0]) for info in infos})
