"""Patterns from patches through the real gateway, the Temporal dev server and a worker.

A diff's patterns are staged into a task as rule proposals; nobody finds them in search until the task's
promotion is approved by a human; a later patch showing the same pattern merges into the same rule, whose
confidence goes on from its observations. Bad input and outsiders are refused with nothing staged.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.scopes import ActorType
from tests.utils.factories import Actor, make_actor
from tests.utils.promotion_gateway import open_task, start_promotion, wait_promotion_state

GUARD = """\
diff --git a/billing/invoice.py b/billing/invoice.py
--- a/billing/invoice.py
+++ b/billing/invoice.py
@@ -10,3 +10,5 @@ class Invoice:
     def total(self, lines):
+        if lines is None:
+            return 0
         subtotal = sum(line.amount for line in lines)
         return subtotal * (1 + self.tax_rate)
"""

GUARD_AGAIN = """\
--- a/shipping/rates.py
+++ b/shipping/rates.py
@@ -3,3 +3,5 @@
 def rate(parcel):
+    if parcel is None:
+        return None
     weight = parcel.weight
     return BASE + weight * PER_KG
"""


async def _from_patch(http: httpx.AsyncClient, actor: Actor, **body: Any) -> httpx.Response:
    return await http.post("/v1/code-rules/from-patch", headers=actor.headers, json=body)


async def _entries(http: httpx.AsyncClient, actor: Actor, task_id: str) -> list[dict[str, Any]]:
    page = await http.get(f"/v1/tasks/{task_id}/entries", headers=actor.headers)
    assert page.status_code == 200, page.text
    entries: list[dict[str, Any]] = page.json()["entries"]
    return entries


async def _rules_found(http: httpx.AsyncClient, actor: Actor, task_id: str) -> list[dict[str, Any]]:
    answer = await http.post(
        "/v1/search",
        headers=actor.headers,
        json={"task_id": task_id, "query": "guard clause: return early when the value is None", "k": 20},
    )
    assert answer.status_code == 200, answer.text
    return [r for r in answer.json()["results"] if r["type"] == "code_rule"]


async def _publish_pattern(
    http: httpx.AsyncClient, team: dict[str, Actor], diff: str, reader: str
) -> dict[str, Any]:
    """An orchestrator's patch, staged into a task opened for it, promoted to the project and approved."""
    made = await _from_patch(http, team["orchestrator"], diff=diff, outcome="success", message="guard it")
    assert made.status_code == 201, made.text
    task_id = made.json()["task_id"]
    await start_promotion(http, team["orchestrator"], task_id, "project")
    waiting = await wait_promotion_state(http, team["human"].headers, task_id, "awaiting_approval")
    assert any(p["memory_type"] == "code_rule" for p in waiting["plan"]), waiting["plan"]
    approved = await http.post(f"/v1/promotions/{task_id}/approve", headers=team["human"].headers, json={})
    assert approved.status_code == 200, approved.text
    done = await wait_promotion_state(http, team["human"].headers, task_id, "published")
    rules = [p for p in done["published"] if p["memory_type"] == "code_rule"]
    [rule] = [p for p in rules if p["title"].startswith("Guard clause")]
    return {"task_id": task_id, "answer": made.json(), "rule": rule}


async def test_from_patch_proposal_not_searchable_until_approved(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    reader = await open_task(http, team["orchestrator"], "an agent's task that searches the project")
    made = await _from_patch(http, team["orchestrator"], diff=GUARD, outcome="success", message="guard it")
    assert made.status_code == 201, made.text
    body = made.json()
    assert body["opened"] is True and body["languages"] == ["python"] and body["files"] == 1
    guard = next(p for p in body["proposals"] if p["category"] == "guard-clause")
    assert guard["canonical_key"] == "pattern.guard-clause.python" and guard["kind"] == "rule"
    assert guard["languages"] == ["python"] and guard["files"] == ["billing/invoice.py"]
    assert "return 0" in guard["example"]
    staged = await _entries(http, team["orchestrator"], body["task_id"])
    assert [e["kind"] for e in staged] == ["rule"] * len(body["proposals"])
    assert staged[0]["payload"]["key"] == body["proposals"][0]["canonical_key"]

    # through the gate: an orchestrator's rule waits for a human, and nobody finds it meanwhile
    await start_promotion(http, team["orchestrator"], body["task_id"], "project")
    waiting = await wait_promotion_state(http, team["human"].headers, body["task_id"], "awaiting_approval")
    assert any(p["canonical_key"] == "pattern.guard-clause.python" for p in waiting["plan"]), waiting["plan"]
    assert await _rules_found(http, team["agent"], reader) == []
    approved = await http.post(
        f"/v1/promotions/{body['task_id']}/approve", headers=team["human"].headers, json={}
    )
    assert approved.status_code == 200, approved.text
    await wait_promotion_state(http, team["human"].headers, body["task_id"], "published")
    found = await _rules_found(http, team["agent"], reader)
    assert any(r["title"] == guard["title"] for r in found), found


async def test_from_patch_same_pattern_merges_and_ema_goes_on(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    reader = await open_task(http, team["orchestrator"], "reads the project's rules")
    first = await _publish_pattern(http, team, GUARD, reader)
    rule = first["rule"]
    assert rule["action"] == "promoted", rule
    org, project = team["agent"].principal.org, team["agent"].principal.project
    observer = await make_actor(engine, ActorType.HUMAN, org, project)  # not involved in the rule
    seen = await http.post(
        f"/v1/memories/{rule['memory_id']}/observations",
        headers=observer.headers,
        json={"outcome": "violated"},
    )
    assert seen.status_code == 200, seen.text
    after_observation = seen.json()["confidence"]
    # approved by a human: 1.0; one `violated` observation: one EMA step (α 0.2) towards 0
    assert (seen.json()["confidence_before"], after_observation) == (1.0, 0.8)

    second = await _publish_pattern(http, team, GUARD_AGAIN, reader)
    again = second["rule"]
    assert again["memory_id"] == rule["memory_id"] and again["action"] == "merged", again
    memory = await http.get(f"/v1/memories/{rule['memory_id']}", headers=team["human"].headers)
    assert memory.status_code == 200, memory.text
    # the same rule, its confidence going on from the observation (a recurrence's boost), not a fresh one
    confidence = memory.json()["memory"]["confidence"]
    assert confidence == pytest.approx(0.95) and memory.json()["memory"]["deprecated_at"] is None
    next_seen = await http.post(
        f"/v1/memories/{rule['memory_id']}/observations",
        headers=observer.headers,
        json={"outcome": "followed_passed", "task_id": reader},
    )
    assert next_seen.status_code == 200, next_seen.text
    assert next_seen.json()["confidence_before"] == confidence


async def test_from_patch_into_the_callers_task_and_failure_as_approaches(
    http: httpx.AsyncClient, team: dict[str, Actor]
) -> None:
    task_id = await open_task(http, team["orchestrator"], "fix the invoice totals")
    made = await _from_patch(
        http, team["agent"], diff=GUARD, outcome="failure", task_id=task_id, message="broke the CSV export"
    )
    assert made.status_code == 201, made.text
    assert made.json()["task_id"] == task_id and made.json()["opened"] is False
    staged = await _entries(http, team["agent"], task_id)
    assert staged and all(e["kind"] == "approach" for e in staged)
    assert all(e["payload"]["outcome"] == "failed" for e in staged)
    assert "broke the CSV export" in staged[0]["content"]
    # a retry stages nothing twice
    again = await _from_patch(
        http, team["agent"], diff=GUARD, outcome="failure", task_id=task_id, message="broke the CSV export"
    )
    assert again.status_code == 201 and all(p["replayed"] for p in again.json()["proposals"])
    assert len(await _entries(http, team["agent"], task_id)) == len(staged)


async def test_from_patch_bad_input_stages_nothing(http: httpx.AsyncClient, team: dict[str, Actor]) -> None:
    task_id = await open_task(http, team["orchestrator"], "patches land here")
    agent = team["agent"]
    not_diff = await _from_patch(
        http, agent, diff="please add a guard clause", outcome="success", task_id=task_id
    )
    assert not_diff.status_code == 422 and "not a unified diff" in not_diff.json()["detail"], not_diff.text
    broken = "--- a/x.py\n+++ b/x.py\n@@ -1,4 +1,4 @@\n+one line of four\n"
    malformed = await _from_patch(http, agent, diff=broken, outcome="success", task_id=task_id)
    assert malformed.status_code == 422, malformed.text
    huge = GUARD + "".join(f"+# filler line {n} {'x' * 100}\n" for n in range(11_000))
    too_large = await _from_patch(http, agent, diff=huge, outcome="success", task_id=task_id)
    assert too_large.status_code == 413 and "patch_max_bytes" in too_large.json()["detail"], too_large.text
    outcome = await _from_patch(http, agent, diff=GUARD, outcome="maybe", task_id=task_id)
    assert outcome.status_code == 422, outcome.text
    outsider = await _from_patch(http, team["outsider"], diff=GUARD, outcome="success", task_id=task_id)
    assert outsider.status_code == 404, outsider.text
    no_open = await _from_patch(http, agent, diff=GUARD, outcome="success")  # agents open no tasks
    assert no_open.status_code == 403, no_open.text
    assert await _entries(http, team["orchestrator"], task_id) == []
    plain = "--- a/README.md\n+++ b/README.md\n@@ -1 +1 @@\n-Hello\n+Hello, world\n"
    nothing = await _from_patch(http, agent, diff=plain, outcome="success", task_id=task_id)
    assert nothing.status_code == 200 and nothing.json()["proposals"] == [], nothing.text
    assert await _entries(http, team["orchestrator"], task_id) == []
