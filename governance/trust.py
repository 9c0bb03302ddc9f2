"""Trust arithmetic (confidence, boosts, decay), as pure functions.

The storage layer runs the same arithmetic inside single SQL statements (never read-modify-write in
Python); these functions are the reference the SQL is tested against, and what planners use to predict
the outcome of a boost before it is written.

Decay is computed from the confidence a memory had when it was last validated (`base`) and the whole
days since then, so running the nightly decay twice (or ten times) on the same day gives the same value.
"""

from __future__ import annotations

import math
from datetime import datetime
from enum import StrEnum

from governance.scopes import ActorType, ValidationSource

__all__ = [
    "DecayPolicy",
    "VALIDATION_BOOSTS",
    "DECAY_RATES_PER_MONTH",
    "MIN_CONFIDENCE",
    "MAX_CONFIDENCE",
    "INITIAL_DRAFT",
    "INITIAL_VERIFIED",
    "DAYS_PER_MONTH",
    "EMA_ALPHA",
    "USEFULNESS_PRIOR",
    "PRIOR_VOTES",
    "clamp",
    "initial_confidence",
    "boost",
    "published_trust",
    "whole_days",
    "decayed",
    "ema",
    "usefulness_from_votes",
    "RuleOutcome",
    "RULE_EMA_ALPHA",
    "ESTABLISHED_RULE",
    "RETIREMENT_CANDIDATE",
    "rule_confidence",
    "is_established_rule",
    "is_retirement_candidate",
    "rule_observer_refusal",
]


class DecayPolicy(StrEnum):
    """How a memory's confidence fades without new validation."""

    RECENCY_BIAS = "recency_bias"
    STABLE = "stable"
    MANUAL_ONLY = "manual_only"


VALIDATION_BOOSTS: dict[ValidationSource, float] = {
    ValidationSource.TESTS_PASSED: 0.2,
    ValidationSource.PR_MERGED: 0.3,
    ValidationSource.HUMAN_APPROVED: 0.4,
    ValidationSource.REPEATED_SUCCESS: 0.15,
}

DECAY_RATES_PER_MONTH: dict[DecayPolicy, float] = {
    DecayPolicy.RECENCY_BIAS: 0.10,
    DecayPolicy.STABLE: 0.02,
    DecayPolicy.MANUAL_ONLY: 0.0,
}

MIN_CONFIDENCE = 0.1
MAX_CONFIDENCE = 1.0
INITIAL_DRAFT = 0.3
INITIAL_VERIFIED = 0.6
DAYS_PER_MONTH = 30.0
EMA_ALPHA = 0.3
# usefulness before any feedback (the column's default), and how many votes that prior weighs: with
# 1/alpha - 1 votes, a memory's first vote moves it exactly as one EMA step did (0.5 -> 0.65 or 0.35)
USEFULNESS_PRIOR = 0.5
PRIOR_VOTES = 1.0 / EMA_ALPHA - 1.0


def clamp(confidence: float) -> float:
    """Keep a confidence inside its bounds ([0.1, 1.0])."""
    return min(MAX_CONFIDENCE, max(MIN_CONFIDENCE, confidence))


def initial_confidence(verified: bool) -> float:
    """0.6 for knowledge from verified work, 0.3 for a draft."""
    return INITIAL_VERIFIED if verified else INITIAL_DRAFT


def published_trust(
    verified: bool, evidence: ValidationSource | str | None, human_approved: bool
) -> tuple[float, str | None]:
    """Confidence and validation source a promotion publishes with.

    Verified work starts at 0.6 and is boosted once by its evidence; a human's approval of the plan is a
    validation of its own (`human_approved`, +0.4), so it boosts again and becomes the source.
    A draft (unverified) gets neither.
    """
    if not verified:
        return INITIAL_DRAFT, None
    confidence = INITIAL_VERIFIED
    source: str | None = None
    if evidence is not None:
        confidence, source = boost(confidence, evidence), ValidationSource(evidence).value
    if human_approved:
        confidence, source = (
            boost(confidence, ValidationSource.HUMAN_APPROVED),
            ValidationSource.HUMAN_APPROVED.value,
        )
    return confidence, source


def boost(confidence: float, source: ValidationSource | str) -> float:
    """Confidence after one validation from `source`, capped at 1.0 (and never below 0.1)."""
    return clamp(confidence + VALIDATION_BOOSTS[ValidationSource(source)])


def whole_days(since: datetime, now: datetime) -> int:
    """Whole days elapsed; decay moves in day steps so repeated runs within a day agree."""
    seconds = (now - since).total_seconds()
    return max(0, math.floor(seconds / 86400.0))


def decayed(base: float, policy: DecayPolicy | str, last_validated_at: datetime, now: datetime) -> float:
    """Confidence `base` (as of `last_validated_at`) decayed by the policy's monthly rate until `now`.

    Compounded monthly: base * (1 - rate) ** (days / 30), never below 0.1 and never above `base`.
    """
    rate = DECAY_RATES_PER_MONTH[DecayPolicy(policy)]
    months = whole_days(last_validated_at, now) / DAYS_PER_MONTH
    value = base * (1.0 - rate) ** months
    return clamp(min(value, base))


def ema(old: float, helpful: bool, alpha: float = EMA_ALPHA) -> float:
    """Usefulness after one piece of feedback: an exponential moving average towards 1 or 0."""
    return (1.0 - alpha) * old + alpha * (1.0 if helpful else 0.0)


def usefulness_from_votes(helpful: int, votes: int) -> float:
    """Usefulness from the latest vote of each principal: `helpful` of `votes` said it helped.

    A smoothed mean, (PRIOR_VOTES * USEFULNESS_PRIOR + helpful) / (PRIOR_VOTES + votes): one principal
    counts once however often it votes, its latest vote replacing its earlier one, so repeating a vote
    cannot drive usefulness to 0 or 1; it stays strictly inside (0, 1) and moves only as principals add
    up. The first vote agrees with one EMA step (`ema`) from the prior.
    """
    if not 0 <= helpful <= votes:
        raise ValueError(f"helpful votes ({helpful}) must be between 0 and the votes ({votes})")
    return (PRIOR_VOTES * USEFULNESS_PRIOR + helpful) / (PRIOR_VOTES + votes)


class RuleOutcome(StrEnum):
    """What happened when a code rule met the work: it was followed and the work passed, it was broken, or a
    human rejected it."""

    FOLLOWED_PASSED = "followed_passed"
    VIOLATED = "violated"
    REJECTED_BY_HUMAN = "rejected_by_human"


# a code rule's confidence is an EMA of its observations: 1 when followed and the work passed, 0 otherwise
RULE_EMA_ALPHA = 0.2
_RULE_TARGETS: dict[RuleOutcome, float] = {
    RuleOutcome.FOLLOWED_PASSED: 1.0,
    RuleOutcome.VIOLATED: 0.0,
    RuleOutcome.REJECTED_BY_HUMAN: 0.0,
}
ESTABLISHED_RULE = 0.8  # above: established, the context block shows it
RETIREMENT_CANDIDATE = 0.3  # below: listed for a human to retire (GET /v1/code-rules/candidates)


def rule_confidence(old: float, outcome: RuleOutcome | str) -> float:
    """A code rule's confidence after one observation: (1 - 0.2) * old + 0.2 * target, within the bounds.

    The floor (0.1) is the column's: a rule never falls to 0, it becomes a retirement candidate long before.
    """
    target = _RULE_TARGETS[RuleOutcome(outcome)]
    return round(clamp((1.0 - RULE_EMA_ALPHA) * old + RULE_EMA_ALPHA * target), 6)


def is_established_rule(confidence: float) -> bool:
    """Above 0.8: the rule has held often enough to be shown as established."""
    return confidence > ESTABLISHED_RULE


def is_retirement_candidate(confidence: float) -> bool:
    """Below 0.3: the rule failed often enough to be offered for retirement."""
    return confidence < RETIREMENT_CANDIDATE


def rule_observer_refusal(
    actor_type: ActorType | str, outcome: RuleOutcome | str, *, admin: bool
) -> str | None:
    """Why this caller may not report this observation, or None.

    Orchestrators and humans observe rules (an agent would grade the rules that bind it); only a human
    rejects one. Admins may do either.
    """
    if admin:
        return None
    kind = ActorType(actor_type)
    if RuleOutcome(outcome) is RuleOutcome.REJECTED_BY_HUMAN and kind is not ActorType.HUMAN:
        return f"only a human may reject a code rule; this caller is {kind.value}"
    if kind not in (ActorType.ORCHESTRATOR, ActorType.HUMAN):
        return f"observations of code rules come from orchestrators and humans; this caller is {kind.value}"
    return None
