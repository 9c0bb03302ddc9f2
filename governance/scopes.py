"""Scopes, actor types and the promotion order, as pure functions (docs/architecture.md)."""

from __future__ import annotations

from enum import StrEnum

from governance.errors import InvalidInput

__all__ = [
    "Scope",
    "ActorType",
    "EntryKind",
    "MemoryType",
    "ValidationSource",
    "POLICY_ACTIONS",
    "SCOPE_LEVEL",
    "check_policy_action",
    "can_promote",
    "requires_validation",
    "scope_key",
    "keys_at_or_above",
    "visible_scope_keys",
]


class Scope(StrEnum):
    """Where a memory is valid, narrowest first."""

    TASK = "task"
    WORKTREE = "worktree"
    PROJECT = "project"
    ORG = "org"


class ActorType(StrEnum):
    """Who a principal is; decides, through the policy, which scopes it may write."""

    AGENT = "agent"
    ORCHESTRATOR = "orchestrator"
    HUMAN = "human"
    SYSTEM = "system"


class EntryKind(StrEnum):
    """Kinds of staging entries; the rule-based extractor reads some of them as candidate memories."""

    LOG = "log"
    THOUGHT = "thought"
    TOOL_OUTPUT = "tool_output"
    DECISION = "decision"
    APPROACH = "approach"
    ERROR = "error"
    RESULT = "result"
    INSIGHT = "insight"
    FACT = "fact"
    PREFERENCE = "preference"
    PROFILE = "profile"  # who someone is: their role, tools, working habits (becomes a `profile`)
    SKILL = "skill"
    RULE = "rule"  # a code rule the work should follow (becomes a `code_rule`)
    CORRECTION = "correction"  # a human's correction of an agent's work (repeated: a `preference`)


class MemoryType(StrEnum):
    """Types of published memory."""

    EPISODE = "episode"
    SKILL = "skill"
    FACT = "fact"
    PREFERENCE = "preference"
    PROFILE = "profile"
    INSIGHT = "insight"
    BUG_PATTERN = "bug_pattern"
    CODE_RULE = "code_rule"


class ValidationSource(StrEnum):
    """Evidence that work (or a memory) is right; each carries a trust boost."""

    TESTS_PASSED = "tests_passed"
    PR_MERGED = "pr_merged"
    HUMAN_APPROVED = "human_approved"
    REPEATED_SUCCESS = "repeated_success"


SCOPE_LEVEL: dict[Scope, int] = {Scope.TASK: 1, Scope.WORKTREE: 2, Scope.PROJECT: 3, Scope.ORG: 4}

# the actions the platform asks Casbin about (`*` matches every one); `required` is the `validation` role's
# row that makes a scope wait for an approval (policy/loregate_policy.csv)
POLICY_ACTIONS: tuple[str, ...] = (
    "read",
    "write",
    "open",
    "promote",
    "approve",
    "erase",
    "admin",
    "required",
    "*",
)


def check_policy_action(action: str) -> None:
    """A new policy row's action must be one the platform asks about: a typo (`aprove`) would be a row that
    silently matches nothing, a deny that denies nothing. InvalidInput names the known ones."""
    if action not in POLICY_ACTIONS:
        known = ", ".join(repr(a) for a in POLICY_ACTIONS)
        raise InvalidInput(f"unknown action {action!r}: a policy row's action is one of {known}")


# project and org knowledge needs validation (a human approval) before it is published.
_VALIDATION_REQUIRED = {Scope.PROJECT, Scope.ORG}


def can_promote(source: Scope, target: Scope) -> bool:
    """Promotion (and lifting, governance/lifting.py) goes strictly upward."""
    return SCOPE_LEVEL[source] < SCOPE_LEVEL[target]


def requires_validation(scope: Scope) -> bool:
    """Whether publishing into `scope` waits for an approval (the default policy; Casbin may add more)."""
    return scope in _VALIDATION_REQUIRED


def scope_key(scope: Scope, *, org: str, project: str, worktree: str, task_id: str) -> str:
    """The key that groups memories of one scope instance, e.g. `project:acme/api`."""
    if scope is Scope.TASK:
        return f"task:{task_id}"
    if scope is Scope.WORKTREE:
        return f"worktree:{org}/{project}/{worktree}"
    if scope is Scope.PROJECT:
        return f"project:{org}/{project}"
    return f"org:{org}"


def keys_at_or_above(scope: Scope, *, org: str, project: str, worktree: str, task_id: str) -> list[str]:
    """The keys of `scope` and every wider scope: what a memory planned into `scope` is classified against."""
    keys = {"org": org, "project": project, "worktree": worktree, "task_id": task_id}
    return [scope_key(s, **keys) for s in Scope if SCOPE_LEVEL[s] >= SCOPE_LEVEL[scope]]


def visible_scope_keys(*, org: str, project: str, worktree: str, task_id: str) -> list[str]:
    """Scope keys a reader in this task sees: its task, worktree, project and org."""
    return [scope_key(s, org=org, project=project, worktree=worktree, task_id=task_id) for s in Scope]
