"""The promotion API over real HTTP (and gRPC), a Temporal dev server, a worker with the real activities."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import grpc
import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio.client import Client, WorkflowHandle, WorkflowUpdateFailedError
from temporalio.common import WorkflowIDConflictPolicy

from governance.config import Settings
from governance.storage.promotions import record_approval_grant
from governance.storage.tables import memory_events
from tests.utils.factories import Actor
from tests.utils.gateway import running_gateway
from tests.utils.grpc_gateway import bearer, grpc_gateway, pb2, refusal
from tests.utils.promotion_factories import Entry, active_memories, events_of, make_task
from tests.utils.promotion_gateway import (
    awaiting_approval,
    open_task,
    running_worker,
    stage,
    wait_promotion_state,
)
from tests.utils.tenancy import task_key_of
from workflows.promotion import PromotionWorkflow
from workflows.promotion_contract import PromotionInput, Verification, workflow_id_for

ENTRIES = [
    {"kind": "thought", "content": "Need a Postgres driver that supports async."},
    {
        "kind": "decision",
        "content": "db.driver: psycopg 3 with the async API",
        "payload": {"key": "db.driver"},
    },
    {"kind": "fact", "content": "The CI runners have two CPU cores and 7 GB of memory."},
    {"kind": "error", "content": "ImportError: no module named psycopg2"},
    {
        "kind": "result",
        "content": "Switched the import to psycopg; all tests pass.",
        "payload": {"repeatable": True},
    },
]
TESTS_PASSED = {"source": "tests_passed", "success": True}


async def _task(http: httpx.AsyncClient, team: dict[str, Actor]) -> str:
    """A task opened by the orchestrator, with the agent's staging entries."""
    task_id = await open_task(http, team["orchestrator"], "pick the async db driver")
    await stage(http, team["agent"], task_id, ENTRIES)
    return task_id


async def _start(http: httpx.AsyncClient, actor: Actor, task_id: str, **body: Any) -> httpx.Response:
    return await http.post(f"/v1/tasks/{task_id}/promotion", headers=actor.headers, json=body)


async def test_promotion_task_scope_by_orchestrator_publishes(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    task_id = await _task(http, team)
    started = await _start(
        http, team["orchestrator"], task_id, target_scope="task", verification=TESTS_PASSED
    )
    assert started.status_code == 202, started.text
    assert (
        started.json()["workflow_id"] == workflow_id_for(task_key_of(task_id))
        and started.json()["created"] is True
    )
    done = await wait_promotion_state(http, team["agent"].headers, task_id, "published")
    assert done["published"] and done["live"] is True
    published = await active_memories(engine, task_id=task_id)
    assert published and all(m.scope_key == f"task:{task_key_of(task_id)}" for m in published)
    task = await http.get(f"/v1/tasks/{task_id}", headers=team["agent"].headers)
    assert task.json()["promotion_workflow_id"] == workflow_id_for(task_key_of(task_id))


async def test_promotion_project_scope_waits_with_plan(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    task_id, status = await awaiting_approval(http, team, ENTRIES)
    assert status["target_scope"] == "project" and status["requires_approval"] is True and status["live"]
    assert any(p["canonical_key"] == "db.driver" and p["decision"] == "new" for p in status["plan"])
    assert await active_memories(engine, task_id=task_id) == []


async def test_approve_by_agent_is_forbidden_and_publishes_nothing(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    task_id, _ = await awaiting_approval(http, team, ENTRIES)
    refused = await http.post(f"/v1/promotions/{task_id}/approve", headers=team["agent"].headers, json={})
    assert refused.status_code == 403 and refused.json()["error"] == "forbidden"
    status = await http.get(f"/v1/promotions/{task_id}", headers=team["human"].headers)
    assert status.json()["state"] == "awaiting_approval"
    assert await active_memories(engine, task_id=task_id) == []


async def test_approve_by_human_publishes_and_names_the_human(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    task_id, _ = await awaiting_approval(http, team, ENTRIES)
    human = team["human"]
    approved = await http.post(
        f"/v1/promotions/{task_id}/approve", headers=human.headers, json={"note": "looks right"}
    )
    assert approved.status_code == 200, approved.text
    assert approved.json()["accepted"] is True and approved.json()["approver"] == human.principal.id
    done = await wait_promotion_state(http, human.headers, task_id, "published")
    assert done["decided_by"] == human.principal.id and done["decision_note"] == "looks right"
    published = await active_memories(engine, task_id=task_id)
    assert published and all(m.scope_key.startswith("project:") for m in published)
    approved_events = [e for e in await events_of(engine, task_id) if e.event_type == "APPROVED"]
    assert [e.actor_id for e in approved_events] == [human.principal.id]


async def test_reject_by_human_publishes_nothing(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    task_id, _ = await awaiting_approval(http, team, ENTRIES)
    rejected = await http.post(
        f"/v1/promotions/{task_id}/reject", headers=team["human"].headers, json={"note": "too early"}
    )
    assert rejected.status_code == 200, rejected.text
    done = await wait_promotion_state(http, team["human"].headers, task_id, "rejected")
    assert done["decided_by"] == team["human"].principal.id
    assert await active_memories(engine, task_id=task_id) == []


async def test_approve_body_cannot_name_the_approver(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    task_id, _ = await awaiting_approval(http, team, ENTRIES)
    answer = await http.post(
        f"/v1/promotions/{task_id}/approve",
        headers=team["agent"].headers,
        json={"approver": team["human"].principal.id},
    )
    assert answer.status_code == 422
    assert await active_memories(engine, task_id=task_id) == []


async def test_approve_by_other_tenant_human_is_not_found(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    task_id, _ = await awaiting_approval(http, team, ENTRIES)
    refused = await http.post(f"/v1/promotions/{task_id}/approve", headers=team["outsider"].headers, json={})
    # for an outsider the task does not exist (a 403 would name its tenant)
    assert refused.status_code == 404 and refused.json()["error"] == "not_found"
    status = await http.get(f"/v1/promotions/{task_id}", headers=team["human"].headers)
    assert status.json()["state"] == "awaiting_approval"
    assert await active_memories(engine, task_id=task_id) == []


async def test_start_promotion_twice_returns_the_same_workflow(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine, temporal: Client
) -> None:
    task_id = await _task(http, team)
    first = await _start(http, team["orchestrator"], task_id, target_scope="project")
    second = await _start(http, team["orchestrator"], task_id, target_scope="project")
    assert first.status_code == second.status_code == 202
    assert (second.json()["workflow_id"], second.json()["run_id"]) == (
        first.json()["workflow_id"],
        first.json()["run_id"],
    )
    assert first.json()["created"] is True and second.json()["created"] is False
    await wait_promotion_state(http, team["agent"].headers, task_id, "awaiting_verification")
    assert await active_memories(engine, task_id=task_id) == []
    await temporal.get_workflow_handle(workflow_id_for(task_key_of(task_id))).terminate("test over")


async def test_start_promotion_into_another_scope_while_running_conflicts(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine, temporal: Client
) -> None:
    task_id = await _task(http, team)
    assert (await _start(http, team["orchestrator"], task_id, target_scope="project")).status_code == 202
    clash = await _start(http, team["orchestrator"], task_id, target_scope="task")
    assert clash.status_code == 409 and "project" in clash.json()["detail"]
    assert await active_memories(engine, task_id=task_id) == []
    await temporal.get_workflow_handle(workflow_id_for(task_key_of(task_id))).terminate("test over")


async def test_start_promotion_after_it_ended_conflicts(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    task_id = await _task(http, team)
    await _start(http, team["orchestrator"], task_id, target_scope="task", verification=TESTS_PASSED)
    await wait_promotion_state(http, team["agent"].headers, task_id, "published")
    before = len(await active_memories(engine, task_id=task_id))
    again = await _start(http, team["orchestrator"], task_id, target_scope="task", verification=TESTS_PASSED)
    assert again.status_code == 409 and "published" in again.json()["detail"]
    assert len(await active_memories(engine, task_id=task_id)) == before


async def test_start_promotion_unknown_task_is_not_found(
    http: httpx.AsyncClient, team: dict[str, Actor]
) -> None:
    answer = await _start(http, team["orchestrator"], "no-such-task-anywhere", target_scope="task")
    assert answer.status_code == 404 and answer.json()["error"] == "not_found"


async def test_start_promotion_of_a_task_without_entries_conflicts_and_starts_nothing(
    http: httpx.AsyncClient, team: dict[str, Actor], temporal: Client
) -> None:
    task_id = await open_task(http, team["orchestrator"], "Migrated the database to Postgres 16")
    answer = await _start(http, team["orchestrator"], task_id, target_scope="task", verification=TESTS_PASSED)
    assert answer.status_code == 409, answer.text
    assert answer.json()["detail"] == (
        f"task {task_id!r} has no entries: nothing to promote; append its work "
        "(POST /v1/tasks/{id}/entries), then promote it"
    )
    assert (await http.get(f"/v1/promotions/{task_id}", headers=team["agent"].headers)).status_code == 404
    listed = await http.get(f"/v1/tasks/{task_id}/promotions", headers=team["agent"].headers)
    assert listed.status_code == 200 and listed.json()["promotions"] == [], listed.text


async def test_start_promotion_by_agent_is_forbidden(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    task_id = await _task(http, team)
    answer = await _start(http, team["agent"], task_id, target_scope="task", verification=TESTS_PASSED)
    assert answer.status_code == 403 and answer.json()["error"] == "forbidden"
    assert (await http.get(f"/v1/promotions/{task_id}", headers=team["agent"].headers)).status_code == 404
    assert await active_memories(engine, task_id=task_id) == []


async def test_start_promotion_claiming_human_approval_needs_an_approver(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    task_id = await _task(http, team)
    claim = {"source": "human_approved", "success": True}
    answer = await _start(http, team["orchestrator"], task_id, target_scope="task", verification=claim)
    assert answer.status_code == 403 and "approve" in answer.json()["detail"]
    assert (await http.get(f"/v1/promotions/{task_id}", headers=team["agent"].headers)).status_code == 404
    assert await active_memories(engine, task_id=task_id) == []


@pytest.mark.parametrize(
    "body",
    [
        {"target_scope": "galaxy"},
        {"target_scope": "task", "verification": {"source": "vibes", "success": True}},
        {"target_scope": "task", "requested_by": "someone-else"},
    ],
)
async def test_start_promotion_invalid_body_is_unprocessable(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine, body: dict[str, Any]
) -> None:
    task_id = await _task(http, team)
    answer = await http.post(
        f"/v1/tasks/{task_id}/promotion", headers=team["orchestrator"].headers, json=body
    )
    assert answer.status_code == 422 and answer.json()["error"] == "validation_error"
    assert (await http.get(f"/v1/promotions/{task_id}", headers=team["agent"].headers)).status_code == 404
    assert await active_memories(engine, task_id=task_id) == []


async def test_promotion_status_without_promotion_is_not_found(
    http: httpx.AsyncClient, team: dict[str, Actor]
) -> None:
    task_id = await _task(http, team)
    answer = await http.get(f"/v1/promotions/{task_id}", headers=team["agent"].headers)
    assert answer.status_code == 404 and "no promotion" in answer.json()["detail"]


async def test_promotion_status_of_other_tenant_is_not_found(
    http: httpx.AsyncClient, team: dict[str, Actor]
) -> None:
    task_id, _ = await awaiting_approval(http, team, ENTRIES)
    answer = await http.get(f"/v1/promotions/{task_id}", headers=team["outsider"].headers)
    assert answer.status_code == 404 and answer.json()["detail"] == f"task {task_id!r} does not exist"


async def test_approve_when_not_awaiting_approval_conflicts(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine, temporal: Client
) -> None:
    task_id = await _task(http, team)
    await _start(http, team["orchestrator"], task_id, target_scope="project")
    await wait_promotion_state(http, team["human"].headers, task_id, "awaiting_verification")
    answer = await http.post(f"/v1/promotions/{task_id}/approve", headers=team["human"].headers, json={})
    assert answer.status_code == 409 and answer.json()["error"] == "conflict"
    assert "awaiting_verification" in answer.json()["detail"]
    assert await active_memories(engine, task_id=task_id) == []
    await temporal.get_workflow_handle(workflow_id_for(task_key_of(task_id))).terminate("test over")


async def test_verify_twice_conflicts(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    task_id = await _task(http, team)
    await _start(http, team["orchestrator"], task_id, target_scope="project")
    await wait_promotion_state(http, team["human"].headers, task_id, "awaiting_verification")
    first = await http.post(
        f"/v1/promotions/{task_id}/verify", headers=team["orchestrator"].headers, json=TESTS_PASSED
    )
    assert first.status_code == 200, first.text
    given = {**TESTS_PASSED, "given_by": team["orchestrator"].principal.id}
    assert first.json()["verification"] == given
    second = await http.post(
        f"/v1/promotions/{task_id}/verify",
        headers=team["orchestrator"].headers,
        json={"source": "pr_merged", "success": True},
    )
    assert second.status_code == 409 and second.json()["error"] == "conflict"
    status = await wait_promotion_state(http, team["human"].headers, task_id, "awaiting_approval")
    assert status["verification"] == given
    assert await active_memories(engine, task_id=task_id) == []


async def test_verify_unknown_source_is_unprocessable(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine, temporal: Client
) -> None:
    task_id = await _task(http, team)
    await _start(http, team["orchestrator"], task_id, target_scope="task")
    answer = await http.post(
        f"/v1/promotions/{task_id}/verify",
        headers=team["orchestrator"].headers,
        json={"source": "it_compiles", "success": True},
    )
    assert answer.status_code == 422
    status = await wait_promotion_state(http, team["human"].headers, task_id, "awaiting_verification")
    assert status["verification"] is None
    assert await active_memories(engine, task_id=task_id) == []
    await temporal.get_workflow_handle(workflow_id_for(task_key_of(task_id))).terminate("test over")


async def test_list_awaiting_approval_shows_only_the_callers_tenant(
    http: httpx.AsyncClient, team: dict[str, Actor]
) -> None:
    task_id, _ = await awaiting_approval(http, team, ENTRIES)
    listed: list[str] = []
    for _ in range(100):  # visibility is eventually consistent
        answer = await http.get(
            "/v1/promotions", headers=team["human"].headers, params={"state": "awaiting_approval"}
        )
        assert answer.status_code == 200, answer.text
        listed = [p["task_id"] for p in answer.json()["promotions"]]
        if task_id in listed:
            break
        await asyncio.sleep(0.2)
    assert listed == [task_id]
    entry = answer.json()["promotions"][0]
    assert entry["state"] == "awaiting_approval" and entry["target_scope"] == "project"
    outsider = await http.get(
        "/v1/promotions", headers=team["outsider"].headers, params={"state": "awaiting_approval"}
    )
    assert task_id not in [p["task_id"] for p in outsider.json()["promotions"]]


async def test_list_unknown_state_is_unprocessable(http: httpx.AsyncClient, team: dict[str, Actor]) -> None:
    answer = await http.get("/v1/promotions", headers=team["human"].headers, params={"state": "pending-ish"})
    assert answer.status_code == 422


async def test_grpc_start_promotion_answers_like_http(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine, promo_settings: Settings
) -> None:
    task_id = await _task(http, team)
    body = json.dumps({"target_scope": "task", "verification": TESTS_PASSED})
    async with grpc_gateway(promo_settings) as stub:
        reply = await stub.StartPromotion(
            pb2.TaskJsonRequest(task_id=task_id, json=body), metadata=bearer(team["orchestrator"].key)
        )
        started = json.loads(reply.json)
        with pytest.raises(grpc.aio.AioRpcError) as denied:
            await stub.StartPromotion(
                pb2.TaskJsonRequest(task_id=task_id, json=body), metadata=bearer(team["agent"].key)
            )
    assert denied.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert refusal(denied.value)["error"] == "forbidden"
    again = await _start(http, team["orchestrator"], task_id, target_scope="task", verification=TESTS_PASSED)
    assert started["workflow_id"] == workflow_id_for(task_key_of(task_id)) and started["created"] is True
    assert set(started) == set(again.json())
    await wait_promotion_state(http, team["agent"].headers, task_id, "published")
    assert await active_memories(engine, task_id=task_id)


@pytest.fixture(scope="module")
async def api_only_queue(temporal: Client, promo_settings: Settings) -> AsyncIterator[str]:
    """A task queue whose worker runs with `approval_mode=api_only`."""
    api_only = promo_settings.model_copy(update={"task_queue": f"{promo_settings.task_queue}-api-only"})
    async with running_worker(temporal, api_only, approval_mode="api_only"):
        yield api_only.task_queue


async def _awaiting_approval_api_only(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine, temporal: Client, queue: str
) -> tuple[str, WorkflowHandle[Any, Any]]:
    human = team["human"]
    assert human.principal.project is not None
    entries = [Entry(e["kind"], e["content"], e.get("payload")) for e in ENTRIES]
    task = await make_task(engine, human.principal.org, human.principal.project, entries)
    # the start as the gateway makes it in api_only mode: a start grant for the authenticated requester
    async with engine.begin() as conn:
        await record_approval_grant(
            conn,
            workflow_id=workflow_id_for(task_key_of(task.task_id)),
            task_id=task.task_id,
            grant="start-grant",
            principal=human.principal,
            decision="start",
            note="",
        )
    handle = await temporal.start_workflow(
        PromotionWorkflow.run,
        PromotionInput(
            task.task_id,
            "project",
            Verification("tests_passed", True),
            requested_by=human.principal.id,
            grant="start-grant",
        ),
        id=workflow_id_for(task_key_of(task.task_id)),
        task_queue=queue,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
    )
    await wait_promotion_state(http, human.headers, task.task_id, "awaiting_approval")
    return task.task_id, handle


async def test_api_only_refuses_ui_signal_and_accepts_api_approval(
    http: httpx.AsyncClient,
    team: dict[str, Actor],
    engine: AsyncEngine,
    temporal: Client,
    api_only_queue: str,
) -> None:
    human = team["human"]
    task_id, handle = await _awaiting_approval_api_only(http, team, engine, temporal, api_only_queue)
    # what the Temporal UI sends (README): JSON naming an approver who is allowed to approve
    await handle.signal("approve", {"approver": human.principal.id, "note": "from the UI"})
    status = await _refused_once(http, human, task_id)
    assert "api_only" in status["refusals"][0]["reason"] and status["refusals"][0]["channel"] == "signal"
    assert await active_memories(engine, task_id=task_id) == []
    approved = await http.post(f"/v1/promotions/{task_id}/approve", headers=human.headers, json={})
    assert approved.status_code == 200, approved.text
    done = await wait_promotion_state(http, human.headers, task_id, "published")
    assert done["decided_by"] == human.principal.id
    async with engine.connect() as conn:
        grants = list(
            await conn.execute(
                select(memory_events)
                .where(memory_events.c.task_id == task_id, memory_events.c.event_type == "APPROVAL_GRANT")
                .order_by(memory_events.c.id)
            )
        )
    # the start's grant, then the approval's
    assert [(g.actor_id, g.payload["decision"]) for g in grants] == [
        (human.principal.id, "start"),
        (human.principal.id, "approve"),
    ]
    assert await active_memories(engine, task_id=task_id)


async def test_api_only_refuses_a_rejection_grant_replayed_as_approval(
    http: httpx.AsyncClient,
    team: dict[str, Actor],
    engine: AsyncEngine,
    temporal: Client,
    api_only_queue: str,
) -> None:
    human = team["human"]
    task_id, handle = await _awaiting_approval_api_only(http, team, engine, temporal, api_only_queue)
    async with engine.begin() as conn:  # a grant the gateway wrote for this human's rejection
        await record_approval_grant(
            conn,
            workflow_id=handle.id,
            task_id=task_id,
            grant="g-reject",
            principal=human.principal,
            decision="reject",
            note="",
        )
    # someone with UI access sends the `approve` update naming the human and that grant
    with pytest.raises(WorkflowUpdateFailedError):
        await handle.execute_update("approve", {"approver": human.principal.id, "grant": "g-reject"})
    status = await wait_promotion_state(http, human.headers, task_id, "awaiting_approval")
    assert status["refusals"] and status["refusals"][0]["channel"] == "update"
    assert await active_memories(engine, task_id=task_id) == []
    await handle.terminate("test over")


async def _refused_once(http: httpx.AsyncClient, actor: Actor, task_id: str) -> dict[str, Any]:
    status: dict[str, Any] = {}
    for _ in range(100):
        status = (await http.get(f"/v1/promotions/{task_id}", headers=actor.headers)).json()
        if status["refusals"]:
            assert status["state"] == "awaiting_approval"
            return status
        await asyncio.sleep(0.1)
    raise AssertionError(f"the signal was never refused: {status}")


async def test_start_promotion_with_temporal_down_is_unavailable(
    team: dict[str, Actor], engine: AsyncEngine, settings: Settings
) -> None:
    from tests.utils.gateway import free_port

    down = settings.model_copy(update={"temporal_address": f"127.0.0.1:{free_port()}"})
    org, project = team["orchestrator"].principal.org, team["orchestrator"].principal.project
    assert project is not None
    task = await make_task(engine, org, project, [Entry("fact", "Temporal is not running here.")])
    with running_gateway(down) as url:
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            answer = await _start(
                client, team["orchestrator"], task.task_id, target_scope="task", verification=TESTS_PASSED
            )
            listing = await client.get("/v1/promotions", headers=team["human"].headers)
    assert answer.status_code == 503 and answer.json()["error"] == "unavailable"
    assert listing.status_code == 503 and answer.headers.get("retry-after") == "1"
    assert await active_memories(engine, task_id=task.task_id) == []


async def test_promotion_status_without_worker_comes_from_visibility(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine, temporal: Client
) -> None:
    human = team["human"]
    assert human.principal.project is not None
    task = await make_task(engine, human.principal.org, human.principal.project, [Entry("fact", "no worker")])
    handle = await temporal.start_workflow(
        PromotionWorkflow.run,
        PromotionInput(task.task_id, "project", requested_by=task.requested_by),
        id=workflow_id_for(task_key_of(task.task_id)),
        task_queue="promo-api-nobody-polls-this",
    )
    began = time.monotonic()
    answer = await http.get(f"/v1/promotions/{task.task_id}", headers=human.headers)
    assert answer.status_code == 200, answer.text
    assert answer.json()["live"] is False and answer.json()["workflow_status"] == "RUNNING"
    assert time.monotonic() - began < 30
    await handle.terminate("test over")


async def test_ui_signal_with_documented_payload_publishes_in_ui_or_api_mode(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine, temporal: Client
) -> None:
    task_id, _ = await awaiting_approval(http, team, ENTRIES)
    human = team["human"]
    # Workflow actions → Send a Signal → `approve` with the JSON the README gives
    await temporal.get_workflow_handle(workflow_id_for(task_key_of(task_id))).signal(
        "approve", {"approver": human.principal.id, "note": "approved in the UI"}
    )
    done = await wait_promotion_state(http, human.headers, task_id, "published")
    assert done["decided_by"] == human.principal.id and done["decision_note"] == "approved in the UI"
    approved_events = [e for e in await events_of(engine, task_id) if e.event_type == "APPROVED"]
    assert [e.actor_id for e in approved_events] == [human.principal.id]
