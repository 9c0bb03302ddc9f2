"""Which published memories the nightly retention removes as pure rules.

Episodes go when they are older than `max_episode_age_days` or earned a reward below `min_reward`;
skills go when their observed success rate (the usefulness EMA fed by agents' feedback) is below
`min_skill_success_rate`. Whatever the rules say, the `keep_per_task` most recent memories of each type
per task stay, so no task loses its whole history. Storage loads the rows, this module chooses, and a
dry run reports the same choice without deleting.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from governance.scopes import MemoryType

__all__ = ["RetentionPolicy", "RetentionRow", "PruneChoice", "PRUNABLE_TYPES", "select_for_pruning"]

PRUNABLE_TYPES: tuple[str, ...] = (MemoryType.EPISODE.value, MemoryType.SKILL.value)


@dataclass(frozen=True)
class RetentionPolicy:
    """The numbers of the nightly job (all configurable through Settings)."""

    max_episode_age_days: int = 90
    min_reward: float = 0.3
    min_skill_success_rate: float = 0.5
    keep_per_task: int = 5
    # staging of a task whose promotion ended this many days ago moves to an archive file
    staging_archive_after_days: int = 30


@dataclass(frozen=True)
class RetentionRow:
    """What the rules need to know about one episode or skill."""

    id: str
    memory_type: str
    task_id: str
    created_at: datetime
    reward: float | None
    success_rate: float | None


@dataclass(frozen=True)
class PruneChoice:
    """A memory to remove and the reason recorded in its PRUNED event."""

    id: str
    reason: str


def _reason(row: RetentionRow, policy: RetentionPolicy, now: datetime) -> str | None:
    if row.memory_type == MemoryType.EPISODE:
        if now - row.created_at > timedelta(days=policy.max_episode_age_days):
            return f"episode older than {policy.max_episode_age_days} days"
        if row.reward is not None and row.reward < policy.min_reward:
            return f"episode reward {row.reward:.2f} below {policy.min_reward:.2f}"
    elif row.memory_type == MemoryType.SKILL:
        if row.success_rate is not None and row.success_rate < policy.min_skill_success_rate:
            return f"skill success rate {row.success_rate:.2f} below {policy.min_skill_success_rate:.2f}"
    return None


def select_for_pruning(
    rows: Iterable[RetentionRow], policy: RetentionPolicy, now: datetime
) -> list[PruneChoice]:
    """The rows to prune with their reasons, sparing the most recent `keep_per_task` per task and type."""
    groups: dict[tuple[str, str], list[RetentionRow]] = defaultdict(list)
    for row in rows:
        groups[(row.task_id, row.memory_type)].append(row)
    choices: list[PruneChoice] = []
    for group in groups.values():
        group.sort(key=lambda r: (r.created_at, r.id), reverse=True)
        for row in group[policy.keep_per_task :]:
            reason = _reason(row, policy, now)
            if reason is not None:
                choices.append(PruneChoice(row.id, reason))
    choices.sort(key=lambda c: c.id)
    return choices
