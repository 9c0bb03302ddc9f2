"""The read path over an engine and an embedder: intent → type weights, embed, search, build the context.

Authorisation is not decided here: api/services/search.py resolves the reader's task and the scope keys the
caller may read (through the Authorizer) and passes them in, so every gateway answers the same for the same
input. Benchmarks call these functions directly.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

import numpy as np
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.adapters.embedders import Embedder, embed_query_async
from governance.code_locations import locations_from_text
from governance.config import Settings
from governance.context_block import ContextBlock, ContextItem, build_context_block
from governance.errors import InvalidInput
from governance.guidance import GuidanceLine, bug_pattern_guidance, rule_guidance, select_guidance
from governance.intent import Intent, IntentDecision, detect_intent
from governance.live import LiveWarning, add_live_section, live_reserve
from governance.ranking import (
    DETECTED_INTENT_PENALTY,
    EXPLICIT_INTENT_PENALTY,
    RankingParams,
    ScoreWeights,
    TypePreference,
)
from governance.storage.bug_patterns import bug_pattern_stats
from governance.storage.code_rules import established_rules
from governance.storage.file_neighbours import NEIGHBOUR_DECAY, NeighbourScope
from governance.storage.fulltext import text_candidates
from governance.storage.retrieval import SearchHit, rank_candidates, record_retrievals, vector_candidates
from governance.storage.trust import MemoryStanding, standings_of
from governance.storage.working_memory import latest_entries, location_candidates
from governance.trust import ESTABLISHED_RULE, Standing, is_earned, standing_of
from governance.working_memory import (
    SHORT_TERM_ENTRIES,
    StagedLine,
    short_term_budget,
    short_term_lines,
    with_short_term,
)

__all__ = [
    "CodeFocus",
    "SearchOutcome",
    "ContextOutcome",
    "ranking_params",
    "Routing",
    "resolve_types",
    "search_memories",
    "build_context",
    "short_term_section",
    "count_retrievals",
]

_log = logging.getLogger("loregate.reading")

# A context block draws from more memories than a search page shows: the budget, not k, decides what fits.
CONTEXT_CANDIDATES = 30
# memories of the files and symbols a read names, scored beside the retrievers' (most touched, newest first)
LOCATION_CANDIDATES = 200
# established code rules of the reader's scopes the block carries whatever the query (they bind all work)
CONTEXT_RULES = 5


@dataclass(frozen=True)
class CodeFocus:
    """The files and symbols a search is about: `touched` (task id → how often its entries named them) and
    `names` (texts a memory may name them by); `only` keeps just the memories they lead to (a filter), else
    those memories are one more retriever in the fusion (a boost)."""

    touched: dict[str, int]
    names: tuple[str, ...]
    only: bool = False
    # the asked paths and symbols themselves: episodes linked to them (`episode_files`, `episode_symbols`)
    files: tuple[str, ...] = ()
    symbols: tuple[str, ...] = ()


@dataclass(frozen=True)
class SearchOutcome:
    """Ranked hits and how the query was routed.

    `types` filters (only explicit types do; None = every type); `preferred_types` are the types the intent
    weights up (None: no preference).
    A detected intent weights types and never narrows the search.
    """

    hits: list[SearchHit]
    intent: Intent
    types: tuple[str, ...] | None
    vector_used: bool
    preferred_types: tuple[str, ...] | None = None


@dataclass(frozen=True)
class ContextOutcome:
    """The block and the search it was built from."""

    block: ContextBlock
    search: SearchOutcome
    live: tuple[LiveWarning, ...] = ()  # the other tasks' warnings the block shows


@dataclass(frozen=True)
class Routing:
    """What a query's intent does to a search: a filter (explicit types only) and a type preference."""

    intent: Intent
    types: tuple[str, ...] | None
    prefer: TypePreference

    @property
    def preferred_types(self) -> tuple[str, ...] | None:
        """The weighted-up types, sorted (None: no preference)."""
        return tuple(sorted(self.prefer.types)) if self.prefer.types else None


def ranking_params(settings: Settings, prefer: TypePreference | None = None) -> RankingParams:
    """The configured weights, half-life and RRF constant, and the query's type preference."""
    return RankingParams(
        weights=ScoreWeights(
            similarity=settings.search_weight_similarity,
            recency=settings.search_weight_recency,
            importance=settings.search_weight_importance,
            usefulness=settings.search_weight_usefulness,
        ),
        half_life_hours=settings.search_recency_half_life_hours,
        rrf_k=settings.search_rrf_k,
        prefer=prefer or TypePreference(),
    )


def resolve_types(query: str, types: Sequence[str] | None, intent: Intent | str | None) -> Routing:
    """Explicit types filter; the intent (named, else detected from the query) weights types.

    A named intent weighs strongly (`EXPLICIT_INTENT_PENALTY`), a detected one gently
    (`DETECTED_INTENT_PENALTY`): cue words misroute, and a filter would hide the answer (measured: filtering
    by the detected intent dropped held-out evidence recall@10 from 0.569 to 0.453).
    """
    if intent is not None:
        try:
            decision = IntentDecision(Intent(intent), ())
        except ValueError as exc:
            raise InvalidInput(f"unknown intent {intent!r}; one of {[i.value for i in Intent]}") from exc
        penalty = EXPLICIT_INTENT_PENALTY
    else:
        decision = detect_intent(query)
        penalty = DETECTED_INTENT_PENALTY
    chosen = decision.types
    prefer = TypePreference(frozenset(t.value for t in chosen), penalty) if chosen else TypePreference()
    only = tuple(dict.fromkeys(str(t) for t in types)) if types else None
    return Routing(intent=decision.intent, types=only, prefer=prefer)


async def search_memories(
    engine: AsyncEngine,
    embedder: Embedder | None,
    settings: Settings,
    *,
    query: str,
    scope_keys: Sequence[str],
    k: int,
    types: Sequence[str] | None = None,
    intent: Intent | str | None = None,
    include_history: bool = False,
    now: datetime | None = None,
    focus: CodeFocus | None = None,
) -> SearchOutcome:
    """Route, embed and search. An embedder failure degrades to full text only: reads must not stop.

    The full-text retriever needs no vector, so it runs on its own connection while the query is embedded
    and the vector retriever walks the HNSW index: a search costs the longer of the two paths, not their sum
    (tests/bench/retrieval_scale.py).
    """
    routing = resolve_types(query, types, intent)
    keys = list(scope_keys)
    pool = max(settings.search_candidates, k)
    if k <= 0:
        hits: list[SearchHit] = []
        vector = None
    else:
        vector = await _embed(embedder, query)
        hits = await _search_side_by_side(
            engine,
            query,
            vector,
            keys,
            k,
            pool,
            routing.types,
            include_history,
            ranking_params(settings, routing.prefer),
            now,
            focus,
            settings.search_file_neighbours,
            settings.search_file_neighbour_decay,
        )
    return SearchOutcome(
        hits=hits,
        intent=routing.intent,
        types=routing.types,
        vector_used=vector is not None,
        preferred_types=routing.preferred_types,
    )


async def _search_side_by_side(
    engine: AsyncEngine,
    query: str,
    vector: np.ndarray | None,
    keys: list[str],
    k: int,
    pool: int,
    types: Sequence[str] | None,
    include_history: bool,
    params: RankingParams,
    now: datetime | None,
    focus: CodeFocus | None = None,
    file_neighbours: int = 0,
    file_neighbour_decay: float = NEIGHBOUR_DECAY,
) -> list[SearchHit]:
    """Full text on a connection of its own while the vector retriever walks the index, then the ranking.

    A failure of either (the database unreachable, a timeout) is raised as itself, not as the task group's
    `ExceptionGroup`: the gateways map it to its status (503 for an unavailable database) like any other.
    """
    try:
        async with asyncio.TaskGroup() as group:
            by_text = group.create_task(_text_candidates(engine, query, keys, pool, types, include_history))
            async with engine.begin() as conn:  # a transaction: SET LOCAL hnsw.ef_search lives inside it
                by_vector = (
                    await vector_candidates(
                        conn, vector, keys, limit=pool, types=types, include_history=include_history
                    )
                    if vector is not None
                    else []
                )
                texts = await by_text
                by_location: list[tuple[str, float]] = []
                if focus is not None:
                    found = await location_candidates(
                        conn,
                        scope_keys=keys,
                        touched=focus.touched,
                        names=focus.names,
                        limit=LOCATION_CANDIDATES,
                        types=types,
                        include_history=include_history,
                        query_vector=None if vector is None else vector.tolist(),
                        files=focus.files,
                        symbols=focus.symbols,
                    )
                    by_location = [(i, strength) for i, strength, _ in found]
                    # the memories of those files compete on meaning among themselves too, not only those
                    # the index walk happened to bring: their cosines join the vector list
                    seen = {i for i, _ in by_vector}
                    extra = [(i, cos) for i, _, cos in found if cos is not None and i not in seen]
                    by_vector = sorted([*by_vector, *extra], key=lambda c: -c[1])
                    if focus.only:
                        located = {i for i, _ in by_location}
                        by_vector = [c for c in by_vector if c[0] in located]
                        texts = [c for c in texts if c[0] in located]
                # a filter by code location keeps only its memories: no neighbours beside them
                seeds = 0 if focus is not None and focus.only else file_neighbours
                neighbours = NeighbourScope(
                    tuple(keys),
                    tuple(types) if types else None,
                    include_history,
                    seeds,
                    file_neighbour_decay,
                    named=locations_from_text(query).files,
                )
                return await rank_candidates(
                    conn,
                    by_vector,
                    texts,
                    vector,
                    k,
                    params=params,
                    now=now,
                    by_location=by_location,
                    neighbours=neighbours,
                )
    except ExceptionGroup as failed:  # the other retriever was cancelled: what failed is the first
        raise failed.exceptions[0] from None


async def _embed(embedder: Embedder | None, query: str) -> np.ndarray | None:
    """The query's vector, or None without an embedder or when it fails (logged)."""
    if embedder is None:
        return None
    try:
        return await embed_query_async(embedder, query)
    except Exception:  # an unreachable embedding endpoint; full text still answers
        _log.warning("query embedding failed; searching by full text only", exc_info=True)
        return None


async def _text_candidates(
    engine: AsyncEngine,
    query: str,
    keys: list[str],
    limit: int,
    types: Sequence[str] | None,
    include_history: bool,
) -> list[tuple[str, float]]:
    async with engine.connect() as conn:
        # one read statement: no transaction to open and close around it
        conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
        return await text_candidates(
            conn, query, keys, limit=limit, types=types, include_history=include_history
        )


async def build_context(
    engine: AsyncEngine,
    embedder: Embedder | None,
    settings: Settings,
    *,
    query: str,
    scope_keys: Sequence[str],
    max_tokens: int,
    types: Sequence[str] | None = None,
    intent: Intent | str | None = None,
    live: Sequence[LiveWarning] = (),
    focus: CodeFocus | None = None,
    task_id: str | None = None,
) -> ContextOutcome:
    """Search, then render the best memories into one `[MEMORY CONTEXT]` block within `max_tokens`.

    `live` warnings of other tasks follow the memories in a section of their own (`_with_live`). With
    `task_id`, the block ends with the task's own short-term section (`short_term_section`), whose lines are
    measured first so the memories and the live section take the rest of the budget.
    """
    outcome = await search_memories(
        engine,
        embedder,
        settings,
        query=query,
        scope_keys=scope_keys,
        k=CONTEXT_CANDIDATES,
        types=types,
        intent=intent,
        focus=focus,
    )
    async with engine.connect() as conn:
        standings = await standings_of(conn, [h.id for h in outcome.hits])
    items = [
        ContextItem(
            citation=h.citation,
            memory_type=h.memory_type,
            title=h.title,
            content=h.content,
            created_at=h.created_at,
            confidence=h.confidence,
            stale=h.stale,
            standing=_standing(standings, h).value,
        )
        for h in outcome.hits
    ]
    guidance = await _guidance(
        engine, outcome.hits, scope_keys, standings, with_rules=types is None or "code_rule" in types
    )
    # an established rule speaks as a guidance line; its own line would only repeat it
    advised = {g.citation for g in guidance}
    items = [i for i in items if not (i.memory_type == "code_rule" and i.citation in advised)]
    lines = await short_term_section(engine, task_id) if task_id is not None else []
    reserved = short_term_budget(max_tokens) if lines else 0
    reserve = live_reserve(live, max_tokens - reserved)
    block = build_context_block(items, max_tokens=max_tokens - reserved - reserve, guidance=guidance)
    with_live = _with_live(ContextOutcome(block=block, search=outcome), live, max_tokens - reserved)
    if not lines:
        return with_live
    block = with_short_term(with_live.block, lines, max_tokens=max_tokens, section_tokens=reserved)
    return replace(with_live, block=block)


def _with_live(outcome: ContextOutcome, live: Sequence[LiveWarning], max_tokens: int) -> ContextOutcome:
    """The block with other tasks' unreviewed warnings after its memories, within the budget
    (governance/live.py): never above the published memory, never among its citations."""
    if not live:
        return outcome
    block, shown = add_live_section(outcome.block, live, max_tokens=max_tokens)
    return ContextOutcome(block=block, search=outcome.search, live=tuple(live[:shown]))


async def short_term_section(engine: AsyncEngine, task_id: str) -> list[str]:
    """The lines of the task's short-term section (governance/working_memory.py), priority first."""
    async with engine.connect() as conn:
        entries = await latest_entries(conn, task_id, SHORT_TERM_ENTRIES)
    return short_term_lines([StagedLine(e.seq, e.kind, e.content, e.payload) for e in entries])


def _standing(standings: dict[str, MemoryStanding], hit: SearchHit) -> Standing:
    found = standings.get(hit.id)
    return found.standing if found is not None else standing_of(None, hit.confidence)


async def _guidance(
    engine: AsyncEngine,
    hits: Sequence[SearchHit],
    scope_keys: Sequence[str],
    standings: dict[str, MemoryStanding],
    *,
    with_rules: bool,
) -> list[GuidanceLine]:
    """Try/avoid lines: the established code rules of the scopes, and the fixes of the bug patterns found,
    each from a human-approved or verified memory only (guidance is earned, governance/trust.py)."""
    hits = [h for h in hits if is_earned(_standing(standings, h))]
    bug_ids = [h.id for h in hits if h.memory_type == "bug_pattern"]
    async with engine.connect() as conn:
        rules = (
            await established_rules(
                conn, scope_keys=list(scope_keys), threshold=ESTABLISHED_RULE, limit=CONTEXT_RULES
            )
            if with_rules
            else []
        )
        stats = await bug_pattern_stats(conn, bug_ids)
    lines = [
        g
        for r in rules
        if is_earned(held := standing_of(r.validation_source, r.confidence, r.confirmers))
        and (g := rule_guidance(r.citation, r.content, r.confidence, standing=held)) is not None
    ]
    lines += [
        g
        for h in hits
        if h.memory_type == "code_rule"
        and (g := rule_guidance(h.citation, h.content, h.confidence, standing=_standing(standings, h)))
    ]
    for h in hits:
        if h.id in stats:
            signature, solutions = stats[h.id]
            lines += bug_pattern_guidance(
                h.citation,
                signature,
                solutions,
                content=h.content,
                standing=_standing(standings, h),
                trust=h.confidence,
            )
    return select_guidance(lines)


async def count_retrievals(engine: AsyncEngine, ids: Sequence[str]) -> None:
    """Raise retrieval counts after the answer went out; a failure here must never reach the reader."""
    if not ids:
        return
    try:
        async with engine.begin() as conn:
            await record_retrievals(conn, ids)
    except Exception:
        _log.warning("could not record %d retrievals", len(ids), exc_info=True)
