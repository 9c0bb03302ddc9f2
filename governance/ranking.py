"""Ranking of retrieved memories: reciprocal rank fusion, then a 3-axis score.

    score = w_sim · similarity + w_rec · recency + w_imp · (importance × confidence)

- **similarity** is the query-relevance axis. Two retrievers answer a query (pgvector cosine and Postgres full
  text); their scores live on different scales, so they are fused by rank (RRF, Cormack et al. 2009:
  Σ weight/(k + rank)) and divided by the best fused value of the query, so its top memory has 1.0.
  Full-text hits are ranked and weighted by how much of the query they match, and how exactly
  (`governance.storage.retrieval.fuse`). Were raw cosine used
  instead, it would barely vary (e5 cosines sit in 0.75–0.9) and recency would decide every ranking; search
  results still report the raw cosine beside the parts.
- **recency** decays exponentially with a half-life (24 h by default): 1.0 now, 0.5 a half-life ago.
- **importance** is importance × confidence: a memory matters when it is important *and* trusted.

Every result carries the three parts so a user can see why a memory ranked where it did. Pure functions:
no I/O, the clock is passed in.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

__all__ = [
    "ScoreWeights",
    "ScoreParts",
    "RankingParams",
    "rrf_scores",
    "normalized_rrf",
    "weighted_rrf",
    "recency",
    "score_parts",
]

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class ScoreWeights:
    """Weights of the three axes (docs/architecture.md); they need not sum to 1, but do by default."""

    similarity: float = 0.5
    recency: float = 0.3
    importance: float = 0.2

    def __post_init__(self) -> None:
        if min(self.similarity, self.recency, self.importance) < 0:
            raise ValueError("score weights must not be negative")


@dataclass(frozen=True)
class RankingParams:
    """Everything that shapes a ranking; built from Settings by the caller."""

    weights: ScoreWeights = ScoreWeights()
    half_life_hours: float = 24.0
    rrf_k: int = 60


@dataclass(frozen=True)
class ScoreParts:
    """The three axes of one memory's score, each in [0, 1], and the weighted total."""

    similarity: float
    recency: float
    importance: float
    score: float


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


def score_parts(
    *,
    similarity: float,
    when: datetime,
    now: datetime,
    importance: float,
    confidence: float,
    params: RankingParams = _DEFAULT_PARAMS,
) -> ScoreParts:
    """The 3-axis score of one memory; inputs outside [0, 1] are clamped so no axis dominates by overflow."""
    sim = _unit(similarity)
    rec = recency(when, now, half_life_hours=params.half_life_hours)
    imp = _unit(importance) * _unit(confidence)
    w = params.weights
    total = w.similarity * sim + w.recency * rec + w.importance * imp
    return ScoreParts(similarity=sim, recency=rec, importance=imp, score=total)
