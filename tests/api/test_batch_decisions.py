"""Batch decisions (`POST /v1/decisions` and the console's pending page): several promotions and change
requests decided in one action, each checked on its own, one refusal never stopping the others.

A real gateway wired to a Temporal dev server and a worker with the real activities (tests/api/conftest.py).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from api.schemas.decisions import MAX_BATCH_DECISIONS
from tests.api.test_console import csrf_of, sign_in
from tests.api.test_console_review import _change_request, _state
from tests.api.test_promotions_api import ENTRIES
from tests.utils.factories import Actor
from tests.utils.promotion_gateway import awaiting_approval, wait_promotion_state

UNKNOWN_REQUEST = "00000000-0000-4000-8000-000000000000"


@pytest.fixture
async def console(gateway: str, worker: None) -> AsyncIterator[httpx.AsyncClient]:
    """A cookie-keeping client of the gateway, like one browser."""
    async with httpx.AsyncClient(base_url=gateway, timeout=90) as client:
        yield client


async def _promotion_state(http: httpx.AsyncClient, actor: Actor, task_id: str) -> str:
    answer = await http.get(f"/v1/promotions/{task_id}", headers=actor.headers)
    assert answer.status_code == 200, answer.text
    state: str = answer.json()["state"]
    return state


async def test_batch_decides_each_item_and_reports_each_refusal(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    human = team["human"]
    waiting, _ = await awaiting_approval(http, team, ENTRIES)
    decided, _ = await awaiting_approval(http, team, ENTRIES)
    rejected = await http.post(f"/v1/promotions/{decided}/reject", headers=human.headers, json={"note": "no"})
    assert rejected.status_code == 200, rejected.text
    request = await _change_request(http, team, engine)

    answer = await http.post(
        "/v1/decisions",
        headers=human.headers,
        json={
            "decision": "approve",
            "note": "all reviewed",
            "promotions": [decided, "no-such-task", waiting],
            "change_requests": [UNKNOWN_REQUEST, request["id"]],
        },
    )
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert (body["decision"], body["approver"]) == ("approve", human.principal.id)
    assert (body["accepted"], body["refused"]) == (2, 3)
    outcomes = [(i["kind"], i["id"], i["accepted"], i["error"]) for i in body["items"]]
    assert outcomes == [
        ("promotion", decided, False, "conflict"),  # decided before: refused, as its single approval is
        ("promotion", "no-such-task", False, "not_found"),
        ("promotion", waiting, True, None),
        ("change_request", UNKNOWN_REQUEST, False, "not_found"),
        ("change_request", request["id"], True, None),
    ]
    assert all(i["detail"] for i in body["items"] if not i["accepted"])
    # the refusals stopped nothing: the pending promotion publishes, the change applies
    await wait_promotion_state(http, human.headers, waiting, "published")
    assert await _promotion_state(http, human, decided) == "rejected"
    after = await _state(http, human, request["id"])
    assert after["state"] == "applied" and after["decided_by"] == human.principal.id


async def test_batch_by_an_agent_refuses_every_item_and_decides_nothing(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    waiting, _ = await awaiting_approval(http, team, ENTRIES)
    request = await _change_request(http, team, engine)
    answer = await http.post(
        "/v1/decisions",
        headers=team["agent"].headers,
        json={"decision": "approve", "promotions": [waiting], "change_requests": [request["id"]]},
    )
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert (body["accepted"], body["refused"]) == (0, 2)
    assert [i["error"] for i in body["items"]] == ["forbidden", "forbidden"]
    assert await _promotion_state(http, team["human"], waiting) == "awaiting_approval"
    assert (await _state(http, team["human"], request["id"]))["state"] == "awaiting_approval"


async def test_batch_of_another_tenant_finds_nothing(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    waiting, _ = await awaiting_approval(http, team, ENTRIES)
    answer = await http.post(
        "/v1/decisions",
        headers=team["outsider"].headers,
        json={"decision": "reject", "promotions": [waiting]},
    )
    assert answer.status_code == 200, answer.text
    assert [i["error"] for i in answer.json()["items"]] == ["not_found"]
    assert await _promotion_state(http, team["human"], waiting) == "awaiting_approval"


@pytest.mark.parametrize(
    "body, says",
    [
        ({"decision": "approve"}, "at least one"),
        ({"decision": "approve", "promotions": ["t1", "t1"]}, "twice"),
        ({"decision": "approve", "promotions": [f"t{i}" for i in range(MAX_BATCH_DECISIONS + 1)]}, "at most"),
        ({"decision": "approve", "promotions": ["../etc"]}, "promotions"),
        ({"decision": "approve", "change_requests": ["not-hex!"]}, "change_requests"),
        ({"decision": "publish", "promotions": ["t1"]}, "decision"),
        ({"decision": "approve", "promotions": ["t1"], "approver": "someone"}, "approver"),
    ],
    ids=["empty", "duplicate", "too-many", "bad-task-id", "bad-request-id", "bad-decision", "approver-field"],
)
async def test_batch_invalid_body_is_unprocessable(
    http: httpx.AsyncClient, team: dict[str, Actor], body: dict[str, Any], says: str
) -> None:
    answer = await http.post("/v1/decisions", headers=team["human"].headers, json=body)
    assert answer.status_code == 422, answer.text
    assert answer.json()["error"] == "validation_error" and says in answer.json()["detail"]


async def test_console_rejects_the_selected_items_and_lists_each_outcome(
    console: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    human = team["human"]
    first, _ = await awaiting_approval(console, team, ENTRIES)
    second, _ = await awaiting_approval(console, team, ENTRIES)
    request = await _change_request(console, team, engine)
    await sign_in(console, human)
    pending = await console.get("/console/promotions")
    assert pending.status_code == 200
    html = pending.text
    for name, value in (("promotion", first), ("promotion", second), ("change", request["id"])):
        assert re.search(rf'<input type="checkbox" name="{name}" value="{re.escape(value)}"', html), value
    assert 'action="/console/decisions"' in html and "Reject the selected" in html

    # the second is left unselected; a stale selection (already rejected elsewhere) is refused on its own
    rejected = await console.post(f"/v1/promotions/{first}/reject", headers=human.headers, json={})
    assert rejected.status_code == 200, rejected.text
    form = {
        "csrf_token": csrf_of(html),
        "decision": "reject",
        "note": "not this sprint",
        "promotion": [first],
        "change": [request["id"]],
    }
    answer = await console.post("/console/decisions", data=form)
    assert answer.status_code == 200, answer.text
    page = answer.text
    assert "Rejected: 1 decided, 1 refused" in page
    assert f"promotion of {first}" in page and "<code>conflict</code>" in page
    assert f"change {request['id'][:8]}" in page
    assert (await _state(console, human, request["id"]))["state"] == "rejected"
    assert await _promotion_state(console, human, second) == "awaiting_approval"


async def test_console_batch_as_an_agent_lists_every_refusal(
    console: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    request = await _change_request(console, team, engine)
    await sign_in(console, team["agent"])
    pending = await console.get("/console/promotions")
    form = {"csrf_token": csrf_of(pending.text), "decision": "approve", "change": [request["id"]]}
    answer = await console.post("/console/decisions", data=form)
    assert answer.status_code == 200, answer.text
    assert "Approved: 0 decided, 1 refused" in answer.text and "<code>forbidden</code>" in answer.text
    assert (await _state(console, team["human"], request["id"]))["state"] == "awaiting_approval"


@pytest.mark.parametrize(
    "form, status",
    [
        ({"csrf_token": "forged", "decision": "approve"}, 403),
        ({"decision": "approve"}, 403),
        ({"decision": "approve", "promotion": []}, 422),
    ],
    ids=["forged-token", "missing-token", "nothing-selected"],
)
async def test_console_batch_refused_as_a_whole_decides_nothing(
    console: httpx.AsyncClient,
    team: dict[str, Actor],
    engine: AsyncEngine,
    form: dict[str, Any],
    status: int,
) -> None:
    request = await _change_request(console, team, engine)
    await sign_in(console, team["human"])
    pending = await console.get("/console/promotions")
    data = (
        {"change": [request["id"]], **form}
        if status == 403
        else {"csrf_token": csrf_of(pending.text), **form}
    )
    refused = await console.post("/console/decisions", data=data)
    assert refused.status_code == status, refused.text
    assert (await _state(console, team["human"], request["id"]))["state"] == "awaiting_approval"
