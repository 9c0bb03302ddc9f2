"""`loregate mcp`: the MCP server for coding agents, a thin adapter over the Python client."""
