"""The rules of per-item decisions: what an approval may say about single plan items, and what is stored."""

from __future__ import annotations

import pytest

from governance.errors import Conflict, InvalidInput
from governance.item_decisions import (
    ItemChoice,
    ItemDecisionKind,
    PlanItemView,
    check_against_plan,
    check_choices,
    prepare,
)
from governance.word_diff import DiffKind

SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def _check(*choices: ItemChoice, total: int = 3, approving: bool = True, texts: bool = True) -> None:
    check_choices(
        list(choices),
        total,
        approving=approving,
        texts_given=texts,
        max_content_bytes=100,
        quarantined=frozenset({2}),
    )


@pytest.mark.parametrize(
    ("choice", "message"),
    [
        (ItemChoice(3, "reject", "no"), "plan item 3 does not exist: the plan has 3 items (indexes 0 to 2)"),
        (ItemChoice(-1, "reject", "no"), "plan item -1 does not exist"),
        (ItemChoice(0, "drop", "no"), "decision must be 'reject' or 'edit'"),
        (ItemChoice(0, "reject", "   "), "plan item 0: a rejected item needs a reason"),
        (ItemChoice(0, "reject", "no", content="x"), "a rejected item takes a reason, not new text"),
        (ItemChoice(0, "edit"), "an edit needs a new title or content"),
        (ItemChoice(0, "edit", content=" "), "the edited content is empty"),
        (ItemChoice(0, "edit", content="é" * 51), "is 102 bytes, over the limit of 100"),
        (ItemChoice(0, "edit", title="t" * 501), "the edited title is over 500 characters"),
        (ItemChoice(0, "edit", content="a\x00b"), "the content holds a NUL or a lone surrogate"),
        (ItemChoice(0, "reject", "why\ud800"), "the reason holds a NUL or a lone surrogate"),
    ],
)
def test_check_choices_refuses_with_the_item_named(choice: ItemChoice, message: str) -> None:
    with pytest.raises(InvalidInput, match=message.replace("(", r"\(").replace(")", r"\)")):
        _check(choice)


def test_check_choices_refuses_an_item_decided_twice_and_items_with_a_rejection() -> None:
    with pytest.raises(InvalidInput, match="plan item 1 is decided twice"):
        _check(ItemChoice(1, "reject", "a"), ItemChoice(1, "edit", content="b"))
    with pytest.raises(InvalidInput, match="come with an approval"):
        _check(ItemChoice(1, "reject", "a"), approving=False)


def test_check_choices_refuses_an_edit_of_a_quarantined_item_but_not_its_rejection() -> None:
    with pytest.raises(Conflict, match="plan item 2 is quarantined"):
        _check(ItemChoice(2, "edit", content="harmless now"))
    _check(ItemChoice(2, "reject", "instructions aimed at agents"))


def test_check_choices_without_texts_checks_indexes_only() -> None:
    _check(ItemChoice(0, "reject"), ItemChoice(1, "edit"), texts=False)
    with pytest.raises(InvalidInput, match="plan item 7 does not exist"):
        _check(ItemChoice(7, "reject"), texts=False)


def test_check_against_plan_refuses_missing_and_quarantined_items() -> None:
    items = {0: PlanItemView(0, 0, "t", "c", False), 1: PlanItemView(1, 1, "t", "c", True)}
    check_against_plan([ItemChoice(0, "edit", content="x"), ItemChoice(1, "reject", "r")], items)
    with pytest.raises(InvalidInput, match="plan item 5 does not exist"):
        check_against_plan([ItemChoice(5, "reject", "r")], items)
    with pytest.raises(Conflict, match="quarantined"):
        check_against_plan([ItemChoice(1, "edit", content="x")], items)


def test_prepare_redacts_the_edit_and_diffs_it_against_the_planned_text() -> None:
    item = PlanItemView(4, 4, "Release tags", "Release tags are pushd by CI.", False)
    prepared = prepare(ItemChoice(4, "edit", content=f"Release tags are pushed by CI with {SECRET}."), item)
    assert prepared.decision is ItemDecisionKind.EDIT and prepared.title is None
    assert prepared.content is not None and SECRET not in prepared.content
    assert prepared.original_content == "Release tags are pushd by CI."
    changed = {(op.op, op.text) for op in prepared.content_diff if op.op is not DiffKind.EQUAL}
    assert (DiffKind.DELETE, "pushd") in changed and any("pushed" in text for _, text in changed)


def test_prepare_cleans_a_rejection_reason_as_a_note() -> None:
    item = PlanItemView(1, 1, "t", "c", False)
    prepared = prepare(ItemChoice(1, "reject", f"  leaks {SECRET} <private>mine</private> "), item)
    assert prepared.decision is ItemDecisionKind.REJECT
    assert (
        SECRET not in prepared.reason
        and "mine" not in prepared.reason
        and prepared.reason.startswith("leaks")
    )
