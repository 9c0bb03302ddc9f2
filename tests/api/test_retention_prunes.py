"""Retention that prunes what promotions create, end to end: real HTTP, Temporal, Postgres and worker.

Seven tasks of one worktree are promoted through the gate (two fail verification); readers search and vote
over HTTP; two tasks' memories are aged 120 days; a reflection's insight distils one episode. The nightly
RetentionWorkflow (dry run, then for real) prunes by every rule while keeping at least one per group.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections import Counter
from typing import Any

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio.client import Client

from governance.config import Settings
from governance.retention import RetentionPolicy
from governance.scopes import ActorType
from tests.utils.factories import Actor, make_actor
from tests.utils.promotion_factories import active_memories
from tests.utils.promotion_gateway import staged_promotion, temporal_settings, wait_promotion_state
from tests.utils.retention_factories import add_insight, age_memories, pruned_events
from workflows.retention import RetentionInput, RetentionResult, RetentionWorkflow


@pytest.fixture(scope="module")
def promo_settings(settings: Settings, temporal: Client) -> Settings:
    """The module's gateway and worker keep one memory per group: the worker refuses runs bolder than it."""
    return temporal_settings(settings, temporal).model_copy(update={"retention_keep_per_group": 1})


def _result(content: str, repeatable: bool = False) -> dict[str, Any]:
    return {"kind": "result", "content": content, "payload": {"repeatable": True} if repeatable else None}


def _decision(key: str, content: str) -> dict[str, Any]:
    return {"kind": "decision", "content": f"{key}: {content}", "payload": {"key": key}}


TASKS: dict[str, tuple[str, list[dict[str, Any]], bool]] = {
    "A": (
        "choose the cache backend for user sessions",
        [_decision("cache.backend", "redis with a ten minute ttl"), _result("Sessions live in redis.", True)],
        True,
    ),
    "B": ("rename the billing CSV export columns", [_result("Export columns renamed to snake case.")], True),
    "C1": (
        "migrate the search index to a new cluster",
        [{"kind": "error", "content": "TimeoutError: bulk reindex timed out"}, _result("gave up for now")],
        False,
    ),
    "C2": (
        "upgrade the PDF invoice renderer",
        [{"kind": "error", "content": "MemoryError: renderer ran out of memory"}, _result("reverted")],
        False,
    ),
    "D": (
        "pick the message queue broker for billing events",
        [
            _decision("queue.broker", "rabbitmq with quorum queues"),
            _result("Events flow via rabbitmq.", True),
        ],
        True,
    ),
    "E": ("tune the image thumbnail sizes", [_result("Thumbnails are 320 and 640 pixels wide now.")], True),
    "F": ("document the on-call rotation", [_result("The rotation is in the wiki.")], True),
}


async def _promote(http: httpx.AsyncClient, team: dict[str, Actor], name: str) -> str:
    description, entries, success = TASKS[name]
    orchestrator = team["orchestrator"]
    task_id = await staged_promotion(http, team, description, entries, "worktree", success=success)
    await wait_promotion_state(http, orchestrator.headers, task_id, "published" if success else "unverified")
    return task_id


async def _vote(http: httpx.AsyncClient, actor: Actor, citation: str, helpful: bool) -> None:
    voted = await http.post(
        f"/v1/memories/{citation}/feedback", headers=actor.headers, json={"helpful": helpful}
    )
    assert voted.status_code == 200, voted.text


async def _search(
    http: httpx.AsyncClient, actor: Actor, task_id: str, query: str, types: list[str]
) -> set[str]:
    found = await http.post(
        "/v1/search",
        headers=actor.headers,
        json={"query": query, "task_id": task_id, "k": 20, "types": types},
    )
    assert found.status_code == 200, found.text
    return {hit["citation"] for hit in found.json()["results"]}


async def _retention(temporal: Client, settings: Settings, org: str, *, dry_run: bool) -> RetentionResult:
    return await temporal.execute_workflow(
        RetentionWorkflow.run,
        RetentionInput(dry_run=dry_run, policy=RetentionPolicy(keep_per_group=1), orgs=[org]),
        id=f"retention-{uuid.uuid4()}",
        task_queue=settings.task_queue,
    )


async def _count(engine: AsyncEngine, sql: str, **params: Any) -> int:
    async with engine.connect() as conn:
        return int((await conn.execute(text(sql), params)).scalar_one())


async def test_retention_prunes_promoted_memory_by_every_rule(
    http: httpx.AsyncClient,
    team: dict[str, Actor],
    engine: AsyncEngine,
    temporal: Client,
    promo_settings: Settings,
) -> None:
    agent, human, orchestrator = team["agent"], team["human"], team["orchestrator"]
    org = orchestrator.principal.org
    tasks = {name: await _promote(http, team, name) for name in TASKS}
    mem: dict[str, Any] = {}
    for name, task_id in tasks.items():
        for m in await active_memories(engine, task_id=task_id):
            mem[f"{m.memory_type[0].upper()}{name}"] = m  # EA: task A's episode, FA its fact, SA its skill
    assert {"EA", "FA", "SA", "EB", "EC1", "EC2", "ED", "FD", "SD", "EE", "EF"} <= set(mem)
    assert mem["EC1"].scope == "task" and mem["EC1"].reward < 0.3 and mem["EA"].scope == "worktree"
    insight = await add_insight(engine, str(mem["EE"].id), "Thumbnails: measure before tuning")

    # readers at work: facts retrieved five times, episodes once; two principals find FA and SD useless,
    # one finds EB useful (readers not involved in those tasks: the authors' own votes do not count)
    reader = await make_actor(engine, ActorType.AGENT, org, orchestrator.principal.project)
    other = await make_actor(engine, ActorType.ORCHESTRATOR, org, orchestrator.principal.project)
    for _ in range(5):
        assert mem["FA"].citation in await _search(http, agent, tasks["F"], "cache backend redis", ["fact"])
    assert mem["EB"].citation in await _search(http, agent, tasks["F"], "billing export columns", ["episode"])
    for actor in (reader, human):
        await _vote(http, actor, mem["FA"].citation, False)
        await _vote(http, actor, mem["SD"].citation, False)
    await _vote(http, other, mem["EB"].citation, True)
    assert (
        await age_memories(engine, tasks["A"], 120) == 3 and await age_memories(engine, tasks["B"], 120) == 1
    )

    # before: the old rule kept the newest 5 per (first source task, type), and every such group holds one
    everything = [m for name in tasks.values() for m in await active_memories(engine, task_id=name)]
    assert max(Counter((m.source_task_ids[0], m.memory_type) for m in everything).values()) == 1

    expected = {
        str(mem[k].id): rule
        for k, rule in {
            "EA": "episode_age",
            "EE": "distilled_episode",
            "EC1": "episode_reward",
            "SD": "skill_success_rate",
            "FA": "useless",
        }.items()
    }
    contents = {str(m.id): m.content for m in everything}
    memories_in_org = "SELECT count(*) FROM memories WHERE org = :o"
    before = await _count(engine, memories_in_org, o=org)
    digests = [hashlib.sha256(contents[i].encode()).hexdigest() for i in expected]
    cached_sql = "SELECT count(*) FROM embedding_cache WHERE text_sha256 = ANY(CAST(:d AS text[]))"
    assert await _count(engine, cached_sql, d=digests) > 0

    dry = await _retention(temporal, promo_settings, org, dry_run=True)
    assert set(dry.pruned_ids) == set(expected) and dry.pruned == 5
    assert dry.pruned_by_rule == dict.fromkeys(sorted(expected.values()), 1)
    assert dry.pruned_spared == 1  # EC2: also low reward, but at least one task-scope episode stays
    assert await _count(engine, memories_in_org, o=org) == before

    real = await _retention(temporal, promo_settings, org, dry_run=False)
    assert set(real.pruned_ids) == set(dry.pruned_ids) and real.pruned_by_rule == dry.pruned_by_rule
    assert real.stale_marked == 1
    assert await _count(engine, memories_in_org, o=org) == before - 5

    # PRUNED events: ids, hashes, titles and the rule, never content
    events = await pruned_events(engine, list(expected))
    assert {e[0]: e[2]["rule"] for e in events} == expected
    titles = {str(m.id): m.title for m in everything}
    for memory_id, reason, payload in events:
        assert payload["content_sha256"] == hashlib.sha256(contents[memory_id].encode()).hexdigest()
        assert payload["title"] == titles[memory_id] and payload["org"] == org
        assert "content" not in payload
        # a short fact's title is its whole text; nothing but the title may quote it
        besides_title = json.dumps({k: v for k, v in payload.items() if k != "title"}) + reason
        assert contents[memory_id] not in besides_title
    listed = await http.get("/v1/events", headers=human.headers, params={"type": "PRUNED", "limit": 50})
    assert listed.status_code == 200, listed.text
    assert {e["memory_id"] for e in listed.json()["events"]} == set(expected)
    # a pruned memory's citation stays readable in its event
    assert {e["citation"] for e in listed.json()["events"]} == {
        mem[k].citation for k in ("EA", "EE", "EC1", "SD", "FA")
    }
    hidden = await http.get("/v1/events", headers=team["outsider"].headers, params={"type": "PRUNED"})
    assert hidden.status_code == 200 and hidden.json()["events"] == []

    # gone from search, from citations and from the embedding cache
    episodes = await _search(http, agent, tasks["F"], "task episode", ["episode"])
    assert mem["EA"].citation not in episodes and mem["EE"].citation not in episodes
    assert mem["EB"].citation in episodes and mem["EF"].citation in episodes
    assert mem["FA"].citation not in await _search(http, agent, tasks["F"], "cache backend redis", ["fact"])
    assert (await http.get(f"/v1/memories/{mem['SD'].citation}", headers=agent.headers)).status_code == 404
    assert await _count(engine, cached_sql, d=digests) == 0

    # the skill built on the useless fact is stale for review; the insight of the distilled episode is not
    skill = (await http.get(f"/v1/memories/{mem['SA'].citation}", headers=agent.headers)).json()["memory"]
    assert skill["stale_at"] is not None and f"mem:{mem['FA'].citation}" in skill["stale_reason"]
    assert "was pruned" in skill["stale_reason"]
    shown = (await http.get(f"/v1/memories/{insight}", headers=agent.headers)).json()["memory"]
    assert shown["stale_at"] is None

    # keep at least one per group: every (scope, type) group of the worktree still has an active memory
    left = {
        (m.scope, m.memory_type)
        for name in tasks.values()
        for m in await active_memories(engine, task_id=name)
    }
    assert left >= {("worktree", "episode"), ("task", "episode"), ("worktree", "fact"), ("worktree", "skill")}

    # the next night finds nothing more to prune
    again = await _retention(temporal, promo_settings, org, dry_run=True)
    assert again.pruned == 0
