"""RetentionWorkflow on Temporal's test servers against real Postgres.

The time-skipping server does not implement schedules (CreateSchedule is unimplemented), so the workflow's
behaviour runs there and the schedule is created, updated and fired on the local dev server.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio.client import Client, ScheduleOverlapPolicy, ScheduleSpec, WorkflowFailureError
from temporalio.converter import DataConverter
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.worker import Worker

from activities.retention import RetentionActivities
from governance.config import Settings
from governance.retention import RetentionPolicy
from tests.utils.lifecycle_factories import Place, insert_memory, new_place
from workflows.retention import RetentionInput, RetentionResult, RetentionWorkflow
from workflows.schedules import RETENTION_SCHEDULE_ID, apply_schedules, retention_schedule


async def _seed(engine: AsyncEngine, place: Place) -> dict[str, Any]:
    """Tasks A (8 old episodes) and B (3 older): one group of 11, the 6 oldest prunable; 5 good skills and
    one that three principals judged unhelpful."""
    now = datetime.now(UTC)
    fixed = {"decay_policy": "manual_only"}
    async with engine.begin() as conn:
        a_eps = [
            await insert_memory(conn, place, task_id="A", created_at=now - timedelta(days=100 + i), **fixed)
            for i in range(8)
        ]
        b_eps = [
            await insert_memory(conn, place, task_id="B", created_at=now - timedelta(days=300), **fixed)
            for _ in range(3)
        ]
        for i in range(5):
            await insert_memory(
                conn,
                place,
                memory_type="skill",
                task_id="A",
                usefulness=0.9,
                created_at=now - timedelta(days=i),
                **fixed,
            )
        bad_skill = await insert_memory(
            conn,
            place,
            memory_type="skill",
            task_id="A",
            usefulness=0.2,
            created_at=now - timedelta(days=20),
            success=True,
            **fixed,
        )
        for voter in ("p1", "p2", "p3"):
            await conn.execute(
                text(
                    "INSERT INTO memory_votes (memory_id, actor_id, helpful) "
                    "VALUES (CAST(:m AS uuid), :a, false)"
                ),
                {"m": bad_skill, "a": voter},
            )
        expiring = await insert_memory(
            conn, place, memory_type="fact", expires_at=now - timedelta(hours=1), **fixed
        )
        fading = await insert_memory(
            conn,
            place,
            memory_type="fact",
            decay_policy="recency_bias",
            last_validated_at=now - timedelta(days=60, hours=12),
        )
    return {
        "prunable": set(a_eps[5:]) | set(b_eps) | {bad_skill},
        "kept": set(a_eps[:5]),
        "expiring": expiring,
        "fading": fading,
    }


def _hour_minute(spec: ScheduleSpec) -> tuple[int, int]:
    (calendar,) = spec.calendars
    return calendar.hour[0].start, calendar.minute[0].start


async def _snapshot(engine: AsyncEngine, org: str) -> list[tuple[Any, ...]]:
    async with engine.connect() as conn:
        rows = await conn.execute(
            text("SELECT id, confidence, deprecated_at FROM memories WHERE org = :o ORDER BY id"), {"o": org}
        )
        return [tuple(r) for r in rows]


@pytest.fixture
async def ts_worker(time_skipping_env: Any, engine: AsyncEngine) -> AsyncIterator[tuple[Client, str]]:
    queue = f"retention-{uuid.uuid4()}"
    acts = RetentionActivities(engine)
    async with Worker(
        time_skipping_env.client,
        task_queue=queue,
        workflows=[RetentionWorkflow],
        activities=acts.functions(),
    ):
        yield time_skipping_env.client, queue


# the time-skipping server's clock runs ahead of Postgres's over a session (by a year and more once other
# tests skipped their timers): the rules of recent rows are measured here, not the age of inactive ones
_NO_INACTIVE_AGE = RetentionPolicy(max_inactive_age_days=0)


async def _run(client: Client, queue: str, params: RetentionInput) -> RetentionResult:
    return await client.execute_workflow(
        RetentionWorkflow.run, params, id=f"retention-{uuid.uuid4()}", task_queue=queue
    )


async def test_retention_dry_run_reports_and_changes_nothing(
    ts_worker: tuple[Client, str], engine: AsyncEngine
) -> None:
    place = new_place()
    seeded = await _seed(engine, place)
    before = await _snapshot(engine, place.org)
    result = await _run(*ts_worker, RetentionInput(dry_run=True, orgs=[place.org], policy=_NO_INACTIVE_AGE))
    assert (result.decayed, result.expired, result.pruned) == (1, 1, 7)
    assert set(result.pruned_ids) == seeded["prunable"]
    assert result.pruned_by_rule == {"episode_age": 6, "skill_success_rate": 1}
    assert result.pruned_spared == 5  # all 11 episodes are old: the newest 5 stay
    assert await _snapshot(engine, place.org) == before


async def test_retention_run_prunes_exactly_the_expected_rows(
    ts_worker: tuple[Client, str], engine: AsyncEngine
) -> None:
    place = new_place()
    seeded = await _seed(engine, place)
    result = await _run(*ts_worker, RetentionInput(orgs=[place.org], policy=_NO_INACTIVE_AGE))
    assert (result.decayed, result.expired, result.pruned) == (1, 1, 7)
    async with engine.connect() as conn:
        left = {
            str(r.id)
            for r in await conn.execute(text("SELECT id FROM memories WHERE org = :o"), {"o": place.org})
        }
        pruned_events = (
            await conn.execute(
                text(
                    "SELECT count(*) FROM memory_events WHERE event_type = 'PRUNED' "
                    "AND memory_id = ANY(CAST(:i AS uuid[]))"
                ),
                {"i": list(seeded["prunable"])},
            )
        ).scalar_one()
        expired = (
            await conn.execute(
                text("SELECT deprecated_at FROM memories WHERE id = CAST(:i AS uuid)"),
                {"i": seeded["expiring"]},
            )
        ).scalar_one()
    assert not left & seeded["prunable"]
    assert seeded["kept"] <= left
    assert pruned_events == 7 and expired is not None
    # a second run finds nothing left to prune (the time-skipping server's clock may have jumped ahead
    # meanwhile, deciding another day of decay)
    again = await _run(*ts_worker, RetentionInput(orgs=[place.org], policy=_NO_INACTIVE_AGE))
    assert again.expired == 0 and again.pruned == 0


@pytest.fixture
async def configured_worker(time_skipping_env: Any, engine: AsyncEngine) -> AsyncIterator[tuple[Client, str]]:
    """A worker whose settings configure the default policy, as `loregate up`'s worker does."""
    queue = f"retention-{uuid.uuid4()}"
    acts = RetentionActivities(engine, policy=RetentionPolicy())
    async with Worker(
        time_skipping_env.client, task_queue=queue, workflows=[RetentionWorkflow], activities=acts.functions()
    ):
        yield time_skipping_env.client, queue


async def test_retention_started_with_a_bolder_policy_is_refused_and_recorded(
    configured_worker: tuple[Client, str], engine: AsyncEngine
) -> None:
    # `temporal workflow start` with numbers of its own: keep nobody, prune every episode older than a day
    place = new_place()
    await _seed(engine, place)
    before = await _snapshot(engine, place.org)
    client, queue = configured_worker
    workflow_id = f"retention-{uuid.uuid4()}"
    bold = RetentionPolicy(keep_per_group=0, max_episode_age_days=1, max_inactive_age_days=0)
    with pytest.raises(WorkflowFailureError) as failed:
        await client.execute_workflow(
            RetentionWorkflow.run,
            RetentionInput(orgs=[place.org], policy=bold),
            id=workflow_id,
            task_queue=queue,
        )
    cause = failed.value.cause
    assert isinstance(cause, ActivityError) and isinstance(cause.cause, ApplicationError)
    assert cause.cause.type == "StartRefused"
    assert await _snapshot(engine, place.org) == before  # nothing decayed, expired or pruned
    async with engine.connect() as conn:
        rows = (
            await conn.execute(
                text(
                    "SELECT actor_id, reason, payload FROM memory_events "
                    "WHERE workflow_id = :w AND event_type = 'REJECTED'"
                ),
                {"w": workflow_id},
            )
        ).all()
    assert len(rows) == 1 and rows[0].actor_id is None
    assert rows[0].payload["refused"] == "retention" and rows[0].payload["channel"] == "start"
    assert sorted(rows[0].payload["bolder"]) == [
        "keep_per_group 0 (configured 5)",
        "max_episode_age_days 1 (configured 90)",
    ]
    assert "prunes more than the configured one" in rows[0].reason


async def test_retention_with_a_more_careful_policy_or_a_dry_run_is_not_refused(
    configured_worker: tuple[Client, str], engine: AsyncEngine
) -> None:
    place = new_place()
    seeded = await _seed(engine, place)
    careful = RetentionPolicy(keep_per_group=20, max_episode_age_days=365, max_inactive_age_days=0)
    kept = await _run(*configured_worker, RetentionInput(orgs=[place.org], policy=careful))
    # every group holds fewer than 20: whatever the rules choose (the time-skipping clock may have run
    # ahead by years), all of it is spared
    assert kept.pruned == 0 and kept.pruned_spared >= 1
    # a dry run writes nothing: it may ask what a bolder policy would do
    bold = RetentionPolicy(keep_per_group=0, max_inactive_age_days=0)
    dry = await _run(*configured_worker, RetentionInput(dry_run=True, orgs=[place.org], policy=bold))
    assert set(dry.pruned_ids) >= seeded["prunable"]


async def test_retention_schedule_created_updated_and_fires(
    local_env: Any, engine: AsyncEngine, settings: Settings
) -> None:
    client: Client = local_env.client
    queue = f"retention-{uuid.uuid4()}"
    ours = settings.model_copy(update={"task_queue": queue})
    await apply_schedules(client, ours)
    handle = client.get_schedule_handle(RETENTION_SCHEDULE_ID)
    try:
        described = await handle.describe()
        # the server stores cron expressions as calendar specs
        assert _hour_minute(described.schedule.spec) == (3, 0)
        assert described.schedule.spec.time_zone_name == "UTC"
        assert described.schedule.policy.overlap == ScheduleOverlapPolicy.SKIP
        await apply_schedules(client, ours.model_copy(update={"retention_cron": "30 2 * * *"}))
        assert _hour_minute((await handle.describe()).schedule.spec) == (2, 30)
    finally:
        await handle.delete()

    # fire a copy of the same schedule, limited to a fresh tenant so it cannot touch other tests' rows
    place = new_place()
    seeded = await _seed(engine, place)
    schedule = retention_schedule(ours)
    schedule.action.args = [RetentionInput(orgs=[place.org])]  # type: ignore[attr-defined]
    fired = await client.create_schedule(f"retention-test-{uuid.uuid4()}", schedule)
    acts = RetentionActivities(engine)
    try:
        async with Worker(
            client,
            task_queue=queue,
            workflows=[RetentionWorkflow],
            activities=acts.functions(),
        ):
            await fired.trigger()
            for _ in range(100):
                actions = (await fired.describe()).info.recent_actions
                if actions:
                    break
                await asyncio.sleep(0.1)
            workflow_id = actions[0].action.workflow_id  # type: ignore[attr-defined]
            result = await client.get_workflow_handle(workflow_id, result_type=RetentionResult).result()
    finally:
        await fired.delete()
    assert set(result.pruned_ids) == seeded["prunable"]


def test_retention_input_of_an_old_schedule_keeps_its_keep_per_task() -> None:
    # schedules applied before the rename carry `keep_per_task`: it is read as `keep_per_group`
    converter = DataConverter.default.payload_converter
    old = converter.to_payloads(
        [{"dry_run": False, "policy": {"max_episode_age_days": 60, "keep_per_task": 3}}]
    )
    (params,) = converter.from_payloads(old, [RetentionInput])
    assert params.policy.keep_per_group == 3 and params.policy.max_episode_age_days == 60
    (again,) = converter.from_payloads(converter.to_payloads([params]), [RetentionInput])
    assert again == params


def test_settings_defaults_are_the_policy_defaults() -> None:
    fields = Settings.model_fields
    policy = RetentionPolicy()
    for name in ("keep_per_group", "min_retrievals", "useless_below", "useful_from", "max_inactive_age_days"):
        assert fields[f"retention_{name}"].default == getattr(policy, name), name
