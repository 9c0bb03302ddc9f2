"""The console's change requests, memory page links and audit trail, over real HTTP.

A real gateway wired to a Temporal dev server and a worker with the real activities (tests/api/conftest.py);
the console is driven as a browser drives it (form posts, cookies) by httpx. A change request is decided in
the console through the same service as `POST /v1/change-requests/{id}/approve`: an agent's key is refused,
a forged CSRF token is refused, a human approver's decision applies it.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.identity import key_id_of
from governance.scopes import Scope
from governance.storage.derivations import record_derivations
from governance.storage.identity import revoke_key
from tests.api.test_console import csrf_of, sign_in
from tests.utils.factories import Actor
from tests.utils.lifecycle_factories import Place, insert_memory

OLD = "db.driver: psycopg 3 with the async API"
NEW = "db.driver: asyncpg with its own pool"


@pytest.fixture
async def console(gateway: str, worker: None) -> AsyncIterator[httpx.AsyncClient]:
    """A cookie-keeping client of the gateway, like one browser."""
    async with httpx.AsyncClient(base_url=gateway, timeout=90) as client:
        yield client


def _place(actor: Actor) -> Place:
    project = actor.principal.project or ""
    return Place(org=actor.principal.org, project=project, worktree="main", task_id=f"task-{project}")


async def _fact(engine: AsyncEngine, actor: Actor, content: str = OLD, **columns: Any) -> str:
    """A human-approved project fact, as an approved promotion leaves it."""
    place = _place(actor)
    async with engine.begin() as conn:
        return await insert_memory(
            conn,
            place,
            memory_type="fact",
            content=content,
            **{
                "canonical_key": "db.driver",
                "confidence": 1.0,
                "validation_source": "human_approved",
                "scope": Scope.PROJECT.value,
                "scope_key": place.key(Scope.PROJECT),
                **columns,
            },
        )


async def _change_request(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> dict[str, Any]:
    """An orchestrator's supersede of a project fact: a change request awaiting approval."""
    memory_id = await _fact(engine, team["human"])
    proposed = await http.post(
        f"/v1/memories/{memory_id}/supersede",
        headers=team["orchestrator"].headers,
        json={"content": NEW, "reason": "asyncpg is faster for us"},
    )
    assert proposed.status_code == 202, proposed.text
    request: dict[str, Any] = proposed.json()
    assert request["state"] == "awaiting_approval" and request["workflow_id"]
    return request


async def _state(http: httpx.AsyncClient, actor: Actor, request_id: str) -> dict[str, Any]:
    shown = await http.get(f"/v1/change-requests/{request_id}", headers=actor.headers)
    assert shown.status_code == 200, shown.text
    answer: dict[str, Any] = shown.json()
    return answer


async def test_console_change_request_shows_old_new_diff_and_the_workflow(
    console: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    request = await _change_request(console, team, engine)
    await sign_in(console, team["human"])
    pending = await console.get("/console/promotions")
    assert pending.status_code == 200 and f"/console/changes/{request['id']}" in pending.text
    page = await console.get(f"/console/changes/{request['id']}")
    assert page.status_code == 200, page.text
    html = page.text
    diff = (
        "db.driver: <del>psycopg 3</del><ins>asyncpg</ins> with "
        "<del>the async API</del><ins>its own pool</ins>"
    )
    assert diff in html
    assert f"<pre>{OLD}</pre>" in html and f"<pre>{NEW}</pre>" in html
    assert f"/workflows/{request['workflow_id']}" in html and "in the Temporal UI" in html
    assert "asyncpg is faster for us" in html and "Approve the supersede" in html


async def test_console_agent_cannot_approve_a_change_request_and_nothing_changes(
    console: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    request = await _change_request(console, team, engine)
    await sign_in(console, team["agent"])
    page = await console.get(f"/console/changes/{request['id']}")
    assert page.status_code == 200
    refused = await console.post(
        f"/console/changes/{request['id']}/approve", data={"csrf_token": csrf_of(page.text), "note": "mine"}
    )
    assert refused.status_code == 403 and "may not approve" in refused.text
    after = await _state(console, team["human"], request["id"])
    assert after["state"] == "awaiting_approval" and after["decided_by"] is None
    assert after["old"]["active"] is True


@pytest.mark.parametrize(
    "form, headers",
    [({"csrf_token": "forged"}, {}), ({}, {}), (None, {"Origin": "http://evil.example"})],
    ids=["forged-token", "missing-token", "other-origin"],
)
async def test_console_change_approval_without_a_valid_csrf_token_is_refused(
    console: httpx.AsyncClient,
    team: dict[str, Actor],
    engine: AsyncEngine,
    form: dict[str, str] | None,
    headers: dict[str, str],
) -> None:
    request = await _change_request(console, team, engine)
    await sign_in(console, team["human"])
    page = await console.get(f"/console/changes/{request['id']}")
    data: dict[str, Any] = {"csrf_token": csrf_of(page.text)} if form is None else form
    refused = await console.post(f"/console/changes/{request['id']}/approve", data=data, headers=headers)
    assert refused.status_code == 403
    after = await _state(console, team["human"], request["id"])
    assert after["state"] == "awaiting_approval" and after["decided_by"] is None


async def test_console_human_approves_a_change_request_and_it_applies(
    console: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    request = await _change_request(console, team, engine)
    await sign_in(console, team["human"])
    page = await console.get(f"/console/changes/{request['id']}")
    approved = await console.post(
        f"/console/changes/{request['id']}/approve",
        data={"csrf_token": csrf_of(page.text), "note": "from the console"},
        follow_redirects=True,
    )
    assert approved.status_code == 200 and "Your approval was accepted." in approved.text
    for _ in range(100):
        after = await _state(console, team["human"], request["id"])
        if after["state"] == "applied":
            break
        await asyncio.sleep(0.2)
    assert (after["state"], after["decided_by"]) == ("applied", team["human"].principal.id)
    assert after["decision_note"] == "from the console" and after["result_memory_id"]
    head = await console.get(f"/console/memories/{after['result_memory_id']}")
    assert head.status_code == 200 and NEW in head.text and "v1: " in head.text and "v2: " in head.text


async def test_console_change_request_of_another_tenant_is_a_404(
    console: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    request = await _change_request(console, team, engine)
    await sign_in(console, team["outsider"])
    page = await console.get(f"/console/changes/{request['id']}")
    assert page.status_code == 404 and OLD not in page.text and NEW not in page.text
    refused = await console.post(
        f"/console/changes/{request['id']}/approve", data={"csrf_token": csrf_of(page.text)}
    )
    assert refused.status_code == 404
    pending = await console.get("/console/promotions")
    assert request["id"] not in pending.text
    assert (await _state(console, team["human"], request["id"]))["state"] == "awaiting_approval"


async def test_console_memory_page_shows_derivations_trust_history_and_the_stale_flag(
    console: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    human = team["human"]
    source = await _fact(engine, human, "deploys run from main at noon", canonical_key="deploy.time")
    place = _place(human)
    async with engine.begin() as conn:
        derived = await insert_memory(
            conn, place, memory_type="skill", content="How to deploy: merge to main before noon"
        )
        await record_derivations(conn, [(derived, source)], task_id=None)
    boosted = await console.post(
        f"/v1/memories/{derived}/validate", headers=human.headers, json={"source": "tests_passed"}
    )
    assert boosted.status_code == 200, boosted.text
    superseded = await console.post(  # a human approver's supersede applies at once: the skill goes stale
        f"/v1/memories/{source}/supersede",
        headers=human.headers,
        json={"content": "deploys run from main at three", "reason": "moved"},
    )
    assert superseded.status_code in (200, 201), superseded.text

    await sign_in(console, human)
    page = await console.get(f"/console/memories/{derived}")
    assert page.status_code == 200, page.text
    html = page.text
    assert re.search(r'<strong class="stale">stale</strong> since', html)
    assert "Derived from" in html and f'href="/console/memories/{source}"' in html
    trust = html[html.index('id="trust"') : html.index('id="provenance"')]
    assert "BOOSTED" in trust and "validated: tests_passed" in trust and "0.80" in trust
    source_page = await console.get(f"/console/memories/{source}")
    derived_part = source_page.text[source_page.text.index("Derived from it") :]
    assert f'href="/console/memories/{derived}"' in derived_part.split("</section>")[0]


async def test_console_audit_trail_filters_by_type_and_actor_and_pages(
    console: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    human = team["human"]
    ids = [await _fact(engine, human, f"fact number {n} for the audit", canonical_key=None) for n in range(3)]
    for memory_id in ids:
        done = await console.post(
            f"/v1/memories/{memory_id}/feedback", headers=human.headers, json={"helpful": True}
        )
        assert done.status_code == 200, done.text
    await sign_in(console, human)
    first = await console.get(
        "/console/events", params={"type": "FEEDBACK", "actor": human.principal.id, "limit": 2}
    )
    assert first.status_code == 200, first.text
    assert first.text.count("<td>FEEDBACK</td>") == 2 and "Older events" in first.text
    following = re.search(r'href="(\?[^"]*cursor=[0-9]+[^"]*)" rel="next"', first.text)
    assert following is not None
    second = await console.get("/console/events" + following.group(1).replace("&amp;", "&"))
    assert second.text.count("<td>FEEDBACK</td>") == 1 and 'rel="next"' not in second.text
    shown = {m for page in (first.text, second.text) for m in ids if m in page}
    assert shown == set(ids)

    # the time window (a datetime-local field's value, read as UTC)
    now = datetime.now(UTC).replace(tzinfo=None)
    window = {"type": "FEEDBACK", "actor": human.principal.id}
    inside = await console.get(
        "/console/events",
        params={**window, "since": (now - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M")},
    )
    assert inside.text.count("<td>FEEDBACK</td>") == 3
    for bounds in (
        {"since": (now + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M")},
        {"until": (now - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M")},
    ):
        outside = await console.get("/console/events", params={**window, **bounds})
        assert outside.status_code == 200 and "No events match." in outside.text, bounds

    other = await console.get("/console/events", params={"type": "FEEDBACK", "actor": "nobody"})
    assert other.status_code == 200 and "No events match." in other.text
    for bad in ({"type": "NOPE"}, {"since": "yesterday"}, {"cursor": "abc"}, {"limit": "0"}):
        refused = await console.get("/console/events", params=bad)
        assert refused.status_code == 422, (bad, refused.status_code)

    await sign_in(console, team["outsider"])
    theirs = await console.get("/console/events", params={"type": "FEEDBACK"})
    assert theirs.status_code == 200 and not any(m in theirs.text for m in ids)


async def test_console_revoked_key_ends_the_session_before_a_change_is_decided(
    console: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    request = await _change_request(console, team, engine)
    await sign_in(console, team["human"])
    page = await console.get(f"/console/changes/{request['id']}")
    async with engine.begin() as conn:
        assert await revoke_key(conn, key_id_of(team["human"].key) or "")
    refused = await console.post(
        f"/console/changes/{request['id']}/approve", data={"csrf_token": csrf_of(page.text)}
    )
    assert refused.status_code == 401
    for path in (f"/console/changes/{request['id']}", "/console/events"):
        again = await console.get(path, follow_redirects=False)
        assert again.status_code == 303 and again.headers["location"] == "/console/signin"
    after = await _state(console, team["orchestrator"], request["id"])
    assert after["state"] == "awaiting_approval" and after["decided_by"] is None


async def test_console_change_page_refuses_bad_ids_and_unknown_requests(
    console: httpx.AsyncClient, team: dict[str, Actor]
) -> None:
    signed_in = await sign_in(console, team["human"])
    for bad in ("not-a-hex-id!", "x" * 65):
        refused = await console.get(f"/console/changes/{bad}")
        assert refused.status_code == 422, bad
    unknown = await console.get(f"/console/changes/{'0' * 8}-0000-0000-0000-{'0' * 12}")
    assert unknown.status_code == 404
    posted = await console.post(
        f"/console/changes/{'0' * 8}-0000-0000-0000-{'0' * 12}/approve",
        data={"csrf_token": csrf_of(signed_in.text), "note": "n" * 4001},
    )
    assert posted.status_code in (404, 422)


async def test_console_lift_request_lists_its_memories_and_applies_on_approval(
    console: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    place = _place(team["human"])
    async with engine.begin() as conn:
        memory_id = await insert_memory(
            conn,
            place,
            memory_type="fact",
            content="lint.config: ruff with the project's pyproject",
            **{
                "confidence": 0.6,
                "validation_source": "tests_passed",
                "scope": Scope.WORKTREE.value,
                "scope_key": place.key(Scope.WORKTREE),
            },
        )
    lifted = await console.post(
        "/v1/memories/lift",
        headers=team["orchestrator"].headers,
        json={"memory_ids": [memory_id], "target_scope": {"scope": "project"}, "reason": "every worktree"},
    )
    assert lifted.status_code == 202, lifted.text
    request = lifted.json()
    await sign_in(console, team["human"])
    page = await console.get(f"/console/changes/{request['id']}")
    assert page.status_code == 200, page.text
    assert f"lift to project scope: <code>{place.key(Scope.PROJECT)}</code>" in page.text
    assert f"/console/memories/{memory_id}" in page.text and "not applied yet" in page.text
    decided = await console.post(
        f"/console/changes/{request['id']}/approve", data={"csrf_token": csrf_of(page.text), "note": "yes"}
    )
    assert decided.status_code in (200, 303), decided.text
    for _ in range(100):
        state = await _state(console, team["human"], request["id"])
        if state["state"] == "applied":
            break
        await asyncio.sleep(0.2)
    assert state["state"] == "applied" and state["items"][0]["outcome"] == "lifted"
    after = await console.get(f"/console/changes/{request['id']}")
    assert f"mem:{state['items'][0]['result_citation']}" in after.text
