"""What a workflow shows of an activity's failure: one line, never the statement or its parameters."""

from __future__ import annotations

from workflows.failure_summary import MAX_SUMMARY_CHARS, failure_summary


def test_a_database_error_shows_its_first_line_without_the_statement() -> None:
    text = (
        "(psycopg.DataError) timestamp too large (after year 10K)\n"
        "[SQL: SELECT content FROM staging_entries WHERE id = %(id)s]\n"
        "[parameters: {'id': 7, 'content': 'password hunter2'}]\n"
        "(Background on this error at: https://sqlalche.me/e/20/9h9h)"
    )
    assert failure_summary(text) == "(psycopg.DataError) timestamp too large (after year 10K)"


def test_a_statement_on_the_first_line_is_cut_and_a_long_line_shortened() -> None:
    assert failure_summary("boom [SQL: INSERT INTO x VALUES ('secret')]") == "boom"
    long = failure_summary("x" * 2000)
    assert len(long) == MAX_SUMMARY_CHARS and long.endswith("…")
    assert failure_summary("\n  \n") == "the activity failed (no message)"
