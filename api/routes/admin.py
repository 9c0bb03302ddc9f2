"""Run-time policy administration (admin principals only); every gateway reloads within a moment."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from api.deps import AuthorizerDep, CurrentPrincipal

__all__ = ["router"]

router = APIRouter(prefix="/v1/admin", tags=["admin"])


class PolicyRule(BaseModel):
    """`role` may (or may not, with effect deny) do `action` at `scope`; `*` matches anything."""

    model_config = ConfigDict(extra="forbid")

    role: str = Field(min_length=1, max_length=64)
    # a rule for a scope that does not exist would silently match nothing, so it is refused (422)
    scope: Literal["task", "worktree", "project", "org", "policy", "*"]
    action: str = Field(min_length=1, max_length=32)
    effect: Literal["allow", "deny"] = "allow"


class PolicyList(BaseModel):
    rules: list[PolicyRule]


def _require_admin(principal: CurrentPrincipal, authorizer: AuthorizerDep) -> None:
    authorizer.check(principal, org="*", project="*", scope="policy", action="admin")


@router.get("/policy", response_model=PolicyList)
async def list_policy(principal: CurrentPrincipal, authorizer: AuthorizerDep) -> PolicyList:
    """The policy rules in force."""
    _require_admin(principal, authorizer)
    return PolicyList(
        rules=[
            PolicyRule.model_validate({"role": r[0], "scope": r[1], "action": r[2], "effect": r[3]})
            for r in authorizer.list_policies()
        ]
    )


@router.post("/policy", status_code=201, response_model=PolicyRule)
async def add_policy(rule: PolicyRule, principal: CurrentPrincipal, authorizer: AuthorizerDep) -> PolicyRule:
    """Add a rule (a deny overrides allows)."""
    _require_admin(principal, authorizer)
    authorizer.add_policy(rule.role, rule.scope, rule.action, rule.effect)
    return rule


@router.post("/policy/delete", response_model=PolicyRule)
async def remove_policy(
    rule: PolicyRule, principal: CurrentPrincipal, authorizer: AuthorizerDep
) -> PolicyRule:
    """Remove a rule."""
    _require_admin(principal, authorizer)
    from governance.errors import NotFound

    if not authorizer.remove_policy(rule.role, rule.scope, rule.action, rule.effect):
        raise NotFound("no such rule")
    return rule
