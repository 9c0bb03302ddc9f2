"""Response models of structured episodes and of a project's computed knowledge (hotspots, statistics)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "EpisodeFilePublic",
    "ToolUsePublic",
    "ErrorTypeCountPublic",
    "TestRunPublic",
    "PivotPublic",
    "EpisodePublic",
    "HotspotPublic",
    "BugPatternCountPublic",
    "TouchedFilePublic",
    "TaskTypeCountPublic",
    "ProjectKnowledgePublic",
]


class EpisodeFilePublic(BaseModel):
    """A file the task touched, with the lines it changed there (0 where nothing said)."""

    path: str
    touches: int
    lines_added: int
    lines_removed: int
    tracked: bool = Field(False, description="The agent tracked it in its working memory")


class ToolUsePublic(BaseModel):
    """A tool and how often the task called it."""

    tool: str
    calls: int


class ErrorTypeCountPublic(BaseModel):
    """An error type (`KeyError`, `TypeError`, `error` when none is named) and how often it occurred."""

    error_type: str
    count: int


class TestRunPublic(BaseModel):
    """The last test run the task reported."""

    __test__ = False  # not a pytest class

    framework: str | None
    run: int
    passed: int
    failed: int


class PivotPublic(BaseModel):
    """Where the approach changed: from what, to what, and why (`seq` of the entry that said so)."""

    model_config = ConfigDict(populate_by_name=True)

    from_: str = Field(alias="from")
    to: str
    why: str
    seq: int


class EpisodePublic(BaseModel):
    """An episode's structured fields (docs/episodes.md), beside its prose."""

    task_type: str = Field(description="bugfix, feature, refactor, test, docs or other")
    task_type_source: str = Field(description="payload, words, files or default: where the type came from")
    outcome: str = Field(description="success or failure")
    files: list[EpisodeFilePublic]
    symbols: list[str]
    tools: list[ToolUsePublic]
    error_types: list[ErrorTypeCountPublic]
    tests: TestRunPublic | None
    test_runs: int
    pivots: list[PivotPublic]
    lines_added: int
    lines_removed: int
    tokens: int | None
    duration_ms: int | None
    decided_hypotheses: list[str] = Field(
        description="Hypotheses of the working memory that became decisions"
    )


class HotspotPublic(BaseModel):
    """A file by its failures: failed episodes that touched it, error occurrences, and its churn."""

    path: str
    failed_episodes: int
    episodes: int
    errors: int
    lines_changed: int


class BugPatternCountPublic(BaseModel):
    """A bug pattern and how often it occurred."""

    citation: str
    title: str
    occurrences: int


class TouchedFilePublic(BaseModel):
    """A file by the episodes that touched it."""

    path: str
    episodes: int
    lines_changed: int


class TaskTypeCountPublic(BaseModel):
    """Episodes of one task type, and how many succeeded."""

    task_type: str
    episodes: int
    succeeded: int


class ProjectKnowledgePublic(BaseModel):
    """A project's hotspots and statistics as the scheduled workflow last computed them from its published
    project-scope memory."""

    org: str
    project: str
    computed_at: datetime
    tasks: int
    episodes: int
    succeeded: int
    success_rate: float | None = Field(description="Succeeded episodes / episodes")
    task_types: list[TaskTypeCountPublic]
    hotspots: list[HotspotPublic]
    churn: list[TouchedFilePublic] = Field(description="Files by lines changed")
    most_touched: list[TouchedFilePublic]
    common_errors: list[ErrorTypeCountPublic] = Field(description="Error types by occurrences in episodes")
    bug_patterns: list[BugPatternCountPublic]
