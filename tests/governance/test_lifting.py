"""Where a memory may be lifted, and its copy's text and trust: the pure rules of governance/lifting.py."""

from __future__ import annotations

import pytest

from governance.changes import ChangeTrust
from governance.errors import InvalidInput
from governance.lifting import Place, lift_target, lifted_text, lifted_trust, target_project
from governance.scopes import Scope

TASK = Place(Scope.TASK, "acme", "api", "main", "t-1")
WORKTREE = Place(Scope.WORKTREE, "acme", "api", "main", None)
PROJECT = Place(Scope.PROJECT, "acme", "api", None, None)
ORG = Place(Scope.ORG, "acme", None, None, None)


@pytest.mark.parametrize(
    ("place", "target", "key"),
    [
        (TASK, Scope.WORKTREE, "worktree:acme/api/main"),
        (TASK, Scope.PROJECT, "project:acme/api"),
        (TASK, Scope.ORG, "org:acme"),
        (WORKTREE, Scope.PROJECT, "project:acme/api"),
        (WORKTREE, Scope.ORG, "org:acme"),
        (PROJECT, Scope.ORG, "org:acme"),
    ],
)
def test_lift_target_goes_up_the_memorys_own_line(place: Place, target: Scope, key: str) -> None:
    assert lift_target(place, target, ref="m") == key


@pytest.mark.parametrize(
    ("place", "target", "said"),
    [
        (PROJECT, Scope.PROJECT, "the same scope as"),
        (PROJECT, Scope.WORKTREE, "narrower than"),
        (PROJECT, Scope.TASK, "narrower than"),
        (ORG, Scope.ORG, "the same scope as"),
        (WORKTREE, Scope.TASK, "narrower than"),
        (Place(Scope.TASK, "acme", "api", None, "t-2"), Scope.WORKTREE, "worktree of its task is unknown"),
    ],
)
def test_lift_target_refuses_narrower_same_or_unknown(place: Place, target: Scope, said: str) -> None:
    with pytest.raises(InvalidInput, match=said):
        lift_target(place, target, ref="m")


def test_target_project_is_none_at_org_scope() -> None:
    assert target_project(Scope.ORG, "api") is None
    assert target_project(Scope.PROJECT, "api") == "api"


def test_lifted_text_redacts_content_and_title_again() -> None:
    title = "deploy: token ghp_abcdefghijklmnopqrstuvwxyz0123456789"
    lifted = lifted_text(title, "deploy with <private>x</private> ok")
    assert "ghp_" not in lifted.title and "<private>" not in lifted.content and "ok" in lifted.content
    assert sum(lifted.redaction_counts.values()) >= 2
    with pytest.raises(InvalidInput):
        lifted_text("t", "<private>everything</private>")


@pytest.mark.parametrize(
    ("confidence", "source", "approval", "expected"),
    [
        (0.6, "tests_passed", None, (0.6, "tests_passed")),  # no approval needed: the original's trust
        (0.3, None, ChangeTrust.HUMAN_VALIDATED, (1.0, "human_approved")),
        (0.9, "pr_merged", ChangeTrust.HUMAN_VALIDATED, (1.0, "human_approved")),
        (0.3, None, ChangeTrust.APPROVED, (0.6, None)),  # a non-human approver: verified work
        (0.9, "pr_merged", ChangeTrust.APPROVED, (0.9, "pr_merged")),  # never lowered by an approval
    ],
)
def test_lifted_trust_follows_the_targets_gate(
    confidence: float, source: str | None, approval: ChangeTrust | None, expected: tuple[float, str | None]
) -> None:
    assert lifted_trust(confidence, source, approval) == pytest.approx(expected)
