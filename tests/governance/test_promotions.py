"""The rules of a task's numbered promotions (governance/promotions.py), as tables of cases."""

from __future__ import annotations

import pytest

from governance.errors import Conflict
from governance.promotions import (
    PromotionRecord,
    closed_refusal,
    consumed_through,
    next_promotion,
    promotion_of_append,
    promotion_workflow_id,
)

KEY = "acme/fix-2"  # a task id ending in `-<n>`: ids are never parsed, the rows say whose they are


def _p(number: int, after: int, last: int | None, outcome: str | None) -> PromotionRecord:
    return PromotionRecord(
        KEY, number, promotion_workflow_id(KEY, number), "task", after, last, outcome, None
    )


def test_promotion_workflow_id_keeps_the_first_and_numbers_the_follow_ups() -> None:
    assert promotion_workflow_id(KEY) == "promote-acme/fix-2"
    assert promotion_workflow_id(KEY, 2) == "promote-acme/fix-2-2"
    with pytest.raises(ValueError):
        promotion_workflow_id(KEY, 0)


def test_next_promotion_of_a_task_never_promoted_is_the_first() -> None:
    assert next_promotion(KEY, [], 1) == next_promotion(KEY, [], 5)
    chosen = next_promotion(KEY, [], 5)
    assert (chosen.number, chosen.workflow_id, chosen.after_seq, chosen.new) == (
        1,
        "promote-acme/fix-2",
        0,
        True,
    )


def test_next_promotion_of_a_task_without_entries_is_a_conflict() -> None:
    with pytest.raises(Conflict, match=r"task 'fix-2' has no entries: nothing to promote"):
        next_promotion(KEY, [], 0)


@pytest.mark.parametrize("outcome", [None, "failed"])
def test_next_promotion_finds_a_running_or_failed_one_again(outcome: str | None) -> None:
    records = [_p(1, 0, 4, "published"), _p(2, 4, None, outcome)]
    chosen = next_promotion(KEY, records, 9)
    assert (chosen.number, chosen.after_seq, chosen.new) == (2, 4, False)


@pytest.mark.parametrize("outcome", ["published", "unverified", "rejected"])
def test_next_promotion_after_an_end_needs_an_entry_after_its_snapshot(outcome: str) -> None:
    records = [_p(1, 0, 4, outcome)]
    with pytest.raises(Conflict, match=rf"ended \({outcome}\) and no entry was appended after its snapshot"):
        next_promotion(KEY, records, 4)
    chosen = next_promotion(KEY, records, 5)
    assert (chosen.number, chosen.workflow_id, chosen.new) == (2, "promote-acme/fix-2-2", True)


def test_a_rejected_promotion_consumes_nothing_a_published_one_its_snapshot() -> None:
    # 1 published entries 1-4; 2 was rejected over 5-7; 3 takes 5 onwards (2's entries come back)
    records = [_p(1, 0, 4, "published"), _p(2, 4, 7, "rejected")]
    assert consumed_through(records) == 4
    assert next_promotion(KEY, records, 8).after_seq == 4
    records = [_p(1, 0, 4, "published"), _p(2, 4, 7, "unverified")]
    assert next_promotion(KEY, records, 8).after_seq == 7


def test_a_promotion_that_never_took_a_snapshot_has_seen_nothing_after_its_start() -> None:
    # unverified by timeout: no collect ran; any entry after its start is new evidence
    records = [_p(1, 0, 4, "published"), _p(2, 4, None, "unverified")]
    with pytest.raises(Conflict):
        next_promotion(KEY, records, 4)
    assert next_promotion(KEY, records, 5).after_seq == 4


@pytest.mark.parametrize(
    ("records", "seq", "number"),
    [
        ([], 1, 1),
        ([_p(1, 0, None, None)], 9, 1),  # running, no snapshot yet: it will read the entry
        ([_p(1, 0, 4, None)], 4, 1),
        ([_p(1, 0, 4, None)], 5, 2),  # after its snapshot: the next one
        ([_p(1, 0, 4, "failed")], 5, 1),  # runs again and snapshots anew
        ([_p(1, 0, 4, "published")], 5, 2),
        ([_p(1, 0, 4, "rejected")], 5, 2),
    ],
)
def test_promotion_of_append(records: list[PromotionRecord], seq: int, number: int) -> None:
    assert promotion_of_append(records, seq) == number


def test_closed_refusal_names_why() -> None:
    assert "it was erased, so it takes no entries" in str(closed_refusal("t-1", "erased", doing="entries"))
    assert "it was closed, so it takes no promotion" in str(
        closed_refusal("t-1", "closed", doing="promotion")
    )
