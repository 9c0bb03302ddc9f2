"""Every request and response model of the API, one module per resource.

HTTP routes, gRPC methods, the CLI and the Python client share these models, so every channel accepts and
answers the same fields. They import pydantic and the pure rules only: no database, no Temporal.
"""
