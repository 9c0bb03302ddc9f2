"""The catalogue of vendor token formats (catalogue.toml) as detectors, run forwards and on reversed text.

Each rule runs only when one of its keywords is in the text, so a text that names no vendor prefix costs
one substring search per keyword. `reversed_spans` finds tokens written backwards (`ks_evil_...` for
`sk_live_...`): it reverses the text only when a reversed keyword is there, and maps spans back.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from governance.redaction.kinds import _PRIORITY, Span

__all__ = ["Rule", "rules", "catalogue_spans", "reversed_spans"]

_PATH = Path(__file__).with_name("catalogue.toml")
_START = r"(?<![A-Za-z0-9])"
_END = r"(?![A-Za-z0-9])"
# a token whose random part is a run of one character, or that says it is a placeholder, is a template.
# A vendor's documented example (AWS's `AKIAIOSFODNN7EXAMPLE`, `wJalr…EXAMPLEKEY`: AWS marks every example
# credential with `EXAMPLE`, as gitleaks' allowlist does) is public and grants nothing: it is kept, and so
# are the RFCs' own examples: `Aladdin:open sesame` as HTTP Basic credentials (RFC 7617, RFC 2617), in
# base64, and the stand-ins documentation writes for a value (`Password=myPassword;`, names.py).
_PLACEHOLDER_BODY = re.compile(
    r"(?i)x{6,}|\*{4,}|0{12,}|placeholder|your[_-]|(?-i:EXAMPLE)|(?-i:QWxhZGRpbjpvcGVuIHNlc2FtZQ)"
)


@dataclass(frozen=True)
class Rule:
    """One documented token format."""

    id: str
    pattern: re.Pattern[str]
    keywords: tuple[str, ...]
    group: str | None
    example: str
    source: str
    gitleaks: tuple[str, ...] = ()


@cache
def rules() -> tuple[Rule, ...]:
    """The catalogue, compiled once."""
    data = tomllib.loads(_PATH.read_text(encoding="utf-8"))
    out: list[Rule] = []
    for entry in data["rule"]:
        body = str(entry["regex"])
        end = "" if entry.get("open_end") else _END
        out.append(
            Rule(
                id=str(entry["id"]),
                pattern=re.compile(f"{_START}(?:{body}){end}"),
                keywords=tuple(str(k) for k in entry["keywords"]),
                group=str(entry["group"]) if "group" in entry else None,
                example=str(entry["example"]),
                source=str(entry["source"]),
                gitleaks=_names(entry.get("gitleaks", ())),
            )
        )
    return tuple(out)


def _names(value: object) -> tuple[str, ...]:
    """A `gitleaks` field: one rule id or a list of them."""
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list | tuple):
        raise TypeError(f"catalogue.toml: `gitleaks` is an id or a list of ids, not {value!r}")
    return tuple(str(v) for v in value)


@cache
def _by_keyword() -> tuple[tuple[str, tuple[int, ...]], ...]:
    """Each keyword with the rules it opens (one flat loop of substring searches beats one per rule)."""
    index: dict[str, list[int]] = {}
    for number, rule in enumerate(rules()):
        for keyword in rule.keywords:
            index.setdefault(keyword, []).append(number)
    return tuple((keyword, tuple(numbers)) for keyword, numbers in index.items())


@cache
def _reversed_keywords() -> tuple[str, ...]:
    return tuple(sorted({k[::-1] for rule in rules() for k in rule.keywords if len(k) >= 3}))


def _present(text: str) -> set[int]:
    """The numbers of the rules whose keywords are in `text` (one flat loop of substring searches: a regex
    alternation of the keywords is slower, on short texts and long ones)."""
    haystack = _ascii_only(text)
    return {n for keyword, numbers in _by_keyword() if keyword in haystack for n in numbers}


def _ascii_only(text: str) -> str:
    """`text` without its non-ASCII characters: keywords are ASCII, and a substring search in a one-byte
    string is several times faster than in Korean or Japanese text. Joining across a removed character can
    only add a keyword, which runs a rule for nothing; it never hides one."""
    return text if text.isascii() else text.encode("ascii", "ignore").decode("ascii")


def _rule_spans(rule: Rule, text: str) -> Iterator[Span]:
    token, secret = _PRIORITY["vendor_token"], _PRIORITY["vendor_secret"]
    for match in rule.pattern.finditer(text):
        start, end = match.span(rule.group) if rule.group else match.span()
        if start < end and not _PLACEHOLDER_BODY.search(text, start, end):
            yield start, end, secret if rule.group else token


def catalogue_spans(text: str, depth: int = 0) -> Iterator[Span]:
    """Spans of every catalogue token in `text`."""
    present = _present(text)
    catalogue = rules()
    for number in sorted(present):
        yield from _rule_spans(catalogue[number], text)


def reversed_spans(text: str) -> list[Span]:
    """Spans (in `text`) of catalogue tokens written backwards."""
    haystack = _ascii_only(text)
    if not any(keyword in haystack for keyword in _reversed_keywords()):
        return []
    backwards = text[::-1]
    size = len(text)
    return [(size - end, size - start, priority) for start, end, priority in catalogue_spans(backwards)]
