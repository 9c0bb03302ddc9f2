"""Round trips of real promotions' memory: export → admin restore into a fresh database → export again, and
export → import through the gate into another project → promotion publishes them.

The fresh database is a second database on the session's Postgres, served by a second gateway.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.config import Settings
from governance.scopes import ActorType
from governance.storage.engine import make_engine
from governance.storage.migrate import upgrade_head
from tests.utils.factories import Actor, make_actor
from tests.utils.gateway import running_gateway
from tests.utils.promotion_gateway import stage, start_promotion, wait_promotion_state
from tests.utils.tenancy import task_key_of

NDJSON = {"Content-Type": "application/x-ndjson"}


@pytest.fixture(scope="module")
def fresh_settings(pg_server: Any, promo_settings: Settings) -> Iterator[Settings]:
    """Settings on a second, freshly migrated database of the same Postgres server."""
    name = f"restore_{uuid.uuid4().hex[:10]}"
    pg_server.psql(f"CREATE DATABASE {name};")
    url = str(pg_server.get_uri(name))
    upgrade_head(url)
    try:
        yield promo_settings.model_copy(update={"database_url": url})
    finally:
        pg_server.psql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE);")


@pytest.fixture(scope="module")
def fresh_gateway(fresh_settings: Settings) -> Iterator[str]:
    with running_gateway(fresh_settings) as url:
        yield url


@pytest.fixture(scope="module")
async def fresh_engine(fresh_settings: Settings) -> AsyncIterator[AsyncEngine]:
    eng = make_engine(fresh_settings)
    yield eng
    await eng.dispose()


async def _promote(
    http: httpx.AsyncClient, team: dict[str, Actor], entries: list[dict[str, Any]]
) -> dict[str, Any]:
    """A task of the team's project whose promotion (tests passed, approved by the human) published."""
    orchestrator, human = team["orchestrator"], team["human"]
    opened = await http.post(
        "/v1/tasks",
        headers=orchestrator.headers,
        json={
            "org": orchestrator.principal.org,
            "project": orchestrator.principal.project,
            "worktree": "main",
            "description": "pick the database driver",
        },
    )
    task_id: str = opened.json()["task_id"]
    await stage(http, team["agent"], task_id, entries)
    await start_promotion(http, orchestrator, task_id, "project")
    await wait_promotion_state(http, human.headers, task_id, "awaiting_approval")
    approved = await http.post(f"/v1/promotions/{task_id}/approve", headers=human.headers, json={})
    assert approved.status_code == 200, approved.text
    return await wait_promotion_state(http, human.headers, task_id, "published")


async def _published_project(http: httpx.AsyncClient, team: dict[str, Actor]) -> str:
    """Two promotions: a fact, a profile, a bug pattern and a skill built on the fact; then the fact
    superseded."""
    await _promote(
        http,
        team,
        [
            {"kind": "decision", "content": "db.driver: psycopg 3 with the async API"},
            {"kind": "error", "content": "ImportError: no module named psycopg2"},
            {
                "kind": "result",
                "content": "Switched to psycopg; all tests pass.",
                "payload": {"repeatable": True},
            },
            {"kind": "fact", "content": "cache.ttl: 60 seconds for the product pages"},
            {"kind": "profile", "content": "team.release: Dana signs off every release, on Fridays"},
        ],
    )
    await _promote(http, team, [{"kind": "decision", "content": "db.driver: asyncpg for the bulk loader"}])
    principal = team["human"].principal
    return f"project:{principal.org}/{principal.project}"


def _records(body: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in body.splitlines() if line.strip()]


def _by_kind(records: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [r for r in records if r["kind"] == kind]


async def test_export_restore_into_a_fresh_database_round_trips(
    http: httpx.AsyncClient,
    team: dict[str, Actor],
    fresh_gateway: str,
    fresh_engine: AsyncEngine,
) -> None:
    scope_key = await _published_project(http, team)
    started = time.monotonic()
    exported = await http.get("/v1/exports", headers=team["human"].headers, params={"scope_key": scope_key})
    assert exported.status_code == 200, exported.text
    export_seconds = time.monotonic() - started
    first = _records(exported.text)
    memories = _by_kind(first, "memory")
    assert {m["memory_type"] for m in memories} >= {"fact", "profile", "bug_pattern", "skill", "episode"}
    assert any(m["supersedes_id"] for m in memories) and any(m["derived_from"] for m in memories)
    assert any(m["deprecated_at"] for m in memories) and _by_kind(first, "event")

    admin = await make_actor(fresh_engine, ActorType.HUMAN, "default", None, is_admin=True)
    async with httpx.AsyncClient(base_url=fresh_gateway, timeout=300) as fresh:
        started = time.monotonic()
        restored = await fresh.post(
            "/v1/restores",
            content=exported.content,
            headers={**admin.headers, **NDJSON},
        )
        restore_seconds = time.monotonic() - started
        assert restored.status_code == 200, restored.text
        counts = restored.json()
        assert counts["created"] == {"memory": len(memories), "event": len(_by_kind(first, "event"))}
        again = await fresh.get("/v1/exports", headers=admin.headers, params={"scope_key": scope_key})
        assert again.status_code == 200, again.text
        second = _records(again.text)
        # a second restore of the same file finds everything there and writes nothing but its receipt
        twice = await fresh.post(
            "/v1/restores",
            content=exported.content,
            headers={**admin.headers, **NDJSON},
        )
        assert twice.status_code == 200 and twice.json()["created"] == {"memory": 0, "event": 0}
    print(f"\nexport {len(memories)} memories: {export_seconds:.2f} s; restore: {restore_seconds:.2f} s")

    def comparable(record: dict[str, Any]) -> dict[str, Any]:
        # the fresh database holds no staging, so provenance (the source entries' text) is empty there
        return {k: v for k, v in record.items() if k != "provenance"}

    assert [comparable(m) for m in _by_kind(second, "memory")] == [comparable(m) for m in memories]
    assert _by_kind(second, "event") == _by_kind(first, "event")
    # an event line names its idempotency key `dedupe_key` (file format 1); the column is idempotency_key
    keyed = {e["id"]: e["dedupe_key"] for e in _by_kind(first, "event") if e["dedupe_key"]}
    assert keyed
    async with fresh_engine.connect() as conn:
        stored = await conn.execute(
            text("SELECT id, idempotency_key FROM memory_events WHERE id = ANY(:ids)"), {"ids": list(keyed)}
        )
        assert dict(stored.tuples().all()) == keyed
    assert second[-1] == {**first[-1], "counts": {**first[-1]["counts"]}}
    async with fresh_engine.connect() as conn:
        missing = await conn.execute(
            text("SELECT count(*) FROM memories WHERE scope_key = :k AND embedding IS NULL"), {"k": scope_key}
        )
        assert missing.scalar_one() == 0  # embeddings were recomputed


async def test_gate_import_into_another_project_publishes_through_promotion(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    scope_key = await _published_project(http, team)
    exported = await http.get("/v1/exports", headers=team["human"].headers, params={"scope_key": scope_key})
    assert exported.status_code == 200
    source = _records(exported.text)
    org = team["human"].principal.org
    target_project = f"b-{uuid.uuid4().hex[:6]}"
    human_b = await make_actor(engine, ActorType.HUMAN, org, target_project)
    target = f"project:{org}/{target_project}"
    params = {"scope_key": target, "verified": "tests_passed"}
    started = time.monotonic()
    imported = await http.post(
        "/v1/imports", params=params, content=exported.content, headers={**human_b.headers, **NDJSON}
    )
    assert imported.status_code == 200, imported.text
    body = imported.json()
    assert body["promotion_created"] is True and body["skipped"] == {"not_active": 1, "episode": 2}
    task_id = body["task_id"]
    await wait_promotion_state(http, human_b.headers, task_id, "awaiting_approval")
    approved = await http.post(f"/v1/promotions/{task_id}/approve", headers=human_b.headers, json={})
    assert approved.status_code == 200, approved.text
    await wait_promotion_state(http, human_b.headers, task_id, "published")
    took = time.monotonic() - started
    print(f"\ngate import: {body['created']['entry']} entries staged and published in {took:.2f} s")

    # the same file again: same task, nothing new staged, no second promotion
    repeat = await http.post(
        "/v1/imports", params=params, content=exported.content, headers={**human_b.headers, **NDJSON}
    )
    assert repeat.status_code == 200, repeat.text
    assert repeat.json()["task_id"] == task_id and repeat.json()["promotion_created"] is False
    entries = await http.get(f"/v1/tasks/{task_id}/entries", headers=human_b.headers)
    assert len(entries.json()["entries"]) == body["created"]["entry"]

    landed = await http.get("/v1/exports", headers=human_b.headers, params={"scope_key": target})
    published = [m for m in _by_kind(_records(landed.text), "memory") if m["deprecated_at"] is None]
    wanted = {
        (m["memory_type"], m["canonical_key"], m["content"])
        for m in _by_kind(source, "memory")
        if m["deprecated_at"] is None and m["memory_type"] in ("fact", "profile", "skill", "bug_pattern")
    }
    got = {(m["memory_type"], m["canonical_key"], m["content"]) for m in published}
    assert wanted <= got, (wanted - got, got)
    assert any(m[0] == "profile" for m in wanted)  # and it came back a profile, not a preference
    # an export carries task keys, as the database does (a restore writes them back unchanged)
    assert all(m["source_task_ids"] == [task_key_of(task_id)] for m in published)
