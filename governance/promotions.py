"""A task's promotions, numbered (pure): which staging the next one takes, when one may start, ids.

A task is promoted as often as it learns something new. Its promotions are numbered from 1; the first's
workflow id is `promote-<key>` (the id every promotion had before follow-ups, so recorded histories and
running workflows keep theirs), the n-th's `promote-<key>-<n>`. Each promotion takes the entries its
collect step snapshots: `after_seq < seq <= last_seq`.

- **What the next one takes.** Entries after the last snapshot whose promotion published something
  (`published`, or `unverified`, which keeps the task's episode): a rejected promotion published nothing,
  so its entries stay with the next one, together with what was appended since. Earlier entries are not
  read again: what they taught is published memory already, which the plan compares every candidate with
  (a restatement merges, a contradiction supersedes), so the task's description and the new entries are
  all cognify needs; reading the old entries again would only publish them twice (and count their
  validations twice).
- **When one may start.** No promotion yet: number 1. One running (no outcome) or `failed`: that one (a
  second request finds the running workflow; a failed one runs again under its number). One that ended
  (`published`, `unverified`, `rejected`): the next number, once at least one entry was appended after its
  snapshot (new evidence); otherwise a Conflict naming it.
- **Where an append goes.** To the running promotion while its snapshot is not taken yet (or a failed one
  that will run again); after that, or once it ended, to the next number.
- **Closed.** A task closed by an orchestrator or a human, or erased, takes no entries and no promotions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from governance.errors import Conflict
from governance.staging import public_task_id

__all__ = [
    "PromotionRecord",
    "NextPromotion",
    "PUBLISHING_OUTCOMES",
    "ENDED_OUTCOMES",
    "RERUN_OUTCOME",
    "CLOSE_REASONS",
    "promotion_workflow_id",
    "consumed_through",
    "next_promotion",
    "promotion_of_append",
    "closed_refusal",
]

WORKFLOW_ID_PREFIX = "promote-"
# outcomes whose snapshot is taken: what the next promotion no longer reads
PUBLISHING_OUTCOMES = frozenset({"published", "unverified"})
# outcomes after which a promotion is not run again (the next one has the next number)
ENDED_OUTCOMES = PUBLISHING_OUTCOMES | {"rejected"}
# a failed promotion runs again under its own number and workflow id (a new run)
RERUN_OUTCOME = "failed"
# why a task takes nothing more: closed by its orchestrator or a human, or erased
CLOSE_REASONS = frozenset({"closed", "erased"})


@dataclass(frozen=True)
class PromotionRecord:
    """One promotion of a task as Postgres records it; `outcome` is None while it runs."""

    task_id: str
    number: int
    workflow_id: str
    target_scope: str | None
    after_seq: int
    last_seq: int | None
    outcome: str | None
    requested_by: str | None
    started_at: datetime | None = None
    snapshot_at: datetime | None = None
    ended_at: datetime | None = None

    @property
    def seen_through(self) -> int:
        """The last seq this promotion read (or would have: its start when it never took a snapshot)."""
        return (
            self.last_seq if self.last_seq is not None and self.last_seq > self.after_seq else self.after_seq
        )


@dataclass(frozen=True)
class NextPromotion:
    """The promotion a start request runs: a new one (`new`), or the task's current one found again."""

    number: int
    workflow_id: str
    after_seq: int
    new: bool


def promotion_workflow_id(task_key: str, number: int = 1) -> str:
    """The workflow id of promotion `number` of the task whose key is `task_key`."""
    if number < 1:
        raise ValueError(f"promotions are numbered from 1, not {number}")
    base = f"{WORKFLOW_ID_PREFIX}{task_key}"
    return base if number == 1 else f"{base}-{number}"


def consumed_through(records: Sequence[PromotionRecord]) -> int:
    """The last seq a promotion that published has read: the next one takes the entries after it."""
    consumed = 0
    for record in records:
        if record.outcome in PUBLISHING_OUTCOMES:
            consumed = max(consumed, record.seen_through)
    return consumed


def _named(record: PromotionRecord) -> str:
    return f"promotion {record.number} of task {public_task_id(record.task_id)!r} ({record.workflow_id})"


def next_promotion(task_key: str, records: Sequence[PromotionRecord], task_last_seq: int) -> NextPromotion:
    """Which promotion a start request of the task runs (`records` in number order), or a Conflict why none.

    `task_last_seq` is the seq of the task's last entry (0: none yet).
    """
    if not records:
        if task_last_seq <= 0:
            # an episode distilled from nothing would publish the task's description as what happened,
            # with the requester's evidence as its outcome: a memory no entry supports
            raise Conflict(
                f"task {public_task_id(task_key)!r} has no entries: nothing to promote; append its work "
                "(POST /v1/tasks/{id}/entries), then promote it"
            )
        return NextPromotion(1, promotion_workflow_id(task_key, 1), 0, new=True)
    latest = records[-1]
    if latest.outcome is None or latest.outcome == RERUN_OUTCOME:
        return NextPromotion(latest.number, latest.workflow_id, latest.after_seq, new=False)
    if task_last_seq <= latest.seen_through:
        raise Conflict(
            f"{_named(latest)} ended ({latest.outcome}) and no entry was appended after its snapshot "
            f"(seq {latest.seen_through}): append new evidence to the task, then promote it again"
        )
    number = latest.number + 1
    return NextPromotion(number, promotion_workflow_id(task_key, number), consumed_through(records), new=True)


def promotion_of_append(records: Sequence[PromotionRecord], seq: int) -> int:
    """The number of the promotion an entry appended with `seq` belongs to."""
    if not records:
        return 1
    latest = records[-1]
    if latest.outcome == RERUN_OUTCOME:
        return latest.number  # it runs again and snapshots anew
    if latest.outcome is None and (latest.last_seq is None or seq <= latest.last_seq):
        return latest.number  # its snapshot is not taken yet (or holds the entry)
    return latest.number + 1


def closed_refusal(task_id: str, reason: str, *, doing: str) -> Conflict:
    """Why a closed task refuses `doing` (an append, a promotion)."""
    how = "was erased" if reason == "erased" else "was closed"
    return Conflict(
        f"task {task_id!r} is closed: it {how}, so it takes no {doing}; stage new work in a new task"
    )
