"""Reflection's activities on the real database: due, claim, stage and finish are each safe to retry.

A retried claim finds the episodes it claimed; a second reflection finds none left; a retried stage finds
its task staged and appends nothing; a reflection task's own episode never counts as pending.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio.testing import ActivityEnvironment

from activities.reflection import ClaimInput, DueInput, FinishInput, ReflectionActivities, StageInput
from governance.adapters.llm_reflector import make_reflector
from governance.config import Settings
from governance.scopes import Scope
from governance.storage.reflections import ensure_reflector, pending_scope, reflector_id
from tests.utils.fake_openai import FakeOpenAI, Reply, chat_reply
from tests.utils.memory_factories import TaskRef, add_entries, add_memory, new_task


async def _episodes(engine: AsyncEngine, n: int) -> TaskRef:
    first: TaskRef | None = None
    async with engine.begin() as conn:
        for i in range(n):
            task = await new_task(
                conn, org=first.org if first else None, project=first.project if first else None
            )
            first = first or task
            ids = await add_entries(conn, task, [f"KeyError: 'user_{i}'"], kind="error")
            ids += await add_entries(conn, task, ["Guard the lookup with dict.get"], kind="result")
            await add_memory(
                conn,
                task,
                title=f"Episode: load the cache {i}",
                content=f"Task {task.task_id}: load the cache\nOutcome: success",
                embedding=None,
                memory_type="episode",
                scope=Scope.WORKTREE,
                importance=0.7,
                source_entry_ids=ids,
                success=True,
            )
    assert first is not None
    return first


async def test_reflection_activities_are_idempotent(engine: AsyncEngine, settings: Settings) -> None:
    tenant = await _episodes(engine, 3)
    acts = ReflectionActivities(
        engine=engine, settings=settings.model_copy(update={"reflection_importance_threshold": 2.0})
    )
    env = ActivityEnvironment()
    due = await env.run(acts.due, DueInput(tenant.org, tenant.project, tenant.task_id))
    assert due.due and due.episodes == 3 and due.importance == 2.1

    claim = ClaimInput("r1-" + tenant.task_id, "wf", tenant.org, tenant.project, "schedule", None)
    first = await env.run(acts.claim, claim)
    assert first.episodes == 3 and first.reflector is not None
    assert (await env.run(acts.claim, claim)).episodes == 3  # a retry finds its claim
    other = ClaimInput("r2-" + tenant.task_id, "wf2", tenant.org, tenant.project, "schedule", None)
    assert (await env.run(acts.claim, other)).episodes == 0  # nothing is claimed twice
    assert not (await env.run(acts.due, DueInput(tenant.org, tenant.project, tenant.task_id))).due

    stage = StageInput(
        claim.reflection_id,
        tenant.org,
        tenant.project,
        first.reflector or "",
        f"reflect-{tenant.task_id}",
        "p",
    )
    staged = await env.run(acts.stage, stage)
    assert staged.task_id == stage.task_id and staged.insights >= 1
    again = await env.run(acts.stage, stage)
    assert (again.task_id, again.insights) == (staged.task_id, staged.insights)
    async with engine.connect() as conn:
        rows: list[Any] = (
            await conn.execute(
                text("SELECT kind, payload FROM staging_entries WHERE task_id = :t"), {"t": stage.task_id}
            )
        ).all()
    assert len(rows) == staged.insights and {r.kind for r in rows} == {"insight"}
    assert all(len(r.payload["reflection"]["episodes"]) == 3 for r in rows)

    finished = await env.run(
        acts.finish, FinishInput(claim.reflection_id, "wf", staged.task_id, "rejected", first.reflector)
    )
    assert finished.linked == 0
    async with engine.connect() as conn:
        state = (
            await conn.execute(
                text("SELECT state FROM reflections WHERE id = :i"), {"i": claim.reflection_id}
            )
        ).scalar_one()
    assert state == "rejected"


async def test_reflection_stage_words_insights_with_the_configured_llm(
    engine: AsyncEngine, settings: Settings
) -> None:
    tenant = await _episodes(engine, 2)
    with FakeOpenAI() as fake:

        def chat(body: dict[str, Any]) -> Reply:
            groups = json.loads(body["messages"][1]["content"])["groups"]
            worded = [
                {"key": g["key"], "title": "Worded", "content": f"Worded: {g['facts']}"} for g in groups
            ]
            return chat_reply(json.dumps({"insights": worded}))

        fake.chat = chat
        llm_settings = settings.model_copy(
            update={"llm_base_url": fake.base_url, "llm_model": "fake-reflector"}
        )
        acts = ReflectionActivities(engine=engine, settings=llm_settings, llm=make_reflector(llm_settings))
        env = ActivityEnvironment()
        claim = ClaimInput("r-llm-" + tenant.task_id, "wf", tenant.org, tenant.project, "schedule", None)
        claimed = await env.run(acts.claim, claim)
        staged = await env.run(
            acts.stage,
            StageInput(
                claim.reflection_id,
                tenant.org,
                tenant.project,
                claimed.reflector or "",
                f"reflect-llm-{tenant.task_id}",
                "p",
            ),
        )
        assert len(fake.chat_requests()) == 1
    assert staged.engine == "llm:fake-reflector" and staged.fallback_reason is None
    async with engine.connect() as conn:
        contents = (
            (
                await conn.execute(
                    text("SELECT content FROM staging_entries WHERE task_id = :t"), {"t": staged.task_id}
                )
            )
            .scalars()
            .all()
        )
        engine_used = (
            await conn.execute(
                text("SELECT engine FROM reflections WHERE id = :i"), {"i": claim.reflection_id}
            )
        ).scalar_one()
    assert contents and all(c.startswith("Worded: ") for c in contents)
    assert engine_used == "llm:fake-reflector"


async def test_reflection_claims_nothing_while_the_reflector_is_disabled(
    engine: AsyncEngine, settings: Settings
) -> None:
    tenant = await _episodes(engine, 2)
    acts = ReflectionActivities(engine=engine, settings=settings)
    env = ActivityEnvironment()
    async with engine.begin() as conn:
        reflector = await ensure_reflector(conn, tenant.org)
        assert reflector == reflector_id(tenant.org)
        await conn.execute(
            text("UPDATE api_keys SET revoked_at = now() WHERE principal_id = :p"), {"p": reflector}
        )
    claim = ClaimInput("r-off-" + tenant.task_id, "wf", tenant.org, tenant.project, "schedule", None)
    refused = await env.run(acts.claim, claim)
    assert (refused.reflector, refused.episodes) == (None, 0)
    async with engine.connect() as conn:
        assert (await ensure_reflector(conn, tenant.org)) is None  # never re-enabled
        pending = await pending_scope(conn, tenant.org, tenant.project)
        state = (
            await conn.execute(
                text("SELECT state FROM reflections WHERE id = :i"), {"i": claim.reflection_id}
            )
        ).scalar_one()
    assert pending.episodes == 2 and state == "failed"
