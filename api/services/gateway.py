"""What every use case starts from: the gateway's shared resources, the caller, and the task it names.

A gateway process (HTTP and gRPC in one event loop, or gRPC alone) holds one `GatewayResources`: settings,
the database engine, the Casbin authoriser, short-lived caches and the Temporal client, connected on first
use. Every service function takes it and the authenticated principal; authentication
(`principal_from_authorization`) and authorisation (`authorized_task`, `authorize_memory`,
`Authorizer.check`) happen here and in the services, never in a transport.

A task or memory the caller may not even read answers exactly as one that does not exist (404, "task 'x'
does not exist" / "memory 'x' does not exist"): a 403 naming its tenant would tell an outsider that it
exists, and where. A caller who may read it but not do the action gets the 403 with the reason.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from temporalio.client import Client

from api.services.metrics import RATE_LIMITED
from governance.config import Settings
from governance.errors import Conflict, NotFound, RateLimited, Unauthenticated, Unavailable
from governance.identity import Principal, hash_api_key, judged_project, key_id_of
from governance.limits import BucketRule, Limiter
from governance.scopes import Scope, scope_key
from governance.staging import TASK_ID_PATTERN
from governance.storage import staging
from governance.storage.identity import authenticate
from governance.storage.staging import TaskInfo
from policy.enforcer import Authorizer
from workflows.client import connect_temporal

__all__ = [
    "KeyCache",
    "TaskCache",
    "GatewayResources",
    "principal_from_authorization",
    "presented_key_hash",
    "admit",
    "load_task",
    "authorized_task",
    "judged_project",
    "authorize_memory",
    "Tenanted",
    "may",
    "readable",
    "readable_scope_keys",
    "temporal_client",
]

# Authenticated keys are cached briefly per process; any policy/key change (NOTIFY) clears the cache.
KEY_CACHE_SECONDS = 30.0


class KeyCache:
    """key → (principal, expiry). Cleared on every policy notification (e.g. a revoked key)."""

    def __init__(self) -> None:
        self._entries: dict[str, tuple[Principal, float]] = {}

    def get(self, key: str) -> Principal | None:
        hit = self._entries.get(key)
        if hit is None or hit[1] < time.monotonic():
            return None
        return hit[0]

    def put(self, key: str, principal: Principal) -> None:
        if len(self._entries) > 10_000:
            self._entries.clear()
        self._entries[key] = (principal, time.monotonic() + KEY_CACHE_SECONDS)

    def clear(self) -> None:
        self._entries.clear()


def presented_key_hash(authorization: str | None) -> str | None:
    """The SHA-256 of the bearer key in an Authorization value (None without one): what a write statement
    checks again, so a key revoked since this process cached it writes nothing."""
    if not authorization:
        return None
    key = authorization.partition(" ")[2].strip()
    return hash_api_key(key) if key else None


class TaskCache:
    """Tasks never change tenant, so their lookup is cached per process (bounded): by (org, task id) for
    a caller of that org, by ("/", key) for a key."""

    def __init__(self, size: int = 50_000) -> None:
        self._size = size
        self._entries: dict[tuple[str, str], TaskInfo] = {}

    def get(self, org: str, task_id: str) -> TaskInfo | None:
        return self._entries.get((org, task_id))

    def put(self, org: str, task_id: str, task: TaskInfo) -> None:
        if len(self._entries) >= self._size:
            self._entries.clear()
        self._entries[(org, task_id)] = task


@dataclass
class GatewayResources:
    """What a gateway process shares between requests; the one argument every service function takes."""

    settings: Settings
    engine: AsyncEngine
    authorizer: Authorizer
    key_cache: KeyCache = field(default_factory=KeyCache)
    task_cache: TaskCache = field(default_factory=TaskCache)
    limiter: Limiter = field(default_factory=Limiter)
    temporal: Client | None = None


async def principal_from_authorization(resources: GatewayResources, authorization: str | None) -> Principal:
    """The principal behind `Bearer <api key>` (cached briefly); the actor of every write is this."""
    if not authorization:
        raise Unauthenticated("missing Authorization header; send `Authorization: Bearer <api key>`")
    scheme, _, key = authorization.partition(" ")
    key = key.strip()
    if scheme.lower() != "bearer" or not key:
        raise Unauthenticated("Authorization must be `Bearer <api key>`")
    if key_id_of(key) is None:
        raise Unauthenticated("malformed API key")
    principal = resources.key_cache.get(key)
    if principal is None:
        async with resources.engine.connect() as conn:
            principal = await authenticate(conn, key)
        if principal is None:
            raise Unauthenticated("unknown or revoked API key")
        resources.key_cache.put(key, principal)
    admit(resources, principal, "requests")
    return principal


def _rules(settings: Settings, budget: str) -> tuple[BucketRule, BucketRule]:
    """The (principal, tenant) bucket rules of a budget: `requests` (every call) or `search` (embedding)."""
    if budget == "search":
        return (
            BucketRule(settings.search_rate_principal_per_second, settings.search_rate_principal_burst),
            BucketRule(settings.search_rate_tenant_per_second, settings.search_rate_tenant_burst),
        )
    return (
        BucketRule(settings.rate_limit_principal_per_second, settings.rate_limit_principal_burst),
        BucketRule(settings.rate_limit_tenant_per_second, settings.rate_limit_tenant_burst),
    )


def admit(resources: GatewayResources, principal: Principal, budget: str) -> None:
    """Take one token of `budget` from the caller's key and tenant buckets, or RateLimited (nothing done).

    Every authenticated call takes from `requests` (here, on authentication, whatever the transport);
    reads that embed their text (search, context, bug-pattern match) take from `search` as well.
    """
    mine, tenants = _rules(resources.settings, budget)
    wait, refusing = resources.limiter.admit(
        [(f"principal:{principal.id}:{budget}", mine), (f"tenant:{principal.org}:{budget}", tenants)],
        time.monotonic(),
    )
    if refusing is None:
        return
    whose = "this API key" if refusing.startswith("principal:") else f"tenant {principal.org!r}"
    RATE_LIMITED.labels(refusing.partition(":")[0], budget).inc()
    raise RateLimited(
        f"rate limit of {budget} for {whose} reached; retry after {wait:.1f} s", retry_after=wait
    )


async def _tenant_task(conn: AsyncConnection, principal: Principal, task_id: str) -> TaskInfo | None:
    """The task its tenant calls `task_id`, in the caller's org; an admin (every tenant's) also reaches a
    task of another org when only one org has that id (Conflict when several do: name it by its key)."""
    found = await staging.find_tasks(conn, task_id, None if principal.is_admin else [principal.org])
    own = [t for t in found if t.org == principal.org]
    if own or len(found) <= 1:
        return next(iter(own or found), None)
    raise Conflict(
        f"task id {task_id!r} is used in {len(found)} tenants ({', '.join(t.org for t in found)}): "
        f"name the task by its key, <org>/{task_id} (gRPC and an erasure's body take it), or call with "
        "a key of that org"
    )


async def load_task(resources: GatewayResources, principal: Principal, task_id: str) -> TaskInfo:
    """The task `task_id` names for `principal`, or NotFound.

    A task id belongs to its tenant: `t-1` is the caller's org's task `t-1`, never another org's (two orgs
    may both have one). A key `<org>/<task id>` (what scope keys and workflow ids carry) names one task of
    any org; the caller's authorisation then decides whether it may see it (authorized_task).
    """
    org, slash, public = task_id.rpartition("/")
    if re.fullmatch(TASK_ID_PATTERN, public) is None or (slash and not org):
        raise NotFound(f"task {task_id!r} does not exist")  # no task can have this id; spare the database
    tenant = "/" if slash else principal.org
    task = resources.task_cache.get(tenant, task_id)
    if task is None:
        async with resources.engine.connect() as conn:
            if slash:
                task = await staging.get_task(conn, task_id)
            else:
                task = await _tenant_task(conn, principal, task_id)
        if task is None:
            raise NotFound(f"task {task_id!r} does not exist")
        if slash or task.org == principal.org:  # an admin's reach into another org is not cached as its own
            resources.task_cache.put(tenant, task_id, task)
    return task


def _authorize_visible(
    resources: GatewayResources,
    principal: Principal,
    *,
    org: str,
    project: str | None,
    scope: Scope | str,
    action: str,
    read_scope: Scope | str,
    hidden: str,
) -> None:
    """Allow `action`; else PolicyDenied if the caller may read the thing (`read` at `read_scope`), else
    NotFound(`hidden`), the answer an unknown id gets."""
    authorizer = resources.authorizer
    if authorizer.allowed(principal, org=org, project=project, scope=scope, action=action):
        return
    if action != "read" and authorizer.allowed(
        principal, org=org, project=project, scope=read_scope, action="read"
    ):
        authorizer.check(principal, org=org, project=project, scope=scope, action=action)
    raise NotFound(hidden)


async def authorized_task(
    resources: GatewayResources, principal: Principal, task_id: str, action: str, scope: Scope = Scope.TASK
) -> TaskInfo:
    """The task, after Casbin allowed `principal` to `action` at `scope` in the task's tenant.

    NotFound, as for an unknown id, when the caller may not even read the task (`read` at task scope in its
    tenant); PolicyDenied when it may read it but not do `action`.
    """
    task = await load_task(resources, principal, task_id)
    _authorize_visible(
        resources,
        principal,
        org=task.org,
        project=task.project,
        scope=scope,
        action=action,
        read_scope=Scope.TASK,
        hidden=f"task {task_id!r} does not exist",
    )
    return task


def authorize_memory(
    resources: GatewayResources,
    principal: Principal,
    ref: str,
    *,
    org: str,
    project: str | None,
    scope: str,
    action: str,
) -> None:
    """Casbin's verdict on `action` at a memory's scope, in the project `judged_project` chooses.

    NotFound ("memory 'ref' does not exist", as for an unknown ref) when the caller may not even read the
    memory; PolicyDenied when it may read it but not do `action`. Every memory operation (show, validate,
    feedback, supersede, retire, history) goes through here, so they all judge alike.
    """
    _authorize_visible(
        resources,
        principal,
        org=org,
        project=judged_project(principal, org, project),
        scope=scope,
        action=action,
        read_scope=scope,
        hidden=f"memory {ref!r} does not exist",
    )


class Tenanted(Protocol):
    """Anything listed with its tenant and scope: a memory row, a code rule, a stale memory."""

    @property
    def org(self) -> str: ...
    @property
    def project(self) -> str | None: ...
    @property
    def scope(self) -> str: ...


_T = TypeVar("_T", bound=Tenanted)


def may(resources: GatewayResources, principal: Principal, row: Tenanted, action: str) -> bool:
    """Whether the policy lets `principal` do `action` at the row's scope, judged as `authorize_memory`
    judges a memory (in the project `judged_project` chooses)."""
    return resources.authorizer.allowed(
        principal,
        org=row.org,
        project=judged_project(principal, row.org, row.project),
        scope=row.scope,
        action=action,
    )


def readable(resources: GatewayResources, principal: Principal, rows: Iterable[_T]) -> list[_T]:
    """The rows the policy lets `principal` read (`may` read each)."""
    return [r for r in rows if may(resources, principal, r, "read")]


async def temporal_client(resources: GatewayResources) -> Client:
    """The process's Temporal client, connected on first use (gateways start without Temporal)."""
    if resources.temporal is None:
        try:
            resources.temporal = await connect_temporal(resources.settings)
        except Exception as exc:  # connection refused, DNS, TLS: all mean "retry later"
            raise Unavailable(f"Temporal is unavailable: {exc}") from exc
    return resources.temporal


async def readable_scope_keys(resources: GatewayResources, principal: Principal, task_id: str) -> list[str]:
    """Scope keys of the task the caller may read; NotFound for an unknown task or one it may not read."""
    task = await authorized_task(resources, principal, task_id, "read")
    return [
        scope_key(s, org=task.org, project=task.project, worktree=task.worktree, task_id=task.id)
        for s in Scope
        if resources.authorizer.allowed(principal, org=task.org, project=task.project, scope=s, action="read")
    ]
