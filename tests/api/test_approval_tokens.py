"""The approver is who sent the decision: approval tokens and raw starts in `approval_mode=authenticated`.

The Temporal UI sends signals without any identity, and `temporal workflow start` carries only claims. In
the default, authenticated mode a UI decision counts only with an approval token the human minted from
loregate with their own key (`POST /v1/promotions/{task_id}/approval-token`, `loregate approval-token`),
bound to them, the workflow and the plan's (or change request's) digest, and short-lived; a raw start
without the gateway's grant is refused. The API's own paths (the gateway authenticates, then writes a
grant) keep working without a token.

Against a real gateway over HTTP, the Temporal dev server and a worker with the real activities; the UI's
paths are signals and starts sent with the Temporal client, with the JSON the UI sends.
"""

from __future__ import annotations

import asyncio
import html
import json
import re
import time
from typing import Any

import httpx
import pytest
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio.client import Client, WorkflowFailureError

from governance.approval import TokenClaims, mint_token
from governance.config import Settings
from governance.scopes import ActorType, Scope
from governance.storage.approval_proofs import approval_secret, plan_digest
from governance.storage.plans import promotion_candidates
from tests.api.test_console import csrf_of, sign_in
from tests.utils.factories import Actor, make_actor
from tests.utils.lifecycle_factories import Place, insert_memory
from tests.utils.promotion_factories import Entry, active_memories, events_of, make_task
from tests.utils.promotion_gateway import awaiting_approval, wait_promotion_state
from tests.utils.tenancy import task_key_of
from workflows.promotion import PromotionWorkflow
from workflows.promotion_contract import PromotionInput, Verification, workflow_id_for

ENTRIES: list[dict[str, Any]] = [
    {
        "kind": "decision",
        "content": "db.driver: psycopg 3 with the async API",
        "payload": {"key": "db.driver"},
    },
    {"kind": "fact", "content": "The CI runners have two CPU cores and 7 GB of memory."},
]


async def _awaiting(http: httpx.AsyncClient, team: dict[str, Actor]) -> str:
    """A project-scope promotion started and verified through the API, awaiting a human's approval."""
    task_id, _ = await awaiting_approval(http, team, ENTRIES)
    return task_id


async def _token(http: httpx.AsyncClient, actor: Actor, task_id: str) -> dict[str, Any]:
    minted = await http.post(f"/v1/promotions/{task_id}/approval-token", headers=actor.headers)
    assert minted.status_code == 200, minted.text
    answer: dict[str, Any] = minted.json()
    return answer


async def _signal(temporal: Client, task_id: str, payload: dict[str, Any], name: str = "approve") -> None:
    """What the Temporal UI's *Send a Signal* sends."""
    await temporal.get_workflow_handle(workflow_id_for(task_key_of(task_id))).signal(name, payload)


async def _refusal(http: httpx.AsyncClient, actor: Actor, task_id: str, count: int = 1) -> dict[str, Any]:
    """The promotion's status once it shows `count` refused decisions."""
    deadline = asyncio.get_running_loop().time() + 30
    status: dict[str, Any] = {}
    while asyncio.get_running_loop().time() < deadline:
        status = (await http.get(f"/v1/promotions/{task_id}", headers=actor.headers)).json()
        if len(status.get("refusals") or []) >= count:
            return status
        await asyncio.sleep(0.2)
    raise AssertionError(f"no refusal shown for {task_id}: {status}")


async def test_forged_signal_naming_a_real_human_without_a_token_is_refused(
    auth_http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine, temporal: Client
) -> None:
    task_id = await _awaiting(auth_http, team)
    await _signal(temporal, task_id, {"approver": team["human"].principal.id, "note": "lgtm"})
    status = await _refusal(auth_http, team["orchestrator"], task_id)
    refusal = status["refusals"][-1]
    assert refusal["approver"] == team["human"].principal.id and refusal["channel"] == "signal"
    assert "approval token" in refusal["reason"]
    assert status["state"] == "awaiting_approval" and status["decided_by"] is None
    assert await active_memories(engine, task_id=task_id) == []


async def test_valid_token_in_a_ui_signal_approves_as_its_human(
    auth_http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine, temporal: Client
) -> None:
    task_id = await _awaiting(auth_http, team)
    minted = await _token(auth_http, team["human"], task_id)
    assert minted["principal"] == team["human"].principal.id
    assert (
        minted["workflow_id"] == workflow_id_for(task_key_of(task_id))
        and minted["approval_mode"] == "authenticated"
    )
    assert minted["token"] in minted["signal_input"]
    await _signal(temporal, task_id, {"approver": team["human"].principal.id, "token": minted["token"]})
    status = await wait_promotion_state(auth_http, team["orchestrator"].headers, task_id, "published")
    assert status["decided_by"] == team["human"].principal.id and not status["refusals"]
    assert await active_memories(engine, task_id=task_id)


@pytest.mark.parametrize("forgery", ["another-principal", "another-workflow", "expired", "plan-changed"])
async def test_token_that_does_not_bind_this_decision_is_refused(
    forgery: str,
    auth_http: httpx.AsyncClient,
    team: dict[str, Actor],
    engine: AsyncEngine,
    temporal: Client,
    auth_settings: Settings,
) -> None:
    human = team["human"]
    task_id = await _awaiting(auth_http, team)
    claimed = human.principal.id
    if forgery == "another-principal":
        # a second approving human of the project mints a token; the signal names the first
        other = await make_actor(engine, ActorType.HUMAN, human.principal.org, human.principal.project)
        token = (await _token(auth_http, other, task_id))["token"]
    elif forgery == "another-workflow":
        elsewhere = await _awaiting(auth_http, team)
        token = (await _token(auth_http, human, elsewhere))["token"]
    elif forgery == "expired":
        async with engine.connect() as conn:
            digest = await plan_digest(conn, workflow_id_for(task_key_of(task_id)))
        assert digest is not None
        claims = TokenClaims(claimed, workflow_id_for(task_key_of(task_id)), digest, time.time() - 1)
        token = mint_token(approval_secret(auth_settings), claims)
    else:  # the plan changed after the token was minted
        token = (await _token(auth_http, human, task_id))["token"]
        async with engine.begin() as conn:
            await conn.execute(
                update(promotion_candidates)
                .where(promotion_candidates.c.workflow_id == workflow_id_for(task_key_of(task_id)))
                .values(title=promotion_candidates.c.title + " (edited)")
            )
    await _signal(temporal, task_id, {"approver": claimed, "token": token})
    status = await _refusal(auth_http, team["orchestrator"], task_id)
    reason = status["refusals"][-1]["reason"]
    expected = {
        "another-principal": "another principal",
        "another-workflow": "another workflow",
        "expired": "expired",
        "plan-changed": "changed after",
    }[forgery]
    assert expected in reason, reason
    assert status["state"] == "awaiting_approval" and status["decided_by"] is None
    assert await active_memories(engine, task_id=task_id) == []


async def test_token_signed_under_another_secret_is_refused(
    auth_http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine, temporal: Client
) -> None:
    task_id = await _awaiting(auth_http, team)
    async with engine.connect() as conn:
        digest = await plan_digest(conn, workflow_id_for(task_key_of(task_id)))
    assert digest is not None
    claims = TokenClaims(
        team["human"].principal.id, workflow_id_for(task_key_of(task_id)), digest, time.time() + 600
    )
    forged = mint_token(b"a guess at the server's secret", claims)
    await _signal(temporal, task_id, {"approver": team["human"].principal.id, "token": forged})
    status = await _refusal(auth_http, team["orchestrator"], task_id)
    assert "signature" in status["refusals"][-1]["reason"]
    # the refusal is recorded; the human's own API decision still goes through without a token
    approved = await auth_http.post(
        f"/v1/promotions/{task_id}/approve", headers=team["human"].headers, json={}
    )
    assert approved.status_code == 200, approved.text
    await wait_promotion_state(auth_http, team["orchestrator"].headers, task_id, "published")


async def test_approval_token_is_minted_only_for_an_approver_of_a_waiting_promotion(
    auth_http: httpx.AsyncClient, team: dict[str, Actor]
) -> None:
    task_id = await _awaiting(auth_http, team)
    refused = await auth_http.post(f"/v1/promotions/{task_id}/approval-token", headers=team["agent"].headers)
    assert refused.status_code == 403, refused.text
    hidden = await auth_http.post(
        f"/v1/promotions/{task_id}/approval-token", headers=team["outsider"].headers
    )
    assert hidden.status_code in (403, 404), hidden.text
    rejected = await auth_http.post(
        f"/v1/promotions/{task_id}/reject", headers=team["human"].headers, json={}
    )
    assert rejected.status_code == 200, rejected.text
    await wait_promotion_state(auth_http, team["orchestrator"].headers, task_id, "rejected")
    late = await auth_http.post(f"/v1/promotions/{task_id}/approval-token", headers=team["human"].headers)
    assert late.status_code == 409, late.text


async def test_raw_start_naming_a_real_orchestrator_without_proof_publishes_nothing(
    auth_http: httpx.AsyncClient,
    team: dict[str, Actor],
    engine: AsyncEngine,
    temporal: Client,
    auth_settings: Settings,
) -> None:
    orchestrator = team["orchestrator"]
    task = await make_task(
        engine,
        orchestrator.principal.org,
        orchestrator.principal.project or "",
        [Entry(e["kind"], e["content"], e.get("payload")) for e in ENTRIES],
    )
    # what `temporal workflow start --type PromotionWorkflow` does: a real orchestrator's id, no key
    handle = await temporal.start_workflow(
        PromotionWorkflow.run,
        PromotionInput(
            task.task_id,
            "worktree",
            verification=Verification("tests_passed", True),
            requested_by=orchestrator.principal.id,
        ),
        id=workflow_id_for(task_key_of(task.task_id)),
        task_queue=auth_settings.task_queue,
    )
    with pytest.raises(WorkflowFailureError):
        await handle.result()
    status = await wait_promotion_state(auth_http, orchestrator.headers, task.task_id, "refused")
    assert "authenticated" in status["error"] and "grant" in status["error"]
    assert await active_memories(engine, task_id=task.task_id) == []


async def _pending_change(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine, temporal: Client
) -> tuple[dict[str, Any], Any]:
    """An orchestrator's supersede of a human-approved project fact: a change request awaiting approval."""
    orchestrator, human = team["orchestrator"], team["human"]
    project = orchestrator.principal.project or ""
    place = Place(org=orchestrator.principal.org, project=project, worktree="main", task_id=f"task-{project}")
    async with engine.begin() as conn:
        memory_id = await insert_memory(
            conn,
            place,
            memory_type="fact",
            content="db.driver: psycopg 3",
            canonical_key="db.driver",
            confidence=1.0,
            validation_source="human_approved",
            scope=Scope.PROJECT.value,
            scope_key=place.key(Scope.PROJECT),
        )
    proposed = await http.post(
        f"/v1/memories/{memory_id}/supersede",
        headers=orchestrator.headers,
        json={"content": "db.driver: asyncpg", "reason": "faster"},
    )
    assert proposed.status_code == 202, proposed.text
    request: dict[str, Any] = proposed.json()
    workflow = temporal.get_workflow_handle(request["workflow_id"])
    for _ in range(150):
        if (await workflow.query("state"))["state"] == "awaiting_approval" and (
            await http.get(f"/v1/change-requests/{request['id']}", headers=human.headers)
        ).json()["state"] == "awaiting_approval":
            break
        await asyncio.sleep(0.2)
    return request, workflow


async def test_change_request_is_approved_by_a_ui_signal_with_its_token_only(
    auth_http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine, temporal: Client
) -> None:
    human = team["human"]
    request, workflow = await _pending_change(auth_http, team, engine, temporal)
    await workflow.signal("approve", {"approver": human.principal.id})
    for _ in range(150):
        status = await workflow.query("state")
        if status["refusals"]:
            break
        await asyncio.sleep(0.2)
    assert "approval token" in status["refusals"][-1]["reason"] and status["state"] == "awaiting_approval"
    minted = await auth_http.post(
        f"/v1/change-requests/{request['id']}/approval-token", headers=human.headers
    )
    assert minted.status_code == 200, minted.text
    await workflow.signal("approve", {"approver": human.principal.id, "token": minted.json()["token"]})
    for _ in range(150):
        shown = (await auth_http.get(f"/v1/change-requests/{request['id']}", headers=human.headers)).json()
        if shown["state"] == "applied":
            break
        await asyncio.sleep(0.2)
    assert shown["state"] == "applied" and shown["decided_by"] == human.principal.id


async def test_raw_change_request_start_naming_its_real_requester_is_refused_and_ends_nothing(
    auth_http: httpx.AsyncClient,
    team: dict[str, Actor],
    engine: AsyncEngine,
    temporal: Client,
    auth_settings: Settings,
) -> None:
    """`temporal workflow start --type ChangeRequestWorkflow` naming the request's own author, no grant."""
    request, _ = await _pending_change(auth_http, team, engine, temporal)
    handle = await temporal.start_workflow(
        "ChangeRequestWorkflow",
        {"request_id": request["id"], "requested_by": team["orchestrator"].principal.id},
        id=f"forged-{request['id']}",
        task_queue=auth_settings.task_queue,
    )
    with pytest.raises(WorkflowFailureError):
        await handle.result()
    refused = await handle.query("state")
    assert refused["state"] == "refused" and "grant" in refused["error"]
    # the real request still waits for a human: an unproven start named its author, it did not prove them
    shown = await auth_http.get(f"/v1/change-requests/{request['id']}", headers=team["human"].headers)
    assert shown.json()["state"] == "awaiting_approval" and shown.json()["decided_by"] is None


async def test_console_gives_the_signal_input_that_approves_from_the_temporal_ui(
    auth_gateway: str,
    auth_http: httpx.AsyncClient,
    team: dict[str, Actor],
    engine: AsyncEngine,
    temporal: Client,
) -> None:
    task_id = await _awaiting(auth_http, team)
    async with httpx.AsyncClient(base_url=auth_gateway, timeout=60) as browser:  # keeps the session's cookie
        await sign_in(browser, team["human"])
        page = await browser.get(f"/console/promotions/{task_id}")
        assert "Token for the Temporal UI" in page.text
        shown = await browser.post(
            f"/console/promotions/{task_id}/approval-token", data={"csrf_token": csrf_of(page.text)}
        )
        assert shown.status_code == 200, shown.text
    found = re.search(r'<pre class="signal-input">(.*?)</pre>', shown.text, flags=re.S)
    assert found is not None, shown.text
    signal_input = json.loads(html.unescape(found.group(1)))
    assert signal_input["approver"] == team["human"].principal.id
    await _signal(temporal, task_id, signal_input)
    status = await wait_promotion_state(auth_http, team["orchestrator"].headers, task_id, "published")
    assert status["decided_by"] == team["human"].principal.id
    async with httpx.AsyncClient(base_url=auth_gateway, timeout=60) as browser:
        await sign_in(browser, team["agent"])
        other = await _awaiting(auth_http, team)
        page = await browser.get(f"/console/promotions/{other}")
        refused = await browser.post(
            f"/console/promotions/{other}/approval-token", data={"csrf_token": csrf_of(page.text)}
        )
        assert refused.status_code == 403, refused.text


async def test_a_token_sent_to_approve_cannot_be_sent_again_to_reject(
    auth_http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine, temporal: Client
) -> None:
    # the human's approval is refused before any check (its per-item decision names no plan item), but the
    # signal shows the token to whoever reads the history: sent again as a rejection, in the human's name,
    # it is refused; the human's own approval with it still counts
    human = team["human"]
    task_id = await _awaiting(auth_http, team)
    token = (await _token(auth_http, human, task_id))["token"]
    bad_items = [{"index": 99, "decision": "reject", "reason": "no such item"}]
    await _signal(temporal, task_id, {"approver": human.principal.id, "token": token, "items": bad_items})
    await _refusal(auth_http, human, task_id, 1)
    await _signal(temporal, task_id, {"approver": human.principal.id, "token": token}, name="reject")
    status = await _refusal(auth_http, human, task_id, 2)
    refusal = status["refusals"][-1]
    assert refusal["decision"] == "reject" and refusal["channel"] == "signal"
    assert "the approval token was sent to approve first" in refusal["reason"]
    assert status["state"] == "awaiting_approval" and status["decided_by"] is None
    await _signal(temporal, task_id, {"approver": human.principal.id, "token": token})
    published = await wait_promotion_state(auth_http, team["orchestrator"].headers, task_id, "published")
    assert published["decided_by"] == human.principal.id
    events = await events_of(engine, task_id)
    replayed = [
        e for e in events if e.event_type == "REJECTED" and "sent to approve first" in (e.reason or "")
    ]
    assert len(replayed) == 1 and replayed[0].payload["decision"] == "reject"
