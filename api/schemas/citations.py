"""Request and response models of citation counts: which tasks used which memories."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from api.schemas.text import Text

__all__ = [
    "CitationsIn",
    "CitationCounted",
    "CitationsAck",
    "TaskUsePublic",
    "UsedByPublic",
    "MostUsedItem",
    "MostUsedPublic",
]


class CitationsIn(BaseModel):
    """Memories a task used, by citation (`mem:abc`, `[mem:abc]` or `abc`)."""

    model_config = ConfigDict(extra="forbid")

    citations: list[Text] = Field(min_length=1, max_length=100)


class CitationCounted(BaseModel):
    """One cited memory: counted for the task; `independent` when the caller is not involved in it (only
    independent use feeds ranking)."""

    citation: str
    independent: bool
    new: bool = Field(description="false when this task and caller had already declared it")


class CitationsAck(BaseModel):
    """What was counted, and the citations no memory the task may read answers to."""

    task_id: str
    counted: list[CitationCounted]
    unknown: list[str]


class TaskUsePublic(BaseModel):
    """How one task used a memory."""

    task_id: str
    uses: int
    agents: list[str]
    independent: bool
    first_at: datetime
    last_at: datetime


class UsedByPublic(BaseModel):
    """The tasks that used a memory: those the caller may read in full, the others only counted."""

    citation: str
    tasks: list[TaskUsePublic]
    total_tasks: int
    hidden_tasks: int = Field(description="tasks the caller may not read, counted only")


class MostUsedItem(BaseModel):
    """A memory and its use."""

    citation: str
    type: str
    title: str
    scope: str
    tasks: int
    independent_tasks: int
    independent_principals: int
    uses: int


class MostUsedPublic(BaseModel):
    """The memories a task sees, most used by independent principals first."""

    task_id: str
    results: list[MostUsedItem]
