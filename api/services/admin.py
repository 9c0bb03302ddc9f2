"""Run-time policy administration (admin principals only); every gateway reloads within a moment."""

from __future__ import annotations

from api.schemas.admin import PolicyList, PolicyRule
from api.services.gateway import GatewayResources
from governance.errors import NotFound
from governance.identity import Principal
from governance.scopes import check_policy_action

__all__ = ["list_policy", "add_policy", "remove_policy"]


def _require_admin(resources: GatewayResources, principal: Principal) -> None:
    resources.authorizer.check(principal, org="*", project="*", scope="policy", action="admin")


def list_policy(resources: GatewayResources, principal: Principal) -> PolicyList:
    """The policy rules in force."""
    _require_admin(resources, principal)
    return PolicyList(
        rules=[
            PolicyRule.model_validate({"role": r[0], "scope": r[1], "action": r[2], "effect": r[3]})
            for r in resources.authorizer.list_policies()
        ]
    )


def add_policy(resources: GatewayResources, principal: Principal, rule: PolicyRule) -> PolicyRule:
    """Add a rule (a deny overrides allows); an action the platform never asks about is InvalidInput."""
    _require_admin(resources, principal)
    check_policy_action(rule.action)
    resources.authorizer.add_policy(rule.role, rule.scope, rule.action, rule.effect)
    return rule


def remove_policy(resources: GatewayResources, principal: Principal, rule: PolicyRule) -> PolicyRule:
    """Remove a rule; NotFound when no such rule exists."""
    _require_admin(resources, principal)
    if not resources.authorizer.remove_policy(rule.role, rule.scope, rule.action, rule.effect):
        raise NotFound("no such rule")
    return rule
