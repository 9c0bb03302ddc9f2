"""A human approves a promotion in loregate's own console (/console), in headless Chromium.

The whole way a user goes: `loregate up`, keys from `loregate keys create`, a task and its staging written
over HTTP, a project-scope promotion started; then, in the browser, sign in with the human's API key, find
the promotion among the pending decisions, read its plan, approve it, and follow the published memory to
its page (content, trust, provenance, supersession chain, events) and to the scope's memory browser.

Screenshots of what the reviewer sees are kept in tests/e2e/artifacts/: console-pending.png (the plan and
the decision form), console-approved.png, console-memory.png and console-browser.png (on a failure:
console-failure.png). The API key must never appear in any URL the browser requests.
"""

from __future__ import annotations

import asyncio
import uuid
from urllib.parse import quote

import httpx
import pytest
from playwright.async_api import Page, expect

from governance.staging import task_key
from tests.e2e.conftest import ARTIFACTS, Platform, Principal

pytestmark = pytest.mark.timeout(240)

ORG, PROJECT = "acme", "console"
DRIVER_TITLE = "db.driver: psycopg 3 with the async API"
CI_TITLE = "The CI runners have two CPU cores and 7 GB of memory."
NOTE = "approved in the console"


async def _pending_promotion(http: httpx.AsyncClient, orchestrator: Principal, agent: Principal) -> str:
    """A task with staging, promoted into project scope, once it awaits approval."""
    opened = await http.post(
        "/v1/tasks",
        json={"org": ORG, "project": PROJECT, "worktree": "main", "description": "switch the db driver"},
        headers=orchestrator.headers,
    )
    assert opened.status_code == 201, opened.text
    task_id = str(opened.json()["task_id"])
    written = await http.post(
        f"/v1/tasks/{task_id}/entries",
        json={
            "entries": [
                {"kind": "log", "content": "ran the test suite against psycopg 3"},
                {"kind": "decision", "content": DRIVER_TITLE, "payload": {"key": "db.driver"}},
                {"kind": "fact", "content": CI_TITLE},
            ]
        },
        headers=agent.headers,
    )
    assert written.status_code == 201, written.text
    started = await http.post(
        f"/v1/tasks/{task_id}/promotion",
        json={"target_scope": "project", "verification": {"source": "tests_passed", "success": True}},
        headers=orchestrator.headers,
    )
    assert started.status_code == 202, started.text
    for _ in range(300):
        status = await http.get(f"/v1/promotions/{task_id}", headers=orchestrator.headers)
        if status.status_code == 200 and status.json()["state"] == "awaiting_approval":
            return task_id
        await asyncio.sleep(0.2)
    raise AssertionError(f"the promotion of {task_id} never awaited approval: {status.text}")


async def _reload_until(page: Page, text: str, tries: int = 30) -> None:
    """Reload until `text` shows (the workflow publishes a moment after it accepts the approval)."""
    for _ in range(tries):
        if await page.get_by_text(text, exact=True).count():
            return
        await asyncio.sleep(0.5)
        await page.reload()
    await expect(page.get_by_text(text, exact=True).first).to_be_visible()


async def _review_in_console(page: Page, platform: Platform, task_id: str, human: Principal) -> None:
    """What the reviewer does in the console, from signing in to the published memory's history."""
    await page.goto(f"{platform.base_url}/console")
    await expect(page.get_by_role("heading", level=1, name="Sign in")).to_be_visible()
    await page.get_by_label("API key").fill(human.key)
    await page.get_by_role("button", name="Sign in").click()

    await expect(page.get_by_role("heading", level=1, name="Promotions: awaiting approval")).to_be_visible()
    await expect(page.get_by_role("banner").get_by_text(human.id)).to_be_visible()
    await page.get_by_role("link", name=task_id, exact=True).click()

    await expect(page.get_by_role("heading", level=1, name=f"Promotion 1 of task {task_id}")).to_be_visible()
    await expect(page.get_by_role("heading", level=3, name=DRIVER_TITLE, exact=False)).to_be_visible()
    await expect(page.get_by_role("heading", level=3, name=CI_TITLE, exact=False)).to_be_visible()
    temporal = page.get_by_role("link", name=f"promote-{task_key(ORG, task_id)} in the Temporal UI")
    await expect(temporal).to_have_attribute(
        "href",
        f"{platform.ui_url}/namespaces/{platform.namespace}/workflows/"
        + quote(f"promote-{task_key(ORG, task_id)}", safe=""),
    )
    await page.screenshot(path=str(ARTIFACTS / "console-pending.png"), full_page=True)

    await page.get_by_label("Note (kept with the decision)").fill(NOTE)
    await page.get_by_role("button", name="Approve and publish").click()
    await expect(page.get_by_role("status")).to_have_text("Your approval was accepted.")
    await _reload_until(page, "published")
    await expect(page.get_by_text(human.id).first).to_be_visible()
    await page.screenshot(path=str(ARTIFACTS / "console-approved.png"), full_page=True)

    await page.get_by_role("link", name=DRIVER_TITLE, exact=True).click()
    await expect(page.get_by_role("heading", level=1, name=DRIVER_TITLE)).to_be_visible()
    await expect(page.get_by_role("heading", name="Supersession chain (oldest first)")).to_be_visible()
    await expect(page.get_by_role("link", name=f"v1: {DRIVER_TITLE}")).to_be_visible()
    await expect(page.get_by_role("cell", name="PROMOTED").first).to_be_visible()
    await expect(page.get_by_role("cell", name=DRIVER_TITLE).first).to_be_visible()  # its staging entry
    await page.screenshot(path=str(ARTIFACTS / "console-memory.png"), full_page=True)

    await page.get_by_role("link", name=f"project:{ORG}/{PROJECT}").click()
    await expect(
        page.get_by_role("heading", level=1, name=f"Memories of project:{ORG}/{PROJECT}")
    ).to_be_visible()
    await page.get_by_label("State").select_option("active")
    await page.get_by_label("Text").fill("psycopg")
    await page.get_by_role("button", name="Show").click()
    await expect(page.get_by_role("link", name=DRIVER_TITLE, exact=True)).to_be_visible()
    await expect(page.get_by_role("link", name=CI_TITLE, exact=True)).to_have_count(0)
    await page.screenshot(path=str(ARTIFACTS / "console-browser.png"), full_page=True)


async def test_console_review_approves_and_browses_to_the_published_memory(
    browser_page: Page, platform: Platform
) -> None:
    suffix = uuid.uuid4().hex[:6]
    orchestrator = platform.create_key("orchestrator", ORG, PROJECT, f"orchestrator-{suffix}")
    agent = platform.create_key("agent", ORG, PROJECT, f"agent-{suffix}")
    human = platform.create_key("human", ORG, PROJECT, f"alice-{suffix}")
    requested: list[str] = []
    browser_page.on("request", lambda request: requested.append(request.url))

    async with httpx.AsyncClient(base_url=platform.base_url, timeout=30) as http:
        task_id = await _pending_promotion(http, orchestrator, agent)
        ARTIFACTS.mkdir(exist_ok=True)
        try:
            await _review_in_console(browser_page, platform, task_id, human)
        except Exception:
            failure = ARTIFACTS / "console-failure.png"
            await browser_page.screenshot(path=str(failure), full_page=True)
            print(f"\nscreenshot of the failing page: {failure}")
            raise
        print(f"\nscreenshots of the console: {ARTIFACTS}/console-*.png")

        status = (await http.get(f"/v1/promotions/{task_id}", headers=orchestrator.headers)).json()
        assert status["state"] == "published"
        assert (status["decided_by"], status["decision_note"]) == (human.id, NOTE)
        assert {m["title"] for m in status["published"]} >= {DRIVER_TITLE, CI_TITLE}

    assert requested and not [url for url in requested if human.key in url]
    cookies = await browser_page.context.cookies()
    session = next(c for c in cookies if c["name"] == "loregate_console")
    assert session["httpOnly"] and session["sameSite"] == "Strict" and human.key not in session["value"]
