"""End-to-end promotions on a real Temporal test server and the real database."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio.client import WorkflowUpdateFailedError
from temporalio.common import WorkflowIDConflictPolicy

from governance.scopes import ActorType
from tests.utils.factories import make_actor, new_tenant
from tests.utils.promotion_factories import Entry, StagedTask, active_memories, events_of, make_task
from workflows.approval import AUDITED_SIGNAL_REFUSALS
from workflows.promotion import PromotionWorkflow
from workflows.promotion_contract import (
    ApprovalRequest,
    PromotionInput,
    PromotionResult,
    PromotionState,
    PromotionStatus,
    Verification,
    workflow_id_for,
)

TASK_ENTRIES = [
    Entry("thought", "Need a Postgres driver that supports async."),
    Entry("decision", "db.driver: psycopg 3 with the async API", {"key": "db.driver"}),
    Entry("fact", "The CI runners have two CPU cores and 7 GB of memory."),
    Entry("error", "ImportError: no module named psycopg2"),
    Entry("result", "Switched the import to psycopg; all tests pass.", {"repeatable": True}),
]


async def _start(client: Any, task: StagedTask, queue: str, **kwargs: Any) -> Any:
    return await client.start_workflow(
        PromotionWorkflow.run,
        PromotionInput(task_id=task.task_id, requested_by=task.requested_by, **kwargs),
        id=workflow_id_for(task.task_id),
        task_queue=queue,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
    )


async def test_promotion_task_scope_publishes_without_approval(
    ts_env: Any, engine: AsyncEngine, make_worker: Any, task_queue: str
) -> None:
    org, project = new_tenant()
    task = await make_task(engine, org, project, TASK_ENTRIES, description="pick the async db driver")
    client = ts_env.client
    async with make_worker(client, task_queue):
        handle = await _start(
            client,
            task,
            task_queue,
            target_scope="task",
            verification=Verification("tests_passed", True),
        )
        result: PromotionResult = await handle.result()
    assert result.state == PromotionState.PUBLISHED
    published = await active_memories(engine, task_id=task.task_id)
    types = sorted(m.memory_type for m in published)
    assert "episode" in types and "fact" in types and "bug_pattern" in types and "skill" in types
    assert all(m.scope_key == f"task:{task.task_id}" for m in published)
    driver = next(m for m in published if m.canonical_key == "db.driver")
    # 0.6 verified + 0.2 tests_passed, stopped at the unreviewed ceiling: the task's own evidence
    assert driver.confidence == pytest.approx(0.75)
    assert task.entry_ids[1] in driver.source_entry_ids  # provenance: the decision entry
    events = await events_of(engine, task.task_id)
    assert {e.event_type for e in events} >= {"PROMOTED", "PROMOTION"}
    assert not any(e.event_type == "APPROVED" for e in events)


async def test_promotion_second_start_returns_running_workflow(
    ts_env: Any, engine: AsyncEngine, make_worker: Any, task_queue: str
) -> None:
    org, project = new_tenant()
    task = await make_task(engine, org, project, TASK_ENTRIES)
    client = ts_env.client
    # A worker runs it to its end: a workflow left waiting or terminated mid-task can hold the test server's
    # time-skipping lock for every later test. With no evidence it waits for `verify`.
    async with make_worker(client, task_queue):
        first = await _start(client, task, task_queue, target_scope="task")
        await _wait_state(first, PromotionState.AWAITING_VERIFICATION)
        second = await _start(client, task, task_queue, target_scope="task")
        assert second.result_run_id == first.result_run_id
        await first.signal("verify", Verification("tests_passed", True))
        result: PromotionResult = await first.result()
    assert result.state == PromotionState.PUBLISHED


async def test_promotion_project_scope_waits_and_human_approval_publishes(
    ts_env: Any, engine: AsyncEngine, make_worker: Any, task_queue: str
) -> None:
    org, project = new_tenant()
    human = await make_actor(engine, ActorType.HUMAN, org, project)
    task = await make_task(engine, org, project, TASK_ENTRIES, description="pick the async db driver")
    client = ts_env.client
    async with make_worker(client, task_queue):
        handle = await _start(
            client,
            task,
            task_queue,
            target_scope="project",
            verification=Verification("pr_merged", True),
        )
        status = await _wait_state(handle, PromotionState.AWAITING_APPROVAL)
        # the workflow's state holds kinds, decisions and ids, never a key, title or text (docs/privacy.md)
        assert any(p.decision == "new" for p in status.plan)
        assert all(p.canonical_key is None and p.title == "" and p.content == "" for p in status.plan)
        assert await active_memories(engine, task_id=task.task_id) == []
        await handle.signal("approve", ApprovalRequest(approver=human.principal.id, note="looks right"))
        result: PromotionResult = await handle.result()
    assert result.state == PromotionState.PUBLISHED and result.decided_by == human.principal.id
    published = await active_memories(engine, task_id=task.task_id)
    assert published and all(m.scope_key == f"project:{org}/{project}" for m in published)
    # 0.6 verified + 0.3 pr_merged + 0.4 human_approved, capped; the human's approval is the last validation
    assert all(m.confidence == pytest.approx(1.0) for m in published)
    assert {m.validation_source for m in published} == {"human_approved"}
    approved = [e for e in await events_of(engine, task.task_id) if e.event_type == "APPROVED"]
    assert len(approved) == 1 and approved[0].actor_id == human.principal.id


async def test_promotion_agent_approval_is_refused_and_keeps_waiting(
    ts_env: Any, engine: AsyncEngine, make_worker: Any, task_queue: str
) -> None:
    org, project = new_tenant()
    agent = await make_actor(engine, ActorType.AGENT, org, project)
    human = await make_actor(engine, ActorType.HUMAN, org, project)
    task = await make_task(engine, org, project, TASK_ENTRIES)
    client = ts_env.client
    async with make_worker(client, task_queue):
        handle = await _start(
            client,
            task,
            task_queue,
            target_scope="project",
            verification=Verification("tests_passed", True),
        )
        await _wait_state(handle, PromotionState.AWAITING_APPROVAL)
        await handle.signal("approve", ApprovalRequest(approver=agent.principal.id))
        await handle.signal("approve", ApprovalRequest(approver="nobody-at-all"))
        with pytest.raises(WorkflowUpdateFailedError):
            await handle.execute_update("approve", ApprovalRequest(approver=agent.principal.id))
        status: PromotionStatus = await handle.query(PromotionWorkflow.state)
        assert status.state == PromotionState.AWAITING_APPROVAL
        assert len(status.refusals) == 3
        assert await active_memories(engine, task_id=task.task_id) == []
        await handle.signal("reject", ApprovalRequest(approver=human.principal.id, note="not now"))
        result: PromotionResult = await handle.result()
    assert result.state == PromotionState.REJECTED
    assert await active_memories(engine, task_id=task.task_id) == []
    refusals = [e for e in await events_of(engine, task.task_id) if e.event_type == "REJECTED"]
    assert len(refusals) == 4  # three refused approvals and the human's rejection


async def test_promotion_approval_timeout_rejects_and_publishes_nothing(
    ts_env: Any, engine: AsyncEngine, make_worker: Any, task_queue: str
) -> None:
    org, project = new_tenant()
    task = await make_task(engine, org, project, TASK_ENTRIES)
    client = ts_env.client
    async with make_worker(client, task_queue):
        handle = await _start(
            client,
            task,
            task_queue,
            target_scope="project",
            verification=Verification("tests_passed", True),
            approval_timeout_seconds=timedelta(days=3).total_seconds(),
        )
        result: PromotionResult = await handle.result()  # the test server skips the three days
    assert result.state == PromotionState.REJECTED and result.reason == "approval timed out"
    assert await active_memories(engine, task_id=task.task_id) == []


async def test_promotion_verification_timeout_publishes_nothing(
    ts_env: Any, engine: AsyncEngine, make_worker: Any, task_queue: str
) -> None:
    org, project = new_tenant()
    task = await make_task(engine, org, project, TASK_ENTRIES)
    client = ts_env.client
    async with make_worker(client, task_queue):
        handle = await _start(client, task, task_queue, target_scope="task", verify_timeout_seconds=3600.0)
        result: PromotionResult = await handle.result()
    assert result.state == PromotionState.UNVERIFIED
    assert await active_memories(engine, task_id=task.task_id) == []
    assert await events_of(engine, task.task_id) == []


async def test_promotion_failed_verification_publishes_no_skill_or_fact(
    ts_env: Any, engine: AsyncEngine, make_worker: Any, task_queue: str
) -> None:
    org, project = new_tenant()
    task = await make_task(engine, org, project, TASK_ENTRIES + [Entry("skill", "Run pytest -x first.")])
    client = ts_env.client
    async with make_worker(client, task_queue):
        handle = await _start(client, task, task_queue, target_scope="project")
        await _wait_state(handle, PromotionState.AWAITING_VERIFICATION)
        await handle.execute_update("verify", Verification("tests_passed", False))
        result: PromotionResult = await handle.result()
    assert result.state == PromotionState.UNVERIFIED
    published = await active_memories(engine, task_id=task.task_id)
    # only the Reflexion episode of the failure, as a task-scope draft
    assert [m.memory_type for m in published] == ["episode"]
    assert published[0].success is False and published[0].confidence == pytest.approx(0.3)
    assert published[0].scope_key == f"task:{task.task_id}"


async def _wait_state(handle: Any, state: str, attempts: int = 600) -> PromotionStatus:
    """Poll the `state` query (the test server does not skip time while we poll, so sleep for real)."""
    import asyncio

    status: PromotionStatus | None = None
    for _ in range(attempts):
        status = await handle.query(PromotionWorkflow.state)
        if status.state == state:
            return status
        await asyncio.sleep(0.1)
    raise AssertionError(f"promotion never reached {state}; last status {status}")


async def test_promotion_episodes_of_two_tasks_both_stay_active(
    ts_env: Any, engine: AsyncEngine, make_worker: Any, task_queue: str
) -> None:
    # Two runs of the same job in one worktree: their facts merge, their episodes are two records.
    org, project = new_tenant()
    first = await make_task(engine, org, project, TASK_ENTRIES, description="pick the async db driver")
    second = await make_task(engine, org, project, TASK_ENTRIES, description="pick the async db driver")
    client = ts_env.client
    async with make_worker(client, task_queue):
        for task in (first, second):
            handle = await _start(
                client,
                task,
                task_queue,
                target_scope="worktree",
                verification=Verification("tests_passed", True),
            )
            assert (await handle.result()).state == PromotionState.PUBLISHED
    active = await active_memories(engine, scope_key=f"worktree:{org}/{project}/main")
    episodes = [m for m in active if m.memory_type == "episode"]
    assert sorted(m.source_task_ids[0] for m in episodes) == sorted([first.task_id, second.task_id])
    facts = [m for m in active if m.memory_type == "fact" and m.canonical_key == "db.driver"]
    assert len(facts) == 1 and set(facts[0].source_task_ids) == {first.task_id, second.task_id}


async def test_promotion_unreadable_signal_is_refused_and_keeps_waiting(
    ts_env: Any, engine: AsyncEngine, make_worker: Any, task_queue: str
) -> None:
    org, project = new_tenant()
    human = await make_actor(engine, ActorType.HUMAN, org, project)
    task = await make_task(engine, org, project, TASK_ENTRIES)
    client = ts_env.client
    async with make_worker(client, task_queue):
        handle = await _start(
            client,
            task,
            task_queue,
            target_scope="project",
            verification=Verification("tests_passed", True),
        )
        await _wait_state(handle, PromotionState.AWAITING_APPROVAL)
        # what `temporal workflow signal --input '[1,2,3]'` (or '"x"', '{}') sends
        await handle.signal("approve", [1, 2, 3])
        await handle.signal("reject", "x")
        await handle.signal("approve", {})
        status: PromotionStatus = await handle.query(PromotionWorkflow.state)
        for _ in range(100):
            if len(status.refusals) == 3:
                break
            status = await handle.query(PromotionWorkflow.state)
        assert status.state == PromotionState.AWAITING_APPROVAL
        assert [(r.decision, r.channel) for r in status.refusals] == [
            ("approve", "signal"),
            ("reject", "signal"),
            ("approve", "signal"),
        ]
        assert all(r.reason.startswith("unreadable input") for r in status.refusals)
        await handle.signal("reject", ApprovalRequest(approver=human.principal.id, note="not now"))
        result: PromotionResult = await handle.result()
    assert result.state == PromotionState.REJECTED
    assert await active_memories(engine, task_id=task.task_id) == []
    # the audit trail holds them too, as it holds the approver check's refusals: nobody verified, unchecked
    rejected = [e for e in await events_of(engine, task.task_id) if e.event_type == "REJECTED"]
    refused = [e for e in rejected if (e.payload or {}).get("refused_approval")]
    # each signal's handler records its refusal by its own local activity: the rows' order is theirs
    assert sorted((e.payload["decision"], e.payload["channel"], e.payload["checked"]) for e in refused) == [
        ("approve", "signal", False),
        ("approve", "signal", False),
        ("reject", "signal", False),
    ]
    assert all(e.reason.startswith(f"{e.payload['decision']} refused: unreadable input") for e in refused)
    assert all(e.actor_id is None and e.actor_type is None for e in refused)
    assert {e.workflow_id for e in refused} == {workflow_id_for(task.task_id)}
    assert len(rejected) == 4  # and the human's rejection


async def test_a_flood_of_refused_signals_is_recorded_up_to_its_bound(
    ts_env: Any, engine: AsyncEngine, make_worker: Any, task_queue: str
) -> None:
    org, project = new_tenant()
    human = await make_actor(engine, ActorType.HUMAN, org, project)
    task = await make_task(engine, org, project, TASK_ENTRIES)
    client = ts_env.client
    flood = AUDITED_SIGNAL_REFUSALS + 5
    async with make_worker(client, task_queue):
        handle = await _start(
            client, task, task_queue, target_scope="project", verification=Verification("tests_passed", True)
        )
        await _wait_state(handle, PromotionState.AWAITING_APPROVAL)
        await asyncio.gather(*(handle.signal("approve", n) for n in range(flood)))
        status: PromotionStatus = await handle.query(PromotionWorkflow.state)
        for _ in range(300):
            if len(status.refusals) == flood:
                break
            await asyncio.sleep(0.1)
            status = await handle.query(PromotionWorkflow.state)
        assert len(status.refusals) == flood and status.state == PromotionState.AWAITING_APPROVAL
        await handle.signal("reject", ApprovalRequest(approver=human.principal.id, note="enough"))
        result: PromotionResult = await handle.result()
    assert result.state == PromotionState.REJECTED  # every refusal in the state, the bound in the table
    rejected = [e for e in await events_of(engine, task.task_id) if e.event_type == "REJECTED"]
    assert sum(1 for e in rejected if (e.payload or {}).get("checked") is False) == AUDITED_SIGNAL_REFUSALS


async def test_promotion_untimely_and_unknown_signals_are_refused_into_the_audit_trail(
    ts_env: Any, engine: AsyncEngine, make_worker: Any, task_queue: str
) -> None:
    # what a Temporal UI user can send while the promotion waits for its evidence: an approval (nothing to
    # approve yet) and evidence of a kind that does not exist; both were dropped without a trace before
    org, project = new_tenant()
    human = await make_actor(engine, ActorType.HUMAN, org, project)
    task = await make_task(engine, org, project, TASK_ENTRIES)
    client = ts_env.client
    async with make_worker(client, task_queue):
        handle = await _start(client, task, task_queue, target_scope="task")
        await _wait_state(handle, PromotionState.AWAITING_VERIFICATION)
        await handle.signal("approve", ApprovalRequest(approver=human.principal.id, note="early"))
        await handle.signal("verify", Verification("trust_me", True, given_by="mallory"))
        status: PromotionStatus = await handle.query(PromotionWorkflow.state)
        for _ in range(100):
            if len(status.refusals) == 2:
                break
            await asyncio.sleep(0.1)
            status = await handle.query(PromotionWorkflow.state)
        assert status.state == PromotionState.AWAITING_VERIFICATION and status.verification is None
        assert [(r.decision, r.channel, r.reason) for r in status.refusals] == [
            ("approve", "signal", "not awaiting approval"),
            ("verify", "signal", "unknown validation source 'trust_me'"),
        ]
        await handle.signal("verify", Verification("tests_passed", True))
        result: PromotionResult = await handle.result()
    assert result.state == PromotionState.PUBLISHED  # the refusals changed nothing of the run
    rejected = [e for e in await events_of(engine, task.task_id) if e.event_type == "REJECTED"]
    assert sorted((e.actor_id, e.reason, e.payload["channel"], e.payload["checked"]) for e in rejected) == [
        (human.principal.id, "approve refused: not awaiting approval", "signal", False),
        ("mallory", "verify refused: unknown validation source 'trust_me'", "signal", False),
    ]
    assert [e.payload.get("refused") for e in rejected if e.actor_id == "mallory"] == ["verify"]


async def test_promotion_unreadable_and_late_verify_signals_are_refused_into_the_audit_trail(
    ts_env: Any, engine: AsyncEngine, make_worker: Any, task_queue: str
) -> None:
    # `temporal workflow signal --name verify --input '[1,2,3]'` was dropped by the SDK with a log line, and
    # evidence sent once evidence was in vanished silently; both are refusals on the record now
    org, project = new_tenant()
    human = await make_actor(engine, ActorType.HUMAN, org, project)
    task = await make_task(engine, org, project, TASK_ENTRIES)
    client = ts_env.client
    async with make_worker(client, task_queue):
        handle = await _start(client, task, task_queue, target_scope="project")
        await _wait_state(handle, PromotionState.AWAITING_VERIFICATION)
        await handle.signal("verify", [1, 2, 3])
        await handle.signal("verify", Verification("tests_passed", True, given_by="orchestrator-1"))
        await _wait_state(handle, PromotionState.AWAITING_APPROVAL)
        await handle.signal("verify", Verification("pr_merged", False, given_by="mallory"))
        status: PromotionStatus = await handle.query(PromotionWorkflow.state)
        for _ in range(100):
            if len(status.refusals) == 2:
                break
            await asyncio.sleep(0.1)
            status = await handle.query(PromotionWorkflow.state)
        assert [(r.approver, r.decision, r.channel) for r in status.refusals] == [
            ("", "verify", "signal"),
            ("mallory", "verify", "signal"),
        ]
        assert status.refusals[0].reason.startswith('unreadable input, expected {"source"')
        assert status.refusals[1].reason == "verification already given"
        assert status.verification is not None and status.verification.source == "tests_passed"
        await handle.signal("reject", ApprovalRequest(approver=human.principal.id, note="not now"))
        result: PromotionResult = await handle.result()
    assert result.state == PromotionState.REJECTED
    rejected = [e for e in await events_of(engine, task.task_id) if e.event_type == "REJECTED"]
    verify = sorted(
        (e.actor_id or "", e.reason, e.payload["checked"])
        for e in rejected
        if (e.payload or {}).get("refused") == "verify"
    )
    assert len(verify) == 2
    assert verify[0][0] == "" and verify[0][1].startswith("verify refused: unreadable input")
    assert verify[1] == ("mallory", "verify refused: verification already given", False)
