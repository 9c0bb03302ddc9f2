"""A name that holds what looks like a secret is refused (422 naming the field, never its value), nothing
done: names are stored and shown as sent (governance/secret_names.py).

From outside: `worktree: "feature/rotate my password is …"` reached scope keys, other principals' events and
the promotion's Temporal history; a verification `branch: "fix/db-ghp_…"` reached the workflow's input.
"""

from __future__ import annotations

import uuid

import httpx

from tests.utils.factories import Actor
from tests.utils.promotion_gateway import open_task, stage, wait_promotion_state

TOKEN = "ghp_" + "yoByqAbCdEfGhIjKlMnOpQrStUvWxYz01234"


async def test_a_worktree_or_task_id_holding_a_secret_opens_no_task(
    http: httpx.AsyncClient, team: dict[str, Actor]
) -> None:
    principal = team["orchestrator"].principal
    for field, value in [
        ("worktree", "feature/rotate my password is Tr0ub4dor&3bcuw"),
        ("worktree", f"fix/db-{TOKEN}"),
        ("task_id", f"task-{TOKEN}"),
    ]:
        task_id = f"t-{uuid.uuid4().hex[:10]}"
        body = {
            "org": principal.org,
            "project": principal.project,
            "worktree": "main",
            "description": "d",
            "task_id": task_id,
            field: value,
        }
        opened = await http.post("/v1/tasks", headers=team["orchestrator"].headers, json=body)
        assert opened.status_code == 422, opened.text
        assert opened.json()["detail"].startswith(f"{field} holds what looks like a secret"), opened.text
        assert TOKEN not in opened.text and "Tr0ub4dor" not in opened.text
        shown = await http.get(f"/v1/tasks/{body['task_id']}", headers=team["orchestrator"].headers)
        assert shown.status_code == 404, shown.text


async def test_a_verification_branch_holding_a_secret_starts_and_verifies_nothing(
    http: httpx.AsyncClient, team: dict[str, Actor]
) -> None:
    task_id = await open_task(http, team["orchestrator"], "rotate the database credentials")
    await stage(http, team["agent"], task_id, [{"kind": "fact", "content": "The pool holds 20 connections."}])
    secret = {"source": "tests_passed", "success": True, "commit": "9f8e7d6c5b", "branch": f"fix/db-{TOKEN}"}
    started = await http.post(
        f"/v1/tasks/{task_id}/promotion",
        headers=team["orchestrator"].headers,
        json={"target_scope": "project", "verification": secret},
    )
    assert started.status_code == 422, started.text
    assert started.json()["detail"].startswith("verification.branch holds what looks like a secret")
    assert TOKEN not in started.text
    none = await http.get(f"/v1/promotions/{task_id}", headers=team["human"].headers)
    assert none.status_code == 404, none.text
    # started without evidence, then verified: the same refusal, and the promotion still waits for it
    started = await http.post(
        f"/v1/tasks/{task_id}/promotion",
        headers=team["orchestrator"].headers,
        json={"target_scope": "project"},
    )
    assert started.status_code == 202, started.text
    await wait_promotion_state(http, team["human"].headers, task_id, "awaiting_verification")
    verified = await http.post(
        f"/v1/promotions/{task_id}/verify", headers=team["orchestrator"].headers, json=secret
    )
    assert verified.status_code == 422 and TOKEN not in verified.text, verified.text
    status = await wait_promotion_state(http, team["human"].headers, task_id, "awaiting_verification")
    assert status["verification"] is None, status
    fine = {**secret, "branch": "fix/db-pool-size"}
    verified = await http.post(
        f"/v1/promotions/{task_id}/verify", headers=team["orchestrator"].headers, json=fine
    )
    assert verified.status_code == 200, verified.text
