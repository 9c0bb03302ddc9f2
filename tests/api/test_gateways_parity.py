"""What an agent or orchestrator does over HTTP, it does over gRPC and MCP, with the same answers.

One scenario runs through each gateway against real servers on loopback (a uvicorn gateway, the gRPC
gateway, `loregate mcp` launched over stdio by the MCP SDK's client, a Temporal dev server and a worker with
the real activities): record and check an approach, start a promotion (refused for an agent, refused with
a non-human's `human_approved` claim), read its status, give the evidence, follow it to `published`, read
its plan (refused, as an unknown task, to a reader of another project), validate a published memory and
rate it. Every answer, refusals included, must equal raw HTTP's once ids, names and clock times are
replaced by placeholders; each run has a tenant of its own, so the runs cannot see each other.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack
from typing import Any

import grpc
import httpx
import pytest
from mcp import Client as McpClient
from mcp.client.stdio import StdioServerParameters
from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio.client import Client

from api.grpc.proto import pb2_grpc
from api.grpc.server import running_grpc_server
from governance.config import Settings
from governance.scopes import ActorType
from governance.staging import task_key
from tests.conftest import repo_root
from tests.utils.factories import Actor, make_actor, new_tenant
from tests.utils.gateway import running_gateway
from tests.utils.grpc_gateway import bearer, pb2, refusal
from tests.utils.promotion_gateway import running_worker, temporal_settings

ENTRIES = [
    {
        "kind": "decision",
        "content": "db.driver: psycopg 3 with the async API",
        "payload": {"key": "db.driver"},
    },
    {"kind": "fact", "content": "The CI runners have two CPU cores and 7 GB of memory."},
    {
        "kind": "result",
        "content": "Switched the import to psycopg; all tests pass.",
        "payload": {"repeatable": True},
    },
]
APPROACH = {
    "approach": "pin psycopg2-binary to an older wheel",
    "outcome": "failed",
    "reason": "no wheel for 3.12",
}
# Values that differ between runs by construction: fresh ids and clock times.
VOLATILE = {
    "run_id",
    "started_at",
    "closed_at",
    "created_at",
    "last_attempt_at",
    "id",
    "memory_id",
    "published_memory_id",
    "citation",
}
Answer = dict[str, Any]


class Http:
    """Raw HTTP, the reference."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self._http = client

    async def _call(self, key: str, method: str, path: str, **kwargs: Any) -> Answer:
        response = await self._http.request(
            method, path, headers={"Authorization": f"Bearer {key}"}, **kwargs
        )
        answer: Answer = response.json()
        if response.status_code >= 400:
            return {"error": answer["error"], "detail": answer["detail"]}
        return answer

    async def record_approach(self, key: str, task_id: str, body: Answer) -> Answer:
        return await self._call(key, "POST", f"/v1/tasks/{task_id}/approaches", json=body)

    async def check_approach(self, key: str, task_id: str, body: Answer) -> Answer:
        return await self._call(key, "POST", f"/v1/tasks/{task_id}/approaches/check", json=body)

    async def start_promotion(self, key: str, task_id: str, body: Answer) -> Answer:
        return await self._call(key, "POST", f"/v1/tasks/{task_id}/promotion", json=body)

    async def promotion(self, key: str, task_id: str) -> Answer:
        return await self._call(key, "GET", f"/v1/promotions/{task_id}")

    async def plan(self, key: str, task_id: str, offset: int, limit: int) -> Answer:
        params = {"offset": offset, "limit": limit}
        return await self._call(key, "GET", f"/v1/promotions/{task_id}/plan", params=params)

    async def verify(self, key: str, task_id: str, body: Answer) -> Answer:
        return await self._call(key, "POST", f"/v1/promotions/{task_id}/verify", json=body)

    async def validate(self, key: str, ref: str, body: Answer) -> Answer:
        return await self._call(key, "POST", f"/v1/memories/{ref}/validate", json=body)

    async def feedback(self, key: str, ref: str, body: Answer) -> Answer:
        return await self._call(key, "POST", f"/v1/memories/{ref}/feedback", json=body)


class Grpc:
    """The gRPC gateway; a refusal's status details carry the body HTTP would send."""

    def __init__(self, stub: Any) -> None:
        self._stub = stub

    async def _call(self, method: str, request: Any, key: str) -> Answer:
        try:
            reply = await getattr(self._stub, method)(request, metadata=bearer(key))
        except grpc.aio.AioRpcError as exc:
            body = refusal(exc)
            return {"error": body["error"], "detail": body["detail"]}
        answer: Answer = json.loads(reply.json)
        return answer

    def _task_json(self, task_id: str, body: Answer) -> Any:
        return pb2.TaskJsonRequest(task_id=task_id, json=json.dumps(body))

    async def record_approach(self, key: str, task_id: str, body: Answer) -> Answer:
        return await self._call("RecordApproach", self._task_json(task_id, body), key)

    async def check_approach(self, key: str, task_id: str, body: Answer) -> Answer:
        return await self._call("CheckApproach", self._task_json(task_id, body), key)

    async def start_promotion(self, key: str, task_id: str, body: Answer) -> Answer:
        return await self._call("StartPromotion", self._task_json(task_id, body), key)

    async def promotion(self, key: str, task_id: str) -> Answer:
        return await self._call("GetPromotion", pb2.TaskRequest(task_id=task_id), key)

    async def plan(self, key: str, task_id: str, offset: int, limit: int) -> Answer:
        return await self._call(
            "GetPromotionPlan", pb2.PlanRequest(task_id=task_id, offset=offset, limit=limit), key
        )

    async def verify(self, key: str, task_id: str, body: Answer) -> Answer:
        return await self._call("VerifyPromotion", self._task_json(task_id, body), key)

    async def validate(self, key: str, ref: str, body: Answer) -> Answer:
        return await self._call(
            "ValidateMemory", pb2.MemoryJsonRequest(memory_id=ref, json=json.dumps(body)), key
        )

    async def feedback(self, key: str, ref: str, body: Answer) -> Answer:
        return await self._call(
            "MemoryFeedback", pb2.MemoryJsonRequest(memory_id=ref, json=json.dumps(body)), key
        )


class Mcp:
    """`loregate mcp` as an agent runs it: one server process per API key, its tools called by name.

    A refusal is a tool error whose text is `Error executing tool <name>: <error>: <detail>`.
    """

    def __init__(self, url: str, stack: AsyncExitStack) -> None:
        self._url = url
        self._stack = stack
        self._sessions: dict[str, McpClient] = {}

    async def _session(self, key: str) -> McpClient:
        if key not in self._sessions:
            env = {"LOREGATE_URL": self._url, "LOREGATE_API_KEY": key}
            params = StdioServerParameters(
                command=sys.executable, args=["-m", "api.cli", "mcp"], env=env, cwd=str(repo_root())
            )
            self._sessions[key] = await self._stack.enter_async_context(
                McpClient(params, read_timeout_seconds=120)
            )
        return self._sessions[key]

    async def _tool(self, key: str, name: str, arguments: Answer) -> Answer:
        result = await (await self._session(key)).call_tool(name, arguments)
        if result.is_error:
            # the SDK names the tool first; the rest is the gateway's `error: detail`
            text = result.content[0].text.removeprefix(f"Error executing tool {name}: ")
            error, _, detail = text.partition(": ")
            return {"error": error, "detail": detail}
        if result.structured_content is not None:
            return dict(result.structured_content)
        return dict(json.loads(result.content[0].text))

    async def record_approach(self, key: str, task_id: str, body: Answer) -> Answer:
        return await self._tool(key, "record_approach", {"task_id": task_id, **body})

    async def check_approach(self, key: str, task_id: str, body: Answer) -> Answer:
        return await self._tool(key, "check_approach", {"task_id": task_id, **body})

    async def start_promotion(self, key: str, task_id: str, body: Answer) -> Answer:
        arguments: Answer = {"task_id": task_id, "target_scope": body["target_scope"]}
        if body.get("verification"):
            arguments["verification_source"] = body["verification"]["source"]
            arguments["verification_success"] = body["verification"]["success"]
        return await self._tool(key, "start_promotion", arguments)

    async def promotion(self, key: str, task_id: str) -> Answer:
        return await self._tool(key, "get_promotion", {"task_id": task_id})

    async def plan(self, key: str, task_id: str, offset: int, limit: int) -> Answer:
        return await self._tool(
            key, "get_promotion_plan", {"task_id": task_id, "offset": offset, "limit": limit}
        )

    async def verify(self, key: str, task_id: str, body: Answer) -> Answer:
        return await self._tool(key, "verify_promotion", {"task_id": task_id, **body})

    async def validate(self, key: str, ref: str, body: Answer) -> Answer:
        return await self._tool(key, "validate_memory", {"citation": ref, **body})

    async def feedback(self, key: str, ref: str, body: Answer) -> Answer:
        return await self._tool(key, "memory_feedback", {"citation": ref, **body})


@pytest.fixture(scope="module")
def promo_settings(settings: Settings, local_env: Any) -> Settings:
    client: Client = local_env.client
    return temporal_settings(settings, client)


@pytest.fixture(scope="module")
def gateway_url(promo_settings: Settings) -> Iterator[str]:
    with running_gateway(promo_settings) as url:
        yield url


@pytest.fixture(scope="module")
async def servers(
    local_env: Any, promo_settings: Settings, gateway_url: str
) -> AsyncIterator[dict[str, Any]]:
    """The worker, the HTTP client and a gRPC gateway of its own, for the whole module."""
    async with (
        running_worker(local_env.client, promo_settings),
        running_grpc_server(promo_settings, host="127.0.0.1", port=0) as port,
        grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel,
        httpx.AsyncClient(base_url=gateway_url, timeout=90) as http,
    ):
        yield {"http": http, "stub": pb2_grpc.LoregateStub(channel), "url": gateway_url}


async def _team(engine: AsyncEngine) -> dict[str, Actor]:
    org, project = new_tenant()
    return {
        "orchestrator": await make_actor(engine, ActorType.ORCHESTRATOR, org, project),
        "agent": await make_actor(engine, ActorType.AGENT, org, project),
        "reader": await make_actor(engine, ActorType.AGENT, org, project),  # not involved in the task
        "human": await make_actor(engine, ActorType.HUMAN, org, project),
        "outsider": await make_actor(engine, ActorType.HUMAN, org, new_tenant()[1]),
    }


async def _staged_task(http: httpx.AsyncClient, team: dict[str, Actor]) -> str:
    """A task opened by the orchestrator with the agent's entries (over HTTP: the setup, not the subject)."""
    orchestrator = team["orchestrator"].principal
    body = {
        "org": orchestrator.org,
        "project": orchestrator.project,
        "worktree": "main",
        "description": "driver",
    }
    opened = await http.post("/v1/tasks", headers=team["orchestrator"].headers, json=body)
    assert opened.status_code == 201, opened.text
    task_id: str = opened.json()["task_id"]
    appended = await http.post(
        f"/v1/tasks/{task_id}/entries", headers=team["agent"].headers, json={"entries": ENTRIES}
    )
    assert appended.status_code == 201, appended.text
    return task_id


async def _until_published(gateway: Any, key: str, task_id: str, timeout: float = 90.0) -> Answer:
    """The promotion's status through `gateway`, once it has published and its workflow has closed."""
    deadline = asyncio.get_running_loop().time() + timeout
    answer: Answer = {}
    while asyncio.get_running_loop().time() < deadline:
        answer = await gateway.promotion(key, task_id)
        if answer.get("state") == "published" and answer.get("workflow_status") == "COMPLETED":
            return answer
        await asyncio.sleep(0.3)
    raise AssertionError(f"the promotion of {task_id} never published; last answer {answer}")


def _normal(answer: Any, names: dict[str, str]) -> Any:
    """`answer` with this run's names (task, tenant, principals) and volatile values as placeholders."""
    text = json.dumps(answer, sort_keys=True, ensure_ascii=False)
    for real, alias in sorted(names.items(), key=lambda item: -len(item[0])):
        text = text.replace(real, alias)

    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: f"<{k}>" if k in VOLATILE and v is not None else walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    return walk(json.loads(text))


async def _transcript(gateway: Any, http: httpx.AsyncClient, engine: AsyncEngine) -> dict[str, Any]:
    """Every answer of the scenario through `gateway`, normalised."""
    team = await _team(engine)
    orchestrator, agent, outsider = (team[name].key for name in ("orchestrator", "agent", "outsider"))
    reader = team["reader"].key
    task_id = await _staged_task(http, team)
    answers: dict[str, Any] = {}
    answers["approach_recorded"] = await gateway.record_approach(agent, task_id, APPROACH)
    answers["approach_checked"] = await gateway.check_approach(
        agent, task_id, {"approach": APPROACH["approach"]}
    )
    answers["start_by_agent"] = await gateway.start_promotion(agent, task_id, {"target_scope": "task"})
    human_claim = {"source": "human_approved", "success": True}
    answers["start_claiming_human"] = await gateway.start_promotion(
        orchestrator, task_id, {"target_scope": "task", "verification": human_claim}
    )
    answers["status_before_start"] = await gateway.promotion(agent, task_id)
    answers["started"] = await gateway.start_promotion(orchestrator, task_id, {"target_scope": "task"})
    answers["status_waiting"] = await gateway.promotion(agent, task_id)
    answers["verify_by_agent"] = await gateway.verify(
        agent, task_id, {"source": "tests_passed", "success": True}
    )
    answers["verify_claiming_human"] = await gateway.verify(orchestrator, task_id, human_claim)
    answers["verified"] = await gateway.verify(
        orchestrator, task_id, {"source": "tests_passed", "success": True}
    )
    published = await _until_published(gateway, agent, task_id)
    answers["published"] = published
    answers["plan_page"] = await gateway.plan(agent, task_id, 1, 2)
    answers["plan_by_outsider"] = await gateway.plan(outsider, task_id, 0, 10)
    answers["status_by_outsider"] = await gateway.promotion(outsider, task_id)
    citation = published["published"][0]["citation"]
    answers["validated_by_author"] = await gateway.validate(agent, citation, {"source": "tests_passed"})
    answers["feedback_by_author"] = await gateway.feedback(agent, citation, {"helpful": True})
    answers["validated"] = await gateway.validate(
        reader, citation, {"source": "tests_passed", "reason": "ci green"}
    )
    answers["validated_again"] = await gateway.validate(reader, citation, {"source": "tests_passed"})
    answers["validated_as_human"] = await gateway.validate(reader, citation, {"source": "human_approved"})
    answers["feedback"] = await gateway.feedback(reader, citation, {"helpful": True})
    answers["feedback_by_outsider"] = await gateway.feedback(outsider, citation, {"helpful": False})
    names = {task_id: "<task>", citation: "<citation>"}
    for role, actor in team.items():
        names[actor.principal.id] = f"<{role}>"
        names[actor.principal.name] = f"<{role} name>"
    principal = team["orchestrator"].principal
    names[f"{principal.org}/{principal.project}"] = "<tenant>"
    names[task_key(principal.org, task_id)] = "<task>"  # workflow ids carry the task's key
    return {name: _normal(answer, names) for name, answer in answers.items()}


@pytest.fixture(scope="module")
async def reference(servers: dict[str, Any], engine: AsyncEngine) -> dict[str, Any]:
    """The answers raw HTTP gives."""
    return await _transcript(Http(servers["http"]), servers["http"], engine)


async def test_reference_shows_what_a_caller_relies_on(reference: dict[str, Any]) -> None:
    assert reference["approach_checked"]["valid"] is False
    assert reference["start_by_agent"]["error"] == "forbidden"
    assert reference["start_claiming_human"]["error"] == "forbidden"
    assert reference["status_before_start"]["error"] == "not_found"
    assert reference["started"]["created"] is True
    assert reference["status_waiting"]["state"] == "awaiting_verification"
    assert reference["verify_by_agent"]["error"] == "forbidden"
    assert reference["verify_claiming_human"]["error"] == "forbidden"
    assert reference["verified"]["verification"] == {
        "source": "tests_passed",
        "success": True,
        "given_by": "<orchestrator>",
    }
    assert reference["published"]["published_total"] >= 2
    assert reference["plan_page"]["offset"] == 1 and len(reference["plan_page"]["items"]) <= 2
    assert reference["plan_by_outsider"] == {"error": "not_found", "detail": "task '<task>' does not exist"}
    assert reference["status_by_outsider"]["error"] == "not_found"
    assert reference["validated_by_author"]["error"] == "self_endorsement"
    assert reference["feedback_by_author"]["error"] == "self_endorsement"
    assert reference["validated"]["counted"] is True and reference["validated_again"]["counted"] is False
    assert reference["validated_as_human"]["error"] == "forbidden"
    assert reference["feedback"]["usefulness"] > 0.5
    assert reference["feedback_by_outsider"]["error"] == "not_found"


@pytest.mark.parametrize("gateway", ["grpc", "mcp"])
async def test_gateways_answer_like_http(
    gateway: str, servers: dict[str, Any], engine: AsyncEngine, reference: dict[str, Any]
) -> None:
    async with AsyncExitStack() as stack:
        transport = Grpc(servers["stub"]) if gateway == "grpc" else Mcp(servers["url"], stack)
        transcript = await _transcript(transport, servers["http"], engine)
    for step, answer in reference.items():
        assert transcript[step] == answer, step


async def _grpc_refusal(call: Any) -> tuple[grpc.StatusCode, Answer]:
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await call
    return refused.value.code(), refusal(refused.value)


async def test_grpc_abuse_is_refused_with_http_codes(servers: dict[str, Any], engine: AsyncEngine) -> None:
    team = await _team(engine)
    stub, task_id = servers["stub"], await _staged_task(servers["http"], team)
    start = pb2.TaskJsonRequest(task_id=task_id, json=json.dumps({"target_scope": "task"}))
    code, body = await _grpc_refusal(stub.StartPromotion(start, metadata=bearer(team["agent"].key)))
    assert (code, body["error"]) == (grpc.StatusCode.PERMISSION_DENIED, "forbidden")
    claim = {"target_scope": "task", "verification": {"source": "human_approved", "success": True}}
    claimed = pb2.TaskJsonRequest(task_id=task_id, json=json.dumps(claim))
    code, body = await _grpc_refusal(stub.StartPromotion(claimed, metadata=bearer(team["orchestrator"].key)))
    assert code == grpc.StatusCode.PERMISSION_DENIED and "approve" in body["detail"]
    await stub.StartPromotion(start, metadata=bearer(team["orchestrator"].key))
    plan = pb2.PlanRequest(task_id=task_id)
    code, body = await _grpc_refusal(stub.GetPromotionPlan(plan, metadata=bearer(team["outsider"].key)))
    assert (code, body["detail"]) == (grpc.StatusCode.NOT_FOUND, f"task {task_id!r} does not exist")
    # the plan of a promotion still waiting for evidence is empty, not an error
    reply = await stub.GetPromotionPlan(plan, metadata=bearer(team["agent"].key))
    assert json.loads(reply.json)["total"] == 0


@pytest.mark.parametrize(
    ("method", "request_", "field"),
    [
        ("GetPromotionPlan", pb2.PlanRequest(task_id="t-1", limit=0), "limit"),
        ("GetPromotionPlan", pb2.PlanRequest(task_id="t-1", offset=-1), "offset"),
        ("GetPromotionPlan", pb2.PlanRequest(task_id="t-1", limit=10**6), "limit"),
        ("GetPromotion", pb2.TaskRequest(), "task_id"),
        # HTTP's `?number=` bounds: 1 to 1,000,000 (a number past them was NOT_FOUND)
        ("GetPromotion", pb2.TaskRequest(task_id="t-1", number=0), "number"),
        ("GetPromotion", pb2.TaskRequest(task_id="t-1", number=1_000_001), "less than or equal to 1000000"),
        ("GetPromotion", pb2.TaskRequest(task_id="t-1", number=2**31 - 1), "number"),
        ("VerifyPromotion", pb2.TaskJsonRequest(task_id="t-1", json='{"source": "vibes"}'), "source"),
        ("VerifyPromotion", pb2.TaskJsonRequest(task_id="t-1", json="[1]"), "json"),
        ("RecordApproach", pb2.TaskJsonRequest(json='{"approach": "x", "outcome": "failed"}'), "task_id"),
        ("ValidateMemory", pb2.MemoryJsonRequest(json='{"source": "tests_passed"}'), "memory_id"),
        ("ValidateMemory", pb2.MemoryJsonRequest(memory_id="m" * 65, json="{}"), "memory_id"),
        ("MemoryFeedback", pb2.MemoryJsonRequest(memory_id="abc", json='{"helpful": "maybe"}'), "helpful"),
        ("MemoryFeedback", pb2.MemoryJsonRequest(memory_id="abc", json="{"), "json"),
    ],
)
async def test_grpc_bad_input_is_invalid_argument_naming_the_field(
    servers: dict[str, Any], engine: AsyncEngine, method: str, request_: Any, field: str
) -> None:
    agent = (await _team(engine))["agent"]
    code, body = await _grpc_refusal(getattr(servers["stub"], method)(request_, metadata=bearer(agent.key)))
    assert code == grpc.StatusCode.INVALID_ARGUMENT, body
    assert field in body["detail"]


async def test_grpc_approval_is_the_callers_and_follows_the_policy(
    servers: dict[str, Any], engine: AsyncEngine
) -> None:
    team = await _team(engine)
    stub, task_id = servers["stub"], await _staged_task(servers["http"], team)
    start = {"target_scope": "project", "verification": {"source": "tests_passed", "success": True}}
    request = pb2.TaskJsonRequest(task_id=task_id, json=json.dumps(start))
    await stub.StartPromotion(request, metadata=bearer(team["orchestrator"].key))
    deadline = asyncio.get_running_loop().time() + 90
    while True:
        reply = await stub.GetPromotion(pb2.TaskRequest(task_id=task_id), metadata=bearer(team["human"].key))
        if json.loads(reply.json)["state"] == "awaiting_approval":
            break
        assert asyncio.get_running_loop().time() < deadline, "never awaiting approval"
        await asyncio.sleep(0.3)
    decision = pb2.TaskJsonRequest(task_id=task_id, json=json.dumps({"note": "checked"}))
    code, body = await _grpc_refusal(stub.ApprovePromotion(decision, metadata=bearer(team["agent"].key)))
    assert (code, body["error"]) == (grpc.StatusCode.PERMISSION_DENIED, "forbidden")
    code, _ = await _grpc_refusal(stub.ApprovePromotion(decision, metadata=bearer(team["outsider"].key)))
    assert code == grpc.StatusCode.NOT_FOUND
    approved = json.loads((await stub.ApprovePromotion(decision, metadata=bearer(team["human"].key))).json)
    assert approved["accepted"] is True and approved["approver"] == team["human"].principal.id
    code, _ = await _grpc_refusal(
        stub.RejectPromotion(pb2.TaskJsonRequest(task_id=task_id), metadata=bearer(team["human"].key))
    )
    assert code == grpc.StatusCode.ALREADY_EXISTS  # a Conflict: the promotion is no longer awaiting approval
