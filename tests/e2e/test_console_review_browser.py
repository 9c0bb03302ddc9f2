"""A reviewer's console beyond one approval, in headless Chromium: plan diffs, change requests, a memory's
links and trust, the audit trail, a task's staging, and the refusals a browser meets.

`loregate up`, keys from `loregate keys create`, and over HTTP: a first promotion approved (so published
memory exists), a second one awaiting approval that supersedes, duplicates and adds, and an orchestrator's
supersede of a project memory (a change request). Then in the browser: the plan with word diffs, trust,
approvers and nearest memories; the change request with its diff and its workflow's link; an agent's
approval of it refused (403 page); a forged CSRF token refused; the human's approval applied; the new
head's page (chain, trust history); the audit trail filtered; the task's staging, and a 404 for a reader
of another project.

Screenshots kept in tests/e2e/artifacts/: console-pending-decisions.png, console-plan-diff.png,
console-change.png, console-change-refused-agent.png, console-change-refused-csrf.png,
console-change-applied.png, console-memory-links.png, console-audit.png, console-task.png,
console-task-404.png, and temporal-details-plan.png (the plan in the Temporal UI's current details;
on a failure: console-review-failure.png).
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from playwright.async_api import Browser, Page, expect

from governance.staging import task_key
from tests.e2e.conftest import ARTIFACTS, UI_TIMEOUT_MS, Platform, Principal
from workflows.change_requests_contract import workflow_id_for
from workflows.promotion_contract import workflow_id_for as promotion_id_for

pytestmark = pytest.mark.timeout(300)

ORG, PROJECT = "acme", "review"
OLD_DRIVER = "db.driver: psycopg 3 with the async API"
NEW_DRIVER = "db.driver: asyncpg with its own pool"
RUNNERS = "The CI runners have two CPU cores and 7 GB of memory."
DEPLOYS = "Deploys go out from the main branch at noon."
CHANGED = "The CI runners have four CPU cores and 16 GB of memory."


async def _promotion(
    http: httpx.AsyncClient, team: dict[str, Principal], entries: list[dict[str, Any]]
) -> str:
    """A task with `entries`, promoted into project scope, once it awaits approval."""
    opened = await http.post(
        "/v1/tasks",
        json={"org": ORG, "project": PROJECT, "worktree": "main", "description": "settle the db driver"},
        headers=team["orchestrator"].headers,
    )
    assert opened.status_code == 201, opened.text
    task_id = str(opened.json()["task_id"])
    written = await http.post(
        f"/v1/tasks/{task_id}/entries", json={"entries": entries}, headers=team["agent"].headers
    )
    assert written.status_code == 201, written.text
    started = await http.post(
        f"/v1/tasks/{task_id}/promotion",
        json={"target_scope": "project", "verification": {"source": "tests_passed", "success": True}},
        headers=team["orchestrator"].headers,
    )
    assert started.status_code == 202, started.text
    await _wait(http, team["human"], f"/v1/promotions/{task_id}", "awaiting_approval")
    return task_id


async def _wait(http: httpx.AsyncClient, who: Principal, path: str, state: str) -> dict[str, Any]:
    answer: dict[str, Any] = {}
    for _ in range(300):
        response = await http.get(path, headers=who.headers)
        answer = response.json()
        if response.status_code == 200 and answer["state"] == state:
            return answer
        await asyncio.sleep(0.2)
    raise AssertionError(f"{path} never reached {state}: {answer}")


async def _setup(http: httpx.AsyncClient, team: dict[str, Principal]) -> tuple[str, str, str]:
    """A published first promotion, a second one awaiting approval, and a change request: their ids."""
    first = await _promotion(
        http,
        team,
        [
            {"kind": "decision", "content": OLD_DRIVER, "payload": {"key": "db.driver"}},
            {"kind": "fact", "content": RUNNERS},
        ],
    )
    approved = await http.post(
        f"/v1/promotions/{first}/approve", json={"note": "checked"}, headers=team["human"].headers
    )
    assert approved.status_code == 200, approved.text
    published = await _wait(http, team["human"], f"/v1/promotions/{first}", "published")
    second = await _promotion(
        http,
        team,
        [
            {"kind": "decision", "content": NEW_DRIVER, "payload": {"key": "db.driver"}},
            {"kind": "fact", "content": RUNNERS},
            {"kind": "fact", "content": DEPLOYS},
        ],
    )
    runners = next(p for p in published["published"] if p["title"] == RUNNERS)
    proposed = await http.post(
        f"/v1/memories/{runners['memory_id']}/supersede",
        json={"content": CHANGED, "reason": "the runners were upgraded"},
        headers=team["orchestrator"].headers,
    )
    assert proposed.status_code == 202, proposed.text
    await _wait(http, team["human"], f"/v1/change-requests/{proposed.json()['id']}", "awaiting_approval")
    return first, second, str(proposed.json()["id"])


async def _sign_in(page: Page, platform: Platform, who: Principal) -> None:
    await page.goto(f"{platform.base_url}/console/signin")
    await page.get_by_label("API key").fill(who.key)
    await page.get_by_role("button", name="Sign in").click()
    await expect(page.get_by_role("banner").get_by_text(who.id)).to_be_visible()


async def _shot(page: Page, name: str) -> None:
    await page.screenshot(path=str(ARTIFACTS / name), full_page=True)


async def _review(
    browser: Browser, page: Page, platform: Platform, team: dict[str, Principal], ids: tuple[str, str, str]
) -> None:
    first, second, change_id = ids
    human = team["human"]
    await _sign_in(page, platform, human)
    await expect(page.get_by_role("link", name=f"supersede {change_id[:8]}")).to_be_visible()
    await _shot(page, "console-pending-decisions.png")

    # the pending plan: a supersede and a duplicate with their targets and diffs, a new item with neighbours
    await expect(page.get_by_role("link", name=second, exact=True)).to_be_visible()
    await page.get_by_role("link", name=second, exact=True).click()
    await expect(page.get_by_role("heading", level=1, name=f"Promotion 1 of task {second}")).to_be_visible()
    await expect(page.locator("del", has_text="psycopg 3")).to_be_visible()
    await expect(page.locator("ins", has_text="asyncpg")).to_be_visible()
    await expect(page.get_by_text("Approved by").first).to_be_visible()
    await expect(page.locator("code", has_text=human.id).first).to_be_visible()
    await expect(page.get_by_text("Nearest published memories at project scope").first).to_be_visible()
    await _shot(page, "console-plan-diff.png")

    # the change request, among the pending decisions, with its diff and its workflow
    await page.get_by_role("link", name="Pending decisions").click()
    await page.get_by_role("link", name=f"supersede {change_id[:8]}").click()
    await expect(page.get_by_role("heading", level=1)).to_contain_text("Change request: supersede")
    await expect(page.locator("del", has_text="two")).to_be_visible()
    await expect(page.locator("ins", has_text="four")).to_be_visible()
    workflow = page.get_by_role("link", name="in the Temporal UI")
    await expect(workflow).to_have_attribute(
        "href", f"{platform.ui_url}/namespaces/{platform.namespace}/workflows/{workflow_id_for(change_id)}"
    )
    await _shot(page, "console-change.png")

    # a forged CSRF token (the hidden field rewritten) is refused
    decision_token = page.locator("form[action$='/approve'] input[name=csrf_token]")
    await decision_token.evaluate("field => { field.value = 'forged'; }")
    await page.get_by_role("button", name="Approve the supersede").click()
    await expect(page.get_by_role("heading", level=1)).to_contain_text("403")
    await expect(page.get_by_role("alert")).to_contain_text("CSRF token")
    await _shot(page, "console-change-refused-csrf.png")

    # an agent's key cannot approve it: a 403 page, nothing changes
    agent_page = await (await browser.new_context(viewport={"width": 1280, "height": 900})).new_page()
    agent_page.set_default_timeout(UI_TIMEOUT_MS)
    await _sign_in(agent_page, platform, team["agent"])
    await agent_page.goto(f"{platform.base_url}/console/changes/{change_id}")
    await agent_page.get_by_role("button", name="Approve the supersede").click()
    await expect(agent_page.get_by_role("heading", level=1)).to_contain_text("403")
    await expect(agent_page.get_by_role("alert")).to_contain_text("may not approve")
    await _shot(agent_page, "console-change-refused-agent.png")

    # the human approves with the keyboard: focus the note, type, tab to the button, press Enter
    await page.goto(f"{platform.base_url}/console/changes/{change_id}")
    await page.get_by_label("Note (kept with the decision)").fill("upgrade confirmed")
    await page.keyboard.press("Tab")
    await expect(page.get_by_role("button", name="Approve the supersede")).to_be_focused()
    await page.keyboard.press("Enter")
    await expect(page.get_by_role("status")).to_have_text("Your approval was accepted.")
    for _ in range(40):
        if await page.get_by_text("applied", exact=True).count():
            break
        await asyncio.sleep(0.5)
        await page.reload()
    await expect(page.get_by_text("applied", exact=True)).to_be_visible()
    await _shot(page, "console-change-applied.png")

    # the new head: its chain, its trust history, its derivations
    await page.get_by_role("link", name="the memory after the change").click()
    await expect(page.get_by_role("heading", level=1, name=CHANGED)).to_be_visible()
    await expect(page.get_by_role("link", name=f"v1: {RUNNERS}")).to_be_visible()
    await expect(page.get_by_role("heading", name="Trust history")).to_be_visible()
    await expect(page.get_by_role("heading", name="Derived from it")).to_be_visible()
    await _shot(page, "console-memory-links.png")

    # the audit trail, filtered to approvals by this human
    await page.get_by_role("link", name="Audit trail").click()
    await page.get_by_label("Event type").select_option("APPROVED")
    await page.get_by_label("Actor (principal id)").fill(human.id)
    await page.get_by_role("button", name="Show").click()
    await expect(page.get_by_role("cell", name="APPROVED").first).to_be_visible()
    await expect(page.get_by_role("cell", name="upgrade confirmed")).to_be_visible()
    await _shot(page, "console-audit.png")

    # a task's staging, and a 404 page for a reader of another project
    await page.get_by_role("link", name="Tasks").click()
    await page.get_by_label("Task id").fill(first)
    await page.get_by_label("Task id").press("Enter")
    await expect(page.get_by_role("heading", level=1, name=f"Task {first}")).to_be_visible()
    await expect(page.get_by_role("cell", name=OLD_DRIVER)).to_be_visible()
    await _shot(page, "console-task.png")
    await agent_page.context.clear_cookies()
    await _sign_in(agent_page, platform, team["outsider"])
    await agent_page.goto(f"{platform.base_url}/console/tasks/{first}")
    await expect(agent_page.get_by_role("heading", level=1)).to_contain_text("404")
    await expect(agent_page.get_by_text(OLD_DRIVER)).to_have_count(0)
    await _shot(agent_page, "console-task-404.png")

    # the same plan in the Temporal UI's current details: targets, trust, approvers, neighbours by id; no text
    await page.goto(
        f"{platform.ui_url}/namespaces/{platform.namespace}/workflows/"
        + quote(promotion_id_for(task_key(ORG, second)), safe="")
    )
    await page.get_by_role("tab", name="User Metadata").click()
    details = page.frame_locator("iframe#user-metadata-current-details")
    await expect(details.get_by_text("replaces", exact=False).first).to_be_visible()
    await expect(details.get_by_text(f"approved by {human.id}", exact=False).first).to_be_visible()
    await expect(details.get_by_text("nearest:", exact=False).first).to_be_visible()
    await expect(details.get_by_text("GB of memory.", exact=False)).to_have_count(0)  # no titles in a history
    await _shot(page, "temporal-details-plan.png")


async def test_console_reviewer_sees_diffs_decides_a_change_and_reads_the_trail(
    browser_page: Page, platform: Platform
) -> None:
    suffix = uuid.uuid4().hex[:6]
    team = {
        "orchestrator": platform.create_key("orchestrator", ORG, PROJECT, f"orchestrator-{suffix}"),
        "agent": platform.create_key("agent", ORG, PROJECT, f"agent-{suffix}"),
        "human": platform.create_key("human", ORG, PROJECT, f"alice-{suffix}"),
        "outsider": platform.create_key("human", ORG, "elsewhere", f"bob-{suffix}"),
    }
    async with httpx.AsyncClient(base_url=platform.base_url, timeout=30) as http:
        ids = await _setup(http, team)
        ARTIFACTS.mkdir(exist_ok=True)
        browser = browser_page.context.browser
        assert browser is not None
        try:
            await _review(browser, browser_page, platform, team, ids)
        except Exception:
            failure = ARTIFACTS / "console-review-failure.png"
            await browser_page.screenshot(path=str(failure), full_page=True)
            print(f"\nscreenshot of the failing page: {failure}")
            raise
        print(f"\nscreenshots of the console: {ARTIFACTS}/console-*.png")

        change = (await http.get(f"/v1/change-requests/{ids[2]}", headers=team["human"].headers)).json()
        assert (change["state"], change["decided_by"]) == ("applied", team["human"].id)
        second = (await http.get(f"/v1/promotions/{ids[1]}", headers=team["human"].headers)).json()
        assert second["state"] == "awaiting_approval" and second["decided_by"] is None
