"""The public contract of `ReflectionWorkflow`: its id, start input, result and the triggers that start it.

A gateway (`POST /v1/reflections`), the promotion workflow (the importance threshold) and the scheduled
sweep start reflections through this module, without importing the worker or its activities.

One workflow id per project (`reflect-<org>/<project>`): while a reflection of a project runs (it may wait
days for its promotion's approval), other triggers find it and start nothing; once it has ended the id is
free again. Which episodes a reflection distils is decided in the database, not by the id: each episode is
claimed by exactly one reflection (governance/storage/reflections.py), so two starts racing never distil the
same episode twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

__all__ = [
    "NO_INPUT",
    "WORKFLOW_TYPE",
    "WORKFLOW_ID_PREFIX",
    "SWEEP_WORKFLOW_TYPE",
    "SWEEP_WORKFLOW_ID",
    "ReflectionTrigger",
    "ReflectionState",
    "ReflectionInput",
    "ReflectionResult",
    "SweepInput",
    "SweepResult",
    "Names",
    "workflow_id_for",
]

WORKFLOW_TYPE = "ReflectionWorkflow"
WORKFLOW_ID_PREFIX = "reflect-"
SWEEP_WORKFLOW_TYPE = "ReflectionSweepWorkflow"
SWEEP_WORKFLOW_ID = "loregate-reflection-sweep"


class ReflectionTrigger(StrEnum):
    """What started a reflection."""

    THRESHOLD = "threshold"  # a promotion left the project's pending importance over the threshold
    SCHEDULE = "schedule"  # the scheduled sweep
    MANUAL = "manual"  # a human through the API


class ReflectionState(StrEnum):
    """How a reflection stands or ended (also the `state` column of `reflections`)."""

    CLAIMED = "claimed"  # episodes claimed, insights not staged yet
    STAGED = "staged"  # insights staged in the reflection task, its promotion under way
    PUBLISHED = "published"  # insights published and linked to their episodes
    REJECTED = "rejected"  # the promotion was rejected (or its approval timed out)
    NOTHING = "nothing"  # no pending episode, or no group of episodes supported an insight
    FAILED = "failed"  # the promotion failed or was refused at the gate (a disabled reflector)


class Names:
    """Query names."""

    STATUS = "status"


def workflow_id_for(org: str, project: str) -> str:
    """The one workflow id of a project's reflection."""
    return f"{WORKFLOW_ID_PREFIX}{org}/{project}"


@dataclass
class ReflectionInput:
    """Start input: which project, what started it and who asked (None: the system)."""

    org: str
    project: str
    trigger: str = ReflectionTrigger.SCHEDULE.value
    requested_by: str | None = None
    # the gateway's proof that `requested_by` asked through the API (unless `approval_mode=trusting`)
    grant: str | None = None


# the default of the workflow's input, so a start that carried none builds the instance and then fails
# cleanly (workflows/input_decoding.py) instead of retrying its first task; never used to run
NO_INPUT = ReflectionInput(org="", project="")


@dataclass
class ReflectionResult:
    """How the reflection ended; ids and counts only."""

    reflection_id: str
    state: str
    episodes: int = 0
    insights: int = 0
    task_id: str | None = None
    linked: int = 0
    insight_ids: list[str] = field(default_factory=list)
    reason: str | None = None


@dataclass
class SweepInput:
    """The scheduled sweep's input: `orgs` limits it to some orgs (None: every org)."""

    note: str = ""
    orgs: list[str] | None = None


@dataclass
class SweepResult:
    """Projects found due, and how many reflections the sweep started."""

    due: int = 0
    started: int = 0
