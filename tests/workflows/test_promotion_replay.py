"""Replay of PromotionWorkflow histories: a change to the workflow that breaks running promotions fails here.

Two halves:
- every path a promotion can take is run now on the time-skipping server and its fresh history replayed
  (catches non-determinism inside one version of the code, e.g. a wall clock or a set iteration);
- histories committed under tests/data/histories/ are replayed against today's code (catches a change
  that would break promotions started by the previous release — the ones still waiting for approval).

A deliberate, versioned change (`workflow.patched`) regenerates the committed files:

    LOREGATE_REGENERATE_HISTORIES=1 pytest -p no:cacheprovider tests/workflows/test_promotion_replay.py

and the new JSON files are reviewed and committed with the change.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio.client import Client, WorkflowHandle, WorkflowHistory
from temporalio.worker import Replayer

from governance.scopes import ActorType
from tests.conftest import repo_root
from tests.utils.factories import make_actor, new_tenant
from tests.utils.promotion_factories import Entry, make_task
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

HISTORIES = repo_root() / "tests" / "data" / "histories"
REGENERATE = os.environ.get("LOREGATE_REGENERATE_HISTORIES") == "1"

# a few entries are enough: the history carries ids, counts and the first plan items, not the plan
ENTRIES = [
    Entry("decision", "db.driver: psycopg 3 with the async API", {"key": "db.driver"}),
    Entry("error", "ImportError: no module named psycopg2"),
    Entry("result", "Switched the import to psycopg; all tests pass."),
]

Drive = Callable[[WorkflowHandle[Any, Any], dict[str, str]], Awaitable[None]]


async def _wait_state(handle: WorkflowHandle[Any, Any], state: str) -> None:
    for _ in range(600):
        status: PromotionStatus = await handle.query(PromotionWorkflow.state)
        if status.state == state:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"promotion never reached {state}")


async def _nothing(handle: WorkflowHandle[Any, Any], who: dict[str, str]) -> None:
    """The start input carries everything (verification, or a timeout the server skips)."""


async def _verify_by_signal_then_approve(handle: WorkflowHandle[Any, Any], who: dict[str, str]) -> None:
    await _wait_state(handle, PromotionState.AWAITING_VERIFICATION)
    await handle.signal("verify", Verification("pr_merged", True))
    await _wait_state(handle, PromotionState.AWAITING_APPROVAL)
    await handle.signal("approve", ApprovalRequest(approver=who["human"], note="looks right"))


async def _reject(handle: WorkflowHandle[Any, Any], who: dict[str, str]) -> None:
    await _wait_state(handle, PromotionState.AWAITING_APPROVAL)
    await handle.signal("reject", ApprovalRequest(approver=who["human"], note="not this one"))


async def _refused_then_approved(handle: WorkflowHandle[Any, Any], who: dict[str, str]) -> None:
    await _wait_state(handle, PromotionState.AWAITING_APPROVAL)
    await handle.signal("approve", ApprovalRequest(approver=who["agent"]))  # agents may not approve
    await handle.signal("approve", ApprovalRequest(approver="nobody-at-all"))
    await handle.execute_update("approve", ApprovalRequest(approver=who["human"], note="by the API"))


async def _items_refused_then_approved_with_items(
    handle: WorkflowHandle[Any, Any], who: dict[str, str]
) -> None:
    """The Temporal UI's per-item decisions: an unknown item refused, then one rejected and one edited."""
    await _wait_state(handle, PromotionState.AWAITING_APPROVAL)
    await handle.signal(
        "approve", {"approver": who["human"], "items": [{"index": 99, "decision": "reject", "reason": "no"}]}
    )
    await handle.signal(
        "approve",
        {
            "approver": who["human"],
            "items": [
                {"index": 1, "decision": "reject", "reason": "not worth keeping"},
                {"index": 0, "decision": "edit", "content": "db.driver: psycopg 3, async API"},
            ],
        },
    )


async def _fail_verification(handle: WorkflowHandle[Any, Any], who: dict[str, str]) -> None:
    await _wait_state(handle, PromotionState.AWAITING_VERIFICATION)
    await handle.execute_update("verify", Verification("tests_passed", False))


# name -> (start input fields, what the test does while it runs, the end state)
PASSED = Verification("tests_passed", True)
PATHS: dict[str, tuple[dict[str, Any], Drive, str]] = {
    "task_scope_published": (
        {"target_scope": "task", "verification": PASSED},
        _nothing,
        PromotionState.PUBLISHED,
    ),
    "project_verified_by_signal_approved_by_signal": (
        {"target_scope": "project"},
        _verify_by_signal_then_approve,
        PromotionState.PUBLISHED,
    ),
    "project_rejected": (
        {"target_scope": "project", "verification": PASSED},
        _reject,
        PromotionState.REJECTED,
    ),
    "project_refused_then_approved_by_update": (
        {"target_scope": "project", "verification": Verification("pr_merged", True)},
        _refused_then_approved,
        PromotionState.PUBLISHED,
    ),
    "project_approval_timed_out": (
        {"target_scope": "project", "verification": PASSED, "approval_timeout_seconds": 3 * 24 * 3600.0},
        _nothing,
        PromotionState.REJECTED,
    ),
    "unverified_timeout": (
        {"target_scope": "task", "verify_timeout_seconds": 3600.0},
        _nothing,
        PromotionState.UNVERIFIED,
    ),
    "verification_failed": ({"target_scope": "project"}, _fail_verification, PromotionState.UNVERIFIED),
    "project_items_refused_then_approved_with_items": (
        {"target_scope": "project", "verification": PASSED},
        _items_refused_then_approved_with_items,
        PromotionState.PUBLISHED,
    ),
}


def _history_file(name: str) -> Path:
    return HISTORIES / f"promotion_{name}.json"


@pytest.mark.parametrize("name", sorted(PATHS))
async def test_promotion_history_of_each_path_replays(
    name: str, ts_env: Any, engine: AsyncEngine, make_worker: Any, task_queue: str
) -> None:
    fields, drive, end_state = PATHS[name]
    org, project = new_tenant()
    human = await make_actor(engine, ActorType.HUMAN, org, project)
    agent = await make_actor(engine, ActorType.AGENT, org, project)
    task = await make_task(engine, org, project, ENTRIES, description="pick the async db driver")
    client: Client = ts_env.client
    async with make_worker(client, task_queue):
        handle = await client.start_workflow(
            PromotionWorkflow.run,
            PromotionInput(task_id=task.task_id, requested_by=task.requested_by, **fields),
            id=workflow_id_for(task.task_id),
            task_queue=task_queue,
        )
        await drive(handle, {"human": human.principal.id, "agent": agent.principal.id})
        result: PromotionResult = await handle.result()
    assert result.state == end_state

    history = await handle.fetch_history()
    replayed = await Replayer(workflows=[PromotionWorkflow]).replay_workflow(history)
    assert replayed.replay_failure is None
    if REGENERATE:
        HISTORIES.mkdir(parents=True, exist_ok=True)
        # indented so a reviewer can diff two generations of one path
        _history_file(name).write_text(json.dumps(json.loads(history.to_json()), indent=1) + "\n")


@pytest.mark.parametrize("name", sorted(PATHS))
async def test_promotion_committed_history_replays_on_current_code(name: str) -> None:
    path = _history_file(name)
    assert path.exists(), f"{path} is missing: regenerate it as the module docstring says"
    history = WorkflowHistory.from_json(f"promote-{name}", path.read_text())
    replayed = await Replayer(workflows=[PromotionWorkflow]).replay_workflow(history)
    assert replayed.replay_failure is None


def test_promotion_committed_histories_cover_every_path() -> None:
    committed = {p.name for p in HISTORIES.glob("promotion_*.json")}
    assert committed == {_history_file(name).name for name in PATHS}
