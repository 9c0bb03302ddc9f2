"""Follow-up promotions (docs/promotions.md): a task is promoted again once it learnt something new.

Against a real gateway, the Temporal dev server and a worker running the real activities: what a second
promotion publishes, a rejected one started again after new evidence, a start without new entries refused,
parallel starts taking one number, appends answering the promotion they belong to, closed tasks, and raw
Temporal starts of follow-up ids with forged input.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import grpc
import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio.client import Client, WorkflowFailureError

from governance.config import Settings
from governance.storage.tables import memories, memory_events, tasks
from tests.utils.factories import Actor
from tests.utils.gateway import running_gateway
from tests.utils.grpc_gateway import bearer, grpc_gateway, pb2, refusal
from tests.utils.promotion_gateway import open_task, running_worker, wait_promotion_state
from tests.utils.tenancy import task_key_of
from workflows.promotion import PromotionWorkflow
from workflows.promotion_contract import PromotionInput, workflow_id_for

FIRST = [
    {
        "kind": "decision",
        "content": "db.driver: psycopg 3 with the async API",
        "payload": {"key": "db.driver"},
    },
    {"kind": "fact", "content": "The CI runners have two CPU cores and 7 GB of memory."},
]
LATER = [{"kind": "fact", "content": "The staging cluster runs Postgres 16 with pgvector 0.7 installed."}]
TESTS_PASSED = {"source": "tests_passed", "success": True}


async def _open(http: httpx.AsyncClient, team: dict[str, Actor], entries: list[dict[str, Any]]) -> str:
    orchestrator = team["orchestrator"]
    task_id = await open_task(http, orchestrator, "pick the async db driver")
    await _append(http, team, task_id, entries)
    return task_id


async def _append(
    http: httpx.AsyncClient, team: dict[str, Actor], task_id: str, entries: list[dict[str, Any]]
) -> dict[str, Any]:
    appended = await http.post(
        f"/v1/tasks/{task_id}/entries", headers=team["agent"].headers, json={"entries": entries}
    )
    assert appended.status_code == 201, appended.text
    body: dict[str, Any] = appended.json()
    return body


async def _start(
    http: httpx.AsyncClient, team: dict[str, Actor], task_id: str, scope: str, evidence: bool = True
) -> httpx.Response:
    body: dict[str, Any] = {"target_scope": scope}
    if evidence:
        body["verification"] = TESTS_PASSED
    return await http.post(f"/v1/tasks/{task_id}/promotion", headers=team["orchestrator"].headers, json=body)


async def _published(http: httpx.AsyncClient, team: dict[str, Actor], task_id: str, number: int) -> set[str]:
    answer = await http.get(
        f"/v1/promotions/{task_id}", params={"number": number}, headers=team["agent"].headers
    )
    assert answer.status_code == 200, answer.text
    assert answer.json()["number"] == number
    return {p["memory_id"] for p in answer.json()["published"]}


async def _sources(engine: AsyncEngine, ids: set[str]) -> dict[str, tuple[str, set[int]]]:
    async with engine.connect() as conn:
        rows = await conn.execute(
            select(memories.c.id, memories.c.content, memories.c.source_entry_ids).where(
                memories.c.id.in_(list(ids))
            )
        )
        return {str(r.id): (r.content, set(r.source_entry_ids)) for r in rows}


async def _promotions(http: httpx.AsyncClient, actor: Actor, task_id: str) -> dict[str, Any]:
    listed = await http.get(f"/v1/tasks/{task_id}/promotions", headers=actor.headers)
    assert listed.status_code == 200, listed.text
    body: dict[str, Any] = listed.json()
    return body


async def test_followup_after_publish_publishes_only_the_new_knowledge(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    task_id = await _open(http, team, FIRST)
    first = await _start(http, team, task_id, "task")
    assert first.status_code == 202 and first.json()["number"] == 1, first.text
    assert first.json()["workflow_id"] == workflow_id_for(task_key_of(task_id))
    await wait_promotion_state(http, team["agent"].headers, task_id, "published")

    later = await _append(http, team, task_id, LATER)
    assert later["promotion"] == 2  # promotion 1 ended: these belong to the next one
    second = await _start(http, team, task_id, "task")
    assert second.status_code == 202, second.text
    assert second.json()["number"] == 2 and second.json()["created"] is True
    assert second.json()["workflow_id"] == f"promote-{task_key_of(task_id)}-2"
    done = await wait_promotion_state(http, team["agent"].headers, task_id, "published")
    assert done["number"] == 2 and done["workflow_id"] == second.json()["workflow_id"]

    one, two = await _published(http, team, task_id, 1), await _published(http, team, task_id, 2)
    assert one and two and not one & two
    new_ids = {e["id"] for e in later["entries"]}
    sources = await _sources(engine, two)
    # everything promotion 2 published comes from the entries appended after promotion 1's snapshot
    assert all(entry_ids <= new_ids for _, entry_ids in sources.values()), sources
    texts = " ".join(content for content, _ in sources.values())
    assert "Postgres 16" in texts and "two CPU cores" not in texts and "psycopg" not in texts

    listed = await _promotions(http, team["agent"], task_id)
    rows = listed["promotions"]
    assert [(r["number"], r["outcome"]) for r in rows] == [(1, "published"), (2, "published")]
    assert rows[0]["after_seq"] == 0 and rows[0]["last_seq"] == len(FIRST)
    assert (rows[1]["after_seq"], rows[1]["last_seq"]) == (len(FIRST), len(FIRST) + len(LATER))
    assert listed["next_entries_promotion"] == 3 and listed["closed"] is None


async def test_followup_without_new_entries_is_409_naming_the_last_promotion(
    http: httpx.AsyncClient, team: dict[str, Actor]
) -> None:
    task_id = await _open(http, team, FIRST)
    assert (await _start(http, team, task_id, "task")).status_code == 202
    await wait_promotion_state(http, team["agent"].headers, task_id, "published")
    again = await _start(http, team, task_id, "task")
    assert again.status_code == 409, again.text
    detail = again.json()["detail"]
    assert "promotion 1 of task" in detail and "ended (published)" in detail
    assert "no entry was appended after its snapshot" in detail
    assert len((await _promotions(http, team["agent"], task_id))["promotions"]) == 1


async def test_rejected_promotion_starts_again_after_new_evidence(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    task_id = await _open(http, team, FIRST)
    assert (await _start(http, team, task_id, "project")).status_code == 202
    first = await wait_promotion_state(http, team["human"].headers, task_id, "awaiting_approval")
    rejected = await http.post(
        f"/v1/promotions/{task_id}/reject", headers=team["human"].headers, json={"note": "no benchmark yet"}
    )
    assert rejected.status_code == 200, rejected.text
    await wait_promotion_state(http, team["agent"].headers, task_id, "rejected")

    refused = await _start(http, team, task_id, "project")
    assert refused.status_code == 409 and "ended (rejected)" in refused.json()["detail"], refused.text

    evidence = await _append(http, team, task_id, LATER)
    assert evidence["promotion"] == 2
    again = await _start(http, team, task_id, "project")
    assert again.status_code == 202 and again.json()["number"] == 2, again.text
    second = await wait_promotion_state(http, team["human"].headers, task_id, "awaiting_approval")
    # a rejection published nothing: the follow-up weighs the rejected entries again, with the new one
    assert second["number"] == 2 and second["plan_total"] == first["plan_total"] + len(LATER)
    approved = await http.post(f"/v1/promotions/{task_id}/approve", headers=team["human"].headers, json={})
    assert approved.status_code == 200, approved.text
    await wait_promotion_state(http, team["agent"].headers, task_id, "published")
    texts = " ".join(
        c for c, _ in (await _sources(engine, await _published(http, team, task_id, 2))).values()
    )
    assert "Postgres 16" in texts and "two CPU cores" in texts
    old = await http.get(f"/v1/promotions/{task_id}", params={"number": 1}, headers=team["agent"].headers)
    assert old.status_code == 200 and old.json()["state"] == "rejected"
    missing = await http.get(f"/v1/promotions/{task_id}", params={"number": 3}, headers=team["agent"].headers)
    assert missing.status_code == 404 and "no promotion 3" in missing.json()["detail"]


async def test_appends_during_a_promotion_belong_to_it_until_its_snapshot_then_to_the_next(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    task_id = await _open(http, team, FIRST)
    assert (await _start(http, team, task_id, "project", evidence=False)).status_code == 202
    await wait_promotion_state(http, team["agent"].headers, task_id, "awaiting_verification")
    before = await _append(http, team, task_id, [{"kind": "log", "content": "benchmarks are running"}])
    assert before["promotion"] == 1  # no snapshot yet: promotion 1 will read it
    verified = await http.post(
        f"/v1/promotions/{task_id}/verify", headers=team["orchestrator"].headers, json=TESTS_PASSED
    )
    assert verified.status_code == 200, verified.text
    await wait_promotion_state(http, team["human"].headers, task_id, "awaiting_approval")
    after = await _append(http, team, task_id, LATER)
    assert after["promotion"] == 2  # the snapshot is taken: the follow-up reads it
    # while promotion 1 runs, a start finds it (a second request is not a second promotion)
    running = await _start(http, team, task_id, "project")
    assert running.status_code == 202 and (running.json()["number"], running.json()["created"]) == (1, False)
    other_scope = await _start(http, team, task_id, "org")
    assert other_scope.status_code == 409 and "already being promoted" in other_scope.json()["detail"]
    listed = await _promotions(http, team["agent"], task_id)
    assert [(r["number"], r["outcome"], r["last_seq"]) for r in listed["promotions"]] == [
        (1, None, len(FIRST) + 1)
    ]
    rejected = await http.post(f"/v1/promotions/{task_id}/reject", headers=team["human"].headers, json={})
    assert rejected.status_code == 200, rejected.text
    await wait_promotion_state(http, team["agent"].headers, task_id, "rejected")
    # an entry waits for the next promotion: the staging archive does not count the task as ended
    async with engine.connect() as conn:
        ended_at = (
            await conn.execute(select(tasks.c.ended_at).where(tasks.c.id == task_key_of(task_id)))
        ).scalar_one()
    assert ended_at is None


async def test_parallel_starts_take_one_number_and_run_one_workflow(
    http: httpx.AsyncClient, team: dict[str, Actor], temporal: Client, promo_settings: Settings
) -> None:
    """Eight start requests at once, through two gateways (each its own loop, pool and Temporal client)."""
    task_id = await _open(http, team, FIRST)
    assert (await _start(http, team, task_id, "task")).status_code == 202
    await wait_promotion_state(http, team["agent"].headers, task_id, "published")
    await _append(http, team, task_id, LATER)
    with running_gateway(promo_settings) as other_url:
        async with httpx.AsyncClient(base_url=other_url, timeout=90) as other:
            requests = [
                _start(client, team, task_id, "project", evidence=False)
                for _ in range(4)
                for client in (http, other)
            ]
            answers = await asyncio.gather(*requests)
    assert [a.status_code for a in answers] == [202] * 8, [a.text for a in answers]
    started = [a.json() for a in answers]
    assert {s["workflow_id"] for s in started} == {f"promote-{task_key_of(task_id)}-2"}
    assert {s["number"] for s in started} == {2} and sum(s["created"] for s in started) == 1
    assert len({s["run_id"] for s in started}) == 1
    listed = await _promotions(http, team["agent"], task_id)
    assert [r["number"] for r in listed["promotions"]] == [1, 2]
    runs = [w async for w in temporal.list_workflows(f'WorkflowId = "promote-{task_key_of(task_id)}-2"')]
    assert len(runs) <= 1  # visibility may lag; never two runs
    await temporal.get_workflow_handle(started[0]["workflow_id"]).terminate("test over")


async def test_closed_task_refuses_entries_and_promotions_on_http(
    http: httpx.AsyncClient, team: dict[str, Actor]
) -> None:
    task_id = await _open(http, team, FIRST)
    refused = await http.post(f"/v1/tasks/{task_id}/close", headers=team["agent"].headers)
    assert refused.status_code == 403, refused.text
    closed = await http.post(f"/v1/tasks/{task_id}/close", headers=team["orchestrator"].headers)
    assert closed.status_code == 200 and closed.json()["closed"] == "closed", closed.text
    late = await http.post(
        f"/v1/tasks/{task_id}/entries", headers=team["agent"].headers, json={"entries": LATER}
    )
    assert late.status_code == 409 and "was closed" in late.json()["detail"], late.text
    promote = await _start(http, team, task_id, "task")
    assert promote.status_code == 409 and "takes no promotion" in promote.json()["detail"], promote.text
    shown = await http.get(f"/v1/tasks/{task_id}", headers=team["agent"].headers)
    assert shown.json()["closed_reason"] == "closed"
    outsider = await http.post(f"/v1/tasks/{task_id}/close", headers=team["outsider"].headers)
    assert outsider.status_code == 404


async def test_raw_starts_of_promotion_ids_with_forged_input_are_refused(
    http: httpx.AsyncClient, team: dict[str, Actor], temporal: Client, promo_settings: Settings
) -> None:
    """The suite's worker trusts raw starts (a single local operator), as for a first promotion: a raw start
    runs only the task's next promotion under its own id; the rows, not the input, decide the rest."""
    task_id = await _open(http, team, FIRST)
    other = await _open(http, team, LATER)
    key = task_key_of(task_id)
    assert (await _start(http, team, task_id, "task")).status_code == 202
    await wait_promotion_state(http, team["agent"].headers, task_id, "published")
    await _append(http, team, task_id, LATER)
    requester = team["orchestrator"].principal.id

    async def raw(workflow_id: str, task: str = key) -> str:
        handle = await temporal.start_workflow(
            PromotionWorkflow.run,
            PromotionInput(task, "task", requested_by=requester),
            id=workflow_id,
            task_queue=promo_settings.task_queue,
        )
        try:
            await handle.result()
        except WorkflowFailureError as err:
            return str(err.cause)
        raise AssertionError(f"{workflow_id} ran")

    # promotion 1 again under its own id: it ended, its staging is not published twice
    assert "already ended (published)" in await raw(workflow_id_for(key))
    # out of turn: the task's next promotion is 2
    assert "its next promotion is 2" in await raw(workflow_id_for(key, 5))
    # the follow-up's id with another task in its input
    forged = await raw(workflow_id_for(key, 2), task_key_of(other))
    assert f"is not a promotion of task {other!r}" in forged
    listed = await _promotions(http, team["agent"], task_id)
    assert [(r["number"], r["outcome"]) for r in listed["promotions"]] == [(1, "published")]
    assert (await _promotions(http, team["agent"], other))["promotions"] == []
    # the API starts the follow-up afterwards; once it ended, a raw start of its id is refused too
    follow = await _start(http, team, task_id, "task")
    assert follow.status_code == 202 and follow.json()["number"] == 2, follow.text
    await wait_promotion_state(http, team["agent"].headers, task_id, "published")
    assert "promotion 2 of task" in (ended := await raw(workflow_id_for(key, 2))) and "already ended" in ended


async def test_erasing_a_task_deletes_every_promotions_history_and_closes_it(
    http: httpx.AsyncClient, team: dict[str, Actor], temporal: Client
) -> None:
    task_id = await _open(http, team, FIRST)
    assert (await _start(http, team, task_id, "task")).status_code == 202
    await wait_promotion_state(http, team["agent"].headers, task_id, "published")
    await _append(http, team, task_id, LATER)
    assert (await _start(http, team, task_id, "task")).status_code == 202
    await wait_promotion_state(http, team["agent"].headers, task_id, "published")
    ids = [workflow_id_for(task_key_of(task_id)), workflow_id_for(task_key_of(task_id), 2)]
    erased = await http.post("/v1/erasures", headers=team["human"].headers, json={"task": task_id})
    assert erased.status_code == 200, erased.text
    assert set(ids) <= set(erased.json()["temporal_workflows"])
    for workflow_id in ids:
        await _history_gone(temporal, workflow_id)
    late = await http.post(
        f"/v1/tasks/{task_id}/entries", headers=team["agent"].headers, json={"entries": LATER}
    )
    assert late.status_code == 409 and "was erased" in late.json()["detail"], late.text
    again = await _start(http, team, task_id, "task")
    assert again.status_code == 409 and "was erased" in again.json()["detail"], again.text


async def _history_gone(temporal: Client, workflow_id: str, timeout: float = 300.0) -> None:
    """Temporal no longer knows `workflow_id` (the server deletes asynchronously)."""
    from temporalio.service import RPCError, RPCStatusCode

    handle = temporal.get_workflow_handle(workflow_id)
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        try:
            await handle.describe()
        except RPCError as err:
            assert err.status == RPCStatusCode.NOT_FOUND, err
            return
        await asyncio.sleep(1.0)
    raise AssertionError(f"the history of {workflow_id} is still there")


async def test_followups_over_grpc_answer_numbers_and_refuse_like_http(
    http: httpx.AsyncClient, team: dict[str, Actor], promo_settings: Settings
) -> None:
    task_id = await _open(http, team, FIRST)
    body = json.dumps({"target_scope": "task", "verification": TESTS_PASSED})
    orchestrator, agent = bearer(team["orchestrator"].key), bearer(team["agent"].key)
    async with grpc_gateway(promo_settings) as stub:
        first = json.loads(
            (
                await stub.StartPromotion(
                    pb2.TaskJsonRequest(task_id=task_id, json=body), metadata=orchestrator
                )
            ).json
        )
        assert first["number"] == 1
        await wait_promotion_state(http, team["agent"].headers, task_id, "published")
        with pytest.raises(grpc.aio.AioRpcError) as nothing_new:
            await stub.StartPromotion(pb2.TaskJsonRequest(task_id=task_id, json=body), metadata=orchestrator)
        assert nothing_new.value.code() == grpc.StatusCode.ALREADY_EXISTS
        assert "no entry was appended after its snapshot" in refusal(nothing_new.value)["detail"]
        appended = await stub.AppendEntries(
            iter(
                [
                    pb2.AppendRequest(
                        task_id=task_id, entries=[pb2.Entry(kind="fact", content=LATER[0]["content"])]
                    )
                ]
            ),
            metadata=agent,
        )
        assert appended.promotion == 2
        second = json.loads(
            (
                await stub.StartPromotion(
                    pb2.TaskJsonRequest(task_id=task_id, json=body), metadata=orchestrator
                )
            ).json
        )
        assert (second["number"], second["workflow_id"]) == (2, workflow_id_for(task_key_of(task_id), 2))
        await wait_promotion_state(http, team["agent"].headers, task_id, "published")
        older = json.loads(
            (await stub.GetPromotion(pb2.TaskRequest(task_id=task_id, number=1), metadata=agent)).json
        )
        latest = json.loads((await stub.GetPromotion(pb2.TaskRequest(task_id=task_id), metadata=agent)).json)
        assert (older["number"], latest["number"]) == (1, 2)
        listed = json.loads(
            (await stub.ListTaskPromotions(pb2.TaskRequest(task_id=task_id), metadata=agent)).json
        )
        assert [p["number"] for p in listed["promotions"]] == [1, 2]
        with pytest.raises(grpc.aio.AioRpcError) as denied:
            await stub.CloseTask(pb2.TaskRequest(task_id=task_id), metadata=agent)
        assert denied.value.code() == grpc.StatusCode.PERMISSION_DENIED
        closed = json.loads(
            (await stub.CloseTask(pb2.TaskRequest(task_id=task_id), metadata=orchestrator)).json
        )
        assert closed["closed"] == "closed"
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.StartPromotion(pb2.TaskJsonRequest(task_id=task_id, json=body), metadata=orchestrator)
        assert refused.value.code() == grpc.StatusCode.ALREADY_EXISTS
        assert "was closed" in refusal(refused.value)["detail"]


async def test_console_lists_every_promotion_of_the_task_and_shows_an_older_one(
    http: httpx.AsyncClient, team: dict[str, Actor]
) -> None:
    from tests.api.test_console import sign_in

    task_id = await _open(http, team, FIRST)
    assert (await _start(http, team, task_id, "task")).status_code == 202
    await wait_promotion_state(http, team["agent"].headers, task_id, "published")
    await _append(http, team, task_id, LATER)
    assert (await _start(http, team, task_id, "task")).status_code == 202
    await wait_promotion_state(http, team["agent"].headers, task_id, "published")
    async with httpx.AsyncClient(base_url=str(http.base_url), timeout=90) as browser:
        await sign_in(browser, team["human"])
        latest = await browser.get(f"/console/promotions/{task_id}")
        assert latest.status_code == 200 and "Promotion 2 of task" in latest.text
        for number in (1, 2):
            assert f'?number={number}">promotion {number}</a>' in latest.text
        older = await browser.get(f"/console/promotions/{task_id}", params={"number": 1})
        assert older.status_code == 200 and "Promotion 1 of task" in older.text
        assert f"{workflow_id_for(task_key_of(task_id))} in the Temporal UI" in older.text
        task_page = await browser.get(f"/console/tasks/{task_id}")
        assert task_page.status_code == 200 and "Promotions of this task" in task_page.text
        assert "Entries appended now belong to promotion 3." in task_page.text
        missing = await browser.get(f"/console/promotions/{task_id}", params={"number": 7})
        assert missing.status_code == 404


async def test_followups_over_mcp_answer_numbers_and_refuse_like_http(
    http: httpx.AsyncClient, team: dict[str, Actor], gateway: str
) -> None:
    import sys

    from mcp import Client as McpClient
    from mcp.client.stdio import StdioServerParameters

    from tests.conftest import repo_root

    task_id = await _open(http, team, FIRST)
    assert (await _start(http, team, task_id, "task")).status_code == 202
    await wait_promotion_state(http, team["agent"].headers, task_id, "published")
    env = {"LOREGATE_URL": gateway, "LOREGATE_API_KEY": team["orchestrator"].key, "LOREGATE_TASK_ID": task_id}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "api.cli", "mcp"], env=env, cwd=str(repo_root())
    )
    async with McpClient(params, read_timeout_seconds=120) as mcp:
        refused = await mcp.call_tool("start_promotion", {"target_scope": "task"})
        assert refused.is_error and "no entry was appended after its snapshot" in refused.content[0].text
        appended = await mcp.call_tool("append_staging", {"kind": "fact", "content": LATER[0]["content"]})
        assert not appended.is_error and _tool(appended)["promotion"] == 2
        started = await mcp.call_tool(
            "start_promotion", {"target_scope": "task", "verification_source": "tests_passed"}
        )
        assert not started.is_error and _tool(started)["number"] == 2
        await wait_promotion_state(http, team["agent"].headers, task_id, "published")
        listed = _tool(await mcp.call_tool("list_task_promotions", {}))
        assert [p["number"] for p in listed["promotions"]] == [1, 2]
        older = _tool(await mcp.call_tool("get_promotion", {"number": 1}))
        assert older["number"] == 1 and older["state"] == "published"
        closed = await mcp.call_tool("close_task", {})
        assert not closed.is_error and _tool(closed)["closed"] == "closed"


def _tool(result: Any) -> dict[str, Any]:
    """An MCP tool's answer: its structured content, else the JSON in its text."""
    if result.structured_content is not None:
        return dict(result.structured_content)
    return dict(json.loads(result.content[0].text))


async def test_raw_start_of_a_follow_up_id_needs_the_gateways_grant_as_the_first_does(
    team: dict[str, Actor], engine: AsyncEngine, temporal: Client, promo_settings: Settings
) -> None:
    """`approval_mode=authenticated` (the default outside the test suite): a raw start proves no requester,
    whichever promotion's id it names; the grant of promotion 1's start, read from its history's input,
    does not run promotion 1 again (the grant is bound to its first run and input) nor start promotion 2."""
    strict = promo_settings.model_copy(
        update={"task_queue": f"{promo_settings.task_queue}-strict", "approval_mode": "authenticated"}
    )
    async with running_worker(temporal, strict):
        with running_gateway(strict) as url:
            async with httpx.AsyncClient(base_url=url, timeout=90) as http:
                task_id = await _open(http, team, FIRST)
                key = task_key_of(task_id)
                assert (await _start(http, team, task_id, "task")).status_code == 202
                await wait_promotion_state(http, team["agent"].headers, task_id, "published")
                await _append(http, team, task_id, LATER)
                grant = await _start_grant(engine, workflow_id_for(key))

                async def raw(workflow_id: str, grant: str | None) -> str:
                    handle = await temporal.start_workflow(
                        PromotionWorkflow.run,
                        PromotionInput(
                            key, "task", requested_by=team["orchestrator"].principal.id, grant=grant
                        ),
                        id=workflow_id,
                        task_queue=strict.task_queue,
                    )
                    try:
                        await handle.result()
                    except WorkflowFailureError as err:
                        return str(err.cause)
                    raise AssertionError(f"{workflow_id} ran")

                # promotion 1's own grant is bound to its run and its input: it proves no other run
                refused = await raw(workflow_id_for(key), grant)
                assert "must be started through the API" in refused and "gateway started" in refused
                for forged in (None, grant):
                    assert "must be started through the API" in await raw(workflow_id_for(key, 2), forged)
                assert [
                    r["number"] for r in (await _promotions(http, team["agent"], task_id))["promotions"]
                ] == [1]
                follow = await _start(http, team, task_id, "task")
                assert follow.status_code == 202 and follow.json()["number"] == 2, follow.text
                await wait_promotion_state(http, team["agent"].headers, task_id, "published")


async def _start_grant(engine: AsyncEngine, workflow_id: str) -> str:
    """The grant the gateway wrote for the API's start of `workflow_id` (its history's input holds it)."""
    async with engine.connect() as conn:
        key = (
            await conn.execute(
                select(memory_events.c.idempotency_key).where(
                    memory_events.c.idempotency_key.like(f"{workflow_id}:grant:%"),
                    memory_events.c.payload["decision"].astext == "start",
                )
            )
        ).scalar_one()
    return str(key).rsplit(":", 1)[1]
