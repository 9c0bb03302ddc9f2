"""A workflow started by hand with an input its worker cannot read ends at once, failed, without retrying.

`temporal workflow start --type PromotionWorkflow --input '"x"'` (or an object missing required fields)
reaches the worker as a start whose argument does not decode into the workflow's input dataclass. It must
fail the workflow within seconds with an `UnreadableInput` failure naming the expected input, not retry its
first workflow task forever. Every workflow type the worker registers is started so, on the dev server.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass
from typing import Any

import pytest
from temporalio import workflow
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError
from temporalio.exceptions import ApplicationError
from temporalio.worker import Worker

from workflows.input_decoding import UNREADABLE_INPUT, StartArgumentsInterceptor, data_converter_for
from workflows.worker import workflow_classes

pytestmark = pytest.mark.timeout(180)

_TYPES = [getattr(cls, "__temporal_workflow_definition").name for cls in workflow_classes()]
_REQUIRED_FIELDS = {"PromotionWorkflow", "ChangeRequestWorkflow", "ReflectionWorkflow"}


async def _ends_failed(client: Client, task_queue: str, wf_type: str, *args: Any) -> ApplicationError:
    handle = await client.start_workflow(
        wf_type, args=args, id=f"raw-{wf_type}-{uuid.uuid4().hex[:8]}", task_queue=task_queue
    )
    with pytest.raises(WorkflowFailureError) as failed:
        await asyncio.wait_for(handle.result(), timeout=15)
    cause = failed.value.cause
    assert isinstance(cause, ApplicationError), cause
    # one workflow task, completed with the failure: no failed (retried) workflow task in the history
    events = [e.event_type async for e in handle.fetch_history_events()]
    assert EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED not in events
    assert EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED in events
    return cause


class _Lines(logging.Handler):
    """The records one logger emits, whatever the root logger's handlers (or another test) did."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def workflow_log_lines() -> Any:
    """What `loregate.workflows` logs during the test, caught on the logger itself: a logging setup run by
    an earlier test in the same process (a dictConfig disabling existing loggers) cannot hide it."""
    logger = logging.getLogger("loregate.workflows")
    handler, disabled, level = _Lines(), logger.disabled, logger.level
    logger.disabled = False
    logger.setLevel(logging.WARNING)
    logger.addHandler(handler)
    try:
        yield handler.records
    finally:
        logger.removeHandler(handler)
        logger.disabled, logger.level = disabled, level


async def test_every_workflow_type_fails_at_once_on_an_unreadable_input(
    local_env: Any, make_worker: Any, task_queue: str, workflow_log_lines: list[logging.LogRecord]
) -> None:
    client: Client = local_env.client
    async with make_worker(client, task_queue):
        for wf_type in _TYPES:
            cause = await _ends_failed(client, task_queue, wf_type, "x")
            assert cause.type == UNREADABLE_INPUT and cause.non_retryable
            assert "unreadable input of workflow raw-" in cause.message
            assert "Input object" in cause.message, cause.message
        for wf_type in sorted(_REQUIRED_FIELDS):
            cause = await _ends_failed(client, task_queue, wf_type, {"unexpected": 1})
            assert cause.type == UNREADABLE_INPUT, cause
    lines = [r for r in workflow_log_lines if "unreadable input" in r.getMessage()]
    assert len(lines) == len(_TYPES) + len(_REQUIRED_FIELDS)


async def test_a_start_without_input_or_with_two_fails_at_once(
    local_env: Any, make_worker: Any, task_queue: str
) -> None:
    """`temporal workflow start --type X` with no `--input` (or two) never reaches the payload converter."""
    client: Client = local_env.client
    async with make_worker(client, task_queue):
        for wf_type in _TYPES:
            cause = await _ends_failed(client, task_queue, wf_type)
            assert cause.type == UNREADABLE_INPUT and cause.non_retryable, cause
            assert f"{wf_type} takes 1 input object, the start carried 0" in cause.message
        # the three whose @workflow.init takes the input too: the instance is built from the input's default
        # (start_input_init) and the interceptor fails the start, instead of a TypeError retried forever
        for wf_type in _TYPES:
            cause = await _ends_failed(client, task_queue, wf_type, {}, {})
            assert cause.type == UNREADABLE_INPUT and cause.non_retryable, cause
            assert f"{wf_type} takes 1 input object, the start carried 2" in cause.message, cause


@pytest.mark.parametrize(
    ("wf_type", "data", "why"),
    [
        ("NotificationWorkflow", {"max_attempts": 0}, "max_attempts must be 1 to 50, not 0"),
        ("NotificationWorkflow", {"max_attempts": 10_000}, "max_attempts must be 1 to 50, not 10000"),
        ("NotificationWorkflow", {"attempt_timeout_seconds": 86_400}, "attempt_timeout_seconds must be"),
        ("NotificationWorkflow", {"first_retry_seconds": -1}, "first_retry_seconds must be above 0"),
        ("ProjectKnowledgeWorkflow", {"limit": 1_000_000}, "limit must be 1 to 100, not 1000000"),
        ("ProjectKnowledgeWorkflow", {"limit": 0}, "limit must be 1 to 100, not 0"),
        ("ProjectKnowledgeWorkflow", {"orgs": ["o"] * 1001}, "orgs names at most 1000 orgs, not 1001"),
    ],
)
async def test_a_raw_start_asking_beyond_the_bounds_fails_at_once(
    local_env: Any, make_worker: Any, task_queue: str, wf_type: str, data: dict[str, Any], why: str
) -> None:
    """`temporal workflow start` with 0 delivery tries (Temporal's "unlimited": a webhook posted to without
    end) or a million entries per knowledge list: refused like an unreadable input, before any activity."""
    client: Client = local_env.client
    async with make_worker(client, task_queue):
        cause = await _ends_failed(client, task_queue, wf_type, data)
    assert cause.type == UNREADABLE_INPUT and cause.non_retryable, cause
    assert why in cause.message, cause.message


async def test_a_readable_input_still_runs(local_env: Any, make_worker: Any, task_queue: str) -> None:
    """The strict converter changes nothing for a readable start (here a dry-run retention over no org)."""
    client: Client = local_env.client
    async with make_worker(client, task_queue):
        result = await client.execute_workflow(
            "RetentionWorkflow",
            {"dry_run": True, "orgs": [f"none-{uuid.uuid4().hex[:6]}"]},
            id=f"raw-ok-{uuid.uuid4().hex[:8]}",
            task_queue=task_queue,
            result_type=dict,
        )
    assert result["dry_run"] is True and result["pruned"] == 0


@dataclass(frozen=True)
class _BugInput:
    n: int


@workflow.defn(name="LoregateBuggyWorkflow", sandboxed=False)
class _BuggyWorkflow:
    """Reads its input fine, then hits a code bug: that task must still fail and retry (a fix resumes)."""

    @workflow.run
    async def run(self, data: _BugInput) -> int:
        return len(data.n)  # type: ignore[arg-type]  # the bug: TypeError


async def test_a_code_bug_after_a_readable_input_still_retries_the_task(
    local_env: Any, task_queue: str
) -> None:
    base: Client = local_env.client
    config = base.config()
    config["data_converter"] = data_converter_for(config["data_converter"], [_BuggyWorkflow])
    client = Client(**config)
    worker = Worker(
        client,
        task_queue=task_queue,
        workflows=[_BuggyWorkflow],
        interceptors=[StartArgumentsInterceptor()],
    )
    async with worker:
        handle = await client.start_workflow(
            _BuggyWorkflow.run, _BugInput(1), id=f"bug-{uuid.uuid4().hex[:8]}", task_queue=task_queue
        )
        for _ in range(50):
            events = [e.event_type async for e in handle.fetch_history_events()]
            if EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED in events:
                break
            await asyncio.sleep(0.2)
        assert EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED in events
        assert (await handle.describe()).status == WorkflowExecutionStatus.RUNNING
        await handle.terminate("test over")
