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

A bug pattern's standing covers the fixes its own text names, not every fix merged into it later: a later
task's fix is one more solution of the pattern, and the pattern's reviewers never saw it. So a fix is
guidance only where someone stands behind it (`fix_standing`): a human approved a promotion that reported
it (its reviewed tally, labelled human-approved), or it is one of the fixes the pattern's text names (the
pattern's standing and tally). Any other fix is the unreviewed word of the task that merged it: listed by
`/v1/bug-patterns/match` as such, never a `try` or `avoid` line.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from governance.bug_signature import SolutionStats, failed_fixes, ranked_solutions, split_bug_pattern
from governance.dedup import normalise_text
from governance.trust import STANDING_LABELS, Standing, is_earned, is_established_rule

__all__ = [
    "TRY_MIN_RATE",
    "AVOID_MAX_RATE",
    "AVOID_MIN_ATTEMPTS",
    "LINE_CHARS",
    "MAX_LINES",
    "GuidanceLine",
    "FixStanding",
    "fix_standing",
    "own_fixes",
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


@dataclass(frozen=True)
class FixStanding:
    """Who stands behind one fix of a bug pattern, and the tally they stand behind."""

    standing: Standing
    successes: int
    attempts: int
    verbs: frozenset[str] = frozenset({"try", "avoid"})  # the lines it may become

    @property
    def success_rate(self) -> float:
        """successes / attempts (0 when never tried)."""
        return self.successes / self.attempts if self.attempts else 0.0


def own_fixes(content: str) -> dict[str, Literal["try", "avoid"]]:
    """The fixes a bug pattern's own text names, normalised, each with the one verb its text allows: `try`
    for the one that held, `avoid` for those tried without success before it."""
    named: dict[str, Literal["try", "avoid"]] = {normalise_text(f): "avoid" for f in failed_fixes(content)}
    fix = split_bug_pattern(content)[1]
    if fix:
        named[normalise_text(fix)] = "try"
    return named


def fix_standing(
    solution: SolutionStats, named: Mapping[str, Literal["try", "avoid"]], pattern: Standing | str
) -> FixStanding:
    """A human-approved promotion reported it: human, its reviewed tally, either verb. The pattern's text
    names it (`named`, from `own_fixes`): the pattern's standing and the whole tally, but only the verb the
    text gives it (later tasks' unreviewed outcomes in the tally cannot turn the fix that held into an
    `avoid`, nor a fix the text says failed into a `try`). Else unreviewed, the whole tally."""
    if solution.reviewed_attempts:
        return FixStanding(Standing.HUMAN, solution.reviewed_successes, solution.reviewed_attempts)
    verb = named.get(normalise_text(solution.solution))
    if verb is None:
        return FixStanding(Standing.UNREVIEWED, solution.successes, solution.attempts)
    return FixStanding(Standing(pattern), solution.successes, solution.attempts, frozenset({verb}))


def bug_pattern_guidance(
    citation: str,
    signature: str | None,
    solutions: Sequence[Any],
    *,
    content: str = "",
    standing: Standing | str = Standing.UNREVIEWED,
    trust: float | None = None,
) -> list[GuidanceLine]:
    """Try the fixes that worked, avoid those that kept failing, for one bug pattern: each fix under its own
    standing (`fix_standing`; `content` is the pattern's text), those nobody stands behind left out."""
    named = own_fixes(content)
    lines: list[GuidanceLine] = []
    about = f" (for {_short(signature, 80)}" if signature else " ("
    sep = ", " if signature else ""
    for s in ranked_solutions(solutions):
        fix = fix_standing(s, named, standing)
        if not is_earned(fix.standing):
            continue
        text = _short(f"{s.solution}{about}{sep}{fix.successes}/{fix.attempts} passed)")
        held = fix.standing.value
        if fix.attempts and fix.success_rate >= TRY_MIN_RATE and "try" in fix.verbs:
            lines.append(GuidanceLine("try", text, citation, fix.success_rate, held, trust))
        elif (
            fix.attempts >= AVOID_MIN_ATTEMPTS and fix.success_rate <= AVOID_MAX_RATE and "avoid" in fix.verbs
        ):
            lines.append(GuidanceLine("avoid", text, citation, 1 - fix.success_rate, held, trust))
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
