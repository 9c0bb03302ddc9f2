"""Browsing published memory by scope: one scope instance's memories, filtered, for the people who govern.

A scope key names its tenant (`project:acme/shop`, `worktree:acme/shop/main`, `org:acme`, `task:<id>`).
The caller needs `read` at that scope in that tenant (Casbin, judged as for a memory of it: an org scope in
the caller's own project, `judged_project`); a scope it may not read answers as one with no memories would
not: 404, the same for every scope it cannot see, so an outsider learns nothing of another tenant.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from api.schemas.events import EventsPage
from api.schemas.memories import MemoryListItemPublic, MemoryListPublic, MemoryStateName
from api.services.gateway import GatewayResources, authorized_task, judged_project, readable
from governance.errors import InvalidInput, NotFound
from governance.identity import Principal
from governance.scopes import MemoryType, Scope
from governance.storage.listing import MemoryState, list_memories
from governance.storage.memory_links import DerivationLinks, derivation_links
from governance.storage.plan_review import PublishedTarget, published_targets

__all__ = [
    "MemoryFilter",
    "ScopeTenant",
    "scope_tenant",
    "browse_memories",
    "BROWSE_PAGE_MAX",
    "SCOPE_KEY_PATTERN",
    "authorize_scope",
    "TrustStep",
    "trust_history",
    "readable_links",
    "publication",
]

BROWSE_PAGE_MAX = 200
# what `scope_tenant` takes apart (org and project names hold no `/`; a worktree may)
SCOPE_KEY_PATTERN = r"^(task:.+|worktree:[^/]+/[^/]+/.+|project:[^/]+/[^/]+|org:[^/]+)$"


@dataclass(frozen=True)
class MemoryFilter:
    """What a reviewer narrows a scope's listing with; every field optional."""

    query: str | None = None
    types: tuple[str, ...] = ()
    min_trust: float | None = None
    max_trust: float | None = None
    state: MemoryStateName | None = None
    offset: int = 0
    limit: int = 50


@dataclass(frozen=True)
class ScopeTenant:
    """A scope key taken apart: its scope and the tenant it belongs to (`task_id` for task scope)."""

    scope: Scope
    org: str
    project: str | None
    task_id: str | None = None


def scope_tenant(scope_key: str) -> ScopeTenant:
    """The scope and tenant of a scope key; InvalidInput when it is not one."""
    kind, _, rest = scope_key.partition(":")
    parts = rest.split("/", 2)
    if kind == Scope.TASK.value and rest:
        return ScopeTenant(Scope.TASK, org="", project=None, task_id=rest)
    if kind == Scope.WORKTREE.value and len(parts) == 3 and all(parts):
        return ScopeTenant(Scope.WORKTREE, org=parts[0], project=parts[1])
    if kind == Scope.PROJECT.value and len(parts) == 2 and all(parts):
        return ScopeTenant(Scope.PROJECT, org=parts[0], project=parts[1])
    if kind == Scope.ORG.value and len(parts) == 1 and parts[0]:
        return ScopeTenant(Scope.ORG, org=parts[0], project=None)
    raise InvalidInput(
        f"{scope_key!r} is not a scope key: task:<id>, worktree:<org>/<project>/<worktree>, "
        "project:<org>/<project> or org:<org>"
    )


async def authorize_scope(resources: GatewayResources, principal: Principal, scope_key: str) -> str:
    """Allow reading the scope's memories, or NotFound (the same answer for every scope one cannot see).

    Returns the scope's key as memories store it: `task:<id>` names the caller's tenant's task, stored
    under its key (`task:<org>/<id>`, governance/staging.task_key).
    """
    tenant = scope_tenant(scope_key)
    if tenant.task_id is not None:
        task = await authorized_task(resources, principal, tenant.task_id, "read")
        return f"{Scope.TASK.value}:{task.id}"
    if not resources.authorizer.allowed(
        principal,
        org=tenant.org,
        project=judged_project(principal, tenant.org, tenant.project),
        scope=tenant.scope,
        action="read",
    ):
        raise NotFound(f"scope {scope_key!r} does not exist")
    return scope_key


def _check(filters: MemoryFilter) -> None:
    known = {t.value for t in MemoryType}
    unknown = sorted(set(filters.types) - known)
    if unknown:
        raise InvalidInput(f"unknown memory types {unknown}; known: {sorted(known)}")
    for name, value in (("min_trust", filters.min_trust), ("max_trust", filters.max_trust)):
        if value is not None and not 0.0 <= value <= 1.0:
            raise InvalidInput(f"{name} must be between 0 and 1")
    if not 1 <= filters.limit <= BROWSE_PAGE_MAX or filters.offset < 0:
        raise InvalidInput(f"limit must be 1..{BROWSE_PAGE_MAX} and offset at least 0")


async def browse_memories(
    resources: GatewayResources, principal: Principal, scope_key: str, filters: MemoryFilter
) -> MemoryListPublic:
    """A page of one scope's memories that pass `filters`, newest first (the caller needs `read` there)."""
    _check(filters)
    scope_key = await authorize_scope(resources, principal, scope_key)
    async with resources.engine.connect() as conn:
        rows = await list_memories(
            conn,
            scope_key,
            query=filters.query or None,
            types=filters.types,
            min_trust=filters.min_trust,
            max_trust=filters.max_trust,
            state=MemoryState(filters.state) if filters.state else None,
            limit=filters.limit + 1,  # one more tells whether a next page exists
            offset=filters.offset,
        )
    page = rows[: filters.limit]
    return MemoryListPublic(
        scope_key=scope_key,
        query=filters.query or None,
        types=list(filters.types),
        min_trust=filters.min_trust,
        max_trust=filters.max_trust,
        state=filters.state,
        offset=filters.offset,
        limit=filters.limit,
        next_offset=filters.offset + filters.limit if len(rows) > filters.limit else None,
        memories=[
            MemoryListItemPublic(
                id=r.id,
                citation=r.citation,
                type=r.memory_type,
                scope=r.scope,
                scope_key=r.scope_key,
                title=r.title,
                confidence=r.confidence,
                version=r.version,
                state=r.state.value,
                created_at=r.created_at,
                deprecated_at=r.deprecated_at,
                expires_at=r.expires_at,
            )
            for r in page
        ],
    )


@dataclass(frozen=True)
class TrustStep:
    """One change of a memory's confidence, read off its events: when, what, who, and the value after."""

    at: datetime
    event: str
    actor_id: str | None
    confidence: float | None
    detail: str


def _confidence_after(event: str, payload: dict[str, object]) -> float | None:
    value = payload.get("to") if event == "DECAYED" else payload.get("confidence")
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def trust_history(trail: EventsPage) -> list[TrustStep]:
    """The events of `trail` that moved the memory's trust (validations, merges, observations, decay)."""
    steps: list[TrustStep] = []
    for e in trail.events:
        payload = e.payload or {}
        after = _confidence_after(e.type, payload)
        if e.type not in ("BOOSTED", "DECAYED", "MERGED", "OBSERVED") and after is None:
            continue
        if e.type == "DECAYED":
            detail = f"decayed ({payload.get('policy', 'policy unknown')})"
        elif e.type == "BOOSTED":
            counted = "" if payload.get("counted", True) else ", not counted again"
            detail = f"validated: {payload.get('source', '?')}{counted}"
        elif e.type == "MERGED":
            candidate = payload.get("candidate")
            kept = candidate.get("content") if isinstance(candidate, dict) else None
            detail = (
                f"a duplicate merged into it: {kept}"
                if isinstance(kept, str)
                else "a duplicate merged into it"
            )
        else:
            detail = e.reason or e.type.lower()
        steps.append(TrustStep(e.created_at, e.type, e.actor_id, after, detail))
    return steps


async def readable_links(
    resources: GatewayResources, principal: Principal, memory_id: str
) -> DerivationLinks:
    """What the memory builds on and what builds on it, of the memories the caller may read.

    The caller must already be allowed to read `memory_id` (the memory's page checks it first).
    """
    async with resources.engine.connect() as conn:
        links = await derivation_links(conn, memory_id)
    return DerivationLinks(
        sources=readable(resources, principal, links.sources),
        derived=readable(resources, principal, links.derived),
    )


async def publication(resources: GatewayResources, memory_id: str) -> PublishedTarget | None:
    """Who published the memory and who approved it then (the caller may already read it)."""
    async with resources.engine.connect() as conn:
        return (await published_targets(conn, [memory_id])).get(memory_id)
