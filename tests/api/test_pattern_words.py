"""A refused name or task id says what it should be, in words, over HTTP and gRPC.

Pydantic's own message quotes the regex, and a name's spells out every whitespace character (a raw U+FEFF
among them): `org: String should match pattern '^[^/*\\t\\n…` told a user nothing about what to change.
"""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.config import Settings
from governance.scopes import ActorType
from tests.utils.factories import make_actor, new_tenant
from tests.utils.gateway import running_gateway
from tests.utils.grpc_gateway import bearer, grpc_gateway, pb2, refusal

NAME_WORDS = "should be a name without `/` or `*` that does not start with whitespace"
TASK_ID_WORDS = "should be 1 to 128 letters, digits, `.`, `_`, `:` or `-`, starting with a letter or a digit"


@pytest.fixture(scope="module")
def url(settings: Settings) -> Iterator[str]:
    with running_gateway(settings) as gateway_url:
        yield gateway_url


async def test_pattern_words_http_names_what_an_org_and_a_task_id_should_be(
    url: str, engine: AsyncEngine
) -> None:
    org, project = new_tenant()
    orchestrator = await make_actor(engine, ActorType.ORCHESTRATOR, org, project)
    body = {"org": "../etc", "project": project, "worktree": "main", "description": "d", "task_id": "a/b"}
    async with httpx.AsyncClient(base_url=url) as http:
        answer = await http.post("/v1/tasks", json=body, headers=orchestrator.headers)
    assert answer.status_code == 422, answer.text
    refused = answer.json()
    assert refused["detail"] == f"org: {NAME_WORDS}; task_id: {TASK_ID_WORDS}"
    assert [e["msg"] for e in refused["errors"]] == [NAME_WORDS, TASK_ID_WORDS]
    assert "should match pattern" not in answer.text


async def test_pattern_words_grpc_names_what_a_task_id_should_be(
    settings: Settings, engine: AsyncEngine
) -> None:
    org, project = new_tenant()
    orchestrator = await make_actor(engine, ActorType.ORCHESTRATOR, org, project)
    request = pb2.OpenTaskRequest(org=org, project=project, worktree="main", description="d", task_id="../t")
    async with grpc_gateway(settings) as stub:
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.OpenTask(request, metadata=bearer(orchestrator.key))
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert refusal(refused.value)["detail"] == f"task_id: {TASK_ID_WORDS}"
