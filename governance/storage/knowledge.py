"""Statements of project knowledge: hotspots and statistics computed from published project-scope memory.

`ProjectKnowledgeWorkflow` (workflows/knowledge.py) computes a snapshot per project on a schedule and
stores it in `project_knowledge` (migration 0026); readers get the latest one with its `computed_at`.
Only active memories at project scope count: exactly what any reader of the project's scope may search,
so one snapshot serves every reader. Each project keeps its last `KEEP_SNAPSHOTS` snapshots.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

__all__ = [
    "KEEP_SNAPSHOTS",
    "projects_with_memory",
    "project_exists",
    "compute_snapshot",
    "save_snapshot",
    "latest_snapshot",
    "erase_snapshots",
]

KEEP_SNAPSHOTS = 10

# an active episode published at the project's scope
_EPISODES = (
    "SELECT id, success FROM memories WHERE memory_type = 'episode' AND scope = 'project' "
    "AND org = :o AND project = :p AND deprecated_at IS NULL"
)


async def projects_with_memory(
    conn: AsyncConnection, orgs: Sequence[str] | None = None
) -> list[tuple[str, str]]:
    """(org, project) of every project with active project-scope memory (of `orgs` when given)."""
    rows = await conn.execute(
        text(
            "SELECT DISTINCT org, project FROM memories WHERE scope = 'project' AND project IS NOT NULL "
            "AND deprecated_at IS NULL "
            "AND (CAST(:orgs AS text[]) IS NULL OR org = ANY(CAST(:orgs AS text[]))) "
            "ORDER BY org, project"
        ),
        {"orgs": list(orgs) if orgs else None},
    )
    return [(r.org, r.project) for r in rows]


async def project_exists(conn: AsyncConnection, *, org: str, project: str) -> bool:
    """Whether the org has a task or a memory in the project."""
    row = await conn.execute(
        text(
            "SELECT EXISTS (SELECT 1 FROM tasks WHERE org = :o AND project = :p) "
            "OR EXISTS (SELECT 1 FROM memories WHERE org = :o AND project = :p)"
        ),
        {"o": org, "p": project},
    )
    return bool(row.scalar_one())


async def compute_snapshot(conn: AsyncConnection, *, org: str, project: str, limit: int) -> dict[str, Any]:
    """The project's hotspots and statistics now (the JSON `ProjectKnowledgePublic` reads, less its
    `computed_at`): tasks, episodes and successes, task types, hotspots (files by failed episodes, then
    errors), churn (files by lines changed), most-touched files, common error types, bug patterns."""
    params = {"o": org, "p": project, "n": limit}
    counts = (
        await conn.execute(
            text(
                "SELECT (SELECT count(*) FROM tasks WHERE org = :o AND project = :p) AS tasks, "
                "count(*) AS episodes, count(*) FILTER (WHERE e.success) AS succeeded "
                f"FROM ({_EPISODES}) e"
            ),
            params,
        )
    ).one()
    types = await conn.execute(
        text(
            "SELECT d.task_type, count(*) AS episodes, count(*) FILTER (WHERE e.success) AS succeeded "
            f"FROM ({_EPISODES}) e JOIN episode_details d ON d.memory_id = e.id "
            "GROUP BY d.task_type ORDER BY episodes DESC, d.task_type"
        ),
        params,
    )
    files_sql = (
        "SELECT f.path, count(*) AS episodes, count(*) FILTER (WHERE e.success IS FALSE) AS failed_episodes, "
        "sum(f.lines_added + f.lines_removed) AS lines_changed, "
        "coalesce(sum((SELECT sum(x.occurrences) FROM episode_error_types x WHERE x.memory_id = e.id)), 0) "
        f"AS errors FROM ({_EPISODES}) e JOIN episode_files f ON f.memory_id = e.id GROUP BY f.path "
    )
    hot = await conn.execute(
        text(
            f"SELECT * FROM ({files_sql}) h WHERE failed_episodes > 0 OR errors > 0 "
            "ORDER BY failed_episodes DESC, errors DESC, episodes DESC, path LIMIT :n"
        ),
        params,
    )
    churn = await conn.execute(
        text(
            f"SELECT * FROM ({files_sql}) h WHERE lines_changed > 0 "
            "ORDER BY lines_changed DESC, path LIMIT :n"
        ),
        params,
    )
    touched = await conn.execute(
        text(f"SELECT * FROM ({files_sql}) h ORDER BY episodes DESC, lines_changed DESC, path LIMIT :n"),
        params,
    )
    errors = await conn.execute(
        text(
            "SELECT x.error_type, sum(x.occurrences) AS total "
            f"FROM ({_EPISODES}) e JOIN episode_error_types x ON x.memory_id = e.id "
            "GROUP BY x.error_type ORDER BY total DESC, x.error_type LIMIT :n"
        ),
        params,
    )
    bugs = await conn.execute(
        text(
            "SELECT m.citation, m.title, b.occurrences FROM bug_patterns b "
            "JOIN memories m ON m.id = b.memory_id "
            "WHERE m.scope = 'project' AND m.org = :o AND m.project = :p AND m.deprecated_at IS NULL "
            "ORDER BY b.occurrences DESC, b.last_seen DESC LIMIT :n"
        ),
        params,
    )

    def _file(r: Any) -> dict[str, Any]:
        return {"path": r.path, "episodes": int(r.episodes), "lines_changed": int(r.lines_changed or 0)}

    return {
        "org": org,
        "project": project,
        "tasks": int(counts.tasks),
        "episodes": int(counts.episodes),
        "succeeded": int(counts.succeeded),
        "success_rate": round(counts.succeeded / counts.episodes, 4) if counts.episodes else None,
        "task_types": [
            {"task_type": r.task_type, "episodes": int(r.episodes), "succeeded": int(r.succeeded)}
            for r in types
        ],
        "hotspots": [
            {
                "path": r.path,
                "failed_episodes": int(r.failed_episodes),
                "episodes": int(r.episodes),
                "errors": int(r.errors),
                "lines_changed": int(r.lines_changed or 0),
            }
            for r in hot
        ],
        "churn": [_file(r) for r in churn],
        "most_touched": [_file(r) for r in touched],
        "common_errors": [{"error_type": r.error_type, "count": int(r.total)} for r in errors],
        "bug_patterns": [
            {"citation": r.citation, "title": r.title, "occurrences": int(r.occurrences)} for r in bugs
        ],
    }


async def save_snapshot(conn: AsyncConnection, *, org: str, project: str, snapshot: dict[str, Any]) -> int:
    """Store a snapshot (its id), keeping the project's last KEEP_SNAPSHOTS."""
    new_id = (
        await conn.execute(
            text(
                "INSERT INTO project_knowledge (org, project, snapshot) VALUES (:o, :p, CAST(:s AS jsonb)) "
                "RETURNING id"
            ),
            {"o": org, "p": project, "s": json.dumps(snapshot)},
        )
    ).scalar_one()
    await conn.execute(
        text(
            "DELETE FROM project_knowledge WHERE org = :o AND project = :p AND id NOT IN "
            "(SELECT id FROM project_knowledge WHERE org = :o AND project = :p "
            "ORDER BY computed_at DESC, id DESC LIMIT :k)"
        ),
        {"o": org, "p": project, "k": KEEP_SNAPSHOTS},
    )
    return int(new_id)


async def latest_snapshot(
    conn: AsyncConnection, *, org: str, project: str
) -> tuple[datetime, dict[str, Any]] | None:
    """The project's latest snapshot with when it was computed, or None."""
    row = (
        await conn.execute(
            text(
                "SELECT computed_at, snapshot FROM project_knowledge WHERE org = :o AND project = :p "
                "ORDER BY computed_at DESC, id DESC LIMIT 1"
            ),
            {"o": org, "p": project},
        )
    ).first()
    return None if row is None else (row.computed_at, dict(row.snapshot))


async def erase_snapshots(
    conn: AsyncConnection,
    *,
    task_id: str | None,
    org: str | None,
    project: str | None,
    fragments: Sequence[str],
) -> int:
    """Delete the snapshots an erasure reaches: the erased task's project, a subject erasure's tenant (its
    project, or the whole org when `project` is None), and any quoting one of `fragments` (texts and
    citations as they appear inside JSON). The next scheduled run computes them again without what went."""
    result = await conn.execute(
        text(
            "DELETE FROM project_knowledge k WHERE "
            "EXISTS (SELECT 1 FROM tasks t WHERE t.id = :t AND t.org = k.org AND t.project = k.project) "
            "OR (k.org = :o AND (CAST(:p AS text) IS NULL OR k.project = :p)) "
            "OR EXISTS (SELECT 1 FROM unnest(CAST(:f AS text[])) f "
            "WHERE f <> '' AND strpos(CAST(k.snapshot AS text), f) > 0)"
        ),
        {"t": task_id, "o": org, "p": project, "f": list(fragments)},
    )
    return max(result.rowcount or 0, 0)
