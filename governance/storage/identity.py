"""Principals, API keys and their tenant grants, written together in one transaction.

A grant is a Casbin grouping row (`g, <principal>, <actor type>, <org>/<project>`); creating a principal,
revoking a key or changing a grant ends with `pg_notify` in the same transaction, so every process reloads
its policy (and drops cached keys) exactly when the change becomes visible.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, insert, select, text, update
from sqlalchemy.ext.asyncio import AsyncConnection

from governance.identity import Principal, hash_api_key, new_api_key, tenant_domain
from governance.scopes import ActorType
from governance.storage.tables import api_keys, principals

__all__ = [
    "POLICY_CHANNEL",
    "bootstrap_admin",
    "get_enabled_principal",
    "disable_principal",
    "KeyInfo",
    "create_principal",
    "create_api_key",
    "authenticate",
    "principal_by_key_id",
    "get_principal",
    "list_keys",
    "revoke_key",
    "count_principals",
    "notify_policy_change",
    "grant_role",
]

# the channel a policy change is announced on; every process's watcher (storage/policy_watcher.py) listens
POLICY_CHANNEL = "loregate_policy"

_CASBIN_INSERT = text("INSERT INTO casbin_rule (ptype, v0, v1, v2) VALUES ('g', :sub, :role, :dom)")


async def grant_role(conn: AsyncConnection, subject: str, role: str, domain: str) -> None:
    """Give `subject` a role in a Casbin domain, in the caller's transaction.

    The one writer of `casbin_rule` besides Casbin's own adapter (policy/enforcer.py): a principal and its
    roles are created in one transaction, which the adapter cannot join. The caller notifies the policy
    watchers (`notify_policy_change`) once its grants are written.
    """
    await conn.execute(_CASBIN_INSERT, {"sub": subject, "role": role, "dom": domain})


@dataclass(frozen=True)
class KeyInfo:
    """A key as listed: never the secret."""

    key_id: str
    principal: Principal
    created_at: datetime
    revoked_at: datetime | None


def _principal(row: object) -> Principal:
    return Principal(
        id=row.id,  # type: ignore[attr-defined]
        name=row.name,  # type: ignore[attr-defined]
        actor_type=ActorType(row.actor_type),  # type: ignore[attr-defined]
        org=row.org,  # type: ignore[attr-defined]
        project=row.project,  # type: ignore[attr-defined]
        is_admin=row.is_admin,  # type: ignore[attr-defined]
    )


async def notify_policy_change(conn: AsyncConnection) -> None:
    """Delivered at commit: every process reloads policy and forgets cached keys."""
    await conn.execute(text("SELECT pg_notify(:channel, '')"), {"channel": POLICY_CHANNEL})


async def create_principal(
    conn: AsyncConnection,
    *,
    name: str,
    actor_type: ActorType,
    org: str,
    project: str | None,
    is_admin: bool = False,
) -> Principal:
    """A principal with its tenant grant (and the admin grant across tenants when `is_admin`)."""
    principal = Principal(
        id=f"{actor_type.value}-{secrets.token_hex(6)}",
        name=name,
        actor_type=actor_type,
        org=org,
        project=project,
        is_admin=is_admin,
    )
    await conn.execute(
        insert(principals).values(
            id=principal.id,
            name=name,
            actor_type=actor_type.value,
            org=org,
            project=project,
            is_admin=is_admin,
        )
    )
    await grant_role(conn, principal.id, actor_type.value, tenant_domain(org, project))
    if is_admin:
        await grant_role(conn, principal.id, "admin", "*")
    await notify_policy_change(conn)
    return principal


async def create_api_key(conn: AsyncConnection, principal_id: str) -> str:
    """A new key for the principal; the plaintext is returned once and never stored."""
    key, key_id = new_api_key()
    await conn.execute(
        insert(api_keys).values(id=key_id, principal_id=principal_id, key_hash=hash_api_key(key))
    )
    return key


async def authenticate(conn: AsyncConnection, key: str) -> Principal | None:
    """The principal behind an unrevoked key, else None."""
    row = (
        await conn.execute(
            select(principals)
            .join(api_keys, api_keys.c.principal_id == principals.c.id)
            .where(api_keys.c.key_hash == hash_api_key(key), api_keys.c.revoked_at.is_(None))
        )
    ).first()
    return _principal(row) if row is not None else None


async def principal_by_key_id(conn: AsyncConnection, key_id: str) -> tuple[Principal, str] | None:
    """The principal behind an unrevoked key and the key's stored hash, by the key's public id; else None.

    The console's sessions name a key by its id and are signed with its hash (api/services/sessions.py), so
    revoking the key ends them.
    """
    row = (
        await conn.execute(
            select(principals, api_keys.c.key_hash)
            .join(api_keys, api_keys.c.principal_id == principals.c.id)
            .where(api_keys.c.id == key_id, api_keys.c.revoked_at.is_(None))
        )
    ).first()
    return (_principal(row), row.key_hash) if row is not None else None


async def get_principal(conn: AsyncConnection, principal_id: str) -> Principal | None:
    """The principal, enabled or not (listings, audit)."""
    row = (await conn.execute(select(principals).where(principals.c.id == principal_id))).first()
    return _principal(row) if row is not None else None


async def get_enabled_principal(conn: AsyncConnection, principal_id: str) -> Principal | None:
    """The principal if it is enabled, else None.

    A principal is enabled while it holds at least one unrevoked API key: revoking its last key (or
    `loregate principals disable`, which revokes them all) disables it, on every channel, at once — an
    approval naming it through the Temporal UI is refused like one from an unknown principal.
    """
    live_key = (
        select(api_keys.c.id)
        .where(api_keys.c.principal_id == principals.c.id, api_keys.c.revoked_at.is_(None))
        .exists()
    )
    row = (await conn.execute(select(principals).where(principals.c.id == principal_id, live_key))).first()
    return _principal(row) if row is not None else None


async def disable_principal(conn: AsyncConnection, principal_id: str) -> int | None:
    """Revoke every live key of the principal; the number revoked, or None for an unknown principal."""
    if await get_principal(conn, principal_id) is None:
        return None
    result = await conn.execute(
        update(api_keys)
        .where(api_keys.c.principal_id == principal_id, api_keys.c.revoked_at.is_(None))
        .values(revoked_at=func.now())
    )
    await notify_policy_change(conn)
    return int(result.rowcount or 0)


async def list_keys(conn: AsyncConnection) -> list[KeyInfo]:
    rows = (
        await conn.execute(
            select(
                principals,
                api_keys.c.id.label("key_id"),
                api_keys.c.created_at.label("key_created"),
                api_keys.c.revoked_at,
            )
            .join(api_keys, api_keys.c.principal_id == principals.c.id)
            .order_by(api_keys.c.created_at)
        )
    ).all()
    return [KeyInfo(r.key_id, _principal(r), r.key_created, r.revoked_at) for r in rows]


async def revoke_key(conn: AsyncConnection, key_id: str) -> bool:
    """Revoke a key by its public id; True if a live key was revoked."""
    result = await conn.execute(
        update(api_keys)
        .where(api_keys.c.id == key_id, api_keys.c.revoked_at.is_(None))
        .values(revoked_at=func.now())
    )
    if result.rowcount:
        await notify_policy_change(conn)
    return bool(result.rowcount)


async def count_principals(conn: AsyncConnection) -> int:
    return int((await conn.execute(select(func.count()).select_from(principals))).scalar_one())


async def bootstrap_admin(conn: AsyncConnection) -> str | None:
    """On a database without principals, create a human admin and return its API key; else None.

    A transaction-scoped lock makes two processes starting on one database bootstrap once.
    """
    await conn.execute(text("SELECT pg_advisory_xact_lock(hashtext('loregate-bootstrap'))"))
    if await count_principals(conn) > 0:
        return None
    principal = await create_principal(
        conn, name="bootstrap-admin", actor_type=ActorType.HUMAN, org="default", project=None, is_admin=True
    )
    return await create_api_key(conn, principal.id)
