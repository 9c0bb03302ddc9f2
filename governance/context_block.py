"""The `[MEMORY CONTEXT]` block an agent pastes into its prompt with citations.

    [MEMORY CONTEXT]
    <how to use these memories>

    ### Bug patterns
    - [mem:a7Bc3x] (2026-01-30, verified, trust 0.80) Title: content

    <prefer the current request on conflict>
    [/MEMORY CONTEXT]

Groups follow memory types, ordered by their best-ranked memory; items keep their rank order inside a group.
Every item carries its citation, date, **standing** and trust, so an agent can cite it and weigh it: the
standing (governance/trust.py `standing_of`) says in a word who stands behind it — `human-approved` (a human
approved it), `verified` (independent principals' evidence lifted it past the 0.75 ceiling), `unreviewed`
(only its authors' word, however confident they were).

**Guidance is earned.** Guidance lines and code rules (the lines that tell an agent what to do) come only from
human-approved or verified memories: a guidance line of an unreviewed memory is dropped, and a code rule is
shown only when it is established *and* earned. An unreviewed memory still appears as a memory line, marked.

**Markers are folded before they are neutralised.** A memory must not close the block early and speak as
the user. Before `[MEMORY CONTEXT]` / `[/MEMORY CONTEXT]` look-alikes are replaced, every text is folded:
NFKC (full-width brackets and letters become ASCII), format characters (zero-width space, joiners, BOM,
soft hyphen: Unicode category Cf) removed, and confusable letters (Cyrillic and Greek look-alikes of
M E O R Y C N T X) read as their Latin twins; a marker may then be spelled with `_`, `-`, `.` or spaces
between its words and inside its brackets. The folded text is what the block shows (only the confusable
mapping is used for matching alone, so Cyrillic or Greek content stays as written).

**Stale memories are marked, not left out.** A memory whose source was superseded or retired since (a skill
quoting a replaced decision) keeps its place in rank order (ranking already lowers it) and its line says so:
`- [mem:a7Bc3x] (2026-01-30, trust 1.00, STALE: a memory it builds on changed; check before use) ...`.
Omitting it would hide the only how-to an agent may have; marking it tells the agent to check it against the
current facts, which the same block usually holds.

**Guidance comes first.** Short `try:` / `avoid:` lines with citations (governance/guidance.py: fixes of
bug patterns that worked or kept failing, established code rules) open the block under `### Guidance`, each
added whole while it fits the budget, before any memory.

**Code rules appear once established.** A code rule's confidence follows its observations (an EMA,
governance/trust.py); only a rule above 0.8 has held often enough to bind the work, so a weaker one is left
out of the block (search still finds it).

The block never exceeds its token budget. Tokens are *estimated*, deterministically and without a tokenizer
(none ships offline for every model): every ASCII character counts a quarter token (BPE tokenizers average
about four English characters per token), rounded up over the whole text, and every other character (Hangul,
CJK, symbols) counts one token. English is thus slightly over-counted and the budget holds with a margin for
common tokenizers. Items are added in rank order; one that no longer fits is shortened (content cut with
`…`), and if even that does not fit it is left out and the next, possibly shorter, one is tried.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from governance.guidance import GuidanceLine
from governance.trust import STANDING_LABELS, Standing, is_earned, is_established_rule

__all__ = [
    "ContextItem",
    "ContextBlock",
    "TYPE_HEADINGS",
    "GUIDANCE",
    "STALE_MARK",
    "HEADER",
    "FOOTER",
    "estimate_tokens",
    "fold",
    "FORMAT_CHARACTERS",
    "neutralise_markers",
    "build_context_block",
]

HEADER = (
    "[MEMORY CONTEXT]\n"
    "Published memories from earlier work, most relevant first. Use them only where they are relevant "
    "and cite them as [mem:<id>]."
)
FOOTER = "If any memory conflicts with the current request, follow the current request.\n[/MEMORY CONTEXT]"

GUIDANCE = "guidance"  # the group key of the guidance lines
TYPE_HEADINGS: dict[str, str] = {
    GUIDANCE: "Guidance",
    "profile": "Profile",
    "preference": "Preferences",
    "code_rule": "Code rules",
    "fact": "Facts",
    "insight": "Insights",
    "skill": "Skills",
    "bug_pattern": "Bug patterns",
    "episode": "Past episodes",
}

STALE_MARK = "STALE: a memory it builds on changed; check before use"
_MIN_CONTENT_CHARS = 24  # a shorter cut says nothing useful; leave the item out instead
_WHITESPACE = re.compile(r"\s+")
# A memory must not be able to close the block early and speak as the user (prompt injection): markers are
# matched on the folded text (`fold`), spelled with any separators
_SEP = r"[\s_\-.·]*"
_MARKERS = re.compile(
    r"\[\s*/?\s*" + _SEP.join("MEMORY") + _SEP + _SEP.join("CONTEXT") + r"\s*\]", re.IGNORECASE
)
# Cyrillic and Greek letters that look like the Latin letters of the markers (Unicode confusables.txt)
_CONFUSABLES = str.maketrans(
    {
        **dict.fromkeys("МмΜμ", "M"),  # noqa: RUF001
        **dict.fromkeys("ЕеΕε", "E"),  # noqa: RUF001
        **dict.fromkeys("ОоΟοσ0", "O"),  # noqa: RUF001
        **dict.fromkeys("РрΡρ", "R"),  # noqa: RUF001
        **dict.fromkeys("УуΥυ", "Y"),  # noqa: RUF001
        **dict.fromkeys("СсϹϲ", "C"),  # noqa: RUF001
        **dict.fromkeys("НΝ", "N"),  # noqa: RUF001
        **dict.fromkeys("ТтΤτ", "T"),  # noqa: RUF001
        **dict.fromkeys("ХхΧχ", "X"),  # noqa: RUF001
        **dict.fromkeys("⟦〔【❲⁅〖", "["),  # noqa: RUF001
        **dict.fromkeys("⟧〕】❳⁆〗", "]"),  # noqa: RUF001
        **dict.fromkeys("∕⁄⧸╱", "/"),  # noqa: RUF001
    }
)


@dataclass(frozen=True)
class ContextItem:
    """One memory as the block shows it."""

    citation: str
    memory_type: str
    title: str
    content: str
    created_at: datetime
    confidence: float
    stale: bool = False
    standing: str = Standing.UNREVIEWED.value


@dataclass(frozen=True)
class ContextBlock:
    """The rendered block, the citations it contains (in block order) and its estimated size."""

    text: str
    citations: list[str]
    tokens: int
    omitted: int  # memories that did not fit the budget


def estimate_tokens(text: str) -> int:
    """Deterministic token estimate: ceil(ASCII characters / 4) + one per non-ASCII character."""
    # counted in C: the block is re-measured at every line it tries (a Python loop over the characters took
    # ~25 ms of a 30-memory context block)
    ascii_chars = len(text.encode("ascii", "ignore"))
    return math.ceil(ascii_chars / 4) + (len(text) - ascii_chars)


# Format characters (category Cf): Unicode 14's (Python 3.11's) and the Egyptian hieroglyph controls that
# Unicode 15 added (tests/governance/test_context_block.py checks every Cf of the running Python is here).
# One pattern matched in C, where a category lookup per character in Python cost a 30-memory block ~50 ms.
FORMAT_CHARACTERS = re.compile(
    "[\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e"
    "\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]"
)


def fold(text: str) -> str:
    """NFKC, without format characters (zero-width space and joiners, BOM, soft hyphen: category Cf)."""
    return FORMAT_CHARACTERS.sub("", unicodedata.normalize("NFKC", text))


def neutralise_markers(text: str) -> str:
    """`text` folded, with every look-alike of the block's markers replaced by `(memory context)`.

    The confusable mapping is one character to one character, so a match in the mapped text is the same
    span of the folded text, which keeps its own letters elsewhere.
    """
    folded = fold(text)
    skeleton = folded.translate(_CONFUSABLES)
    if len(skeleton) != len(folded):  # never: the table maps characters to single characters
        raise AssertionError("the confusable mapping must keep lengths")
    parts: list[str] = []
    last = 0
    for match in _MARKERS.finditer(skeleton):
        parts.append(folded[last : match.start()])
        parts.append("(memory context)")
        last = match.end()
    parts.append(folded[last:])
    return "".join(parts)


def _clean(text: str) -> str:
    return neutralise_markers(_WHITESPACE.sub(" ", fold(text)).strip())


def _line(item: ContextItem, content: str) -> str:
    title = _clean(item.title)
    date = item.created_at.date().isoformat()
    mark = f", {STALE_MARK}" if item.stale else ""
    label = STANDING_LABELS[Standing(item.standing)]
    head = f"- [mem:{item.citation}] ({date}, {label}, trust {item.confidence:.2f}{mark})"
    if title and not content.startswith(title):
        return f"{head} {title}: {content}"
    return f"{head} {content}"


def _render(groups: dict[str, list[str]]) -> str:
    sections = [f"### {TYPE_HEADINGS.get(t, t)}\n" + "\n".join(lines) for t, lines in groups.items() if lines]
    return "\n\n".join([HEADER, *sections, FOOTER])


def _fit(groups: dict[str, list[str]], item: ContextItem, content: str, max_tokens: int) -> str | None:
    """The longest line for `item` (whole, else cut) that keeps the block within budget, or None."""
    lines = groups.setdefault(item.memory_type, [])
    try:
        lines.append(_line(item, content))
        if estimate_tokens(_render(groups)) <= max_tokens:
            return lines[-1]
        # binary search on the content length; the estimate is monotone in the cut
        lo, hi, best = _MIN_CONTENT_CHARS, len(content) - 1, None
        while lo <= hi:
            mid = (lo + hi) // 2
            lines[-1] = _line(item, content[:mid].rstrip() + "…")
            if estimate_tokens(_render(groups)) <= max_tokens:
                best, lo = lines[-1], mid + 1
            else:
                hi = mid - 1
        return best
    finally:
        lines.pop()


def build_context_block(
    items: Sequence[ContextItem], *, max_tokens: int, guidance: Sequence[GuidanceLine] = ()
) -> ContextBlock:
    """Render `guidance`, then `items` (already ranked, best first) into one block of at most `max_tokens`
    estimated tokens.

    Nothing to show, or a budget too small for the frame itself, gives an empty block (`text == ""`).
    """
    if max_tokens <= 0:
        raise ValueError("max_tokens must be positive")
    if (not items and not guidance) or estimate_tokens(_render({})) > max_tokens:
        return ContextBlock(text="", citations=[], tokens=0, omitted=len(items))

    groups: dict[str, list[str]] = {}
    placed: dict[str, list[str]] = {}  # citations per group, in group order
    omitted = 0
    for advice in guidance:
        if not is_earned(advice.standing):
            continue  # an unreviewed memory's word is no guidance
        lines = groups.setdefault(GUIDANCE, [])
        lines.append(neutralise_markers(advice.render()))
        if estimate_tokens(_render(groups)) > max_tokens:
            lines.pop()
            continue
        placed.setdefault(GUIDANCE, []).append(advice.citation)
    for item in items:
        if item.memory_type == "code_rule" and not (
            is_established_rule(item.confidence) and is_earned(item.standing)
        ):
            continue  # not established (yet, or any more) or not earned: no rule the agent should follow
        line = _fit(groups, item, _clean(item.content), max_tokens)
        if line is None:
            omitted += 1
            continue
        groups.setdefault(item.memory_type, []).append(line)
        placed.setdefault(item.memory_type, []).append(item.citation)

    if not placed:
        return ContextBlock(text="", citations=[], tokens=0, omitted=omitted)
    text = _render(groups)
    # a memory cited by a guidance line and by its own line counts once
    citations = list(dict.fromkeys(c for t in groups for c in placed.get(t, [])))
    return ContextBlock(text=text, citations=citations, tokens=estimate_tokens(text), omitted=omitted)
