"""The read path over an engine and an embedder: intent → types, embed the query, search, build the context.

Authorisation is not decided here: api/services/search.py resolves the reader's task and the scope keys the
caller may read (through the Authorizer) and passes them in, so every gateway answers the same for the same
input. Benchmarks call these functions directly.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncEngine

from governance.adapters.embedders import Embedder, embed_query_async
from governance.config import Settings
from governance.context_block import ContextBlock, ContextItem, build_context_block
from governance.errors import InvalidInput
from governance.intent import Intent, IntentDecision, detect_intent
from governance.ranking import RankingParams, ScoreWeights
from governance.storage.retrieval import SearchHit, record_retrievals, search

__all__ = [
    "SearchOutcome",
    "ContextOutcome",
    "ranking_params",
    "resolve_types",
    "search_memories",
    "build_context",
    "count_retrievals",
]

_log = logging.getLogger("loregate.reading")

# A context block draws from more memories than a search page shows: the budget, not k, decides what fits.
CONTEXT_CANDIDATES = 30


@dataclass(frozen=True)
class SearchOutcome:
    """Ranked hits and how the query was routed (intent and the memory types searched; None = all)."""

    hits: list[SearchHit]
    intent: Intent
    types: tuple[str, ...] | None
    vector_used: bool
    widened: bool = False  # the detected intent's types matched nothing, so every type was searched


@dataclass(frozen=True)
class ContextOutcome:
    """The block and the search it was built from."""

    block: ContextBlock
    search: SearchOutcome


def ranking_params(settings: Settings) -> RankingParams:
    """The configured weights, half-life and RRF constant."""
    return RankingParams(
        weights=ScoreWeights(
            similarity=settings.search_weight_similarity,
            recency=settings.search_weight_recency,
            importance=settings.search_weight_importance,
        ),
        half_life_hours=settings.search_recency_half_life_hours,
        rrf_k=settings.search_rrf_k,
    )


def resolve_types(
    query: str, types: Sequence[str] | None, intent: Intent | str | None
) -> tuple[Intent, tuple[str, ...] | None]:
    """Explicit types win; else an explicit intent; else the intent detected from the query."""
    if intent is not None:
        try:
            decision = IntentDecision(Intent(intent), ())
        except ValueError as exc:
            raise InvalidInput(f"unknown intent {intent!r}; one of {[i.value for i in Intent]}") from exc
    else:
        decision = detect_intent(query)
    if types:
        return decision.intent, tuple(dict.fromkeys(str(t) for t in types))
    chosen = decision.types
    return decision.intent, tuple(t.value for t in chosen) if chosen is not None else None


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
) -> SearchOutcome:
    """Route, embed and search. An embedder failure degrades to full text only: reads must not stop."""
    chosen_intent, chosen_types = resolve_types(query, types, intent)
    vector = None
    if embedder is not None:
        try:
            vector = await embed_query_async(embedder, query)
        except Exception:  # an unreachable embedding endpoint; full text still answers
            _log.warning("query embedding failed; searching by full text only", exc_info=True)
    async with engine.begin() as conn:  # a transaction: SET LOCAL hnsw.ef_search lives inside it

        async def run(only: tuple[str, ...] | None) -> list[SearchHit]:
            return await search(
                conn,
                query,
                vector,
                list(scope_keys),
                k,
                only,
                include_history,
                params=ranking_params(settings),
                candidates=max(settings.search_candidates, k),
                now=now,
            )

        hits = await run(chosen_types)
        # A detected intent narrows the search; it must not leave the reader with nothing (a "how do we
        # deploy" question in a project whose knowledge is all episodes). Asked-for types stay strict.
        widened = not hits and chosen_types is not None and not types and intent is None
        if widened:
            hits = await run(None)
    return SearchOutcome(
        hits=hits, intent=chosen_intent, types=chosen_types, vector_used=vector is not None, widened=widened
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
) -> ContextOutcome:
    """Search, then render the best memories into one `[MEMORY CONTEXT]` block within `max_tokens`."""
    outcome = await search_memories(
        engine,
        embedder,
        settings,
        query=query,
        scope_keys=scope_keys,
        k=CONTEXT_CANDIDATES,
        types=types,
        intent=intent,
    )
    items = [
        ContextItem(
            citation=h.citation,
            memory_type=h.memory_type,
            title=h.title,
            content=h.content,
            created_at=h.created_at,
            confidence=h.confidence,
        )
        for h in outcome.hits
    ]
    return ContextOutcome(block=build_context_block(items, max_tokens=max_tokens), search=outcome)


async def count_retrievals(engine: AsyncEngine, ids: Sequence[str]) -> None:
    """Raise retrieval counts after the answer went out; a failure here must never reach the reader."""
    if not ids:
        return
    try:
        async with engine.begin() as conn:
            await record_retrievals(conn, ids)
    except Exception:
        _log.warning("could not record %d retrievals", len(ids), exc_info=True)
