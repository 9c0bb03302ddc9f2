"""Ranking of retrieved memories: relevance first, then bounded adjustments.

    score = type_weight · stale_weight · similarity
            + w_rec · recency + w_imp · (importance × confidence) + w_use · usefulness

- **similarity** is the query relevance. Two retrievers answer a query (pgvector cosine and Postgres full
  text); their scores live on different scales, so they are fused by rank (RRF, Cormack et al. 2009:
  Σ weight/(k + rank)) and divided by the best fused value of the query, so its top memory has 1.0.
  Full-text hits are ranked and weighted by how much of the query they match, and how exactly
  (`governance.storage.retrieval.fuse`). Were raw cosine used instead, it would barely vary (e5 cosines
  sit in 0.75–0.9); search results still report the raw cosine beside the parts.
- **type_weight** is how well the memory's type fits the query's intent (`governance.intent`): 1.0 for a
  type the intent asks for and for every type when no intent is detected; `DETECTED_INTENT_PENALTY` less for
  other types when the intent was detected from the words, `EXPLICIT_INTENT_PENALTY` less when the caller
  named the intent. A weight, never a filter: only explicit `types` filter.
- **recency** decays exponentially with a half-life (24 h by default): 1.0 now, 0.5 a half-life ago.
- **importance** is importance × confidence: a memory matters when it is important *and* trusted.
- **usefulness** is what readers' feedback says (0.5 before any vote), weighed by how often the memory was
  retrieved: `0.5 + (usefulness - 0.5) · (1 + r / (r + RETRIEVAL_EVIDENCE_HALF))` for `r` retrievals,
  clamped to [0, 1]. Feedback on a memory that is retrieved again and again is feedback on what readers keep
  meeting, so it counts up to twice as much: a memory retrieved often and judged useless sinks below an
  equally relevant one, and one judged useful rises. Retrievals alone move nothing (no feedback: 0.5), so a
  popular memory is never punished for being popular.
  **Use** then lifts it: `c` distinct principals, none involved in the memory, who cited it in their staging
  (`[mem:…]`) or declared they used it, close a share of the distance to 1:
  `u + (1 - u) · CITATION_SHARE · c / (c + CITATION_EVIDENCE_HALF)`. Still in [0, 1], so the bound below
  holds; an author's own citations never count (trust comes from others), and each principal counts once.
- **stale_weight** is 1.0, or `1 - STALE_PENALTY` (0.8) for a stale memory: one a memory it builds on was
  superseded or retired since (governance/validity.py). A bounded penalty on relevance, never a filter: a
  stale memory that answers the query far better than anything else still shows, flagged.

**The bounds.** Relevance decides the order; the three adjustments only break near-ties. Their weights are
small (0.015 + 0.015 + 0.02 by default) and may sum to at most `MAX_ADJUSTMENT` (0.1) of the similarity
weight, so a memory whose weighted relevance trails another's by more than the sum of the adjustment
weights can never outrank it, however new, important, trusted or liked it is. Measured on the labelled set:
an unbounded 0.5/0.3/0.2 mix lowered recall@5 from 0.812 (plain RRF) to 0.700 (docs/retrieval.md).

Every result carries the parts so a user can see why a memory ranked where it did. Pure functions: no I/O,
the clock is passed in.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

__all__ = [
    "MAX_ADJUSTMENT",
    "DETECTED_INTENT_PENALTY",
    "EXPLICIT_INTENT_PENALTY",
    "STALE_PENALTY",
    "RETRIEVAL_EVIDENCE_HALF",
    "CITATION_SHARE",
    "CITATION_EVIDENCE_HALF",
    "ScoreWeights",
    "ScoreParts",
    "RankingParams",
    "TypePreference",
    "rrf_scores",
    "normalized_rrf",
    "weighted_rrf",
    "recency",
    "observed_usefulness",
    "used_usefulness",
    "score_parts",
]

K = TypeVar("K", bound=Hashable)

# The adjustments together may weigh at most this share of the similarity weight (see the module docstring).
MAX_ADJUSTMENT = 0.1
# How much relevance a memory of a type the intent does not ask for gives up (a share of its similarity).
# Detected from the query's words: a nudge, since cue words misroute ("When did Mina move?" is `recall`, but
# a fact answers it). Named by the caller: a strong preference, still never a filter.
DETECTED_INTENT_PENALTY = 0.02
EXPLICIT_INTENT_PENALTY = 0.25
# How much relevance a stale memory gives up: between a detected and a named intent's penalty, so fresh
# knowledge of about the same relevance ranks first and a much better stale answer still shows.
STALE_PENALTY = 0.2
# Retrievals at which feedback counts one and a half times (it tends to twice as many retrievals grow).
RETRIEVAL_EVIDENCE_HALF = 10.0
# Independent citers close at most half the distance to 1; two of them close half of that half.
CITATION_SHARE = 0.5
CITATION_EVIDENCE_HALF = 2.0


@dataclass(frozen=True)
class ScoreWeights:
    """Weights of relevance and of the three bounded adjustments (module docstring)."""

    similarity: float = 1.0
    recency: float = 0.015
    importance: float = 0.015
    usefulness: float = 0.02

    def __post_init__(self) -> None:
        if min(self.similarity, self.recency, self.importance, self.usefulness) < 0:
            raise ValueError("score weights must not be negative")
        adjustment = self.recency + self.importance + self.usefulness
        if adjustment > MAX_ADJUSTMENT * self.similarity + 1e-12:
            raise ValueError(
                f"recency + importance + usefulness weights ({adjustment:g}) must not exceed "
                f"{MAX_ADJUSTMENT:g} x the similarity weight ({self.similarity:g}): relevance comes first"
            )


@dataclass(frozen=True)
class TypePreference:
    """Memory types the query's intent asks for, and the share of relevance the other types give up."""

    types: frozenset[str] = frozenset()
    penalty: float = 0.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.penalty < 1.0:
            raise ValueError("a type penalty lies in [0, 1)")

    def weight(self, memory_type: str) -> float:
        """1.0 for a preferred type (or when nothing is preferred), else 1 - penalty."""
        if not self.types or memory_type in self.types:
            return 1.0
        return 1.0 - self.penalty


@dataclass(frozen=True)
class RankingParams:
    """Everything that shapes a ranking; built from Settings (and the query's intent) by the caller."""

    weights: ScoreWeights = ScoreWeights()
    half_life_hours: float = 24.0
    rrf_k: int = 60
    prefer: TypePreference = TypePreference()


@dataclass(frozen=True)
class ScoreParts:
    """The parts of one memory's score, each in [0, 1], and the weighted total.

    `similarity` is the fused relevance; `type_weight` is what the intent made of it (1.0: no change).
    """

    similarity: float
    recency: float
    importance: float
    score: float
    usefulness: float = 0.5
    type_weight: float = 1.0
    stale_weight: float = 1.0


_DEFAULT_PARAMS = RankingParams()


def rrf_scores(rankings: Sequence[Sequence[K]], *, k: int = 60) -> dict[K, float]:
    """Reciprocal rank fusion: Σ over the lists that contain an item of 1 / (k + rank), ranks from 1."""
    if k < 0:
        raise ValueError("rrf k must not be negative")
    fused: dict[K, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            fused[item] = fused.get(item, 0.0) + 1.0 / (k + rank)
    return fused


def normalized_rrf(rankings: Sequence[Sequence[K]], *, k: int = 60) -> dict[K, float]:
    """RRF divided by its best possible value (first in every list), so it lies in [0, 1]."""
    fused = rrf_scores(rankings, k=k)
    best = sum(1.0 / (k + 1) for ranking in rankings if ranking) or 1.0
    return {item: value / best for item, value in fused.items()}


def weighted_rrf(rankings: Sequence[Sequence[tuple[K, float, float]]], *, k: int = 60) -> dict[K, float]:
    """RRF over lists of (item, score, weight), divided by the best fused value so the top item has 1.0.

    Items with equal scores share a rank (competition ranking, "1224"): a retriever that cannot tell two items
    apart must not pretend to order them. Each contribution is weight / (k + rank), so a retriever can say how
    strongly a hit answers the query (full text: how much of the query, and how exactly, it matched).
    """
    if k < 0:
        raise ValueError("rrf k must not be negative")
    fused: dict[K, float] = {}
    for ranking in rankings:
        rank, previous = 0, None
        for position, (item, score, weight) in enumerate(ranking, start=1):
            if score != previous:
                rank, previous = position, score
            fused[item] = fused.get(item, 0.0) + max(0.0, weight) / (k + rank)
    best = max(fused.values(), default=0.0)
    return {item: value / best for item, value in fused.items()} if best > 0 else dict.fromkeys(fused, 0.0)


def recency(when: datetime, now: datetime, *, half_life_hours: float = 24.0) -> float:
    """Exponential decay: 0.5 ** (age / half-life); a timestamp in the future counts as now."""
    if half_life_hours <= 0:
        raise ValueError("half-life must be positive")
    age_hours = max(0.0, (now - when).total_seconds() / 3600.0)
    return math.pow(0.5, age_hours / half_life_hours)


def _unit(value: float) -> float:
    return min(1.0, max(0.0, value))


def observed_usefulness(usefulness: float, retrievals: int) -> float:
    """Feedback weighed by exposure: `0.5 + (u - 0.5) · (1 + r / (r + RETRIEVAL_EVIDENCE_HALF))`, in [0, 1].

    0 retrievals: the feedback as it is; many: its distance from the neutral 0.5 up to doubled.
    """
    seen = max(0, retrievals)
    evidence = seen / (seen + RETRIEVAL_EVIDENCE_HALF)
    return _unit(0.5 + (_unit(usefulness) - 0.5) * (1.0 + evidence))


def used_usefulness(usefulness: float, citers: int) -> float:
    """Usefulness lifted by `citers` independent principals' use: `u + (1 - u) · 0.5 · c / (c + 2)`."""
    seen = max(0, citers)
    base = _unit(usefulness)
    return _unit(base + (1.0 - base) * CITATION_SHARE * seen / (seen + CITATION_EVIDENCE_HALF))


def score_parts(
    *,
    similarity: float,
    when: datetime,
    now: datetime,
    importance: float,
    confidence: float,
    usefulness: float = 0.5,
    memory_type: str | None = None,
    params: RankingParams = _DEFAULT_PARAMS,
    stale: bool = False,
    retrievals: int = 0,
    citers: int = 0,
) -> ScoreParts:
    """The score of one memory; inputs outside [0, 1] are clamped so no part dominates by overflow.

    `usefulness` in the parts is the feedback weighed by `retrievals` (`observed_usefulness`), lifted by the
    `citers` who used it (`used_usefulness`).
    """
    sim = _unit(similarity)
    rec = recency(when, now, half_life_hours=params.half_life_hours)
    imp = _unit(importance) * _unit(confidence)
    use = used_usefulness(observed_usefulness(usefulness, retrievals), citers)
    type_weight = params.prefer.weight(memory_type) if memory_type is not None else 1.0
    stale_weight = 1.0 - STALE_PENALTY if stale else 1.0
    w = params.weights
    relevance = w.similarity * type_weight * stale_weight * sim
    total = relevance + w.recency * rec + w.importance * imp + w.usefulness * use
    return ScoreParts(
        similarity=sim,
        recency=rec,
        importance=imp,
        score=total,
        usefulness=use,
        type_weight=type_weight,
        stale_weight=stale_weight,
    )
