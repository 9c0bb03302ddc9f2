"""Hybrid retrieval over published memories: pgvector HNSW + Postgres full text, fused by RRF, then ranked.

Visibility is decided here, in SQL, and nowhere else: a reader passes the scope keys its task sees
(`governance.scopes.visible_scope_keys`) and only memories under those keys are ever read. Deprecated
(superseded or retired) and expired memories are left out unless history is asked for.

Each retriever returns up to `candidates` ids; the union is fetched once and scored by
`governance.ranking` (relevance = normalised RRF, weighted by the intent's type preference, adjusted within
bounds by recency, importance × confidence and usefulness).

Full text uses the `simple` configuration (no stemming: identifiers and error codes must match as written;
Korean has no Postgres stemmer anyway). The query is the OR of its content words, with English function words
dropped, so a long natural-language question still finds a memory that shares its rare identifier. Hits are
ordered by the IDF-weighted share of query words they contain, and that share also weighs their vote in the
fusion; memories matching the same words tie, so full text never pretends to order what it cannot tell apart.
"""

from __future__ import annotations

import math
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
from pgvector.sqlalchemy import Vector
from sqlalchemy import bindparam, text
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.types import Text

from governance.errors import NotFound
from governance.ranking import RankingParams, ScoreParts, score_parts, weighted_rrf
from governance.scopes import visible_scope_keys
from governance.storage.citations import INDEPENDENT_CITERS
from governance.storage.memory_links import derivation_sources
from governance.storage.tables import EMBEDDING_DIM

__all__ = [
    "ReaderScope",
    "NeighbourScope",
    "SearchHit",
    "MemoryDetail",
    "reader_scope",
    "search",
    "rank_candidates",
    "ef_search_for",
    "vector_candidates",
    "text_candidates",
    "term_frequencies",
    "driving_terms",
    "driving_clauses",
    "expected_matches",
    "MATCH_BUDGET",
    "fulltext_query",
    "fulltext_terms",
    "is_identifier",
    "PLAIN_WORD_WEIGHT",
    "TEXT_VOTE",
    "LOCATION_VOTE",
    "NEIGHBOUR_SEEDS",
    "NEIGHBOUR_VOTE",
    "NEIGHBOUR_CANDIDATES",
    "file_neighbours",
    "fuse",
    "record_retrievals",
    "get_memory",
    "parse_memory_ref",
]

_STOPWORDS = frozenset(
    """a an and are as at be been but by can could did do does doing for from had has have how i if in into is
    it its me my no not of on or our should so than that the their them then there these they this to too us
    was we were what when where which while who why will with would you your about after again all also am any
    because before being both each few more most other own same some such only just very via vs use used using
    """.split()
)
_WORD = re.compile(r"[\w][\w.\-/:]*", re.UNICODE)
_MAX_TERMS = 16
PLAIN_WORD_WEIGHT = 0.1
# An exact match of every identifier in the query outvotes the embedding's first choice: e5 blurs LG-7731
# into LG-7713, Postgres does not.
TEXT_VOTE = 2.0
# A memory whose source task touched the files or symbols a search names (or whose text names them) is exact
# evidence too: it votes like a full identifier match (api/services/reading.py, `files` / `symbols`).
LOCATION_VOTE = 2.0
# Episodes that touched the files the best matches touched (`file_neighbours`): the query's best
# `NEIGHBOUR_SEEDS` fused memories name the code, and up to `NEIGHBOUR_CANDIDATES` episodes linked to it vote
# like a location.
# Tuned on the tune part of httpx's history (tests/bench/history_recall.py): seeds 5-20 and votes 2-4 all
# gave recall@10 0.19-0.21 against 0.14 without; 10 and 2.0 sit inside that plateau.
NEIGHBOUR_SEEDS = 10
NEIGHBOUR_VOTE = LOCATION_VOTE
NEIGHBOUR_CANDIDATES = 100

EF_SEARCH_FLOOR = 200
EF_SEARCH_MAX = 1000  # pgvector's maximum

# memories the full-text retriever's plain words may bring in (`driving_terms`)
MATCH_BUDGET = 1_000
_TERM_FREQUENCIES = text(
    """SELECT t.i AS i, min(coalesce(d.df, 0)) AS df
    FROM unnest(CAST(:terms AS text[])) WITH ORDINALITY AS t(term, i)
    CROSS JOIN LATERAL unnest(tsvector_to_array(to_tsvector('simple', t.term))) AS x(lexeme)
    LEFT JOIN LATERAL (
        SELECT sum(memories) AS df FROM memory_lexemes WHERE scope_key = ANY(:keys) AND lexeme = x.lexeme
    ) AS d ON true
    GROUP BY t.i
    UNION ALL
    SELECT 0, coalesce(sum(memories), 0) FROM memory_lexemes WHERE scope_key = ANY(:keys) AND lexeme = ''"""
)

_VECTOR = bindparam("q", type_=Vector(EMBEDDING_DIM))
_KEYS = bindparam("keys", type_=ARRAY(Text))
_TYPES = bindparam("types", type_=ARRAY(Text))
_DEFAULT_PARAMS = RankingParams()

_MEMORY_COLUMNS = """id::text AS id, citation, memory_type, scope, scope_key, org, project, canonical_key,
    title, content, confidence, importance, validation_source, validation_count, last_validated_at,
    decay_policy, source_task_ids, source_entry_ids, supersedes_id::text AS supersedes_id, deprecated_at,
    contradiction_note, expires_at, retrieval_count, usefulness, version, created_at, updated_at,
    valid_from_commit, valid_to_commit, stale_at, stale_reason"""

# what `governance.ranking.score_parts` reads of every candidate (and the citation, the last tie-break)
_SCORING_COLUMNS = f"""id::text AS id, citation, memory_type, importance, confidence, usefulness,
    retrieval_count, updated_at, stale_at, {INDEPENDENT_CITERS} AS citers"""


@dataclass(frozen=True)
class ReaderScope:
    """The tenant and scope keys a task reads from (the task fixes worktree, project and org)."""

    task_id: str
    org: str
    project: str
    worktree: str

    @property
    def scope_keys(self) -> list[str]:
        """Scope keys visible from this task: task, worktree, project, org."""
        return visible_scope_keys(
            org=self.org, project=self.project, worktree=self.worktree, task_id=self.task_id
        )


@dataclass(frozen=True)
class NeighbourScope:
    """Where `file_neighbours` may look (the search's own visibility) and how many best matches lead it."""

    scope_keys: tuple[str, ...]
    types: tuple[str, ...] | None = None
    include_history: bool = False
    seeds: int = NEIGHBOUR_SEEDS


@dataclass(frozen=True)
class SearchHit:
    """One ranked memory with the parts of its score and where each retriever placed it."""

    id: str
    citation: str
    memory_type: str
    scope: str
    scope_key: str
    title: str
    content: str
    confidence: float
    importance: float
    created_at: datetime
    updated_at: datetime
    deprecated_at: datetime | None
    expires_at: datetime | None
    cosine: float | None
    vector_rank: int | None
    text_rank: int | None
    parts: ScoreParts
    stale_at: datetime | None = None
    stale_reason: str | None = None

    @property
    def stale(self) -> bool:
        """A memory it builds on was superseded or retired since; a human has not confirmed it yet."""
        return self.stale_at is not None


@dataclass(frozen=True)
class MemoryDetail:
    """A memory in full, with the staging entries it came from and its supersession chain (oldest first)."""

    memory: dict[str, Any]
    provenance: list[dict[str, Any]] = field(default_factory=list)
    history: list[dict[str, Any]] = field(default_factory=list)


async def reader_scope(conn: AsyncConnection, task_id: str) -> ReaderScope:
    """The task's tenant; NotFound for an unknown task."""
    row = (
        await conn.execute(text("SELECT org, project, worktree FROM tasks WHERE id = :id"), {"id": task_id})
    ).first()
    if row is None:
        raise NotFound(f"task {task_id!r} does not exist")
    return ReaderScope(task_id=task_id, org=row.org, project=row.project, worktree=row.worktree)


def _filters(types: Sequence[str] | None, include_history: bool) -> str:
    clauses = ["scope_key = ANY(:keys)"]
    if not include_history:
        clauses += ["deprecated_at IS NULL", "(expires_at IS NULL OR expires_at > now())"]
    if types:
        clauses.append("memory_type = ANY(:types)")
    return " AND ".join(clauses)


def is_identifier(word: str) -> bool:
    """Error codes, config keys, paths, class names: strings a user means exactly (LG-7731, MAX_INFLIGHT)."""
    return any(ch.isdigit() or ch in "_.-/:" for ch in word) or sum(ch.isupper() for ch in word) >= 2


def fulltext_terms(query_text: str) -> list[tuple[str, float]]:
    """The query's content words (lowercased, function words dropped, at most 16) with their vote weight.

    Identifiers vote fully; plain words vote at `PLAIN_WORD_WEIGHT`, because the embedding already understands
    them (and their synonyms) better than exact matching does, while it blurs `LG-7731` into `LG-7713`.
    """
    terms: dict[str, float] = {}
    for match in _WORD.finditer(query_text):
        raw = match.group(0).strip(".-/:")
        word = raw.lower()
        if len(word) >= 2 and word not in _STOPWORDS and word not in terms:
            terms[word] = 1.0 if is_identifier(raw) else PLAIN_WORD_WEIGHT
    return list(terms.items())[:_MAX_TERMS]


def fulltext_query(query_text: str) -> str | None:
    """A `websearch_to_tsquery` input OR-ing the query's content words, or None if it has none."""
    terms = fulltext_terms(query_text)
    return " or ".join(t for t, _ in terms) if terms else None


def ef_search_for(limit: int) -> int:
    """The HNSW walk's breadth for `limit` candidates: four times the limit, at least 200, at most 1000.

    Measured at 100,000 memories, 90 % of them visible to the reader, 50 candidates
    (tests/bench/retrieval_scale.py): ef_search 100 gave recall@10 0.969 against exact search, 200 gave 0.998
    (recall@50 0.992) in 5.2 ms, and 400 gave 0.999 in 12.1 ms. The floor keeps a small limit's walk as
    wide as 50 candidates' (10 candidates at ef_search 40: recall@10 0.917).
    """
    return min(EF_SEARCH_MAX, max(EF_SEARCH_FLOOR, 4 * limit))


async def vector_candidates(
    conn: AsyncConnection,
    query_vector: np.ndarray | Sequence[float],
    scope_keys: Sequence[str],
    *,
    limit: int,
    types: Sequence[str] | None = None,
    include_history: bool = False,
    ef_search: int | None = None,
) -> list[tuple[str, float]]:
    """(id, cosine similarity) nearest first, through the HNSW index.

    pgvector 0.6 filters *after* the index walk, so `hnsw.ef_search` (how many neighbours the walk keeps) is
    raised with the limit: `ef_search_for(limit)`. `SET LOCAL` semantics (set_config(..., true)) keep the
    setting inside this transaction.
    """
    ef = ef_search or ef_search_for(limit)
    await conn.execute(text("SELECT set_config('hnsw.ef_search', :ef, true)"), {"ef": str(ef)})
    sql = text(
        f"""SELECT id::text AS id, 1 - (embedding <=> :q) AS cosine FROM memories
        WHERE embedding IS NOT NULL AND {_filters(types, include_history)}
        ORDER BY embedding <=> :q LIMIT :limit"""
    ).bindparams(_VECTOR, _KEYS, *([_TYPES] if types else []))
    params: dict[str, Any] = {"q": np.asarray(query_vector, dtype=np.float32), "keys": list(scope_keys)}
    if types:
        params["types"] = list(types)
    rows = (await conn.execute(sql, {**params, "limit": limit})).all()
    return [(r.id, float(r.cosine)) for r in rows]


def driving_terms(terms: Sequence[tuple[str, float]], frequencies: Sequence[int], budget: int) -> list[int]:
    """Indexes of the terms whose matches make up the full-text match set.

    Identifiers (weight 1) always do. Plain words do rarest first, while the memories they bring in stay
    within `budget`; the rarest word always does. A word left out still counts toward the coverage of the
    memories the others brought in: "deploy" in 4,000 memories refines the order of the 30 that hold
    `LG-7731`, and does not make the query visit the 4,000. Words no visible memory holds are left out.
    """
    present = [i for i, df in enumerate(frequencies) if df > 0]
    chosen: list[int] = []
    brought = 0
    for i in sorted(present, key=lambda i: (frequencies[i], i)):
        if terms[i][1] >= 1.0 or not chosen or brought + frequencies[i] <= budget:
            chosen.append(i)
            brought += frequencies[i]
    return sorted(chosen)


def expected_matches(memories: int, frequencies: Sequence[int]) -> float:
    """How many of `memories` hold at least one of the terms, were the terms independent of each other.

    The size of the query's match set, without visiting it: `N · (1 − Π (1 − df / N))`, at least the
    largest df.
    """
    if memories <= 0:
        return 0.0
    missing = 1.0
    for df in frequencies:
        missing *= 1.0 - min(df, memories) / memories
    return max(memories * (1.0 - missing), float(max(frequencies, default=0)))


def driving_clauses(
    terms: Sequence[tuple[str, float]],
    frequencies: Sequence[int],
    driving: Sequence[int],
    budget: int,
    *,
    limit: int,
    typed: bool,
) -> list[str]:
    """The tsquery expressions (over `w<i>`) whose matches the full-text retriever visits.

    Each driving term alone (`w1`), except an identifier held by more than `budget` memories: it is
    visited together with any other term of the query (`(w1 && (w0 || w2))`). The memories holding such an
    identifier and none of the other terms all have one coverage, and there are more of them than `limit`:
    the retriever would leave their group out whole (`text_candidates`), so they are not visited at all
    (an identifier every memory of a project repeats, a service name, would cost a visit of each).
    Not under a `types` filter: the counts are of every type, and the group may be small.
    """
    clauses = []
    for i in driving:
        others = [j for j, df in enumerate(frequencies) if df > 0 and j != i]
        if typed or terms[i][1] < 1.0 or frequencies[i] <= max(budget, limit + 1):
            clauses.append(f"w{i}")
        elif others:
            clauses.append(f"(w{i} && ({' || '.join(f'w{j}' for j in others)}))")
    return clauses


async def term_frequencies(
    conn: AsyncConnection, terms: Sequence[str], scope_keys: Sequence[str]
) -> tuple[int, list[int]]:
    """(live memories, [memories holding each term]) under `scope_keys`, from the `memory_lexemes` counts.

    A term of several lexemes (`misty-checkout-3`) counts as its rarest lexeme: no more memories hold it.
    """
    rows = (await conn.execute(_TERM_FREQUENCIES, {"terms": list(terms), "keys": list(scope_keys)})).all()
    counts = {int(r.i): int(r.df) for r in rows}
    return counts.pop(0, 0), [counts.get(i, 0) for i in range(1, len(terms) + 1)]


async def text_candidates(
    conn: AsyncConnection,
    query_text: str,
    scope_keys: Sequence[str],
    *,
    limit: int,
    types: Sequence[str] | None = None,
    include_history: bool = False,
) -> list[tuple[str, float]]:
    """(id, coverage) best first, through the GIN index on the generated `tsv` column.

    Coverage is the IDF-weighted share of the query's terms a memory contains, each term weighed by
    `ln(1 + n / df)` within the match set: n visible memories hold any of the query's terms, df of them this
    one. A rare identifier thus weighs far more than a service name every memory repeats, and a query word
    no visible memory contains (a Korean phrase against English memories, "mean") is left out instead of
    diluting the share. The counts of `memory_lexemes` (kept by triggers on `memories`) say first how many
    memories hold each term under the reader's scope keys:

    - a match set of at most `MATCH_BUDGET` memories is visited whole and counted exactly (`_counted`), and
      so is every search that includes history (the counts are of live memories);
    - a larger one is not: n is estimated from those counts (`expected_matches`), and only the memories
      holding a driving term are visited (`driving_terms`, `driving_clauses`). At 100,000 memories,
      counting a match set of ~4,600 memories for each query took 10-15 ms p50
      (tests/bench/retrieval_scale.py).

    Coverage orders the hits, then the id: memories of equal coverage matched the same terms, and the fusion
    gives them one shared rank (`governance.ranking.weighted_rrf`). If `limit` falls inside a group of equal
    coverage, that whole group is left out (see below).
    """
    terms = fulltext_terms(query_text)
    if not terms:
        return []
    if include_history:  # the counts are of live memories: history is counted as it is visited
        memories, frequencies = 0, [0] * len(terms)
    else:
        memories, frequencies = await term_frequencies(conn, [t for t, _ in terms], scope_keys)
        if memories == 0 or max(frequencies) == 0:
            return []
    matching = expected_matches(memories, frequencies)
    if include_history or matching <= MATCH_BUDGET:
        sql, driving = _counted(terms, types, include_history), list(range(len(terms)))
    else:
        driving = driving_terms(terms, frequencies, MATCH_BUDGET)
        clauses = driving_clauses(terms, frequencies, driving, MATCH_BUDGET, limit=limit, typed=bool(types))
        if not clauses:
            return []
        sql = _estimated(terms, frequencies, matching, clauses, types, include_history)
    params: dict[str, Any] = {
        "query": " or ".join(terms[i][0] for i in driving),
        "keys": list(scope_keys),
        "limit": limit + 1,  # one more, to see whether the cut falls inside a tie
        **{f"t{i}": t for i, (t, _) in enumerate(terms)},
    }
    if types:
        params["types"] = list(types)
    hits = [(r.id, float(r.coverage)) for r in (await conn.execute(sql, params)).all()]
    if len(hits) > limit:
        # memories matching the same terms are indistinguishable here: voting for an arbitrary part of
        # their group would be noise, so a group the limit cuts is left out whole
        cut = hits[limit][1]
        hits = [h for h in hits[:limit] if h[1] != cut]
    return hits


def _counted(terms: Sequence[tuple[str, float]], types: Sequence[str] | None, include_history: bool) -> Any:
    """Coverage with n and each df counted over the match set, visited whole.

    The counts (`df`) are MATERIALIZED, computed once: the planner cannot estimate a phrase query's match
    set (an identifier alone, `misty-checkout-3`, is estimated at 1 row), and inlined it recounted the
    whole match set for every hit (118 ms p50 at 100,000 memories, 6 ms computed once).
    """
    n = range(len(terms))
    sources = ", ".join(f"plainto_tsquery('simple', :t{i}) AS q{i}" for i in n)
    flags = ", ".join(f"tsv @@ q{i} AS h{i}" for i in n)
    counts = ", ".join(f"count(*) FILTER (WHERE h{i}) AS d{i}" for i in n)
    idf = ", ".join(f"ln(1 + counted.n::float8 / greatest(counted.d{i}, 1)) AS idf{i}" for i in n)
    weights = [w for _, w in terms]
    matched = " + ".join(f"CASE WHEN h{i} THEN {weights[i]!r} * df.idf{i} ELSE 0 END" for i in n)
    possible = " + ".join(f"CASE WHEN df.d{i} > 0 THEN df.idf{i} ELSE 0 END" for i in n)
    return text(
        f"""WITH hits AS (
            SELECT id, {flags}
            FROM memories, websearch_to_tsquery('simple', :query) AS q, {sources}
            WHERE tsv @@ q AND {_filters(types, include_history)}
        ), df AS MATERIALIZED (
            SELECT counted.*, {idf} FROM (SELECT count(*) AS n, {counts} FROM hits) AS counted
        )
        SELECT hits.id::text AS id, ({matched}) / ({possible}) AS coverage
        FROM hits, df
        ORDER BY coverage DESC, hits.id LIMIT :limit"""
    ).bindparams(_KEYS, *([_TYPES] if types else []))


def _estimated(
    terms: Sequence[tuple[str, float]],
    frequencies: Sequence[int],
    matching: float,
    clauses: Sequence[str],
    types: Sequence[str] | None,
    include_history: bool,
) -> Any:
    """Coverage with n and each df from `memory_lexemes`: the shares are numbers before the query runs.

    The memories visited are those matching any of `clauses` (`driving_clauses`), over `w<i>`: term i as
    `websearch_to_tsquery` reads it (an identifier as a phrase).
    """
    phrases = ", ".join(f"websearch_to_tsquery('simple', :t{i}) AS w{i}" for i in range(len(terms)))
    idf = {i: math.log(1 + matching / df) for i, df in enumerate(frequencies) if df > 0}
    possible = sum(idf.values())
    sources = ", ".join(f"plainto_tsquery('simple', :t{i}) AS q{i}" for i in range(len(terms)))
    share = {i: terms[i][1] * weight / possible for i, weight in idf.items()}
    coverage = " + ".join(f"CASE WHEN tsv @@ q{i} THEN {share[i]!r}::float8 ELSE 0 END" for i in idf)
    return text(
        f"""SELECT id::text AS id, {coverage} AS coverage
        FROM memories, {sources}, {phrases}
        WHERE tsv @@ ({" || ".join(clauses)}) AND {_filters(types, include_history)}
        ORDER BY coverage DESC, id LIMIT :limit"""
    ).bindparams(_KEYS, *([_TYPES] if types else []))


def fuse(
    by_vector: Sequence[tuple[str, float]],
    by_text: Sequence[tuple[str, float]],
    *,
    k: int,
    by_location: Sequence[tuple[str, float]] = (),
    by_neighbour: Sequence[tuple[str, float]] = (),
) -> dict[str, float]:
    """Query relevance in (0, 1]: RRF of the vector list (vote 1), the tie-ranked text list, the code
    locations' list and the file neighbours' list.

    Text hits vote `TEXT_VOTE` × coverage, so only a match of the query's identifiers outvotes the embedding;
    a memory of the files or symbols asked for votes `LOCATION_VOTE`, ranked by how often they were touched;
    an episode of the files the best matches touched votes `NEIGHBOUR_VOTE` × its strength's share of the
    strongest (`file_neighbours`).
    """
    top = max((strength for _, strength in by_neighbour), default=1.0) or 1.0
    return weighted_rrf(
        [
            [(i, cos, 1.0) for i, cos in by_vector],
            [(i, cov, TEXT_VOTE * cov) for i, cov in by_text],
            [(i, strength, LOCATION_VOTE) for i, strength in by_location],
            # each its own rank (the list is ordered newest first within a strength), voting by its share
            # of the strongest link: a memory sharing a common file with one weak match votes little
            [(i, -rank, NEIGHBOUR_VOTE * strength / top) for rank, (i, strength) in enumerate(by_neighbour)],
        ],
        k=k,
    )


async def file_neighbours(
    conn: AsyncConnection,
    seeds: Sequence[tuple[str, float]],
    scope_keys: Sequence[str],
    *,
    limit: int = NEIGHBOUR_CANDIDATES,
    types: Sequence[str] | None = None,
    include_history: bool = False,
) -> list[tuple[str, float]]:
    """(id, strength) of visible episodes linked (`episode_files`) to the files the `seeds` episodes touched,
    strongest first.

    `seeds` are (memory id, weight): the query's best matches, weighted by rank. A file counts its seeds'
    weights times `ln(1 + n / df)` (n visible memories, df of them linked to the file), so a file every task
    touches (a changelog) says little and a module few touch says much; a file linked to more than
    `MATCH_BUDGET` visible episodes is left out (its weight would be near nothing, its visit not). An
    episode's strength is the sum over its files; of equal strength, the newest comes first (the last
    change to the code is its state now: on httpx's history that order gave recall@10 +0.011). Memories
    without episode links (facts, conversations) are never found here; a search whose best matches have
    none gets an empty list.
    """
    if not seeds or limit <= 0:
        return []
    sql = text(
        f"""WITH seed_files AS (
            SELECT f.path, sum(s.w) AS w
            FROM unnest(CAST(:seeds AS uuid[]), CAST(:weights AS float8[])) AS s(id, w)
            JOIN episode_files f ON f.memory_id = s.id
            GROUP BY f.path
        ), linked AS (
            SELECT f.memory_id, f.path FROM episode_files f JOIN memories ON memories.id = f.memory_id
            WHERE f.path IN (SELECT path FROM seed_files) AND {_filters(types, include_history)}
        ), df AS (
            SELECT path, count(*) AS df FROM linked GROUP BY path HAVING count(*) <= :budget
        ), n AS (
            SELECT greatest(coalesce(sum(memories), 0), 1)::float8 AS n
            FROM memory_lexemes WHERE scope_key = ANY(:keys) AND lexeme = ''
        )
        SELECT linked.memory_id::text AS id,
            round(sum(seed_files.w * ln(1 + n.n / df.df))::numeric, 9)::float8 AS strength
        FROM linked JOIN df USING (path) JOIN seed_files USING (path) CROSS JOIN n
        JOIN memories ON memories.id = linked.memory_id
        GROUP BY linked.memory_id, memories.created_at
        ORDER BY strength DESC, memories.created_at DESC, linked.memory_id LIMIT :limit"""
    ).bindparams(_KEYS, *([_TYPES] if types else []))
    params: dict[str, Any] = {
        "seeds": [i for i, _ in seeds],
        "weights": [float(w) for _, w in seeds],
        "keys": list(scope_keys),
        "budget": MATCH_BUDGET,
        "limit": limit,
    }
    if types:
        params["types"] = list(types)
    return [(r.id, float(r.strength)) for r in (await conn.execute(sql, params)).all()]


async def search(
    conn: AsyncConnection,
    query_text: str,
    query_vector: np.ndarray | Sequence[float] | None,
    visible_scope_keys: Sequence[str],
    k: int,
    types: Sequence[str] | None = None,
    include_history: bool = False,
    *,
    params: RankingParams = _DEFAULT_PARAMS,
    candidates: int = 50,
    now: datetime | None = None,
) -> list[SearchHit]:
    """The `k` best memories for a query among `visible_scope_keys`, relevance first (`governance.ranking`).

    `query_vector` None searches by full text only (an embedder outage must not stop reads). The retrievers
    run one after the other on `conn`; `api.services.reading` runs them side by side on two connections.
    """
    if k <= 0:
        return []
    pool = max(candidates, k)
    by_vector = (
        await vector_candidates(
            conn, query_vector, visible_scope_keys, limit=pool, types=types, include_history=include_history
        )
        if query_vector is not None
        else []
    )
    by_text = await text_candidates(
        conn, query_text, visible_scope_keys, limit=pool, types=types, include_history=include_history
    )
    neighbours = NeighbourScope(tuple(visible_scope_keys), tuple(types) if types else None, include_history)
    return await rank_candidates(
        conn, by_vector, by_text, query_vector, k, params=params, now=now, neighbours=neighbours
    )


async def rank_candidates(
    conn: AsyncConnection,
    by_vector: Sequence[tuple[str, float]],
    by_text: Sequence[tuple[str, float]],
    query_vector: np.ndarray | Sequence[float] | None,
    k: int,
    *,
    params: RankingParams = _DEFAULT_PARAMS,
    now: datetime | None = None,
    by_location: Sequence[tuple[str, float]] = (),
    neighbours: NeighbourScope | None = None,
) -> list[SearchHit]:
    """The `k` best of the retrievers' candidates: fused (`fuse`), scored and sorted, then the `k` fetched.

    With `neighbours`, the fused order's best `neighbours.seeds` memories (weighted 1 / rank) lead to the
    episodes of the files they touched (`file_neighbours`), and the candidates are fused again with them.
    Scoring reads the few columns `governance.ranking` needs for every candidate (up to a few hundred rows);
    titles, contents and the cosines the vector retriever did not give are fetched for the `k` kept only.
    """
    relevance = fuse(by_vector, by_text, k=params.rrf_k, by_location=by_location)
    if not relevance or k <= 0:
        return []
    if neighbours is not None and neighbours.seeds > 0:
        best = sorted(relevance, key=lambda i: (-relevance[i], i))[: neighbours.seeds]
        by_neighbour = await file_neighbours(
            conn,
            [(i, 1.0 / rank) for rank, i in enumerate(best, start=1)],
            neighbours.scope_keys,
            types=neighbours.types,
            include_history=neighbours.include_history,
        )
        if by_neighbour:
            relevance = fuse(
                by_vector, by_text, k=params.rrf_k, by_location=by_location, by_neighbour=by_neighbour
            )
    clock = now or datetime.now(UTC)
    scored = [
        (
            row.id,
            row.citation,
            # recency counts from the last change (a merge or validation refreshes a memory), not creation
            score_parts(
                similarity=relevance[row.id],
                when=row.updated_at,
                now=clock,
                importance=row.importance,
                confidence=row.confidence,
                usefulness=row.usefulness,
                retrievals=row.retrieval_count,
                citers=row.citers,
                memory_type=row.memory_type,
                params=params,
                stale=row.stale_at is not None,
            ),
        )
        for row in (
            await conn.execute(
                text(f"SELECT {_SCORING_COLUMNS} FROM memories WHERE id = ANY(CAST(:ids AS uuid[]))"),
                {"ids": list(relevance)},
            )
        ).all()
    ]
    scored.sort(key=lambda s: (-s[2].score, -s[2].similarity, s[1]))
    kept = scored[:k]
    cosines = dict(by_vector)
    rows = await _fetch(
        conn,
        [i for i, _, _ in kept],
        query_vector if any(i not in cosines for i, _, _ in kept) else None,
    )
    vector_rank = {i: r for r, (i, _) in enumerate(by_vector, start=1)}
    text_rank = {i: r for r, (i, _) in enumerate(by_text, start=1)}
    hits = []
    for memory_id, _, parts in kept:
        row = rows.get(memory_id)
        if row is None:  # pruned between the two reads
            continue
        hits.append(
            SearchHit(
                id=memory_id,
                citation=row["citation"],
                memory_type=row["memory_type"],
                scope=row["scope"],
                scope_key=row["scope_key"],
                title=row["title"],
                content=row["content"],
                confidence=row["confidence"],
                importance=row["importance"],
                created_at=row["created_at"],
                updated_at=row["updated_at"],
                deprecated_at=row["deprecated_at"],
                expires_at=row["expires_at"],
                cosine=cosines.get(memory_id, row["cosine"]),
                vector_rank=vector_rank.get(memory_id),
                text_rank=text_rank.get(memory_id),
                stale_at=row["stale_at"],
                stale_reason=row["stale_reason"],
                parts=parts,
            )
        )
    return hits


async def _fetch(
    conn: AsyncConnection, ids: list[str], query_vector: np.ndarray | Sequence[float] | None
) -> dict[str, dict[str, Any]]:
    """Memories by id, with their cosine to `query_vector` (None: no cosine)."""
    if not ids:
        return {}
    cosine = "1 - (embedding <=> :q)" if query_vector is not None else "NULL::float8"
    sql = text(
        f"SELECT {_MEMORY_COLUMNS}, {cosine} AS cosine FROM memories WHERE id = ANY(CAST(:ids AS uuid[]))"
    )
    params: dict[str, Any] = {"ids": ids}
    if query_vector is not None:
        sql = sql.bindparams(_VECTOR)
        params["q"] = np.asarray(query_vector, dtype=np.float32)
    return {r.id: dict(r._mapping) for r in (await conn.execute(sql, params)).all()}


async def record_retrievals(conn: AsyncConnection, ids: Sequence[str]) -> int:
    """Count one retrieval for each id in one statement; returns the rows touched.

    A counter, not a governance change: it writes no memory event and leaves `updated_at` (recency) alone.
    """
    if not ids:
        return 0
    result = await conn.execute(
        text(
            "UPDATE memories SET retrieval_count = retrieval_count + 1 WHERE id = ANY(CAST(:ids AS uuid[]))"
        ),
        {"ids": sorted(set(ids))},  # a fixed order: concurrent batches lock rows alike, no deadlock
    )
    return int(result.rowcount or 0)


def parse_memory_ref(ref: str) -> tuple[str, str]:
    """("id", uuid) or ("citation", short id) from `mem:abc123`, `abc123` or a UUID."""
    value = ref.strip()
    if value.startswith("[") and value.endswith("]"):
        value = value[1:-1]
    if value.lower().startswith("mem:"):
        value = value[4:]
    try:
        return "id", str(uuid.UUID(value))
    except ValueError:
        return "citation", value


async def get_memory(conn: AsyncConnection, ref: str) -> MemoryDetail:
    """A memory by id or citation, with provenance and supersession history; NotFound if unknown."""
    column, value = parse_memory_ref(ref)
    where = "id = CAST(:v AS uuid)" if column == "id" else "citation = :v"
    row = (
        await conn.execute(
            text(
                f"SELECT {_MEMORY_COLUMNS}, CAST(related_ids AS text[]) AS related_ids "
                f"FROM memories WHERE {where}"
            ),
            {"v": value},
        )
    ).first()
    if row is None:
        raise NotFound(f"memory {ref!r} does not exist")
    memory = dict(row._mapping)
    # what it builds on (citations): when one of them changes, this memory goes stale
    memory["derived_from"] = (await derivation_sources(conn, [memory["id"]])).get(memory["id"], [])

    provenance = [
        dict(r._mapping)
        for r in (
            await conn.execute(
                text(
                    """SELECT id, task_id, seq, actor_id, actor_type, kind, content, payload, created_at
                    FROM staging_entries WHERE id = ANY(:ids) ORDER BY id"""
                ),
                {"ids": list(memory["source_entry_ids"] or [])},
            )
        ).all()
    ]
    history = [
        dict(r._mapping)
        for r in (
            await conn.execute(
                text(
                    """WITH RECURSIVE older(id, depth) AS (
                        SELECT supersedes_id, 1 FROM memories WHERE id = CAST(:id AS uuid)
                        UNION ALL
                        SELECT m.supersedes_id, o.depth + 1 FROM memories m JOIN older o ON m.id = o.id
                        WHERE o.depth < 1000
                    ), newer(id, depth) AS (
                        SELECT id, 1 FROM memories WHERE supersedes_id = CAST(:id AS uuid)
                        UNION ALL
                        SELECT m.id, n.depth + 1 FROM memories m JOIN newer n ON m.supersedes_id = n.id
                        WHERE n.depth < 1000
                    ), chain(id, pos) AS (
                        SELECT id, -depth FROM older WHERE id IS NOT NULL
                        UNION ALL SELECT CAST(:id AS uuid), 0
                        UNION ALL SELECT id, depth FROM newer
                    )
                    SELECT m.id::text AS id, m.citation, m.title, m.version, m.created_at, m.deprecated_at,
                           m.contradiction_note, m.supersedes_id::text AS supersedes_id, c.pos = 0 AS is_this
                    FROM chain c JOIN memories m ON m.id = c.id ORDER BY c.pos"""
                ),
                {"id": memory["id"]},
            )
        ).all()
    ]
    return MemoryDetail(memory=memory, provenance=provenance, history=history)
