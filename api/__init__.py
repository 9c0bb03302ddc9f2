"""loregate's entry points: HTTP gateway, gRPC gateway, MCP server, CLI and the `loregate up` supervisor."""
