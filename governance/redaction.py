"""Redaction of what must never reach published memory: `<private>` spans and secret-shaped strings.

Staging keeps the raw text for audit; only the promoted copy is cleaned. The report says which kinds were
removed and how many times, never the removed text itself, so it can be stored in a `memory_events` row.
Patterns err on the side of removing too much: a false positive costs a word in a memory, a false
negative leaks a credential to every reader of the scope.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

__all__ = ["Redaction", "redact", "PLACEHOLDER"]

PLACEHOLDER = "[REDACTED]"

# Order matters: whole blocks (private spans, PEM keys) first, so the shorter patterns do not cut them up.
_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("private", re.compile(r"<private>.*?(?:</private>|\Z)", re.IGNORECASE | re.DOTALL)),
    (
        "private_key",
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)", re.DOTALL
        ),
    ),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}")),
    ("bearer_token", re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{8,}")),
    ("openai_key", re.compile(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{16,}")),
    ("github_token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})")),
    ("aws_access_key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("slack_token", re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}")),
    ("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}")),
    ("loregate_key", re.compile(r"\blg_[0-9a-f]{12}_[A-Za-z0-9_-]{20,}")),
    (
        "url_credentials",
        re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^\s:/@]+:)[^\s@/]+(@)"),
    ),
    (
        "password",
        re.compile(
            r"(?i)\b(password|passwd|pwd|secret|api[_-]?key|access[_-]?token|auth[_-]?token|client[_-]?secret)"
            r"(\s*[:=]\s*)(\"[^\"]*\"|'[^']*'|[^\s,;&]+)"
        ),
    ),
]


@dataclass(frozen=True)
class Redaction:
    """Cleaned text and a count per kind of what was removed (never the removed text)."""

    text: str
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def redacted(self) -> bool:
        """Whether anything was removed."""
        return bool(self.counts)


def _replace(kind: str, match: re.Match[str]) -> str:
    # keep the key name / scheme so the memory still reads sensibly ("password=[REDACTED]")
    if kind == "password":
        return f"{match.group(1)}{match.group(2)}{PLACEHOLDER}"
    if kind == "url_credentials":
        return f"{match.group(1)}{PLACEHOLDER}{match.group(2)}"
    if kind == "private":
        return ""
    return PLACEHOLDER


def redact(text: str) -> Redaction:
    """Remove `<private>…</private>` spans (an unclosed one runs to the end) and secret-shaped strings."""
    counts: Counter[str] = Counter()
    for kind, pattern in _PATTERNS:

        def substitute(match: re.Match[str], kind: str = kind) -> str:
            counts[kind] += 1
            return _replace(kind, match)

        text = pattern.sub(substitute, text)
    return Redaction(text=text.strip() if counts else text, counts=dict(counts))
