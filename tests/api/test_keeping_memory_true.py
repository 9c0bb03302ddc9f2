"""Keeping memory true, end to end: real HTTP, a Temporal dev server, a worker with the real activities.

Derived memories go stale when their source is superseded (and a human confirms them), verification commits
become validity, staging expiries reach published memory and the nightly expiry, and the audit trail reads.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from activities.retention import RetentionActivities, RetentionStepInput
from governance.scopes import ActorType
from tests.utils.factories import Actor, make_actor, new_tenant
from tests.utils.promotion_factories import active_memories
from tests.utils.promotion_gateway import wait_promotion_state

FIRST = [
    {
        "kind": "decision",
        "content": "db.driver: psycopg 3 with the async API",
        "payload": {"key": "db.driver"},
    },
    {"kind": "error", "content": "ImportError: no module named psycopg2"},
    {
        "kind": "result",
        "content": "Switched the import to psycopg; all tests pass.",
        "payload": {"repeatable": True},
    },
]
SECOND = [{"kind": "decision", "content": "db.driver: asyncpg for the pool", "payload": {"key": "db.driver"}}]


async def _promoted(
    http: httpx.AsyncClient,
    team: dict[str, Actor],
    entries: list[dict[str, Any]],
    *,
    commit: str | None = None,
    worktree: str = "main",
) -> str:
    """A task of `entries`, promoted into its worktree with tests_passed (at `commit`), published."""
    orchestrator = team["orchestrator"]
    opened = await http.post(
        "/v1/tasks",
        headers=orchestrator.headers,
        json={
            "org": orchestrator.principal.org,
            "project": orchestrator.principal.project,
            "worktree": worktree,
            "description": "pick the async db driver",
        },
    )
    assert opened.status_code == 201, opened.text
    task_id: str = opened.json()["task_id"]
    appended = await http.post(
        f"/v1/tasks/{task_id}/entries", headers=team["agent"].headers, json={"entries": entries}
    )
    assert appended.status_code == 201, appended.text
    verification: dict[str, Any] = {"source": "tests_passed", "success": True}
    if commit is not None:
        verification["commit"] = commit
    started = await http.post(
        f"/v1/tasks/{task_id}/promotion",
        headers=orchestrator.headers,
        json={"target_scope": "worktree", "verification": verification},
    )
    assert started.status_code == 202, started.text
    await wait_promotion_state(http, orchestrator.headers, task_id, "published")
    return task_id


async def _memory(http: httpx.AsyncClient, actor: Actor, ref: str) -> dict[str, Any]:
    shown = await http.get(f"/v1/memories/{ref}", headers=actor.headers)
    assert shown.status_code == 200, shown.text
    memory: dict[str, Any] = shown.json()["memory"]
    return memory


async def test_superseded_fact_makes_skill_stale_until_a_human_confirms(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    first = await _promoted(http, team, FIRST, commit="1a2b3c4d")
    by_type = {m.memory_type: m for m in await active_memories(engine, task_id=first)}
    fact, skill, bug = by_type["fact"], by_type["skill"], by_type["bug_pattern"]
    agent, human = team["agent"], team["human"]
    assert (await _memory(http, agent, skill.citation))["derived_from"] == [fact.citation]
    assert (await _memory(http, agent, fact.citation))["valid_from_commit"] == "1a2b3c4d"

    second = await _promoted(http, team, SECOND, commit="9f8e7d6c5b")
    old_fact = await _memory(http, agent, fact.citation)
    assert old_fact["deprecated_at"] is not None and old_fact["valid_to_commit"] == "9f8e7d6c5b"
    shown = await _memory(http, agent, skill.citation)
    assert shown["deprecated_at"] is None and shown["stale_at"] is not None
    assert f"mem:{fact.citation}" in shown["stale_reason"]
    assert (await _memory(http, agent, bug.citation))["stale_at"] is not None

    # search flags it and ranks it lower; the context block marks it
    found = await http.post(
        "/v1/search",
        headers=agent.headers,
        json={"query": "how to pick the async db driver", "task_id": second},
    )
    assert found.status_code == 200, found.text
    hits = {h["citation"]: h for h in found.json()["results"]}
    assert hits[skill.citation]["stale"] is True and hits[skill.citation]["score_parts"]["stale_weight"] < 1
    context = await http.post(
        "/v1/context", headers=agent.headers, json={"query": "db driver how to", "task_id": second}
    )
    line = next(li for li in context.json()["context"].splitlines() if f"[mem:{skill.citation}]" in li)
    assert "STALE" in line

    # the review list, its events, and a human's confirmation
    listed = await http.get("/v1/memories/review", headers=human.headers, params={"scope": skill.scope_key})
    assert listed.status_code == 200, listed.text
    stale = {m["citation"]: m for m in listed.json()["memories"]}
    assert {skill.citation, bug.citation} <= set(stale) and stale[skill.citation]["derived_from"]
    outsider = await http.get("/v1/memories/review", headers=team["outsider"].headers)
    assert outsider.status_code == 200 and outsider.json()["memories"] == []
    events = await http.get(f"/v1/memories/{skill.citation}/events", headers=human.headers)
    assert [e["type"] for e in events.json()["events"]][-1] == "STALE"
    elsewhere = await http.get(f"/v1/memories/{skill.citation}/events", headers=team["outsider"].headers)
    assert elsewhere.status_code == 404
    refused = await http.post(f"/v1/memories/{skill.citation}/confirm", headers=agent.headers, json={})
    assert refused.status_code == 403 and "human" in refused.json()["detail"]
    hidden = await http.post(
        f"/v1/memories/{skill.citation}/confirm", headers=team["outsider"].headers, json={}
    )
    assert hidden.status_code == 404
    confirmed = await http.post(
        f"/v1/memories/{skill.citation}/confirm", headers=human.headers, json={"note": "asyncpg too"}
    )
    assert confirmed.status_code == 200, confirmed.text
    assert f"mem:{fact.citation}" in confirmed.json()["was_stale"]
    assert (await _memory(http, agent, skill.citation))["stale_at"] is None
    again = await http.post(f"/v1/memories/{skill.citation}/confirm", headers=human.headers, json={})
    assert again.status_code == 409
    events = await http.get(f"/v1/memories/{skill.citation}/events", headers=human.headers)
    assert [e["type"] for e in events.json()["events"]][-2:] == ["STALE", "CONFIRMED"]


async def test_verification_commit_that_is_not_hex_is_refused(
    http: httpx.AsyncClient, team: dict[str, Actor]
) -> None:
    orchestrator = team["orchestrator"]
    opened = await http.post(
        "/v1/tasks",
        headers=orchestrator.headers,
        json={
            "org": orchestrator.principal.org,
            "project": orchestrator.principal.project,
            "worktree": "main",
            "description": "x",
        },
    )
    task_id = opened.json()["task_id"]
    started = await http.post(
        f"/v1/tasks/{task_id}/promotion",
        headers=orchestrator.headers,
        json={"target_scope": "task", "verification": {"source": "tests_passed", "commit": "not-a-sha"}},
    )
    assert started.status_code == 422 and "commit" in started.text


async def test_staging_expiry_is_published_leaves_search_and_expires_nightly(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    org = team["orchestrator"].principal.org
    opened = await http.post(
        "/v1/tasks",
        headers=team["orchestrator"].headers,
        json={
            "org": org,
            "project": team["orchestrator"].principal.project,
            "worktree": "x",
            "description": "t",
        },
    )
    task_id = opened.json()["task_id"]
    bad = await http.post(
        f"/v1/tasks/{task_id}/entries",
        headers=team["agent"].headers,
        json={"entries": [{"kind": "fact", "content": "x", "payload": {"ttl_seconds": "soon"}}]},
    )
    assert bad.status_code == 422 and "entries[0].payload.ttl_seconds" in bad.json()["detail"]
    past = await http.post(
        f"/v1/tasks/{task_id}/entries",
        headers=team["agent"].headers,
        json={
            "entries": [{"kind": "fact", "content": "x", "payload": {"expires_at": "2020-01-01T00:00:00Z"}}]
        },
    )
    assert past.status_code == 422 and "expires_at" in past.json()["detail"]

    expires = datetime.now(UTC) + timedelta(seconds=6)
    entries = [
        {
            "kind": "fact",
            "content": "The staging cluster is frozen for the release until Friday.",
            "payload": {"expires_at": expires.isoformat()},
        },
        {"kind": "fact", "content": "The release branch is named release/2026-12."},
    ]
    task = await _promoted(http, team, entries, worktree="expiry")
    published = {m.content[:15]: m for m in await active_memories(engine, task_id=task)}
    frozen = published["The staging clu"]
    assert frozen.expires_at is not None and abs((frozen.expires_at - expires).total_seconds()) < 1
    assert published["The release bra"].expires_at is None

    await asyncio.sleep(max(0.0, (expires - datetime.now(UTC)).total_seconds()) + 0.5)
    body = {"query": "staging cluster frozen release", "task_id": task}
    live = await http.post("/v1/search", headers=team["agent"].headers, json=body)
    assert frozen.citation not in {h["citation"] for h in live.json()["results"]}
    history = await http.post(
        "/v1/search", headers=team["agent"].headers, json={**body, "include_history": True}
    )
    assert frozen.citation in {h["citation"] for h in history.json()["results"]}

    step = RetentionStepInput(now=datetime.now(UTC), dry_run=False, orgs=[org])
    assert await RetentionActivities(engine).expire(step) == 1
    events = await http.get(f"/v1/memories/{frozen.citation}/events", headers=team["human"].headers)
    assert [e["type"] for e in events.json()["events"]] == ["PROMOTED", "EXPIRED"]


async def test_tenant_events_filter_page_and_stay_in_the_tenant(
    http: httpx.AsyncClient, team: dict[str, Actor]
) -> None:
    task_id = await _promoted(http, team, FIRST, worktree="audit")
    human = team["human"]
    page = await http.get("/v1/events", headers=human.headers, params={"type": "PROMOTED", "limit": 2})
    assert page.status_code == 200, page.text
    first = page.json()
    assert len(first["events"]) == 2 and all(e["type"] == "PROMOTED" for e in first["events"])
    assert all(e["task_id"] == task_id for e in first["events"]) and first["next_cursor"]
    rest = await http.get(
        "/v1/events",
        headers=human.headers,
        params={"type": "PROMOTED", "limit": 2, "cursor": first["next_cursor"]},
    )
    ids = [e["id"] for e in first["events"]] + [e["id"] for e in rest.json()["events"]]
    assert ids == sorted(ids, reverse=True) and len(set(ids)) == len(ids) == 4  # fact, bug, skill, episode

    since = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    later = await http.get("/v1/events", headers=human.headers, params={"since": since})
    assert later.status_code == 200 and later.json()["events"] == []
    outsider = await http.get("/v1/events", headers=team["outsider"].headers)
    assert task_id not in {e["task_id"] for e in outsider.json()["events"]}
    for params in ({"type": "NOPE"}, {"cursor": "abc"}, {"limit": 0}, {"since": "yesterday"}):
        refused = await http.get("/v1/events", headers=human.headers, params=params)
        assert refused.status_code == 422, (params, refused.text)
    hidden = await http.get("/v1/memories/nosuchmemo/events", headers=human.headers)
    assert hidden.status_code == 404


async def test_tenant_events_of_another_tenant_only_for_who_may_read_it(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    # an admin acting in another org (an erasure, say) reads that org's trail by naming it; nobody else does
    task_id = await _promoted(http, team, FIRST, worktree="audit-admin")
    human = team["human"]
    org, project = human.principal.org, human.principal.project
    admin = await make_actor(engine, ActorType.HUMAN, *new_tenant(), is_admin=True)
    mine = await http.get("/v1/events", headers=admin.headers, params={"type": "PROMOTED"})
    assert mine.status_code == 200 and task_id not in {e["task_id"] for e in mine.json()["events"]}
    for params in ({"org": org}, {"org": org, "project": project}):
        theirs = await http.get("/v1/events", headers=admin.headers, params={**params, "type": "PROMOTED"})
        assert theirs.status_code == 200, theirs.text
        assert task_id in {e["task_id"] for e in theirs.json()["events"]}, params
    # naming one's own tenant is the default listing
    plain = await http.get("/v1/events", headers=human.headers, params={"type": "PROMOTED"})
    named = await http.get("/v1/events", headers=human.headers, params={"type": "PROMOTED", "org": org})
    assert named.status_code == 200 and named.json() == plain.json()
    # another tenant, however named: refused before any of its events is read (no ids, no cursor)
    outsider = team["outsider"]
    for who, params in (
        (outsider, {"org": org}),
        (outsider, {"org": org, "project": project}),
        (human, {"org": outsider.principal.org}),
        (human, {"project": f"{project}-other"}),
        (team["agent"], {"org": outsider.principal.org}),
    ):
        refused = await http.get("/v1/events", headers=who.headers, params=params)
        assert refused.status_code == 403, (params, refused.text)
        assert refused.json()["error"] == "forbidden" and "may not read the events of" in refused.text
        assert "next_cursor" not in refused.text
    for params in ({"org": "a/b"}, {"org": "*"}, {"project": " x"}, {"org": "x" * 201}):
        bad = await http.get("/v1/events", headers=admin.headers, params=params)
        assert bad.status_code == 422, (params, bad.text)
