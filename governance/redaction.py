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
from typing import Any

__all__ = ["Redaction", "redact", "redact_json", "is_secret_name", "PLACEHOLDER"]

PLACEHOLDER = "[REDACTED]"

# What a key that holds a secret is called, alone or inside a longer name (DB_PASSWORD, PGPASSWORD,
# aws_secret_access_key, OPENAI_API_KEY, client-secret, SLACK_TOKEN).
_SECRET_WORD = (
    r"password|passwd|pwd|secret|api[_-]?key|access[_-]?key|access[_-]?token|auth[_-]?token"
    r"|refresh[_-]?token|private[_-]?key|[_-]token"
)
# a JSON field may be called just "token"; in prose "token: 5" is too often not a credential
_SECRET_NAME = re.compile(rf"(?i)^(?:token|[A-Za-z0-9_.-]*(?:{_SECRET_WORD})(?:[_.-][A-Za-z0-9]+)*)$")

# Order matters: whole blocks (private spans, PEM keys) first, so the shorter patterns do not cut them up.
_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("private", re.compile(r"<private>.*?(?:</private>|\Z)", re.IGNORECASE | re.DOTALL)),
    (
        "private_key",
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?"
            r"(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
            re.DOTALL,
        ),
    ),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}")),
    ("bearer_token", re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{8,}")),
    # "basic" alone is an English word: only the header form is a credential
    ("basic_auth", re.compile(r"(?i)\b(authorization[\"']?\s*[:=]\s*[\"']?basic\s+)[A-Za-z0-9+/=]{8,}")),
    ("openai_key", re.compile(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{16,}")),
    ("github_token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})")),
    ("aws_access_key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("slack_token", re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}")),
    ("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}")),
    ("loregate_key", re.compile(r"\blg_[0-9a-f]{12}_[A-Za-z0-9_-]{20,}")),
    (
        # the password may hold "/" (generated ones often do); "host:5432/x@y" is a port, not a password
        "url_credentials",
        re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^\s:/@]+:)(?!\d+(?:/|$))[^\s@]+(@)"),
    ),
    (
        # key=value, key: value and JSON's "key": "value"; a value already redacted is left alone
        "password",
        re.compile(
            rf"(?i)\b([A-Za-z0-9_.-]*?(?:{_SECRET_WORD})(?:[_.-][A-Za-z0-9]+)*)"
            r"([\"']?\s*[:=]\s*)(?!\[REDACTED\])(\"[^\"]*\"|'[^']*'|[^\s,;&]+)"
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
    if kind == "basic_auth":
        return f"{match.group(1)}{PLACEHOLDER}"
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


def is_secret_name(name: str) -> bool:
    """Whether a field called `name` holds a secret (`password`, `DB_PASSWORD`, `aws_secret_access_key`)."""
    return bool(_SECRET_NAME.match(name))


def redact_json(value: Any) -> tuple[Any, dict[str, int]]:
    """Redact a JSON value: every string as `redact` does, and the whole value of a secret-named key.

    `{"password": "hunter2"}` has no secret *shape* in its value; only the key says what it is.
    """
    counts: Counter[str] = Counter()

    def walk(node: Any) -> Any:
        if isinstance(node, str):
            cleaned = redact(node)
            counts.update(cleaned.counts)
            return cleaned.text
        if isinstance(node, dict):
            out: dict[Any, Any] = {}
            for key, item in node.items():
                if isinstance(key, str) and is_secret_name(key) and item not in (None, "", PLACEHOLDER):
                    counts["password"] += 1
                    out[key] = PLACEHOLDER
                else:
                    out[key] = walk(item)
            return out
        if isinstance(node, list):
            return [walk(item) for item in node]
        return node

    return walk(value), dict(counts)
