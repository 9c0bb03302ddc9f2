"""Code rules' confidence: an EMA of observations (α 0.2), its thresholds, and who may observe."""

from __future__ import annotations

import pytest

from governance.scopes import ActorType
from governance.trust import (
    RuleOutcome,
    is_established_rule,
    is_retirement_candidate,
    rule_confidence,
    rule_observer_refusal,
)


def test_rule_confidence_followed_moves_a_fifth_of_the_way_to_one() -> None:
    assert rule_confidence(0.6, RuleOutcome.FOLLOWED_PASSED) == pytest.approx(0.68)


def test_rule_confidence_violated_and_rejected_move_a_fifth_of_the_way_to_zero() -> None:
    assert rule_confidence(0.6, "violated") == pytest.approx(0.48)
    assert rule_confidence(0.6, RuleOutcome.REJECTED_BY_HUMAN) == pytest.approx(0.48)


def test_rule_confidence_stays_within_bounds() -> None:
    c = 0.6
    for _ in range(50):
        c = rule_confidence(c, RuleOutcome.VIOLATED)
    assert c == pytest.approx(0.1)
    for _ in range(100):
        c = rule_confidence(c, RuleOutcome.FOLLOWED_PASSED)
    assert 0.99 < c <= 1.0


def test_rule_thresholds_established_above_08_candidate_below_03() -> None:
    assert not is_established_rule(0.8) and is_established_rule(0.81)
    assert not is_retirement_candidate(0.3) and is_retirement_candidate(0.29)


@pytest.mark.parametrize(
    ("actor", "outcome", "allowed"),
    [
        (ActorType.ORCHESTRATOR, RuleOutcome.FOLLOWED_PASSED, True),
        (ActorType.ORCHESTRATOR, RuleOutcome.VIOLATED, True),
        (ActorType.ORCHESTRATOR, RuleOutcome.REJECTED_BY_HUMAN, False),
        (ActorType.HUMAN, RuleOutcome.REJECTED_BY_HUMAN, True),
        (ActorType.HUMAN, RuleOutcome.VIOLATED, True),
        (ActorType.AGENT, RuleOutcome.FOLLOWED_PASSED, False),
        (ActorType.AGENT, RuleOutcome.REJECTED_BY_HUMAN, False),
        (ActorType.SYSTEM, RuleOutcome.VIOLATED, False),
    ],
)
def test_rule_observer_refusal_truth_table(actor: ActorType, outcome: RuleOutcome, allowed: bool) -> None:
    assert (rule_observer_refusal(actor, outcome, admin=False) is None) is allowed


def test_rule_observer_refusal_admin_may_do_anything() -> None:
    assert rule_observer_refusal(ActorType.AGENT, RuleOutcome.REJECTED_BY_HUMAN, admin=True) is None
