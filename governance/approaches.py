"""Circular-fix detection: has this approach already failed on this task?

An approach is identified two ways. Its *fingerprint* is a hash of the normalised wording: NFKC,
case-folded, punctuation dropped, filler words ("try", "again", "the", "let's", 다시, 한번 ...) and
Korean particles removed. Word order is kept on purpose: "replace redis with memcached" and
"replace memcached with redis" are different approaches, so tokens are not sorted. Rewordings the
fingerprint cannot see are caught by embedding similarity (storage computes it). The decision itself
is pure: a proposal matching a failed approach is refused with the failure history and a suggestion.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

__all__ = [
    "ApproachOutcome",
    "PastApproach",
    "ApproachCheck",
    "normalise_approach",
    "approach_fingerprint",
    "check_approach",
]

_TOKEN = re.compile(r"\w+", re.UNICODE)
_STOPWORDS = frozenset(
    """a an the to of for in on at by with and or then so it its this that these those is are be been
    we i you let's lets let s us our my try trying tried again retry maybe just please will should could would
    can now also first next attempt approach idea
    다시 한번 한 번 좀 그냥 먼저 시도 시도하기 시도한다 해보기 해본다 해 본다 보자 해보자""".split()
)
# Korean particles glue onto nouns ("캐시를", "캐시로"); drop them from longer tokens so both forms match.
_PARTICLES = (
    "에서",
    "으로",
    "부터",
    "까지",
    "을",
    "를",
    "이",
    "가",
    "은",
    "는",
    "에",
    "로",
    "와",
    "과",
    "의",
    "도",
)
_HANGUL = re.compile(r"[\uac00-\ud7a3]")


class ApproachOutcome(StrEnum):
    """How an attempt ended."""

    FAILED = "failed"
    SUCCEEDED = "succeeded"


def _strip_particle(token: str) -> str:
    if len(token) >= 3 and _HANGUL.match(token[-1]):
        for particle in _PARTICLES:
            if token.endswith(particle) and len(token) - len(particle) >= 2:
                return token[: -len(particle)]
    return token


def normalise_approach(text: str) -> str:
    """The wording that identifies an approach: content words in order, lower case, no punctuation."""
    tokens = _TOKEN.findall(unicodedata.normalize("NFKC", text).casefold().replace("_", " "))
    kept = [_strip_particle(t) for t in tokens if t not in _STOPWORDS]
    return " ".join(t for t in kept if t and t not in _STOPWORDS)


def approach_fingerprint(text: str) -> str:
    """sha256 (hex) of the normalised approach."""
    return hashlib.sha256(normalise_approach(text).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class PastApproach:
    """An approach already recorded for this task/subtask; `similarity` to the proposal if known."""

    approach: str
    fingerprint: str
    attempts: int
    failures: int
    last_outcome: str
    failure_reasons: tuple[str, ...]
    last_attempt_at: datetime
    similarity: float | None = None


@dataclass(frozen=True)
class ApproachCheck:
    """The answer to "may I try this?": refused ones carry the failed history and a suggestion."""

    valid: bool
    reason: str
    suggestion: str | None
    history: tuple[PastApproach, ...] = field(default_factory=tuple)
    matched: PastApproach | None = None


def check_approach(
    *, fingerprint: str, failed: Sequence[PastApproach], similarity_threshold: float, stuck: bool = False
) -> ApproachCheck:
    """Refuse a proposal equal to (same fingerprint) or a near-duplicate of (embedding) a failed approach."""
    history = tuple(sorted(failed, key=lambda p: p.last_attempt_at))
    match = next((p for p in history if p.fingerprint == fingerprint), None)
    how = "the same approach"
    if match is None:
        close = [p for p in history if p.similarity is not None and p.similarity >= similarity_threshold]
        if close:
            match = max(close, key=lambda p: p.similarity or 0.0)
            how = f"a near-duplicate (similarity {match.similarity:.2f}) of an approach that"
    if match is None:
        return ApproachCheck(True, "no failed approach like this one on this task", None, history)
    times = "once" if match.failures == 1 else f"{match.failures} times"
    reasons = "; ".join(match.failure_reasons[-3:]) or "no reason recorded"
    suggestion = (
        "This subtask is stuck: ask a human for help before trying again."
        if stuck
        else "Try a genuinely different approach (see the failed history), or ask a human for help."
    )
    return ApproachCheck(
        False, f"{how} already failed {times} on this task ({reasons})", suggestion, history, match
    )
