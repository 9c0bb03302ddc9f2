"""Guidance for the context block: short "try" and "avoid" lines, each citing the memory it comes from.

Two sources, both evidence of what works here:

- **bug-pattern solutions** (governance/bug_signature.py): a fix whose success rate is at least
  `TRY_MIN_RATE` becomes `try: <fix> (for <signature>, k/n passed)`; a fix tried at least `AVOID_MIN_ATTEMPTS`
  times with a success rate at most `AVOID_MAX_RATE` becomes `avoid: <fix> ...`;
- **established code rules** (confidence above 0.8, governance/trust.py): a rule phrased as a prohibition
  ("never …", "do not …", "don't …", "avoid …") becomes `avoid: …`, any other `try: …`.

Lines are short (`LINE_CHARS`), deduplicated, and at most `MAX_LINES`: rules first (they bind all work),
then fixes by success rate. Each line carries its memory's standing and trust (`- try: … [mem:x]
(human-approved, trust 1.00)`), and only lines of human-approved or verified memories reach the block
(governance/context_block.py): guidance is earned, never an author's own word.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from governance.bug_signature import ranked_solutions
from governance.dedup import normalise_text
from governance.trust import STANDING_LABELS, Standing, is_established_rule

__all__ = [
    "TRY_MIN_RATE",
    "AVOID_MAX_RATE",
    "AVOID_MIN_ATTEMPTS",
    "LINE_CHARS",
    "MAX_LINES",
    "GuidanceLine",
    "bug_pattern_guidance",
    "rule_guidance",
    "select_guidance",
]

TRY_MIN_RATE = 0.7
AVOID_MAX_RATE = 0.3
AVOID_MIN_ATTEMPTS = 2
LINE_CHARS = 200
MAX_LINES = 8

_PROHIBITION = re.compile(r"^\s*(?:never|do not|don't|dont|avoid|must not|should not)\b[\s,:]*", re.I)


@dataclass(frozen=True)
class GuidanceLine:
    """One line of guidance: what to try or avoid, and the memory that says so."""

    verb: Literal["try", "avoid"]
    text: str
    citation: str
    weight: float  # order: rules (their confidence + 1), then fixes by success rate
    # who stands behind the memory and its trust (governance/trust.py): only earned lines are shown
    standing: str = Standing.UNREVIEWED.value
    trust: float | None = None

    def render(self) -> str:
        """`- try: <text> [mem:<citation>] (<standing>, trust 0.80)`."""
        label = STANDING_LABELS[Standing(self.standing)]
        trust = f", trust {self.trust:.2f}" if self.trust is not None else ""
        return f"- {self.verb}: {self.text} [mem:{self.citation}] ({label}{trust})"


def _short(text: str, limit: int = LINE_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def bug_pattern_guidance(
    citation: str,
    signature: str | None,
    solutions: Sequence[Any],
    *,
    standing: Standing | str = Standing.UNREVIEWED,
    trust: float | None = None,
) -> list[GuidanceLine]:
    """Try the fixes that worked, avoid those that kept failing, for one bug pattern."""
    held = Standing(standing).value
    lines: list[GuidanceLine] = []
    about = f" (for {_short(signature, 80)}" if signature else " ("
    for s in ranked_solutions(solutions):
        tally = f"{s.successes}/{s.attempts} passed)"
        sep = ", " if signature else ""
        if s.attempts and s.success_rate >= TRY_MIN_RATE:
            lines.append(
                GuidanceLine(
                    "try", _short(f"{s.solution}{about}{sep}{tally}"), citation, s.success_rate, held, trust
                )
            )
        elif s.attempts >= AVOID_MIN_ATTEMPTS and s.success_rate <= AVOID_MAX_RATE:
            lines.append(
                GuidanceLine(
                    "avoid",
                    _short(f"{s.solution}{about}{sep}{tally}"),
                    citation,
                    1 - s.success_rate,
                    held,
                    trust,
                )
            )
    return lines


def rule_guidance(
    citation: str, content: str, confidence: float, *, standing: Standing | str = Standing.UNREVIEWED
) -> GuidanceLine | None:
    """An established code rule as a line (`avoid` for a prohibition), or None if it is not established."""
    if not is_established_rule(confidence):
        return None
    held = Standing(standing).value
    match = _PROHIBITION.match(content)
    if match is not None and content[match.end() :].strip():
        rest = content[match.end() :].strip()
        return GuidanceLine(
            "avoid", _short(rest[0].lower() + rest[1:]), citation, 1.0 + confidence, held, confidence
        )
    return GuidanceLine("try", _short(content), citation, 1.0 + confidence, held, confidence)


def select_guidance(lines: Sequence[GuidanceLine], max_lines: int = MAX_LINES) -> list[GuidanceLine]:
    """The strongest lines first, one per distinct text, at most `max_lines`."""
    seen: set[str] = set()
    chosen: list[GuidanceLine] = []
    for line in sorted(lines, key=lambda g: (-g.weight, g.verb, g.citation, g.text)):
        key = normalise_text(f"{line.verb} {line.text}")
        if key in seen:
            continue
        seen.add(key)
        chosen.append(line)
        if len(chosen) == max_lines:
            break
    return chosen
