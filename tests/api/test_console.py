"""The console's refusals and its session, over real HTTP (api/http/console, api/services/sessions.py).

A real gateway wired to a Temporal dev server and a worker with the real activities (tests/api/conftest.py);
the console is driven as a browser would drive it, with form posts and cookies, by httpx.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import httpx
import numpy as np
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.scopes import Scope
from tests.utils.factories import Actor
from tests.utils.memory_factories import add_entries, add_memory, new_task
from tests.utils.promotion_factories import active_memories
from tests.utils.promotion_gateway import awaiting_approval, wait_promotion_state

ENTRIES = [
    {
        "kind": "decision",
        "content": "db.driver: psycopg 3 with the async API",
        "payload": {"key": "db.driver"},
    },
    {"kind": "fact", "content": "The CI runners have two CPU cores and 7 GB of memory."},
]
_CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


def csrf_of(page: str) -> str:
    """The CSRF token of the first form on a console page."""
    found = _CSRF.search(page)
    assert found is not None, page
    return found.group(1)


async def sign_in(http: httpx.AsyncClient, actor: Actor) -> httpx.Response:
    """What a browser does: load the form, post the key with the form's token; the answer after redirects."""
    form = await http.get("/console/signin")
    assert form.status_code == 200, form.text
    return await http.post(
        "/console/signin",
        data={"api_key": actor.key, "csrf_token": csrf_of(form.text)},
        follow_redirects=True,
    )


@pytest.fixture
async def console(gateway: str, worker: None) -> AsyncIterator[httpx.AsyncClient]:
    """A cookie-keeping client of the gateway, like one browser."""
    async with httpx.AsyncClient(base_url=gateway, timeout=90) as client:
        yield client


async def _pending(http: httpx.AsyncClient, team: dict[str, Actor]) -> str:
    """A task of the team, promoted into project scope and awaiting approval."""
    task_id, _ = await awaiting_approval(http, team, ENTRIES)
    return task_id


async def test_console_signin_sets_an_httponly_samesite_strict_cookie_and_never_shows_the_key(
    console: httpx.AsyncClient, team: dict[str, Actor]
) -> None:
    human = team["human"]
    answer = await sign_in(console, human)
    assert answer.status_code == 200 and "Signed in as" in answer.text
    set_cookie = answer.history[0].headers["set-cookie"].lower()
    assert "loregate_console=" in set_cookie
    assert "httponly" in set_cookie and "samesite=strict" in set_cookie and "path=/console" in set_cookie
    for response in [*answer.history, answer]:
        assert human.key not in str(response.url) and human.key not in response.headers.get("location", "")
        assert human.key not in response.text
    assert human.key not in console.cookies.get("loregate_console", "")


async def test_console_signin_with_an_unknown_key_is_refused(
    console: httpx.AsyncClient, team: dict[str, Actor]
) -> None:
    forged = Actor(team["human"].principal, team["human"].key[:-4] + "xxxx")
    answer = await sign_in(console, forged)
    assert answer.status_code == 401 and "unknown or revoked API key" in answer.text
    assert "loregate_console" not in console.cookies
    pages = await console.get("/console/promotions", follow_redirects=False)
    assert pages.status_code == 303 and pages.headers["location"] == "/console/signin"


async def test_console_signin_without_the_forms_token_is_refused(
    console: httpx.AsyncClient, team: dict[str, Actor]
) -> None:
    await console.get("/console/signin")
    answer = await console.post("/console/signin", data={"api_key": team["human"].key, "csrf_token": "x"})
    assert answer.status_code == 403
    assert "loregate_console" not in console.cookies


async def test_console_agent_cannot_approve_and_nothing_is_published(
    console: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    task_id = await _pending(console, team)
    await sign_in(console, team["agent"])
    page = await console.get(f"/console/promotions/{task_id}")
    assert page.status_code == 200 and "awaiting_approval" in page.text
    refused = await console.post(
        f"/console/promotions/{task_id}/approve", data={"csrf_token": csrf_of(page.text), "note": "mine"}
    )
    assert refused.status_code == 403 and "forbidden" in refused.text
    status = await console.get(f"/v1/promotions/{task_id}", headers=team["human"].headers)
    assert status.json()["state"] == "awaiting_approval" and status.json()["decided_by"] is None
    assert await active_memories(engine, task_id=task_id) == []


@pytest.mark.parametrize(
    "form, headers",
    [
        ({"csrf_token": "forged"}, {}),
        ({}, {}),
        (None, {"Origin": "http://evil.example"}),  # the right token, from another origin
    ],
    ids=["forged-token", "missing-token", "other-origin"],
)
async def test_console_approve_without_a_valid_csrf_token_is_refused_and_changes_nothing(
    console: httpx.AsyncClient,
    team: dict[str, Actor],
    engine: AsyncEngine,
    form: dict[str, str] | None,
    headers: dict[str, str],
) -> None:
    task_id = await _pending(console, team)
    await sign_in(console, team["human"])
    page = await console.get(f"/console/promotions/{task_id}")
    data: dict[str, Any] = {"csrf_token": csrf_of(page.text)} if form is None else form
    refused = await console.post(f"/console/promotions/{task_id}/approve", data=data, headers=headers)
    assert refused.status_code == 403
    status = await console.get(f"/v1/promotions/{task_id}", headers=team["human"].headers)
    assert status.json()["state"] == "awaiting_approval" and status.json()["decided_by"] is None
    assert await active_memories(engine, task_id=task_id) == []


async def test_console_human_approves_and_the_promotion_publishes(
    console: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    task_id = await _pending(console, team)
    await sign_in(console, team["human"])
    pending = await console.get("/console/promotions")
    assert task_id in pending.text
    page = await console.get(f"/console/promotions/{task_id}")
    approved = await console.post(
        f"/console/promotions/{task_id}/approve",
        data={"csrf_token": csrf_of(page.text), "note": "from the console"},
        follow_redirects=True,
    )
    assert approved.status_code == 200 and "Your approval was accepted." in approved.text
    done = await wait_promotion_state(console, team["human"].headers, task_id, "published")
    assert (done["decided_by"], done["decision_note"]) == (team["human"].principal.id, "from the console")
    assert await active_memories(engine, task_id=task_id)


async def test_console_signout_ends_the_session(console: httpx.AsyncClient, team: dict[str, Actor]) -> None:
    signed_in = await sign_in(console, team["human"])
    token = console.cookies["loregate_console"]
    out = await console.post("/console/signout", data={"csrf_token": csrf_of(signed_in.text)})
    assert out.status_code == 303 and out.headers["location"] == "/console/signin"
    console.cookies.set("loregate_console", token, path="/console")  # a copy of the old cookie
    again = await console.get("/console/promotions", follow_redirects=False)
    assert again.status_code == 303 and again.headers["location"] == "/console/signin"


async def test_console_reader_of_another_project_sees_404_for_its_memory_and_task(
    console: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    mine = team["human"].principal
    async with engine.begin() as conn:
        task = await new_task(conn, org=mine.org, project=mine.project)
        entry_ids = await add_entries(conn, task, ["a private decision"])
        memory = await add_memory(
            conn,
            task,
            title="private to the tenant",
            content="only its readers see this",
            embedding=np.ones(384, dtype=np.float32) / np.sqrt(384),
            source_entry_ids=entry_ids,
        )
    await sign_in(console, team["human"])
    own = await console.get(f"/console/memories/{memory['id']}")
    assert own.status_code == 200 and "only its readers see this" in own.text

    console.cookies.clear()
    await sign_in(console, team["outsider"])
    for path in (
        f"/console/memories/{memory['id']}",
        f"/console/memories/{memory['citation']}",
        f"/console/tasks/{task.task_id}",
        f"/console/memories?scope_key=project:{mine.org}/{mine.project}",
        f"/console/memories?scope_key=task:{task.task_id}",
    ):
        refused = await console.get(path)
        assert refused.status_code == 404, path
        assert "only its readers see this" not in refused.text and "a private decision" not in refused.text


async def test_console_memory_browser_filters_by_state_and_trust(
    console: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    mine = team["human"].principal
    vector = np.ones(384, dtype=np.float32) / np.sqrt(384)
    async with engine.begin() as conn:
        task = await new_task(conn, org=mine.org, project=mine.project)
        old = await add_memory(
            conn,
            task,
            title="old driver",
            content="psycopg2",
            embedding=vector,
            deprecated_at=datetime.now(UTC),
        )
        await add_memory(
            conn,
            task,
            title="new driver",
            content="psycopg 3",
            embedding=vector,
            confidence=0.9,
            supersedes_id=old["id"],
        )
    await sign_in(console, team["human"])
    scope = task.key(Scope.PROJECT)
    active = await console.get("/console/memories", params={"scope_key": scope, "state": "active"})
    assert "new driver" in active.text and "old driver" not in active.text
    superseded = await console.get("/console/memories", params={"scope_key": scope, "state": "superseded"})
    assert "old driver" in superseded.text and "new driver" not in superseded.text
    trusted = await console.get("/console/memories", params={"scope_key": scope, "min_trust": "0.8"})
    assert "new driver" in trusted.text and "old driver" not in trusted.text
    text = await console.get("/console/memories", params={"scope_key": scope, "q": "PSYCOPG2"})
    assert "old driver" in text.text and "new driver" not in text.text
