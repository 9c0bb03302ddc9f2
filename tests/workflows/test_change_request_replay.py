"""Replay of ChangeRequestWorkflow histories: a change that would break running change requests fails here.

`change_request_supersede_approved_by_signal.json` and `change_request_retire_rejected_by_update.json` were
recorded by the workflow as it was before lifts existed; `change_request_lift_approved_by_signal.json` by
the current one (a lift of two worktree memories into project scope, approved by the Temporal UI's signal).
Each replays against today's code with `temporalio.worker.Replayer`. A lift runs the same commands as a
supersede (describe, check the requester, wait, check the approver, apply), so adding it needed no
`workflow.patched` marker; a future change to the command sequence must add one and keep these passing.
"""

from __future__ import annotations

import base64
import json

import pytest
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from tests.conftest import repo_root
from workflows.change_requests import ChangeRequestWorkflow

HISTORIES = repo_root() / "tests" / "data" / "histories"
NAMES = [
    "supersede_approved_by_signal",
    "retire_rejected_by_update",
    "lift_approved_by_signal",
]


@pytest.mark.parametrize("name", NAMES)
async def test_change_request_committed_history_replays_on_current_code(name: str) -> None:
    path = HISTORIES / f"change_request_{name}.json"
    history = WorkflowHistory.from_json(f"change-{name}", path.read_text())
    replayed = await Replayer(workflows=[ChangeRequestWorkflow]).replay_workflow(history)
    assert replayed.replay_failure is None


def test_lift_history_carries_titles_and_scope_keys_not_content() -> None:
    """The recorded lift's payloads name its memories by title and its scopes, and hold no content."""
    raw = json.loads((HISTORIES / "change_request_lift_approved_by_signal.json").read_text())
    payloads: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "data" and isinstance(value, str):
                    payloads.append(base64.b64decode(value).decode("utf-8", "replace"))
                else:
                    walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(raw)
    text = "\n".join(payloads)
    assert '"lift_titles":["db.driver: psycopg 3 with the async API","cache.ttl: 300 seconds"]' in text
    assert '"target_scope_key":"project:' in text and '"lift_count":2' in text
    assert '"old_content":""' in text
