"""Deleting workflow histories from Temporal: what erasure does to every workflow involved in what it takes.

A history may hold what a workflow showed while it ran (titles, a critique, an approval note). Erasure cannot
rewrite a history, so it deletes it: Temporal's DeleteWorkflowExecution terminates a running workflow first
(a change request still waiting for a human, a promotion still waiting for evidence) and removes its history
and visibility record. A workflow Temporal no longer knows counts as already gone.
"""

from __future__ import annotations

import asyncio
import logging
import time

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.workflowservice.v1 import (
    DeleteWorkflowExecutionRequest,
    DescribeWorkflowExecutionRequest,
    GetWorkflowExecutionHistoryRequest,
)
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

__all__ = ["delete_histories", "GONE_WAIT_SECONDS"]

_log = logging.getLogger(__name__)

# Temporal deletes a history in the background after accepting the request: erasure waits this long for
# each to be gone, so the compaction an operator runs next finds nothing left to delete
GONE_WAIT_SECONDS = 30.0


async def delete_histories(client: Client, workflow_ids: list[str]) -> list[str]:
    """Delete the histories of `workflow_ids` (every run); the ids Temporal still held.

    Raises `RPCError` when Temporal cannot be reached or refuses: the caller then changes nothing else.
    """
    deleted: list[str] = []
    runs_deleted: list[tuple[str, str]] = []
    for workflow_id in workflow_ids:
        # every run (a failed promotion may have been started again), and the current one by id alone in
        # case visibility has not caught up with it
        runs = [w.run_id async for w in client.list_workflows(f'WorkflowId = "{_quoted(workflow_id)}"')]
        for run_id in ["", *runs]:
            if await _delete(client, workflow_id, run_id):
                runs_deleted.append((workflow_id, run_id))
        if any(w == workflow_id for w, _ in runs_deleted):
            deleted.append(workflow_id)
    await _until_gone(client, runs_deleted, GONE_WAIT_SECONDS)
    return deleted


async def _until_gone(client: Client, runs: list[tuple[str, str]], wait: float) -> None:
    """Wait (up to `wait` seconds) until Temporal describes none of `runs` (workflow id, run id; an empty run
    id is the current run): every run deleted, not only the current one, since any of them may hold text."""
    deadline = time.monotonic() + wait
    pending = list(runs)
    while pending and time.monotonic() < deadline:
        still = []
        for workflow_id, run_id in pending:
            if not await _still_held(client, workflow_id, run_id):
                continue
            still.append((workflow_id, run_id))
        pending = still
        if pending:
            await asyncio.sleep(0.2)
    if pending:
        _log.warning(
            "Temporal still describes %d deleted run(s) after %.0f s: %s",
            len(pending),
            wait,
            ", ".join(f"{w}/{r or 'current'}" for w, r in pending),
        )


async def _still_held(client: Client, workflow_id: str, run_id: str) -> bool:
    """Whether Temporal still holds anything of one run. Deletion takes the run's state first (describe
    answers NOT_FOUND), its history and visibility record after, in the background: all three are asked
    (visibility for a named run; the current run's id may have a later run listed)."""
    execution = WorkflowExecution(workflow_id=workflow_id, run_id=run_id)
    try:
        await client.workflow_service.describe_workflow_execution(
            DescribeWorkflowExecutionRequest(namespace=client.namespace, execution=execution)
        )
        return True
    except RPCError as err:
        if err.status != RPCStatusCode.NOT_FOUND:
            raise
    try:
        await client.workflow_service.get_workflow_execution_history(
            GetWorkflowExecutionHistoryRequest(namespace=client.namespace, execution=execution)
        )
        return True
    except RPCError as err:
        if err.status != RPCStatusCode.NOT_FOUND:
            raise
    if not run_id:
        return False
    async for listed in client.list_workflows(f'WorkflowId = "{_quoted(workflow_id)}"'):
        if listed.run_id == run_id:
            return True
    return False


def _quoted(workflow_id: str) -> str:
    """`workflow_id` inside a double-quoted visibility query literal."""
    return workflow_id.replace("\\", "\\\\").replace('"', '\\"')


async def _delete(client: Client, workflow_id: str, run_id: str) -> bool:
    """Delete one run (`run_id` empty: the current one); False if Temporal did not hold it."""
    try:
        await client.workflow_service.delete_workflow_execution(
            DeleteWorkflowExecutionRequest(
                namespace=client.namespace,
                workflow_execution=WorkflowExecution(workflow_id=workflow_id, run_id=run_id),
            )
        )
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            return False
        raise
    return True
