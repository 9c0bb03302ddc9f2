"""Request and response models of reflection: start a project's reflection, list its reflections."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from api.schemas.text import Text

__all__ = ["ReflectionStart", "ReflectionStarted", "ReflectionPublic", "ReflectionsPage"]

_NAME = r"^[^/ \t\r\n][^/]{0,127}$"


class ReflectionStart(BaseModel):
    """Which project to reflect on (the caller's own when left out)."""

    org: Text | None = Field(default=None, max_length=128, pattern=_NAME, description="Default: the caller's")
    project: Text | None = Field(
        default=None, max_length=128, pattern=_NAME, description="Default: the caller's project"
    )


class ReflectionStarted(BaseModel):
    """The project's reflection workflow (started now, or the one already running)."""

    workflow_id: str
    org: str
    project: str
    started: bool = Field(description="False when a reflection of the project was running already")


class ReflectionPublic(BaseModel):
    """One reflection: what started it, its reflection task (whose promotion publishes the insights)."""

    id: str
    org: str
    project: str
    trigger: str
    requested_by: str | None
    workflow_id: str
    task_id: str | None
    state: str
    episode_count: int
    insight_count: int
    engine: str | None
    created_at: datetime
    finished_at: datetime | None


class ReflectionsPage(BaseModel):
    """The newest reflections of a project."""

    reflections: list[ReflectionPublic]
