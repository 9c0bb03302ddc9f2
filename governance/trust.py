"""Trust arithmetic (confidence, boosts, decay), as pure functions.

The storage layer runs the same arithmetic inside single SQL statements (never read-modify-write in
Python); these functions are the reference the SQL is tested against, and what planners use to predict
the outcome of a boost before it is written.

Decay is computed from the confidence a memory had when it was last validated (`base`) and the whole
days since then, so running the nightly decay twice (or ten times) on the same day gives the same value.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from governance.errors import InvalidInput
from governance.scopes import ActorType, MemoryType, ValidationSource

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
    "HUMAN_APPROVED_RULE_FLOOR",
    "RETIREMENT_CANDIDATE",
    "rule_confidence",
    "is_established_rule",
    "is_retirement_candidate",
    "rule_observer_refusal",
    "UNREVIEWED_CEILING",
    "INDEPENDENT_CONFIRMATIONS",
    "Standing",
    "STANDING_LABELS",
    "standing_of",
    "is_earned",
    "boost_ceiling",
    "capped_boost",
    "capped_rule_confidence",
    "Involvement",
    "self_endorsement_refusal",
    "DECAY_POLICY_FIELD",
    "check_entry_decay_policy",
    "default_decay_policy",
    "published_decay_policy",
]


class DecayPolicy(StrEnum):
    """How a memory's confidence fades without new validation."""

    RECENCY_BIAS = "recency_bias"
    STABLE = "stable"
    MANUAL_ONLY = "manual_only"


# the staging payload field that asks for a decay policy for what is published from the entry
DECAY_POLICY_FIELD = "decay_policy"


def check_entry_decay_policy(payload: Any, *, where: str = "payload") -> None:
    """Refuse a payload whose `decay_policy` is not one of the policies, naming the field."""
    if isinstance(payload, Mapping) and DECAY_POLICY_FIELD in payload:
        value = payload[DECAY_POLICY_FIELD]
        if not isinstance(value, str) or value not in DecayPolicy.__members__.values():
            allowed = ", ".join(p.value for p in DecayPolicy)
            raise InvalidInput(f"{where}.{DECAY_POLICY_FIELD} must be one of {allowed}")


def default_decay_policy(memory_type: str) -> DecayPolicy:
    """Episodes fade with time (what happened matters less as work moves on); everything else is stable."""
    return DecayPolicy.RECENCY_BIAS if memory_type == MemoryType.EPISODE.value else DecayPolicy.STABLE


def published_decay_policy(
    memory_type: str, asked: Sequence[str | None], *, human_approved: bool
) -> DecayPolicy:
    """The decay policy a published memory gets: what its source entries asked for, else its type's default.

    `asked` holds each source entry's `decay_policy` (None where it asks nothing). A policy applies only
    when every source asks for the same one, so an episode or a skill distilled from the whole task keeps its
    default unless the whole task asked. `manual_only` (never fade by age) is a human's call, as setting it
    afterwards is an approver's: from a promotion no human approved, the default stands.
    """
    default = default_decay_policy(memory_type)
    if not asked or len(set(asked)) != 1 or asked[0] is None:
        return default
    try:
        chosen = DecayPolicy(asked[0])
    except ValueError:  # written before the append check: ignored
        return default
    if chosen is DecayPolicy.MANUAL_ONLY and not human_approved:
        return default
    return chosen


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
# non-human evidence stops here until a human approves or independent principals confirm (docs/trust.md):
# below ESTABLISHED_RULE (0.8), so nobody's own word makes guidance
UNREVIEWED_CEILING = 0.75
# distinct principals, none involved in the memory, whose counted evidence lifts the ceiling
INDEPENDENT_CONFIRMATIONS = 2
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
    A draft (unverified) gets neither. Without a human's approval the evidence is the task's own (its
    orchestrator's): it stops at `UNREVIEWED_CEILING`, below what guidance and established rules need.
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
    else:
        # the evidence comes from the task's own orchestrator: involved, not independent
        confidence = min(confidence, UNREVIEWED_CEILING)
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
# the lowest non-human observations take a human-approved rule: still established (a human's word moves it on)
HUMAN_APPROVED_RULE_FLOOR = 0.85
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


class Standing(StrEnum):
    """Who stands behind a memory: a human approved it, independent evidence verified it, or neither."""

    HUMAN = "human"
    VERIFIED = "verified"
    UNREVIEWED = "unreviewed"


# what a context block line says, in a few characters
STANDING_LABELS: dict[Standing, str] = {
    Standing.HUMAN: "human-approved",
    Standing.VERIFIED: "verified",
    Standing.UNREVIEWED: "unreviewed",
}


def standing_of(validation_source: str | None, confidence: float, confirmers: int = 0) -> Standing:
    """A memory's standing from its stored trust and the principals who confirmed it.

    `validation_source = human_approved` is sticky (a later non-human boost never overwrites it), so it
    says a human approved the memory. Verified: `INDEPENDENT_CONFIRMATIONS` distinct principals confirmed
    it (counted validations, counted `followed_passed` observations; an involved principal's are refused)
    and their evidence lifted it past `UNREVIEWED_CEILING`. A memory that is merely confident (published at
    0.9 on its own task's word before the ceiling existed) stays unreviewed.
    """
    if validation_source == ValidationSource.HUMAN_APPROVED.value:
        return Standing.HUMAN
    if confidence > UNREVIEWED_CEILING and confirmers >= INDEPENDENT_CONFIRMATIONS:
        return Standing.VERIFIED
    return Standing.UNREVIEWED


def is_earned(standing: Standing | str) -> bool:
    """Guidance (try / avoid lines, established rules) comes only from human-approved or verified memories."""
    return Standing(standing) in (Standing.HUMAN, Standing.VERIFIED)


def boost_ceiling(current: float, *, human: bool, human_approved: bool, confirmers: int) -> float:
    """How high one validation may take a memory at `current`.

    A human's evidence, a human-approved memory, or `INDEPENDENT_CONFIRMATIONS` distinct independent
    principals (this one included): up to 1.0. Anything else: up to `UNREVIEWED_CEILING`, and never lower
    than the memory already is (a capped boost does not take trust away).
    """
    if human or human_approved or confirmers >= INDEPENDENT_CONFIRMATIONS:
        return MAX_CONFIDENCE
    return max(current, UNREVIEWED_CEILING)


def capped_boost(
    confidence: float, source: ValidationSource | str, *, human: bool, human_approved: bool, confirmers: int
) -> float:
    """`boost` under `boost_ceiling`: the reference for the single SQL statement that applies it."""
    ceiling = boost_ceiling(confidence, human=human, human_approved=human_approved, confirmers=confirmers)
    return min(ceiling, boost(confidence, source))


def capped_rule_confidence(
    old: float, outcome: RuleOutcome | str, *, human: bool, human_approved: bool, confirmers: int
) -> float:
    """`rule_confidence` where non-human observations stop at the ceiling (as validations do), and never take
    a human-approved rule below `HUMAN_APPROVED_RULE_FLOOR` (nor lower than it already is): what a human
    approved stays established until a human observes otherwise, as votes never prune it."""
    after = rule_confidence(old, outcome)
    ceiling = boost_ceiling(old, human=human, human_approved=human_approved, confirmers=confirmers)
    after = min(after, ceiling)
    if human_approved and not human:
        after = max(after, min(old, HUMAN_APPROVED_RULE_FLOOR))
    return round(after, 6)


@dataclass(frozen=True)
class Involvement:
    """The principals involved in a memory, each set named by how (storage/trust.py reads them)."""

    authors: frozenset[str] = frozenset()  # wrote its source staging, or opened its source tasks
    publishers: frozenset[str] = frozenset()  # published, merged, lifted or superseded it (or asked to)

    @property
    def everyone(self) -> frozenset[str]:
        """Every involved principal."""
        return self.authors | self.publishers


def self_endorsement_refusal(principal_id: str, involvement: Involvement, what: str) -> str | None:
    """Why `principal_id` may not give `what` (a validation, a vote, an observation) on this memory, or None.

    Trust comes from someone other than the author: whoever wrote a memory's source staging, opened its
    tasks, published, merged, lifted or superseded it is involved, and its word on it does not count.
    """
    if principal_id in involvement.authors:
        return (
            f"{what} refused: {principal_id} wrote this memory's source (its staging or its task); "
            "trust comes from someone other than the author"
        )
    if principal_id in involvement.publishers:
        return (
            f"{what} refused: {principal_id} published or superseded this memory; "
            "trust comes from someone other than the author"
        )
    return None
