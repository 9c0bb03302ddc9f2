"""The read path's use cases: hybrid search, the cited context block, and a memory by id or citation.

The reader's task fixes org, project and worktree; the caller needs `read` in that tenant (Casbin), and each
scope (task, worktree, project, org) is searched only if the policy lets the caller read it, so a deny row for
one scope hides exactly that scope. Retrieval counts rise after the answer is sent (`count_retrievals`).
"""

from __future__ import annotations

from typing import Any

from api.schemas.search import (
    CompactResultPublic,
    ContextIn,
    ContextPublic,
    MemoryPublic,
    ScorePartsPublic,
    SearchIn,
    SearchPublic,
    SearchResultPublic,
)
from api.services import live, reading, working_memory
from api.services.gateway import (
    GatewayResources,
    admit,
    authorize_memory,
    authorized_task,
    load_task,
    readable_scope_keys,
)
from api.services.metrics import SEARCH_SECONDS
from governance.adapters.embedders import EMBEDDING_TENANT, make_embedder
from governance.code_locations import normalise_path, text_key
from governance.config import Settings
from governance.errors import InvalidInput
from governance.identity import Principal
from governance.redaction import redact, redact_json
from governance.scopes import Scope
from governance.staging import public_task_id
from governance.storage.episodes import episode_of
from governance.storage.retrieval import SearchHit, get_memory
from governance.storage.staging import get_tasks

__all__ = [
    "code_focus",
    "search",
    "context",
    "count_retrievals",
    "show_memory",
    "public_hit",
    "provenance_entry",
]


def _k(requested: int | None, settings: Settings) -> int:
    k = requested or settings.search_default_k
    if k > settings.search_max_k:
        raise InvalidInput(f"k must be at most {settings.search_max_k}")
    return k


def public_hit(hit: SearchHit) -> SearchResultPublic:
    """A ranked hit as the API shows it, with the parts of its score."""
    p = hit.parts
    return SearchResultPublic.model_validate(
        {
            **{name: getattr(hit, name) for name in SearchResultPublic.model_fields if hasattr(hit, name)},
            "type": hit.memory_type,
            "stale": hit.stale,
            "score": p.score,
            "score_parts": ScorePartsPublic(
                similarity=p.similarity,
                recency=p.recency,
                importance=p.importance,
                usefulness=p.usefulness,
                type_weight=p.type_weight,
                stale_weight=p.stale_weight,
            ),
        }
    )


async def code_focus(
    resources: GatewayResources,
    principal: Principal,
    task_id: str,
    files: list[str] | None,
    symbols: list[str] | None,
    only: bool,
) -> reading.CodeFocus | None:
    """The files and symbols a read is about, as the tasks of the reader's project that touched them (None
    when it names none)."""
    if not files and not symbols:
        if only:
            raise InvalidInput("code_filter needs files or symbols")
        return None
    task = await authorized_task(resources, principal, task_id, "read")
    paths = [p for p in (normalise_path(f) for f in files or []) if p]
    names = [" ".join(s.split()) for s in symbols or [] if s.strip()]
    touched = await working_memory.touching_tasks(resources, task, files=paths, symbols=names)
    # a memory may name a file, or a symbol long enough not to be an everyday word
    return reading.CodeFocus(
        touched=touched,
        names=tuple([text_key(p) for p in paths] + [n for n in names if len(n) >= 4]),
        only=only,
        files=tuple(paths),
        symbols=tuple(names),
    )


async def search(
    resources: GatewayResources, principal: Principal, body: SearchIn, *, compact: bool = False
) -> tuple[SearchPublic, list[str]]:
    """Hybrid search over what the task sees; returns the answer and the ids whose retrieval count rises."""
    keys = await readable_scope_keys(resources, principal, body.task_id)
    focus = await code_focus(resources, principal, body.task_id, body.files, body.symbols, body.code_filter)
    admit(resources, principal, "search")
    EMBEDDING_TENANT.set(principal.org)  # the embedder takes tenants in turn (FairEmbedder)
    settings = resources.settings
    with SEARCH_SECONDS.labels("search").time():
        outcome = await reading.search_memories(
            resources.engine,
            make_embedder(settings),
            settings,
            query=body.query,
            scope_keys=keys,
            k=_k(body.k, settings),
            types=[t.value for t in body.types] if body.types else None,
            intent=body.intent,
            include_history=body.include_history,
            focus=focus,
        )
    results: list[SearchResultPublic] | list[CompactResultPublic]
    if compact or body.compact:
        results = [
            CompactResultPublic(citation=h.citation, title=h.title, type=h.memory_type, score=h.parts.score)
            for h in outcome.hits
        ]
    else:
        results = [public_hit(h) for h in outcome.hits]
    types = list(outcome.types) if outcome.types is not None else None
    preferred = list(outcome.preferred_types) if outcome.preferred_types is not None else None
    answer = SearchPublic(
        query=body.query,
        intent=outcome.intent,
        types=types,
        preferred_types=preferred,
        results=results,
    )
    return answer, [h.id for h in outcome.hits]


async def context(
    resources: GatewayResources, principal: Principal, body: ContextIn
) -> tuple[ContextPublic, list[str]]:
    """The `[MEMORY CONTEXT]` block within budget; returns it and the ids of the memories it cites."""
    settings = resources.settings
    max_tokens = body.max_tokens or settings.context_default_max_tokens
    if max_tokens > settings.context_max_tokens_limit:
        raise InvalidInput(f"max_tokens must be at most {settings.context_max_tokens_limit}")
    keys = await readable_scope_keys(resources, principal, body.task_id)
    focus = await code_focus(resources, principal, body.task_id, body.files, body.symbols, body.code_filter)
    admit(resources, principal, "search")
    EMBEDDING_TENANT.set(principal.org)
    with SEARCH_SECONDS.labels("context").time():
        # other tasks' unreviewed warnings: a section of their own, after the published memories
        task = await load_task(resources, principal, body.task_id)  # authorised above (readable_scope_keys)
        warnings = await live.context_warnings(resources, principal, task, body.query)
        outcome = await reading.build_context(
            resources.engine,
            make_embedder(settings),
            settings,
            query=body.query,
            scope_keys=keys,
            max_tokens=max_tokens,
            types=[t.value for t in body.types] if body.types else None,
            intent=body.intent,
            live=warnings,
            focus=focus,
            task_id=task.id if body.short_term else None,
        )
    cited = set(outcome.block.citations)
    answer = ContextPublic(
        context=outcome.block.text,
        citations=outcome.block.citations,
        tokens=outcome.block.tokens,
        max_tokens=max_tokens,
        intent=outcome.search.intent,
        live=[live.public_warning(w) for w in outcome.live],
    )
    return answer, [h.id for h in outcome.search.hits if h.citation in cited]


async def count_retrievals(resources: GatewayResources, ids: list[str]) -> None:
    """Raise the retrieval counts of returned memories (run after the answer is sent)."""
    await reading.count_retrievals(resources.engine, ids)


async def show_memory(resources: GatewayResources, principal: Principal, ref: str) -> MemoryPublic:
    """A memory with its source staging entries and supersession history (progressive disclosure)."""
    async with resources.engine.connect() as conn:
        detail = await get_memory(conn, ref)
    memory = detail.memory
    # an org memory is judged in the caller's own project; a caller who may not read it gets a 404
    authorize_memory(
        resources,
        principal,
        ref,
        org=memory["org"],
        project=memory["project"],
        scope=memory["scope"],
        action="read",
    )
    async with resources.engine.connect() as conn:
        tasks = await get_tasks(conn, sorted({str(e["task_id"]) for e in detail.provenance}))
    readable = {
        task.id
        for task in tasks.values()
        if resources.authorizer.allowed(
            principal, org=task.org, project=task.project, scope=Scope.TASK, action="read"
        )
    }
    provenance = [
        {
            **provenance_entry(entry, raw=entry["task_id"] in readable),
            "task_id": public_task_id(entry["task_id"]),
        }
        for entry in detail.provenance
    ]
    # tasks by the ids their tenant gave them (the keys stay inside; governance/staging.task_key)
    memory = {**memory, "source_task_ids": [public_task_id(t) for t in memory["source_task_ids"] or []]}
    async with resources.engine.connect() as conn:
        episode = await episode_of(conn, str(memory["id"]))
    return MemoryPublic.model_validate(
        {
            "memory": memory,
            "provenance": provenance,
            "history": detail.history,
            "episode": episode.structure if episode is not None else None,
        }
    )


def provenance_entry(entry: dict[str, Any], *, raw: bool) -> dict[str, Any]:
    """A source staging entry as this caller may see it.

    Staging is private to its task: only a principal who may read the task's staging gets the entry as
    written. Everyone else who may read the memory (an org memory's readers in other projects, say) gets
    the content and payload redacted as promotion redacts them (`<private>` spans and secrets removed).
    """
    if raw:
        return {**entry, "redacted": False}
    payload = entry.get("payload")
    return {
        **entry,
        "content": redact(str(entry.get("content") or "")).text,
        "payload": redact_json(payload)[0] if payload is not None else None,
        "redacted": True,
    }
