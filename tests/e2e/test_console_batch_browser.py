"""Batch decisions in headless Chromium: a reviewer selects two pending promotions and a change request on
the pending page and approves them in one action; each is decided on its own and the answer lists each.

`loregate up`, keys from `loregate keys create`, and over HTTP: a first promotion approved (so a project
memory exists), two promotions awaiting approval and an orchestrator's supersede of that memory. In the
browser: the three selected with their checkboxes, one approval; a third promotion left unselected stays
pending. Screenshots kept in tests/e2e/artifacts/: console-batch-selected.png, console-batch-decided.png
(on a failure: console-batch-failure.png).
"""

from __future__ import annotations

import uuid

import httpx
import pytest
from playwright.async_api import Page, expect

from tests.e2e.conftest import ARTIFACTS, Platform
from tests.e2e.test_console_review_browser import (
    DEPLOYS,
    ORG,
    PROJECT,
    RUNNERS,
    _promotion,
    _shot,
    _sign_in,
    _wait,
)

pytestmark = pytest.mark.timeout(300)


async def test_console_approves_the_selected_promotions_and_change_in_one_action(
    browser_page: Page, platform: Platform
) -> None:
    suffix = uuid.uuid4().hex[:6]
    team = {
        "orchestrator": platform.create_key("orchestrator", ORG, PROJECT, f"orchestrator-{suffix}"),
        "agent": platform.create_key("agent", ORG, PROJECT, f"agent-{suffix}"),
        "human": platform.create_key("human", ORG, PROJECT, f"alice-{suffix}"),
    }
    human = team["human"]
    async with httpx.AsyncClient(base_url=platform.base_url, timeout=30) as http:
        first = await _promotion(http, team, [{"kind": "fact", "content": RUNNERS}])
        approved = await http.post(f"/v1/promotions/{first}/approve", json={}, headers=human.headers)
        assert approved.status_code == 200, approved.text
        published = await _wait(http, human, f"/v1/promotions/{first}", "published")
        runners = next(p for p in published["published"] if p["title"] == RUNNERS)
        proposed = await http.post(
            f"/v1/memories/{runners['memory_id']}/retire",
            json={"reason": "the runners are gone"},
            headers=team["orchestrator"].headers,
        )
        assert proposed.status_code == 202, proposed.text
        change_id = str(proposed.json()["id"])
        picked = [
            await _promotion(http, team, [{"kind": "fact", "content": f"{DEPLOYS} ({n})"}]) for n in (1, 2)
        ]
        left = await _promotion(http, team, [{"kind": "fact", "content": "Releases are tagged vX.Y.Z."}])

        page = browser_page
        ARTIFACTS.mkdir(exist_ok=True)
        try:
            await _sign_in(page, platform, human)
            await page.get_by_role("link", name="Pending decisions").click()
            for task_id in picked:
                await page.get_by_label(f"Select the promotion of task {task_id}").check()
            await page.get_by_label(f"Select the retire {change_id[:8]}").check()
            await page.get_by_label("Note (kept with every decision)").fill("reviewed together")
            await _shot(page, "console-batch-selected.png")
            await page.get_by_role("button", name="Approve the selected").click()
            await expect(page.get_by_role("heading", name="Approved: 3 decided, 0 refused")).to_be_visible()
            for task_id in picked:
                await expect(page.get_by_role("link", name=f"promotion of {task_id}")).to_be_visible()
            await expect(page.get_by_role("link", name=f"change {change_id[:8]}")).to_be_visible()
            await _shot(page, "console-batch-decided.png")
        except Exception:
            await page.screenshot(path=str(ARTIFACTS / "console-batch-failure.png"), full_page=True)
            raise

        for task_id in picked:
            done = await _wait(http, human, f"/v1/promotions/{task_id}", "published")
            assert done["decided_by"] == human.id
        change = await _wait(http, human, f"/v1/change-requests/{change_id}", "applied")
        assert change["decided_by"] == human.id
        still = (await http.get(f"/v1/promotions/{left}", headers=human.headers)).json()
        assert still["state"] == "awaiting_approval" and still["decided_by"] is None
