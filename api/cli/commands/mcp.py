"""`loregate mcp`: the MCP server on stdio for coding agents (see api/mcp/server.py)."""

from __future__ import annotations

import typer

__all__ = ["register", "mcp"]


def mcp() -> None:
    """Serve loregate's tools over MCP on stdio (LOREGATE_URL, LOREGATE_API_KEY, LOREGATE_TASK_ID)."""
    from api.mcp.server import main

    main()


def register(app: typer.Typer) -> None:
    app.command("mcp")(mcp)
