"""What approvers read of a plan (`plan_page`, `quarantined_items`, `published_page`): the same rows as a
plain join of plan items to their candidates (tests/utils/joined_plan_reads.py), read by key lookups, so a
deep page of a big plan just written reads its own page's candidates and nothing else."""

from __future__ import annotations

import random
import uuid
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.cognify import Candidate
from governance.storage.item_decisions import item_fates, plan_item_views
from governance.storage.plan_items import PlanItemToWrite, finish_plan, record_outcomes, save_plan_items
from governance.storage.plans import (
    PlanItemPublished,
    PlanKey,
    plan_page,
    promotion_plan_items,
    published_page,
    quarantined_indexes,
    quarantined_items,
    save_candidates,
)
from tests.utils.explained import Explained, capture_statements, explain
from tests.utils.joined_plan_reads import (
    joined_count,
    joined_page,
    joined_published,
    joined_quarantined,
)
from tests.utils.memory_factories import add_memory, new_task

DIM = 384


def _candidates(n: int, tag: str) -> list[Candidate]:
    return [
        Candidate(
            ("fact", "decision", "episode")[i % 3],
            f"{tag} title {i}",
            f"{tag} content {i}",
            canonical_key=f"key.{i}" if i % 3 == 1 else None,
            importance=0.5,
            source_entry_ids=[1000 + i],
        )
        for i in range(n)
    ]


async def _plan(
    engine: AsyncEngine,
    key: PlanKey,
    n: int,
    *,
    tag: str,
    seed: int,
    targets: list[str] = (),  # type: ignore[assignment]
    published: int = 0,
) -> list[int]:
    """A complete plan of `n` items whose candidate numbers are shuffled; every 4th item a duplicate or a
    supersede (of `targets`, or of an id that is not a memory's), one in 7 quarantined, the first
    `published` items published. Returns the items' candidate numbers."""
    rng = random.Random(seed)
    order = list(range(n))
    rng.shuffle(order)
    vector = [1.0] + [0.0] * (DIM - 1)
    items = []
    for i in range(n):
        decision = ("new", "duplicate", "new", "supersede")[i % 4]
        target = None
        if decision != "new":
            target = targets[i % len(targets)] if targets and i % 8 != 3 else f"not-a-memory-{i}"
        items.append(
            PlanItemToWrite(
                i,
                order[i],
                decision,
                target,
                0.9 if target else None,
                f"{decision} {i}",
                f"{i:064x}",
                vector,
                quarantine=f"command aimed at agents ({i})" if i % 7 == 2 else None,
            )
        )
    async with engine.begin() as conn:
        await save_candidates(conn, key, "task", _candidates(n, tag))
        for start in range(0, n, 256):
            await save_plan_items(conn, key, items[start : start + 256])
        await finish_plan(conn, key, n)
        await record_outcomes(
            conn,
            key,
            [
                PlanItemPublished(i, str(uuid.uuid4()), f"c{i}", "created", "fact", "", None, i % 5 == 0)
                for i in range(published)
            ],
        )
    return order


def _tuples(rows: Any) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in rows]


async def test_every_read_returns_the_joined_rows_on_shuffled_plans(engine: AsyncEngine) -> None:
    workflow_id = f"promote-{uuid.uuid4().hex}"
    key, older = PlanKey(workflow_id, "run-2"), PlanKey(workflow_id, "run-1")
    async with engine.begin() as conn:
        task = await new_task(conn)
        targets = [
            (await add_memory(conn, task, title=f"old {i}", content=f"old content {i}", embedding=None))["id"]
            for i in range(5)
        ]
    await _plan(engine, older, 60, tag="older", seed=1, targets=targets, published=60)
    await _plan(engine, key, 90, tag="mine", seed=2, targets=targets, published=37)
    # an erased candidate takes its plan item with it: pages skip by position, not by index
    async with engine.begin() as conn:
        await conn.execute(
            text("DELETE FROM promotion_plan_items WHERE workflow_id = :w AND run_id = :r AND idx = ANY(:i)"),
            {"w": key.workflow_id, "r": key.run_id, "i": [0, 9, 44]},
        )

    async with engine.connect() as conn:
        for offset, limit in ((0, 10), (7, 25), (40, 100), (80, 10), (86, 5), (87, 5), (200, 10)):
            page = await plan_page(conn, key, offset=offset, limit=limit)
            expected = _tuples(await conn.execute(joined_page(key, offset, limit)))
            assert [
                (
                    r.idx,
                    r.memory_type,
                    r.title,
                    r.content,
                    r.canonical_key,
                    r.decision,
                    r.target_id,
                    r.similarity,
                    r.reason,
                    r.target_title,
                    r.target_content,
                    r.quarantine,
                )
                for r in page
            ] == expected
        full = await plan_page(conn, key, offset=0, limit=1000)
        assert len(full) == 87
        assert any(r.target_title for r in full) and any(r.quarantine for r in full)

        for limit in (1, 5, 100):
            total, held = await quarantined_items(conn, key, limit=limit)
            assert total == await conn.scalar(joined_count(key, promotion_plan_items.c.quarantine))
            expected = _tuples(await conn.execute(joined_quarantined(key, limit)))
            assert [(q.idx, q.title, q.reason) for q in held] == expected
            assert 0 < len(held) <= limit
        _, every = await quarantined_items(conn, key, limit=1000)
        assert await quarantined_indexes(conn, key) == {q.idx for q in every}

        for offset, limit in ((0, 10), (5, 20), (30, 100), (34, 3), (35, 10)):
            total, published = await published_page(conn, key, offset=offset, limit=limit)
            assert total == 35  # 37 published, two of them erased
            expected = _tuples(await conn.execute(joined_published(key, offset, limit)))
            assert [
                (
                    p.idx,
                    p.memory_id,
                    p.citation,
                    p.action,
                    p.superseded_id,
                    p.replayed,
                    p.memory_type,
                    p.title,
                )
                for p in published
            ] == expected


async def test_nothing_quarantined_or_published_reads_empty(engine: AsyncEngine) -> None:
    key = PlanKey(f"promote-{uuid.uuid4().hex}", "run")
    async with engine.begin() as conn:
        await save_candidates(conn, key, "task", _candidates(3, "plain"))
        await save_plan_items(
            conn,
            key,
            [PlanItemToWrite(i, i, "new", None, None, "new", f"{i:064x}", [1.0] * DIM) for i in range(3)],
        )
        await finish_plan(conn, key, 3)
    async with engine.connect() as conn:
        assert await quarantined_items(conn, key, limit=10) == (0, [])
        assert await quarantined_indexes(conn, key) == set()
        assert await published_page(conn, key, offset=0, limit=10) == (0, [])
        assert [r.title for r in await plan_page(conn, key, offset=1, limit=10)] == [
            "plain title 1",
            "plain title 2",
        ]


async def _explained(engine: AsyncEngine, sent: list[tuple[str, Any]]) -> list[Explained]:
    async with engine.connect() as conn:
        return [await explain(conn, s, p) for s, p in sent if "promotion_plan_items" in s]


async def test_a_deep_page_of_a_big_fresh_plan_reads_only_its_own_candidates(engine: AsyncEngine) -> None:
    """Planned as a join on tables just written (no statistics yet), the last page of a 3,000-item plan
    read the run's every candidate for each item it skipped or showed: it must read the page's 100."""
    n, page = 3000, 100
    async with engine.begin() as conn:
        task = await new_task(conn)
        targets = [
            (await add_memory(conn, task, title=f"old {i}", content=f"old {i}", embedding=None))["id"]
            for i in range(20)
        ]
    key = PlanKey(f"promote-{uuid.uuid4().hex}", "run")
    await _plan(engine, key, n, tag="big", seed=3, targets=targets, published=n // 2)

    with capture_statements(engine) as sent:
        async with engine.connect() as conn:
            rows = await plan_page(conn, key, offset=n - page, limit=page)
    assert [r.idx for r in rows] == list(range(n - page, n))
    [deep] = await _explained(engine, sent)
    assert deep.touched["promotion_candidates"] == page
    assert deep.touched.get("memories", 0) <= page  # each target by its key, at most one a row
    assert deep.removed == 0

    with capture_statements(engine) as sent:
        async with engine.connect() as conn:
            total, held = await quarantined_items(conn, key, limit=page)
    assert total == len([i for i in range(n) if i % 7 == 2]) and len(held) == page
    count, first = await _explained(engine, sent)
    # the quarantined items alone, through their own index: no other item of the plan is read
    assert count.touched == {"promotion_plan_items": total} and count.removed == 0
    assert first.touched == {"promotion_plan_items": page, "promotion_candidates": page}
    assert first.removed == 0

    with capture_statements(engine) as sent:
        async with engine.connect() as conn:
            total, published = await published_page(conn, key, offset=0, limit=page)
    assert total == n // 2 and [p.idx for p in published] == list(range(page))
    count, first = await _explained(engine, sent)
    assert count.removed == 0
    assert first.touched == {"promotion_plan_items": page, "promotion_candidates": page}
    assert first.removed == 0


async def test_an_approvals_items_are_read_by_their_candidates_key(engine: AsyncEngine) -> None:
    """Per-item decisions check the items they name (`plan_item_views`) and pages show each item's fate
    (`item_fates`): on a fresh 3,000-item plan, only those items and their candidates are read."""
    n = 3000
    key = PlanKey(f"promote-{uuid.uuid4().hex}", "run")
    order = await _plan(engine, key, n, tag="big", seed=4)
    named = [5, 2900, 2999]
    with capture_statements(engine) as sent:
        async with engine.connect() as conn:
            views = await plan_item_views(conn, key, named)
            fates = await item_fates(conn, key, range(n - 100, n))
    assert {i: (v.candidate_index, v.title, v.quarantined) for i, v in views.items()} == {
        i: (order[i], f"big title {order[i]}", i % 7 == 2) for i in named
    }
    assert sorted(fates) == list(range(n - 100, n))
    views_read, fates_read = await _explained(engine, sent)
    assert views_read.touched == {"promotion_plan_items": 3, "promotion_candidates": 3}
    # the named items' range of the plan is scanned (Postgres 16 filters by the list rather than looking up
    # each index), but no candidate beyond the three
    assert views_read.removed <= named[-1] - named[0]
    assert fates_read.touched["promotion_plan_items"] == 100 and fates_read.removed == 0
