"""The trust truth table: who may give evidence on a memory, besides what Casbin allows (docs/trust.md).

Three rules on top of the policy, each its own table against the real enforcer and the packaged policy:
- **involvement**: a principal's validation, vote or observation of a memory it wrote (author) or
  published (publisher) is refused, whatever its type; anyone else's passes this rule;
- **observations** of a code rule: orchestrators and humans who may write where the rule binds (at its
  scope; a human also in the project of a task or worktree rule), in the rule's own project only;
- **lifts**: seen only by readers of every source; decided only by a human who reads every source and
  approves at the target.
"""

from __future__ import annotations

from importlib import resources

import casbin
import pytest
from casbin.util import key_match

from api.services.code_rules import may_observe
from governance.identity import Principal
from governance.lifting import lift_refusal
from governance.scopes import ActorType, Scope
from governance.storage.memory_changes import MemoryTenant
from governance.trust import Involvement, RuleOutcome, rule_observer_refusal, self_endorsement_refusal
from policy.enforcer import Authorizer, model_path

ORG, PROJECT = "acme", "api"
INVOLVEMENT = Involvement(authors=frozenset({"author"}), publishers=frozenset({"publisher"}))


@pytest.mark.parametrize("actor", list(ActorType))
@pytest.mark.parametrize(("who", "allowed"), [("author", False), ("publisher", False), ("someone", True)])
@pytest.mark.parametrize("what", ["validation", "feedback", "observation"])
def test_involvement_table(actor: ActorType, who: str, allowed: bool, what: str) -> None:
    assert (self_endorsement_refusal(who, INVOLVEMENT, what) is None) is allowed


@pytest.fixture(scope="module")
def authorizer() -> Authorizer:
    policy = str(resources.files("policy").joinpath("loregate_policy.csv"))
    enforcer = casbin.SyncedEnforcer(model_path(), policy)
    enforcer.add_named_domain_matching_func("g", key_match)
    enforcer.enable_auto_save(False)
    for actor in ActorType:
        for project in (PROJECT, "web"):
            principal = _principal(actor, project)
            enforcer.add_grouping_policy(principal.id, actor.value, principal.domain)
    return Authorizer(enforcer)


def _principal(actor: ActorType, project: str) -> Principal:
    return Principal(
        id=f"{actor.value}-{project}", name=actor.value, actor_type=actor, org=ORG, project=project
    )


# Where each actor type of the rule's own project may observe a code rule (T task, W worktree, P project,
# O org); from another project of the org, only an org rule, and only by those who write at org scope.
OBSERVE = {
    ActorType.AGENT: ("", ""),  # agents never grade the rules that bind them
    ActorType.ORCHESTRATOR: ("TWP", ""),  # an orchestrator of another project may not touch an org rule
    ActorType.HUMAN: ("TWPO", "O"),
    ActorType.SYSTEM: ("", ""),
}
_LETTERS = {"T": Scope.TASK, "W": Scope.WORKTREE, "P": Scope.PROJECT, "O": Scope.ORG}


@pytest.mark.parametrize("actor", list(ActorType))
@pytest.mark.parametrize("scope", list(Scope))
@pytest.mark.parametrize("place", ["same_project", "other_project"])
def test_observation_table(authorizer: Authorizer, actor: ActorType, scope: Scope, place: str) -> None:
    caller = _principal(actor, PROJECT if place == "same_project" else "web")
    rule = MemoryTenant("r", "c", ORG, None if scope is Scope.ORG else PROJECT, scope.value)
    allowed = may_observe(authorizer, caller, rule) and (
        rule_observer_refusal(actor, RuleOutcome.VIOLATED, admin=False) is None
    )
    expected_letters = OBSERVE[actor][0 if place == "same_project" else 1]
    assert allowed is (scope in {_LETTERS[c] for c in expected_letters})


@pytest.mark.parametrize(
    ("reads_every_source", "human", "approves_target", "seen", "decides"),
    [
        (True, True, True, True, True),
        (True, True, False, True, False),
        (True, False, True, True, False),  # an orchestrator or agent of the project: sees, never decides
        (False, True, True, False, False),  # a human of another project of the org
        (False, False, False, False, False),
    ],
)
def test_lift_table(
    reads_every_source: bool, human: bool, approves_target: bool, seen: bool, decides: bool
) -> None:
    assert (lift_refusal(reads_every_source=reads_every_source) is None) is seen
    refusal = lift_refusal(
        reads_every_source=reads_every_source, deciding=True, human=human, approves_target=approves_target
    )
    assert (refusal is None) is decides
