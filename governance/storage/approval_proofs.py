"""What an approval token binds, read from the database, and the secret it is signed under.

A token (governance/approval.py) names the digest of what its holder may decide: a promotion's latest
plan (every item's decision, target and candidate, in plan order) or a change request's content. The
gateway computes the digest when it mints the token and the approver check again when the token comes
back: a plan or request that changed in between no longer matches.

The secret is `LOREGATE_APPROVAL_SECRET`, or 32 random bytes kept in `<data dir>/approval-secret`
(created 0600 on first use, atomically, so a gateway and a worker starting together read one secret).
"""

from __future__ import annotations

import os
import secrets
import uuid
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from governance.approval import digest_of
from governance.config import Settings
from governance.errors import NotFound
from governance.storage.plans import latest_plan, promotion_candidates, promotion_plan_items
from governance.storage.tables import change_requests

__all__ = ["SECRET_FILE", "approval_secret", "plan_digest", "change_request_digest"]

SECRET_FILE = "approval-secret"
_SECRET_BYTES = 32
_P = promotion_plan_items.c
_C = promotion_candidates.c


async def plan_digest(conn: AsyncConnection, workflow_id: str) -> str | None:
    """The digest of a promotion's newest complete plan, or None while it has none."""
    header = await latest_plan(conn, workflow_id)
    if header is None or header.plan_total is None:
        return None
    rows = await conn.execute(
        select(
            _P.idx,
            _P.decision,
            _P.target_id,
            _P.content_hash,
            _C.memory_type,
            _C.title,
            _C.canonical_key,
        )
        .select_from(
            promotion_plan_items.join(
                promotion_candidates,
                (_C.workflow_id == _P.workflow_id) & (_C.run_id == _P.run_id) & (_C.idx == _P.candidate_idx),
            )
        )
        .where((_P.workflow_id == header.workflow_id) & (_P.run_id == header.run_id))
        .order_by(_P.idx)
    )
    return digest_of([header.run_id, header.plan_total, *(list(r) for r in rows)])


async def change_request_digest(conn: AsyncConnection, request_id: str) -> str:
    """The digest of a change request's content (NotFound for an unknown id)."""
    c = change_requests.c
    try:
        as_uuid = uuid.UUID(request_id)
    except ValueError:
        raise NotFound(f"change request {request_id!r} does not exist") from None
    row = (
        await conn.execute(
            select(
                c.id,
                c.memory_id,
                c.operation,
                c.scope,
                c.org,
                c.project,
                c.title,
                c.content,
                c.canonical_key,
                c.reason,
                c.valid_from_commit,
                c.target_scope,
                c.target_scope_key,
            ).where(c.id == as_uuid)
        )
    ).first()
    if row is None:
        raise NotFound(f"change request {request_id!r} does not exist")
    return digest_of([str(row.id), str(row.memory_id), *row[2:]])


def approval_secret(settings: Settings) -> bytes:
    """The key approval tokens are signed under: the setting, else the data dir's file (made once)."""
    if settings.approval_secret is not None:
        return settings.approval_secret.get_secret_value().encode("utf-8")
    path = Path(settings.data_dir) / SECRET_FILE
    try:
        return path.read_bytes()
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    fresh = path.with_name(f".{SECRET_FILE}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, secrets.token_bytes(_SECRET_BYTES))
    finally:
        os.close(fd)
    try:
        os.link(fresh, path)  # fails if another process made it first: theirs counts
    except FileExistsError:
        pass
    finally:
        fresh.unlink()
    return path.read_bytes()
