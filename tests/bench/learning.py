"""Learning benchmark: does memory bring a recurring error's working fix to the next task that meets it?

    python tests/bench/learning.py [--tasks 50] [--seed 7]

Starts its own embedded Postgres (pgserver, temporary directory, migrations applied), a Temporal dev server,
the real HTTP gateway (uvicorn, loopback) and the production worker in this process. Then runs `--tasks`
synthetic tasks in sequence in one project; five kinds of error recur among them, each time with another
message (names, paths, line numbers, ids vary). For each task, as an agent would:

1. open the task and fetch the context block for its description (`POST /v1/context`) — the moment that
   counts: does the block already hold the working fix of the error this task is about to meet?
2. stage what happened (the error, sometimes a first fix that did not hold and the error again, the fix that
   worked), start the promotion into project scope with `tests_passed`, approve it as a human, wait until
   published;
3. approve any reflection the promotions started (its insights wait for a human like any promotion).

Prints, task by task, the error kind, whether it recurred and whether the fix was in the context block, and
the same for the baseline measured in the same run: plain hybrid search (`POST /v1/search`, top 5, no
guidance lines) for the same description. Target: from the 10th task on, at least 0.9 of recurring errors
find their fix in the context block. Not collected by pytest (tests/bench is outside the default run).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402


@dataclass(frozen=True)
class Kind:
    """One recurring error: where it happens, how it reads, what fixes it, and a fix that does not."""

    name: str
    descriptions: tuple[str, ...]
    error: str  # format fields: {name} {path} {line} {n}
    fix: str
    wrong_fix: str


KINDS = (
    Kind(
        "cache-keyerror",
        (
            "Users see a crash when loading the user cache",
            "The user cache loader fails for some accounts",
            "Speed up loading the user cache on login",
        ),
        'Traceback (most recent call last):\n  File "{path}/cache.py", line {line}, in load\n'
        "    return cache[key]\nKeyError: '{name}'",
        "Guard the cache lookup with dict.get and a default value",
        "Clear the whole user cache before loading it",
    ),
    Kind(
        "billing-timeout",
        (
            "Invoices hang when the billing API is slow",
            "Make the billing API client more robust",
            "The nightly billing export stalls on the billing API",
        ),
        'Traceback (most recent call last):\n  File "{path}/billing/client.py", line {line}, in charge\n'
        "TimeoutError: request to https://billing.internal/v2/charges/{n} timed out after 30s",
        "Set a 2 second timeout on billing API calls and retry once with backoff",
        "Raise the billing API timeout to 120 seconds",
    ),
    Kind(
        "csv-unicode",
        (
            "The CSV import breaks on files from the bank",
            "Import customer CSV files exported from Excel",
            "Fix garbled names after the CSV import",
        ),
        'Traceback (most recent call last):\n  File "{path}/imports/csv_import.py", line {line}, in read\n'
        "UnicodeDecodeError: 'utf-8' codec can't decode byte 0x{n:02x} in position {line}: "
        "invalid start byte",
        "Open CSV imports with encoding utf-8-sig and errors=replace",
        "Strip non-ASCII characters from the CSV before parsing",
    ),
    Kind(
        "pool-exhausted",
        (
            "The monthly report job runs out of database connections",
            "Reports fail under load with database errors",
            "Make the report job scale to more customers",
        ),
        "psycopg_pool.PoolTimeout: couldn't get a connection after 30.00 sec (pool '{name}', size {line})",
        "Return report connections to the pool with a context manager around each query",
        "Double the database pool size for the report job",
    ),
    Kind(
        "notify-none",
        (
            "Notification emails crash for some users",
            "Send the weekly digest notification to every user",
            "The notification sender stops halfway through the list",
        ),
        'Traceback (most recent call last):\n  File "{path}/notify/sender.py", line {line}, in send\n'
        "AttributeError: 'NoneType' object has no attribute 'email'",
        "Skip users without a profile before sending notifications",
        "Wrap the notification sender in a bare try/except",
    ),
)


def _error(kind: Kind, rng: random.Random) -> str:
    name = rng.choice(["user", "acct", "order", "sess", "tenant"]) + f"_{rng.randint(1, 99999)}"
    path = rng.choice(["/app/src", "/home/ci/build/" + str(rng.randint(1, 900)), "/srv/worker", "/opt/svc"])
    return kind.error.format(name=name, path=path, line=rng.randint(3, 900), n=rng.randint(1, 255))


def _plan(tasks: int, seed: int) -> list[tuple[int, bool]]:
    """(kind index, first fix fails?) per task: every kind appears early, then they recur at random."""
    rng = random.Random(seed)
    kinds = list(range(len(KINDS)))
    rng.shuffle(kinds)
    order = kinds + [rng.randrange(len(KINDS)) for _ in range(tasks - len(KINDS))]
    return [(k, rng.random() < 0.3) for k in order[:tasks]]


async def _wait(http: httpx.AsyncClient, headers: dict[str, str], task_id: str, states: set[str]) -> str:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        answer = await http.get(f"/v1/promotions/{task_id}", headers=headers)
        if answer.status_code == 200 and answer.json()["state"] in states:
            return str(answer.json()["state"])
        await asyncio.sleep(0.1)
    raise RuntimeError(f"promotion of {task_id} never reached {states}")


async def run(tasks: int, seed: int) -> None:
    """Start everything, run the tasks, print the curve."""

    from api.cli.embedded import start_embedded_postgres
    from governance.config import Settings
    from governance.scopes import ActorType
    from governance.storage.engine import make_engine
    from tests.utils.factories import make_actor
    from tests.utils.gateway import running_gateway
    from tests.utils.promotion_gateway import running_worker, temporal_settings
    from tests.utils.temporal_env import fresh_bench_database, start_dev_server

    tmp = Path(tempfile.mkdtemp(prefix="loregate-bench-learning-"))
    print(f"starting embedded Postgres in {tmp} ...", flush=True)
    pg, url = start_embedded_postgres(tmp)
    url = fresh_bench_database(pg)
    # one agent key asks back to back: the search budget (a limit, not what is measured here) is off
    base = Settings(
        database_url=url, data_dir=tmp, search_rate_principal_per_second=0, search_rate_tenant_per_second=0
    )
    engine = make_engine(base)
    print("starting the Temporal dev server ...", flush=True)
    env = await start_dev_server()
    settings = temporal_settings(base, env.client)
    org, project = "bench", "learning"
    team = {t: await make_actor(engine, t, org, project) for t in ActorType if t is not ActorType.SYSTEM}
    agent, orch, human = team[ActorType.AGENT], team[ActorType.ORCHESTRATOR], team[ActorType.HUMAN]
    rng = random.Random(seed)
    rows: list[tuple[int, str, bool, bool, bool, bool]] = []
    approved_reflections: set[str] = set()
    started = time.monotonic()
    try:
        with running_gateway(settings) as gateway:
            async with (
                running_worker(env.client, settings),
                httpx.AsyncClient(base_url=gateway, timeout=120) as http,
            ):
                seen: set[int] = set()
                print(
                    f"\n{'task':>4}  {'error kind':<16} {'recurring':<9} {'context':<7} {'insight':<7} "
                    f"{'search@5':<8} ratio"
                )
                for n, (k, first_fails) in enumerate(_plan(tasks, seed), start=1):
                    kind = KINDS[k]
                    description = rng.choice(kind.descriptions)
                    opened = await http.post(
                        "/v1/tasks",
                        headers=orch.headers,
                        json={"org": org, "project": project, "worktree": "main", "description": description},
                    )
                    task_id = opened.json()["task_id"]
                    context = await http.post(
                        "/v1/context",
                        headers=agent.headers,
                        json={"task_id": task_id, "query": description, "max_tokens": 2000},
                    )
                    search = await http.post(
                        "/v1/search",
                        headers=agent.headers,
                        json={"task_id": task_id, "query": description, "k": 5},
                    )
                    block = context.json()["context"]
                    in_context = kind.fix in block
                    # an insight of a reflection that states this fix (its counts line) is in the block
                    from_insight = any(
                        "recurred in" in line and kind.fix in line for line in block.split("[mem:")
                    )
                    in_search = any(kind.fix in r["content"] for r in search.json()["results"])
                    recurring = k in seen
                    seen.add(k)
                    entries: list[dict[str, Any]] = [{"kind": "error", "content": _error(kind, rng)}]
                    if first_fails:
                        entries += [
                            {"kind": "decision", "content": kind.wrong_fix},
                            {"kind": "error", "content": _error(kind, rng)},
                        ]
                    entries.append({"kind": "result", "content": kind.fix})
                    await http.post(
                        f"/v1/tasks/{task_id}/entries", headers=agent.headers, json={"entries": entries}
                    )
                    await http.post(
                        f"/v1/tasks/{task_id}/promotion",
                        headers=orch.headers,
                        json={
                            "target_scope": "project",
                            "verification": {"source": "tests_passed", "success": True},
                        },
                    )
                    await _wait(http, human.headers, task_id, {"awaiting_approval"})
                    await http.post(
                        f"/v1/promotions/{task_id}/approve", headers=human.headers, json={"note": "ok"}
                    )
                    await _wait(http, human.headers, task_id, {"published"})
                    for reflection in (await http.get("/v1/reflections", headers=human.headers)).json()[
                        "reflections"
                    ]:
                        rid = reflection["task_id"]
                        if reflection["state"] == "staged" and rid and rid not in approved_reflections:
                            await _wait(http, human.headers, rid, {"awaiting_approval"})
                            await http.post(
                                f"/v1/promotions/{rid}/approve", headers=human.headers, json={"note": "ok"}
                            )
                            await _wait(http, human.headers, rid, {"published"})
                            approved_reflections.add(rid)
                            print(
                                f"      reflection {reflection['id'][:8]}: "
                                f"{reflection['insight_count']} insights "
                                f"from {reflection['episode_count']} episodes, approved",
                                flush=True,
                            )
                    rows.append((n, kind.name, recurring, in_context, in_search, from_insight))
                    late = [r for r in rows if r[0] >= 10 and r[2]]
                    ratio = sum(r[3] for r in late) / len(late) if late else float("nan")
                    print(
                        f"{n:>4}  {kind.name:<16} {'yes' if recurring else 'first':<9} "
                        f"{'FIX' if in_context else '-':<7} {'yes' if from_insight else '-':<7} "
                        f"{'FIX' if in_search else '-':<8} {ratio:.2f}",
                        flush=True,
                    )
    finally:
        await env.shutdown()
        await engine.dispose()
        pg.cleanup()
    recurring_rows = [r for r in rows if r[2]]
    late = [r for r in recurring_rows if r[0] >= 10]
    ctx_all = sum(r[3] for r in recurring_rows) / max(1, len(recurring_rows))
    ctx_late = sum(r[3] for r in late) / max(1, len(late))
    search_late = sum(r[4] for r in late) / max(1, len(late))
    insight_late = sum(r[5] for r in late) / max(1, len(late))
    print(
        f"\n{len(rows)} tasks in {time.monotonic() - started:.0f} s; "
        f"{len(recurring_rows)} met a recurring error"
    )
    print(
        f"context block holds the fix: {ctx_all:.2f} of all recurring, {ctx_late:.2f} from the 10th task on"
    )
    print(f"baseline, plain search top 5: {search_late:.2f} from the 10th task on")
    print(
        f"a reflection's insight stating the fix was in the block: {insight_late:.2f} from the 10th task on"
    )
    print(
        "ratio context / baseline (10th task on): "
        f"{ctx_late / search_late if search_late else float('inf'):.2f}"
    )
    print(f"target >= 0.90 from the 10th task on: {'met' if ctx_late >= 0.9 else 'NOT met'}")
    curve = "".join("#" if r[3] else ("." if r[2] else " ") for r in rows)
    print(f"curve (# fix in context, . recurring without it, blank first meeting):\n[{curve}]")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", type=int, default=50)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    asyncio.run(run(args.tasks, args.seed))


if __name__ == "__main__":
    main()
