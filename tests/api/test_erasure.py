"""Erasure with receipts through the real gateway, the Temporal dev server and a worker.

A task stages a fact holding a unique marker, its promotion publishes it; erasing the memory, the task or
the marker as a subject must leave no trace of the content in search, context, provenance, history, events
or the promotion plan API, and an ERASED receipt with ids, counts and hashes only.
"""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import stat
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode
from temporalio.testing import ActivityEnvironment

from activities.retention import ArchiveInput, RetentionActivities
from governance.config import Settings
from governance.staging_archive import decode_chunk
from governance.storage.staging import set_task_status
from tests.utils.factories import Actor
from tests.utils.promotion_gateway import (
    approve_and_publish,
    awaiting_approval,
    open_task,
    stage,
    start_promotion,
    wait_promotion_state,
)
from tests.utils.tenancy import task_key_of


def _content(marker: str) -> str:
    return f"Deploys go through the bastion host {marker}; rotate the bastion keys weekly."


async def _published(
    http: httpx.AsyncClient, team: dict[str, Actor], marker: str
) -> tuple[str, dict[str, Any]]:
    """A task whose promotion published one project fact holding `marker`: (task id, the published fact)."""
    entry = {"kind": "fact", "content": _content(marker), "payload": {"note": f"seen {marker}"}}
    task_id, _ = await awaiting_approval(http, team, [entry], "document the deploy path")
    done = await approve_and_publish(http, team["human"], task_id)
    facts = [p for p in done["published"] if p["memory_type"] == "fact"]
    assert len(facts) == 1, done["published"]
    return task_id, facts[0]


async def _assert_gone(
    http: httpx.AsyncClient, team: dict[str, Actor], marker: str, task_id: str, memory_id: str
) -> None:
    """No read path returns the marker any more; the memory itself is gone."""
    human = team["human"]
    # a fresh task of the tenant to read from (the erased one may have no staging left)
    reader = await http.post(
        "/v1/tasks",
        headers=team["orchestrator"].headers,
        json={
            "org": human.principal.org,
            "project": human.principal.project,
            "worktree": "main",
            "description": "read back",
        },
    )
    reader_id = reader.json()["task_id"]
    query = {"query": "deploys bastion host keys", "task_id": reader_id}
    for path in ("/v1/search", "/v1/context"):
        answer = await http.post(path, headers=human.headers, json=query)
        assert answer.status_code == 200, answer.text
        assert marker not in answer.text, path
    shown = await http.get(f"/v1/memories/{memory_id}", headers=human.headers)
    assert shown.status_code == 404
    history = await http.get(f"/v1/memories/{memory_id}/history", headers=human.headers)
    assert history.status_code == 404
    events = await http.get("/v1/events", headers=human.headers, params={"limit": 200})
    assert events.status_code == 200 and marker not in events.text
    mine = await http.get(f"/v1/memories/{memory_id}/events", headers=human.headers)
    assert marker not in mine.text
    for path in (f"/v1/promotions/{task_id}", f"/v1/promotions/{task_id}/plan"):
        plan = await http.get(path, headers=human.headers)
        assert marker not in plan.text, path


def _marker() -> str:
    return f"zx-{uuid.uuid4().hex[:12]}"


async def _receipt(http: httpx.AsyncClient, headers: dict[str, str], event_id: int) -> dict[str, Any]:
    events = await http.get("/v1/events", headers=headers, params={"type": "ERASED", "limit": 200})
    assert events.status_code == 200, events.text
    [receipt] = [e for e in events.json()["events"] if e["id"] == event_id]
    return receipt


async def test_erase_memory_dry_run_lists_and_keeps(http: httpx.AsyncClient, team: dict[str, Actor]) -> None:
    marker = _marker()
    _, fact = await _published(http, team, marker)
    dry = await http.delete(
        f"/v1/memories/{fact['memory_id']}", headers=team["human"].headers, params={"dry_run": "true"}
    )
    assert dry.status_code == 200, dry.text
    body = dry.json()
    assert body["dry_run"] is True and body["receipt_event_id"] is None and body["counts"] == {}
    assert [m["id"] for m in body["memories"]] == [fact["memory_id"]]
    # titles (a fact's title is its first words) and hashes, never the content itself
    assert _content(marker) not in dry.text and len(body["memories"][0]["content_sha256"]) == 64
    still = await http.get(f"/v1/memories/{fact['memory_id']}", headers=team["human"].headers)
    assert still.status_code == 200 and marker in still.text


async def test_erase_memory_leaves_receipt_and_no_content(
    http: httpx.AsyncClient, team: dict[str, Actor]
) -> None:
    marker = _marker()
    task_id, fact = await _published(http, team, marker)
    erased = await http.delete(f"/v1/memories/{fact['memory_id']}", headers=team["human"].headers)
    assert erased.status_code == 200, erased.text
    body = erased.json()
    assert body["counts"]["memories"] == 1 and body["receipt_event_id"] is not None
    assert body["temporal_workflows"]  # the promotion that published it is named
    receipt = await _receipt(http, team["human"].headers, body["receipt_event_id"])
    assert receipt["actor_id"] == team["human"].principal.id and marker not in str(receipt)
    assert receipt["payload"]["memories"][0]["id"] == fact["memory_id"]
    assert "Temporal" in receipt["payload"]["temporal_note"] and body["counts"]["temporal_histories"] >= 1
    # the memory's content is gone everywhere; the staging entry is the task's (not erased with a memory)
    query = {"query": f"bastion host {marker}", "task_id": task_id}
    found = await http.post("/v1/search", headers=team["human"].headers, json=query)
    assert fact["memory_id"] not in found.text
    shown = await http.get(f"/v1/memories/{fact['memory_id']}", headers=team["human"].headers)
    assert shown.status_code == 404
    # the plan that published it no longer shows its text (the plan item went with the memory)
    plan = await http.get(f"/v1/promotions/{task_id}/plan", headers=team["human"].headers)
    assert plan.status_code in (200, 404) and marker not in plan.text, plan.text
    assert body["counts"]["candidates"] == 1 and body["counts"]["plan_items"] == 1


async def test_erase_task_takes_staging_plans_and_memories(
    http: httpx.AsyncClient, team: dict[str, Actor]
) -> None:
    marker = _marker()
    task_id, fact = await _published(http, team, marker)
    dry = await http.post(
        "/v1/erasures", headers=team["human"].headers, json={"task": task_id, "dry_run": True}
    )
    assert dry.status_code == 200, dry.text
    assert dry.json()["staging_entries"] and dry.json()["plans"] >= 1 and _content(marker) not in dry.text
    erased = await http.post("/v1/erasures", headers=team["human"].headers, json={"task": task_id})
    assert erased.status_code == 200, erased.text
    body = erased.json()
    assert fact["memory_id"] in [m["id"] for m in body["memories"]]
    assert body["counts"]["staging_entries"] >= 1 and body["counts"]["plans"] >= 1
    entries = await http.get(f"/v1/tasks/{task_id}/entries", headers=team["human"].headers)
    assert marker not in entries.text
    await _assert_gone(http, team, marker, task_id, fact["memory_id"])
    receipt = await _receipt(http, team["human"].headers, body["receipt_event_id"])
    assert receipt["task_id"] == task_id and marker not in str(receipt)


async def test_erase_subject_takes_every_text_holding_it(
    http: httpx.AsyncClient, team: dict[str, Actor]
) -> None:
    marker = _marker()
    task_id, fact = await _published(http, team, marker)
    human = team["human"]
    tenant = {"org": human.principal.org, "project": human.principal.project}
    erased = await http.post("/v1/erasures", headers=human.headers, json={"subject": marker, **tenant})
    assert erased.status_code == 200, erased.text
    body = erased.json()
    assert fact["memory_id"] in [m["id"] for m in body["memories"]] and body["counts"]["staging_entries"] == 1
    entries = await http.get(f"/v1/tasks/{task_id}/entries", headers=human.headers)
    assert marker not in entries.text
    await _assert_gone(http, team, marker, task_id, fact["memory_id"])
    receipt = await _receipt(http, human.headers, body["receipt_event_id"])
    assert receipt["payload"]["subject_sha256"] == hashlib.sha256(marker.encode()).hexdigest()
    assert marker not in str(receipt)


def _int_error(value: str, line: int) -> str:
    return (
        f'Traceback (most recent call last):\n  File "/app/forms.py", line {line}, in parse\n'
        f"    return int(raw)\nValueError: invalid literal for int() with base 10: '{value}'"
    )


async def _worktree_fix(http: httpx.AsyncClient, team: dict[str, Actor], n: int, fix: str) -> str:
    """A worktree task meeting the int parse error and ending with `fix`, published (no approval)."""
    task_id = await open_task(http, team["orchestrator"], f"parse the form field, attempt {n}")
    await stage(
        http,
        team["agent"],
        task_id,
        [{"kind": "error", "content": _int_error(f"v{n}", 10 + n)}, {"kind": "result", "content": fix}],
    )
    await start_promotion(http, team["orchestrator"], task_id, "worktree")
    await wait_promotion_state(http, team["human"].headers, task_id, "published")
    return task_id


async def test_erasure_takes_a_merged_tasks_fix_out_of_its_bug_pattern(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    """Stop 40: a task's fix merged into another task's bug pattern stayed in the pattern's fixes (the
    context block's `try:` lines, /v1/bug-patterns/match, exports) after the task or subject was erased."""
    by_task, by_subject = _marker(), _marker()
    await _worktree_fix(http, team, 1, "Strip the value before int()")
    second = await _worktree_fix(http, team, 2, f"Call the {by_task} sanitiser before int()")
    await _worktree_fix(http, team, 3, f"Ask {by_subject} for the parsing rules")
    reader = await open_task(http, team["orchestrator"], "parse the form field again")
    human = team["human"]

    async def matched() -> str:
        answer = await http.post(
            "/v1/bug-patterns/match",
            headers=human.headers,
            json={"task_id": reader, "error": _int_error("z", 1)},
        )
        assert answer.status_code == 200, answer.text
        return answer.text

    before = await matched()
    assert by_task in before and by_subject in before and "Strip the value before int()" in before
    erased = await http.post("/v1/erasures", headers=human.headers, json={"task": second})
    assert erased.status_code == 200, erased.text
    assert erased.json()["counts"]["bug_pattern_fixes"] == 1
    after = await matched()
    assert by_task not in after and by_subject in after and "Strip the value before int()" in after
    tenant = {"org": human.principal.org, "project": human.principal.project}
    erased = await http.post("/v1/erasures", headers=human.headers, json={"subject": by_subject, **tenant})
    assert erased.status_code == 200, erased.text
    assert by_subject not in await matched()
    async with engine.connect() as conn:
        stored = (
            (
                await conn.execute(
                    text(
                        "SELECT b.solutions::text FROM bug_patterns b JOIN memories m ON m.id = b.memory_id "
                        "WHERE m.org = :o"
                    ),
                    {"o": human.principal.org},
                )
            )
            .scalars()
            .all()
        )
    assert stored and not any(by_task in s or by_subject in s for s in stored), stored


async def test_erasing_a_task_takes_the_memory_it_created_though_another_task_merged_into_it(
    http: httpx.AsyncClient, team: dict[str, Actor]
) -> None:
    """The memory's text is the erased task's words: a later task's merge (which unites the sources) kept
    it alive, with that text, after its author's task was erased."""
    marker = _marker()
    fact = {"kind": "fact", "content": _content(marker)}
    tasks = []
    for n in (1, 2):
        task_id = await open_task(http, team["orchestrator"], f"document the deploy path, {n}")
        await stage(http, team["agent"], task_id, [fact])
        await start_promotion(http, team["orchestrator"], task_id, "worktree")
        done = await wait_promotion_state(http, team["human"].headers, task_id, "published")
        tasks.append((task_id, [p for p in done["published"] if p["memory_type"] == "fact"]))
    [(first, [created]), (_, [merged])] = tasks
    assert merged["memory_id"] == created["memory_id"] and merged["action"] == "merged", merged
    erased = await http.post("/v1/erasures", headers=team["human"].headers, json={"task": first})
    assert erased.status_code == 200, erased.text
    assert created["memory_id"] in [m["id"] for m in erased.json()["memories"]]
    shown = await http.get(f"/v1/memories/{created['memory_id']}", headers=team["human"].headers)
    assert shown.status_code == 404


async def _history_gone(temporal: Client, workflow_id: str, timeout: float = 300.0) -> None:
    """Temporal no longer knows `workflow_id`.

    The server deletes asynchronously: ~35 s on an idle dev server, up to ~3 min behind earlier deletions.
    """
    handle = temporal.get_workflow_handle(workflow_id)
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        try:
            await handle.describe()
        except RPCError as err:
            assert err.status == RPCStatusCode.NOT_FOUND, err
            return
        await asyncio.sleep(0.3)
    raise AssertionError(f"the history of {workflow_id} is still in Temporal")


async def test_erase_subject_deletes_temporal_histories_and_running_change_requests(
    http: httpx.AsyncClient, team: dict[str, Actor], temporal: Client
) -> None:
    """Before, the promotion's history (critique, approval note, titles) and a pending change request's
    workflow (old and new content, reason) kept the subject; the change request kept running."""
    marker = _marker()
    task_id, fact = await _published(http, team, marker)
    proposed = await http.post(
        f"/v1/memories/{fact['memory_id']}/supersede",
        headers=team["orchestrator"].headers,
        json={"content": f"Deploys go through the new bastion {marker}.", "reason": f"moved {marker}"},
    )
    assert proposed.status_code == 202, proposed.text
    change_workflow = proposed.json()["workflow_id"]
    assert (await temporal.get_workflow_handle(change_workflow).describe()).status is not None

    human = team["human"]
    tenant = {"org": human.principal.org, "project": human.principal.project}
    erased = await http.post("/v1/erasures", headers=human.headers, json={"subject": marker, **tenant})
    assert erased.status_code == 200, erased.text
    body = erased.json()
    promotion_workflow = f"promote-{task_key_of(task_id)}"
    assert {promotion_workflow, change_workflow} <= set(body["temporal_workflows"])
    assert body["counts"]["temporal_histories"] >= 2 and body["counts"]["change_requests"] == 1
    await _history_gone(temporal, promotion_workflow)
    await _history_gone(temporal, change_workflow)
    # the task's staging survived elsewhere is not published again by a new run of its promotion
    again = await http.post(
        f"/v1/tasks/{task_id}/promotion",
        headers=team["orchestrator"].headers,
        json={"target_scope": "project", "verification": {"source": "tests_passed", "success": True}},
    )
    assert again.status_code == 409, again.text
    assert "no entry was appended after its snapshot" in again.json()["detail"]


async def test_erase_refused_to_agents_outsiders_and_bad_input(
    http: httpx.AsyncClient, team: dict[str, Actor]
) -> None:
    _, fact = await _published(http, team, _marker())
    memory = f"/v1/memories/{fact['memory_id']}"
    assert (await http.delete(memory, headers=team["agent"].headers)).status_code == 403
    assert (await http.delete(memory, headers=team["orchestrator"].headers)).status_code == 403
    assert (await http.delete(memory, headers=team["outsider"].headers)).status_code == 404
    human = team["human"]
    outsider_subject = {"subject": "bastion", "org": human.principal.org, "project": human.principal.project}
    assert (
        await http.post("/v1/erasures", headers=team["outsider"].headers, json=outsider_subject)
    ).status_code == 404
    for bad in (
        {},
        {"memory": fact["memory_id"], "task": "t"},
        {"subject": "bastion"},
        {"subject": "ab", "org": "o"},
    ):
        answer = await http.post("/v1/erasures", headers=human.headers, json=bad)
        assert answer.status_code == 422, (bad, answer.text)
    assert (await http.get(memory, headers=human.headers)).status_code == 200


async def test_erase_refuses_a_tenant_given_with_a_memory_or_a_task(
    http: httpx.AsyncClient, team: dict[str, Actor]
) -> None:
    """`org`/`project` only apply to a subject: given with a memory or a task they are named and refused."""
    task_id, fact = await _published(http, team, _marker())
    human = team["human"]
    for body, stray in (
        ({"task": task_id, "org": "evil"}, "org only apply"),
        ({"task": task_id, "project": "evil"}, "project only apply"),
        ({"memory": fact["memory_id"], "org": "evil", "project": "p"}, "org and project only apply"),
        ({"task": task_id, "org": human.principal.org, "dry_run": True}, "org only apply"),
    ):
        answer = await http.post("/v1/erasures", headers=human.headers, json=body)
        assert answer.status_code == 422, (body, answer.text)
        assert stray in answer.text and "subject erasure" in answer.text, answer.text
    # nothing was erased: the memory and the task's staging are still there, and the valid request works
    assert (await http.get(f"/v1/memories/{fact['memory_id']}", headers=human.headers)).status_code == 200
    entries = await http.get(f"/v1/tasks/{task_id}/entries", headers=human.headers)
    assert entries.status_code == 200 and entries.json()["entries"], entries.text
    dry = await http.post("/v1/erasures", headers=human.headers, json={"task": task_id, "dry_run": True})
    assert dry.status_code == 200 and dry.json()["staging_entries"], dry.text


async def test_erase_subject_takes_it_out_of_staging_archive_files(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine, promo_settings: Settings
) -> None:
    """Archived staging holds the subject too: its entries leave the file, the others stay in it."""
    marker = _marker()
    orchestrator, human = team["orchestrator"], team["human"]
    tenant = {"org": human.principal.org, "project": human.principal.project}
    opened = await http.post(
        "/v1/tasks",
        headers=orchestrator.headers,
        json={**tenant, "worktree": "main", "description": "archived"},
    )
    task_id = opened.json()["task_id"]
    entries = [
        {"kind": "fact", "content": _content(marker)},
        {"kind": "log", "content": "the runbook lives in the ops wiki", "payload": {"ref": marker}},
        {"kind": "log", "content": "nothing private here"},
    ]
    await stage(http, team["agent"], task_id, entries)
    async with engine.begin() as conn:
        await set_task_status(conn, task_key_of(task_id), "promoted")
        await conn.execute(
            text("UPDATE tasks SET ended_at = now() - interval '45 days' WHERE id = :t"),
            {"t": task_key_of(task_id)},
        )
    archive_dir = promo_settings.archive_dir()
    activities = RetentionActivities(engine, archive_dir=archive_dir)
    archived = await ActivityEnvironment().run(
        activities.archive_staging, ArchiveInput(now=datetime.now(UTC), dry_run=False, orgs=[tenant["org"]])
    )
    (path,) = [Path(p) for p in archived.files]
    assert marker in gzip.decompress(path.read_bytes()).decode()

    dry = await http.post(
        "/v1/erasures", headers=human.headers, json={"subject": marker, **tenant, "dry_run": True}
    )
    assert dry.status_code == 200, dry.text
    relative = str(path.relative_to(archive_dir))
    assert dry.json()["archive_files"] == [relative]
    assert {e["seq"] for e in dry.json()["staging_entries"]} == {1, 2}
    assert marker in gzip.decompress(path.read_bytes()).decode()  # a dry run touches no file

    erased = await http.post("/v1/erasures", headers=human.headers, json={"subject": marker, **tenant})
    assert erased.status_code == 200, erased.text
    assert erased.json()["counts"]["archived_entries"] == 2
    left = list(decode_chunk(path.read_bytes()))
    assert [e.content for e in left] == ["nothing private here"]
    assert marker not in gzip.decompress(path.read_bytes()).decode()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    receipt = await _receipt(http, human.headers, erased.json()["receipt_event_id"])
    assert receipt["payload"]["archive_files"] == [relative] and marker not in str(receipt)
    again = await http.post(
        "/v1/erasures", headers=human.headers, json={"subject": marker, **tenant, "dry_run": True}
    )
    assert again.json()["archive_files"] == [] and again.json()["staging_entries"] == []
