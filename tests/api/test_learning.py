"""Memory that learns, through the real gateway, the Temporal dev server and a worker.

Two tasks meet the same error under different messages (line numbers, paths, names) and promote into one
bug pattern that counts both occurrences and the fix's successes; a third variant matches it; another
tenant matches nothing.
"""

from __future__ import annotations

from typing import Any

import httpx

from tests.utils.factories import Actor
from tests.utils.promotion_gateway import wait_promotion_state

FIX = "Guard the lookup with dict.get and a default"


def _error(name: str, path: str, line: int) -> str:
    return (
        f'Traceback (most recent call last):\n  File "{path}", line {line}, in load\n'
        f"    return cache[key]\nKeyError: '{name}'"
    )


async def _open_task(http: httpx.AsyncClient, team: dict[str, Actor], description: str) -> str:
    orchestrator = team["orchestrator"]
    opened = await http.post(
        "/v1/tasks",
        headers=orchestrator.headers,
        json={
            "org": orchestrator.principal.org,
            "project": orchestrator.principal.project,
            "worktree": "main",
            "description": description,
        },
    )
    assert opened.status_code == 201, opened.text
    task_id: str = opened.json()["task_id"]
    return task_id


async def _task_meeting(http: httpx.AsyncClient, team: dict[str, Actor], error: str) -> dict[str, Any]:
    task_id = await _open_task(http, team, "load the user cache")
    entries = [{"kind": "error", "content": error}, {"kind": "result", "content": FIX}]
    appended = await http.post(
        f"/v1/tasks/{task_id}/entries", headers=team["agent"].headers, json={"entries": entries}
    )
    assert appended.status_code == 201, appended.text
    started = await http.post(
        f"/v1/tasks/{task_id}/promotion",
        headers=team["orchestrator"].headers,
        json={"target_scope": "worktree", "verification": {"source": "tests_passed", "success": True}},
    )
    assert started.status_code == 202, started.text
    done = await wait_promotion_state(http, team["human"].headers, task_id, "published")
    return {"task_id": task_id, "published": done["published"]}


async def _match(http: httpx.AsyncClient, actor: Actor, task_id: str, error: str) -> httpx.Response:
    return await http.post(
        "/v1/bug-patterns/match", headers=actor.headers, json={"task_id": task_id, "error": error}
    )


async def test_bug_patterns_same_error_varied_messages_merge_and_match(
    http: httpx.AsyncClient, team: dict[str, Actor]
) -> None:
    first = await _task_meeting(http, team, _error("user_42", "/app/src/cache.py", 42))
    second = await _task_meeting(http, team, _error("order_9", "/home/ci/build/7/cache.py", 108))
    [bug1] = [p for p in first["published"] if p["memory_type"] == "bug_pattern"]
    [bug2] = [p for p in second["published"] if p["memory_type"] == "bug_pattern"]
    assert bug1["memory_id"] == bug2["memory_id"], (bug1, bug2)

    reader = await _open_task(http, team, "a third task meets it again")
    third = _error("session_x1", "/srv/worker/cache.py", 3)
    answer = await _match(http, team["agent"], reader, third)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["error_type"] == "KeyError"
    top = body["patterns"][0]
    assert top["id"] == bug1["memory_id"] and top["same_signature"] is True
    assert top["occurrences"] == 2
    assert top["solutions"] == [{"solution": FIX, "successes": 2, "attempts": 2, "success_rate": 1.0}]

    outsider_task = await http.post(
        "/v1/tasks",
        headers=team["outsider"].headers,
        json={
            "org": team["outsider"].principal.org,
            "project": team["outsider"].principal.project,
            "worktree": "main",
            "description": "another tenant",
        },
    )
    assert outsider_task.status_code == 201, outsider_task.text
    elsewhere = await _match(http, team["outsider"], outsider_task.json()["task_id"], third)
    assert elsewhere.status_code == 200, elsewhere.text
    assert elsewhere.json()["patterns"] == []
    # the reader's task of another tenant is not theirs to read: no answer about it
    foreign = await _match(http, team["outsider"], reader, third)
    assert foreign.status_code in (403, 404)


async def test_bug_patterns_match_bad_input_is_422(http: httpx.AsyncClient, team: dict[str, Actor]) -> None:
    task_id = await _open_task(http, team, "bad input")
    for body in ({"task_id": task_id}, {"task_id": task_id, "error": ""}, {"error": "KeyError: 'x'"}):
        answer = await http.post("/v1/bug-patterns/match", headers=team["agent"].headers, json=body)
        assert answer.status_code == 422, (body, answer.text)
