"""The review of stale memories: list them, and let a human confirm one is still true.

A memory becomes stale when a memory it builds on is superseded or retired (governance/storage/
derivations.py). The review list holds the stale memories of the caller's tenant that the policy lets it
read (`scope` narrows it to one scope key). For each a human either confirms it (this module: the mark is
cleared with a CONFIRMED event), rewrites it (`POST /v1/memories/{id}/supersede`, through the gate) or retires
it (`POST /v1/memories/{id}/retire`).

Confirming needs a human (an agent cannot vouch that its own knowledge still holds) who may read the memory,
and, at a scope whose policy requires validation (project, org), who may `approve` there.
"""

from __future__ import annotations

from api.schemas.review import ConfirmIn, ConfirmPublic, ReviewPublic, StaleMemoryPublic
from api.services.gateway import GatewayResources, authorize_memory, readable
from governance.errors import PolicyDenied
from governance.identity import Principal
from governance.scopes import ActorType
from governance.storage.derivations import confirm_memory, stale_memories
from governance.storage.memory_changes import memory_tenant

__all__ = ["review", "confirm"]


async def review(resources: GatewayResources, principal: Principal, scope_key: str | None) -> ReviewPublic:
    """Stale memories of the caller's tenant it may read (of one scope key when given), oldest mark first."""
    async with resources.engine.connect() as conn:
        rows = await stale_memories(conn, org=principal.org, project=principal.project, scope_key=scope_key)
    shown = readable(resources, principal, rows)
    return ReviewPublic(
        memories=[
            StaleMemoryPublic(
                id=r.id,
                citation=r.citation,
                type=r.memory_type,
                scope=r.scope,
                scope_key=r.scope_key,
                title=r.title,
                stale_at=r.stale_at,
                stale_reason=r.stale_reason,
                derived_from=r.derived_from,
            )
            for r in shown
        ]
    )


async def confirm(
    resources: GatewayResources, principal: Principal, ref: str, body: ConfirmIn
) -> ConfirmPublic:
    """Clear a stale mark (a human's word that the memory still holds); 409 if it is not stale."""
    async with resources.engine.connect() as conn:
        memory = await memory_tenant(conn, ref)
    action = "approve" if resources.authorizer.requires_validation(memory.scope) else "read"
    authorize_memory(
        resources, principal, ref, org=memory.org, project=memory.project, scope=memory.scope, action="read"
    )
    if principal.actor_type is not ActorType.HUMAN and not principal.is_admin:
        raise PolicyDenied(
            f"{principal.actor_type.value} {principal.id} may not confirm a stale memory: a human "
            "confirms it; rewrite it through the gate (supersede) or have a human retire it"
        )
    authorize_memory(
        resources, principal, ref, org=memory.org, project=memory.project, scope=memory.scope, action=action
    )
    async with resources.engine.begin() as conn:
        was = await confirm_memory(
            conn, memory.id, note=body.note, actor_id=principal.id, actor_type=principal.actor_type.value
        )
    return ConfirmPublic(id=memory.id, citation=memory.citation, was_stale=was)
