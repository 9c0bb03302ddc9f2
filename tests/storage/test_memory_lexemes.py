"""`memory_lexemes`: the full-text document frequencies triggers keep, and the retriever that reads them."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from governance.scopes import Scope
from governance.storage import fulltext
from governance.storage.fulltext import (
    driving_clauses,
    driving_terms,
    expected_matches,
    term_frequencies,
    text_candidates,
)
from governance.storage.memory_rows import lock_scopes
from governance.storage.migrate import upgrade_head
from governance.storage.retrieval import record_retrievals
from tests.utils.memory_factories import TaskRef, add_memory, new_task

# what the triggers must keep: per scope and lexeme, the live memories holding it ('' counts them all)
TRUTH = """SELECT m.scope_key, lexeme, count(*)::int AS memories
    FROM memories AS m, unnest(array_append(tsvector_to_array(m.tsv), '')) AS lexeme
    WHERE m.deprecated_at IS NULL GROUP BY 1, 2"""
KEPT = "SELECT scope_key, lexeme, memories FROM memory_lexemes"


async def _assert_true(conn: AsyncConnection) -> None:
    truth = {tuple(r) for r in (await conn.execute(text(TRUTH))).all()}
    kept = {tuple(r) for r in (await conn.execute(text(KEPT))).all()}
    assert kept == truth, f"missing {sorted(truth - kept)[:5]}, wrong {sorted(kept - truth)[:5]}"


async def _memory(conn: AsyncConnection, task: TaskRef, content: str, **extra: Any) -> str:
    row = await add_memory(conn, task, title=content.split()[0], content=content, embedding=None, **extra)
    return row["id"]


async def test_every_kind_of_write_keeps_the_counts_true(engine: AsyncEngine) -> None:
    async with engine.begin() as conn:
        task = await new_task(conn)
        first = await _memory(conn, task, "Checkout retries use idempotency keys LG-7731")
        second = await _memory(conn, task, "Checkout deploys run through the blue pipeline")
        await _memory(conn, task, "Old checkout advice", deprecated_at=datetime.now(UTC))
        await _assert_true(conn)
        # an erasure rewrites text; a supersession deprecates; retention deletes; a search counts
        await conn.execute(
            text("UPDATE memories SET content = 'Checkout retries use [erased]' WHERE id = :id"),
            {"id": first},
        )
        await _assert_true(conn)
        await conn.execute(text("UPDATE memories SET deprecated_at = now() WHERE id = :id"), {"id": second})
        await _assert_true(conn)
        await conn.execute(text("UPDATE memories SET deprecated_at = NULL WHERE id = :id"), {"id": second})
        await _assert_true(conn)
        await record_retrievals(conn, [first, second])
        await _assert_true(conn)
        await conn.execute(
            text("DELETE FROM memories WHERE id = ANY(CAST(:ids AS uuid[]))"), {"ids": [first]}
        )
        await _assert_true(conn)
        live, frequencies = await term_frequencies(
            conn, ["checkout", "lg-7731", "pipeline"], [task.key(Scope.PROJECT)]
        )
    assert (live, frequencies) == (1, [1, 0, 1])


async def test_the_words_of_erased_text_do_not_outlive_it(engine: AsyncEngine) -> None:
    """An erasure rewrites or deletes memories: a word no live memory holds leaves the counts at once."""
    async with engine.begin() as conn:
        task = await new_task(conn)
        rewritten = await _memory(conn, task, "Escalate to quillon-marwick when the ledger drifts")
        deleted = await _memory(conn, task, "Pager of vessarine-oyelowo rotates weekly")
        await conn.execute(
            text(
                "UPDATE memories SET content = 'Escalate to [erased] when the ledger drifts' WHERE id = :id"
            ),
            {"id": rewritten},
        )
        await conn.execute(text("DELETE FROM memories WHERE id = CAST(:id AS uuid)"), {"id": deleted})
        left = (
            await conn.execute(
                text(
                    "SELECT lexeme FROM memory_lexemes "
                    "WHERE lexeme LIKE ANY(ARRAY['%quillon%', '%vessarine%'])"
                )
            )
        ).all()
        await _assert_true(conn)
    assert left == []


async def test_parallel_writers_keep_the_counts_true(engine: AsyncEngine) -> None:
    """Twelve writers at once: six into one scope (under its lock, as publication takes it), six apart."""
    async with engine.begin() as conn:
        shared = await new_task(conn)
        apart = [await new_task(conn) for _ in range(6)]

    async def write(task: TaskRef, n: int, *, lock: bool) -> None:
        async with engine.begin() as conn:
            if lock:
                await lock_scopes(conn, task.key(Scope.PROJECT))
            for i in range(n):
                await _memory(conn, task, f"Writer {uuid.uuid4().hex[:6]} deploys checkout build {i} nightly")

    await asyncio.gather(
        *(write(shared, 5, lock=True) for _ in range(6)), *(write(t, 5, lock=False) for t in apart)
    )
    async with engine.begin() as conn:
        await _assert_true(conn)
        live, frequencies = await term_frequencies(conn, ["deploys", "nightly"], [shared.key(Scope.PROJECT)])
    assert (live, frequencies) == (30, [30, 30])


async def test_truncate_empties_the_counts(pg_server: Any) -> None:
    name = f"lexicon_{uuid.uuid4().hex[:12]}"
    pg_server.psql(f"CREATE DATABASE {name};")
    url = str(pg_server.get_uri(name))
    try:
        upgrade_head(url)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(
                "INSERT INTO memories (id, citation, memory_type, scope, scope_key, org, title, content, "
                "content_hash, confidence) VALUES (gen_random_uuid(), 'c1', 'fact', 'org', 'org:o', 'o', "
                "'t', 'some words here', 'h', 0.5)"
            )
            # 't', 'some', 'words', 'here' and '' (the memory itself)
            assert conn.execute("SELECT count(*) FROM memory_lexemes").fetchone() == (5,)
            conn.execute("TRUNCATE memories CASCADE")
            assert conn.execute("SELECT count(*) FROM memory_lexemes").fetchone() == (0,)
    finally:
        pg_server.psql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE);")


async def test_a_large_match_set_is_not_visited_for_its_common_words(
    engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over the budget, only memories holding the identifier are visited, ranked as counting ranks them."""
    async with engine.begin() as conn:
        task = await new_task(conn)
        holder = await _memory(conn, task, "Rollout of ZX-4411 stalls the deploy pipeline at canary")
        with_identifier = await _memory(conn, task, "ZX-4411 was renamed last spring")
        common = [
            await _memory(conn, task, f"The deploy pipeline gate {i} waits for review") for i in range(6)
        ]
        keys = [task.key(s) for s in Scope]
        counted = await text_candidates(conn, "deploy pipeline ZX-4411", keys, limit=20)
        monkeypatch.setattr(fulltext, "MATCH_BUDGET", 3)
        estimated = await text_candidates(conn, "deploy pipeline ZX-4411", keys, limit=20)
    assert [i for i, _ in counted][:2] == [holder, with_identifier]
    assert {i for i, _ in counted[2:]} == set(common)
    assert [i for i, _ in estimated] == [holder, with_identifier]
    assert estimated[0][1] > estimated[1][1] > 0


def test_driving_terms_take_identifiers_and_the_rarest_words_within_the_budget() -> None:
    terms = [("deploy", 0.1), ("zx-4411", 1.0), ("canary", 0.1), ("pipeline", 0.1), ("unknown", 0.1)]
    frequencies = [4000, 30, 200, 900, 0]
    assert driving_terms(terms, frequencies, 1000) == [1, 2]  # 30 + 200; pipeline would bring 900 more
    assert driving_terms(terms, frequencies, 2000) == [1, 2, 3]
    assert driving_terms([("deploy", 0.1), ("gate", 0.1)], [4000, 3000], 1000) == [1]  # the rarest always
    assert driving_terms([("zx-4411", 1.0), ("ab-1", 1.0)], [5000, 4000], 10) == [0, 1]
    assert driving_terms([("unknown", 0.1)], [0], 1000) == []


def test_expected_matches_is_the_union_of_independent_terms() -> None:
    assert expected_matches(1000, [100]) == pytest.approx(100)
    assert expected_matches(1000, [100, 100]) == pytest.approx(190)  # 1000 · (1 − 0.9²)
    assert expected_matches(1000, [1000, 5]) == pytest.approx(1000)
    assert expected_matches(0, [3]) == 0


async def test_history_is_searched_by_words_only_deprecated_memories_hold(engine: AsyncEngine) -> None:
    """The counts are of live memories; a search with history still finds a superseded memory's words."""
    async with engine.begin() as conn:
        task = await new_task(conn)
        old = await _memory(
            conn, task, "Deploys used the brindlewood runner", deprecated_at=datetime.now(UTC)
        )
        keys = [task.key(s) for s in Scope]
        live = await text_candidates(conn, "brindlewood runner", keys, limit=10)
        history = await text_candidates(conn, "brindlewood runner", keys, limit=10, include_history=True)
    assert live == []
    assert [i for i, _ in history] == [old]


async def test_a_crowded_identifier_is_visited_only_beside_other_words(
    engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Memories holding only an identifier many memories repeat tie, and their group is cut: not visited."""
    async with engine.begin() as conn:
        task = await new_task(conn)
        both = await _memory(conn, task, "QV-2210 canary rollout halted by the health gate")
        for i in range(7):
            await _memory(conn, task, f"QV-2210 service note number {i}")
        keys = [task.key(s) for s in Scope]
        counted = [await text_candidates(conn, q, keys, limit=4) for q in ("QV-2210 canary", "QV-2210")]
        monkeypatch.setattr(fulltext, "MATCH_BUDGET", 3)
        estimated = [await text_candidates(conn, q, keys, limit=4) for q in ("QV-2210 canary", "QV-2210")]
        wider = await text_candidates(conn, "QV-2210 canary", keys, limit=20)  # the group fits: visited
    assert [[i for i, _ in hits] for hits in counted] == [[both], []]
    assert [[i for i, _ in hits] for hits in estimated] == [[both], []]
    assert len(wider) == 8 and wider[0][0] == both


def test_driving_clauses_pair_a_crowded_identifier_with_the_other_words() -> None:
    terms = [("qv-2210", 1.0), ("canary", 0.1), ("rollout", 0.1)]
    assert driving_clauses(terms, [5000, 40, 0], [0, 1], 1000, limit=50, typed=False) == [
        "(w0 && (w1))",
        "w1",
    ]
    assert driving_clauses(terms, [500, 40, 0], [0, 1], 1000, limit=50, typed=False) == ["w0", "w1"]
    assert driving_clauses(terms, [5000, 40, 0], [0, 1], 1000, limit=50, typed=True) == ["w0", "w1"]
    assert driving_clauses(terms[:1], [5000], [0], 1000, limit=50, typed=False) == []
