"""Which published memories the nightly retention removes, as pure rules (docs/architecture.md).

Memories are judged in **groups that hold many**: (org, project, scope, type), e.g. every worktree-scope
episode of project acme/api, or every task-scope episode of it (failed tasks' Reflexion episodes). Each
active memory is checked against these rules, the first that applies choosing it:

1. **Protected** (never chosen): a memory readers retrieved and judged useful (`retrieval_count` >= 1 and
   usefulness >= `useful_from`), and a memory with an open change request.
2. `useless`: retrieved often (`retrieval_count` >= `min_retrievals`) and judged useless (at least one vote
   and usefulness < `useless_below`; usefulness is the smoothed mean of one vote per principal, so one
   principal alone cannot get there). This rule wins over the source protection below: what builds on such
   a memory is marked stale for a human's review. Votes never prune a **human-approved** memory (this rule
   and `skill_success_rate` pass it by): what a human approved leaves only through a change request or a
   human's retire, whatever agents vote.
3. A memory that other active memories are derived from (`memory_derivations`) is kept, except:
   `distilled_episode`: an episode whose derived memories are all active insights (reflection distilled it)
   is a candidate at any age: the insight carries what it taught. Its insights are not marked stale.
4. Episodes: `episode_age` older than `max_episode_age_days`; `episode_reward` reward below `min_reward`.
5. Skills: `skill_success_rate` below `min_skill_success_rate`, where the rate counts what feedback and
   outcomes recorded: (helpful votes + successful tasks it was published or merged from) / (votes + those
   tasks). A skill nobody has voted on is not judged (no evidence it fails).

**Keep at least N**: pruning never leaves fewer than `keep_per_group` active memories in a group; when the
rules choose more, the newest of the chosen are spared. Inactive memories (superseded, retired, expired)
do not count towards N.

**Inactive rows**: a memory superseded, retired or expired more than `max_inactive_age_days` ago goes by
`inactive_age` (0 keeps them forever), whatever derives from it: its change already marked what builds on
it stale (a supersession moved those links to the successor), so it marks nothing again. Until then search
"as of" a time or `include_history` still finds it.

Storage loads the rows, this module chooses, and a dry run reports the same choice without deleting. The
run deletes a batch at a time and, under the batch's locks, `recheck`s it on the rows as they are now: a
memory that meanwhile was voted useful, became a source or left the rules stays, and a group never drops
below N even if some of it was retired meanwhile. When nothing changed, the run deletes the dry run's choice.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum

from governance.scopes import MemoryType

__all__ = [
    "PruneRule",
    "MARKS_DERIVED_STALE",
    "RetentionPolicy",
    "RetentionRow",
    "PruneChoice",
    "Selection",
    "skill_success_rate",
    "select_for_pruning",
    "recheck",
    "bolder_than",
]


class PruneRule(StrEnum):
    """Why retention chose a memory (recorded in its PRUNED event)."""

    EPISODE_AGE = "episode_age"
    EPISODE_REWARD = "episode_reward"
    DISTILLED_EPISODE = "distilled_episode"
    SKILL_SUCCESS_RATE = "skill_success_rate"
    USELESS = "useless"
    INACTIVE_AGE = "inactive_age"


# rules after which what builds on the pruned memory is marked stale (the others leave nothing behind that
# still builds on it: sources are kept, distilled episodes live on in their insights, inactive rows'
# change marked their derived memories already)
MARKS_DERIVED_STALE = frozenset(
    {PruneRule.USELESS, PruneRule.EPISODE_AGE, PruneRule.EPISODE_REWARD, PruneRule.SKILL_SUCCESS_RATE}
)


@dataclass(frozen=True)
class RetentionPolicy:
    """The numbers of the nightly job (all configurable through Settings).

    `keep_per_task` is the old name of `keep_per_group` (schedules created before the rename carry it):
    when given, it is taken as `keep_per_group`.
    """

    max_episode_age_days: int = 90
    min_reward: float = 0.3
    min_skill_success_rate: float = 0.5
    keep_per_group: int = 5
    # staging of a task whose promotion ended this many days ago moves to an archive file
    staging_archive_after_days: int = 30
    min_retrievals: int = 5
    useless_below: float = 0.3
    useful_from: float = 0.6
    max_inactive_age_days: int = 365
    keep_per_task: int | None = None

    def __post_init__(self) -> None:
        if self.keep_per_task is not None:
            object.__setattr__(self, "keep_per_group", self.keep_per_task)
            object.__setattr__(self, "keep_per_task", None)


# the numbers a larger value of prunes more, and those a smaller value of prunes more
_BOLDER_WHEN_LARGER = ("min_reward", "min_skill_success_rate", "useless_below", "useful_from")
_BOLDER_WHEN_SMALLER = (
    "max_episode_age_days",
    "keep_per_group",
    "staging_archive_after_days",
    "min_retrievals",
)


def bolder_than(asked: RetentionPolicy, configured: RetentionPolicy) -> list[str]:
    """The numbers of `asked` that remove more than `configured` does, each as `name asked (configured)`.

    A run may be more careful than the configuration (keep more, prune later), never bolder: a start that
    carries its own policy (`temporal workflow start`, the Temporal UI) must not prune what the operator's
    settings keep. `max_inactive_age_days = 0` keeps inactive rows forever, the most careful value.
    """
    bolder = [
        f"{name} {getattr(asked, name)} (configured {getattr(configured, name)})"
        for name in _BOLDER_WHEN_LARGER
        if getattr(asked, name) > getattr(configured, name)
    ]
    bolder += [
        f"{name} {getattr(asked, name)} (configured {getattr(configured, name)})"
        for name in _BOLDER_WHEN_SMALLER
        if getattr(asked, name) < getattr(configured, name)
    ]
    kept, configured_kept = asked.max_inactive_age_days, configured.max_inactive_age_days
    if kept > 0 and (configured_kept <= 0 or kept < configured_kept):
        bolder.append(f"max_inactive_age_days {kept} (configured {configured_kept})")
    return bolder


@dataclass(frozen=True)
class RetentionRow:
    """What the rules need to know about one memory (no content)."""

    id: str
    memory_type: str
    org: str
    project: str
    scope: str
    created_at: datetime
    reward: float | None = None
    success: bool | None = None
    # when it was superseded, retired or expired; None while active
    inactive_since: datetime | None = None
    retrieval_count: int = 0
    usefulness: float = 0.5
    votes: int = 0
    helpful_votes: int = 0
    source_tasks: int = 1
    # the types of the active memories derived from it
    derived_types: frozenset[str] = field(default_factory=frozenset)
    open_change_request: bool = False
    # a human approved it (`validation_source = human_approved`, which later boosts keep): votes never
    # prune it; it leaves through a change request or a human's retire
    human_approved: bool = False

    @property
    def group(self) -> tuple[str, str, str, str]:
        return (self.org, self.project, self.scope, self.memory_type)


@dataclass(frozen=True)
class PruneChoice:
    """A memory to remove, the rule that chose it and the reason recorded in its PRUNED event."""

    id: str
    reason: str
    rule: str = ""


@dataclass(frozen=True)
class Selection:
    """What the rules chose, and how many candidates keep-at-least-N spared."""

    chosen: list[PruneChoice]
    spared: int = 0


def skill_success_rate(row: RetentionRow) -> float | None:
    """(helpful votes + successful source tasks) / (votes + source tasks); None without any vote."""
    if row.votes <= 0:
        return None
    successes = row.source_tasks if row.success is True else 0
    return (row.helpful_votes + successes) / (row.votes + row.source_tasks)


def _active_rule(row: RetentionRow, policy: RetentionPolicy, now: datetime) -> tuple[PruneRule, str] | None:
    if row.open_change_request:
        return None
    if row.retrieval_count >= 1 and row.usefulness >= policy.useful_from:
        return None
    if (
        not row.human_approved
        and row.retrieval_count >= policy.min_retrievals
        and row.votes > 0
        and row.usefulness < policy.useless_below
    ):
        return PruneRule.USELESS, (
            f"retrieved {row.retrieval_count} times and judged useless "
            f"(usefulness {row.usefulness:.2f} below {policy.useless_below:.2f})"
        )
    if row.derived_types:
        if row.memory_type == MemoryType.EPISODE and row.derived_types == {MemoryType.INSIGHT.value}:
            return PruneRule.DISTILLED_EPISODE, "episode distilled into an active insight"
        return None
    if row.memory_type == MemoryType.EPISODE:
        if now - row.created_at > timedelta(days=policy.max_episode_age_days):
            return PruneRule.EPISODE_AGE, f"episode older than {policy.max_episode_age_days} days"
        if row.reward is not None and row.reward < policy.min_reward:
            return PruneRule.EPISODE_REWARD, f"episode reward {row.reward:.2f} below {policy.min_reward:.2f}"
    elif row.memory_type == MemoryType.SKILL and not row.human_approved:
        rate = skill_success_rate(row)
        if rate is not None and rate < policy.min_skill_success_rate:
            return PruneRule.SKILL_SUCCESS_RATE, (
                f"skill success rate {rate:.2f} below {policy.min_skill_success_rate:.2f} "
                f"({row.helpful_votes} of {row.votes} votes helpful, {row.source_tasks} tasks)"
            )
    return None


def _inactive_rule(row: RetentionRow, policy: RetentionPolicy, now: datetime) -> PruneChoice | None:
    if row.inactive_since is None or policy.max_inactive_age_days <= 0 or row.open_change_request:
        return None
    if now - row.inactive_since > timedelta(days=policy.max_inactive_age_days):
        reason = f"superseded, retired or expired more than {policy.max_inactive_age_days} days ago"
        return PruneChoice(row.id, reason, PruneRule.INACTIVE_AGE.value)
    return None


def select_for_pruning(rows: Iterable[RetentionRow], policy: RetentionPolicy, now: datetime) -> Selection:
    """The rows to prune with their rules, never leaving fewer than `keep_per_group` active per group."""
    groups: dict[tuple[str, str, str, str], list[RetentionRow]] = defaultdict(list)
    chosen: list[PruneChoice] = []
    for row in rows:
        if row.inactive_since is not None:
            if (inactive := _inactive_rule(row, policy, now)) is not None:
                chosen.append(inactive)
        else:
            groups[row.group].append(row)
    spared = 0
    for group in groups.values():
        candidates: list[tuple[RetentionRow, PruneRule, str]] = []
        for row in group:
            if (found := _active_rule(row, policy, now)) is not None:
                candidates.append((row, *found))
        allowed = max(0, len(group) - max(0, policy.keep_per_group))
        # the oldest go first; the newest candidates are spared so that at least N stay
        candidates.sort(key=lambda c: (c[0].created_at, c[0].id))
        chosen += [PruneChoice(row.id, reason, rule.value) for row, rule, reason in candidates[:allowed]]
        spared += max(0, len(candidates) - allowed)
    chosen.sort(key=lambda c: c.id)
    return Selection(chosen, spared)


def recheck(
    planned: Sequence[PruneChoice],
    fresh: Iterable[RetentionRow],
    active: Mapping[tuple[str, str, str, str], int],
    policy: RetentionPolicy,
    now: datetime,
) -> list[PruneChoice]:
    """The planned choices that still hold on the current rows: each still chosen by a rule, and no group
    left with fewer than `keep_per_group` active memories (`active`: each group's active count now)."""
    rows = {r.id: r for r in fresh}
    budget = {group: max(0, count - max(0, policy.keep_per_group)) for group, count in active.items()}
    held: list[tuple[RetentionRow, PruneChoice]] = []
    for choice in planned:
        row = rows.get(choice.id)
        if row is not None:
            held.append((row, choice))
    held.sort(key=lambda h: (h[0].created_at, h[0].id))
    still: list[PruneChoice] = []
    for row, _ in held:
        if row.inactive_since is not None:
            if (inactive := _inactive_rule(row, policy, now)) is not None:
                still.append(inactive)
            continue
        found = _active_rule(row, policy, now)
        if found is None or budget.get(row.group, 0) <= 0:
            continue
        budget[row.group] -= 1
        still.append(PruneChoice(row.id, found[1], found[0].value))
    still.sort(key=lambda c: c.id)
    return still
