"""Per-item decisions in the console, in headless Chromium: reject one plan item, edit another, approve.

`loregate up`, keys from `loregate keys create`, a promotion awaiting approval over HTTP; then in the
browser a human rejects one item with a reason (a rejection without one first: the 422 page), edits
another, and approves; the plan page then shows each item's fate, and only the approved items are
published.

Screenshots kept in tests/e2e/artifacts/: console-item-decisions.png, console-item-reason-missing.png,
console-item-fates.png (on a failure: console-item-decisions-failure.png).
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx
import pytest
from playwright.async_api import Page, expect

from tests.e2e.conftest import ARTIFACTS, Platform, Principal

pytestmark = pytest.mark.timeout(300)

ORG, PROJECT = "acme", "items"
KEEP = "db.driver: psycopg 3 with the async API"
WRONG = "The CI runners have two CPU cores and 7 GB of memory."
TYPO = "Release tags are pushd by the CI job named publish."
FIXED = "Release tags are pushed by the CI job named publish."


async def _awaiting(http: httpx.AsyncClient, team: dict[str, Principal]) -> tuple[str, dict[str, int]]:
    opened = await http.post(
        "/v1/tasks",
        json={"org": ORG, "project": PROJECT, "worktree": "main", "description": "settle the db driver"},
        headers=team["orchestrator"].headers,
    )
    assert opened.status_code == 201, opened.text
    task_id = str(opened.json()["task_id"])
    entries = [
        {"kind": "decision", "content": KEEP, "payload": {"key": "db.driver"}},
        {"kind": "fact", "content": WRONG},
        {"kind": "fact", "content": TYPO},
    ]
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
    await _wait(http, team["human"], task_id, "awaiting_approval")
    plan = (await http.get(f"/v1/promotions/{task_id}/plan", headers=team["human"].headers)).json()
    index = {
        text: next(i["index"] for i in plan["items"] if text in i["content"]) for text in (KEEP, WRONG, TYPO)
    }
    return task_id, index


async def _wait(http: httpx.AsyncClient, who: Principal, task_id: str, state: str) -> dict[str, Any]:
    answer: dict[str, Any] = {}
    for _ in range(300):
        response = await http.get(f"/v1/promotions/{task_id}", headers=who.headers)
        answer = response.json()
        if response.status_code == 200 and answer["state"] == state:
            return answer
        await asyncio.sleep(0.2)
    raise AssertionError(f"{task_id} never reached {state}: {answer}")


async def _decide(
    page: Page, platform: Platform, human: Principal, task_id: str, index: dict[str, int]
) -> None:
    await page.goto(f"{platform.base_url}/console/signin")
    await page.get_by_label("API key").fill(human.key)
    await page.get_by_role("button", name="Sign in").click()
    await page.goto(f"{platform.base_url}/console/promotions/{task_id}")
    wrong = page.get_by_role("group", name=f"Item {index[WRONG] + 1}: your decision")
    typo = page.get_by_role("group", name=f"Item {index[TYPO] + 1}: your decision")

    # a rejection without its reason is refused with the API's 422 and the item named
    await wrong.get_by_label("reject it").check()
    await page.get_by_role("button", name="Approve and publish").click()
    await expect(page.get_by_role("heading", level=1)).to_contain_text("422")
    await expect(page.get_by_role("alert")).to_contain_text(
        f"plan item {index[WRONG]}: a rejected item needs a reason"
    )
    await page.screenshot(path=str(ARTIFACTS / "console-item-reason-missing.png"), full_page=True)

    await page.goto(f"{platform.base_url}/console/promotions/{task_id}")
    await wrong.get_by_label("reject it").check()
    await wrong.get_by_label("Reason (required to reject)").fill("the runners have four cores")
    await typo.get_by_label("publish my edit").check()
    await typo.get_by_label("Content (for an edit)").fill(FIXED)
    await page.screenshot(path=str(ARTIFACTS / "console-item-decisions.png"), full_page=True)
    await page.get_by_role("button", name="Approve and publish").click()
    await expect(page.get_by_role("status").first).to_have_text("Your approval was accepted.")
    for _ in range(60):
        if await page.get_by_text("Edited by the approver, published.").count():
            break
        await asyncio.sleep(0.5)
        await page.reload()
    await expect(page.get_by_text("Rejected by the approver: the runners have four cores")).to_be_visible()
    await expect(page.get_by_text("Edited by the approver, published.")).to_be_visible()
    await expect(page.locator("pre.edit-diff ins", has_text="pushed")).to_be_visible()
    await expect(page.get_by_role("group", name=f"Item {index[WRONG] + 1}: your decision")).to_have_count(0)
    await page.screenshot(path=str(ARTIFACTS / "console-item-fates.png"), full_page=True)


async def test_console_approver_rejects_one_item_edits_another_and_publishes_the_rest(
    browser_page: Page, platform: Platform
) -> None:
    suffix = uuid.uuid4().hex[:6]
    team = {
        "orchestrator": platform.create_key("orchestrator", ORG, PROJECT, f"orchestrator-{suffix}"),
        "agent": platform.create_key("agent", ORG, PROJECT, f"agent-{suffix}"),
        "human": platform.create_key("human", ORG, PROJECT, f"alice-{suffix}"),
    }
    ARTIFACTS.mkdir(exist_ok=True)
    async with httpx.AsyncClient(base_url=platform.base_url, timeout=30) as http:
        task_id, index = await _awaiting(http, team)
        try:
            await _decide(browser_page, platform, team["human"], task_id, index)
        except Exception:
            failure = ARTIFACTS / "console-item-decisions-failure.png"
            await browser_page.screenshot(path=str(failure), full_page=True)
            print(f"\nscreenshot of the failing page: {failure}")
            raise
        done = await _wait(http, team["human"], task_id, "published")
        fates = {p["index"]: p["fate"] for p in done["plan"]}
        assert fates[index[WRONG]] == "rejected_by_approver"
        assert fates[index[TYPO]] == "edited" and fates[index[KEEP]] == "published"
        found = await http.post(
            "/v1/search",
            json={"query": "CI runners CPU cores", "task_id": task_id, "k": 20},
            headers=team["agent"].headers,
        )
        assert found.status_code == 200, found.text
        contents = [r["content"] for r in found.json()["results"]]
        assert not any(WRONG in c for c in contents)
