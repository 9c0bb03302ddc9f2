"""A task's working memory and a file's history over gRPC: the same answers and refusals as over HTTP."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.config import Settings
from governance.scopes import ActorType
from tests.utils.factories import make_actor, new_tenant
from tests.utils.grpc_gateway import bearer, grpc_gateway, pb2, refusal


@pytest.fixture(scope="module")
async def stub(settings: Settings) -> AsyncIterator[Any]:
    async with grpc_gateway(settings) as s:
        yield s


async def test_grpc_working_memory_round_trip_and_file_history(stub: Any, engine: AsyncEngine) -> None:
    org, project = new_tenant()
    orchestrator = await make_actor(engine, ActorType.ORCHESTRATOR, org, project)
    agent = await make_actor(engine, ActorType.AGENT, org, project)
    outsider = await make_actor(engine, ActorType.AGENT, *new_tenant())
    opened = await stub.OpenTask(
        pb2.OpenTaskRequest(org=org, project=project, worktree="main", description="grpc working memory"),
        metadata=bearer(orchestrator.key),
    )
    body = {
        "hypotheses": [{"text": "the cache key ignores the tenant", "confidence": 0.95}],
        "files": ["src/cache.py"],
    }
    kept = await stub.UpdateWorkingMemory(
        pb2.TaskJsonRequest(task_id=opened.task_id, json=json.dumps(body)), metadata=bearer(agent.key)
    )
    answer = json.loads(kept.json)
    assert answer["hypotheses"][0]["decision_entry_id"] is not None
    assert answer["statistics"]["by_kind"] == {"decision": 1}
    read = json.loads(
        (
            await stub.GetWorkingMemory(pb2.TaskRequest(task_id=opened.task_id), metadata=bearer(agent.key))
        ).json
    )
    assert [f["value"] for f in read["files"]] == ["src/cache.py"]
    history = await stub.FileHistory(
        pb2.JsonRequest(json=json.dumps({"path": "src/cache.py", "task_id": opened.task_id})),
        metadata=bearer(agent.key),
    )
    assert json.loads(history.json) == {"path": "src/cache.py", "task_id": opened.task_id, "items": []}
    with pytest.raises(grpc.aio.AioRpcError) as hidden:
        await stub.GetWorkingMemory(pb2.TaskRequest(task_id=opened.task_id), metadata=bearer(outsider.key))
    assert hidden.value.code() == grpc.StatusCode.NOT_FOUND and refusal(hidden.value)["error"] == "not_found"
    with pytest.raises(grpc.aio.AioRpcError) as bad:
        await stub.UpdateWorkingMemory(
            pb2.TaskJsonRequest(task_id=opened.task_id, json=json.dumps({"files": ["a\x00b"]})),
            metadata=bearer(agent.key),
        )
    assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT
