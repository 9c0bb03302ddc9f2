"""Run-time policy administration (admin principals only); every gateway reloads within a moment."""

from __future__ import annotations

from fastapi import APIRouter

from api.http.deps import CurrentPrincipal, Resources
from api.schemas.admin import PolicyList, PolicyRule
from api.services import admin

__all__ = ["router"]

router = APIRouter(prefix="/v1/admin", tags=["admin"])


@router.get("/policy", response_model=PolicyList)
async def list_policy(resources: Resources, principal: CurrentPrincipal) -> PolicyList:
    """The policy rules in force."""
    return admin.list_policy(resources, principal)


@router.post("/policy", status_code=201, response_model=PolicyRule)
async def add_policy(rule: PolicyRule, resources: Resources, principal: CurrentPrincipal) -> PolicyRule:
    """Add a rule (a deny overrides allows)."""
    return admin.add_policy(resources, principal, rule)


@router.post("/policy/delete", response_model=PolicyRule)
async def remove_policy(rule: PolicyRule, resources: Resources, principal: CurrentPrincipal) -> PolicyRule:
    """Remove a rule."""
    return admin.remove_policy(resources, principal, rule)
