"""The use cases, one module per resource, transport-neutral.

HTTP routes (api/http/), gRPC methods (api/grpc/) and, through the client, the CLI and MCP server call these
functions. Each takes the process's `GatewayResources` (api/services/gateway.py) and the authenticated
principal, authorises through Casbin, calls storage, adapters and pure rules, and returns a model of
api/schemas/. No transport decides a permission.
"""
