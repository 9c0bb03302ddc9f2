"""Live warnings across tasks: what another task just learnt, before any promotion (pure).

Parallel agents of one project meet the same errors and try the same approaches. The promotion gate makes
knowledge trustworthy, but it runs after a task ends and may wait for a human; until then an agent would
repeat what another agent saw fail an hour ago. So two kinds of staging entry leave a **signal** that other
tasks of the project read at once:

- an `error` entry, under its error signature's key (`governance/bug_signature.py`): when another task met
  the same signature and then wrote a `result` or `decision` (what cognify reads as its fix), that fix
  comes back as a hint in the answer to the append;
- a failed approach (an `approach` entry with `{"outcome": "failed"}`, or a failure recorded through
  `/approaches`), under its fingerprint (`governance/approaches.py`): `approaches/check` and the context
  block name it with its reasons.

**Unreviewed, never published knowledge.** A live warning is only another agent's word: it carries its
task, agent and time and the label `unreviewed`; it is never a memory, never a citation, never counted as a
retrieval or a use, and the context block shows it in a section of its own *after* the published memories
(which win on conflict), within a share of the budget (`LIVE_BUDGET_SHARE`). The circular-fix decision of
the asking task (`valid`) stays its own: a warning informs, it does not refuse.

**Screened like everything read from staging.** Its texts are redacted (`<private>` spans, secrets), and a
warning whose text carries instructions aimed at agents (`governance/instructions.py`: commands to run,
"ignore previous instructions"…) is dropped: an agent must not be able to push a `curl | sh` "fix" into
another agent's next step by writing it into its own staging.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
from functools import lru_cache
from typing import Any

from governance.approaches import approach_fingerprint, normalise_approach
from governance.bug_signature import error_signature
from governance.context_block import FOOTER, HEADER, ContextBlock, estimate_tokens, neutralise_markers
from governance.instructions import quarantine_reason
from governance.redaction import redact_free_text

__all__ = [
    "LIVE_STANDING",
    "LIVE_HEADING",
    "LIVE_BUDGET_SHARE",
    "SignalKind",
    "Signal",
    "WarningKind",
    "LiveWarning",
    "signal_of",
    "cited_citations",
    "shares_words",
    "screen",
    "distinct",
    "live_line",
    "live_reserve",
    "add_live_section",
]

LIVE_STANDING = "unreviewed"
LIVE_HEADING = (
    "### Unreviewed, from other tasks now (not published memory: the memories above win on conflict)"
)
# the share of a context block's budget live warnings may take; the published memories keep the rest
LIVE_BUDGET_SHARE = 0.2
_TEXT_CHARS = 300
# how much of a text is redacted before it is shortened to `_TEXT_CHARS` (a bounded cost per warning)
_SCREEN_CHARS = 8 * _TEXT_CHARS
_CITATION = re.compile(r"\[mem:([A-Za-z0-9]{4,16})\]")
_WHITESPACE = re.compile(r"\s+")


class SignalKind(StrEnum):
    """What a staging entry tells other tasks."""

    ERROR = "error"
    APPROACH = "approach"


@dataclass(frozen=True)
class Signal:
    """A signal's kind and key: an error signature's key, or a failed approach's fingerprint."""

    kind: SignalKind
    key: str


def signal_of(kind: str, content: str, payload: Any) -> Signal | None:
    """The signal a staging entry leaves for other tasks, or None (most entries leave none)."""
    if not content.strip():
        return None
    fields = payload if isinstance(payload, dict) else {}
    if kind == "error":
        stack = fields.get("stack")
        return Signal(
            SignalKind.ERROR, error_signature(content, stack if isinstance(stack, str) else None).key
        )
    if kind == "approach" and fields.get("outcome") == "failed":
        return Signal(SignalKind.APPROACH, approach_fingerprint(content))
    return None


def shares_words(query: str, text: str) -> bool:
    """Whether a text names something the query names (a content word of three letters or more).

    Embedding similarity alone cannot say an approach is about the query: e5's cosines of unrelated short
    texts reach 0.85 (a cache crash against "Raise TypeError on invalid query params"), so a failed approach
    joins a context block only when it is near the query *and* shares a word with it.
    """
    words = {w for w in normalise_approach(query).split() if len(w) >= 3}
    return any(w in words for w in normalise_approach(text).split())


def cited_citations(text: str) -> list[str]:
    """The `[mem:<citation>]` marks of a text, lower case, each once, in order."""
    return list(dict.fromkeys(m.lower() for m in _CITATION.findall(text)))


class WarningKind(StrEnum):
    """What another task learnt: an approach that failed there, or how it got past an error."""

    FAILED_APPROACH = "failed_approach"
    FIX = "fix"


@dataclass(frozen=True)
class LiveWarning:
    """Another task's failed approach or fix, with who wrote it, where and when (always unreviewed).

    `text` is the approach tried (failed_approach) or the error's headline (fix); `detail` the failure
    reasons or the fix itself.
    """

    kind: WarningKind
    text: str
    detail: str | None
    task_id: str
    actor_id: str
    at: datetime
    task_status: str
    same_worktree: bool
    similarity: float | None = None
    signature: str | None = None

    @property
    def standing(self) -> str:
        """Always `unreviewed`: nobody but its author stands behind it yet."""
        return LIVE_STANDING


def _short(text: str | None) -> str | None:
    if text is None:
        return None
    flat = _WHITESPACE.sub(" ", text).strip()
    return flat if len(flat) <= _TEXT_CHARS else flat[: _TEXT_CHARS - 1] + "…"


def _head(text: str | None) -> str | None:
    """The part of a text a warning may show, cut where white space is, never inside a token: redacted
    whole and only then shortened (cut first, a secret across the cut lost the shape that marks it and
    reached other agents in part: 13 of a password's 14 characters, 13 of a card's 16 digits)."""
    if text is None or len(text) <= _SCREEN_CHARS:
        return text
    cut = max(text.rfind(" ", 0, _SCREEN_CHARS), text.rfind("\n", 0, _SCREEN_CHARS))
    return text[: cut if cut > 0 else _SCREEN_CHARS]


@lru_cache(maxsize=4096)
def _carries_instructions(text: str) -> bool:
    """Whether a (short, redacted) text tells its reader to act (`governance/instructions.py`).

    Cached: the same fix or failure reaches many agents, and the scan is the costly part (~20 ms a text).
    """
    return quarantine_reason(text) is not None


def screen(warning: LiveWarning) -> LiveWarning | None:
    """The warning redacted and shortened, or None when it carries instructions aimed at agents.

    A fix's text is the error's **signature** (`type: masked headline`), not the other task's message:
    every task meeting that error shares it, so it says nothing the asking agent's own error did not.
    """
    text = error_signature(warning.text).text if warning.kind is WarningKind.FIX else warning.text
    clean = _short(redact_free_text(_head(text))) or ""
    detail = _short(redact_free_text(_head(warning.detail)))
    if not clean.strip() or _carries_instructions(clean) or (detail and _carries_instructions(detail)):
        return None
    return replace(warning, text=clean, detail=detail)


def distinct(warnings: Sequence[LiveWarning]) -> list[LiveWarning]:
    """The first warning of each (kind, text, detail) once normalised: five tasks that wrote the same fix
    are one hint (the first, in the caller's order: same worktree first, latest first)."""
    seen: set[tuple[str, str, str]] = set()
    kept: list[LiveWarning] = []
    for warning in warnings:
        key = (warning.kind.value, normalise_approach(warning.text), normalise_approach(warning.detail or ""))
        if key not in seen:
            seen.add(key)
            kept.append(warning)
    return kept


def live_line(warning: LiveWarning) -> str:
    """One line of the block's live section: what, from which task and agent, when, and its standing."""
    when = warning.at.strftime("%Y-%m-%d %H:%M")
    where = "" if warning.same_worktree else ", another worktree"
    who = f"({LIVE_STANDING}: task {warning.task_id} by {warning.actor_id}, {when} UTC{where})"
    if warning.kind is WarningKind.FIX:
        line = f"- fixed elsewhere {who}: {warning.text} -> {warning.detail or 'no fix text'}"
    else:
        reasons = f" ({warning.detail})" if warning.detail else ""
        line = f"- failed elsewhere {who}: {warning.text}{reasons}"
    return neutralise_markers(line)


def _with_section(text: str, lines: Sequence[str]) -> str:
    base = text or "\n\n".join([HEADER, FOOTER])
    head = base[: len(base) - len(FOOTER)]
    return head + "\n".join([LIVE_HEADING, *lines]) + "\n\n" + FOOTER


def _fitting(warnings: Sequence[LiveWarning], text: str, max_tokens: int) -> list[str]:
    lines: list[str] = []
    for warning in warnings:
        candidate = [*lines, live_line(warning)]
        if estimate_tokens(_with_section(text, candidate)) > max_tokens:
            break  # in order: the lines shown are the first warnings, best first
        lines = candidate
    return lines


def live_reserve(warnings: Sequence[LiveWarning], max_tokens: int) -> int:
    """Tokens to keep free for the live section: what its lines need, at most `LIVE_BUDGET_SHARE`."""
    if not warnings:
        return 0
    share = int(max_tokens * LIVE_BUDGET_SHARE)
    frame = estimate_tokens("\n\n".join([HEADER, FOOTER]))  # what the block has anyway
    lines = _fitting(warnings, "", frame + share)
    if not lines:
        return 0
    return estimate_tokens(_with_section("", lines)) - frame


def add_live_section(
    block: ContextBlock, warnings: Sequence[LiveWarning], *, max_tokens: int
) -> tuple[ContextBlock, int]:
    """The block with the live section before its footer (each line whole while the budget holds), and
    how many warnings it shows. Citations are unchanged: a live warning is no memory."""
    lines = _fitting(warnings, block.text, max_tokens)
    if not lines:
        return block, 0
    text = _with_section(block.text, lines)
    return replace(block, text=text, tokens=estimate_tokens(text)), len(lines)
