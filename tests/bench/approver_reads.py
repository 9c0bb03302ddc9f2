"""What an approver's pages of a big promotion cost over HTTP: a 10,000-item plan awaiting approval.

    python tests/bench/approver_reads.py [--big 10000] [--distinct 1000] [--runs 5]

Starts its own embedded Postgres and Temporal dev server, seeds one task of `--big` staging entries (the
shapes `tests/bench/promotion.py --big` writes), runs the production worker in this process and the HTTP
gateway (uvicorn, a thread of this process, on loopback), starts the task's promotion into project scope
through the API, as its orchestrator, and waits for it to await approval. Then, as the project's human,
times (p50 of `--runs`, after one warm-up) every read an approver makes:

- `GET /v1/promotions/{task}` (state, first plan page with targets, diffs and nearest memories, first
  published and quarantined items), `GET /v1/promotions/{task}/plan` at the first and the last page (100
  entries, and the last 1,000), and the promotions awaiting approval (`GET /v1/promotions?state=...`, what
  `loregate promotions --pending` lists before `loregate approve`);
- the console's promotion page (first and last page of 50);
- `loregate promotion <task> --all`'s reads (the client: the status, then every page of 500);

against the same-run baseline of a page of 100 of the same task's staging entries through the same gateway
(`GET /v1/tasks/{task}/entries`: 100 rows by key, no Temporal). The machine's two cores are shared: read the
ratios, and run it twice.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

RUNS = 5
_CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


async def _p50(runs: int, call: Callable[[], Awaitable[Any]]) -> float:
    await call()
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        await call()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


async def main(n: int, distinct: int, runs: int) -> None:
    import httpx

    from api.cli.embedded import start_embedded_postgres
    from api.client import LoregateClient
    from governance.approval import ApprovalMode
    from governance.config import Settings
    from governance.scopes import ActorType
    from governance.storage.engine import make_engine
    from tests.bench.promotion import _seed_big
    from tests.utils.factories import make_actor
    from tests.utils.gateway import running_gateway
    from tests.utils.promotion_gateway import (
        running_worker,
        start_promotion,
        temporal_settings,
        wait_promotion_state,
    )
    from tests.utils.temporal_env import fresh_bench_database, start_dev_server

    tmp = Path(tempfile.mkdtemp(prefix="loregate-bench-approver-"))
    print(f"starting embedded Postgres in {tmp} ...", flush=True)
    pg, _ = start_embedded_postgres(tmp)
    try:
        url = fresh_bench_database(pg)
        env = await start_dev_server()
        try:
            settings = temporal_settings(
                Settings(database_url=url, data_dir=tmp, approval_mode=ApprovalMode.TRUSTING), env.client
            )
            engine = make_engine(settings)
            task_id, _ = await _seed_big(engine, n, distinct)
            human = await make_actor(engine, ActorType.HUMAN, "bench", "promotion")
            orchestrator = await make_actor(engine, ActorType.ORCHESTRATOR, "bench", "promotion")
            await engine.dispose()
            async with running_worker(env.client, settings):
                with running_gateway(settings) as base:
                    async with httpx.AsyncClient(base_url=base, timeout=600) as http:
                        started = time.perf_counter()
                        await start_promotion(http, orchestrator, task_id, "project")
                        status = await wait_promotion_state(
                            http, human.headers, task_id, "awaiting_approval", timeout=1800
                        )
                        total = int(status["plan_total"])
                        took = time.perf_counter() - started
                        print(
                            f"{n} entries: plan of {total} items awaiting approval after {took:.1f} s; "
                            f"{status['quarantined_total']} quarantined",
                            flush=True,
                        )
                        await _measure(http, base, human, task_id, total, runs, LoregateClient)
                        await _pieces(settings, env.client, task_id, total, runs)
        finally:
            await env.shutdown()
    finally:
        pg.cleanup()


async def _measure(
    http: Any, base: str, human: Any, task_id: str, total: int, runs: int, client_class: Any
) -> None:
    import httpx

    headers = human.headers

    def get(path: str, **params: Any) -> Callable[[], Awaitable[Any]]:
        async def call() -> Any:
            answer = await http.get(path, headers=headers, params=params)
            assert answer.status_code == 200, answer.text
            return answer

        return call

    async def console_page(offset: int) -> Any:
        answer = await console.get(f"/console/promotions/{task_id}", params={"offset": offset})
        assert answer.status_code == 200, answer.text
        return answer

    def cli_all() -> int:
        # `loregate promotion <task> --all`: the status, then the whole plan page by page
        with client_class(base, human.key, timeout=600) as client:
            answer = client.promotion(task_id)
            return len(answer.plan) + len(list(client.promotion_plan_all(task_id)))

    async with httpx.AsyncClient(base_url=base, timeout=600) as console:
        form = await console.get("/console/signin")
        token = _CSRF.search(form.text)
        assert token is not None, form.text
        signed = await console.post(
            "/console/signin",
            data={"api_key": human.key, "csrf_token": token.group(1)},
            follow_redirects=True,
        )
        assert signed.status_code == 200, signed.text
        plan = f"/v1/promotions/{task_id}/plan"
        cases: list[tuple[str, Callable[[], Awaitable[Any]]]] = [
            (
                "baseline: GET entries (100 by key)",
                get(f"/v1/tasks/{task_id}/entries", after_seq=total // 2, limit=100),
            ),
            ("GET /v1/promotions/{task}", get(f"/v1/promotions/{task_id}")),
            ("GET plan, first 100", get(plan, offset=0, limit=100)),
            ("GET plan, last 100", get(plan, offset=max(0, total - 100), limit=100)),
            ("GET plan, last 1000", get(plan, offset=max(0, total - 1000), limit=1000)),
            ("GET /v1/promotions?state=awaiting", get("/v1/promotions", state="awaiting_approval")),
            ("console promotion page, first", lambda: console_page(0)),
            ("console promotion page, last", lambda: console_page(max(0, total - 50))),
        ]
        results = []
        for label, call in cases:
            results.append((label, await _p50(runs, call)))
        started = time.perf_counter()
        shown = await asyncio.to_thread(cli_all)
        walk = (time.perf_counter() - started) * 1000
        results.append((f"CLI promotion --all ({shown} entries, once)", walk))
    base_ms = results[0][1]
    print(f"\n{'read':<46}{'p50 ms':>10}{'/ baseline':>12}")
    for label, ms in results:
        print(f"{label:<46}{ms:>10.1f}{ms / base_ms:>12.1f}")


async def _pieces(settings: Any, client: Any, task_id: str, total: int, runs: int) -> None:
    """Where a page's time goes: each database read and Temporal call of the routes, alone."""
    from governance.storage.engine import make_engine
    from governance.storage.item_decisions import item_fates
    from governance.storage.plans import (
        PlanKey,
        latest_plan,
        plan_page,
        published_page,
        quarantined_items,
    )
    from workflows.promotion_contract import Names, PromotionStatus, workflow_id_for

    engine = make_engine(settings)
    workflow_id = workflow_id_for(task_id)
    handle = client.get_workflow_handle(workflow_id)
    async with engine.connect() as conn:
        header = await latest_plan(conn, workflow_id)
    assert header is not None
    key = PlanKey(header.workflow_id, header.run_id)

    def read(call: Callable[[Any], Awaitable[Any]]) -> Callable[[], Awaitable[Any]]:
        async def run() -> Any:
            async with engine.connect() as conn:
                return await call(conn)

        return run

    last = max(0, total - 100)
    pieces: list[tuple[str, Callable[[], Awaitable[Any]]]] = [
        ("plan_page first 100", read(lambda c: plan_page(c, key, offset=0, limit=100))),
        ("plan_page last 100", read(lambda c: plan_page(c, key, offset=last, limit=100))),
        ("published_page (count, first 100)", read(lambda c: published_page(c, key, offset=0, limit=100))),
        ("quarantined_items (count, first 100)", read(lambda c: quarantined_items(c, key, limit=100))),
        ("item_fates of the last 100", read(lambda c: item_fates(c, key, range(last, total)))),
        ("latest_plan", read(lambda c: latest_plan(c, workflow_id))),
        ("Temporal describe", handle.describe),
        ("Temporal query (state)", lambda: handle.query(Names.STATE, result_type=PromotionStatus)),
    ]
    print(f"\n{'piece':<46}{'p50 ms':>10}")
    try:
        for label, call in pieces:
            print(f"{label:<46}{await _p50(runs, call):>10.1f}", flush=True)
    finally:
        await engine.dispose()


if __name__ == "__main__":
    repo = str(Path(__file__).resolve().parents[2])
    if repo not in sys.path:
        sys.path.insert(0, repo)
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--big", type=int, default=10_000, help="staging entries of the task")
    parser.add_argument("--distinct", type=int, default=1000, help="distinct contents among them")
    parser.add_argument("--runs", type=int, default=RUNS, help="timed runs of each read")
    args = parser.parse_args()
    asyncio.run(main(args.big, args.distinct, args.runs))
