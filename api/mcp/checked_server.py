"""The MCP server's argument checks: a tool refuses what it does not take, and says in one line why.

The MCP SDK ignores an argument a tool does not take (a misspelt `idempotency_key` would store a retry
twice; `task` for `task_id` would act on the environment's task) and answers an invalid one with pydantic's
multi-line report, values and all (an agent may put a secret in the wrong field). Here the first is refused
naming it and what the tool takes, and the second is `validation_error: <field>: <why>` on one line, without
the value sent, as the gateway words its refusals.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp_types import CallToolResult, InputRequiredResult
from mcp_types import Tool as McpTool
from pydantic import ValidationError

from api.schemas.text import printable

__all__ = ["CheckedServer"]

# how much of an unknown argument's name a refusal repeats
_NAME_CHARS = 120


def _name(arg: str) -> str:
    """An argument's name as a refusal shows it: printable, on one line, at most `_NAME_CHARS`."""
    flat = " ".join(printable(arg).split())
    return flat if len(flat) <= _NAME_CHARS else flat[: _NAME_CHARS - 1].rstrip() + "…"


class CheckedServer(MCPServer[None]):
    """An MCP server whose tools refuse an argument they do not take, and say in one line why an argument
    is invalid; the SDK itself ignores the first and answers the second with pydantic's multi-line report,
    values and all."""

    _taken: dict[str, list[str]] | None = None

    async def _arguments(self) -> dict[str, list[str]]:
        """Each tool's argument names, read once (the tools are all added before the server runs)."""
        if self._taken is None:
            tools = await super().list_tools()
            self._taken = {tool.name: list(tool.input_schema.get("properties", {})) for tool in tools}
        return self._taken

    async def list_tools(self) -> list[McpTool]:
        """The tools, each input schema closed, so a client validating before the call refuses as we do."""
        return [
            tool.model_copy(update={"input_schema": {**tool.input_schema, "additionalProperties": False}})
            for tool in await super().list_tools()
        ]

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[None, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        """The tool's answer; arguments out of its input schema are refused before anything is done."""
        takes = (await self._arguments()).get(name)
        if takes is not None:  # else the SDK answers that there is no such tool
            unknown = [_name(arg) for arg in arguments if arg not in takes]
            if unknown:
                noun = "unknown argument" if len(unknown) == 1 else "unknown arguments"
                raise _invalid(name, f"{', '.join(unknown)}: {noun}; {name} takes {', '.join(takes)}")
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError:
            raise  # a crash (its cause may be a ValidationError of an answer): the SDK's generic text
        except ToolError as exc:
            if not isinstance(exc.__cause__, ValidationError):
                raise
            errors = exc.__cause__.errors(include_url=False, include_input=False, include_context=False)
            # `from` the ValidationError: the SDK then logs the fields refused, not the text
            raise _invalid(name, _validation_detail(errors)) from exc.__cause__


def _invalid(tool: str, detail: str) -> ToolError:
    """A refusal of a call's arguments, worded as the gateway's refusals reach the model."""
    return ToolError(f"Error executing tool {tool}: validation_error: {detail}")


def _validation_detail(errors: list[Any]) -> str:
    """Pydantic's errors as one line, as the gateway words them: `field: message; ...`."""
    parts = []
    for err in errors:
        loc = ".".join(str(part) for part in err["loc"])
        message = " ".join(str(err["msg"]).split())
        parts.append(f"{loc}: {message}" if loc else message)
    return printable("; ".join(parts)) or "invalid arguments"
