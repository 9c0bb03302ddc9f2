"""Statements of structured episodes: `episode_details` and its link tables (migration 0026).

One row per published episode with its columns (task type, outcome, tests, line changes, tokens,
duration) and the whole structure as JSON; files, symbols, error types and tools in link tables indexed
by value. Every row goes with its memory (ON DELETE CASCADE). Written once per memory: a replayed publish
changes nothing (`ON CONFLICT DO NOTHING`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

__all__ = [
    "EpisodeRow",
    "record_episode",
    "episode_of",
    "path_suffixes",
    "file_match_sql",
    "links_match_sql",
    "episodes_quoting",
]


@dataclass(frozen=True)
class EpisodeRow:
    """An episode's structured fields as stored."""

    memory_id: str
    task_type: str
    outcome: str
    tests_framework: str | None
    tests_run: int | None
    tests_passed: int | None
    tests_failed: int | None
    lines_added: int
    lines_removed: int
    tokens: int | None
    duration_ms: int | None
    structure: dict[str, Any]
    created_at: datetime


async def record_episode(
    conn: AsyncConnection,
    *,
    memory_id: str,
    org: str,
    project: str | None,
    task_id: str | None,
    structure: Mapping[str, Any],
) -> bool:
    """Store an episode's structure (from `EpisodeStructure.to_json`) with its links; False when the
    memory has one already."""
    tests = structure.get("tests") or {}
    inserted = await conn.execute(
        text(
            "INSERT INTO episode_details (memory_id, org, project, task_id, task_type, outcome, "
            "tests_framework, tests_run, tests_passed, tests_failed, lines_added, lines_removed, tokens, "
            "duration_ms, structure) VALUES (CAST(:m AS uuid), :o, :p, :t, :tt, :out, :tf, :tr, :tp, :tfl, "
            ":la, :lr, :tok, :dur, CAST(:s AS jsonb)) ON CONFLICT (memory_id) DO NOTHING RETURNING memory_id"
        ),
        {
            "m": memory_id,
            "o": org,
            "p": project,
            "t": task_id,
            "tt": structure["task_type"],
            "out": structure["outcome"],
            "tf": tests.get("framework"),
            "tr": tests.get("run"),
            "tp": tests.get("passed"),
            "tfl": tests.get("failed"),
            "la": structure.get("lines_added") or 0,
            "lr": structure.get("lines_removed") or 0,
            "tok": structure.get("tokens"),
            "dur": structure.get("duration_ms"),
            "s": json.dumps(structure),
        },
    )
    if inserted.first() is None:
        return False
    files = structure.get("files") or []
    if files:
        await conn.execute(
            text(
                "INSERT INTO episode_files (memory_id, path, touches, lines_added, lines_removed) "
                "SELECT CAST(:m AS uuid), p, t, a, r FROM unnest(CAST(:p AS text[]), CAST(:t AS int[]), "
                "CAST(:a AS int[]), CAST(:r AS int[])) AS x(p, t, a, r) ON CONFLICT DO NOTHING"
            ),
            {
                "m": memory_id,
                "p": [f["path"] for f in files],
                "t": [f.get("touches", 0) for f in files],
                "a": [f.get("lines_added", 0) for f in files],
                "r": [f.get("lines_removed", 0) for f in files],
            },
        )
    links: list[tuple[str, str, list[str], list[int] | None]] = [
        ("episode_symbols (memory_id, symbol)", "symbol", list(structure.get("symbols") or []), None),
        (
            "episode_error_types (memory_id, error_type, occurrences)",
            "error_type",
            [e["error_type"] for e in structure.get("error_types") or []],
            [e["count"] for e in structure.get("error_types") or []],
        ),
        (
            "episode_tools (memory_id, tool, calls)",
            "tool",
            [t["tool"] for t in structure.get("tools") or []],
            [t["calls"] for t in structure.get("tools") or []],
        ),
    ]
    for target, _name, values, counts in links:
        if not values:
            continue
        if counts is None:
            sql = f"INSERT INTO {target} SELECT CAST(:m AS uuid), v FROM unnest(CAST(:v AS text[])) AS v "
        else:
            sql = (
                f"INSERT INTO {target} SELECT CAST(:m AS uuid), v, n "
                "FROM unnest(CAST(:v AS text[]), CAST(:n AS int[])) AS x(v, n) "
            )
        await conn.execute(text(sql + "ON CONFLICT DO NOTHING"), {"m": memory_id, "v": values, "n": counts})
    return True


async def episode_of(conn: AsyncConnection, memory_id: str) -> EpisodeRow | None:
    """A memory's structured episode fields, or None (not an episode, or published before they existed)."""
    row = (
        await conn.execute(
            text(
                "SELECT memory_id::text AS memory_id, task_type, outcome, tests_framework, tests_run, "
                "tests_passed, tests_failed, lines_added, lines_removed, tokens, duration_ms, structure, "
                "created_at FROM episode_details WHERE memory_id::text = :m"
            ),
            {"m": memory_id},
        )
    ).first()
    return None if row is None else EpisodeRow(**row._mapping)


def path_suffixes(path: str) -> list[str]:
    """`a/b/c.py` → `a/b/c.py`, `b/c.py`, `c.py`: the stored paths an asked path ends with."""
    parts = [p for p in path.strip("/").split("/") if p]
    return ["/".join(parts[i:]) for i in range(len(parts))]


def _like_escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def file_match_sql(memory: str, path: str, *, prefix: str = "ef") -> tuple[str, dict[str, Any]]:
    """An SQL condition "the episode `memory` (an id expression) touched `path`", with its parameters: the
    stored path is the asked one, ends with `/` + it (a prefix scan of the reversed-path index), or is one of
    its suffixes (the asked path is longer, e.g. absolute)."""
    suffixes = path_suffixes(path)
    # a bare file name stands for too many files to be a suffix match the other way round
    longer = [s for s in suffixes[1:] if "/" in s]
    condition = (
        f"EXISTS (SELECT 1 FROM episode_files {prefix} WHERE {prefix}.memory_id = {memory} AND "
        f"({prefix}.path = :{prefix}_path OR reverse({prefix}.path) LIKE :{prefix}_rev ESCAPE '\\' "
        f"OR {prefix}.path = ANY(CAST(:{prefix}_longer AS text[]))))"
    )
    return condition, {
        f"{prefix}_path": path,
        f"{prefix}_rev": _like_escape(("/" + path.lstrip("/"))[::-1]) + "%",
        f"{prefix}_longer": longer,
    }


def links_match_sql(memory: str, files: Sequence[str], symbols: Sequence[str]) -> tuple[str, dict[str, Any]]:
    """An SQL condition "the episode `memory` touched one of `files` or `symbols`" (through the link tables;
    a symbol meets itself or a method of that name), with its parameters; `false` when nothing is asked."""
    clauses: list[str] = []
    params: dict[str, Any] = {}
    for i, path in enumerate(files):
        clause, more = file_match_sql(memory, path, prefix=f"ef{i}")
        clauses.append(clause)
        params.update(more)
    if symbols:
        params["es_symbols"] = list(symbols)
        params["es_like"] = ["%." + _like_escape(x) for x in symbols]
        clauses.append(
            f"EXISTS (SELECT 1 FROM episode_symbols es WHERE es.memory_id = {memory} AND "
            "(es.symbol = ANY(CAST(:es_symbols AS text[])) OR es.symbol LIKE ANY(CAST(:es_like AS text[]))))"
        )
    return (" OR ".join(clauses) or "false"), params


async def episodes_quoting(
    conn: AsyncConnection, *, subject_json: str, org: str, project: str | None
) -> list[str]:
    """The memory ids of a tenant's episodes whose structure holds `subject_json` (a subject as it appears
    inside JSON): an erasure of the subject takes them."""
    rows = await conn.execute(
        text(
            "SELECT memory_id::text FROM episode_details WHERE org = :o "
            "AND (CAST(:p AS text) IS NULL OR project = :p) "
            "AND strpos(CAST(structure AS text), :j) > 0"
        ),
        {"o": org, "p": project, "j": subject_json},
    )
    return [r[0] for r in rows]
