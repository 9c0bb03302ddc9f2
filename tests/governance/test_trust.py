"""Trust arithmetic: bounds hold, boosts add up to the cap, decay is idempotent within a day."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from governance.scopes import SCOPE_LEVEL, Scope, ValidationSource, can_promote
from governance.trust import (
    DecayPolicy,
    boost,
    decayed,
    ema,
    initial_confidence,
    published_trust,
)

confidences = st.floats(min_value=0.1, max_value=1.0, allow_nan=False)
sources = st.sampled_from(list(ValidationSource))
policies = st.sampled_from(list(DecayPolicy))
instants = st.datetimes(
    min_value=datetime(2020, 1, 1), max_value=datetime(2035, 1, 1), timezones=st.just(UTC)
)


def test_initial_confidence_verified_and_draft() -> None:
    assert initial_confidence(True) == 0.6
    assert initial_confidence(False) == 0.3


@pytest.mark.parametrize(
    ("source", "expected"),
    [("tests_passed", 0.5), ("pr_merged", 0.6), ("human_approved", 0.7), ("repeated_success", 0.45)],
)
def test_boost_adds_seed_amounts(source: str, expected: float) -> None:
    assert boost(0.3, source) == pytest.approx(expected)


@given(confidences, st.lists(sources, max_size=20))
def test_boost_never_crosses_bounds_and_never_lowers(start: float, signals: list[ValidationSource]) -> None:
    value = start
    for signal in signals:
        new = boost(value, signal)
        assert 0.1 <= new <= 1.0
        assert new >= value
        value = new


@given(confidences, policies, instants, st.integers(min_value=0, max_value=3650))
def test_decay_stays_in_bounds_and_never_raises(
    base: float, policy: DecayPolicy, validated: datetime, days: int
) -> None:
    value = decayed(base, policy, validated, validated + timedelta(days=days))
    assert 0.1 <= value <= 1.0
    assert value <= base + 1e-12


@given(confidences, policies, instants, st.integers(min_value=0, max_value=3650), st.floats(0, 86399))
def test_decay_idempotent_within_a_day(
    base: float, policy: DecayPolicy, validated: datetime, days: int, seconds: float
) -> None:
    start_of_day = validated + timedelta(days=days)
    first = decayed(base, policy, validated, start_of_day)
    again = decayed(base, policy, validated, start_of_day + timedelta(seconds=seconds))
    assert first == again


def test_decay_rates_per_month() -> None:
    t0 = datetime(2025, 1, 1, tzinfo=UTC)
    month = t0 + timedelta(days=30)
    assert decayed(0.8, "recency_bias", t0, month) == pytest.approx(0.72)
    assert decayed(0.8, "stable", t0, month) == pytest.approx(0.784)
    assert decayed(0.8, "manual_only", t0, t0 + timedelta(days=3000)) == 0.8


@given(policies, instants, st.integers(0, 400), st.integers(0, 400))
def test_decay_monotone_in_time(policy: DecayPolicy, validated: datetime, a: int, b: int) -> None:
    early, late = sorted((a, b))
    assert decayed(0.9, policy, validated, validated + timedelta(days=late)) <= decayed(
        0.9, policy, validated, validated + timedelta(days=early)
    )


@given(st.floats(0, 1), st.lists(st.booleans(), max_size=50))
def test_ema_stays_in_unit_interval(start: float, feedback: list[bool]) -> None:
    value = start
    for helpful in feedback:
        value = ema(value, helpful)
        assert 0.0 <= value <= 1.0


def test_ema_alpha_point_three() -> None:
    assert ema(0.5, True) == pytest.approx(0.65)
    assert ema(0.5, False) == pytest.approx(0.35)


@given(st.sampled_from(list(Scope)), st.sampled_from(list(Scope)))
def test_can_promote_only_upward(source: Scope, target: Scope) -> None:
    assert can_promote(source, target) == (SCOPE_LEVEL[source] < SCOPE_LEVEL[target])
    if can_promote(source, target):
        assert not can_promote(target, source)


def test_published_trust_draft_gets_no_boost_even_when_approved() -> None:
    assert published_trust(False, ValidationSource.TESTS_PASSED, human_approved=True) == (0.3, None)


def test_published_trust_verified_is_boosted_by_its_evidence_up_to_the_unreviewed_ceiling() -> None:
    confidence, source = published_trust(True, "repeated_success", human_approved=False)
    assert confidence == pytest.approx(0.75) and source == "repeated_success"
    # the task's own evidence (its orchestrator's pr_merged) stops below "established": 0.9 before
    confidence, source = published_trust(True, "pr_merged", human_approved=False)
    assert confidence == pytest.approx(0.75) and source == "pr_merged"


def test_published_trust_human_approval_boosts_again_and_becomes_the_source() -> None:
    confidence, source = published_trust(True, "tests_passed", human_approved=True)
    assert confidence == pytest.approx(1.0) and source == "human_approved"
    assert published_trust(True, None, human_approved=True) == (pytest.approx(1.0), "human_approved")


@given(sources, st.booleans())
def test_published_trust_stays_within_bounds(source: ValidationSource, approved: bool) -> None:
    confidence, _ = published_trust(True, source, human_approved=approved)
    assert 0.1 <= confidence <= 1.0


def test_standing_human_approval_is_sticky_verified_only_past_the_ceiling() -> None:
    from governance.trust import Standing, is_earned, standing_of

    assert standing_of("human_approved", 0.4) is Standing.HUMAN
    assert standing_of("pr_merged", 0.75, 2) is Standing.UNREVIEWED
    assert standing_of("tests_passed", 0.8, 2) is Standing.VERIFIED
    # confident on its own task's word alone (published at 0.9 before the ceiling): not verified
    assert standing_of("pr_merged", 0.9, 1) is Standing.UNREVIEWED
    assert standing_of(None, 0.3) is Standing.UNREVIEWED
    assert is_earned("human") and is_earned("verified") and not is_earned("unreviewed")


def test_non_human_evidence_stops_below_established_until_independent_principals_confirm() -> None:
    from governance.trust import ESTABLISHED_RULE, UNREVIEWED_CEILING, capped_boost

    assert UNREVIEWED_CEILING < ESTABLISHED_RULE
    # one principal's pr_merged on a draft: 0.3 -> 0.6, then repeated_success stops at the ceiling
    one = capped_boost(0.3, "pr_merged", human=False, human_approved=False, confirmers=1)
    assert one == pytest.approx(0.6)
    assert capped_boost(one, "tests_passed", human=False, human_approved=False, confirmers=1) == 0.75
    # a second independent principal lifts the ceiling; a human, or a human-approved memory, never had one
    assert capped_boost(0.75, "tests_passed", human=False, human_approved=False, confirmers=2) == 0.95
    assert capped_boost(0.75, "tests_passed", human=True, human_approved=False, confirmers=1) == 0.95
    assert capped_boost(0.9, "repeated_success", human=False, human_approved=True, confirmers=1) == 1.0
    # a capped boost never takes trust away from a memory already above the ceiling
    assert capped_boost(0.8, "repeated_success", human=False, human_approved=False, confirmers=1) == 0.8


def test_rule_observations_from_one_non_human_stop_at_the_ceiling() -> None:
    from governance.trust import capped_rule_confidence, is_established_rule

    confidence = 0.6
    for _ in range(20):
        confidence = capped_rule_confidence(
            confidence, "followed_passed", human=False, human_approved=False, confirmers=1
        )
    assert confidence == 0.75 and not is_established_rule(confidence)
    confirmed = capped_rule_confidence(
        0.75, "followed_passed", human=False, human_approved=False, confirmers=2
    )
    assert confirmed == pytest.approx(0.8)
    # a human-approved rule: non-human violations lower it, never out of established (one orchestrator
    # naming eight tasks took a human's "never log request bodies" from 1.00 to 0.17)
    confidence = 1.0
    for _ in range(8):
        confidence = capped_rule_confidence(
            confidence, "violated", human=False, human_approved=True, confirmers=1
        )
    assert confidence == 0.85 and is_established_rule(confidence)
    assert capped_rule_confidence(1.0, "violated", human=True, human_approved=True, confirmers=1) == 0.8
    # one a human already lowered is not lowered further by non-humans, nor raised by the floor
    assert capped_rule_confidence(0.5, "violated", human=False, human_approved=True, confirmers=1) == 0.5


def test_self_endorsement_refusal_names_how_the_principal_is_involved() -> None:
    from governance.trust import Involvement, self_endorsement_refusal

    involved = Involvement(authors=frozenset({"agent-a"}), publishers=frozenset({"orch-1"}))
    assert "wrote this memory's source" in (self_endorsement_refusal("agent-a", involved, "validation") or "")
    assert "published or superseded" in (self_endorsement_refusal("orch-1", involved, "feedback") or "")
    assert self_endorsement_refusal("agent-b", involved, "validation") is None
    assert involved.everyone == {"agent-a", "orch-1"}
