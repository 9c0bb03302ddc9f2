"""Free text is redacted like content: secrets written into a task description, an approval note, a
change-request reason and its decision note never reach a reader of another project.

Through the real gateway, the Temporal dev server and a worker: a task whose description plants a GitHub
token and a password is promoted to org scope, approved with a note planting them again; an orchestrator
asks to supersede the org memory with a reason planting them, and a human approves with a note doing the
same. An agent and a human of another project of the org read the memory's events and the org's export;
the project's own human reads the promotion and the change request. None of them gets a planted secret.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio.client import Client

from governance.config import Settings
from governance.scopes import ActorType, Scope
from governance.storage.staging import get_task
from tests.api.test_keeping_memory_true import FIRST, _memory, _promoted
from tests.utils.factories import Actor, make_actor
from tests.utils.grpc_gateway import bearer, grpc_gateway, pb2
from tests.utils.lifecycle_factories import Place, insert_memory
from tests.utils.promotion_factories import active_memories
from tests.utils.promotion_gateway import awaiting_approval, wait_promotion_state
from tests.utils.tenancy import task_key_of
from workflows.promotion_contract import workflow_id_for

TOKEN = "ghp_" + "Wd3kP8zQ1xN6vB4mT9rY2cL7hJ5sF0aG8eUi"
PASSWORD = "Tr0ub4dor&3xyz"
PLANTED = f"GITHUB_TOKEN={TOKEN} and password={PASSWORD}"


def _clean(text: str) -> None:
    assert TOKEN not in text and PASSWORD not in text, text


async def _promote_org_fact(
    http: httpx.AsyncClient, team: dict[str, Actor], temporal: Client | None = None
) -> tuple[str, str]:
    """An org fact promoted from a task whose description plants secrets, approved with a note planting
    them: through the API, or by the Temporal UI's signal when `temporal` is given."""
    human = team["human"]
    entry = {"kind": "fact", "content": "Deploys go through the bastion host and rotate weekly."}
    task_id, _ = await awaiting_approval(http, team, [entry], f"wire the deploy key; {PLANTED}", "org")
    if temporal is not None:
        await temporal.get_workflow_handle(workflow_id_for(task_key_of(task_id))).signal(
            "approve", {"approver": human.principal.id, "note": f"ok; {PLANTED}"}
        )
    else:
        approved = await http.post(
            f"/v1/promotions/{task_id}/approve", headers=human.headers, json={"note": f"ok; {PLANTED}"}
        )
        assert approved.status_code == 200, approved.text
    done = await wait_promotion_state(http, human.headers, task_id, "published")
    _clean(str(done))
    assert done["decision_note"].startswith("ok; ")
    [fact] = [p for p in done["published"] if p["memory_type"] == "fact"]
    return task_id, str(fact["memory_id"])


async def _project_fact(engine: AsyncEngine, actor: Actor) -> str:
    """A human-approved project fact, as a promotion approved by a human leaves it."""
    project = actor.principal.project or ""
    place = Place(org=actor.principal.org, project=project, worktree="main", task_id=f"task-{project}")
    async with engine.begin() as conn:
        return await insert_memory(
            conn,
            place,
            memory_type="fact",
            content="db.driver: psycopg 3 with the async API",
            canonical_key="db.driver",
            confidence=1.0,
            validation_source="human_approved",
            scope=Scope.PROJECT.value,
            scope_key=place.key(Scope.PROJECT),
        )


async def _change_request_applied(http: httpx.AsyncClient, team: dict[str, Actor], memory_id: str) -> str:
    """An orchestrator's supersede request (a reason planting secrets), approved with a note planting them."""
    proposed = await http.post(
        f"/v1/memories/{memory_id}/supersede",
        headers=team["orchestrator"].headers,
        json={"content": "db.driver: asyncpg", "reason": f"moved; {PLANTED}"},
    )
    assert proposed.status_code == 202, proposed.text
    request_id = proposed.json()["id"]
    _clean(proposed.text)
    decided = await http.post(
        f"/v1/change-requests/{request_id}/approve",
        headers=team["human"].headers,
        json={"note": f"fine; {PLANTED}"},
    )
    assert decided.status_code == 200, decided.text
    deadline = asyncio.get_running_loop().time() + 60
    answer: dict[str, Any] = {}
    while asyncio.get_running_loop().time() < deadline:
        shown = await http.get(f"/v1/change-requests/{request_id}", headers=team["human"].headers)
        answer = shown.json()
        if answer.get("state") == "applied":
            break
        await asyncio.sleep(0.2)
    assert answer.get("state") == "applied", answer
    _clean(str(answer))
    assert "moved" in answer["reason"] and "fine" in (answer["decision_note"] or "")
    return str(answer["result_memory_id"])


async def test_free_text_secrets_never_reach_readers_of_another_project(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    task_id, memory_id = await _promote_org_fact(http, team)
    superseded = await http.post(
        f"/v1/memories/{memory_id}/supersede",
        headers=team["human"].headers,
        json={"content": "Deploys go through the new bastion host.", "reason": f"moved; {PLANTED}"},
    )
    assert superseded.status_code == 201, superseded.text
    _clean(superseded.text)
    org = team["orchestrator"].principal.org
    neighbour = await make_actor(engine, ActorType.AGENT, org, "another-project")
    neighbour_human = await make_actor(engine, ActorType.HUMAN, org, "another-project")

    reasons = []
    for shown in (memory_id, superseded.json()["id"]):
        events = await http.get(f"/v1/memories/{shown}/events", headers=neighbour.headers)
        assert events.status_code == 200, events.text
        _clean(events.text)
        reasons += [str(e.get("reason")) for e in events.json()["events"]]
    assert any("moved" in r for r in reasons), reasons  # the reason is there, cleaned

    exported = await http.get(
        "/v1/exports", params={"scope_key": f"org:{org}"}, headers=neighbour_human.headers
    )
    assert exported.status_code == 200, exported.text
    _clean(exported.text)
    assert memory_id in exported.text

    promotion = await http.get(f"/v1/promotions/{task_id}", headers=team["human"].headers)
    assert promotion.status_code == 200, promotion.text
    _clean(promotion.text)
    task = await http.get(f"/v1/tasks/{task_id}", headers=team["human"].headers)
    if task.status_code == 200:
        _clean(task.text)
        assert "wire the deploy key" in task.text


async def test_change_request_reason_and_decision_note_are_redacted(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    memory_id = await _project_fact(engine, team["orchestrator"])
    result_id = await _change_request_applied(http, team, memory_id)
    for shown in (memory_id, result_id):
        events = await http.get(f"/v1/memories/{shown}/events", headers=team["agent"].headers)
        assert events.status_code == 200, events.text
        _clean(events.text)


async def test_approval_note_sent_by_signal_is_redacted_for_readers(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine, temporal: Client
) -> None:
    task_id, memory_id = await _promote_org_fact(http, team, temporal)
    org = team["orchestrator"].principal.org
    neighbour = await make_actor(engine, ActorType.AGENT, org, "another-project")
    events = await http.get(f"/v1/memories/{memory_id}/events", headers=neighbour.headers)
    assert events.status_code == 200, events.text
    _clean(events.text)
    promotion = await http.get(f"/v1/promotions/{task_id}", headers=team["human"].headers)
    _clean(promotion.text)


async def test_observation_note_is_redacted_for_readers_of_another_project(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    orchestrator = team["orchestrator"]
    project = orchestrator.principal.project or ""
    place = Place(org=orchestrator.principal.org, project=project, worktree="main", task_id=f"task-{project}")
    async with engine.begin() as conn:
        rule_id = await insert_memory(
            conn,
            place,
            memory_type="code_rule",
            content="Always set a timeout on outbound HTTP calls in the billing service.",
            confidence=0.8,
            validation_source="tests_passed",
            scope=Scope.ORG.value,
            scope_key=place.key(Scope.ORG),
            project=None,
        )
    # observations of an org rule come from those who may write where it binds: an org-wide human
    observer = await make_actor(engine, ActorType.HUMAN, orchestrator.principal.org, None)
    observed = await http.post(
        f"/v1/memories/{rule_id}/observations",
        headers=observer.headers,
        json={"outcome": "violated", "note": f"broke prod; {PLANTED}"},
    )
    assert observed.status_code == 200, observed.text
    _clean(observed.text)
    neighbour = await make_actor(engine, ActorType.AGENT, orchestrator.principal.org, "another-project")
    events = await http.get(f"/v1/memories/{rule_id}/events", headers=neighbour.headers)
    assert events.status_code == 200, events.text
    _clean(events.text)
    assert "broke prod" in events.text


async def test_stale_reason_of_a_derived_memory_is_redacted(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    """A supersede reason is repeated in the stale mark of what was derived from the old memory."""
    first = await _promoted(http, team, FIRST)
    by_type = {m.memory_type: m for m in await active_memories(engine, task_id=first)}
    fact, skill = by_type["fact"], by_type["skill"]
    superseded = await http.post(
        f"/v1/memories/{fact.id}/supersede",
        headers=team["orchestrator"].headers,
        json={"content": "db.driver: asyncpg", "reason": f"benchmarked; {PLANTED}"},
    )
    assert superseded.status_code == 201, superseded.text
    shown = await _memory(http, team["agent"], skill.citation)
    assert shown["stale_at"] is not None and "benchmarked" in shown["stale_reason"]
    _clean(str(shown))


async def test_lift_reason_is_redacted_for_readers_of_another_project(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    human = team["human"]
    original = await _project_fact(engine, human)
    lifted = await http.post(
        "/v1/memories/lift",
        headers=human.headers,
        json={"memory_ids": [original], "target_scope": {"scope": "org"}, "reason": f"for all; {PLANTED}"},
    )
    assert lifted.status_code == 201, lifted.text
    _clean(lifted.text)
    (item,) = lifted.json()["items"]
    neighbour = await make_actor(engine, ActorType.AGENT, human.principal.org, "another-project")
    events = await http.get(f"/v1/memories/{item['result_memory_id']}/events", headers=neighbour.headers)
    assert events.status_code == 200, events.text
    _clean(events.text)
    assert "for all" in events.text


async def test_task_description_opened_over_grpc_is_stored_redacted(
    settings: Settings, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    """Another channel, the same rule: the description is cleaned where it is stored."""
    orchestrator = team["orchestrator"]
    async with grpc_gateway(settings) as stub:
        task = await stub.OpenTask(
            pb2.OpenTaskRequest(
                org=orchestrator.principal.org,
                project=orchestrator.principal.project,
                worktree="main",
                description=f"rotate the deploy key; {PLANTED}",
            ),
            metadata=bearer(orchestrator.key),
        )
    _clean(str(task))
    async with engine.connect() as conn:
        stored = await get_task(conn, task_key_of(task.task_id))
    assert stored is not None and stored.description.startswith("rotate the deploy key; GITHUB_TOKEN=")
    _clean(stored.description)
