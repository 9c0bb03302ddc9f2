"""Approvals show what changes: a plan's supersede, duplicate and new items, everywhere an approver looks.

One promotion into project scope publishes (approved by a human) a decision about `db.driver` and a fact.
A second task's promotion then plans a supersede of that decision, a duplicate of that fact and a new fact.
Its plan, through the real gateway, the CLI, the console and the workflow's own state, shows each target's
content with a word diff, its trust and who approved it, and each new item's nearest memories; the
workflow's history holds none of the contents. Against a Temporal dev server and a worker with the real
activities (tests/api/conftest.py).
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.client import Client

from api.services.gateway import GatewayResources, load_task
from api.services.plan_review import reviewed_entries, target_scope_key
from governance.config import Settings
from governance.scopes import ActorType
from governance.storage.plans import PlanKey, latest_plan, plan_page
from policy.enforcer import make_authorizer
from tests.api.test_console import csrf_of, sign_in
from tests.utils.cli import cli_env, run_cli
from tests.utils.factories import Actor, make_actor, new_tenant
from tests.utils.promotion_gateway import awaiting_approval, wait_promotion_state
from tests.utils.tenancy import task_key_of
from workflows.promotion_contract import Names, PromotionStatus, workflow_id_for

# every content's second line holds a marker no title carries: titles are payload titles or first lines
OLD_DRIVER = "db.driver: psycopg 3 with the async API\nmarker-old-driver: chosen for its async support"
NEW_DRIVER = "db.driver: asyncpg with its own pool\nmarker-new-driver: chosen for its async support and speed"
RUNNERS = "The CI runners have two CPU cores and 7 GB of memory.\nmarker-runners: measured in March"
DEPLOYS = "Deploys go out from the main branch at noon.\nmarker-deploys: the runners build them"
MARKERS = ("marker-old-driver", "marker-new-driver", "marker-runners", "marker-deploys")
# a GitHub token staged with the old driver: staging keeps it, published memory (and so the plan) never has it
SECRET = "ghp_" + "A1b2C3d4" * 4 + "Z9y8"
OLD_DRIVER_STAGED = f"{OLD_DRIVER}\nread with {SECRET}"
OLD_DRIVER_PUBLISHED = f"{OLD_DRIVER}\nread with [REDACTED]"


@dataclass
class Scenario:
    """The second promotion, awaiting approval, and who is who."""

    first_task: str
    task_id: str
    team: dict[str, Actor]
    gateway: str


async def _promote(http: httpx.AsyncClient, team: dict[str, Actor], entries: list[dict[str, Any]]) -> str:
    task_id, _ = await awaiting_approval(http, team, entries, f"settle the db driver {uuid.uuid4().hex[:6]}")
    return task_id


def _entry(kind: str, content: str, title: str, key: str | None = None) -> dict[str, Any]:
    payload: dict[str, Any] = {"title": title}
    if key is not None:
        payload["key"] = key
    return {"kind": kind, "content": content, "payload": payload}


@pytest.fixture(scope="module")
async def scenario(engine: AsyncEngine, gateway: str, worker: None) -> Scenario:
    org, project = new_tenant()
    team = {
        "orchestrator": await make_actor(engine, ActorType.ORCHESTRATOR, org, project),
        "agent": await make_actor(engine, ActorType.AGENT, org, project),
        "human": await make_actor(engine, ActorType.HUMAN, org, project),
        "outsider": await make_actor(engine, ActorType.HUMAN, *new_tenant()),
    }
    async with httpx.AsyncClient(base_url=gateway, timeout=90) as http:
        first = await _promote(
            http,
            team,
            [
                _entry("decision", OLD_DRIVER_STAGED, "The db driver", "db.driver"),
                _entry("fact", RUNNERS, "CI runner size"),
            ],
        )
        approved = await http.post(
            f"/v1/promotions/{first}/approve", headers=team["human"].headers, json={"note": "checked"}
        )
        assert approved.status_code == 200, approved.text
        await wait_promotion_state(http, team["human"].headers, first, "published")
        second = await _promote(
            http,
            team,
            [
                _entry("decision", NEW_DRIVER, "The db driver, again", "db.driver"),
                _entry("fact", RUNNERS, "CI runner size, again"),
                _entry("fact", DEPLOYS, "When deploys go out"),
            ],
        )
    return Scenario(first, second, team, gateway)


def _by_decision(items: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for item in items:
        found.setdefault(item["decision"], []).append(item)
    return found


def _rebuilt(diff: list[dict[str, str]], keep: str) -> str:
    return "".join(op["text"] for op in diff if op["op"] in ("equal", keep))


async def test_plan_review_api_shows_targets_diffs_trust_approvers_and_nearest(scenario: Scenario) -> None:
    human = scenario.team["human"]
    async with httpx.AsyncClient(base_url=scenario.gateway, timeout=30) as http:
        answer = await http.get(f"/v1/promotions/{scenario.task_id}/plan", headers=human.headers)
        status = await http.get(f"/v1/promotions/{scenario.task_id}", headers=human.headers)
    assert answer.status_code == 200, answer.text
    items = _by_decision(answer.json()["items"])
    assert status.json()["plan"] == answer.json()["items"]  # the status's first page is the same review

    (supersede,) = items["supersede"]
    assert supersede["content"] == NEW_DRIVER and supersede["target_content"] == OLD_DRIVER_PUBLISHED
    assert supersede["target_title"] == "The db driver" and supersede["target_citation"]
    assert supersede["target_approved_by"] == human.principal.id and supersede["target_approved_at"]
    assert supersede["target_published_by"] and 0.1 <= supersede["target_trust"] <= 1.0
    assert _rebuilt(supersede["diff"], "delete") == OLD_DRIVER_PUBLISHED
    assert SECRET not in answer.text and SECRET not in status.text
    assert _rebuilt(supersede["diff"], "insert") == NEW_DRIVER
    assert {"op": "delete", "text": "the async API"} in supersede["diff"]
    assert {"op": "insert", "text": "its own pool"} in supersede["diff"]
    assert supersede["diff_text"].startswith(
        "db.driver: [-psycopg 3-]{+asyncpg+} with [-the async API-]{+its own pool+}\n"
    )

    (duplicate,) = items["duplicate"]
    assert duplicate["target_content"] == RUNNERS and duplicate["target_title"] == "CI runner size"
    assert duplicate["target_approved_by"] == human.principal.id
    assert duplicate["diff"] == [{"op": "equal", "text": RUNNERS}] and duplicate["nearest"] == []

    deploys = next(i for i in items["new"] if i["content"] == DEPLOYS)
    assert 1 <= len(deploys["nearest"]) <= 3
    titles = {n["title"] for n in deploys["nearest"]}
    assert titles & {"The db driver", "CI runner size"}, deploys["nearest"]
    similarities = [n["similarity"] for n in deploys["nearest"]]
    assert similarities == sorted(similarities, reverse=True)
    assert all(n["id"] and n["citation"] and 0.1 <= n["trust"] <= 1.0 for n in deploys["nearest"])
    assert deploys["target_content"] is None and deploys["diff"] is None


async def test_plan_review_is_refused_to_another_tenant(scenario: Scenario) -> None:
    async with httpx.AsyncClient(base_url=scenario.gateway, timeout=30) as http:
        for path in (f"/v1/promotions/{scenario.task_id}/plan", f"/v1/promotions/{scenario.task_id}"):
            refused = await http.get(path, headers=scenario.team["outsider"].headers)
            assert refused.status_code == 404, refused.text
            assert "psycopg" not in refused.text and "asyncpg" not in refused.text


async def test_plan_review_in_the_cli_prints_diffs_approvers_and_nearest(scenario: Scenario) -> None:
    human = scenario.team["human"]
    env = cli_env(LOREGATE_URL=scenario.gateway, LOREGATE_API_KEY=human.key, COLUMNS="200")
    shown = await asyncio.to_thread(run_cli, "promotion", scenario.task_id, env=env)
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert "replaces mem:" in out and "“The db driver”" in out
    assert "merges into mem:" in out and "“CI runner size”" in out
    assert out.count(f"approved by {human.principal.id}") == 2
    assert "db.driver: [-psycopg 3-]{+asyncpg+} with [-the async API-]{+its own pool+}" in out
    assert "new; nearest at the target scope: mem:" in out and "similarity 0." in out
    assert SECRET not in out and "[REDACTED]" in out


async def test_plan_review_in_the_console_pending_page(scenario: Scenario) -> None:
    human = scenario.team["human"]
    async with httpx.AsyncClient(base_url=scenario.gateway, timeout=30) as console:
        await sign_in(console, human)
        pending = await console.get("/console/promotions")
        assert scenario.task_id in pending.text
        page = await console.get(f"/console/promotions/{scenario.task_id}")
        plan = (await console.get(f"/v1/promotions/{scenario.task_id}/plan", headers=human.headers)).json()
        target = next(i["target_id"] for i in plan["items"] if i["decision"] == "supersede")
        memory = await console.get(f"/console/memories/{target}")
    assert page.status_code == 200 and csrf_of(page.text)
    # the memory the supersede replaces names its approver and the approval's note on its own page
    assert f"<code>{human.principal.id}</code>" in memory.text and "“checked”" in memory.text
    html = page.text
    assert "Word diff: the same words as the published memory." in html  # the duplicate
    assert "<del>the async API</del><ins>its own pool</ins>" in html
    assert html.count(f"<code>{human.principal.id}</code>") >= 2  # the approver of both targets
    assert "Its trust" in html and "Nearest published memories at project scope" in html
    assert "similarity 0." in html and 'href="/console/memories/' in html
    assert SECRET not in html
    # the memory's page: published content redacted; staging shown as written only in its provenance,
    # to a reader of the task's staging (as GET /v1/memories/{id} does)
    assert f'<pre class="content">{OLD_DRIVER_PUBLISHED}</pre>' in memory.text
    assert SECRET not in memory.text.split('id="provenance"')[0]


async def test_plan_review_leaves_no_content_in_the_workflows_history(
    scenario: Scenario, local_env: Any
) -> None:
    temporal: Client = local_env.client
    handle = temporal.get_workflow_handle(workflow_id_for(task_key_of(scenario.task_id)))
    status: PromotionStatus = await handle.query(Names.STATE, result_type=PromotionStatus)
    # kinds, decisions, ids and numbers: no title, content, reason or key (docs/privacy.md)
    assert all(e.title == "" and e.content == "" and e.reason == "" for e in status.plan)
    assert all(e.canonical_key is None and e.target_title is None for e in status.plan)
    supersede = next(e for e in status.plan if e.decision == "supersede")
    assert supersede.target_approved_by == scenario.team["human"].principal.id
    assert supersede.target_trust is not None and supersede.target_id
    assert any(e.decision == "duplicate" and e.target_id for e in status.plan)
    deploys = next(e for e in status.plan if e.decision == "new" and e.nearest)
    # the nearest by citation only: nothing records which histories named them, so no title goes there
    assert all(n.citation and n.title == "" for n in deploys.nearest)

    # the current details the Temporal UI shows: what each change replaces or merges into, with its trust
    # and approver, and each new item's nearest memories; where the contents and diffs are
    meta = await handle.query("__temporal_workflow_metadata", result_type=WorkflowMetadata)
    details = meta.current_details
    human = scenario.team["human"].principal.id
    assert f"replaces `{supersede.target_id}`" in details and f"approved by `{human}`" in details
    assert "merges into `" in details and "trust 1.00" in details
    assert "nearest: `mem:" in details
    assert f"loregate promotion {scenario.task_id}" in details and "/console/promotions/" in details
    # every event and the description (with the current details the Temporal UI shows), as raw bytes
    described = await handle.describe()
    # the static details tell a UI reviewer to mint the token the default mode requires
    static = await described.static_details()
    assert static is not None and f"loregate approval-token {scenario.task_id}" in static
    assert '"token": "lgat1...."' in static
    blobs = [e.SerializeToString() for e in (await handle.fetch_history()).events]
    blobs.append(described.raw_description.SerializeToString())
    assert not any(b"The db driver" in blob for blob in blobs)  # no title...
    for marker in MARKERS:  # ...and no content
        assert not any(marker.encode() in blob for blob in blobs), marker


async def test_plan_review_withholds_targets_and_neighbours_the_reader_may_not_read(
    scenario: Scenario, engine: AsyncEngine, promo_settings: Settings
) -> None:
    """The review judges every target and neighbour as GET /v1/memories/{id} would, with the real policy."""
    state = GatewayResources(
        settings=promo_settings,
        engine=engine,
        authorizer=make_authorizer(promo_settings.sqlalchemy_url(), watch=False),
    )
    async with engine.connect() as conn:
        header = await latest_plan(conn, workflow_id_for(task_key_of(scenario.task_id)))
        assert header is not None
        key = PlanKey(header.workflow_id, header.run_id)
        rows = await plan_page(conn, key, offset=0, limit=10)
    task = await load_task(state, scenario.team["human"].principal, scenario.task_id)
    target_key = target_scope_key(task, "project")
    assert target_key == f"project:{task.org}/{task.project}"

    mine = await reviewed_entries(state, scenario.team["human"].principal, key, rows, target_key)
    theirs = await reviewed_entries(state, scenario.team["outsider"].principal, key, rows, target_key)
    changes = [e for e in mine if e.decision in ("supersede", "duplicate")]
    assert changes and all(not e.target_withheld and e.diff for e in changes)
    assert any(e.nearest for e in mine if e.decision == "new")
    for entry in theirs:
        if entry.decision in ("supersede", "duplicate"):
            assert entry.target_withheld and entry.target_title is None and entry.target_content is None
            assert entry.diff is None and entry.target_approved_by is None
        assert entry.nearest == []


async def test_plan_review_erasing_a_target_names_the_promotions_that_show_its_title(
    scenario: Scenario,
) -> None:
    """The workflow's preview holds a target's title, so an erasure receipt names that workflow."""
    human = scenario.team["human"]
    async with httpx.AsyncClient(base_url=scenario.gateway, timeout=30) as http:
        plan = (await http.get(f"/v1/promotions/{scenario.task_id}/plan", headers=human.headers)).json()
        target = next(i["target_id"] for i in plan["items"] if i["decision"] == "supersede")
        dry = await http.delete(f"/v1/memories/{target}", headers=human.headers, params={"dry_run": "true"})
    assert dry.status_code == 200, dry.text
    assert workflow_id_for(task_key_of(scenario.task_id)) in dry.json()["temporal_workflows"]
    assert workflow_id_for(task_key_of(scenario.first_task)) in dry.json()["temporal_workflows"]
