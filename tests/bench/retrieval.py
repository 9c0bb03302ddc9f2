"""Retrieval quality and speed on real Postgres+pgvector with the real embedder (outside the pytest run).

    python tests/bench/retrieval.py            # quality on the labelled sets, then speed at N = 100,000
    python tests/bench/retrieval.py --skip-speed
    python tests/bench/retrieval.py --skip-quality --n 20000 --skip-http

Quality: recall@5, recall@10 and MRR (over the top 50) of vector only, full text only, their plain RRF
fusion, and the default search (`api.services.reading.search_memories`: intent detection, type weights,
fusion, bounded recency / trust / usefulness adjustments) on every labelled set, tests/data/retrieval*/
(`services`: the project's own set; `conversation` and `coding`: tests/bench/retrieval_sets.py). Target on
every set: default >= max(vector, full text) and >= plain RRF - 0.01 (recall@5). Embeddings are cached on
disk under tests/bench/.cache/ (not in git), keyed by the text, so a second run starts at once.
Speed is tests/bench/retrieval_scale.py, run after the quality sets: 100,000 memories composed from 4,000
real embeddings, hybrid search p50/p99 with the query vector given and with its embedding (first and
repeated), exact search as the baseline, HNSW recall@10 against it, then the context endpoint over HTTP.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import statistics
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from sqlalchemy import text  # noqa: E402
from sqlalchemy.ext.asyncio import AsyncEngine  # noqa: E402

from api.services.reading import ranking_params, search_memories  # noqa: E402
from governance.adapters.embedders import Embedder, make_embedder  # noqa: E402
from governance.config import Settings  # noqa: E402
from governance.storage.bulk import (  # noqa: E402
    BulkMemory,
    analyze_memories,
    build_embedding_index,
    copy_memories,
    drop_embedding_index,
)
from governance.storage.engine import make_engine  # noqa: E402
from governance.storage.fulltext import text_candidates  # noqa: E402
from governance.storage.migrate import upgrade_head  # noqa: E402
from governance.storage.retrieval import fuse, vector_candidates  # noqa: E402

CACHE = Path(__file__).resolve().parent / ".cache"
CHUNK = 2000
TENANT_A = ("bench", "alpha", "main")
TENANT_B = ("bench", "beta", "main")
POOL = 50


def log(msg: str) -> None:
    print(msg, flush=True)


# ---------------------------------------------------------------- embeddings, cached per chunk of texts
def embed_cached(embedder: Embedder, texts: Sequence[str], label: str) -> np.ndarray:
    """Passage vectors for `texts`, from disk where a chunk was embedded before."""
    (CACHE / "vectors").mkdir(parents=True, exist_ok=True)
    parts: list[np.ndarray] = []
    started = time.perf_counter()
    for start in range(0, len(texts), CHUNK):
        chunk = list(texts[start : start + CHUNK])
        digest = hashlib.sha256(("\x1e".join([embedder.name, *chunk])).encode()).hexdigest()[:24]
        path = CACHE / "vectors" / f"{digest}.npy"
        if path.exists():
            parts.append(np.load(path))
            continue
        vectors = embedder.embed_passages(chunk).astype(np.float32)
        np.save(path, vectors)
        parts.append(vectors)
        done = start + len(chunk)
        rate = done / max(time.perf_counter() - started, 1e-9)
        log(f"  embedded {label} {done}/{len(texts)} ({rate:.0f}/s)")
    return np.concatenate(parts) if parts else np.zeros((0, embedder.dim), dtype=np.float32)


# ---------------------------------------------------------------- database
def bench_database() -> tuple[str, Any]:
    """A fresh, migrated `loregate_bench` database: on LOREGATE_BENCH_DATABASE_URL's server, else embedded."""
    import psycopg

    server = None
    base = os.environ.get("LOREGATE_BENCH_DATABASE_URL")
    if base is None:
        from api.cli.embedded import start_embedded_postgres

        server, base = start_embedded_postgres(CACHE / "pg")
    admin = base.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS loregate_bench")
        conn.execute("CREATE DATABASE loregate_bench")
    from sqlalchemy.engine import make_url

    url = make_url(admin).set(database="loregate_bench").render_as_string(hide_password=False)
    upgrade_head(url)
    return url, server


def scope_key_of(tenant: tuple[str, str, str]) -> str:
    return f"project:{tenant[0]}/{tenant[1]}"


async def bulk_load(engine: AsyncEngine, memories: list[BulkMemory]) -> dict[str, float]:
    """Empty the table, COPY (`governance.storage.bulk`), build the HNSW index once, ANALYZE; seconds each."""
    took: dict[str, float] = {}
    async with engine.begin() as conn:
        await conn.execute(text("TRUNCATE memories CASCADE"))
        await conn.execute(text("TRUNCATE memory_events"))
        await drop_embedding_index(conn)
    t0 = time.perf_counter()
    async with engine.begin() as conn:
        await copy_memories(conn, memories, actor_id="bench", actor_type="system", reason="bench load")
    took["copy"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    async with engine.begin() as conn:
        await build_embedding_index(conn)
    took["hnsw"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    async with engine.begin() as conn:
        await analyze_memories(conn)
    took["analyze"] = time.perf_counter() - t0
    return took


def memory_row(
    i: int,
    title: str,
    content: str,
    mtype: str,
    tenant: tuple[str, str, str],
    rng: np.random.Generator,
    now: datetime,
    embedding: np.ndarray,
) -> BulkMemory:
    return BulkMemory(
        id=str(uuid.UUID(int=(int(rng.integers(0, 2**62)) << 64) | i)),
        citation=f"b{i:07d}",
        memory_type=mtype,
        scope="project",
        scope_key=scope_key_of(tenant),
        org=tenant[0],
        project=tenant[1],
        title=title,
        content=content,
        embedding=embedding,
        confidence=float(rng.uniform(0.3, 1.0)),
        importance=float(rng.uniform(0.2, 1.0)),
        created_at=now - timedelta(hours=float(rng.uniform(0, 24 * 30))),
        updated_at=now - timedelta(hours=float(rng.uniform(0, 24 * 30))),
    )


# ---------------------------------------------------------------- quality
DATA = ROOT / "tests" / "data"
SETS = {"services": "retrieval", "conversation": "retrieval_conversation", "coding": "retrieval_coding"}
METHODS = ("vector", "full text", "plain RRF", "default search")


def metrics(ranked: list[list[str]], relevant: list[set[str]]) -> tuple[float, float, float]:
    """recall@5, recall@10 and MRR, averaged over the queries."""
    pairs = list(zip(ranked, relevant, strict=True))
    recall5 = statistics.fmean(len(set(r[:5]) & rel) / len(rel) for r, rel in pairs)
    recall10 = statistics.fmean(len(set(r[:10]) & rel) / len(rel) for r, rel in pairs)
    mrr = statistics.fmean(
        next((1.0 / (i + 1) for i, c in enumerate(r) if c in rel), 0.0) for r, rel in pairs
    )
    return recall5, recall10, mrr


def load_set(name: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A labelled set's memories and queries."""
    directory = DATA / SETS[name]
    memories = [json.loads(line) for line in (directory / "memories.jsonl").read_text("utf-8").splitlines()]
    queries = [json.loads(line) for line in (directory / "queries.jsonl").read_text("utf-8").splitlines()]
    return memories, queries


async def rank_set(
    engine: AsyncEngine, url: str, embedder: Embedder, settings: Settings, name: str
) -> tuple[dict[str, list[list[str]]], list[dict[str, Any]]]:
    """Load one set (replacing what the database held) and rank its queries by every method."""
    memories, queries = load_set(name)
    texts = [f"{m['title']}: {m['content']}" for m in memories]
    vectors = embed_cached(embedder, texts, f"{name} set")
    rng, now = np.random.default_rng(7), datetime.now(UTC)
    rows = []
    for i, (m, vector) in enumerate(zip(memories, vectors, strict=True)):
        row = memory_row(i, m["title"], m["content"], m["memory_type"], TENANT_A, rng, now, vector)
        if m.get("deprecated"):
            row = replace(row, deprecated_at=now - timedelta(days=1))
        rows.append(row)
    label = {r.citation: m["id"] for r, m in zip(rows, memories, strict=True)}
    by_uuid = {r.id: r.citation for r in rows}
    await bulk_load(engine, rows)

    keys = [scope_key_of(TENANT_A)]
    params = ranking_params(settings)
    results: dict[str, list[list[str]]] = {method: [] for method in METHODS}
    for q in queries:
        qv = embedder.embed_query(q["query"])
        async with engine.begin() as conn:
            by_vector = await vector_candidates(conn, qv, keys, limit=POOL)
            by_text = await text_candidates(conn, q["query"], keys, limit=POOL)
        fused = fuse(by_vector, by_text, k=params.rrf_k)
        outcome = await search_memories(engine, embedder, settings, query=q["query"], scope_keys=keys, k=POOL)
        results["vector"].append([label[by_uuid[i]] for i, _ in by_vector])
        results["full text"].append([label[by_uuid[i]] for i, _ in by_text])
        results["plain RRF"].append([label[by_uuid[i]] for i in sorted(fused, key=lambda i: -fused[i])])
        results["default search"].append([label[h.citation] for h in outcome.hits])
    return results, queries


async def quality(engine: AsyncEngine, url: str, embedder: Embedder, settings: Settings) -> None:
    summary: list[str] = []
    for name in SETS:
        results, queries = await rank_set(engine, url, embedder, settings, name)
        relevant = [set(q["relevant"]) for q in queries]
        kinds = [q["kind"] for q in queries]
        langs = {q.get("lang", "en") for q in queries}
        log(f"\n{name}: {len(queries)} queries ({', '.join(sorted(langs))}), tests/data/{SETS[name]}")
        log(f"{'method':<15} {'recall@5':>9} {'recall@10':>10} {'MRR':>7}   per kind recall@5/MRR")
        scores: dict[str, float] = {}
        for method, ranked in results.items():
            r5, r10, mrr = metrics(ranked, relevant)
            scores[method] = r5
            per_kind = []
            for kind in sorted(set(kinds)):
                idx = [i for i, k in enumerate(kinds) if k == kind]
                kr, _, km = metrics([ranked[i] for i in idx], [relevant[i] for i in idx])
                per_kind.append(f"{kind[:12]} {kr:.2f}/{km:.2f}")
            log(f"{method:<15} {r5:>9.3f} {r10:>10.3f} {mrr:>7.3f}   " + "  ".join(per_kind))
        best_single = max(scores["vector"], scores["full text"])
        ok = (
            scores["default search"] >= best_single and scores["default search"] >= scores["plain RRF"] - 0.01
        )
        summary.append(
            f"{name:<13} default {scores['default search']:.3f}  best single {best_single:.3f}  "
            f"plain RRF {scores['plain RRF']:.3f}  {'meets' if ok else 'MISSES'} the target"
        )
    log("\ntarget (recall@5): default >= max(vector, full text) and >= plain RRF - 0.01")
    for line in summary:
        log(line)
    log("(the bench gives memories random age, importance and confidence, which the labels ignore)\n")


# ---------------------------------------------------------------- speed
def pct(values: list[float], p: float) -> float:
    return float(np.percentile(np.asarray(values), p))


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=100_000, help="memories in the speed corpus")
    parser.add_argument("--skip-speed", action="store_true")
    parser.add_argument("--skip-quality", action="store_true")
    parser.add_argument(
        "--skip-http", action="store_true", help="no context-endpoint run after the speed run"
    )
    args = parser.parse_args()

    if not args.skip_quality:
        url, server = bench_database()
        settings = Settings(database_url=url, db_timeout_seconds=600, data_dir=CACHE / "data")
        engine = make_engine(settings)
        try:
            await quality(engine, url, make_embedder(settings), settings)
        finally:
            await engine.dispose()
            if server is not None:
                server.cleanup()
    if not args.skip_speed:
        from tests.bench.retrieval_scale import run

        await run(n=args.n, skip_http=args.skip_http)


if __name__ == "__main__":
    asyncio.run(main())
