"""Refuse a query parameter the route does not take, or a body sent to a route that takes none: 422
naming it, nothing done.

A typo in a filter (`GET /v1/memories?scop=project`, `?min_trsut=0.8`) was ignored: the caller got an
unfiltered answer and no sign of it, and on a route that changes something (`?dryrun=true`) it acted for real.
So did a body on a route that reads none: `DELETE /v1/memories/{id}` with `{"dry_run": true}` erased the
memory. What a route takes is what its OpenAPI description (`/docs`) lists, read once per process: the
contract a client is written against. An empty body or an empty JSON object (`{}`, what some clients send
with every POST) is taken as no body. Routes left out of the description (the web console's pages) are not
checked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI, Request

from governance.errors import InvalidInput

__all__ = ["refuse_unknown_query"]

_METHODS = ("get", "put", "post", "delete", "patch")
# what a body may be on a route that takes none: nothing, or an empty JSON object
_NO_BODY = (b"", b"{}")


@dataclass(frozen=True)
class _Takes:
    """What one operation takes besides its path: query parameters by name, and whether a body."""

    query: frozenset[str]
    body: bool


def _taken(app: FastAPI) -> dict[tuple[str, str], _Takes]:
    """(method, path template) → what the route takes, from the app's OpenAPI description."""
    known: dict[tuple[str, str], _Takes] | None = getattr(app.state, "query_parameters", None)
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
                known[(method.upper(), path)] = _Takes(names, "requestBody" in operation)
        app.state.query_parameters = known
    return known


def _may_hold_body(request: Request) -> bool:
    length = request.headers.get("content-length")
    return (length is not None and length.strip() != "0") or "transfer-encoding" in request.headers


async def refuse_unknown_query(request: Request) -> None:
    """A dependency of every API route: InvalidInput (422) for a query parameter the route does not take,
    or a body on a route that takes none."""
    route = request.scope.get("route")
    path = getattr(route, "path", None)
    if path is None:
        return
    method = "GET" if request.method == "HEAD" else request.method
    takes = _taken(request.app).get((method, path))
    if takes is None:
        return
    if not takes.body and _may_hold_body(request):
        body = (await request.body()).strip()
        if body.replace(b" ", b"") not in _NO_BODY:
            raise InvalidInput(
                f"{method} {path} takes no request body, and this one is not empty ({len(body)} bytes): "
                "what the route takes goes in its path or query (see /docs); nothing was done"
            )
    if not request.url.query:
        return
    unknown = sorted({name for name in request.query_params if name not in takes.query})
    if not unknown:
        return
    shown = ", ".join(repr(name[:64]) for name in unknown[:5]) + (" …" if len(unknown) > 5 else "")
    taken = ", ".join(sorted(takes.query)) if takes.query else "none"
    raise InvalidInput(
        f"unknown query parameter{'s' if len(unknown) > 1 else ''} {shown}: {method} {path} takes {taken} "
        "(see /docs); nothing was done"
    )
