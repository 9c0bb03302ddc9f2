"""Erasure reaches everything: one canary planted through every writable field, then nowhere to be found.

`loregate up` runs the README's way (a subprocess on its own data dir). The canary goes into a task's
description, its staging entries, an approach and its failure reason, a promotion's approval note, a
validation reason, a code-rule observation note, a supersede request (content, title, reason) and a lift
request's reason, through HTTP (entries through gRPC's `AppendEntries` too); the promotion is approved and
published. Temporal's histories are read through Temporal's API before the erasure: they never held it
(ids, counts and states only). Then `POST /v1/erasures` takes the subject, the operator runs the
documented clean-up (`loregate erase compact`), and a full `pg_dumpall`, every Temporal history (list +
fetch), every byte of the data dir (Postgres' files and WAL, `temporal.db`, the logs) and the supervisor's
output hold no canary.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import string
import subprocess
import time
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from temporalio.client import Client

from api.grpc.proto import pb2, pb2_grpc
from tests.utils.cli import KEY_PATTERN, UpLauncher, UpProcess, cli_env, run_cli
from tests.utils.grpc_gateway import bearer

pytestmark = pytest.mark.timeout(1200)


def _canary() -> str:
    # letters only: nothing a secret scanner would redact (the test wants it stored everywhere it can be)
    return "canary" + "".join(random.choice(string.ascii_lowercase) for _ in range(12))


def _key(data_dir: Path, actor: str, name: str) -> str:
    created = run_cli(
        "keys", "create", "--actor", actor, "--org", "acme", "--project", "demo", "--name", name,
        env=cli_env(LOREGATE_DATA_DIR=str(data_dir)),
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    found = KEY_PATTERN.search(created.stdout)
    assert found is not None, created.stdout
    return found.group()


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _wait_state(http: httpx.Client, key: str, task_id: str, state: str) -> dict[str, Any]:
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        answer = http.get(f"/v1/promotions/{task_id}", headers=_auth(key))
        if answer.status_code == 200 and answer.json()["state"] == state:
            return dict(answer.json())
        time.sleep(0.5)
    raise AssertionError(f"promotion of {task_id} never reached {state}: {answer.text}")


async def _histories(up: UpProcess) -> dict[str, bytes]:
    """Every workflow's description and full history, through Temporal's API."""
    client = await Client.connect(f"127.0.0.1:{up.temporal_port}")
    found: dict[str, bytes] = {}
    async for execution in client.list_workflows(""):
        handle = client.get_workflow_handle(execution.id, run_id=execution.run_id)
        history = await handle.fetch_history()
        described = await handle.describe()
        found[f"{execution.id}/{execution.run_id}"] = (
            history.to_json().encode() + str(described.raw_description).encode()
        )
    return found


def _holders(data_dir: Path, needle: bytes) -> list[str]:
    """Files under `data_dir` whose bytes contain `needle`."""
    hits = []
    for root, _, files in os.walk(data_dir):
        for name in files:
            path = Path(root) / name
            try:
                if needle in path.read_bytes():
                    hits.append(str(path.relative_to(data_dir)))
            except OSError:  # a socket, or a file removed meanwhile
                continue
    return sorted(hits)


def _pg_dumpall(data_dir: Path) -> bytes:
    import pgserver

    binary = Path(pgserver.__file__).parent / "pginstall" / "bin" / "pg_dumpall"
    dumped = subprocess.run(
        [str(binary), "-h", str(data_dir / "postgres"), "-U", "postgres"],
        capture_output=True,
        timeout=300,
        check=False,
    )
    assert dumped.returncode == 0, dumped.stderr
    assert b"CREATE TABLE public.memories" in dumped.stdout
    return dumped.stdout


async def _append_by_grpc(up: UpProcess, key: str, task_id: str, canary: str) -> None:
    """Two more entries through gRPC's `AppendEntries` stream (the same service as HTTP's route)."""
    async with grpc.aio.insecure_channel(f"127.0.0.1:{up.grpc_port}") as channel:
        reply = await pb2_grpc.LoregateStub(channel).AppendEntries(
            iter(
                [
                    pb2.AppendRequest(
                        task_id=task_id,
                        entries=[
                            pb2.Entry(kind="insight", content=f"{canary} needs a warm cache"),
                            pb2.Entry(kind="log", content="by grpc", payload_json=json.dumps({"n": canary})),
                        ],
                    )
                ]
            ),
            metadata=bearer(key),
        )
    assert len(reply.entries) == 2


def _plant(up: UpProcess, canary: str) -> str:
    """Write the canary through every writable field over HTTP; the task's id."""
    data_dir = up.data_dir
    orchestrator = _key(data_dir, "orchestrator", "orch")
    agent = _key(data_dir, "agent", "agent")
    human = _key(data_dir, "human", "reviewer")
    other = _key(data_dir, "orchestrator", "other")  # not involved in the task: its validation counts
    with httpx.Client(base_url=up.base_url, timeout=60) as http:
        task = http.post(
            "/v1/tasks",
            json={"org": "acme", "project": "demo", "worktree": "main", "description": f"fix {canary} now"},
            headers=_auth(orchestrator),
        )
        assert task.status_code == 201, task.text
        task_id = task.json()["task_id"]
        entries = [
            {"kind": "decision", "content": f"db.driver: use {canary}", "payload": {"key": "db.driver"}},
            {"kind": "fact", "content": f"The {canary} service answers on port 5432."},
            {"kind": "error", "content": f"ImportError: {canary} not found"},
            {"kind": "result", "content": f"Switched to {canary}; all tests pass."},
            {"kind": "log", "content": f"ran {canary}", "payload": {"note": canary}},
        ]  # fmt: skip
        written = http.post(f"/v1/tasks/{task_id}/entries", json={"entries": entries}, headers=_auth(agent))
        assert written.status_code == 201, written.text
        asyncio.run(_append_by_grpc(up, agent, task_id, canary))
        approach = http.post(
            f"/v1/tasks/{task_id}/approaches",
            json={"approach": f"pin {canary} to 1.0", "outcome": "failed", "reason": f"{canary} broke"},
            headers=_auth(agent),
        )
        assert approach.status_code == 201, approach.text
        started = http.post(
            f"/v1/tasks/{task_id}/promotion",
            json={"target_scope": "project", "verification": {"source": "tests_passed", "success": True}},
            headers=_auth(orchestrator),
        )
        assert started.status_code == 202, started.text
        _wait_state(http, human, task_id, "awaiting_approval")
        approved = http.post(
            f"/v1/promotions/{task_id}/approve", json={"note": f"ok {canary}"}, headers=_auth(human)
        )
        assert approved.status_code == 200, approved.text
        published = _wait_state(http, human, task_id, "published")
        memory_id = published["published"][0]["memory_id"]
        validated = http.post(
            f"/v1/memories/{memory_id}/validate",
            json={"source": "tests_passed", "reason": f"checked {canary}"},
            headers=_auth(other),
        )
        assert validated.status_code < 500, validated.text
        observed = http.post(
            f"/v1/memories/{memory_id}/observations",
            json={"outcome": "followed_passed", "note": f"seen {canary}", "task_id": task_id},
            headers=_auth(other),
        )
        # observations are of code rules: on a fact it is a refusal (nothing stored), still no 500
        assert observed.status_code < 500, observed.text
        print("validate:", validated.status_code, "observe:", observed.status_code)
        superseded = http.post(
            f"/v1/memories/{memory_id}/supersede",
            json={"content": f"Use {canary} 2 instead.", "reason": f"{canary} moved", "title": f"{canary} 2"},
            headers=_auth(orchestrator),
        )
        assert superseded.status_code == 202, superseded.text
        lifted = http.post(
            "/v1/memories/lift",
            json={"memory_ids": [memory_id], "target_scope": {"scope": "org"}, "reason": f"{canary} for all"},
            headers=_auth(orchestrator),
        )
        assert lifted.status_code in (201, 202), lifted.text
    return task_id


def test_erasure_leaves_no_canary_in_database_histories_data_dir_or_logs(
    up_launcher: UpLauncher, up_data_dir: Path
) -> None:
    up = up_launcher.start(up_data_dir)
    admin = (up_data_dir / "bootstrap-admin.key").read_text().strip()
    canary = _canary()
    needle = canary.encode()
    task_id = _plant(up, canary)
    time.sleep(2)  # the change requests' workflows have shown themselves

    before = asyncio.run(_histories(up))
    assert len(before) >= 3  # the promotion and two change requests
    assert [wf for wf, raw in before.items() if needle in raw] == []  # ids, counts and states only

    with httpx.Client(base_url=up.base_url, timeout=120) as http:
        erased = http.post("/v1/erasures", json={"subject": canary, "org": "acme"}, headers=_auth(admin))
        assert erased.status_code == 200, erased.text
        receipt = erased.json()
        # the running change requests were terminated and their histories deleted, named in the receipt
        assert f"promote-acme/{task_id}" in receipt["temporal_workflows"]  # the key: ids belong to the org
        assert sum(1 for w in receipt["temporal_workflows"] if w.startswith("change-")) == 2
        assert receipt["counts"]["temporal_histories"] == len(receipt["temporal_workflows"])
        for place in ("staging_entries", "memories", "change_requests", "approaches", "events_scrubbed"):
            assert receipt["counts"][place] > 0, (place, receipt["counts"])
        # the answer lists titles to the one who erases (it is not stored: the ERASED event holds hashes)
        receipt_event = http.get("/v1/events", params={"type": "ERASED", "org": "acme"}, headers=_auth(admin))
        assert receipt_event.status_code < 500 and needle not in receipt_event.content
        promotion = http.get(f"/v1/promotions/{task_id}", headers=_auth(admin))
        assert needle not in promotion.content

    # deleted is not gone: dead tuples and WAL still hold it (what the clean-up is for)
    lingering = _holders(up_data_dir, needle)
    print("files holding the canary after the erasure, before `loregate erase compact`:", lingering)
    assert any(p.startswith("postgres/") for p in lingering)
    assert not any(p.startswith(("temporal.db", "logs/")) for p in lingering), lingering

    compacted = run_cli("forget", "compact", env=cli_env(LOREGATE_DATA_DIR=str(up_data_dir)), timeout=600)
    assert compacted.returncode == 0, compacted.stdout + compacted.stderr

    assert needle not in _pg_dumpall(up_data_dir)
    after = asyncio.run(_histories(up))
    assert [wf for wf, raw in after.items() if needle in raw] == []
    assert _holders(up_data_dir, needle) == []
    assert needle not in up.output().encode()
