"""`loregate approval-token`: a human mints the token a Temporal UI signal carries, with their own key.

In the default `approval_mode=authenticated`, against a real gateway on loopback, the Temporal dev server
and a worker with the real activities: the signal input the command prints, sent as the UI sends it,
approves the promotion as that human.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio.client import Client

from governance.config import Settings
from governance.scopes import ActorType
from tests.utils.cli import cli_env, run_cli
from tests.utils.factories import Actor, make_actor, new_tenant
from tests.utils.gateway import running_gateway
from tests.utils.promotion_factories import active_memories
from tests.utils.promotion_gateway import (
    awaiting_approval,
    running_worker,
    temporal_settings,
    wait_promotion_state,
)
from tests.utils.tenancy import task_key_of
from workflows.promotion_contract import workflow_id_for

ENTRIES: list[dict[str, Any]] = [
    {
        "kind": "decision",
        "content": "db.driver: psycopg 3 with the async API",
        "payload": {"key": "db.driver"},
    },
]


@pytest.fixture(scope="module")
def auth_settings(settings: Settings, local_env: Any) -> Settings:
    base = temporal_settings(settings, local_env.client)
    return base.model_copy(
        update={"task_queue": f"{base.task_queue}-token-cli", "approval_mode": "authenticated"}
    )


@pytest.fixture(scope="module")
def gateway(auth_settings: Settings) -> Iterator[str]:
    with running_gateway(auth_settings) as url:
        yield url


@pytest.fixture(scope="module")
async def worker(local_env: Any, auth_settings: Settings) -> AsyncIterator[None]:
    async with running_worker(local_env.client, auth_settings):
        yield


async def _cli(gateway: str, actor: Actor, *args: str) -> Any:
    env = cli_env(LOREGATE_URL=gateway, LOREGATE_API_KEY=actor.key, COLUMNS="200")
    return await asyncio.to_thread(run_cli, *args, env=env)


async def test_approval_token_printed_by_the_cli_approves_through_a_ui_signal(
    gateway: str, worker: None, engine: AsyncEngine, local_env: Any
) -> None:
    org, project = new_tenant()
    team = {
        a.value: await make_actor(engine, a, org, project) for a in ActorType if a is not ActorType.SYSTEM
    }
    async with httpx.AsyncClient(base_url=gateway, timeout=60) as http:
        task_id, _ = await awaiting_approval(http, team, ENTRIES)
        by_agent = await _cli(gateway, team["agent"], "approval-token", task_id)
        assert by_agent.returncode != 0 and "may not" in by_agent.stderr + by_agent.stdout
        minted = await _cli(gateway, team["human"], "approval-token", task_id)
        assert minted.returncode == 0, minted.stderr
        lines = minted.stdout.strip().splitlines()
        assert "valid until" in minted.stdout
        signal_input = json.loads(lines[-1])  # the last line is the signal's input, whole
        assert signal_input["approver"] == team["human"].principal.id and signal_input["token"]
        client: Client = local_env.client
        handle = client.get_workflow_handle(workflow_id_for(task_key_of(task_id)))
        await handle.signal("approve", signal_input)
        status = await wait_promotion_state(http, team["human"].headers, task_id, "published")
    assert status["decided_by"] == team["human"].principal.id
    assert await active_memories(engine, task_id=task_id)


@pytest.mark.parametrize(
    ("mode", "said"),
    [
        ("authenticated", "needs a token from `loregate approval-token`"),
        ("api_only", "Temporal UI signals are refused"),
        ("trusting", "single local operator only"),
        ("ui_or_api", "single local operator only"),
    ],
)
def test_up_says_which_approval_mode_it_runs_in(mode: str, said: str, tmp_path: Any) -> None:
    from api.cli.supervisor import approval_mode_line

    line = approval_mode_line(Settings(data_dir=tmp_path, approval_mode=mode))  # type: ignore[arg-type]
    shown = line.removeprefix("[bold yellow]").replace("[/]", "")
    assert said in line and shown.startswith(mode.replace("ui_or_api", "trusting") + ":")
