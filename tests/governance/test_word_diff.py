"""The word diff an approver reads (governance/word_diff.py): exact, word-level, and readable."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from governance.word_diff import MAX_DIFF_TOKENS, DiffKind, DiffOp, word_diff, word_diff_text


def _side(ops: list[DiffOp], keep: DiffKind) -> str:
    return "".join(o.text for o in ops if o.op in (DiffKind.EQUAL, keep))


def test_word_diff_replaces_whole_words_and_joins_neighbouring_changes() -> None:
    ops = word_diff("db.driver: psycopg 3 with the async API", "db.driver: asyncpg with its own pool")
    assert word_diff_text(ops) == "db.driver: [-psycopg 3-]{+asyncpg+} with [-the async API-]{+its own pool+}"


def test_word_diff_of_equal_texts_is_one_equal_run() -> None:
    assert word_diff("same words\nhere", "same words\nhere") == [DiffOp(DiffKind.EQUAL, "same words\nhere")]


def test_word_diff_keeps_line_breaks_between_changes_as_they_are() -> None:
    ops = word_diff("alpha\nbeta", "gamma\ndelta")
    assert DiffOp(DiffKind.EQUAL, "\n") in ops


def test_word_diff_from_nothing_is_one_insertion() -> None:
    assert word_diff("", "new text") == [DiffOp(DiffKind.INSERT, "new text")]


def test_word_diff_of_texts_beyond_the_token_limit_still_rebuilds_both() -> None:
    old = "word " * (MAX_DIFF_TOKENS + 50)
    new = "word " * MAX_DIFF_TOKENS + "other " * 50
    ops = word_diff(old, new)
    assert _side(ops, DiffKind.DELETE) == old and _side(ops, DiffKind.INSERT) == new


@given(st.text(max_size=200), st.text(max_size=200))
def test_word_diff_rebuilds_the_old_and_the_new_text(old: str, new: str) -> None:
    ops = word_diff(old, new)
    assert _side(ops, DiffKind.DELETE) == old and _side(ops, DiffKind.INSERT) == new
    assert all(o.text for o in ops)  # no empty runs
    assert all(a.op is not b.op for a, b in zip(ops, ops[1:], strict=False))  # runs of a kind are joined
