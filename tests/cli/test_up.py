"""`loregate up` end to end: from an empty data dir to a write, a clean stop, and a restart with the data.

One test on purpose: each start takes Postgres, Temporal, a worker and a gateway (tens of seconds on two
cores), and the restart half needs what the first half wrote.
"""

from __future__ import annotations

import re
import signal
import stat
import time
from pathlib import Path

import httpx
import psutil
import pytest

from api.cli.embedded import data_dir_mode
from tests.utils.cli import (
    KEY_PATTERN,
    UpLauncher,
    UpProcess,
    alive,
    cli_env,
    processes_mentioning,
    run_cli,
)

pytestmark = pytest.mark.timeout(900)


def _bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def test_up_starts_empty_accepts_writes_stops_cleanly_and_restarts_with_data(
    up_launcher: UpLauncher, up_data_dir: Path
) -> None:
    data_dir = up_data_dir
    first = up_launcher.start(data_dir)

    # first start: a bootstrap admin key, printed and saved privately
    key_file = data_dir / "bootstrap-admin.key"
    admin_key = key_file.read_text().strip()
    assert KEY_PATTERN.fullmatch(admin_key)
    assert admin_key in first.output()
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    # the data dir is the owner's alone: the database, the workflow histories (temporal.db), the logs
    private = {p.name: stat.S_IMODE(p.stat().st_mode) for p in [data_dir, *data_dir.iterdir()]}
    assert "temporal.db" in private and private == {
        name: 0o700 if (data_dir / name).is_dir() else 0o600 for name in private if name != data_dir.name
    } | {data_dir.name: data_dir_mode(data_dir)}, private
    assert first.base_url in first.output()
    assert f"http://127.0.0.1:{first.ui_port}" in first.output()
    # it says who may decide through Temporal (the mode: authenticated unless the run chose another)
    assert re.search(r"approvals +(authenticated|api_only|trusting):", first.output()), first.output()

    with httpx.Client(base_url=first.base_url, timeout=30) as http:
        assert http.get("/healthz").status_code == 200
        assert httpx.get(f"http://127.0.0.1:{first.ui_port}/", timeout=30).status_code == 200
        task = http.post(
            "/v1/tasks",
            json={"org": "acme", "project": "demo", "worktree": "main", "description": "try loregate up"},
            headers=_bearer(admin_key),
        )
        assert task.status_code == 201, task.text
        task_id = task.json()["task_id"]
        written = http.post(
            f"/v1/tasks/{task_id}/entries",
            json={"entries": [{"kind": "decision", "content": "use the embedded database"}]},
            headers=_bearer(admin_key),
        )
        assert written.status_code == 201, written.text

        # a key made by the CLI while `up` runs (attaching to its embedded database) works at once
        created = run_cli(
            "keys",
            "create",
            "--actor",
            "agent",
            "--org",
            "acme",
            "--project",
            "demo",
            "--name",
            "agent-1",
            env=cli_env(LOREGATE_DATA_DIR=str(data_dir)),
        )
        assert created.returncode == 0, created.stderr
        agent_key = KEY_PATTERN.search(created.stdout)
        assert agent_key is not None, created.stdout
        by_agent = http.post(
            f"/v1/tasks/{task_id}/entries",
            json={"entries": [{"kind": "log", "content": "agent was here"}]},
            headers=_bearer(agent_key.group()),
        )
        assert by_agent.status_code == 201, by_agent.text

    # `loregate down` (SIGTERM to the pid in its lock, then waits): exit 0, nothing it started left running
    started = first.process_tree()
    assert len(started) >= 5  # supervisor, temporal, worker, gateway, postgres (+ its helpers)
    down = run_cli("down", env=cli_env(LOREGATE_DATA_DIR=str(data_dir)))
    assert down.returncode == 0, down.stderr
    assert f"pid {first.process.pid}" in down.stdout and "stopped" in down.stdout
    assert first.process.wait(timeout=30) == 0, first.output()
    assert alive(started) == []
    assert processes_mentioning(str(data_dir)) == []

    # second start: same data, no new bootstrap key
    second = up_launcher.start(data_dir)
    assert KEY_PATTERN.search(second.output()) is None, second.output()
    assert key_file.read_text().strip() == admin_key
    with httpx.Client(base_url=second.base_url, timeout=30) as http:
        page = http.get(f"/v1/tasks/{task_id}/entries", headers=_bearer(admin_key))
        assert page.status_code == 200, page.text
        assert [e["content"] for e in page.json()["entries"]] == [
            "use the embedded database",
            "agent was here",
        ]

    started = second.process_tree()
    assert second.stop(signal.SIGINT) == 0, second.output()
    assert alive(started) == []
    assert processes_mentioning(str(data_dir)) == []


def test_down_with_nothing_running_says_so(up_data_dir: Path) -> None:
    up_data_dir.mkdir(parents=True)
    result = run_cli("down", "--data-dir", str(up_data_dir), env=cli_env())
    assert result.returncode == 0, result.stderr
    assert "no `loregate up` is running" in result.stdout and "nothing to stop" in result.stdout
    assert not (up_data_dir / "up.lock").exists()


def _worker(up: UpProcess) -> psutil.Process:
    return next(p for p in up.process_tree() if "worker" in p.cmdline() and "api.cli" in p.cmdline())


def _wait_for(up: UpProcess, text: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while text not in up.output():
        assert up.process.poll() is None, up.output()
        assert time.monotonic() < deadline, f"no {text!r} in:\n{up.output()}"
        time.sleep(0.5)


def test_up_restarts_a_dying_child_then_stops_past_its_budget(
    up_launcher: UpLauncher, up_data_dir: Path
) -> None:
    """A killed worker is restarted (the platform keeps answering); killed again past its budget, all stop."""
    up = up_launcher.start(up_data_dir, env=cli_env(LOREGATE_SUPERVISOR_MAX_RESTARTS="1"))
    started = up.process_tree()
    first = _worker(up)
    first.kill()

    _wait_for(up, "worker restarted")
    assert "worker stopped unexpectedly (exit code -9); restarting" in " ".join(up.output().split())
    second = _worker(up)
    assert second.pid != first.pid and second.is_running()
    assert httpx.get(f"http://127.0.0.1:{up.http_port}/healthz", timeout=10).status_code == 200

    second.kill()
    assert up.process.wait(timeout=120) == 1
    gave_up = "worker stopped unexpectedly (exit code -9; 1 restarts within 300 s); stopping the rest"
    assert gave_up in " ".join(up.output().split()), up.output()  # the console wraps long lines
    assert alive([*started, second]) == []
    assert processes_mentioning(str(up_data_dir)) == []
