"""A task's working memory, pure: its bounds, when a hypothesis becomes a decision, and the short-term section
of the context block.

**Working memory** is what an agent keeps in mind while a task runs: hypotheses with a confidence and the
staging entries that support them, the files and symbols it tracks, its latest errors, decisions and tool
calls, and counts. The buffers are the newest entries of staging itself, bounded (`RECENT_ERRORS`,
`RECENT_DECISIONS`, `RECENT_TOOL_CALLS`): the log is the truth and the buffers a window onto it. A hypothesis
held at `DECISION_CONFIDENCE` or more is appended to staging once as a `decision` entry, so the gate sees it
like any other decision.

**The short-term section** closes the context block with the task's own latest decisions and errors, and,
for an error that came back, where it happened before and what was tried in between:

    ### This task so far
    - error again (seq 9): ImportError: no module named psycopg2 — happened earlier in this task at seq 3;
      tried since: approach (seq 4) pin psycopg2-binary; tool (seq 6) pip install psycopg2
    - decision (seq 7): use psycopg 3 everywhere

Staging is private to its task, and the block is only built for a reader of that task; the lines are still
redacted (secrets, `<private>` spans) and their markers neutralised, as every text of the block is. The
section takes at most `SHORT_TERM_MAX_TOKENS` and a quarter of the budget; lines are added in that order
(returning errors, decisions, other errors) while they fit.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from governance.bug_signature import error_headline, error_signature
from governance.context_block import FOOTER, HEADER, ContextBlock, estimate_tokens, neutralise_markers
from governance.redaction import redact

__all__ = [
    "RECENT_ERRORS",
    "RECENT_DECISIONS",
    "RECENT_TOOL_CALLS",
    "MAX_HYPOTHESES",
    "MAX_LOCATIONS_SHOWN",
    "DECISION_CONFIDENCE",
    "SHORT_TERM_MAX_TOKENS",
    "SHORT_TERM_ENTRIES",
    "SHORT_TERM_HEADING",
    "StagedLine",
    "hypothesis_sha256",
    "becomes_decision",
    "decision_content",
    "short_term_lines",
    "short_term_budget",
    "with_short_term",
]

RECENT_ERRORS = 10
RECENT_DECISIONS = 5
RECENT_TOOL_CALLS = 10
MAX_HYPOTHESES = 50
MAX_LOCATIONS_SHOWN = 50
DECISION_CONFIDENCE = 0.9
SHORT_TERM_MAX_TOKENS = 400
# how far back the short-term section looks for a returning error and what was tried since
SHORT_TERM_ENTRIES = 200
SHORT_TERM_HEADING = "### This task so far"
_LINE_CHARS = 160
_TRIED_SHOWN = 3
_DECISIONS_SHOWN = 3
_ERRORS_SHOWN = 3
# kinds and payload fields that say what was tried
_TRIED_KINDS = frozenset({"approach", "decision"})


@dataclass(frozen=True)
class StagedLine:
    """A staging entry as the short-term section reads it."""

    seq: int
    kind: str
    content: str
    payload: Any


def hypothesis_sha256(text: str) -> str:
    """The identity of a hypothesis: sha256 of its whitespace-normalised text."""
    return hashlib.sha256(" ".join(text.split()).encode("utf-8")).hexdigest()


def becomes_decision(confidence: float) -> bool:
    """Whether a hypothesis held this firmly is a decision."""
    return confidence >= DECISION_CONFIDENCE


def decision_content(text: str, confidence: float, evidence_seqs: Sequence[int]) -> str:
    """The decision entry a firm hypothesis becomes."""
    evidence = f"; evidence: seq {', '.join(str(s) for s in sorted(evidence_seqs))}" if evidence_seqs else ""
    return f"{text} (hypothesis held at confidence {confidence:.2f}{evidence})"


def _clean(text: str, limit: int = _LINE_CHARS) -> str:
    flat = " ".join(neutralise_markers(redact(text).text).split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _stack(payload: Any) -> str | None:
    stack = payload.get("stack") if isinstance(payload, Mapping) else None
    return stack if isinstance(stack, str) else None


def _tried(entry: StagedLine) -> str | None:
    """What an entry says was tried: an approach or decision, or a tool's command."""
    payload = entry.payload if isinstance(entry.payload, Mapping) else {}
    if entry.kind in _TRIED_KINDS:
        return f"{entry.kind} (seq {entry.seq}) {_clean(entry.content, 80)}"
    command = payload.get("command")
    if isinstance(command, str) and command.strip():
        return f"tool (seq {entry.seq}) {_clean(command, 80)}"
    return None


def short_term_lines(entries: Sequence[StagedLine]) -> list[str]:
    """The section's lines in priority order: returning errors (newest first), then the latest decisions,
    then the latest other errors (module docstring)."""
    ordered = sorted(entries, key=lambda e: e.seq)
    errors = [e for e in ordered if e.kind == "error"]
    by_signature: dict[str, list[StagedLine]] = {}
    for e in errors:
        by_signature.setdefault(error_signature(e.content, _stack(e.payload)).key, []).append(e)
    returning: list[str] = []
    shown: set[int] = set()
    for seen in sorted(by_signature.values(), key=lambda group: -group[-1].seq):
        if len(seen) < 2:
            continue
        last, earlier = seen[-1], seen[:-1]
        tried = [t for e in ordered if earlier[0].seq < e.seq < last.seq and (t := _tried(e)) is not None]
        since = (
            f"; tried since: {'; '.join(tried[-_TRIED_SHOWN:])}" if tried else "; nothing recorded as tried"
        )
        seqs = ", ".join(str(e.seq) for e in earlier[-5:])
        returning.append(
            f"- error again (seq {last.seq}): {_clean(error_headline(last.content))} — happened earlier in "
            f"this task at seq {seqs}{since}"
        )
        shown.update(e.seq for e in seen)
    decisions = [
        f"- decision (seq {e.seq}): {_clean(e.content)}"
        for e in reversed([e for e in ordered if e.kind == "decision"][-_DECISIONS_SHOWN:])
    ]
    others = [
        f"- error (seq {e.seq}): {_clean(error_headline(e.content))}"
        for e in reversed([e for e in errors if e.seq not in shown][-_ERRORS_SHOWN:])
    ]
    return returning + decisions + others


def short_term_budget(max_tokens: int) -> int:
    """Tokens the section may take of a block's budget."""
    return min(SHORT_TERM_MAX_TOKENS, max_tokens // 4)


def _section(lines: Sequence[str]) -> str:
    return SHORT_TERM_HEADING + "\n" + "\n".join(lines)


def with_short_term(
    block: ContextBlock, lines: Sequence[str], *, max_tokens: int, section_tokens: int
) -> ContextBlock:
    """`block` with the section at its end (before the closing words), as many lines (in order, a line that
    does not fit skipped) as keep the section within `section_tokens` and the whole within `max_tokens`; the
    block unchanged when none fits."""
    kept: list[str] = []
    best = block
    for line in lines:
        candidate = _join(block, [*kept, line])
        if (
            estimate_tokens(_section([*kept, line])) > section_tokens
            or estimate_tokens(candidate) > max_tokens
        ):
            continue
        kept.append(line)
        best = ContextBlock(
            text=candidate,
            citations=block.citations,
            tokens=estimate_tokens(candidate),
            omitted=block.omitted,
        )
    return best


def _join(block: ContextBlock, lines: Sequence[str]) -> str:
    section = _section(lines)
    if not block.text:
        return "\n\n".join([HEADER, section, FOOTER])
    if block.text.endswith(FOOTER):
        return block.text[: -len(FOOTER)] + section + "\n\n" + FOOTER
    return block.text + "\n\n" + section  # a frame of another shape: the section still comes last
