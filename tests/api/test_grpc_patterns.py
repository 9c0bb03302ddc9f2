"""Patterns from patches and corrections over gRPC: the same answers and refusals as over HTTP."""

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

DIFF = """\
--- a/svc/cache.py
+++ b/svc/cache.py
@@ -1,2 +1,5 @@
 def fetch(key):
-    return store[key]
+    try:
+        return store[key]
+    except KeyError:
+        return None
"""


@pytest.fixture(scope="module")
async def stub(settings: Settings) -> AsyncIterator[Any]:
    async with grpc_gateway(settings) as s:
        yield s


async def test_grpc_from_patch_stages_and_refuses_like_http(stub: Any, engine: AsyncEngine) -> None:
    org, project = new_tenant()
    orchestrator = await make_actor(engine, ActorType.ORCHESTRATOR, org, project)
    agent = await make_actor(engine, ActorType.AGENT, org, project)
    human = await make_actor(engine, ActorType.HUMAN, org, project)
    outsider = await make_actor(engine, ActorType.AGENT, *new_tenant())
    opened = await stub.OpenTask(
        pb2.OpenTaskRequest(org=org, project=project, worktree="main", description="grpc patches"),
        metadata=bearer(orchestrator.key),
    )
    body = {"diff": DIFF, "outcome": "success", "task_id": opened.task_id}
    made = json.loads(
        (
            await stub.CodeRulesFromPatch(pb2.JsonRequest(json=json.dumps(body)), metadata=bearer(agent.key))
        ).json
    )
    assert made["task_id"] == opened.task_id
    assert "error-handling" in {p["category"] for p in made["proposals"]}
    assert all(p["kind"] == "rule" for p in made["proposals"])
    with pytest.raises(grpc.aio.AioRpcError) as not_diff:
        await stub.CodeRulesFromPatch(
            pb2.JsonRequest(json=json.dumps({**body, "diff": "no diff here"})), metadata=bearer(agent.key)
        )
    assert not_diff.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "not a unified diff" in refusal(not_diff.value)["detail"]
    with pytest.raises(grpc.aio.AioRpcError) as hidden:
        await stub.CodeRulesFromPatch(pb2.JsonRequest(json=json.dumps(body)), metadata=bearer(outsider.key))
    assert hidden.value.code() == grpc.StatusCode.NOT_FOUND

    corrected = json.loads(
        (
            await stub.CorrectTask(
                pb2.TaskJsonRequest(task_id=opened.task_id, json=json.dumps({"content": "Catch narrowly"})),
                metadata=bearer(human.key),
            )
        ).json
    )
    assert corrected["tasks_seen"] == 1 and corrected["preference_proposed"] is False
    with pytest.raises(grpc.aio.AioRpcError) as denied:
        await stub.CorrectTask(
            pb2.TaskJsonRequest(task_id=opened.task_id, json=json.dumps({"content": "Catch narrowly"})),
            metadata=bearer(agent.key),
        )
    assert denied.value.code() == grpc.StatusCode.PERMISSION_DENIED
