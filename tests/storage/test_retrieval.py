"""Hybrid retrieval on real Postgres+pgvector with the real embedder: visibility, lifecycle, fusion."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.adapters.embedders import Embedder, make_embedder
from governance.config import Settings
from governance.errors import NotFound
from governance.scopes import Scope
from governance.storage.fulltext import PLAIN_WORD_WEIGHT, fulltext_query, fulltext_terms, text_candidates
from governance.storage.retrieval import get_memory, parse_memory_ref, reader_scope, record_retrievals, search
from tests.utils.memory_factories import TaskRef, add_entries, add_memory, new_task

POOL = "Connection pool exhausted: raise the pool size of the database engine to 20"


@pytest.fixture(scope="module")
def embedder(settings: Settings) -> Embedder:
    return make_embedder(settings)


@pytest.fixture(scope="module")
async def world(engine: AsyncEngine, embedder: Embedder) -> dict[str, Any]:
    """Tenants A (two tasks), B (same org, other project), C (other org); memories at every scope."""
    texts = {
        "task": "Task note: connection pool exhausted while running the load test; pool size was 5",
        "other_task": "Other task note: connection pool exhausted in the nightly job",
        "worktree": "Worktree main: database connection pool exhausted after the ORM upgrade",
        "project": POOL,
        "org": "Org rule: every service sets a database connection pool limit and a statement timeout",
        "other_project": "Project B: connection pool exhausted, raise the database pool size",
        "other_org": "Other org: database connection pool exhausted, pool size raised",
        "deprecated": "Old advice: connection pool exhausted means restart the database",
        "expired": "Until the Q3 freeze: connection pool exhausted is expected during migration",
        "error_code": "Checkout fails with LG-7731 when the cart service returns an empty basket",
        "korean": "결제 서비스는 재시도할 때 멱등성 키를 반드시 사용해야 한다",
        "preference": "We prefer ruff over black for formatting python code",
    }
    vectors = dict(zip(texts, embedder.embed_passages(list(texts.values())), strict=True))
    now = datetime.now(UTC)
    async with engine.begin() as conn:
        t1 = await new_task(conn)
        t2 = await new_task(conn, org=t1.org, project=t1.project)
        tb = await new_task(conn, org=t1.org)
        tc = await new_task(conn)
        entries = await add_entries(
            conn, t1, ["pool size 5 fails at 200 rps", "pool size 20 holds at 200 rps"]
        )
        m: dict[str, dict[str, str]] = {}

        async def put(name: str, task: TaskRef, scope: Scope, **kw: Any) -> None:
            m[name] = await add_memory(
                conn,
                task,
                title=name.replace("_", " "),
                content=texts[name],
                embedding=vectors[name],
                scope=scope,
                **kw,
            )

        await put("task", t1, Scope.TASK)
        await put("other_task", t2, Scope.TASK)
        await put("worktree", t1, Scope.WORKTREE)
        await put("deprecated", t1, Scope.PROJECT, deprecated_at=now - timedelta(days=1))
        await put("project", t1, Scope.PROJECT, source_entry_ids=entries, supersedes_id=m["deprecated"]["id"])
        await put("org", t1, Scope.ORG)
        await put("other_project", tb, Scope.PROJECT)
        await put("other_org", tc, Scope.ORG)
        await put("expired", t1, Scope.PROJECT, expires_at=now - timedelta(hours=1))
        await put("error_code", t1, Scope.PROJECT, memory_type="bug_pattern")
        await put("korean", t1, Scope.PROJECT, memory_type="code_rule")
        await put("preference", t1, Scope.PROJECT, memory_type="preference")
    return {"t1": t1, "t2": t2, "m": m, "embedder": embedder}


def cites(world: dict[str, Any], *names: str) -> set[str]:
    return {world["m"][n]["citation"] for n in names}


async def run(engine: AsyncEngine, world: dict[str, Any], query: str, **kw: Any) -> list[Any]:
    vector = world["embedder"].embed_query(query)
    async with engine.connect() as conn:
        scope = await reader_scope(conn, world["t1"].task_id)
        return await search(conn, query, vector, scope.scope_keys, kw.pop("k", 50), **kw)


async def test_search_reader_sees_task_worktree_project_org_only(
    engine: AsyncEngine, world: dict[str, Any]
) -> None:
    hits = await run(engine, world, "database connection pool exhausted")
    found = {h.citation for h in hits}
    assert cites(world, "task", "worktree", "project", "org") <= found
    assert not found & cites(world, "other_task", "other_project", "other_org")


async def test_search_leaves_out_deprecated_and_expired(engine: AsyncEngine, world: dict[str, Any]) -> None:
    found = {h.citation for h in await run(engine, world, "connection pool exhausted")}
    assert not found & cites(world, "deprecated", "expired")


async def test_search_include_history_returns_deprecated_and_expired(
    engine: AsyncEngine, world: dict[str, Any]
) -> None:
    found = {h.citation for h in await run(engine, world, "connection pool exhausted", include_history=True)}
    assert cites(world, "deprecated", "expired") <= found
    assert not found & cites(world, "other_project", "other_org")


async def test_search_types_restrict_memory_types(engine: AsyncEngine, world: dict[str, Any]) -> None:
    hits = await run(engine, world, "how should we format python code", types=["preference"])
    assert [h.citation for h in hits] == [world["m"]["preference"]["citation"]]


async def test_search_exact_error_code_ranks_first_by_full_text(
    engine: AsyncEngine, world: dict[str, Any]
) -> None:
    hits = await run(engine, world, "what does LG-7731 mean", k=3)
    assert hits[0].citation == world["m"]["error_code"]["citation"]
    assert hits[0].text_rank == 1


async def test_search_korean_query_finds_korean_memory(engine: AsyncEngine, world: dict[str, Any]) -> None:
    hits = await run(engine, world, "결제 재시도 멱등성", k=3)
    assert hits[0].citation == world["m"]["korean"]["citation"]


async def test_search_score_parts_add_up_to_score(engine: AsyncEngine, world: dict[str, Any]) -> None:
    hits = await run(engine, world, "connection pool exhausted", k=5)
    scores = [h.parts.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    for h in hits:
        p = h.parts
        assert p.score == pytest.approx(
            p.similarity + 0.015 * p.recency + 0.015 * p.importance + 0.02 * p.usefulness
        )
        assert p.importance == pytest.approx(h.importance * h.confidence)
        assert 0.0 < p.similarity <= 1.0 and 0.9 < p.recency <= 1.0
        assert h.cosine is not None and h.vector_rank is not None


async def test_search_most_relevant_stays_first_when_a_less_relevant_one_is_newer_and_trusted(
    engine: AsyncEngine, embedder: Embedder
) -> None:
    # the answer is a year old, unimportant, distrusted and unliked; a near-miss is new, important, trusted
    # and liked: within the documented bounds, relevance still decides
    answer = "Checkout retries a declined card three times with exponential backoff before giving up"
    other = "Checkout sends a receipt email after the payment succeeds"
    query = "how many times does checkout retry a declined card"
    vectors = embedder.embed_passages([answer, other])
    now = datetime.now(UTC)
    async with engine.begin() as conn:
        task = await new_task(conn)
        best = await add_memory(
            conn, task, title="card retries", content=answer, embedding=vectors[0], importance=0.0,
            confidence=0.1, usefulness=0.0, created_at=now - timedelta(days=365),
        )  # fmt: skip
        await add_memory(
            conn, task, title="receipts", content=other, embedding=vectors[1], importance=1.0, confidence=1.0,
            usefulness=1.0, created_at=now,
        )  # fmt: skip
        keys = (await reader_scope(conn, task.task_id)).scope_keys
        hits = await search(conn, query, embedder.embed_query(query), keys, 5)
    assert [h.citation for h in hits][0] == best["citation"]
    assert hits[0].parts.recency < 0.01 < hits[1].parts.recency


async def test_search_old_memory_loses_recency(engine: AsyncEngine, world: dict[str, Any]) -> None:
    later = datetime.now(UTC) + timedelta(hours=48)
    hits = await run(engine, world, "connection pool exhausted", now=later)
    assert all(h.parts.recency == pytest.approx(0.25, abs=0.01) for h in hits)


async def test_search_without_vector_uses_full_text(engine: AsyncEngine, world: dict[str, Any]) -> None:
    async with engine.connect() as conn:
        scope = await reader_scope(conn, world["t1"].task_id)
        hits = await search(conn, "LG-7731", None, scope.scope_keys, 5)
    assert [h.citation for h in hits] == [world["m"]["error_code"]["citation"]]
    assert hits[0].cosine is None


async def test_record_retrievals_counts_each_memory_once(engine: AsyncEngine, world: dict[str, Any]) -> None:
    ids = [world["m"]["org"]["id"], world["m"]["project"]["id"]]
    async with engine.begin() as conn:
        assert await record_retrievals(conn, ids + ids[:1]) == 2
    async with engine.connect() as conn:
        counts = (
            (
                await conn.execute(
                    text("SELECT retrieval_count FROM memories WHERE id = ANY(CAST(:ids AS uuid[]))"),
                    {"ids": ids},
                )
            )
            .scalars()
            .all()
        )
    assert list(counts) == [1, 1]


async def test_get_memory_by_citation_has_provenance_and_history(
    engine: AsyncEngine, world: dict[str, Any]
) -> None:
    ref = world["m"]["project"]
    async with engine.connect() as conn:
        detail = await get_memory(conn, f"mem:{ref['citation']}")
        by_id = await get_memory(conn, ref["id"])
    assert detail.memory["id"] == by_id.memory["id"] == ref["id"]
    assert detail.memory["content"] == POOL
    assert [e["content"] for e in detail.provenance] == [
        "pool size 5 fails at 200 rps",
        "pool size 20 holds at 200 rps",
    ]
    assert detail.provenance[0]["task_id"] == world["t1"].task_id
    assert [h["citation"] for h in detail.history] == [world["m"]["deprecated"]["citation"], ref["citation"]]
    assert [h["is_this"] for h in detail.history] == [False, True]


async def test_get_memory_of_superseded_shows_successor(engine: AsyncEngine, world: dict[str, Any]) -> None:
    async with engine.connect() as conn:
        detail = await get_memory(conn, world["m"]["deprecated"]["citation"])
    assert detail.memory["deprecated_at"] is not None
    assert [h["citation"] for h in detail.history][-1] == world["m"]["project"]["citation"]


async def test_get_memory_unknown_is_not_found(engine: AsyncEngine) -> None:
    async with engine.connect() as conn:
        with pytest.raises(NotFound):
            await get_memory(conn, "mem:nope0000")
        with pytest.raises(NotFound):
            await get_memory(conn, str(uuid.uuid4()))


async def test_reader_scope_unknown_task_is_not_found(engine: AsyncEngine) -> None:
    async with engine.connect() as conn:
        with pytest.raises(NotFound):
            await reader_scope(conn, "no-such-task")


def test_parse_memory_ref_accepts_citation_forms() -> None:
    u = str(uuid.uuid4())
    assert parse_memory_ref("[mem:ab12cd]") == ("citation", "ab12cd")
    assert parse_memory_ref("ab12cd") == ("citation", "ab12cd")
    assert parse_memory_ref(u.upper()) == ("id", u)


def test_fulltext_query_drops_function_words() -> None:
    assert fulltext_query("What does the LG-7731 error mean?") == "lg-7731 or error or mean"
    assert fulltext_query("the of and") is None


def test_fulltext_terms_identifiers_vote_fully() -> None:
    assert dict(fulltext_terms("MAX_INFLIGHT too low in ledger")) == {
        "max_inflight": 1.0,
        "low": PLAIN_WORD_WEIGHT,
        "ledger": PLAIN_WORD_WEIGHT,
    }


async def test_text_candidates_identifier_match_outranks_shared_words(
    engine: AsyncEngine, world: dict[str, Any]
) -> None:
    async with engine.connect() as conn:
        scope = await reader_scope(conn, world["t1"].task_id)
        hits = await text_candidates(conn, "checkout LG-7731 connection pool", scope.scope_keys, limit=10)
    assert hits[0][0] == world["m"]["error_code"]["id"]
    assert hits[0][1] > hits[1][1]
