"""`loregate schedules apply|trigger` against a real Temporal dev server: a schedule run now, an unknown name
and an unreachable server each end in one line."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import uuid
from typing import Any

from temporalio.client import Client
from temporalio.service import RPCError

from tests.utils.cli import cli_env, run_cli
from workflows.schedules import KNOWLEDGE_SCHEDULE_ID, RETENTION_SCHEDULE_ID, SCHEDULE_IDS


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def test_schedules_trigger_runs_the_knowledge_schedule_now(local_env: Any) -> None:
    client: Client = local_env.client
    env = cli_env(
        LOREGATE_TEMPORAL_ADDRESS=client.service_client.config.target_host,
        LOREGATE_TASK_QUEUE=f"schedules-{uuid.uuid4()}",  # no worker: the started run only waits there
    )
    try:
        applied = run_cli("schedules", "apply", env=env)
        assert applied.returncode == 0, applied.stderr
        triggered = run_cli("schedules", "trigger", "knowledge", env=env)
        assert triggered.returncode == 0, triggered.stderr
        assert f"schedule {KNOWLEDGE_SCHEDULE_ID} triggered" in triggered.stdout
        handle = client.get_schedule_handle(KNOWLEDGE_SCHEDULE_ID)
        for _ in range(50):  # the server takes the triggered action a moment later
            if (await handle.describe()).info.num_actions == 1:
                break
            await asyncio.sleep(0.1)
        assert (await handle.describe()).info.num_actions == 1
    finally:
        for schedule_id in SCHEDULE_IDS:
            await client.get_schedule_handle(schedule_id).delete()
        async for execution in client.list_workflows('WorkflowType="ProjectKnowledgeWorkflow"'):
            if execution.status is not None and execution.status.name == "RUNNING":
                await client.get_workflow_handle(execution.id, run_id=execution.run_id).terminate()


async def test_schedules_trigger_before_apply_names_the_fix(local_env: Any) -> None:
    client: Client = local_env.client
    with contextlib.suppress(RPCError):  # left by another test of the session
        await client.get_schedule_handle(RETENTION_SCHEDULE_ID).delete()
    env = cli_env(LOREGATE_TEMPORAL_ADDRESS=client.service_client.config.target_host)
    missing = run_cli("schedules", "trigger", "retention", env=env)
    assert missing.returncode == 1 and "Traceback" not in missing.stderr
    assert "loregate schedules apply" in missing.stderr


def test_schedules_trigger_unknown_name_lists_the_names() -> None:
    refused = run_cli("schedules", "trigger", "nightly", env=cli_env())
    assert refused.returncode == 1
    assert "no schedule 'nightly': one of retention, reflection, notifications, knowledge" in refused.stderr


def test_schedules_apply_unreachable_temporal_names_the_port_setting() -> None:
    port = _free_port()
    refused = run_cli("schedules", "apply", env=cli_env(LOREGATE_TEMPORAL_PORT=str(port)))
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert f"Temporal unreachable at 127.0.0.1:{port}" in refused.stderr
    assert "LOREGATE_TEMPORAL_PORT" in refused.stderr and "tonic::" not in refused.stderr
