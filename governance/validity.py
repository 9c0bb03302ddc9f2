"""Keeping published memory true over time (pure rules): expiry, validity by commit, and derivation.

- **Expiry.** A staging entry's payload may carry `expires_at` (an ISO 8601 time with a timezone, in the
  future) or `ttl_seconds` (a whole number of seconds, counted from when the entry was written), not both.
  A bad value is refused when the entry is appended (`check_entry_expiry`); a promotion publishes the
  earliest expiry among a candidate's source entries (`candidate_expiry`), so knowledge built on something
  temporary expires with it. The Reflexion episode and a generated skill quote the whole task and take no
  expiry from it.
- **Validity by commit.** Verification evidence may name the commit it verified (`COMMIT_PATTERN`: 7 to 64
  hex digits, a short or full git or SHA-256 object id); the promotion publishes it as `valid_from_commit`
  and stamps it as `valid_to_commit` on what it supersedes.
- **Derivation.** `derivation_links` says which memories of one promotion build on which: a skill, bug
  pattern or insight derives from a fact, preference, code rule or profile of the same promotion when they
  share a source entry, or (for keyed sources, the decisions) when the source was decided before the
  derived memory's last entry — the fix of a bug pattern and the steps of a skill were made under it.
  When a source is superseded or retired, what derives from it becomes stale (governance/storage/
  derivations.py) until a human confirms or retires it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from governance.errors import InvalidInput
from governance.scopes import MemoryType

__all__ = [
    "COMMIT_PATTERN",
    "MAX_TTL_SECONDS",
    "EXPIRY_FIELDS",
    "DERIVED_TYPES",
    "SOURCE_TYPES",
    "check_entry_expiry",
    "entry_expiry",
    "candidate_expiry",
    "PublishedItem",
    "derivation_links",
]

COMMIT_PATTERN = r"^[0-9a-fA-F]{7,64}$"
# ten years: a longer ttl is almost certainly a unit mistake (milliseconds for seconds)
MAX_TTL_SECONDS = 10 * 365 * 24 * 3600
EXPIRY_FIELDS = ("expires_at", "ttl_seconds")
# the last year an `expires_at` may name (Python's and psycopg's times end with 9999)
LAST_EXPIRY_YEAR = 9998

DERIVED_TYPES = frozenset({MemoryType.SKILL.value, MemoryType.BUG_PATTERN.value, MemoryType.INSIGHT.value})
SOURCE_TYPES = frozenset(
    {MemoryType.FACT.value, MemoryType.PREFERENCE.value, MemoryType.CODE_RULE.value, MemoryType.PROFILE.value}
)


def _parse_expires_at(raw: Any, field: str) -> datetime:
    if not isinstance(raw, str):
        raise InvalidInput(f"{field} must be an ISO 8601 time with a timezone, e.g. 2027-01-31T00:00:00Z")
    try:
        value = datetime.fromisoformat(raw.strip())
    except ValueError:
        raise InvalidInput(
            f"{field} {raw[:40]!r} is not an ISO 8601 time; use e.g. 2027-01-31T00:00:00Z"
        ) from None
    if value.tzinfo is None:
        raise InvalidInput(f"{field} needs a timezone (e.g. Z or +09:00): {raw[:40]!r}")
    # 9999-12-31T23:59:59-12:00 is in the year 10000 in UTC: stored, no reader could load it back (a
    # year's margin keeps it loadable in any session time zone)
    try:
        utc = value.astimezone(UTC)
    except OverflowError:
        utc = None
    if utc is None or utc.year > LAST_EXPIRY_YEAR:
        raise InvalidInput(
            f"{field} {raw[:40]!r} lies after the year {LAST_EXPIRY_YEAR} (knowledge that does not expire "
            "takes no expires_at)"
        )
    return utc


def _ttl(raw: Any, field: str) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int | float) or not math.isfinite(raw) or raw != int(raw):
        raise InvalidInput(f"{field} must be a whole number of seconds")
    if not 0 < raw <= MAX_TTL_SECONDS:
        raise InvalidInput(f"{field} must lie between 1 and {MAX_TTL_SECONDS} seconds (ten years)")
    return int(raw)


def check_entry_expiry(payload: Any, *, now: datetime, where: str = "payload") -> None:
    """Refuse a payload whose `expires_at` / `ttl_seconds` is malformed, in the past, or both given.

    `where` names the payload in the message (`entries[3].payload`), so the caller knows which field.
    """
    if not isinstance(payload, Mapping):
        return
    given = [f for f in EXPIRY_FIELDS if f in payload]
    if len(given) == 2:
        raise InvalidInput(f"{where}: give expires_at or ttl_seconds, not both")
    if "expires_at" in payload:
        if _parse_expires_at(payload["expires_at"], f"{where}.expires_at") <= now:
            raise InvalidInput(f"{where}.expires_at must lie in the future")
    if "ttl_seconds" in payload:
        _ttl(payload["ttl_seconds"], f"{where}.ttl_seconds")


def entry_expiry(payload: Any, created_at: datetime | None) -> datetime | None:
    """When an entry's knowledge expires, or None; a malformed value (from before the check) is ignored."""
    if not isinstance(payload, Mapping):
        return None
    try:
        if "expires_at" in payload:
            return _parse_expires_at(payload["expires_at"], "expires_at")
        if "ttl_seconds" in payload:
            return (created_at or datetime.now(UTC)) + timedelta(seconds=_ttl(payload["ttl_seconds"], "ttl"))
    except InvalidInput:
        return None
    return None


def candidate_expiry(source_entry_ids: Sequence[int], expiries: Mapping[int, datetime]) -> datetime | None:
    """The earliest expiry among a candidate's source entries (None when none of them expires)."""
    found = [expiries[i] for i in source_entry_ids if i in expiries]
    return min(found) if found else None


@dataclass(frozen=True)
class PublishedItem:
    """A memory one promotion published (or merged into), as derivation sees it."""

    memory_id: str
    memory_type: str
    source_entry_ids: tuple[int, ...]
    canonical_key: str | None = None


def _derives(derived: PublishedItem, source: PublishedItem) -> bool:
    if derived.memory_id == source.memory_id or not derived.source_entry_ids or not source.source_entry_ids:
        return False
    if set(derived.source_entry_ids) & set(source.source_entry_ids):
        return True
    # a keyed source is a decision: a fix or a skill made after it was decided was made under it
    return source.canonical_key is not None and min(source.source_entry_ids) <= max(derived.source_entry_ids)


def derivation_links(items: Sequence[PublishedItem]) -> list[tuple[str, str]]:
    """(derived memory id, source memory id) pairs among one promotion's published items, without repeats."""
    links: dict[tuple[str, str], None] = {}
    for derived in items:
        if derived.memory_type not in DERIVED_TYPES:
            continue
        for source in items:
            if source.memory_type in SOURCE_TYPES and _derives(derived, source):
                links[(derived.memory_id, source.memory_id)] = None
    return list(links)
