"""Erasure takes a task's working memory with it: hypotheses, files and symbols, through the real gateway."""

from __future__ import annotations

import uuid

import httpx

from tests.utils.factories import Actor


async def _task_with_working_memory(http: httpx.AsyncClient, team: dict[str, Actor], marker: str) -> str:
    o, agent = team["orchestrator"], team["agent"]
    body = {
        "org": o.principal.org,
        "project": o.principal.project,
        "worktree": "main",
        "description": "fix it",
    }
    task_id: str = (await http.post("/v1/tasks", headers=o.headers, json=body)).json()["task_id"]
    entry = {"kind": "error", "content": f"KeyError at src/{marker}/views.py:12"}
    appended = await http.post(
        f"/v1/tasks/{task_id}/entries", headers=agent.headers, json={"entries": [entry]}
    )
    assert appended.status_code == 201, appended.text
    kept = await http.post(
        f"/v1/tasks/{task_id}/working-memory",
        headers=agent.headers,
        json={
            "hypotheses": [{"text": f"the {marker} view reads a stale key", "confidence": 0.4}],
            "symbols": ["view"],
        },
    )
    assert kept.status_code == 200 and kept.json()["files"], kept.text
    return task_id


async def test_erasing_a_task_takes_its_working_memory(
    http: httpx.AsyncClient, team: dict[str, Actor]
) -> None:
    marker = f"m{uuid.uuid4().hex[:10]}"
    task_id = await _task_with_working_memory(http, team, marker)
    erased = await http.post("/v1/erasures", headers=team["human"].headers, json={"task": task_id})
    assert erased.status_code == 200, erased.text
    counts = erased.json()["counts"]
    assert counts["working_hypotheses"] == 1 and counts["task_code_locations"] == 2
    after = await http.get(f"/v1/tasks/{task_id}/working-memory", headers=team["human"].headers)
    assert after.status_code == 200, after.text
    memory = after.json()
    assert memory["hypotheses"] == [] and memory["files"] == [] and memory["symbols"] == []
    assert marker not in after.text


async def test_erasing_a_subject_takes_the_hypotheses_and_paths_holding_it(
    http: httpx.AsyncClient, team: dict[str, Actor]
) -> None:
    marker = f"m{uuid.uuid4().hex[:10]}"
    task_id = await _task_with_working_memory(http, team, marker)
    erased = await http.post(
        "/v1/erasures",
        headers=team["human"].headers,
        json={
            "subject": marker,
            "org": team["human"].principal.org,
            "project": team["human"].principal.project,
        },
    )
    assert erased.status_code == 200, erased.text
    after = await http.get(f"/v1/tasks/{task_id}/working-memory", headers=team["human"].headers)
    assert marker not in after.text
    assert [s["value"] for s in after.json()["symbols"]] == ["view"]  # what did not hold it stays
