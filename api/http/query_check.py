"""Refuse a query parameter the route does not take: 422 naming it and those it takes, nothing done.

A typo in a filter (`GET /v1/memories?scop=project`, `?min_trsut=0.8`) was ignored: the caller got an
unfiltered answer and no sign of it, and on a route that changes something (`?dryrun=true`) it acted for real.
What a route takes is what its OpenAPI description (`/docs`) lists, read once per process: the contract a
client is written against. Routes left out of the description (the web console's pages) are not checked.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request

from governance.errors import InvalidInput

__all__ = ["refuse_unknown_query"]

_METHODS = ("get", "put", "post", "delete", "patch")


def _taken(app: FastAPI) -> dict[tuple[str, str], frozenset[str]]:
    """(method, path template) → the query parameters the route takes, from the app's OpenAPI description."""
    known: dict[tuple[str, str], frozenset[str]] | None = getattr(app.state, "query_parameters", None)
    if known is None:
        known = {}
        paths: dict[str, Any] = app.openapi().get("paths", {})
        for path, operations in paths.items():
            for method in _METHODS:
                operation = operations.get(method)
                if operation is None:
                    continue
                names = frozenset(
                    p["name"] for p in operation.get("parameters", ()) if p.get("in") == "query"
                )
                known[(method.upper(), path)] = names
        app.state.query_parameters = known
    return known


async def refuse_unknown_query(request: Request) -> None:
    """A dependency of every API route: InvalidInput (422) for a query parameter the route does not take."""
    if not request.url.query:
        return
    route = request.scope.get("route")
    path = getattr(route, "path", None)
    if path is None:
        return
    method = "GET" if request.method == "HEAD" else request.method
    taken = _taken(request.app).get((method, path))
    if taken is None:
        return
    unknown = sorted({name for name in request.query_params if name not in taken})
    if not unknown:
        return
    shown = ", ".join(repr(name[:64]) for name in unknown[:5]) + (" …" if len(unknown) > 5 else "")
    takes = ", ".join(sorted(taken)) if taken else "none"
    raise InvalidInput(
        f"unknown query parameter{'s' if len(unknown) > 1 else ''} {shown}: {method} {path} takes {takes} "
        "(see /docs); nothing was done"
    )
