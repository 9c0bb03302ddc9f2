"""The authorisation truth table: actor type × scope × action × where, against the packaged policy.

The enforcer is the real one (`Authorizer` over Casbin) loaded with the packaged model and policy
(policy/loregate_model.conf, policy/loregate_policy.csv: the rows `loregate policy list` shows on a fresh
install), with each principal granted in its own project as `loregate keys create` grants it. The expected
answers are written out below, one line per API action, one column per actor type; every cell is expanded
into one test case per scope and per place (the caller's project, another project of its org, another org).

How an org-scope memory (which has no project) is placed is the services' rule, not the policy's: it is
judged in the caller's own project when the caller belongs to its org (api/services/gateway.py
`judged_project`), i.e. the "same project" column; tests/api/test_memories_org_scope.py covers that.
Which task a task id names is the gateway's rule too (a task id belongs to its org: two orgs may both have
`t-1`, and a caller's id names its own org's): tests/api/test_tenant_task_ids.py holds that table.
"""

from __future__ import annotations

from collections.abc import Iterator
from importlib import resources

import casbin
import pytest
from casbin.util import key_match

from api.services.memories import VALIDATION_ACTION
from governance.identity import Principal
from governance.scopes import ActorType, Scope, ValidationSource
from policy.enforcer import Authorizer, model_path

ORG, PROJECT = "acme", "api"
PLACES = {
    "same_project": (ORG, PROJECT),
    "other_project": (ORG, "web"),
    "other_org": ("globex", PROJECT),
}

# The Casbin action each API action is judged by (the services' choice; checked below where it is code).
CASBIN_ACTION = {
    "open": "open",  # POST /v1/tasks
    "append": "write",  # POST /v1/tasks/{id}/entries (staging: task scope)
    "promote": "promote",  # POST /v1/tasks/{id}/promotion, at the target scope
    "verify": "promote",  # POST /v1/promotions/{id}/verify
    "approve": "approve",  # POST /v1/promotions/{id}/approve
    "reject": "approve",  # POST /v1/promotions/{id}/reject
    "supersede": "write",  # POST /v1/memories/{ref}/supersede
    "retire": "write",  # POST /v1/memories/{ref}/retire
    "validate": "write",  # validate with tests_passed, pr_merged, repeated_success
    "validate_human_approved": "approve",  # validate with human_approved
    "feedback": "read",  # POST /v1/memories/{ref}/feedback
    "read": "read",  # tasks, entries, search, context, GET /v1/memories/{ref}
    "history": "read",  # GET /v1/memories/{ref}/history
    "erase": "erase",  # DELETE /v1/memories/{ref}, POST /v1/erasures (api/services/erasure.py)
}

# Where each actor type may do each action in its own project: T task, W worktree, P project, O org.
# Anywhere else (another project of its org, another org) the answer is always no.
TABLE = """
action                   agent  orchestrator  human  system
open                     ....   T...          T...   ....
append                   TW..   TWP.          ..PO   ...O
promote                  ....   TWPO          TWPO   TWPO
verify                   ....   TWPO          TWPO   TWPO
approve                  ....   ....          ..PO   ...O
reject                   ....   ....          ..PO   ...O
supersede                TW..   TWP.          ..PO   ...O
retire                   TW..   TWP.          ..PO   ...O
validate                 TW..   TWP.          ..PO   ...O
validate_human_approved  ....   ....          ..PO   ...O
feedback                 TWPO   TWPO          TWPO   TWPO
read                     TWPO   TWPO          TWPO   TWPO
history                  TWPO   TWPO          TWPO   TWPO
erase                    ....   ....          TWPO   TWPO
"""

_SCOPE_LETTERS = {"T": Scope.TASK, "W": Scope.WORKTREE, "P": Scope.PROJECT, "O": Scope.ORG}


def _parse(table: str) -> dict[tuple[ActorType, str], set[Scope]]:
    header, *lines = [line.split() for line in table.strip().splitlines()]
    actors = [ActorType(name) for name in header[1:]]
    allowed: dict[tuple[ActorType, str], set[Scope]] = {}
    for action, *cells in lines:
        assert len(cells) == len(actors), action
        for actor, cell in zip(actors, cells, strict=True):
            assert len(cell) == len(Scope) and set(cell) <= {*_SCOPE_LETTERS, "."}, (action, actor, cell)
            allowed[(actor, action)] = {_SCOPE_LETTERS[c] for c in cell if c != "."}
    return allowed


ALLOWED = _parse(TABLE)


def _cases() -> Iterator[object]:
    for (actor, action), scopes in ALLOWED.items():
        for scope in Scope:
            for place in PLACES:
                expected = place == "same_project" and scope in scopes
                yield pytest.param(
                    actor,
                    scope,
                    action,
                    place,
                    expected,
                    id=f"{actor.value}-{scope.value}-{action}-{place}-{'allow' if expected else 'deny'}",
                )


@pytest.fixture(scope="module")
def principals() -> dict[ActorType, Principal]:
    return {
        actor: Principal(
            id=f"{actor.value}-truth", name=f"{actor.value}-truth", actor_type=actor, org=ORG, project=PROJECT
        )
        for actor in ActorType
    }


@pytest.fixture(scope="module")
def authorizer(principals: dict[ActorType, Principal]) -> Authorizer:
    """The packaged model and policy, with one grant per actor type in acme/api (kept in memory)."""
    policy = str(resources.files("policy").joinpath("loregate_policy.csv"))
    enforcer = casbin.SyncedEnforcer(model_path(), policy)
    enforcer.add_named_domain_matching_func("g", key_match)
    enforcer.enable_auto_save(False)  # the grants below are this test's, never written to the csv
    for principal in principals.values():
        enforcer.add_grouping_policy(principal.id, principal.actor_type.value, principal.domain)
    return Authorizer(enforcer)


@pytest.mark.parametrize(("actor", "scope", "action", "place", "expected"), list(_cases()))
def test_truth_table(
    authorizer: Authorizer,
    principals: dict[ActorType, Principal],
    actor: ActorType,
    scope: Scope,
    action: str,
    place: str,
    expected: bool,
) -> None:
    org, project = PLACES[place]
    decision = authorizer.allowed(
        principals[actor], org=org, project=project, scope=scope, action=CASBIN_ACTION[action]
    )
    assert decision is expected


def test_table_covers_every_actor_and_action() -> None:
    assert set(ALLOWED) == {(actor, action) for actor in ActorType for action in CASBIN_ACTION}


def test_validation_actions_are_the_services() -> None:
    """The table's validate rows are judged as api/services/memories.py judges them."""
    for source, casbin_action in VALIDATION_ACTION.items():
        row = "validate_human_approved" if source is ValidationSource.HUMAN_APPROVED else "validate"
        assert CASBIN_ACTION[row] == casbin_action, source


def test_validation_is_required_at_project_and_org_scope(authorizer: Authorizer) -> None:
    assert {s for s in Scope if authorizer.requires_validation(s)} == {Scope.PROJECT, Scope.ORG}
