"""A staging entry's payload asks how what is published from it decays (`decay_policy`).

Over real HTTP with a Temporal dev server and a worker running the real activities: the policy travels
from the entry to the published memory; `manual_only` (never fade by age) holds only when a human approved
the promotion, as setting it later is an approver's call; a bad value is refused at append with nothing
written; the nightly decay honours what was published.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.storage.retention import decay_confidences
from tests.utils.factories import Actor
from tests.utils.promotion_gateway import (
    approve_and_publish,
    awaiting_approval,
    open_task,
    stage,
    staged_promotion,
    wait_promotion_state,
)
from tests.utils.tenancy import task_key_of

ENTRIES = [
    {
        "kind": "fact",
        "content": "Invoices are kept for ten years.",
        "payload": {"decay_policy": "manual_only"},
    },
    {
        "kind": "fact",
        "content": "The staging cluster runs Postgres 16.",
        "payload": {"decay_policy": "recency_bias"},
    },
    {"kind": "fact", "content": "The API answers in JSON."},
    {"kind": "result", "content": "Documented the platform facts."},
]


async def _policies(engine: AsyncEngine, task_id: str) -> dict[str, tuple[str, str]]:
    """Title → (memory type, decay policy) of what the task published."""
    async with engine.connect() as conn:
        rows = await conn.execute(
            text("SELECT title, memory_type, decay_policy FROM memories WHERE :task = ANY(source_task_ids)"),
            {"task": task_key_of(task_id)},  # memories carry the task's key (tenant-scoped ids)
        )
        return {r.title: (r.memory_type, r.decay_policy) for r in rows}


async def test_a_human_approved_promotion_publishes_the_asked_policies(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    task_id, _ = await awaiting_approval(http, team, ENTRIES, "facts")
    await approve_and_publish(http, team["human"], task_id)

    published = await _policies(engine, task_id)
    assert published["Invoices are kept for ten years."] == ("fact", "manual_only")
    assert published["The staging cluster runs Postgres 16."] == ("fact", "recency_bias")
    assert published["The API answers in JSON."] == ("fact", "stable")
    # the episode quotes the whole task, which did not ask as one: its type's default
    assert {policy for kind, policy in published.values() if kind == "episode"} == {"recency_bias"}

    # the nightly decay honours them: a year on, the manual_only fact keeps its confidence, the others fade
    key = task_key_of(task_id)  # memories carry the task's key (tenant-scoped ids)
    async with engine.begin() as conn:
        await conn.execute(
            text(
                "UPDATE memories SET last_validated_at = now() - interval '365 days', "
                "created_at = now() - interval '365 days' WHERE :task = ANY(source_task_ids)"
            ),
            {"task": key},
        )
        before = dict(
            (
                await conn.execute(
                    text("SELECT title, confidence FROM memories WHERE :task = ANY(source_task_ids)"),
                    {"task": key},
                )
            ).all()
        )
        org = team["human"].principal.org
        await decay_confidences(conn, now=datetime.now(UTC) + timedelta(days=1), dry_run=False, orgs=[org])
        after = dict(
            (
                await conn.execute(
                    text("SELECT title, confidence FROM memories WHERE :task = ANY(source_task_ids)"),
                    {"task": key},
                )
            ).all()
        )
    assert after["Invoices are kept for ten years."] == before["Invoices are kept for ten years."]
    assert after["The staging cluster runs Postgres 16."] < before["The staging cluster runs Postgres 16."]
    assert after["The API answers in JSON."] < before["The API answers in JSON."]


async def test_manual_only_without_a_human_approval_keeps_the_default(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    task_id = await staged_promotion(http, team, "facts", ENTRIES, "worktree")
    await wait_promotion_state(http, team["human"].headers, task_id, "published")
    published = await _policies(engine, task_id)
    assert published["Invoices are kept for ten years."] == ("fact", "stable")  # nobody human approved it
    assert published["The staging cluster runs Postgres 16."] == ("fact", "recency_bias")


async def test_an_unknown_decay_policy_is_refused_at_append_with_nothing_written(
    http: httpx.AsyncClient, team: dict[str, Actor]
) -> None:
    task_id = await open_task(http, team["orchestrator"], "facts")
    await stage(http, team["agent"], task_id, [{"kind": "fact", "content": "first"}])
    entries = [
        {"kind": "fact", "content": "fine"},
        {"kind": "fact", "content": "forever", "payload": {"decay_policy": "forever"}},
    ]
    refused = await http.post(
        f"/v1/tasks/{task_id}/entries", headers=team["agent"].headers, json={"entries": entries}
    )
    assert refused.status_code == 422, refused.text
    body = refused.json()
    assert body["error"] == "invalid_input" and "entries[1].payload.decay_policy" in body["detail"]
    listed = await http.get(f"/v1/tasks/{task_id}/entries", headers=team["agent"].headers)
    assert [e["content"] for e in listed.json()["entries"]] == ["first"]
