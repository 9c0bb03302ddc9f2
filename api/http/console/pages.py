"""Rendering the console: one Jinja2 environment (autoescape on), security headers, and error pages.

Every console route is a `ConsoleRoute`: a refusal from a service (`GovernanceError`) becomes an HTML page
with the status the API would answer (api/errors.py), and a GET without a session is sent to sign in.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.routing import APIRoute
from jinja2 import Environment, FileSystemLoader, select_autoescape

from api.errors import status_of, validation_detail
from governance.errors import GovernanceError, Unauthenticated

__all__ = ["TEMPLATES_DIR", "STATIC_DIR", "PREFIX", "render", "ConsoleRoute", "SECURITY_HEADERS"]

PREFIX = "/console"
TEMPLATES_DIR = Path(__file__).resolve().parent / "templates"
STATIC_DIR = Path(__file__).resolve().parent / "static"

# no script runs in the console, nothing loads from elsewhere, no page can be framed, nothing is cached
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'self'; img-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def _when(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S UTC") if value is not None else "—"


_env = Environment(
    loader=FileSystemLoader(TEMPLATES_DIR),
    autoescape=select_autoescape(default=True, default_for_string=True),
    trim_blocks=True,
    lstrip_blocks=True,
)
_env.filters["when"] = _when
_env.filters["url"] = lambda value: quote(str(value), safe="")


def render(request: Request, template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    """The page `template` with `context` (and the request, the signed-in session if any)."""
    page = _env.get_template(template).render(
        request=request, session=getattr(request.state, "console_session", None), **context
    )
    return HTMLResponse(page, status_code=status_code, headers=SECURITY_HEADERS)


def _error_page(request: Request, status: int, kind: str, detail: str) -> HTMLResponse:
    return render(request, "error.html", status_code=status, status=status, kind=kind, detail=detail)


class ConsoleRoute(APIRoute):
    """A console route: refusals as HTML pages with the API's statuses; no session on a GET → sign in."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def _handle(request: Request) -> Response:
            try:
                return await handler(request)
            except Unauthenticated as exc:
                if request.method == "GET":
                    return RedirectResponse(f"{PREFIX}/signin", status_code=303, headers=SECURITY_HEADERS)
                return _error_page(request, 401, exc.kind, exc.detail)
            except GovernanceError as exc:
                return _error_page(request, status_of(exc), exc.kind, exc.detail)
            except RequestValidationError as exc:
                return _error_page(request, 422, "invalid_input", validation_detail(exc.errors()))

        return _handle
