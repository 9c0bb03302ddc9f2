"""Error signatures of bug patterns, and the statistics of the fixes that followed them (pure).

Two tasks that meet the same error rarely see the same text: line numbers, paths, ids, addresses and the
quoted name of the thing that failed all vary. The **signature** keeps what stays: the error type and the
headline message with those parts masked. Two bug patterns with equal signatures are one pattern
(`governance/dedup.py` merges them), which counts its occurrences and the solutions tried, each with its
successes out of its attempts (a task's verification outcome).

The headline is the line naming the error: the last `Type: message` line of a Python traceback (Python
prints the exception last), else the first such line (Node, Java, Go's `panic:`, Rust's `error[E0382]:`,
psql's `ERROR:` / Korean `오류:`), else the first non-empty line (typed `error`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from governance.dedup import normalise_text

__all__ = [
    "FIX_MARKER",
    "FAILED_MARKER",
    "ErrorSignature",
    "SolutionStats",
    "error_signature",
    "error_headline",
    "signature_key",
    "split_bug_pattern",
    "failed_fixes",
    "add_attempt",
    "ranked_solutions",
]

FIX_MARKER = "\nResolved by: "
FAILED_MARKER = "\nTried without success: "
_KEY_PREFIX = "bug."
_MESSAGE_CHARS = 300

_TYPE_NAME = (
    r"(?:[A-Za-z_$][\w$]*\.)*[A-Za-z_$][\w$]*(?:Error|Exception|Warning|Exit|Interrupt|Failure|Fault|Violation)"
    r"|(?:[a-z_][\w$]*\.)+[A-Z][\w$]*"
    r"|panic|fatal error|error\[E\d+\]|ERROR|FATAL|PANIC|오류|치명적오류|에러"
)
_HEADLINE = re.compile(
    rf"^\s*(?:Exception in thread \"[^\"]*\"\s+)?(?:Uncaught\s+)?(?P<type>{_TYPE_NAME})\s*:\s*(?P<msg>.*)$"
)
# masks, in order: the earlier ones would be broken up by the later ones
_MASKS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I), "<uuid>"),
    (re.compile(r"\b[a-z][a-z0-9+.-]*://\S+", re.I), "<url>"),
    (re.compile(r"\b0x[0-9a-f]+\b", re.I), "<hex>"),
    (re.compile(r"\"[^\"\n]*\"|'[^'\n]*'|`[^`\n]*`|“[^”\n]*”|‘[^’\n]*’"), "<q>"),
    (re.compile(r"(?:[A-Za-z]:\\|\\\\)[^\s:,;)\]]+"), "<path>"),
    (re.compile(r"(?<![\w<])(?:~|\.{1,2})?(?:/[^\s/:,;)\]]+)+/?"), "<path>"),
    (re.compile(r"\b[\w.-]+\.(?:py|js|ts|tsx|jsx|go|java|rb|rs|c|cc|cpp|h|cs|kt|php|sql)\b"), "<path>"),
    (re.compile(r"\b[0-9a-f]{7,}\b", re.I), "<hex>"),
    (re.compile(r"(?<![<\w])\w*\d\w*(?![>\w])"), "<n>"),
)
_COLLAPSE = re.compile(r"(<(?:n|path|hex|q)>)(?:[\s:.,]*\1)+")


@dataclass(frozen=True)
class ErrorSignature:
    """An error's type and masked headline; `key` is the canonical key the pattern is published under."""

    error_type: str
    message: str

    @property
    def text(self) -> str:
        """`type: message`, the form two occurrences of one error share."""
        return f"{self.error_type}: {self.message}"

    @property
    def key(self) -> str:
        """`bug.<16 hex>`: a canonical key (cognify's convention), equal exactly when the signatures are."""
        return signature_key(self.text)


def signature_key(signature_text: str) -> str:
    """The canonical key of a signature's text."""
    return _KEY_PREFIX + hashlib.sha256(signature_text.encode("utf-8")).hexdigest()[:16]


def _mask(message: str) -> str:
    masked = message
    for pattern, token in _MASKS:
        masked = pattern.sub(token, masked)
    masked = _COLLAPSE.sub(r"\1", masked)
    return normalise_text(masked)[:_MESSAGE_CHARS]


def _headline(text: str) -> re.Match[str] | None:
    """The line naming the error: a Python traceback's last `Type: message`, else the first one."""
    lines = [line for line in text.splitlines() if line.strip()]
    matches = [m for m in (_HEADLINE.match(line) for line in lines) if m is not None]
    if not matches:
        return None
    return matches[-1] if "Traceback (most recent call last)" in text else matches[0]


def error_signature(error: str, stack: str | None = None) -> ErrorSignature:
    """The signature of an error text (a message, or a whole traceback); `stack` is searched too."""
    text = error if not stack else f"{error}\n{stack}"
    chosen = _headline(text)
    if chosen is not None:
        return ErrorSignature(chosen.group("type"), _mask(chosen.group("msg")))
    lines = [line for line in text.splitlines() if line.strip()]
    return ErrorSignature("error", _mask(lines[0] if lines else ""))


def error_headline(error: str) -> str:
    """The line of an error text a person names it by (`ImportError: no module named psycopg2`, unmasked),
    else its first line: a bug pattern's title, not the `Traceback (most recent call last):` it opens with."""
    chosen = _headline(error)
    if chosen is not None:
        return f"{chosen.group('type')}: {chosen.group('msg').strip()}".rstrip(": ")
    return next((line.strip() for line in error.splitlines() if line.strip()), "")


def split_bug_pattern(content: str) -> tuple[str, str | None]:
    """A bug pattern's content (cognify's error, failed fixes, `FIX_MARKER` + fix) as (error, fix or None)."""
    head, marker, fix = content.partition(FIX_MARKER)
    error = head.partition(FAILED_MARKER)[0]
    return error.strip(), (fix.strip() or None) if marker else None


def failed_fixes(content: str) -> list[str]:
    """The fixes a bug pattern's content records as tried without success (before the one that held)."""
    head = content.partition(FIX_MARKER)[0]
    return [part.strip() for part in head.split(FAILED_MARKER)[1:] if part.strip()]


@dataclass(frozen=True)
class SolutionStats:
    """One fix tried against a pattern: how often it was tried and how often the task then passed.

    `reviewed_successes` / `reviewed_attempts` count the attempts a human-approved promotion reported: a fix
    an agent merged into a pattern on its own task's word has none, whoever stands behind the pattern
    (governance/guidance.py shows such a fix as nobody's guidance).
    """

    solution: str
    successes: int
    attempts: int
    reviewed_successes: int = 0
    reviewed_attempts: int = 0

    @property
    def success_rate(self) -> float:
        """successes / attempts (0 when never tried)."""
        return self.successes / self.attempts if self.attempts else 0.0

    @property
    def reviewed_rate(self) -> float:
        """reviewed_successes / reviewed_attempts (0 when no reviewed attempt)."""
        return self.reviewed_successes / self.reviewed_attempts if self.reviewed_attempts else 0.0

    def as_dict(self) -> dict[str, Any]:
        """The JSON form stored in Postgres (the reviewed counts only where there are any)."""
        out: dict[str, Any] = {"solution": self.solution, "successes": self.successes}
        out["attempts"] = self.attempts
        if self.reviewed_attempts:
            out["reviewed_successes"] = self.reviewed_successes
            out["reviewed_attempts"] = self.reviewed_attempts
        return out


def _count(item: dict[str, Any], name: str) -> int:
    value = item.get(name, 0)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _parse(raw: Sequence[Any]) -> list[SolutionStats]:
    out: list[SolutionStats] = []
    for item in raw:
        if isinstance(item, dict) and isinstance(item.get("solution"), str):
            attempts = _count(item, "attempts")
            reviewed = min(_count(item, "reviewed_attempts"), attempts)
            out.append(
                SolutionStats(
                    item["solution"],
                    min(_count(item, "successes"), attempts),
                    attempts,
                    min(_count(item, "reviewed_successes"), reviewed),
                    reviewed,
                )
            )
    return out


def add_attempt(
    raw: Sequence[Any], solution: str, *, succeeded: bool, reviewed: bool = False
) -> list[dict[str, Any]]:
    """The stored solutions with one attempt of `solution` added (same fix: equal normalised text);
    `reviewed` when a human approved the promotion that reports it."""
    stats = _parse(raw)
    wanted = normalise_text(solution)
    won, seen = int(succeeded), int(reviewed)
    for i, s in enumerate(stats):
        if normalise_text(s.solution) == wanted:
            stats[i] = SolutionStats(
                s.solution,
                s.successes + won,
                s.attempts + 1,
                s.reviewed_successes + won * seen,
                s.reviewed_attempts + seen,
            )
            break
    else:
        stats.append(SolutionStats(solution.strip(), won, 1, won * seen, seen))
    return [s.as_dict() for s in stats]


def ranked_solutions(raw: Sequence[Any]) -> list[SolutionStats]:
    """Best first: success rate, then successes, then attempts, then the text (a stable order)."""
    return sorted(_parse(raw), key=lambda s: (-s.success_rate, -s.successes, -s.attempts, s.solution))
