"""Reflection over HTTP: start a project's reflection (humans), list a project's reflections."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from api.http.deps import CurrentPrincipal, Resources
from api.schemas.reflections import ReflectionsPage, ReflectionStart, ReflectionStarted
from api.services import reflections

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["learning"])

_NAME = r"^[^/ \t\r\n][^/]{0,127}$"


@router.post("/reflections", response_model=ReflectionStarted, status_code=202)
async def start_reflection(
    body: ReflectionStart, resources: Resources, principal: CurrentPrincipal
) -> ReflectionStarted:
    """Distil the project's new episodes into insights now (humans); they publish after approval."""
    return await reflections.start_reflection(resources, principal, body)


@router.get("/reflections", response_model=ReflectionsPage)
async def list_reflections(
    resources: Resources,
    principal: CurrentPrincipal,
    org: Annotated[str | None, Query(max_length=128, pattern=_NAME)] = None,
    project: Annotated[str | None, Query(max_length=128, pattern=_NAME)] = None,
) -> ReflectionsPage:
    """The project's newest reflections: trigger, reflection task, state, episodes and insights."""
    return await reflections.reflections(resources, principal, org, project)
