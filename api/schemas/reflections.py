"""Request and response models of reflection: start a project's reflection, list its reflections."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints

from api.schemas.text import refuse_lone_surrogates

__all__ = ["Name", "ReflectionStart", "ReflectionStarted", "ReflectionPublic", "ReflectionsPage"]

# an org or project name: no slash (it separates them in ids), not starting with whitespace; the constraints
# come before the validator, so the OpenAPI schema states the pattern even where the name is optional
Name = Annotated[
    str,
    StringConstraints(min_length=1, max_length=128, pattern=r"^[^/ \t\r\n][^/]*$"),
    BeforeValidator(refuse_lone_surrogates),
]


class ReflectionStart(BaseModel):
    """Which project to reflect on (the caller's own when left out)."""

    model_config = ConfigDict(extra="forbid")

    org: Name | None = Field(default=None, description="Default: the caller's")
    project: Name | None = Field(default=None, description="Default: the caller's project")


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
