"""What publish reads of a plan's chunk (`publish_rows`): each item with its own candidate and embedding, in
plan order, read by key lookups whatever the tables' statistics."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Any

import numpy as np
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.cognify import Candidate
from governance.storage.plan_items import PlanItemToWrite, publish_rows, save_plan_items
from governance.storage.plans import PlanKey, load_candidates, save_candidates

DIM = 384


def _vectors(n: int, seed: int) -> list[list[float]]:
    rng = np.random.default_rng(seed)
    v = rng.standard_normal((n, DIM)).astype(np.float32)
    return [[float(x) for x in row] for row in v / np.linalg.norm(v, axis=1, keepdims=True)]


def _candidates(n: int, tag: str) -> list[Candidate]:
    return [
        Candidate(
            ("fact", "decision", "episode")[i % 3],
            f"{tag} title {i}",
            f"{tag} content {i}",
            canonical_key=f"key.{i}" if i % 3 == 1 else None,
            importance=0.25 + (i % 4) / 8,
            source_entry_ids=[1000 + i, 2000 + i] if i % 2 else [1000 + i],
            expires_at=datetime(2030, 1, 1 + i % 28, tzinfo=UTC) if i % 5 == 0 else None,
            structure={"goal": f"goal {i}"} if i % 3 == 2 else None,
        )
        for i in range(n)
    ]


async def _plan(engine: AsyncEngine, key: PlanKey, candidates: list[Candidate], order: list[int]) -> None:
    """Plan item `n` plans candidate `order[n]`; the embedding of item `n` is `_vectors(...)[n]`."""
    vectors = _vectors(len(order), seed=len(order))
    async with engine.begin() as conn:
        await save_candidates(conn, key, "task", candidates)
        for start in range(0, len(order), 256):
            await save_plan_items(
                conn,
                key,
                [
                    PlanItemToWrite(n, order[n], "new", None, None, "new", f"{n:064x}", vectors[n])
                    for n in range(start, min(len(order), start + 256))
                ],
            )


async def test_each_item_comes_with_its_own_candidate_and_embedding(engine: AsyncEngine) -> None:
    workflow_id = f"promote-{uuid.uuid4().hex}"
    key, other = PlanKey(workflow_id, "run-2"), PlanKey(workflow_id, "run-1")
    candidates = _candidates(40, "mine")
    # items plan candidates out of their order, and leave some unplanned
    order = [(7 * n + 3) % 40 for n in range(35)]
    await _plan(engine, key, candidates, order)
    # an older run of the same promotion, with other candidates, in the same tables
    await _plan(engine, other, _candidates(40, "older"), list(range(40)))
    vectors = _vectors(35, seed=35)

    read = []
    async with engine.connect() as conn:
        for start in range(0, 40, 8):
            read += await publish_rows(conn, key, start, start + 8)
        expected = await load_candidates(conn, key, order)
        assert await publish_rows(conn, key, 35, 60) == []

    assert [r.idx for r in read] == list(range(35))
    assert [r.candidate for r in read] == expected
    assert [r.candidate.title for r in read] == [f"mine title {i}" for i in order]
    assert [r.embedding for r in read] == vectors  # float32 values, exactly


async def test_a_chunk_of_a_big_fresh_plan_is_read_by_key_lookups(engine: AsyncEngine) -> None:
    """Planned as a join on tables just written (no statistics yet), the read scanned the run's every
    candidate for each item of the chunk; it must touch only the chunk's items and their candidates."""
    n, chunk = 3000, 250
    key = PlanKey(f"promote-{uuid.uuid4().hex}", "run")
    await _plan(engine, key, _candidates(n, "big"), list(range(n)))

    sent: list[tuple[str, Any]] = []

    def capture(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        sent.append((statement, parameters))

    event.listen(engine.sync_engine, "before_cursor_execute", capture)
    try:
        async with engine.connect() as conn:
            rows = await publish_rows(conn, key, n - chunk, n)
    finally:
        event.remove(engine.sync_engine, "before_cursor_execute", capture)
    assert [r.idx for r in rows] == list(range(n - chunk, n))
    reads = [(s, p) for s, p in sent if "promotion_plan_items" in s]
    assert len(reads) == 1  # one statement for the chunk

    statement, parameters = reads[0]
    async with engine.connect() as conn:
        explained = (
            await conn.exec_driver_sql("EXPLAIN (ANALYZE, FORMAT JSON) " + statement, parameters)
        ).scalar_one()
    plan = (explained if isinstance(explained, list) else json.loads(explained))[0]["Plan"]

    touched: dict[str, int] = {}
    removed = 0

    def walk(node: dict[str, Any]) -> None:
        nonlocal removed
        if "Relation Name" in node:
            rows_read = int(node["Actual Rows"]) * int(node["Actual Loops"])
            touched[node["Relation Name"]] = touched.get(node["Relation Name"], 0) + rows_read
        removed += int(node.get("Rows Removed by Filter", 0))
        removed += int(node.get("Rows Removed by Join Filter", 0))
        for child in node.get("Plans", []):
            walk(child)

    walk(plan)
    assert touched == {"promotion_plan_items": chunk, "promotion_candidates": chunk}
    assert removed == 0
