"""Statements of a task's working memory: hypotheses, files and symbols, and what staging already holds.

The recent buffers (errors, decisions, tool calls) and the statistics are read from `staging_entries`
itself, newest first with a bound, so they can never disagree with the log. Files and symbols are folded
from the entries into `task_code_locations` by governance/operations/working_memory.py, which advances
`working_memory_state.indexed_seq` in the same transaction. Erasure calls `erase_working_memory` in its own
transaction (governance/storage/erasure.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from governance.storage.episodes import links_match_sql
from governance.storage.tables import vector_literal

__all__ = [
    "Hypothesis",
    "LocationRow",
    "BufferedEntry",
    "EntryForIndex",
    "WorkingStats",
    "lock_state",
    "entries_after",
    "add_touches",
    "set_indexed_seq",
    "track",
    "upsert_hypothesis",
    "set_decision_entry",
    "hypotheses_of",
    "locations_of",
    "recent_entries",
    "working_stats",
    "entry_ids_of_task",
    "erase_working_memory",
    "tasks_touching",
    "tasks_behind",
    "location_candidates",
    "FileStats",
    "project_counts",
    "file_stats",
    "common_errors",
    "latest_entries",
    "file_rows",
]


@dataclass(frozen=True)
class Hypothesis:
    """A hypothesis as stored."""

    id: int
    text: str
    confidence: float
    evidence_ids: list[int]
    decision_entry_id: int | None
    created_by: str
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class LocationRow:
    """A file or symbol of a task."""

    kind: str
    value: str
    tracked: bool
    touches: int
    error_touches: int
    first_seq: int | None
    last_seq: int | None


@dataclass(frozen=True)
class BufferedEntry:
    """A staging entry as the recent buffers show it."""

    id: int
    seq: int
    kind: str
    content: str
    payload: Any
    created_at: datetime


@dataclass(frozen=True)
class EntryForIndex:
    """What folding an entry into the task's locations needs."""

    seq: int
    kind: str
    content: str
    payload: Any


@dataclass(frozen=True)
class WorkingStats:
    """Counts over a task's staging and working memory."""

    entries: int
    by_kind: dict[str, int]
    tool_calls: int
    first_at: datetime | None
    last_at: datetime | None
    files: int
    symbols: int
    hypotheses: int
    decided_hypotheses: int


async def lock_state(conn: AsyncConnection, task_id: str) -> tuple[int, int]:
    """(folded so far, where to fold from): the task's indexed sequence number, and the same raised past what
    the staging archive took away; its state row locked until the transaction ends."""
    await conn.execute(
        text("INSERT INTO working_memory_state (task_id) VALUES (:t) ON CONFLICT (task_id) DO NOTHING"),
        {"t": task_id},
    )
    row = await conn.execute(
        text(
            "SELECT s.indexed_seq, GREATEST(s.indexed_seq, t.archived_next_seq - 1) AS start "
            "FROM working_memory_state s JOIN tasks t ON t.id = s.task_id "
            "WHERE s.task_id = :t FOR UPDATE OF s"
        ),
        {"t": task_id},
    )
    found = row.one()
    return int(found.indexed_seq), int(found.start)


async def entries_after(
    conn: AsyncConnection, task_id: str, after_seq: int, limit: int
) -> list[EntryForIndex]:
    """The task's entries after `after_seq`, in order, at most `limit`."""
    rows = await conn.execute(
        text(
            "SELECT seq, kind, content, payload FROM staging_entries "
            "WHERE task_id = :t AND seq > :s ORDER BY seq LIMIT :n"
        ),
        {"t": task_id, "s": after_seq, "n": limit},
    )
    return [EntryForIndex(r.seq, r.kind, r.content, r.payload) for r in rows]


async def add_touches(
    conn: AsyncConnection, task_id: str, touches: Sequence[tuple[str, str, int, int, int, int]]
) -> None:
    """Fold (kind, value, touches, error touches, first seq, last seq) into the task's locations."""
    if not touches:
        return
    touches = sorted(touches)  # rows in one order for every writer, as `track` does
    await conn.execute(
        text(
            "INSERT INTO task_code_locations "
            "(task_id, kind, value, touches, error_touches, first_seq, last_seq) "
            "SELECT :t, k, v, n, e, f, l FROM unnest(CAST(:k AS text[]), CAST(:v AS text[]), "
            "CAST(:n AS int[]), "
            "CAST(:e AS int[]), CAST(:f AS bigint[]), CAST(:l AS bigint[])) AS x(k, v, n, e, f, l) "
            "ON CONFLICT (task_id, kind, value) DO UPDATE SET "
            "touches = task_code_locations.touches + EXCLUDED.touches, "
            "error_touches = task_code_locations.error_touches + EXCLUDED.error_touches, "
            "first_seq = LEAST(task_code_locations.first_seq, EXCLUDED.first_seq), "
            "last_seq = GREATEST(task_code_locations.last_seq, EXCLUDED.last_seq), updated_at = now()"
        ),
        {
            "t": task_id,
            "k": [t[0] for t in touches],
            "v": [t[1] for t in touches],
            "n": [t[2] for t in touches],
            "e": [t[3] for t in touches],
            "f": [t[4] for t in touches],
            "l": [t[5] for t in touches],
        },
    )


async def set_indexed_seq(conn: AsyncConnection, task_id: str, seq: int) -> None:
    """Record that entries up to `seq` are folded into the task's locations."""
    await conn.execute(
        text("UPDATE working_memory_state SET indexed_seq = :s, updated_at = now() WHERE task_id = :t"),
        {"t": task_id, "s": seq},
    )


async def track(conn: AsyncConnection, task_id: str, kind: str, values: Sequence[str]) -> None:
    """Mark files or symbols as tracked by the agent (created untouched where new)."""
    if not values:
        return
    await conn.execute(
        text(
            "INSERT INTO task_code_locations (task_id, kind, value, tracked) "
            "SELECT :t, :k, v, true FROM unnest(CAST(:v AS text[])) AS v "
            "ON CONFLICT (task_id, kind, value) DO UPDATE SET tracked = true, updated_at = now()"
        ),
        # each row once, in one order for every writer (a fold and a track never wait on each other crosswise)
        {"t": task_id, "k": kind, "v": sorted(set(values))},
    )


def _hypothesis(row: Any) -> Hypothesis:
    return Hypothesis(
        id=row.id,
        text=row.text,
        confidence=row.confidence,
        evidence_ids=list(row.evidence_ids),
        decision_entry_id=row.decision_entry_id,
        created_by=row.created_by,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


_HYPOTHESIS_COLUMNS = (
    "id, text, confidence, evidence_ids, decision_entry_id, created_by, created_at, updated_at"
)


async def upsert_hypothesis(
    conn: AsyncConnection,
    task_id: str,
    *,
    text_: str,
    text_sha256: str,
    confidence: float,
    evidence_ids: Sequence[int],
    actor_id: str,
) -> Hypothesis:
    """Add a hypothesis, or set the confidence of the same text and add evidence to it (one statement)."""
    row = await conn.execute(
        text(
            "INSERT INTO working_hypotheses "
            "(task_id, text, text_sha256, confidence, evidence_ids, created_by) "
            "VALUES (:t, :x, :h, :c, CAST(:e AS bigint[]), :a) "
            "ON CONFLICT (task_id, text_sha256) DO UPDATE SET confidence = EXCLUDED.confidence, "
            "evidence_ids = ARRAY(SELECT DISTINCT "
            "unnest(working_hypotheses.evidence_ids || EXCLUDED.evidence_ids) "
            "ORDER BY 1), updated_at = now() "
            f"RETURNING {_HYPOTHESIS_COLUMNS}"
        ),
        {"t": task_id, "x": text_, "h": text_sha256, "c": confidence, "e": list(evidence_ids), "a": actor_id},
    )
    return _hypothesis(row.one())


async def set_decision_entry(conn: AsyncConnection, hypothesis_id: int, entry_id: int) -> None:
    """Record the decision entry a hypothesis became (kept if one was recorded already)."""
    await conn.execute(
        text(
            "UPDATE working_hypotheses SET decision_entry_id = COALESCE(decision_entry_id, :e) WHERE id = :i"
        ),
        {"i": hypothesis_id, "e": entry_id},
    )


async def hypotheses_of(conn: AsyncConnection, task_id: str, limit: int) -> list[Hypothesis]:
    """The task's hypotheses, most confident first, then newest."""
    rows = await conn.execute(
        text(
            f"SELECT {_HYPOTHESIS_COLUMNS} FROM working_hypotheses WHERE task_id = :t "
            "ORDER BY confidence DESC, updated_at DESC, id DESC LIMIT :n"
        ),
        {"t": task_id, "n": limit},
    )
    return [_hypothesis(r) for r in rows]


async def locations_of(conn: AsyncConnection, task_id: str, kind: str, limit: int) -> list[LocationRow]:
    """The task's files or symbols: tracked first, then most recently touched."""
    rows = await conn.execute(
        text(
            "SELECT kind, value, tracked, touches, error_touches, first_seq, last_seq "
            "FROM task_code_locations "
            "WHERE task_id = :t AND kind = :k "
            "ORDER BY tracked DESC, last_seq DESC NULLS LAST, value LIMIT :n"
        ),
        {"t": task_id, "k": kind, "n": limit},
    )
    return [LocationRow(*r) for r in rows]


_TOOL_CALL = "(kind = 'tool_output' OR (json_typeof(payload) = 'object' AND payload->>'tool' IS NOT NULL))"


async def recent_entries(
    conn: AsyncConnection, task_id: str, *, kinds: Sequence[str] = (), tool_calls: bool = False, limit: int
) -> list[BufferedEntry]:
    """The task's latest entries of `kinds` (or its tool calls), newest first, at most `limit`."""
    where = _TOOL_CALL if tool_calls else "kind = ANY(CAST(:k AS text[]))"
    rows = await conn.execute(
        text(
            "SELECT id, seq, kind, content, payload, created_at FROM staging_entries "
            f"WHERE task_id = :t AND {where} ORDER BY seq DESC LIMIT :n"
        ),
        {"t": task_id, "k": list(kinds), "n": limit},
    )
    return [BufferedEntry(*r) for r in rows]


async def working_stats(conn: AsyncConnection, task_id: str) -> WorkingStats:
    """Counts over the task's staging, locations and hypotheses."""
    kinds = await conn.execute(
        text(
            "SELECT kind, count(*) AS n, min(created_at) AS first_at, max(created_at) AS last_at, "
            f"count(*) FILTER (WHERE {_TOOL_CALL}) AS tools "
            "FROM staging_entries WHERE task_id = :t GROUP BY kind"
        ),
        {"t": task_id},
    )
    rows = kinds.all()
    other = await conn.execute(
        text(
            "SELECT (SELECT count(*) FROM task_code_locations WHERE task_id = :t AND kind = 'file') "
            "AS files, "
            "(SELECT count(*) FROM task_code_locations WHERE task_id = :t AND kind = 'symbol') AS symbols, "
            "(SELECT count(*) FROM working_hypotheses WHERE task_id = :t) AS hypotheses, "
            "(SELECT count(*) FROM working_hypotheses WHERE task_id = :t AND decision_entry_id IS NOT NULL) "
            "AS decided"
        ),
        {"t": task_id},
    )
    o = other.one()
    return WorkingStats(
        entries=sum(r.n for r in rows),
        by_kind={r.kind: r.n for r in sorted(rows, key=lambda r: str(r.kind))},
        tool_calls=sum(r.tools for r in rows),
        first_at=min((r.first_at for r in rows), default=None),
        last_at=max((r.last_at for r in rows), default=None),
        files=o.files,
        symbols=o.symbols,
        hypotheses=o.hypotheses,
        decided_hypotheses=o.decided,
    )


async def entry_ids_of_task(conn: AsyncConnection, task_id: str, ids: Sequence[int]) -> dict[int, int]:
    """Which of `ids` are staging entries of the task, each with its sequence number."""
    if not ids:
        return {}
    rows = await conn.execute(
        text("SELECT id, seq FROM staging_entries WHERE task_id = :t AND id = ANY(CAST(:i AS bigint[]))"),
        {"t": task_id, "i": list(ids)},
    )
    return {r.id: r.seq for r in rows}


async def erase_working_memory(
    conn: AsyncConnection,
    *,
    task_id: str | None,
    subject: str | None,
    org: str | None,
    project: str | None,
    entry_ids: Sequence[int],
) -> dict[str, int]:
    """Erase a task's working memory, or what of a tenant's holds `subject`; erased entries stop being
    evidence."""
    counts: dict[str, int] = {}

    async def run(name: str, sql: str, params: dict[str, Any]) -> None:
        result = await conn.execute(text(sql), params)
        counts[name] = counts.get(name, 0) + max(result.rowcount or 0, 0)

    if task_id is not None:
        for table in ("working_hypotheses", "task_code_locations", "working_memory_state"):
            await run(table, f"DELETE FROM {table} WHERE task_id = :t", {"t": task_id})
    if subject is not None:
        in_tenant = "SELECT id FROM tasks WHERE org = :o AND (CAST(:p AS text) IS NULL OR project = :p)"
        tenant = {"s": subject, "o": org, "p": project}
        await run(
            "working_hypotheses",
            f"DELETE FROM working_hypotheses WHERE strpos(text, :s) > 0 AND task_id IN ({in_tenant})",
            tenant,
        )
        await run(
            "task_code_locations",
            f"DELETE FROM task_code_locations WHERE strpos(value, :s) > 0 AND task_id IN ({in_tenant})",
            tenant,
        )
    if entry_ids:
        await run(
            "working_hypotheses_relinked",
            "UPDATE working_hypotheses SET evidence_ids = ARRAY(SELECT e FROM unnest(evidence_ids) e "
            "WHERE NOT (e = ANY(CAST(:e AS bigint[])))), "
            "decision_entry_id = CASE WHEN decision_entry_id = ANY(CAST(:e AS bigint[])) THEN NULL "
            "ELSE decision_entry_id END "
            "WHERE evidence_ids && CAST(:e AS bigint[]) OR decision_entry_id = ANY(CAST(:e AS bigint[]))",
            {"e": list(entry_ids)},
        )
    return counts


def _suffix_clause(param: str) -> str:
    """A location whose value is the path, ends with `/` + it, or which ends with `/` + the value."""
    return (
        f"l.value = :{param} OR l.value LIKE '%/' || :{param}like ESCAPE '\\' "
        f"OR :{param} LIKE '%/' || replace(replace(replace(l.value, '\\', '\\\\'), '%', '\\%'), "
        "'_', '\\_') ESCAPE '\\'"
    )


def _like_escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _location_params(files: Sequence[str], symbols: Sequence[str]) -> tuple[str, dict[str, Any]]:
    clauses: list[str] = []
    params: dict[str, Any] = {}
    for i, path in enumerate(files):
        name = f"f{i}"
        params[name] = path
        params[f"{name}like"] = _like_escape(path)
        clauses.append(f"(l.kind = 'file' AND ({_suffix_clause(name)}))")
    if symbols:
        params["symbols"] = list(symbols)
        params["symbols_like"] = [_like_escape(x) for x in symbols]
        # a symbol matches itself or a method of that name (`send` meets `Client.send`); both sides escaped,
        # so `%`, `_` and `\` in a name are themselves
        clauses.append(
            "(l.kind = 'symbol' AND (l.value = ANY(CAST(:symbols AS text[])) OR EXISTS (SELECT 1 FROM "
            "unnest(CAST(:symbols AS text[]), CAST(:symbols_like AS text[])) AS s(raw, esc) "
            "WHERE l.value LIKE '%.' || s.esc ESCAPE '\\' OR s.raw LIKE '%.' || "
            "replace(replace(replace(l.value, '\\', '\\\\'), '%', '\\%'), '_', '\\_') ESCAPE '\\')))"
        )
    return " OR ".join(clauses) or "false", params


async def tasks_touching(
    conn: AsyncConnection, *, org: str, project: str, files: Sequence[str], symbols: Sequence[str]
) -> dict[str, int]:
    """Tasks of a project that touched any of the files or symbols, with the number of matching touches."""
    where, params = _location_params(files, symbols)
    rows = await conn.execute(
        text(
            "SELECT l.task_id, sum(GREATEST(l.touches, 1)) AS n FROM task_code_locations l "
            "JOIN tasks t ON t.id = l.task_id "
            f"WHERE t.org = :org AND t.project = :project AND ({where}) GROUP BY l.task_id"
        ),
        {**params, "org": org, "project": project},
    )
    return {r.task_id: int(r.n) for r in rows}


async def file_rows(
    conn: AsyncConnection,
    *,
    scope_keys: Sequence[str],
    task_ids: Sequence[str],
    path: str,
    types: Sequence[str],
    limit: int,
    file: str | None = None,
) -> list[Any]:
    """Active memories of the scopes that came from one of `task_ids`, are episodes linked to `file`
    (`episode_files`), or name `path` in their text, newest first: id, citation, memory_type, scope, title,
    content, confidence, success, created_at, source_task_ids, `by_task` (found through a task),
    `by_episode` (through the episode's links), and an episode's `task_type` and `error_types`."""
    linked, link_params = links_match_sql("memories.id", [file] if file else [], [])
    rows = await conn.execute(
        text(
            "SELECT id::text AS id, citation, memory_type, scope, title, content, confidence, success, "
            "created_at, source_task_ids, stale_at IS NOT NULL AS stale, "
            f"(source_task_ids && CAST(:tasks AS text[])) AS by_task, ({linked}) AS by_episode, "
            "(SELECT d.task_type FROM episode_details d WHERE d.memory_id = memories.id) AS task_type, "
            "ARRAY(SELECT x.error_type FROM episode_error_types x WHERE x.memory_id = memories.id "
            "ORDER BY x.occurrences DESC, x.error_type) AS error_types FROM memories "
            "WHERE scope_key = ANY(CAST(:keys AS text[])) AND deprecated_at IS NULL "
            "AND (expires_at IS NULL OR expires_at > now()) AND memory_type = ANY(CAST(:types AS text[])) "
            f"AND (source_task_ids && CAST(:tasks AS text[]) OR {linked} OR strpos(content, :path) > 0 "
            "OR strpos(title, :path) > 0) "
            "ORDER BY created_at DESC, id LIMIT :n"
        ),
        {
            **link_params,
            "keys": list(scope_keys),
            "tasks": list(task_ids),
            "path": path,
            "types": list(types),
            "n": limit,
        },
    )
    return list(rows)


async def tasks_behind(conn: AsyncConnection, *, org: str, project: str, limit: int) -> list[str]:
    """Tasks of the project with staging entries not yet folded into their working memory."""
    rows = await conn.execute(
        text(
            "SELECT t.id FROM tasks t LEFT JOIN working_memory_state s ON s.task_id = t.id "
            "WHERE t.org = :o AND t.project = :p "
            "AND t.next_seq > GREATEST(COALESCE(s.indexed_seq, -1), t.archived_next_seq - 1) "
            "ORDER BY t.id LIMIT :n"
        ),
        {"o": org, "p": project, "n": limit},
    )
    return [r[0] for r in rows]


async def latest_entries(conn: AsyncConnection, task_id: str, limit: int) -> list[BufferedEntry]:
    """The task's latest entries of any kind, oldest first (at most `limit`)."""
    rows = await conn.execute(
        text(
            "SELECT * FROM (SELECT id, seq, kind, content, payload, created_at FROM staging_entries "
            "WHERE task_id = :t ORDER BY seq DESC LIMIT :n) AS e ORDER BY seq"
        ),
        {"t": task_id, "n": limit},
    )
    return [BufferedEntry(*r) for r in rows]


async def location_candidates(
    conn: AsyncConnection,
    *,
    scope_keys: Sequence[str],
    touched: dict[str, int],
    names: Sequence[str],
    limit: int,
    types: Sequence[str] | None,
    include_history: bool,
    query_vector: Sequence[float] | None = None,
    files: Sequence[str] = (),
    symbols: Sequence[str] = (),
) -> list[tuple[str, float, float | None]]:
    """(id, strength, cosine to `query_vector` or None) of visible memories from tasks that touched the
    locations (strength: their touches), episodes linked to `files` or `symbols` (`episode_files`,
    `episode_symbols`; strength 1 at least) or naming one of `names` in title or content (strength 1),
    strongest then newest first."""
    linked, link_params = links_match_sql("memories.id", files, symbols)
    history = (
        "" if include_history else "AND deprecated_at IS NULL AND (expires_at IS NULL OR expires_at > now()) "
    )
    only = "AND memory_type = ANY(CAST(:types AS text[])) " if types else ""
    rows = await conn.execute(
        text(
            "SELECT id::text AS id, "
            + (
                "1 - (embedding <=> CAST(:q AS vector)) AS cosine, "
                if query_vector is not None
                else "NULL AS cosine, "
            )
            + "GREATEST(COALESCE((SELECT sum(x.n) FROM unnest(CAST(:tasks AS text[]), "
            "CAST(:counts AS int[])) AS x(t, n) WHERE x.t = ANY(source_task_ids)), 0), 1) AS strength "
            "FROM memories WHERE scope_key = ANY(CAST(:keys AS text[])) "
            f"{history}{only}"
            f"AND (source_task_ids && CAST(:tasks AS text[]) OR {linked} OR EXISTS (SELECT 1 "
            "FROM unnest(CAST(:names AS text[])) AS n WHERE strpos(content, n) > 0 OR strpos(title, n) > 0)) "
            "ORDER BY strength DESC, created_at DESC, id LIMIT :limit"
        ),
        {
            **link_params,
            "keys": list(scope_keys),
            "tasks": list(touched),
            "counts": list(touched.values()),
            "names": list(names),
            "types": list(types or ()),
            "limit": limit,
            "q": vector_literal(query_vector),
        },
    )
    return [(r.id, float(r.strength), None if r.cosine is None else float(r.cosine)) for r in rows]


@dataclass(frozen=True)
class FileStats:
    """A file of a project: tasks that touched it, how many of those failed, errors naming it."""

    path: str
    tasks: int
    failed_tasks: int
    touches: int
    error_touches: int


async def project_counts(conn: AsyncConnection, *, org: str, project: str, scope_keys: Sequence[str]) -> Any:
    """Tasks of the project, and the visible active episodes with how many succeeded."""
    row = await conn.execute(
        text(
            "SELECT (SELECT count(*) FROM tasks WHERE org = :o AND project = :p) AS tasks, "
            "count(*) AS episodes, count(*) FILTER (WHERE success) AS succeeded, "
            "count(*) FILTER (WHERE success IS FALSE) AS failed FROM memories "
            "WHERE memory_type = 'episode' AND scope_key = ANY(CAST(:keys AS text[])) "
            "AND deprecated_at IS NULL"
        ),
        {"o": org, "p": project, "keys": list(scope_keys)},
    )
    return row.one()


async def file_stats(
    conn: AsyncConnection, *, org: str, project: str, scope_keys: Sequence[str], hot: bool, limit: int
) -> list[FileStats]:
    """The project's files by tasks that touched them (`hot`: by failed tasks, then errors naming them); a
    task failed when a visible episode of it says so."""
    order = "failed_tasks DESC, error_touches DESC, tasks DESC" if hot else "tasks DESC, touches DESC"
    rows = await conn.execute(
        text(
            "SELECT l.value AS path, count(*) AS tasks, sum(l.touches) AS touches, "
            "sum(l.error_touches) AS error_touches, count(*) FILTER (WHERE EXISTS (SELECT 1 FROM memories m "
            "WHERE m.memory_type = 'episode' AND m.success IS FALSE AND l.task_id = ANY(m.source_task_ids) "
            "AND m.scope_key = ANY(CAST(:keys AS text[])) AND m.deprecated_at IS NULL)) AS failed_tasks "
            "FROM task_code_locations l JOIN tasks t ON t.id = l.task_id "
            "WHERE t.org = :o AND t.project = :p AND l.kind = 'file' "
            f"GROUP BY l.value ORDER BY {order}, l.value LIMIT :n"
        ),
        {"o": org, "p": project, "keys": list(scope_keys), "n": limit},
    )
    return [FileStats(r.path, r.tasks, r.failed_tasks, int(r.touches), int(r.error_touches)) for r in rows]


async def common_errors(conn: AsyncConnection, *, scope_keys: Sequence[str], limit: int) -> list[Any]:
    """The visible bug patterns seen most often: citation, signature, occurrences."""
    rows = await conn.execute(
        text(
            "SELECT m.citation, b.signature, b.occurrences FROM bug_patterns b "
            "JOIN memories m ON m.id = b.memory_id "
            "WHERE m.scope_key = ANY(CAST(:keys AS text[])) AND m.deprecated_at IS NULL "
            "ORDER BY b.occurrences DESC, b.last_seen DESC LIMIT :n"
        ),
        {"keys": list(scope_keys), "n": limit},
    )
    return list(rows)
