"""Erasure reaches everything: one canary planted through every channel, then nowhere to be found.

`loregate up` runs the README's way (a subprocess on its own data dir). The canary goes, with a marker per
channel and field, into:

- HTTP: a task's description, staging entries (a `rule` among them) and a payload, an approach and its
  failure reason, a validation reason, a code-rule observation note, a supersede request (content, title,
  reason), a lift request's reason;
- gRPC: a second task's description (`OpenTask`), entries (`AppendEntries`), an approach and its reason,
  working memory, its promotion's start, a validation reason, an observation note;
- MCP (`loregate mcp` over stdio, as an agent runs it): an entry and its payload, an approach and its
  reason, working-memory hypotheses, files and symbols, an observation note, a validation reason;
- the Python client: an entry, an approach's reason;
- the CLI: the second promotion's approval note (`loregate approve --note`), an observation note
  (`loregate rules observe --note`);
- a Temporal UI signal: the first promotion is approved by an `approve` signal sent as the UI sends it (the
  token from `loregate approval-token`), with a note.

Both promotions are published (a fact and a code rule among the memories). Before the erasure a full
`pg_dumpall` holds every marker (each write landed), and Temporal's histories, read through its API, hold
the canary in exactly one place: the promotion the UI signal approved (its note is the signal's payload;
docs/privacy.md). Then `POST /v1/erasures` takes the subject, the operator runs the documented clean-up
(`loregate erase compact`), and a full `pg_dumpall`, every Temporal history (list + fetch), every byte of
the data dir (Postgres' files and WAL, `temporal.db`, the logs) and the supervisor's output hold no canary.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import string
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from mcp import Client as McpClient
from mcp.client.stdio import StdioServerParameters
from temporalio.client import Client

from api.client import LoregateClient
from api.grpc.proto import pb2, pb2_grpc
from tests.conftest import repo_root
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
    """Every workflow's description and full history, through Temporal's API.

    The JSON form of a history carries payloads base64-encoded, so a plain search of it finds nothing
    that was sent as an input, signal or result; the events' text form shows the payloads' bytes as they
    are, and that is what is searched too.
    """
    client = await Client.connect(f"127.0.0.1:{up.temporal_port}")
    found: dict[str, bytes] = {}
    async for execution in client.list_workflows(""):
        handle = client.get_workflow_handle(execution.id, run_id=execution.run_id)
        history = await handle.fetch_history()
        described = await handle.describe()
        found[f"{execution.id}/{execution.run_id}"] = (
            history.to_json().encode()
            + "".join(str(event) for event in history.events).encode()
            + str(described.raw_description).encode()
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


def _relations(data_dir: Path, paths: list[str], needle: str) -> list[str]:
    """What the Postgres files among `paths` are (`base/<db oid>/<filenode>`): for a failure's message."""
    import psycopg

    named = []
    for path in paths:
        parts = path.split("/")
        if len(parts) != 4 or parts[1] != "base":
            continue
        db_oid, node = int(parts[2]), int(parts[3].split(".")[0].split("_")[0])
        with psycopg.connect(host=str(data_dir / "postgres"), user="postgres", dbname="postgres") as conn:
            row = conn.execute("SELECT datname FROM pg_database WHERE oid = %s", (db_oid,)).fetchone()
        if row is None:
            continue
        with psycopg.connect(host=str(data_dir / "postgres"), user="postgres", dbname=row[0]) as conn:
            rel = conn.execute("SELECT pg_filenode_relation(0, %s)::text", (node,)).fetchone()
            live = conn.execute(
                "SELECT starelid::regclass::text FROM pg_statistic WHERE concat_ws(' ', stavalues1::text,"
                " stavalues2::text, stavalues3::text, stavalues4::text, stavalues5::text) LIKE %s",
                (f"%{needle}%",),
            ).fetchall()
        named.append(f"{path}: {row[0]}.{rel[0] if rel else '?'}; live statistics of {live}")
    return named


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


class Plant:
    """Writes `<canary> <marker>` through one channel after another; the markers say what must have landed."""

    def __init__(self, up: UpProcess, canary: str) -> None:
        self.up, self.canary = up, canary
        self.markers: list[str] = []
        data_dir = up.data_dir
        self.orchestrator = _key(data_dir, "orchestrator", "orch")
        self.agent = _key(data_dir, "agent", "agent")
        self.human = _key(data_dir, "human", "reviewer")
        self.other = _key(data_dir, "orchestrator", "other")  # not involved in the tasks: its word counts
        self.observer = _key(data_dir, "human", "observer")  # the CLI's observer (one per principal)

    def text(self, marker: str) -> str:
        """The canary and a marker of where it went, as one writes it (letters only: nothing redacts it)."""
        self.markers.append(f"{self.canary} {marker}")
        return f"{self.canary} {marker}"

    def cli(self, key: str, *args: str) -> subprocess.CompletedProcess[str]:
        env = cli_env(LOREGATE_URL=self.up.base_url, LOREGATE_API_KEY=key, COLUMNS="200")
        return run_cli(*args, env=env)


def _http_task(plant: Plant, http: httpx.Client) -> str:
    """The first task, over HTTP (and the Python client): description, entries, a rule, an approach."""
    t = plant.text
    task = http.post(
        "/v1/tasks",
        json={"org": "acme", "project": "demo", "worktree": "main", "description": t("http description")},
        headers=_auth(plant.orchestrator),
    )
    assert task.status_code == 201, task.text
    task_id = str(task.json()["task_id"])
    entries = [
        {
            "kind": "decision",
            "content": f"db.driver: use {t('http decision')}",
            "payload": {"key": "db.driver"},
        },
        {"kind": "fact", "content": f"The {t('http fact')} service answers on port 5432."},
        {"kind": "error", "content": f"ImportError: {t('http error')} not found"},
        {"kind": "result", "content": f"Switched to {t('http result')}; all tests pass."},
        {"kind": "log", "content": f"ran {t('http log')}", "payload": {"note": t("http payload")}},
        {
            "kind": "rule",
            "content": "Never run schema migrations from a request handler: queue them for the worker and "
            f"wait for the lock ({t('http rule')}).",
        },
    ]
    written = http.post(f"/v1/tasks/{task_id}/entries", json={"entries": entries}, headers=_auth(plant.agent))
    assert written.status_code == 201, written.text
    approach = http.post(
        f"/v1/tasks/{task_id}/approaches",
        json={"approach": t("http approach"), "outcome": "failed", "reason": t("http approach reason")},
        headers=_auth(plant.agent),
    )
    assert approach.status_code == 201, approach.text
    with LoregateClient(plant.up.base_url, plant.agent) as client:
        client.append(task_id, {"kind": "thought", "content": t("client entry")})
        client.record_approach(task_id, t("client approach"), "failed", reason=t("client approach reason"))
    return task_id


async def _grpc_task(plant: Plant) -> str:
    """The second task, over gRPC: opened, written to, its promotion started."""
    t = plant.text
    async with grpc.aio.insecure_channel(f"127.0.0.1:{plant.up.grpc_port}") as channel:
        stub = pb2_grpc.LoregateStub(channel)
        task = await stub.OpenTask(
            pb2.OpenTaskRequest(
                org="acme", project="demo", worktree="main", description=t("grpc description")
            ),
            metadata=bearer(plant.orchestrator),
        )
        task_id = task.task_id
        entries = [
            pb2.Entry(kind="insight", content=f"{t('grpc insight')} needs a warm cache"),
            pb2.Entry(kind="log", content="by grpc", payload_json=json.dumps({"n": t("grpc payload")})),
            pb2.Entry(kind="fact", content=f"The {t('grpc fact')} queue holds 500 jobs at most."),
        ]
        reply = await stub.AppendEntries(
            iter([pb2.AppendRequest(task_id=task_id, entries=entries)]), metadata=bearer(plant.agent)
        )
        assert len(reply.entries) == 3
        approach = {"approach": t("grpc approach"), "outcome": "failed", "reason": t("grpc approach reason")}
        await stub.RecordApproach(
            pb2.TaskJsonRequest(task_id=task_id, json=json.dumps(approach)), metadata=bearer(plant.agent)
        )
        memory = {
            "hypotheses": [{"text": t("grpc hypothesis"), "confidence": 0.5}],
            "files": [],
            "symbols": [],
        }
        await stub.UpdateWorkingMemory(
            pb2.TaskJsonRequest(task_id=task_id, json=json.dumps(memory)), metadata=bearer(plant.agent)
        )
        start = {"target_scope": "project", "verification": {"source": "tests_passed", "success": True}}
        await stub.StartPromotion(
            pb2.TaskJsonRequest(task_id=task_id, json=json.dumps(start)), metadata=bearer(plant.orchestrator)
        )
    return str(task_id)


def _mcp_params(plant: Plant, key: str, task_id: str | None = None) -> StdioServerParameters:
    env = {
        "LOREGATE_URL": plant.up.base_url,
        "LOREGATE_API_KEY": key,
        **({"LOREGATE_TASK_ID": task_id} if task_id else {}),
    }
    return StdioServerParameters(
        command=sys.executable, args=["-m", "api.cli", "mcp"], env=env, cwd=str(repo_root())
    )


async def _mcp_writes(plant: Plant, task_id: str) -> None:
    """An agent's MCP server writes to the first task: an entry, an approach, its working memory."""
    t = plant.text
    async with McpClient(_mcp_params(plant, plant.agent, task_id), read_timeout_seconds=120) as mcp:
        calls = {
            "append_staging": {
                "kind": "insight",
                "content": t("mcp entry"),
                "payload": {"why": t("mcp payload")},
            },
            "record_approach": {
                "approach": t("mcp approach"),
                "outcome": "failed",
                "reason": t("mcp approach reason"),
            },
            "update_working_memory": {
                "hypotheses": [{"text": t("mcp hypothesis"), "confidence": 0.6}],
                "files": [f"src/{plant.canary}/mcp_file.py"],
                "symbols": [f"{plant.canary}_mcp_symbol"],
            },
        }
        plant.markers += [f"src/{plant.canary}/mcp_file.py", f"{plant.canary}_mcp_symbol"]
        for tool, args in calls.items():
            answer = await mcp.call_tool(tool, args)
            assert not answer.is_error, (tool, answer.content)


async def _mcp_judgements(plant: Plant, rule: str, fact: str) -> None:
    """Another orchestrator's MCP server observes the code rule and validates the fact, with words."""
    t = plant.text
    async with McpClient(_mcp_params(plant, plant.other), read_timeout_seconds=120) as mcp:
        observed = await mcp.call_tool(
            "observe_code_rule", {"memory": rule, "outcome": "followed_passed", "note": t("mcp observation")}
        )
        assert not observed.is_error, observed.content
        validated = await mcp.call_tool(
            "validate_memory", {"citation": fact, "source": "repeated_success", "reason": t("mcp validation")}
        )
        assert not validated.is_error, validated.content


async def _grpc_judgements(plant: Plant, rule: str, fact: str, task_id: str) -> None:
    t = plant.text
    async with grpc.aio.insecure_channel(f"127.0.0.1:{plant.up.grpc_port}") as channel:
        stub = pb2_grpc.LoregateStub(channel)
        observation = {"outcome": "followed_passed", "note": t("grpc observation"), "task_id": task_id}
        await stub.ObserveCodeRule(
            pb2.MemoryJsonRequest(memory_id=rule, json=json.dumps(observation)), metadata=bearer(plant.other)
        )
        validation = {"source": "pr_merged", "reason": t("grpc validation")}
        await stub.ValidateMemory(
            pb2.MemoryJsonRequest(memory_id=fact, json=json.dumps(validation)), metadata=bearer(plant.other)
        )


async def _approve_by_ui_signal(plant: Plant, task_id: str) -> None:
    """Approve as the Temporal UI does: the human's token (`loregate approval-token`), a note typed in."""
    minted = await asyncio.to_thread(plant.cli, plant.human, "approval-token", task_id, "--json")
    assert minted.returncode == 0, minted.stdout + minted.stderr
    answer = json.loads(minted.stdout)
    signal_input = json.loads(answer["signal_input"]) | {"note": plant.text("ui signal note")}
    client = await Client.connect(f"127.0.0.1:{plant.up.temporal_port}")
    await client.get_workflow_handle(answer["workflow_id"]).signal("approve", signal_input)


def _plant(up: UpProcess, canary: str) -> tuple[Plant, list[str]]:
    """Write the canary through every channel; the plant and the two tasks' ids."""
    plant = Plant(up, canary)
    t = plant.text
    with httpx.Client(base_url=up.base_url, timeout=60) as http:
        first = _http_task(plant, http)
        asyncio.run(_mcp_writes(plant, first))
        started = http.post(
            f"/v1/tasks/{first}/promotion",
            json={"target_scope": "project", "verification": {"source": "tests_passed", "success": True}},
            headers=_auth(plant.orchestrator),
        )
        assert started.status_code == 202, started.text
        second = asyncio.run(_grpc_task(plant))
        _wait_state(http, plant.human, first, "awaiting_approval")
        asyncio.run(_approve_by_ui_signal(plant, first))
        _wait_state(http, plant.human, second, "awaiting_approval")
        approved = plant.cli(plant.human, "approve", second, "--note", t("cli approval note"))
        assert approved.returncode == 0, approved.stdout + approved.stderr
        published = _wait_state(http, plant.human, first, "published")["published"]
        _wait_state(http, plant.human, second, "published")
        print("published:", [(p["memory_type"], p["action"], p["memory_id"]) for p in published])
        by_type = {p["memory_type"]: p for p in published if p["action"] == "promoted"}
        assert {"fact", "code_rule"} <= set(by_type), published
        fact, rule = by_type["fact"]["memory_id"], by_type["code_rule"]["memory_id"]

        validated = http.post(
            f"/v1/memories/{fact}/validate",
            json={"source": "tests_passed", "reason": t("http validation")},
            headers=_auth(plant.other),
        )
        assert validated.status_code == 200, validated.text
        # an orchestrator observes a rule in work it took part in: a task of its own
        own = http.post(
            "/v1/tasks",
            json={"org": "acme", "project": "demo", "worktree": "main", "description": "work under the rule"},
            headers=_auth(plant.other),
        )
        assert own.status_code == 201, own.text
        observed = http.post(
            f"/v1/memories/{rule}/observations",
            json={
                "outcome": "followed_passed",
                "note": t("http observation"),
                "task_id": own.json()["task_id"],
            },
            headers=_auth(plant.other),
        )
        assert observed.status_code == 200, observed.text
        asyncio.run(_grpc_judgements(plant, rule, fact, own.json()["task_id"]))
        asyncio.run(_mcp_judgements(plant, rule, fact))
        cli_observed = plant.cli(
            plant.observer, "rules", "observe", rule, "followed_passed", "--note", t("cli observation")
        )
        assert cli_observed.returncode == 0, cli_observed.stdout + cli_observed.stderr

        superseded = http.post(
            f"/v1/memories/{fact}/supersede",
            json={"content": f"Use {t('http supersede content')} 2.", "reason": t("http supersede reason"),
                  "title": t("http supersede title")},
            headers=_auth(plant.orchestrator),
        )  # fmt: skip
        assert superseded.status_code == 202, superseded.text
        lifted = http.post(
            "/v1/memories/lift",
            json={"memory_ids": [fact], "target_scope": {"scope": "org"}, "reason": t("http lift reason")},
            headers=_auth(plant.orchestrator),
        )
        assert lifted.status_code in (201, 202), lifted.text
    return plant, [first, second]


def test_erasure_leaves_no_canary_in_database_histories_data_dir_or_logs(
    up_launcher: UpLauncher, up_data_dir: Path
) -> None:
    up = up_launcher.start(up_data_dir)
    admin = (up_data_dir / "bootstrap-admin.key").read_text().strip()
    canary = _canary()
    needle = canary.encode()
    plant, tasks = _plant(up, canary)
    time.sleep(2)  # the change requests' workflows have shown themselves

    # every write landed (else finding no canary afterwards would prove nothing)
    dumped = _pg_dumpall(up_data_dir)
    assert [m for m in plant.markers if m.encode() not in dumped] == []
    before = asyncio.run(_histories(up))
    assert len(before) >= 4  # two promotions and two change requests
    # ids, counts and states only, but for the note typed into the UI's signal: that history holds it
    holding = [wf for wf, raw in before.items() if needle in raw]
    assert [wf.split("/")[-2] for wf in holding] == [tasks[0]], holding

    with httpx.Client(base_url=up.base_url, timeout=120) as http:
        erased = http.post("/v1/erasures", json={"subject": canary, "org": "acme"}, headers=_auth(admin))
        assert erased.status_code == 200, erased.text
        receipt = erased.json()
        # the running change requests were terminated and their histories deleted, named in the receipt
        for task_id in tasks:
            assert f"promote-acme/{task_id}" in receipt["temporal_workflows"]  # ids belong to the org
        assert sum(1 for w in receipt["temporal_workflows"] if w.startswith("change-")) == 2
        assert receipt["counts"]["temporal_histories"] == len(receipt["temporal_workflows"])
        for place in ("staging_entries", "memories", "change_requests", "approaches", "events_scrubbed"):
            assert receipt["counts"][place] > 0, (place, receipt["counts"])
        # the answer lists titles to the one who erases (it is not stored: the ERASED event holds hashes)
        receipt_event = http.get("/v1/events", params={"type": "ERASED", "org": "acme"}, headers=_auth(admin))
        assert receipt_event.status_code < 500 and needle not in receipt_event.content
        for task_id in tasks:
            promotion = http.get(f"/v1/promotions/{task_id}", headers=_auth(admin))
            assert needle not in promotion.content

    # deleted is not gone: dead tuples and WAL still hold it (what the clean-up is for)
    lingering = _holders(up_data_dir, needle)
    print("files holding the canary after the erasure, before `loregate erase compact`:", lingering)
    assert any(p.startswith("postgres/") for p in lingering)
    assert not any(p.startswith("logs/") for p in lingering), lingering

    compacted = run_cli("erase", "compact", env=cli_env(LOREGATE_DATA_DIR=str(up_data_dir)), timeout=600)
    assert compacted.returncode == 0, compacted.stdout + compacted.stderr

    assert needle not in _pg_dumpall(up_data_dir)
    after = asyncio.run(_histories(up))
    assert [wf for wf, raw in after.items() if needle in raw] == []
    holders = _holders(up_data_dir, needle)
    assert holders == [], _relations(up_data_dir, holders, canary)
    assert needle not in up.output().encode()
