"""What a workflow shows of an activity's failure: its first line, without the statement behind it.

A database error's text carries the SQL and its bound parameters (`[SQL: …] [parameters: …]`), which may
hold staging content that a reader of the promotion or change request may not read; its first line says
what went wrong. The full error stays in the worker's log and the workflow's history.
"""

from __future__ import annotations

__all__ = ["failure_summary", "MAX_SUMMARY_CHARS"]

MAX_SUMMARY_CHARS = 500
_STATEMENT_MARKS = ("[SQL:", "[parameters:")


def failure_summary(text: str) -> str:
    """The first non-empty line of `text`, cut before a statement's text and to `MAX_SUMMARY_CHARS`."""
    line = next((part.strip() for part in text.splitlines() if part.strip()), "")
    for mark in _STATEMENT_MARKS:
        line = line.split(mark, 1)[0].rstrip()
    if len(line) > MAX_SUMMARY_CHARS:
        line = line[: MAX_SUMMARY_CHARS - 1].rstrip() + "…"
    return line or "the activity failed (no message)"
