"""A project's computed knowledge: hotspots and statistics from its published memory."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path

from api.http.deps import CurrentPrincipal, Resources
from api.schemas.episodes import ProjectKnowledgePublic
from api.schemas.working_memory import NOT_BLANK
from api.services import knowledge

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["project knowledge"])


@router.get("/projects/{project}/knowledge", response_model=ProjectKnowledgePublic)
async def project_knowledge(
    resources: Resources,
    principal: CurrentPrincipal,
    project: Annotated[str, Path(min_length=1, max_length=128, pattern=NOT_BLANK)],
) -> ProjectKnowledgePublic:
    """The project's latest computed hotspots and statistics (tasks, success rate, errors, files)."""
    return await knowledge.project_knowledge(resources, principal, project)
