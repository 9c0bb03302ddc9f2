"""The file-neighbour signal: episodes that touched the files the query's best matches touched, or the files
the query names."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from governance.storage.episodes import path_suffixes
from governance.storage.visible_memories import KEYS, MATCH_BUDGET, TYPES, visible_filters

__all__ = [
    "NeighbourScope",
    "NEIGHBOUR_SEEDS",
    "NEIGHBOUR_CANDIDATES",
    "NEIGHBOUR_DECAY",
    "NAMED_FILES",
    "NAMED_FILE_WEIGHT",
    "file_neighbours",
]

# Episodes that touched the files the best matches touched (`file_neighbours`): the query's best
# `NEIGHBOUR_SEEDS` fused memories name the code, and up to `NEIGHBOUR_CANDIDATES` episodes linked to it vote
# like a location.
# Tuned on the tune part of httpx's history (tests/bench/history_recall.py): seeds 5-20 and votes 2-4 all
# gave recall@10 0.19-0.21 against 0.14 without; 10 and 2.0 sat inside that plateau. With the decay below,
# 20 seeds (each weighted 1 / rank) gave 0.446 -> 0.476 (30: 0.480), and were taken.
NEIGHBOUR_SEEDS = 20
NEIGHBOUR_CANDIDATES = 100
# The share of a file's weight an episode keeps for each later episode of that file: the file's last change
# counts fully, the one before it half, and so on (the last change to the code is its state now). On the tune
# part of httpx's history, recall@10 0.219 -> 0.45 (decays 0.1-0.5 all within 0.45-0.46; 1.0 is no decay).
NEIGHBOUR_DECAY = 0.5
# The files a query names itself (`httpx/_client.py`, `_models.py`) lead like its best match (weight 1.0), at
# most NAMED_FILES of them: 46 of the 315 tune queries name one an episode touched; recall@10 +0.009.
NAMED_FILES = 5
NAMED_FILE_WEIGHT = 1.0


@dataclass(frozen=True)
class NeighbourScope:
    """Where `file_neighbours` may look (the search's own visibility) and how many best matches lead it."""

    scope_keys: tuple[str, ...]
    types: tuple[str, ...] | None = None
    include_history: bool = False
    seeds: int = NEIGHBOUR_SEEDS
    decay: float = NEIGHBOUR_DECAY
    named: tuple[str, ...] = ()  # files the query names (`governance.code_locations.locations_from_text`)


async def file_neighbours(
    conn: AsyncConnection,
    seeds: Sequence[tuple[str, float]],
    scope_keys: Sequence[str],
    *,
    limit: int = NEIGHBOUR_CANDIDATES,
    types: Sequence[str] | None = None,
    include_history: bool = False,
    decay: float = NEIGHBOUR_DECAY,
    named: Sequence[str] = (),
) -> list[tuple[str, float]]:
    """(id, strength) of visible episodes linked (`episode_files`) to the files the `seeds` episodes touched,
    strongest first.

    `seeds` are (memory id, weight): the query's best matches, weighted by rank; `named` are paths the query
    itself names, each leading to the stored paths it names (equal, or ending with `/` + it, or one of its
    suffixes holding a `/`, as `storage/episodes.py` matches asked files) with `NAMED_FILE_WEIGHT`, the
    first `NAMED_FILES` only. A file counts its seeds'
    weights times `ln(1 + n / df)` (n visible memories, df of them linked to the file), so a file every task
    touches (a changelog) says little and a module few touch says much; a file linked to more than
    `MATCH_BUDGET` visible episodes is left out (its weight would be near nothing, its visit not). An
    episode's share of a file is `decay ** p`, p the visible episodes of that file created after it (the
    file's last change 1, the one before it `decay`, ...; episodes created at one moment share a place): the
    last change to the code is its state now, and an old episode of a file changed since says what the code
    no longer is. An episode's strength is the sum over its files; of equal strength, the newest comes
    first. `decay` 1.0 weighs every episode of a file alike. Memories
    without episode links (facts, conversations) are never found here; a search whose best matches have
    none gets an empty list.
    """
    asked = [p for p in dict.fromkeys(named) if p][:NAMED_FILES]
    if (not seeds and not asked) or limit <= 0:
        return []
    if not 0.0 < decay <= 1.0:
        raise ValueError("a file neighbour decay lies in (0, 1]")
    named_sql, named_params = _named_paths(asked)
    sql = text(
        f"""WITH seed_files AS (
            SELECT path, sum(w) AS w FROM (
                SELECT f.path, s.w
                FROM unnest(CAST(:seeds AS uuid[]), CAST(:weights AS float8[])) AS s(id, w)
                JOIN episode_files f ON f.memory_id = s.id
                UNION ALL
                SELECT DISTINCT f.path, CAST(:named_weight AS float8) FROM episode_files f WHERE {named_sql}
            ) AS led GROUP BY path
        ), linked AS (
            SELECT f.memory_id, f.path, power(CAST(:decay AS float8), rank() OVER (
                PARTITION BY f.path ORDER BY memories.created_at DESC
            ) - 1) AS share
            FROM episode_files f JOIN memories ON memories.id = f.memory_id
            WHERE f.path IN (SELECT path FROM seed_files) AND {visible_filters(types, include_history)}
        ), df AS (
            SELECT path, count(*) AS df FROM linked GROUP BY path HAVING count(*) <= :budget
        ), n AS (
            SELECT greatest(coalesce(sum(memories), 0), 1)::float8 AS n
            FROM memory_lexemes WHERE scope_key = ANY(:keys) AND lexeme = ''
        )
        SELECT linked.memory_id::text AS id,
            round(sum(seed_files.w * ln(1 + n.n / df.df) * linked.share)::numeric, 9)::float8 AS strength
        FROM linked JOIN df USING (path) JOIN seed_files USING (path) CROSS JOIN n
        JOIN memories ON memories.id = linked.memory_id
        GROUP BY linked.memory_id, memories.created_at
        ORDER BY strength DESC, memories.created_at DESC, linked.memory_id LIMIT :limit"""
    ).bindparams(KEYS, *([TYPES] if types else []))
    params: dict[str, Any] = {
        **named_params,
        "named_weight": NAMED_FILE_WEIGHT,
        "seeds": [i for i, _ in seeds],
        "weights": [float(w) for _, w in seeds],
        "keys": list(scope_keys),
        "budget": MATCH_BUDGET,
        "limit": limit,
        "decay": float(decay),
    }
    if types:
        params["types"] = list(types)
    return [(r.id, float(r.strength)) for r in (await conn.execute(sql, params)).all()]


def _named_paths(paths: Sequence[str]) -> tuple[str, dict[str, Any]]:
    """An SQL condition on `f.path` "a stored path the query's `paths` name" and its parameters (`false`
    for none): equal, ending with `/` + the asked path (the reversed-path index), or a suffix of a longer
    asked path that holds a `/` (an absolute path meets the stored relative one)."""
    clauses = ["f.path = ANY(CAST(:named_exact AS text[]))"] if paths else []
    params: dict[str, Any] = {"named_exact": list(paths)}
    longer = [s for p in paths for s in path_suffixes(p)[1:] if "/" in s]
    if longer:
        clauses.append("f.path = ANY(CAST(:named_longer AS text[]))")
        params["named_longer"] = longer
    for i, path in enumerate(paths):
        clauses.append(f"reverse(f.path) LIKE :named_rev{i}")
        params[f"named_rev{i}"] = _like_literal(("/" + path.lstrip("/"))[::-1]) + "%"
    return " OR ".join(clauses) or "false", params


def _like_literal(value: str) -> str:
    """`value` as the literal part of a LIKE pattern (backslash escapes, Postgres's default)."""
    return value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
