"""The same inputs through HTTP, gRPC and the Python client give the same answers.

One scenario (open a task, append with idempotency keys, a conflicting retry, an unknown task, a bad key,
search and a context block over published memories, an approach check before and after it failed) runs
through each gateway; every answer, refusals
included, must equal the one raw HTTP gives. Memories are dated long ago so the recency part of the score
is the same whenever each run happens.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import grpc
import httpx
import pytest
from pydantic import BaseModel
from sqlalchemy.ext.asyncio import AsyncEngine

from api.client import AsyncLoregateClient, LoregateError
from governance.adapters.embedders import make_embedder
from governance.config import Settings
from governance.context_block import FOOTER
from governance.live import LIVE_HEADING
from governance.scopes import ActorType, Scope
from governance.working_memory import SHORT_TERM_HEADING
from tests.utils.factories import Actor, make_actor, new_tenant
from tests.utils.grpc_gateway import bearer, grpc_gateway, pb2, refusal
from tests.utils.memory_factories import TaskRef, add_memory, new_task

LONG_AGO = datetime(2020, 1, 1, tzinfo=UTC)
MEMORIES = [
    ("bug_pattern", "Webhook retries", "Stripe webhook handler times out; ack first, process in a queue"),
    ("fact", "Database driver", "The API talks to Postgres through psycopg 3 with a pool of 20"),
    ("preference", "Formatter", "We prefer ruff format over black for all python repositories"),
]
SEARCH = {"query": "why does the stripe webhook time out?", "k": 3}
CONTEXT = {"query": "webhook timeouts and the database driver", "max_tokens": 400}
APPROACH = "raise the webhook handler timeout to 60 seconds"


class Http:
    """Raw HTTP, the reference: the JSON body of every answer, refusals included."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self._http = client

    async def call(self, actor_key: str, method: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {actor_key}"}
        response = await self._http.request(method, path, json=body, headers=headers)
        answer = response.json()
        if response.status_code >= 400:
            return {"error": answer["error"], "detail": answer["detail"]}
        return answer

    async def open_task(self, key: str, body: dict[str, Any]) -> dict[str, Any]:
        return await self.call(key, "POST", "/v1/tasks", body)

    async def append(self, key: str, task_id: str, entries: list[dict[str, Any]]) -> dict[str, Any]:
        return await self.call(key, "POST", f"/v1/tasks/{task_id}/entries", {"entries": entries})

    async def search(self, key: str, body: dict[str, Any]) -> dict[str, Any]:
        return await self.call(key, "POST", "/v1/search", body)

    async def context(self, key: str, body: dict[str, Any]) -> dict[str, Any]:
        return await self.call(key, "POST", "/v1/context", body)

    async def check_approach(self, key: str, task_id: str, body: dict[str, Any]) -> dict[str, Any]:
        return await self.call(key, "POST", f"/v1/tasks/{task_id}/approaches/check", body)


class Grpc:
    """The gRPC gateway, its typed and JSON messages turned back into the HTTP shapes."""

    def __init__(self, stub: Any) -> None:
        self._stub = stub

    async def _guard(self, call: Any) -> dict[str, Any]:
        try:
            return dict(await call)
        except grpc.aio.AioRpcError as exc:
            body = refusal(exc)
            return {"error": body["error"], "detail": body["detail"]}

    async def open_task(self, key: str, body: dict[str, Any]) -> dict[str, Any]:
        async def call() -> dict[str, Any]:
            task = await self._stub.OpenTask(pb2.OpenTaskRequest(**body), metadata=bearer(key))
            answer = {f.name: getattr(task, f.name) for f in task.DESCRIPTOR.fields if f.name != "created"}
            answer["promotion_workflow_id"] = answer["promotion_workflow_id"] or None
            answer["closed_reason"] = answer["closed_reason"] or None
            return answer

        return await self._guard(call())

    async def append(self, key: str, task_id: str, entries: list[dict[str, Any]]) -> dict[str, Any]:
        messages = [
            pb2.Entry(
                kind=e["kind"],
                content=e["content"],
                idempotency_key=e.get("idempotency_key"),
                payload_json=json.dumps(e["payload"]) if "payload" in e else None,
            )
            for e in entries
        ]

        async def call() -> dict[str, Any]:
            reply = await self._stub.AppendEntries(
                iter([pb2.AppendRequest(task_id=task_id, entries=messages)]), metadata=bearer(key)
            )
            acks = [{"id": a.id, "seq": a.seq, "replayed": a.replayed} for a in reply.entries]
            return {"task_id": reply.task_id, "entries": acks}

        return await self._guard(call())

    async def _json(self, method: Any, key: str, body: dict[str, Any]) -> dict[str, Any]:
        async def call() -> dict[str, Any]:
            reply = await method(pb2.JsonRequest(json=json.dumps(body)), metadata=bearer(key))
            answer = json.loads(reply.json)
            assert isinstance(answer, dict)
            return answer

        return await self._guard(call())

    async def search(self, key: str, body: dict[str, Any]) -> dict[str, Any]:
        return await self._json(self._stub.Search, key, body)

    async def context(self, key: str, body: dict[str, Any]) -> dict[str, Any]:
        return await self._json(self._stub.Context, key, body)

    async def check_approach(self, key: str, task_id: str, body: dict[str, Any]) -> dict[str, Any]:
        async def call() -> dict[str, Any]:
            request = pb2.TaskJsonRequest(task_id=task_id, json=json.dumps(body))
            answer = json.loads((await self._stub.CheckApproach(request, metadata=bearer(key))).json)
            assert isinstance(answer, dict)
            return answer

        return await self._guard(call())


class Client:
    """`api.client.AsyncLoregateClient`: its models dumped as JSON, its typed exceptions as the error body."""

    def __init__(self, url: str) -> None:
        self._url = url

    async def _guard(self, key: str, use: Any) -> dict[str, Any]:
        async with AsyncLoregateClient(self._url, key) as client:
            try:
                answer: BaseModel = await use(client)
                return answer.model_dump(mode="json")
            except LoregateError as exc:
                return {"error": exc.error, "detail": exc.detail}

    async def open_task(self, key: str, body: dict[str, Any]) -> dict[str, Any]:
        return await self._guard(key, lambda c: c.open_task(**body))

    async def append(self, key: str, task_id: str, entries: list[dict[str, Any]]) -> dict[str, Any]:
        return await self._guard(key, lambda c: c.append(task_id, entries))

    async def search(self, key: str, body: dict[str, Any]) -> dict[str, Any]:
        query, rest = body["query"], {k: v for k, v in body.items() if k != "query"}
        return await self._guard(key, lambda c: c.search(query, **rest))

    async def context(self, key: str, body: dict[str, Any]) -> dict[str, Any]:
        query, rest = body["query"], {k: v for k, v in body.items() if k != "query"}
        return await self._guard(key, lambda c: c.context(query, **rest))

    async def check_approach(self, key: str, task_id: str, body: dict[str, Any]) -> dict[str, Any]:
        return await self._guard(key, lambda c: c.check_approach(task_id, **body))


@pytest.fixture(scope="module")
async def world(engine: AsyncEngine, settings: Settings) -> dict[str, Any]:
    """A tenant with project-scope memories every task in it can read, and an orchestrator to open tasks."""
    org, project = new_tenant()
    vectors = make_embedder(settings).embed_passages([f"{t}: {c}" for _, t, c in MEMORIES])
    async with engine.begin() as conn:
        seed: TaskRef = await new_task(conn, org=org, project=project)
        for (mtype, title, content), vector in zip(MEMORIES, vectors, strict=True):
            await add_memory(
                conn,
                seed,
                title=title,
                content=content,
                embedding=vector,
                memory_type=mtype,
                scope=Scope.PROJECT,
                created_at=LONG_AGO,
            )
    orchestrator = await make_actor(engine, ActorType.ORCHESTRATOR, org, project)
    return {"org": org, "project": project, "orchestrator": orchestrator}


@pytest.fixture(scope="module")
async def transports(settings: Settings, gateway_url: str) -> AsyncIterator[dict[str, Any]]:
    async with grpc_gateway(settings) as stub, httpx.AsyncClient(base_url=gateway_url, timeout=60) as http:
        yield {"http": Http(http), "grpc": Grpc(stub), "client": Client(gateway_url)}


def _undated(check: dict[str, Any]) -> dict[str, Any]:
    history = [{k: v for k, v in h.items() if k != "last_attempt_at"} for h in check.get("history", [])]
    # each run's failed approach warns the later runs' tasks of the project (live warnings): differs by run
    return {**{k: v for k, v in check.items() if k != "elsewhere"}, "history": history}


def _without_live(context: dict[str, Any]) -> dict[str, Any]:
    """The context answer without the other runs' live warnings (their section and list differ by run)."""
    text = str(context.get("context", ""))
    if LIVE_HEADING in text:
        head, _, rest = text.partition(LIVE_HEADING)
        # the live section ends where the task's short-term section (same in every run) or the footer begins
        after = rest.index(SHORT_TERM_HEADING) if SHORT_TERM_HEADING in rest else rest.index(FOOTER)
        text = head.rstrip("\n") + "\n\n" + rest[after:]
    return {**{k: v for k, v in context.items() if k not in ("live", "tokens")}, "context": text}


async def _transcript(gateway: Any, world: dict[str, Any], agent: Actor, http: Http) -> dict[str, Any]:
    """Every answer of the scenario, without what differs by construction (fresh task ids, clock times)."""
    orchestrator: Actor = world["orchestrator"]
    task_id = f"agree-{uuid.uuid4().hex[:12]}"
    open_body = {
        "org": world["org"],
        "project": world["project"],
        "worktree": "main",
        "description": "same answers everywhere",
        "task_id": task_id,
    }
    opened = await gateway.open_task(orchestrator.key, open_body)
    reopened = await gateway.open_task(orchestrator.key, open_body)
    batch = [
        {
            "kind": "decision",
            "content": "ack first, queue later",
            "payload": {"why": ["latency", 31]},
            "idempotency_key": "k1",
        },
        {"kind": "log", "content": "ran the webhook tests"},
    ]
    appended = await gateway.append(agent.key, task_id, batch)
    retried = await gateway.append(agent.key, task_id, batch[:1])
    clashing = await gateway.append(agent.key, task_id, [{**batch[0], "content": "something else"}])
    unknown = await gateway.append(agent.key, "agree-no-such-task", batch[1:])
    bad_key = await gateway.append("lg_000000000000_not-a-real-key", task_id, batch[1:])
    searched = await gateway.search(agent.key, {**SEARCH, "task_id": task_id})
    compact = await gateway.search(agent.key, {**SEARCH, "task_id": task_id, "compact": True})
    context = await gateway.context(agent.key, {**CONTEXT, "task_id": task_id})
    fresh_approach = await gateway.check_approach(agent.key, task_id, {"approach": APPROACH})
    # recording is HTTP-only (and the client's): the same record precedes the check in every run
    await http.call(
        agent.key,
        "POST",
        f"/v1/tasks/{task_id}/approaches",
        {"approach": APPROACH, "outcome": "failed", "reason": "still times out at 60 s"},
    )
    failed_approach = await gateway.check_approach(agent.key, task_id, {"approach": APPROACH})

    assert reopened == opened, "reopening with the same attributes returns the same task"
    assert opened["task_id"] == task_id and appended["task_id"] == task_id
    assert retried["entries"][0]["id"] == appended["entries"][0]["id"]
    return {
        "opened": {k: v for k, v in opened.items() if k not in ("task_id", "created_at")},
        "appended": [(e["seq"], e["replayed"]) for e in appended["entries"]],
        "retried": [(e["seq"], e["replayed"]) for e in retried["entries"]],
        "clashing": clashing,
        "unknown": unknown,
        "bad_key": bad_key,
        "searched": searched,
        "compact": compact,
        "context": _without_live(context),
        "fresh_approach": _undated(fresh_approach),
        "failed_approach": _undated(failed_approach),
    }


@pytest.fixture(scope="module")
async def reference(engine: AsyncEngine, world: dict[str, Any], transports: dict[str, Any]) -> dict[str, Any]:
    """The answers raw HTTP gives."""
    agent = await make_actor(engine, ActorType.AGENT, world["org"], world["project"])
    return await _transcript(transports["http"], world, agent, transports["http"])


@pytest.mark.parametrize("gateway", ["http", "grpc", "client"])
async def test_gateways_give_the_same_answers(
    gateway: str,
    engine: AsyncEngine,
    world: dict[str, Any],
    transports: dict[str, Any],
    reference: dict[str, Any],
) -> None:
    agent = await make_actor(engine, ActorType.AGENT, world["org"], world["project"])
    transcript = await _transcript(transports[gateway], world, agent, transports["http"])
    # the scenario means something: the reference itself shows the behaviour a user relies on
    assert reference["appended"] == [(1, False), (2, False)] and reference["retried"] == [(1, True)]
    assert [r["error"] for r in (reference["clashing"], reference["unknown"], reference["bad_key"])] == [
        "conflict",
        "not_found",
        "unauthenticated",
    ]
    assert reference["searched"]["results"][0]["title"] == "Webhook retries"
    assert reference["context"]["citations"]
    assert (reference["fresh_approach"]["valid"], reference["failed_approach"]["valid"]) == (True, False)
    assert transcript == reference
