"""The full-text retriever: Postgres full text over published memories, ordered by IDF-weighted coverage.

Full text uses the `simple` configuration (no stemming: identifiers and error codes must match as written;
Korean has no Postgres stemmer anyway). The query is the OR of its content words, with English function words
dropped, so a long natural-language question still finds a memory that shares its rare identifier. Hits are
ordered by the IDF-weighted share of query words they contain, and that share also weighs their vote in the
fusion; memories matching the same words tie, so full text never pretends to order what it cannot tell apart.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from governance.storage.visible_memories import KEYS, MATCH_BUDGET, TYPES, visible_filters

__all__ = [
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
            WHERE tsv @@ q AND {visible_filters(types, include_history)}
        ), df AS MATERIALIZED (
            SELECT counted.*, {idf} FROM (SELECT count(*) AS n, {counts} FROM hits) AS counted
        )
        SELECT hits.id::text AS id, ({matched}) / ({possible}) AS coverage
        FROM hits, df
        ORDER BY coverage DESC, hits.id LIMIT :limit"""
    ).bindparams(KEYS, *([TYPES] if types else []))


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
        WHERE tsv @@ ({" || ".join(clauses)}) AND {visible_filters(types, include_history)}
        ORDER BY coverage DESC, id LIMIT :limit"""
    ).bindparams(KEYS, *([TYPES] if types else []))
