"""Reflections: pending episodes, their claims, the evidence reflection reads, and the links it writes.

An episode is *pending* while no reflection has claimed it (`reflection_episodes`, keyed by the episode, so
each episode is distilled once however reflections race). Episodes of reflection tasks themselves never
count: a reflection must not feed on its own summary. What counts is a project's active episodes (task,
worktree and project scope: org-scope memories have no project).

Once a reflection's insights are published, governance/operations/reflection.py's `link_distilled` writes
`memory_derivations` (insight → each episode it was distilled from) and one DISTILLED event per episode, in
one transaction: an episode that is a source of an active insight is *distilled*, and the retention rules
may take it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from governance.identity import hash_api_key, new_api_key, tenant_domain
from governance.storage.identity import grant_role, notify_policy_change

__all__ = [
    "PendingScope",
    "ReflectionRow",
    "EpisodeRow",
    "InsightLink",
    "reflector_id",
    "ensure_reflector",
    "org_known",
    "pending_scope",
    "due_scopes",
    "claim_episodes",
    "claimed_episode_ids",
    "get_reflection",
    "update_reflection",
    "episode_window",
    "entries_by_id",
    "insight_links",
    "existing_memory_ids",
    "list_reflections",
]

# an episode counts while active: not superseded, retired or expired
_ACTIVE = "m.deprecated_at IS NULL AND (m.expires_at IS NULL OR m.expires_at > now())"
_NOT_REFLECTION = (
    "NOT EXISTS (SELECT 1 FROM reflections r "
    "WHERE r.task_id IS NOT NULL AND r.task_id = ANY(m.source_task_ids))"
)
_PENDING = "NOT EXISTS (SELECT 1 FROM reflection_episodes c WHERE c.episode_id = m.id)"


@dataclass(frozen=True)
class PendingScope:
    """A project's episodes nobody has reflected on yet."""

    org: str
    project: str
    episodes: int
    importance: float


@dataclass(frozen=True)
class ReflectionRow:
    """One reflection as recorded."""

    id: str
    org: str
    project: str
    trigger: str
    requested_by: str | None
    workflow_id: str
    task_id: str | None
    state: str
    episode_count: int
    insight_count: int
    engine: str | None
    created_at: datetime
    finished_at: datetime | None


@dataclass(frozen=True)
class EpisodeRow:
    """A published episode with what reflection reads of it."""

    id: str
    task_id: str
    title: str
    success: bool
    importance: float
    source_entry_ids: list[int]
    embedding: list[float] | None


@dataclass(frozen=True)
class InsightLink:
    """A published insight of a reflection task and the episodes its staging entry names."""

    memory_id: str
    episode_ids: list[str]


def reflector_id(org: str) -> str:
    """The system principal that asks for an org's reflections' promotions (stable per org)."""
    return "system-reflect-" + hashlib.sha256(org.encode("utf-8")).hexdigest()[:12]


async def org_known(conn: AsyncConnection, org: str) -> bool:
    """Whether `org` exists: a principal other than its reflector, or a memory, belongs to it."""
    row = (
        await conn.execute(
            text(
                "SELECT 1 WHERE EXISTS (SELECT 1 FROM principals WHERE org = :org AND id <> :reflector) "
                "OR EXISTS (SELECT 1 FROM memories WHERE org = :org)"
            ),
            {"org": org, "reflector": reflector_id(org)},
        )
    ).first()
    return row is not None


async def ensure_reflector(conn: AsyncConnection, org: str) -> str | None:
    """The org's reflector principal, created (org-wide system grant, one key nobody holds) on first use.

    Returns its id while it is enabled, None once an operator disabled it (`loregate principals disable`
    revokes its key): a disabled reflector is never re-enabled here, so disabling it stops reflections'
    promotions at the gate.
    """
    principal_id = reflector_id(org)
    created = (
        await conn.execute(
            text(
                "INSERT INTO principals (id, name, actor_type, org, project, is_admin) "
                "VALUES (:id, :name, 'system', :org, NULL, false) ON CONFLICT (id) DO NOTHING RETURNING id"
            ),
            {"id": principal_id, "name": f"reflection of {org}"[:200], "org": org},
        )
    ).first()
    if created is not None:
        key, key_id = new_api_key()
        await conn.execute(
            text("INSERT INTO api_keys (id, principal_id, key_hash) VALUES (:id, :principal, :hash)"),
            {"id": key_id, "principal": principal_id, "hash": hash_api_key(key)},
        )
        await grant_role(conn, principal_id, "system", tenant_domain(org, None))
        await notify_policy_change(conn)
        return principal_id
    enabled = (
        await conn.execute(
            text("SELECT 1 FROM api_keys WHERE principal_id = :id AND revoked_at IS NULL LIMIT 1"),
            {"id": principal_id},
        )
    ).first()
    return principal_id if enabled is not None else None


async def pending_scope(conn: AsyncConnection, org: str, project: str) -> PendingScope:
    """How many of the project's active episodes are pending, and their summed importance."""
    row = (
        await conn.execute(
            text(
                f"""
                SELECT count(*) AS n, COALESCE(sum(m.importance), 0) AS importance FROM memories m
                WHERE m.memory_type = 'episode' AND m.org = :org AND m.project = :project
                  AND {_ACTIVE} AND {_PENDING} AND {_NOT_REFLECTION}
                """
            ),
            {"org": org, "project": project},
        )
    ).one()
    return PendingScope(org, project, int(row.n), float(row.importance))


async def due_scopes(
    conn: AsyncConnection, *, min_episodes: int, orgs: Sequence[str] | None = None, limit: int = 500
) -> list[PendingScope]:
    """Projects (of `orgs`, or every org) with at least `min_episodes` pending episodes, the most pending
    importance first."""
    rows = await conn.execute(
        text(
            f"""
            SELECT m.org, m.project, count(*) AS n, sum(m.importance) AS importance FROM memories m
            WHERE m.memory_type = 'episode' AND m.project IS NOT NULL
              AND (CAST(:orgs AS text[]) IS NULL OR m.org = ANY(CAST(:orgs AS text[])))
              AND {_ACTIVE} AND {_PENDING} AND {_NOT_REFLECTION}
            GROUP BY m.org, m.project HAVING count(*) >= :min
            ORDER BY sum(m.importance) DESC, m.org, m.project LIMIT :limit
            """
        ),
        {"min": min_episodes, "limit": limit, "orgs": list(orgs) if orgs is not None else None},
    )
    return [PendingScope(r.org, r.project, int(r.n), float(r.importance)) for r in rows]


def _reflection(row: Any) -> ReflectionRow:
    return ReflectionRow(
        id=row.id,
        org=row.org,
        project=row.project,
        trigger=row.trigger,
        requested_by=row.requested_by,
        workflow_id=row.workflow_id,
        task_id=row.task_id,
        state=row.state,
        episode_count=row.episode_count,
        insight_count=row.insight_count,
        engine=row.engine,
        created_at=row.created_at,
        finished_at=row.finished_at,
    )


async def claim_episodes(
    conn: AsyncConnection,
    *,
    reflection_id: str,
    workflow_id: str,
    org: str,
    project: str,
    trigger: str,
    requested_by: str | None,
    limit: int,
) -> list[str]:
    """Record the reflection and claim the project's pending episodes for it (oldest first, at most
    `limit`); a retry returns what the first attempt claimed."""
    created = (
        await conn.execute(
            text(
                "INSERT INTO reflections (id, org, project, trigger, requested_by, workflow_id) "
                "VALUES (:id, :org, :project, :trigger, :by, :wf) ON CONFLICT (id) DO NOTHING RETURNING id"
            ),
            {
                "id": reflection_id,
                "org": org,
                "project": project,
                "trigger": trigger,
                "by": requested_by,
                "wf": workflow_id,
            },
        )
    ).first()
    if created is not None:
        await conn.execute(
            text(
                f"""
                INSERT INTO reflection_episodes (episode_id, reflection_id)
                SELECT m.id, :id FROM memories m
                WHERE m.memory_type = 'episode' AND m.org = :org AND m.project = :project
                  AND {_ACTIVE} AND {_PENDING} AND {_NOT_REFLECTION}
                ORDER BY m.created_at, m.id LIMIT :limit
                ON CONFLICT DO NOTHING
                """
            ),
            {"id": reflection_id, "org": org, "project": project, "limit": limit},
        )
    ids = await claimed_episode_ids(conn, reflection_id)
    await conn.execute(
        text("UPDATE reflections SET episode_count = :n WHERE id = :id"), {"n": len(ids), "id": reflection_id}
    )
    return ids


async def claimed_episode_ids(conn: AsyncConnection, reflection_id: str) -> list[str]:
    """The episodes the reflection claimed, oldest first."""
    rows = await conn.execute(
        text(
            "SELECT c.episode_id::text AS id FROM reflection_episodes c "
            "JOIN memories m ON m.id = c.episode_id WHERE c.reflection_id = :id ORDER BY m.created_at, m.id"
        ),
        {"id": reflection_id},
    )
    return [r.id for r in rows]


async def get_reflection(conn: AsyncConnection, reflection_id: str) -> ReflectionRow | None:
    """The reflection, or None."""
    row = (
        await conn.execute(text("SELECT * FROM reflections WHERE id = :id"), {"id": reflection_id})
    ).first()
    return _reflection(row) if row is not None else None


async def update_reflection(
    conn: AsyncConnection,
    reflection_id: str,
    *,
    state: str,
    task_id: str | None = None,
    insight_count: int | None = None,
    engine: str | None = None,
    finished: bool = False,
) -> None:
    """Move the reflection on (its task, insight count and engine are kept when not given)."""
    await conn.execute(
        text(
            """
            UPDATE reflections SET state = :state, task_id = COALESCE(:task, task_id),
                   insight_count = COALESCE(:insights, insight_count), engine = COALESCE(:engine, engine),
                   finished_at = CASE WHEN :finished THEN COALESCE(finished_at, now()) ELSE finished_at END
            WHERE id = :id
            """
        ),
        {
            "state": state,
            "task": task_id,
            "insights": insight_count,
            "engine": engine,
            "finished": finished,
            "id": reflection_id,
        },
    )


async def episode_window(conn: AsyncConnection, org: str, project: str, *, limit: int) -> list[EpisodeRow]:
    """The project's newest active episodes (claimed or not), at most `limit`, returned oldest first."""
    rows = await conn.execute(
        text(
            f"""
            SELECT * FROM (
                SELECT m.id::text AS id, m.source_task_ids[1] AS task_id, m.title,
                       COALESCE(m.success, false) AS success, m.importance, m.source_entry_ids,
                       m.embedding::text AS embedding, m.created_at
                FROM memories m
                WHERE m.memory_type = 'episode' AND m.org = :org AND m.project = :project
                  AND {_ACTIVE} AND {_NOT_REFLECTION}
                ORDER BY m.created_at DESC, m.id DESC LIMIT :limit
            ) w ORDER BY w.created_at, w.id
            """
        ),
        {"org": org, "project": project, "limit": limit},
    )
    return [
        EpisodeRow(
            id=r.id,
            task_id=r.task_id or "",
            title=r.title,
            success=bool(r.success),
            importance=float(r.importance),
            source_entry_ids=list(r.source_entry_ids or []),
            embedding=[float(x) for x in json.loads(r.embedding)] if r.embedding is not None else None,
        )
        for r in rows
    ]


async def entries_by_id(conn: AsyncConnection, ids: Sequence[int]) -> list[dict[str, Any]]:
    """Staging entries (raw: the caller redacts) by id, in task and sequence order."""
    if not ids:
        return []
    rows = await conn.execute(
        text(
            "SELECT id, task_id, seq, kind, content, payload, created_at FROM staging_entries "
            "WHERE id = ANY(CAST(:ids AS bigint[])) ORDER BY task_id, seq"
        ),
        {"ids": sorted(set(ids))},
    )
    return [dict(r._mapping) for r in rows]


async def insight_links(conn: AsyncConnection, task_id: str) -> list[InsightLink]:
    """The reflection task's published insights, each with the episodes its staging entry names."""
    rows = await conn.execute(
        text(
            """
            SELECT m.id::text AS memory_id, e.payload AS payload FROM memories m
            JOIN staging_entries e ON e.id = ANY(m.source_entry_ids) AND e.task_id = :task
            WHERE m.memory_type = 'insight' AND :task = ANY(m.source_task_ids) AND m.deprecated_at IS NULL
            ORDER BY m.id
            """
        ),
        {"task": task_id},
    )
    links: dict[str, set[str]] = {}
    for r in rows:
        payload = r.payload if isinstance(r.payload, dict) else {}
        episodes = (payload.get("reflection") or {}).get("episodes") or []
        links.setdefault(r.memory_id, set()).update(str(e) for e in episodes)
    return [InsightLink(m, sorted(e)) for m, e in sorted(links.items())]


async def existing_memory_ids(conn: AsyncConnection, ids: Iterable[str]) -> set[str]:
    """Which of these memories are still there (an episode erased meanwhile is not)."""
    rows = await conn.execute(
        text("SELECT id::text AS id FROM memories WHERE id = ANY(CAST(:ids AS uuid[]))"), {"ids": sorted(ids)}
    )
    return {r.id for r in rows}


async def list_reflections(
    conn: AsyncConnection, org: str, project: str | None, *, limit: int
) -> list[ReflectionRow]:
    """The newest reflections of a project (of every project of the org when `project` is None)."""
    rows = await conn.execute(
        text(
            "SELECT * FROM reflections WHERE org = :org "
            "AND (CAST(:project AS text) IS NULL OR project = :project) "
            "ORDER BY created_at DESC, id DESC LIMIT :limit"
        ),
        {"org": org, "project": project, "limit": limit},
    )
    return [_reflection(r) for r in rows]
