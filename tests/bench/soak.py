"""Soak: `loregate up` started the README's way stays up under light load for an hour, checkpoints included.

    python tests/bench/soak.py [--minutes M] [--interval S] [--checkpoint-every S]

Starts `loregate up` as the invoking user (root in a container) on a fresh data dir and free ports, then for
M minutes (default 60) an orchestrator opens a task every S seconds (default 10), an agent appends five
entries to it and searches;
every `--checkpoint-every` seconds (default 300, Postgres' own checkpoint timeout) it forces a CHECKPOINT
and runs a CLI command on the embedded database (`loregate keys list`), the two things that once killed the
platform as root. At the end it prints the counts, the latencies' p50/p99, every answer that was not a 2xx,
whether the supervisor is still running, and any PANIC/FATAL line in the supervisor's output or the logs.
Exit code 0 only when the supervisor outlived the run and no request failed.

Not collected by pytest (tests/bench is outside the default run).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx
import psycopg

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tests.utils.cli import KEY_PATTERN, UpLauncher, cli_env, run_cli  # noqa: E402

TASK = {"org": "acme", "project": "demo", "worktree": "main"}


def _checkpoint(data_dir: Path) -> None:
    url = f"postgresql://postgres:@/postgres?host={data_dir / 'postgres'}"
    with psycopg.connect(url, autocommit=True, connect_timeout=30) as conn:
        conn.execute("CHECKPOINT")


def _key(data_dir: Path, actor: str) -> str:
    created = run_cli(
        "keys", "create", "--actor", actor, "--org", "acme", "--project", "demo", "--name", f"soak-{actor}",
        env=cli_env(LOREGATE_DATA_DIR=str(data_dir)),
    )  # fmt: skip
    if created.returncode != 0:
        raise SystemExit(f"could not create a key: {created.stderr}")
    found = KEY_PATTERN.search(created.stdout)
    assert found is not None, created.stdout
    return found.group()


def _bad_lines(up_output: str, log_dir: Path) -> list[str]:
    texts = [up_output] + [p.read_text(errors="replace") for p in sorted(log_dir.glob("*.log"))]
    return [line for text in texts for line in text.splitlines() if "PANIC" in line or "FATAL:" in line]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--interval", type=float, default=10.0)
    parser.add_argument("--checkpoint-every", type=float, default=300.0)
    args = parser.parse_args()

    launcher = UpLauncher()
    data_dir = Path(tempfile.mkdtemp(prefix="loregate-soak-")) / "data"
    latencies: dict[str, list[float]] = {"open": [], "append": [], "search": []}
    failures: Counter[str] = Counter()
    checkpoints = cli_runs = 0
    try:
        up = launcher.start(data_dir)
        orchestrator = {"Authorization": f"Bearer {_key(data_dir, 'orchestrator')}"}
        headers = {"Authorization": f"Bearer {_key(data_dir, 'agent')}"}
        started = time.monotonic()
        next_checkpoint = started + args.checkpoint_every
        with httpx.Client(base_url=up.base_url, timeout=60, headers=headers) as http:
            round_no = 0
            while time.monotonic() - started < args.minutes * 60:
                round_no += 1
                t0 = time.perf_counter()
                opened = http.post(
                    "/v1/tasks", json={**TASK, "description": f"soak {round_no}"}, headers=orchestrator
                )
                latencies["open"].append(time.perf_counter() - t0)
                if opened.status_code != 201:
                    failures[f"open {opened.status_code}: {opened.text[:120]}"] += 1
                else:
                    task = opened.json()["task_id"]
                    entries = [
                        {"kind": "tool_output", "content": f"round {round_no}: step {i} took {i * 7} ms"}
                        for i in range(5)
                    ]
                    t0 = time.perf_counter()
                    appended = http.post(f"/v1/tasks/{task}/entries", json={"entries": entries})
                    latencies["append"].append(time.perf_counter() - t0)
                    if appended.status_code != 201:
                        failures[f"append {appended.status_code}: {appended.text[:120]}"] += 1
                    t0 = time.perf_counter()
                    query = {"task_id": task, "query": f"how long did step {round_no % 5} take"}
                    found = http.post("/v1/search", json=query)
                    latencies["search"].append(time.perf_counter() - t0)
                    if found.status_code != 200:
                        failures[f"search {found.status_code}: {found.text[:120]}"] += 1
                if time.monotonic() >= next_checkpoint:
                    _checkpoint(data_dir)
                    checkpoints += 1
                    listed = run_cli("keys", "list", env=cli_env(LOREGATE_DATA_DIR=str(data_dir)))
                    cli_runs += 1
                    if listed.returncode != 0:
                        failures[f"keys list rc {listed.returncode}: {listed.stderr[:120]}"] += 1
                    next_checkpoint += args.checkpoint_every
                    elapsed = (time.monotonic() - started) / 60
                    print(f"{elapsed:5.1f} min: {round_no} rounds, {checkpoints} checkpoints, "
                          f"{sum(failures.values())} failures", flush=True)  # fmt: skip
                if up.process.poll() is not None:
                    failures[f"supervisor exited with {up.process.returncode}"] += 1
                    break
                time.sleep(args.interval)
        alive = up.process.poll() is None
        bad = _bad_lines(up.output(), data_dir / "logs")
    finally:
        launcher.cleanup()

    minutes = (time.monotonic() - started) / 60
    print(f"\nsoak: {minutes:.1f} min, {round_no} rounds, {checkpoints} forced checkpoints, "
          f"{cli_runs} CLI runs")  # fmt: skip
    for name, values in latencies.items():
        if values:
            ordered = sorted(values)
            p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
            print(f"  {name:7s} n={len(values):5d}  p50 {statistics.median(values) * 1000:7.1f} ms  "
                  f"p99 {p99 * 1000:7.1f} ms")  # fmt: skip
    print(f"  supervisor running at the end: {alive}")
    print(f"  failed requests: {sum(failures.values())}")
    for what, count in failures.most_common():
        print(f"    {count} × {what}")
    print(f"  PANIC/FATAL lines: {len(bad)}")
    for line in bad[:10]:
        print(f"    {line}")
    return 0 if alive and not failures and not bad else 1


if __name__ == "__main__":
    sys.exit(main())
