"""Claims that reach the gate through Temporal are checked like the API's callers (no side doors).

The Temporal UI and `temporal workflow start` carry no key: who starts a promotion (`requested_by`), who
gives evidence (`given_by`) and who decides (`approver`) are claims. An activity checks each against the
principals table and the Casbin policy, on every channel:

- a start naming nobody, an unknown or disabled principal, or one not allowed to promote there is refused
  (state `refused`, the workflow fails, nothing is published, and the task can still be promoted through
  the API afterwards);
- `human_approved` evidence counts only from an enabled human allowed to approve the scope;
- a human whose keys were all revoked (`loregate principals disable`) no longer approves;
- with `approval_mode=api_only`, a start without the gateway's grant is refused, and evidence given through
  the API (which writes one) is accepted.

Against a real gateway, the Temporal dev server and a worker with the real activities; the UI's paths are
signals and starts sent with the Temporal client, with the JSON the UI sends.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio.client import Client, WorkflowFailureError, WorkflowUpdateFailedError

from governance.config import Settings
from governance.scopes import ActorType
from governance.storage.identity import disable_principal
from tests.utils.factories import Actor, make_actor, new_tenant
from tests.utils.gateway import running_gateway
from tests.utils.promotion_factories import Entry, active_memories, events_of, make_task
from tests.utils.promotion_gateway import open_task, running_worker, wait_promotion_state
from tests.utils.tenancy import task_key_of
from workflows.promotion import PromotionWorkflow
from workflows.promotion_contract import PromotionInput, PromotionState, Verification, workflow_id_for

ENTRIES = [
    Entry("decision", "db.driver: psycopg 3 with the async API", {"key": "db.driver"}),
    Entry("fact", "The CI runners have two CPU cores and 7 GB of memory."),
]
FORGED = {"source": "human_approved", "success": True}


async def _raw_start(
    temporal: Client, queue: str, task_id: str, scope: str, **fields: Any
) -> Any:  # WorkflowHandle
    """What `temporal workflow start --type PromotionWorkflow` does: no key, only claims."""
    return await temporal.start_workflow(
        PromotionWorkflow.run,
        PromotionInput(task_id, scope, **fields),
        id=workflow_id_for(task_key_of(task_id)),
        task_queue=queue,
    )


async def _refusals(engine: AsyncEngine, task_id: str) -> list[str]:
    return [e.reason for e in await events_of(engine, task_id) if e.event_type == "REJECTED"]


async def _api_task(http: httpx.AsyncClient, team: dict[str, Actor], scope: str) -> str:
    """A task staged through the API and its promotion started there, without evidence."""
    orchestrator = team["orchestrator"]
    task_id = await open_task(http, orchestrator, "pick the async db driver")
    entries = [{"kind": e.kind, "content": e.content, "payload": e.payload or {}} for e in ENTRIES]
    appended = await http.post(
        f"/v1/tasks/{task_id}/entries", headers=team["agent"].headers, json={"entries": entries}
    )
    assert appended.status_code == 201, appended.text
    started = await http.post(
        f"/v1/tasks/{task_id}/promotion", headers=orchestrator.headers, json={"target_scope": scope}
    )
    assert started.status_code == 202, started.text
    await wait_promotion_state(http, orchestrator.headers, task_id, "awaiting_verification")
    return task_id


# ---- raw starts (issue: publishing without a key) ---------------------------------------------------
@pytest.mark.parametrize("requester", ["made-up", "none", "agent", "other-tenant", "disabled"])
async def test_raw_start_with_a_bad_requester_is_refused_and_publishes_nothing(
    requester: str,
    http: httpx.AsyncClient,
    team: dict[str, Actor],
    engine: AsyncEngine,
    temporal: Client,
    promo_settings: Settings,
) -> None:
    orchestrator = team["orchestrator"]
    task = await make_task(engine, orchestrator.principal.org, orchestrator.principal.project or "", ENTRIES)
    claimed: str | None = {
        "made-up": "orchestrator-made-up",
        "none": None,
        "agent": team["agent"].principal.id,  # agents may not promote
        "other-tenant": (await make_actor(engine, ActorType.ORCHESTRATOR, *new_tenant())).principal.id,
        "disabled": task.requested_by,
    }[requester]
    if requester == "disabled":
        async with engine.begin() as conn:
            assert await disable_principal(conn, task.requested_by) == 1
    handle = await _raw_start(
        temporal,
        promo_settings.task_queue,
        task.task_id,
        "worktree",
        requested_by=claimed,
        verification=Verification("tests_passed", True),
    )
    with pytest.raises(WorkflowFailureError) as failure:
        await handle.result()
    assert "StartRefused" in repr(failure.value.cause)
    status = await wait_promotion_state(http, orchestrator.headers, task.task_id, "refused")
    assert status["workflow_status"] == "FAILED" and status["error"]
    assert await active_memories(engine, task_id=task.task_id) == []
    assert [r for r in await _refusals(engine, task.task_id) if r.startswith("start refused")]


async def test_raw_start_of_a_task_without_entries_is_refused_and_publishes_nothing(
    http: httpx.AsyncClient,
    team: dict[str, Actor],
    engine: AsyncEngine,
    temporal: Client,
    promo_settings: Settings,
) -> None:
    """An honest requester, but no entry: its episode would publish the description as what happened."""
    orchestrator = team["orchestrator"]
    task = await make_task(engine, orchestrator.principal.org, orchestrator.principal.project or "", [])
    handle = await _raw_start(
        temporal,
        promo_settings.task_queue,
        task.task_id,
        "worktree",
        requested_by=orchestrator.principal.id,
        verification=Verification("tests_passed", True),
    )
    with pytest.raises(WorkflowFailureError) as failure:
        await handle.result()
    assert "StartRefused" in repr(failure.value.cause)
    assert "has no entries: nothing to promote" in str(failure.value.cause)
    assert await active_memories(engine, task_id=task.task_id) == []


async def test_raw_start_naming_the_task_by_its_tenant_id_says_to_use_its_key(
    http: httpx.AsyncClient, team: dict[str, Actor], temporal: Client, promo_settings: Settings
) -> None:
    """The id `POST /v1/tasks` answered is not what a workflow input carries: the refusal says what is."""
    orchestrator = team["orchestrator"]
    task_id = await open_task(http, orchestrator, "a task opened through the API")
    key = task_key_of(task_id)
    assert key == f"{orchestrator.principal.org}/{task_id}"
    handle = await temporal.start_workflow(
        PromotionWorkflow.run,
        PromotionInput(task_id, "worktree", requested_by=orchestrator.principal.id),
        id=workflow_id_for(key),
        task_queue=promo_settings.task_queue,
    )
    with pytest.raises(WorkflowFailureError):
        await handle.result()
    status = await wait_promotion_state(http, orchestrator.headers, task_id, "refused")
    assert f"task {task_id!r} does not exist" in status["error"]
    assert f"names a task by its key, `<org>/{task_id}`" in status["error"]


async def test_a_refused_raw_start_does_not_block_the_api_start(
    http: httpx.AsyncClient,
    team: dict[str, Actor],
    engine: AsyncEngine,
    temporal: Client,
    promo_settings: Settings,
) -> None:
    orchestrator = team["orchestrator"]
    task = await make_task(engine, orchestrator.principal.org, orchestrator.principal.project or "", ENTRIES)
    handle = await _raw_start(
        temporal, promo_settings.task_queue, task.task_id, "worktree", requested_by="nobody-at-all"
    )
    with pytest.raises(WorkflowFailureError):
        await handle.result()
    started = await http.post(
        f"/v1/tasks/{task.task_id}/promotion",
        headers=orchestrator.headers,
        json={"target_scope": "task", "verification": {"source": "tests_passed", "success": True}},
    )
    assert started.status_code == 202, started.text
    assert started.json()["created"] is True
    await wait_promotion_state(http, orchestrator.headers, task.task_id, "published")
    assert await active_memories(engine, task_id=task.task_id)


async def test_raw_start_by_an_enabled_orchestrator_of_the_tenant_runs(
    http: httpx.AsyncClient,
    team: dict[str, Actor],
    engine: AsyncEngine,
    temporal: Client,
    promo_settings: Settings,
) -> None:
    """The check refuses claims, not the channel: in ui_or_api mode an honest raw start still works."""
    orchestrator = team["orchestrator"]
    task = await make_task(engine, orchestrator.principal.org, orchestrator.principal.project or "", ENTRIES)
    handle = await _raw_start(
        temporal,
        promo_settings.task_queue,
        task.task_id,
        "worktree",
        requested_by=orchestrator.principal.id,
        verification=Verification("tests_passed", True),
    )
    assert (await handle.result()).state == PromotionState.PUBLISHED


# ---- forged verification ----------------------------------------------------------------------------
@pytest.mark.parametrize("given_by", [None, "orchestrator", "agent", "outsider", "made-up"])
async def test_forged_human_approved_signal_is_refused(
    given_by: str | None,
    http: httpx.AsyncClient,
    team: dict[str, Actor],
    engine: AsyncEngine,
    temporal: Client,
) -> None:
    task_id = await _api_task(http, team, "task")
    payload = dict(FORGED)
    if given_by is not None:
        payload["given_by"] = team[given_by].principal.id if given_by in team else "human-made-up"
    # the Temporal UI: Send a Signal → `verify`
    await temporal.get_workflow_handle(workflow_id_for(task_key_of(task_id))).signal("verify", payload)
    status = await _refused(http, team["orchestrator"], task_id)
    assert status["state"] == "awaiting_verification" and status["verification"] is None
    assert status["refusals"][-1]["decision"] == "verify" and status["refusals"][-1]["channel"] == "signal"
    assert await active_memories(engine, task_id=task_id) == []
    assert [r for r in await _refusals(engine, task_id) if r.startswith("verify refused")]


async def test_human_approved_signal_from_an_approving_human_counts(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine, temporal: Client
) -> None:
    # humans approve project and org scope (the policy), so their word counts there
    task_id = await _api_task(http, team, "project")
    await temporal.get_workflow_handle(workflow_id_for(task_key_of(task_id))).signal(
        "verify", {**FORGED, "given_by": team["human"].principal.id}
    )
    waiting = await wait_promotion_state(http, team["orchestrator"].headers, task_id, "awaiting_approval")
    assert waiting["verification"]["given_by"] == team["human"].principal.id and not waiting["refusals"]


async def test_tests_passed_signal_from_an_orchestrator_still_counts(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine, temporal: Client
) -> None:
    task_id = await _api_task(http, team, "task")
    await temporal.get_workflow_handle(workflow_id_for(task_key_of(task_id))).signal(
        "verify", {"source": "tests_passed", "success": True}
    )
    await wait_promotion_state(http, team["orchestrator"].headers, task_id, "published")
    published = await active_memories(engine, task_id=task_id)
    assert published and all(m.validation_source != "human_approved" for m in published)


# ---- revoked humans ---------------------------------------------------------------------------------
async def test_a_disabled_human_cannot_approve_by_signal(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine, temporal: Client
) -> None:
    human = team["human"]
    task_id = await _api_task(http, team, "project")
    verified = await http.post(
        f"/v1/promotions/{task_id}/verify",
        headers=team["orchestrator"].headers,
        json={"source": "tests_passed", "success": True},
    )
    assert verified.status_code == 200, verified.text
    await wait_promotion_state(http, human.headers, task_id, "awaiting_approval")
    async with engine.begin() as conn:
        assert await disable_principal(conn, human.principal.id) == 1
    await temporal.get_workflow_handle(workflow_id_for(task_key_of(task_id))).signal(
        "approve", {"approver": human.principal.id, "note": "from the UI"}
    )
    status = await _refused(http, team["orchestrator"], task_id)
    assert status["state"] == "awaiting_approval" and "disabled" in status["refusals"][-1]["reason"]
    assert await active_memories(engine, task_id=task_id) == []
    # nor through the API: the revoked key stops authenticating once the gateway hears of it (401), and
    # until then the workflow's own check refuses the disabled approver (403)
    answer = await http.post(f"/v1/promotions/{task_id}/approve", headers=human.headers, json={})
    assert answer.status_code in (401, 403), answer.text
    assert answer.status_code == 401 or "disabled" in answer.json()["detail"]
    assert await active_memories(engine, task_id=task_id) == []


async def _refused(http: httpx.AsyncClient, actor: Actor, task_id: str) -> dict[str, Any]:
    """The promotion's status once it shows a refusal."""
    for _ in range(150):
        status: dict[str, Any] = (await http.get(f"/v1/promotions/{task_id}", headers=actor.headers)).json()
        if status.get("refusals"):
            return status
        await asyncio.sleep(0.2)
    raise AssertionError(f"no refusal shown for {task_id}: {status}")


# ---- api_only ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def api_only_settings(promo_settings: Settings) -> Settings:
    return promo_settings.model_copy(
        update={"task_queue": f"{promo_settings.task_queue}-api-only", "approval_mode": "api_only"}
    )


@pytest.fixture(scope="module")
async def api_only_worker(temporal: Client, api_only_settings: Settings) -> AsyncIterator[None]:
    async with running_worker(temporal, api_only_settings):
        yield


@pytest.fixture(scope="module")
def api_only_gateway(api_only_settings: Settings) -> Iterator[str]:
    with running_gateway(api_only_settings) as url:
        yield url


@pytest.fixture
async def api_only_http(api_only_gateway: str, api_only_worker: None) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=api_only_gateway, timeout=90) as client:
        yield client


async def test_api_only_refuses_a_raw_start_by_a_real_orchestrator(
    api_only_http: httpx.AsyncClient,
    team: dict[str, Actor],
    engine: AsyncEngine,
    temporal: Client,
    api_only_settings: Settings,
) -> None:
    orchestrator = team["orchestrator"]
    task = await make_task(engine, orchestrator.principal.org, orchestrator.principal.project or "", ENTRIES)
    handle = await _raw_start(
        temporal,
        api_only_settings.task_queue,
        task.task_id,
        "task",
        requested_by=orchestrator.principal.id,
        verification=Verification("tests_passed", True),
        grant="a-grant-nobody-wrote",
    )
    with pytest.raises(WorkflowFailureError):
        await handle.result()
    status = await wait_promotion_state(api_only_http, orchestrator.headers, task.task_id, "refused")
    assert "api_only" in status["error"]
    assert await active_memories(engine, task_id=task.task_id) == []


async def test_api_only_accepts_the_api_start_and_evidence_and_refuses_the_signal(
    api_only_http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine, temporal: Client
) -> None:
    task_id = await _api_task(api_only_http, team, "task")
    # a signal, even a plain tests_passed one, is not the authenticated API
    await temporal.get_workflow_handle(workflow_id_for(task_key_of(task_id))).signal(
        "verify", {"source": "tests_passed", "success": True, "given_by": team["orchestrator"].principal.id}
    )
    status = await _refused(api_only_http, team["orchestrator"], task_id)
    assert "api_only" in status["refusals"][-1]["reason"] and status["verification"] is None
    verified = await api_only_http.post(
        f"/v1/promotions/{task_id}/verify",
        headers=team["orchestrator"].headers,
        json={"source": "tests_passed", "success": True},
    )
    assert verified.status_code == 200, verified.text
    await wait_promotion_state(api_only_http, team["orchestrator"].headers, task_id, "published")
    assert await active_memories(engine, task_id=task_id)


async def test_a_raw_verify_update_without_a_grant_is_refused_for_what_it_lacks(
    api_only_http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine, temporal: Client
) -> None:
    """`temporal workflow update execute --name verify` with tests_passed evidence and no `given_by` was
    refused as if it claimed a human's word ("human_approved evidence must name the human…")."""
    task_id = await _api_task(api_only_http, team, "task")
    handle = temporal.get_workflow_handle(workflow_id_for(task_key_of(task_id)))
    with pytest.raises(WorkflowUpdateFailedError) as refused:
        await handle.execute_update("verify", {"source": "tests_passed", "success": True})
    reason = str(refused.value.cause)
    assert "tests_passed evidence must name who gives it (given_by)" in reason, reason
    assert "human_approved" not in reason and "/v1/promotions/{task_id}/verify" in reason, reason
    status = await wait_promotion_state(
        api_only_http, team["orchestrator"].headers, task_id, "awaiting_verification"
    )
    assert status["verification"] is None
    await handle.terminate("test over")


async def test_a_start_grant_read_from_history_proves_no_other_run(
    api_only_http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine, temporal: Client
) -> None:
    # the API starts a promotion (its grant is in the start input, which the Temporal UI shows); someone
    # with the UI terminates it and starts the workflow id again with that grant: bolder input (evidence the
    # API would have asked for), then the same input. Neither run is the one the grant was given to
    task_id = await _api_task(api_only_http, team, "task")
    handle = temporal.get_workflow_handle(workflow_id_for(task_key_of(task_id)))
    history = await handle.fetch_history()
    attributes = history.events[0].workflow_execution_started_event_attributes
    (seen,) = await temporal.data_converter.decode(attributes.input.payloads, [PromotionInput])
    assert seen.grant is not None
    await handle.terminate("replaced from the Temporal UI")
    queue = history.events[0].workflow_execution_started_event_attributes.task_queue.name
    bolder = PromotionInput(**{**seen.__dict__, "verification": Verification("tests_passed", True)})
    for forged in (bolder, seen):
        again = await temporal.start_workflow(PromotionWorkflow.run, forged, id=handle.id, task_queue=queue)
        with pytest.raises(WorkflowFailureError):
            await again.result()
    refusals = await _refusals(engine, task_key_of(task_id))
    assert len(refusals) == 2  # one a run: the second is not lost under the first's key
    assert "the start input is not the one the gateway started with its grant" in refusals[0]
    assert "the grant was given to another run of this workflow" in refusals[1]
    assert await active_memories(engine, task_id=task_key_of(task_id)) == []
