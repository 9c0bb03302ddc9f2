"""Parallel learning benchmark: how many repeated failures do live warnings across tasks prevent?

    python tests/bench/parallel_learning.py [--agents 8] [--tasks 4] [--seed 7]

Starts its own embedded Postgres (pgserver, temporary directory, migrations applied) and two real HTTP
gateways on loopback over it: one with live warnings on (the default), one with them off
(`LOREGATE_LIVE_WARNINGS=false`). The same scripted workload runs against each, in a project of its own:
`--agents` agents work in parallel, each on `--tasks` tasks in sequence, every task about one of four
problems the others meet too. As an agent would, on each task it:

1. reads the context block for the task (`POST /v1/context`; counts the live lines it carried);
2. meets the problem's error and stages it (`POST /v1/tasks/{id}/entries`). When the answer carries a
   hint (another task's fix of the same error signature), it applies that fix and is done;
3. otherwise plans the problem's tempting approach, asks `approaches/check` first, and skips it when
   another task's failure of it comes back (`elsewhere`); else tries it, sees it fail, records the failure
   (`POST /approaches` and an `approach` staging entry), then finds and stages the fix (`result`).

Ground truth is kept by the bench itself (when each problem's approach failure and its fix were first
recorded, by any task). A **repeat** is trying the approach when another task had recorded its failure
before this agent asked; a **re-fix** is meeting an error whose fix another task had staged before, without
being told. Attempts that overlap in time (the other task had not recorded anything yet) count as neither,
in both modes: no warning could have prevented them. The figures: repeats and
re-fixes with live warnings against the same run without them, and the append's p50 latency both ways
(the feature's cost on the hot path).

Data nobody here wrote: the errors are real CPython tracebacks, raised at run time by failing code with
names, paths and values varied per task (so no two tasks see the same text), and the approaches and fixes
are real commit subjects of encode/httpx (shared/data/repo-history, BSD-3): four changes the project made
and later reverted (the approach that failed) and their reverts (the fix). Which error goes with which
change is the bench's assignment. Not collected by pytest (tests/bench is outside the default run).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import random
import statistics
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

HISTORY = Path(os.environ.get("LOREGATE_HTTPX_HISTORY", "/work/shared/data/repo-history/httpx.jsonl"))


@dataclass(frozen=True)
class Problem:
    """One problem many tasks meet: its error (raised for real), the approach that fails, the fix."""

    name: str
    description: str
    approach: str
    fix: str


def _reverts() -> list[tuple[str, str]]:
    """(original change, its revert) subjects of the reverted commits of encode/httpx, oldest first."""
    rows = [json.loads(line) for line in HISTORY.read_text(encoding="utf-8").splitlines() if line.strip()]
    pairs = []
    for row in rows:
        subject = str(row["subject"])
        if subject.lower().startswith('revert "'):
            original = subject[len('Revert "') :].rsplit('"', 1)[0]
            pairs.append((original, subject))
    return sorted(pairs, key=lambda p: p[1])


def _raise(kind: int, rng: random.Random) -> str:
    """A real traceback of one of four errors, with what varies between occurrences varied."""
    name = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(4, 9)))
    try:
        if kind == 0:
            {"known": 1}[f"user_{name}"]
        elif kind == 1:
            importlib.import_module(f"missing_{name}_driver")
        elif kind == 2:
            json.loads("{" + name + ": " + str(rng.randint(1, 999)) + "}")
        else:
            int(f"{name}{rng.randint(1, 99)}")
    except Exception:
        text = traceback.format_exc()
        # the file and line of this bench stand for the agent's own code: vary them as a real repo would
        return text.replace(str(Path(__file__)), f"/srv/{name}/app/module_{rng.randint(1, 40)}.py")
    raise AssertionError("the snippet did not fail")


@dataclass
class Truth:
    """When each problem's approach first failed and its error was first fixed, by any task."""

    failed_at: dict[str, float] = field(default_factory=dict)
    fixed_at: dict[str, float] = field(default_factory=dict)


@dataclass
class Tally:
    """What one mode of the run counted."""

    tasks: int = 0
    approach_tries: int = 0
    repeats: int = 0
    skipped_on_warning: int = 0
    refixes: int = 0
    fixed_by_hint: int = 0
    context_live_lines: int = 0
    append_seconds: list[float] = field(default_factory=list)


def _reworded(approach: str, rng: random.Random) -> str:
    """How an agent might phrase the same approach: fillers and case change, the fingerprint does not."""
    return rng.choice(["{}", "Try again: {}", "let's try {}", "{} (attempt)", "Maybe {}"]).format(
        rng.choice([approach, approach.lower(), approach.rstrip(".")])
    )


async def _agent(
    http: httpx.AsyncClient,
    agent: Any,
    orchestrator: Any,
    org: str,
    project: str,
    plan: list[int],
    problems: list[Problem],
    truth: Truth,
    tally: Tally,
    rng: random.Random,
) -> None:
    for kind in plan:
        problem = problems[kind]
        opened = await http.post(
            "/v1/tasks",
            headers=orchestrator.headers,
            json={"org": org, "project": project, "worktree": "main", "description": problem.description},
        )
        task_id = opened.json()["task_id"]
        entries = f"/v1/tasks/{task_id}/entries"
        tally.tasks += 1
        context = await http.post(
            "/v1/context", headers=agent.headers, json={"task_id": task_id, "query": problem.description}
        )
        tally.context_live_lines += len(context.json().get("live", []))
        await asyncio.sleep(rng.uniform(0.01, 0.1))  # reading the code
        met_at = time.monotonic()
        started = time.perf_counter()
        met = await http.post(
            entries,
            headers=agent.headers,
            json={"entries": [{"kind": "error", "content": _raise(kind, rng)}]},
        )
        tally.append_seconds.append(time.perf_counter() - started)
        assert met.status_code == 201, met.text
        hints = met.json().get("hints", [])
        if hints:
            tally.fixed_by_hint += 1
            await http.post(
                entries,
                headers=agent.headers,
                json={"entries": [{"kind": "result", "content": f"Applied: {hints[0]['detail']}"}]},
            )
            continue
        if truth.fixed_at.get(problem.name, met_at) < met_at:
            tally.refixes += 1  # another task had staged its fix before this error; nobody told this agent
        proposal = _reworded(problem.approach, rng)
        checked_at = time.monotonic()
        check = await http.post(
            f"/v1/tasks/{task_id}/approaches/check", headers=agent.headers, json={"approach": proposal}
        )
        if check.json().get("elsewhere"):
            tally.skipped_on_warning += 1
        else:
            tally.approach_tries += 1
            if truth.failed_at.get(problem.name, checked_at) < checked_at:
                tally.repeats += 1  # another task had recorded its failure before this agent asked
            await asyncio.sleep(rng.uniform(0.05, 0.2))  # trying it
            await http.post(
                f"/v1/tasks/{task_id}/approaches",
                headers=agent.headers,
                json={"approach": proposal, "outcome": "failed", "reason": "the error came back"},
            )
            await http.post(
                entries,
                headers=agent.headers,
                json={
                    "entries": [{"kind": "approach", "content": proposal, "payload": {"outcome": "failed"}}]
                },
            )
            truth.failed_at.setdefault(problem.name, time.monotonic())  # known to the platform from now
        await asyncio.sleep(rng.uniform(0.05, 0.2))  # finding the fix
        fixed = await http.post(
            entries, headers=agent.headers, json={"entries": [{"kind": "result", "content": problem.fix}]}
        )
        assert fixed.status_code == 201, fixed.text
        truth.fixed_at.setdefault(problem.name, time.monotonic())


async def _mode(
    url: str, engine: Any, project: str, plans: list[list[int]], problems: list[Problem], seed: int
) -> Tally:
    from governance.scopes import ActorType
    from tests.utils.factories import make_actor

    org = "bench"
    orchestrator = await make_actor(engine, ActorType.ORCHESTRATOR, org, project)
    agents = [await make_actor(engine, ActorType.AGENT, org, project) for _ in plans]
    truth, tally = Truth(), Tally()
    async with httpx.AsyncClient(base_url=url, timeout=120) as http:
        await asyncio.gather(
            *(
                _agent(
                    http, a, orchestrator, org, project, plan, problems, truth, tally, random.Random(seed + i)
                )
                for i, (a, plan) in enumerate(zip(agents, plans, strict=True))
            )
        )
    return tally


async def _sequential_appends(url: str, engine: Any, project: str, seed: int, count: int = 40) -> list[float]:
    """An agent alone (no load) appending errors another task of the project already fixed: each append's
    seconds (with live warnings on, each answer carries the hint)."""
    from governance.scopes import ActorType
    from tests.utils.factories import make_actor

    orchestrator = await make_actor(engine, ActorType.ORCHESTRATOR, "bench", project)
    agent = await make_actor(engine, ActorType.AGENT, "bench", project)
    rng = random.Random(seed)
    seconds: list[float] = []
    async with httpx.AsyncClient(base_url=url, timeout=120) as http:
        opened = await http.post(
            "/v1/tasks",
            headers=orchestrator.headers,
            json={"org": "bench", "project": project, "worktree": "main", "description": "alone"},
        )
        entries = f"/v1/tasks/{opened.json()['task_id']}/entries"
        for n in range(count):
            body = {"entries": [{"kind": "error", "content": _raise(n % 4, rng)}]}
            started = time.perf_counter()
            answer = await http.post(entries, headers=agent.headers, json=body)
            seconds.append(time.perf_counter() - started)
            assert answer.status_code == 201, answer.text
    return seconds


async def run(agents: int, tasks: int, seed: int) -> None:
    """Start the database and both gateways, run the workload both ways, print the figures."""
    from api.cli.embedded import start_embedded_postgres
    from governance.config import Settings
    from governance.storage.engine import make_engine
    from tests.utils.gateway import running_gateway
    from tests.utils.temporal_env import fresh_bench_database

    pairs = _reverts()
    descriptions = (
        "Users see a crash when loading the user cache",
        "The service fails to start on the new build host",
        "The config loader breaks on files from the ops team",
        "The importer rejects some of the bank's account numbers",
    )
    problems = [
        Problem(f"problem-{i}", descriptions[i], approach=original, fix=revert)
        for i, (original, revert) in enumerate(pairs[:4])
    ]
    rng = random.Random(seed)
    plans = [[rng.randrange(len(problems)) for _ in range(tasks)] for _ in range(agents)]

    tmp = Path(tempfile.mkdtemp(prefix="loregate-bench-parallel-"))
    print(f"starting embedded Postgres in {tmp} ...", flush=True)
    pg, _ = start_embedded_postgres(tmp)
    url = fresh_bench_database(pg)
    base = Settings(
        database_url=url,
        data_dir=tmp,
        search_rate_principal_per_second=0,
        search_rate_tenant_per_second=0,
        rate_limit_principal_per_second=0,
        rate_limit_tenant_per_second=0,
    )
    engine = make_engine(base)
    results: dict[str, Tally] = {}
    sequential: dict[str, list[float]] = {}
    try:
        # the same workload, each mode in a project of its own; off first, so on gains no warm-up
        for mode, live in (("off", False), ("on", True)):
            with running_gateway(base.model_copy(update={"live_warnings": live})) as gateway:
                started = time.monotonic()
                results[mode] = await _mode(gateway, engine, f"parallel-{mode}", plans, problems, seed)
                print(f"live warnings {mode}: {time.monotonic() - started:.1f} s", flush=True)
                sequential[mode] = await _sequential_appends(gateway, engine, f"parallel-{mode}", seed)
    finally:
        await engine.dispose()
        pg.cleanup()
    off, on = results["off"], results["on"]
    print(f"\n{agents} agents x {tasks} tasks, {len(problems)} shared problems (seed {seed})")
    print(f"{'':<34}{'off':>8}{'on':>8}")
    for label, name in (
        ("tasks", "tasks"),
        ("approach tries", "approach_tries"),
        ("repeats of a failed approach", "repeats"),
        ("approaches skipped on a warning", "skipped_on_warning"),
        ("errors re-fixed (fix existed)", "refixes"),
        ("errors fixed from a hint", "fixed_by_hint"),
        ("live lines in context blocks", "context_live_lines"),
    ):
        print(f"{label:<34}{getattr(off, name):>8}{getattr(on, name):>8}")
    prevented = (off.repeats + off.refixes) - (on.repeats + on.refixes)
    base_repeats = off.repeats + off.refixes
    share = prevented / base_repeats if base_repeats else 0.0
    print(
        f"\nrepeats prevented by live warnings: {prevented} of {base_repeats} ({share:.3f} of the baseline)"
    )
    p50_off, p50_on = statistics.median(off.append_seconds), statistics.median(on.append_seconds)
    print(
        f"append of an error, p50: off {p50_off * 1000:.1f} ms, on {p50_on * 1000:.1f} ms "
        f"(ratio {p50_on / p50_off:.2f})"
    )
    q50_off, q50_on = statistics.median(sequential["off"]), statistics.median(sequential["on"])
    print(
        f"one agent alone, append of an error another task fixed, p50: off {q50_off * 1000:.1f} ms, "
        f"on {q50_on * 1000:.1f} ms (ratio {q50_on / q50_off:.2f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=8)
    parser.add_argument("--tasks", type=int, default=4)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    asyncio.run(run(args.agents, args.tasks, args.seed))


if __name__ == "__main__":
    main()
