"""The nightly retention's staging steps on a real Temporal dev server and real Postgres.

Staging of a task whose promotion ended more than `staging_archive_after_days` ago leaves Postgres for a
gzip JSON-lines file under the archive directory (0600), with a STAGING_ARCHIVED event naming it; tasks
still open or being promoted keep theirs.
"""

from __future__ import annotations

import asyncio
import hashlib
import stat
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio.client import Client
from temporalio.testing import ActivityEnvironment

from activities.retention import ArchiveInput, RetentionActivities
from governance.scopes import ActorType, EntryKind
from governance.staging import EntryDraft, public_task_id
from governance.staging_archive import ArchivedEntry, decode_chunk
from governance.storage.staging import open_task, set_task_status
from governance.storage.staging_append import append_entries
from governance.storage.staging_archive import entries_to_archive
from tests.utils.factories import make_actor, new_tenant
from tests.utils.promotion_factories import requester_for
from workflows.promotion import PromotionWorkflow
from workflows.promotion_contract import PromotionInput, PromotionState, Verification, workflow_id_for
from workflows.retention import RetentionInput, RetentionResult, RetentionWorkflow

LONG_AGO = timedelta(days=45)


async def _task(engine: AsyncEngine, n: int = 5) -> tuple[str, str, list[ArchivedEntry]]:
    """A task of `n` entries written through the staging path (payloads, idempotency keys); its rows."""
    org, project = new_tenant()
    agent = await make_actor(engine, ActorType.AGENT, org, project)
    task, _ = await open_task(
        engine,
        task_id=f"t-{uuid.uuid4().hex[:12]}",
        org=org,
        project=project,
        worktree="main",
        description="d",
        created_by="x",
    )
    task_id = task.id  # its key: what storage and the archive name it by
    drafts = [
        EntryDraft(
            kind=EntryKind.FACT,
            content=f"fact {i}: the cache key is sha256 — ключ {i} <private>token-{i}</private>",
            payload={"n": i, "nested": {"f": 1.5}} if i % 2 else None,
            idempotency_key=f"key-{i}" if i % 3 else None,
        )
        for i in range(n)
    ]
    await append_entries(engine, task_id, agent.principal, drafts)
    async with engine.connect() as conn:
        rows = await entries_to_archive(conn, task_id, limit=1000)
    return org, task_id, rows


async def _end(engine: AsyncEngine, task_id: str, status: str, ago: timedelta = LONG_AGO) -> None:
    async with engine.begin() as conn:
        await set_task_status(conn, task_id, status)
        await conn.execute(
            text("UPDATE tasks SET ended_at = now() - CAST(:ago AS interval) WHERE id = :t"),
            {"ago": ago, "t": task_id},
        )


async def _staged(engine: AsyncEngine, task_id: str) -> int:
    async with engine.connect() as conn:
        return int(
            (
                await conn.execute(
                    text("SELECT count(*) FROM staging_entries WHERE task_id = :t"), {"t": task_id}
                )
            ).scalar_one()
        )


async def _archive_events(engine: AsyncEngine, task_id: str) -> list[dict[str, Any]]:
    async with engine.connect() as conn:
        rows = await conn.execute(
            text(
                "SELECT payload FROM memory_events WHERE task_id = :t AND event_type = 'STAGING_ARCHIVED' "
                "ORDER BY id"
            ),
            {"t": task_id},
        )
        return [dict(r.payload) for r in rows]


async def _wait_state(handle: Any, state: PromotionState) -> None:
    for _ in range(300):
        if (await handle.query(PromotionWorkflow.state)).state == state:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"the promotion never reached {state}")


async def _retention(client: Client, queue: str, org: str, *, dry_run: bool = False) -> RetentionResult:
    return await client.execute_workflow(
        RetentionWorkflow.run,
        RetentionInput(dry_run=dry_run, orgs=[org]),
        id=f"retention-{uuid.uuid4()}",
        task_queue=queue,
    )


async def test_staging_archive_round_trips_deleted_rows_and_reruns_as_noop(
    local_env: Any, engine: AsyncEngine, make_worker: Any, task_queue: str, settings: Any
) -> None:
    org, task_id, rows = await _task(engine)
    await _end(engine, task_id, "promoted")
    client: Client = local_env.client
    async with make_worker(client, task_queue):
        preview = await _retention(client, task_queue, org, dry_run=True)
        assert (preview.archived_tasks, preview.archived_entries) == (1, 5)
        assert await _staged(engine, task_id) == 5  # a dry run writes nothing
        result = await _retention(client, task_queue, org)
        again = await _retention(client, task_queue, org)
    assert (result.archived_tasks, result.archived_entries) == (1, 5)
    assert (again.archived_tasks, again.archived_entries) == (0, 0)
    assert await _staged(engine, task_id) == 0
    (path,) = [Path(p) for p in result.archive_files]
    assert path.is_relative_to(settings.archive_dir())
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    data = path.read_bytes()
    assert list(decode_chunk(data)) == rows  # the raw rows, unredacted, payload text as stored
    (event,) = await _archive_events(engine, task_id)
    assert event["path"] == str(path) and event["count"] == 5
    assert event["sha256"] == hashlib.sha256(data).hexdigest()
    async with engine.connect() as conn:
        keys = (
            await conn.execute(
                text("SELECT count(*) FROM staging_idempotency WHERE task_id = :t"), {"t": task_id}
            )
        ).scalar_one()
    assert keys == 0


async def test_staging_archive_leaves_tasks_not_ended_or_ended_recently(
    local_env: Any, engine: AsyncEngine, make_worker: Any, task_queue: str
) -> None:
    org, open_task_id, _ = await _task(engine)
    await _end(engine, open_task_id, "open")  # never promoted, however old its entries
    async with engine.begin() as conn:
        await conn.execute(
            text("UPDATE staging_entries SET created_at = now() - interval '200 days' WHERE task_id = :t"),
            {"t": open_task_id},
        )
    _, recent_task_id, _ = await _task(engine)
    async with engine.begin() as conn:
        await conn.execute(text("UPDATE tasks SET org = :o WHERE id = :t"), {"o": org, "t": recent_task_id})
    await _end(engine, recent_task_id, "rejected", ago=timedelta(days=3))
    client: Client = local_env.client
    async with make_worker(client, task_queue):
        result = await _retention(client, task_queue, org)
    assert result.archived_entries == 0
    assert await _staged(engine, open_task_id) == 5 and await _staged(engine, recent_task_id) == 5


async def test_staging_archive_leaves_a_running_promotion_alone(
    local_env: Any, engine: AsyncEngine, make_worker: Any, task_queue: str
) -> None:
    # an earlier promotion of this task failed long ago; a new one is now waiting for approval
    org, task_id, _ = await _task(engine)
    await _end(engine, task_id, "failed")
    client: Client = local_env.client
    async with make_worker(client, task_queue):
        handle = await client.start_workflow(
            PromotionWorkflow.run,
            PromotionInput(
                task_id,
                "project",
                verification=Verification("tests_passed", True),
                requested_by=await requester_for(engine, task_id),
            ),
            id=workflow_id_for(task_id),
            task_queue=task_queue,
        )
        try:
            await _wait_state(handle, PromotionState.AWAITING_APPROVAL)
            result = await _retention(client, task_queue, org)
        finally:
            await handle.terminate("test over")
    assert result.archived_entries == 0
    assert await _staged(engine, task_id) == 5
    assert await _archive_events(engine, task_id) == []


async def test_staging_archive_retry_resumes_after_committed_chunks(
    engine: AsyncEngine, tmp_path: Path
) -> None:
    org, task_id, rows = await _task(engine, n=7)
    await _end(engine, task_id, "unverified")
    acts = RetentionActivities(engine, archive_dir=tmp_path, archive_chunk=3)
    # the third chunk's file cannot be written (a directory sits at its name): the attempt fails there
    blocker = tmp_path / org / public_task_id(task_id) / f"{7:012d}-{7:012d}.jsonl.gz"
    blocker.mkdir(parents=True)
    step = ArchiveInput(now=datetime.now(UTC), dry_run=False, orgs=[org])
    env = ActivityEnvironment()
    try:
        await env.run(acts.archive_staging, step)
        raise AssertionError("the blocked chunk should have failed the attempt")
    except OSError:
        pass
    assert await _staged(engine, task_id) == 1  # two chunks committed, the third rolled back
    blocker.rmdir()
    retried = await env.run(acts.archive_staging, step)
    assert (retried.tasks, retried.entries) == (1, 1)
    events = await _archive_events(engine, task_id)
    assert [(e["first_seq"], e["last_seq"]) for e in events] == [(1, 3), (4, 6), (7, 7)]
    archived = [e for event in events for e in decode_chunk(Path(event["path"]).read_bytes())]
    assert archived == rows and await _staged(engine, task_id) == 0


async def test_promotion_end_without_publication_is_recorded_on_the_task(
    ts_env: Any, engine: AsyncEngine, make_worker: Any, task_queue: str
) -> None:
    # no verification before the timeout: the promotion ends `unverified`, and the archive may take it later
    _, task_id, _ = await _task(engine)
    client: Client = ts_env.client
    async with make_worker(client, task_queue):
        result = await client.execute_workflow(
            PromotionWorkflow.run,
            PromotionInput(
                task_id, "task", verify_timeout_seconds=60, requested_by=await requester_for(engine, task_id)
            ),
            id=workflow_id_for(task_id),
            task_queue=task_queue,
        )
    assert result.state == PromotionState.UNVERIFIED
    async with engine.connect() as conn:
        row = (
            await conn.execute(text("SELECT status, ended_at FROM tasks WHERE id = :t"), {"t": task_id})
        ).one()
    assert row.status == "unverified" and row.ended_at is not None
