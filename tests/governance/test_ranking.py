"""Reciprocal rank fusion, relevance first, and the bounded adjustments (docs/retrieval.md)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from governance.ranking import (
    MAX_ADJUSTMENT,
    RankingParams,
    ScoreWeights,
    TypePreference,
    normalized_rrf,
    observed_usefulness,
    recency,
    rrf_scores,
    score_parts,
    used_usefulness,
    weighted_rrf,
)

NOW = datetime(2026, 1, 30, 12, 0, tzinfo=UTC)


def test_rrf_scores_reward_agreement_between_lists() -> None:
    fused = rrf_scores([["a", "b", "c"], ["b", "d"]], k=60)
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert max(fused, key=fused.__getitem__) == "b"
    assert fused["a"] == pytest.approx(1 / 61)


def test_normalized_rrf_first_in_every_list_is_one() -> None:
    fused = normalized_rrf([["a", "b"], ["a", "c"]], k=60)
    assert fused["a"] == pytest.approx(1.0)
    assert fused["b"] == pytest.approx(0.5 * 61 / 62)


def test_normalized_rrf_ignores_empty_lists() -> None:
    assert normalized_rrf([["a"], []], k=60)["a"] == pytest.approx(1.0)


def test_recency_halves_every_half_life() -> None:
    assert recency(NOW, NOW) == pytest.approx(1.0)
    assert recency(NOW - timedelta(hours=24), NOW) == pytest.approx(0.5)
    assert recency(NOW - timedelta(hours=48), NOW) == pytest.approx(0.25)
    assert recency(NOW - timedelta(hours=6), NOW, half_life_hours=6) == pytest.approx(0.5)
    assert recency(NOW + timedelta(hours=1), NOW) == pytest.approx(1.0)


def test_score_parts_default_is_relevance_plus_small_adjustments() -> None:
    parts = score_parts(
        similarity=0.8,
        when=NOW - timedelta(hours=24),
        now=NOW,
        importance=0.5,
        confidence=0.6,
        usefulness=0.7,
    )
    assert (parts.similarity, parts.recency, parts.importance, parts.usefulness) == pytest.approx(
        (0.8, 0.5, 0.3, 0.7)
    )
    assert parts.type_weight == 1.0
    assert parts.score == pytest.approx(0.8 + 0.015 * 0.5 + 0.015 * 0.3 + 0.02 * 0.7)


def test_score_parts_often_retrieved_useless_memory_sinks_below_an_equally_relevant_one() -> None:
    common = {"similarity": 0.9, "when": NOW, "now": NOW, "importance": 0.6, "confidence": 0.8}
    plain = score_parts(**common)  # type: ignore[arg-type]
    judged_once = score_parts(**common, usefulness=0.35)  # type: ignore[arg-type]
    judged_often = score_parts(**common, usefulness=0.35, retrievals=40)  # type: ignore[arg-type]
    assert judged_often.score < judged_once.score < plain.score
    # the feedback's distance from 0.5 counts 1 + 40/50 times after 40 retrievals
    assert judged_often.usefulness == pytest.approx(0.5 - 0.15 * 1.8)
    # retrievals alone move nothing, and liked memories rise the same way
    assert score_parts(**common, retrievals=500).score == pytest.approx(plain.score)  # type: ignore[arg-type]
    liked = score_parts(**common, usefulness=0.65, retrievals=40)  # type: ignore[arg-type]
    assert liked.score > plain.score


def test_observed_usefulness_stays_in_bounds() -> None:
    assert observed_usefulness(0.0, 10**6) == 0.0
    assert observed_usefulness(1.0, 10**6) == 1.0
    assert observed_usefulness(0.2, 0) == pytest.approx(0.2)
    assert observed_usefulness(0.2, 10) == pytest.approx(0.5 - 0.3 * 1.5)


def test_score_parts_less_relevant_never_outranks_beyond_the_bound() -> None:
    w = ScoreWeights()
    bound = w.recency + w.importance + w.usefulness
    relevant = score_parts(
        similarity=0.9,
        when=NOW - timedelta(days=365),
        now=NOW,
        importance=0.0,
        confidence=0.0,
        usefulness=0.0,
    )
    newer = score_parts(
        similarity=0.9 - bound - 1e-6, when=NOW, now=NOW, importance=1.0, confidence=1.0, usefulness=1.0
    )
    assert relevant.score > newer.score


def test_score_weights_adjustments_are_bounded_by_similarity() -> None:
    ScoreWeights(similarity=1.0, recency=MAX_ADJUSTMENT, importance=0.0, usefulness=0.0)
    with pytest.raises(ValueError, match="relevance comes first"):
        ScoreWeights(similarity=0.5, recency=0.3, importance=0.2)


def test_type_preference_weights_other_types_down_never_to_zero() -> None:
    prefer = TypePreference(frozenset({"episode"}), 0.25)
    params = RankingParams(prefer=prefer)
    episode = score_parts(
        similarity=0.8, when=NOW, now=NOW, importance=0, confidence=0, memory_type="episode"
    )
    fact = score_parts(similarity=0.8, when=NOW, now=NOW, importance=0, confidence=0, memory_type="fact")
    weighted = score_parts(
        similarity=0.8, when=NOW, now=NOW, importance=0, confidence=0, memory_type="fact", params=params
    )
    assert fact.score == episode.score
    assert weighted.type_weight == pytest.approx(0.75) and 0 < weighted.score < fact.score
    assert TypePreference().weight("fact") == 1.0
    with pytest.raises(ValueError):
        TypePreference(frozenset({"fact"}), 1.0)


def test_score_parts_weights_are_configurable() -> None:
    params = RankingParams(weights=ScoreWeights(similarity=1.0, recency=0.0, importance=0.0, usefulness=0.0))
    parts = score_parts(similarity=0.4, when=NOW, now=NOW, importance=1.0, confidence=1.0, params=params)
    assert parts.score == pytest.approx(0.4)


def test_score_parts_clamps_out_of_range_inputs() -> None:
    parts = score_parts(similarity=3.0, when=NOW, now=NOW, importance=-1.0, confidence=2.0)
    assert (parts.similarity, parts.importance) == (1.0, 0.0)


def test_score_weights_reject_negative_values() -> None:
    with pytest.raises(ValueError):
        ScoreWeights(similarity=-0.1)


def test_weighted_rrf_ties_share_a_rank() -> None:
    fused = weighted_rrf([[("a", 0.9, 1.0), ("b", 0.5, 1.0)], [("b", 0.5, 1.0), ("c", 0.5, 1.0)]], k=60)
    # b and c tie in the second list, so both get rank 1 there; b also ranks second in the first list
    assert fused["b"] == pytest.approx(1.0)
    assert fused["a"] == pytest.approx(fused["c"])


def test_weighted_rrf_weight_scales_a_vote() -> None:
    fused = weighted_rrf([[("a", 1.0, 1.0)], [("b", 1.0, 2.0)]], k=60)
    assert fused["b"] == pytest.approx(1.0)
    assert fused["a"] == pytest.approx(0.5)


def test_score_parts_stale_memory_gives_up_a_bounded_share_of_relevance() -> None:
    from governance.ranking import STALE_PENALTY

    now = datetime(2026, 1, 1, tzinfo=UTC)
    fresh = score_parts(similarity=0.9, when=now, now=now, importance=0.5, confidence=0.5)
    stale = score_parts(similarity=0.9, when=now, now=now, importance=0.5, confidence=0.5, stale=True)
    assert stale.stale_weight == pytest.approx(1 - STALE_PENALTY) and fresh.stale_weight == 1.0
    assert fresh.score - stale.score == pytest.approx(STALE_PENALTY * 0.9)
    # a much better stale answer still outranks a weak fresh one
    weak = score_parts(similarity=0.5, when=now, now=now, importance=1.0, confidence=1.0)
    assert stale.score > weak.score


def test_independent_use_lifts_usefulness_within_its_bound() -> None:
    """Use closes at most half the distance to 1, each citer less than the one before; the part stays in
    [0, 1], so the usefulness weight bounds what use can do to an order."""
    assert used_usefulness(0.5, 0) == 0.5
    lifted = [used_usefulness(0.5, c) for c in (1, 2, 10, 10_000)]
    assert lifted == sorted(lifted) and lifted[1] == pytest.approx(0.625)
    assert lifted[-1] < 0.75 and used_usefulness(1.0, 50) == 1.0
    common = {"similarity": 0.8, "when": NOW, "now": NOW, "importance": 0.5, "confidence": 0.5}
    plain = score_parts(**common)  # type: ignore[arg-type]
    used = score_parts(**common, citers=10_000)  # type: ignore[arg-type]
    assert 0 < used.score - plain.score <= ScoreWeights().usefulness * 0.25 + 1e-12
