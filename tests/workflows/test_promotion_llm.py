"""Cognify through an OpenAI-compatible endpoint, end to end through PromotionWorkflow.

The endpoint is a real HTTP server on loopback (tests/utils/fake_openai.py) reached through the real
`openai` client the worker builds from settings. A well-formed answer is published as the LLM wrote it;
every kind of failure (malformed JSON, an answer outside the schema, an empty answer, HTTP 500, a timeout,
nothing listening) still publishes the rule-based result and says why in the PROMOTION event and in the
workflow's `state` query — never a failed promotion.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio.client import Client

from governance.adapters.llm_cognifier import ANALYSIS_SCHEMA
from tests.utils.factories import new_tenant
from tests.utils.fake_openai import FakeOpenAI, Reply, chat_reply, is_cognify, unreachable_base_url
from tests.utils.promotion_factories import Entry, StagedTask, active_memories, events_of, make_task
from workflows.promotion import PromotionWorkflow
from workflows.promotion_contract import (
    PromotionInput,
    PromotionResult,
    PromotionState,
    PromotionStatus,
    Verification,
    workflow_id_for,
)

MODEL = "fake-distiller-1"
API_KEY = "llm-test-key-not-a-secret"
SECRET = "ghp_Fak3LLMT0k3nTh4tMustN0tL3av3XYZ"

FACT = "db.driver: psycopg 3 with the async API"
ENTRIES = [
    Entry("fact", FACT, {"key": "db.driver"}),
    Entry("error", f"CI push failed: remote rejected GITHUB_TOKEN={SECRET} as expired"),
    Entry("decision", "Rotate the CI token through the vault job, not by hand."),
    Entry("result", "CI pushes again after the token rotation."),
]

LLM_ANALYSIS: dict[str, Any] = {
    "success": True,
    "reward": 0.8,
    "critique": "Rotate tokens before they expire instead of after CI breaks.",
    "key_decisions": ["Rotate the CI token through the vault job"],
    "repeatable": False,
    "summary": "CI token rotated; pushes work again.",
    "candidates": [
        {
            "memory_type": "fact",
            "title": "Database driver",
            "content": "The service talks to Postgres through psycopg 3's async API.",
            "canonical_key": "DB.Driver",
            "importance": 0.9,
            "source_seqs": [0],
        },
        {
            "memory_type": "bug_pattern",
            "title": "Expired CI token rejects pushes",
            "content": "An expired CI token makes the remote reject pushes; rotate it through the vault job.",
            "canonical_key": None,
            "importance": 0.7,
            "source_seqs": [1, 2, 99],
        },
    ],
}


def _llm_settings(base_url: str, timeout: float = 5.0) -> dict[str, Any]:
    return {
        "llm_base_url": base_url,
        "llm_model": MODEL,
        "llm_api_key": API_KEY,
        "llm_timeout_seconds": timeout,
    }


def _no_contradiction(body: dict[str, Any]) -> Reply:
    return chat_reply(json.dumps({"contradicts": False, "reason": "different subjects"}))


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


async def _promote(
    client: Client, make_worker: Any, task_queue: str, task: StagedTask, **settings: Any
) -> tuple[PromotionResult, PromotionStatus]:
    async with make_worker(client, task_queue, **settings):
        handle = await client.start_workflow(
            PromotionWorkflow.run,
            PromotionInput(
                task.task_id,
                "task",
                requested_by=task.requested_by,
                verification=Verification("tests_passed", True),
            ),
            id=workflow_id_for(task.task_id),
            task_queue=task_queue,
        )
        result: PromotionResult = await handle.result()
        status: PromotionStatus = await handle.query(PromotionWorkflow.state)
    return result, status


async def _promotion_event(engine: AsyncEngine, task_id: str) -> Any:
    (event,) = [e for e in await events_of(engine, task_id) if e.event_type == "PROMOTION"]
    return event


async def test_promotion_llm_answer_publishes_llm_candidates(
    ts_env: Any, engine: AsyncEngine, make_worker: Any, task_queue: str, fake_openai: FakeOpenAI
) -> None:
    fake_openai.chat = lambda body: (
        chat_reply(json.dumps(LLM_ANALYSIS), MODEL) if is_cognify(body) else _no_contradiction(body)
    )
    org, project = new_tenant()
    task = await make_task(engine, org, project, ENTRIES, description="fix the CI push")

    result, status = await _promote(
        ts_env.client, make_worker, task_queue, task, **_llm_settings(fake_openai.base_url)
    )

    assert result.state == PromotionState.PUBLISHED
    active = {m.memory_type: m for m in await active_memories(engine, task_id=task.task_id)}
    assert set(active) == {"fact", "bug_pattern", "episode"}
    fact, bug = active["fact"], active["bug_pattern"]
    # the LLM's wording, not the staging entry's; its key normalised to the canonical form
    assert fact.content == LLM_ANALYSIS["candidates"][0]["content"] and fact.canonical_key == "db.driver"
    assert bug.title == "Expired CI token rejects pushes"
    # provenance follows the seqs the model cited; a seq the task never had is dropped
    assert list(fact.source_entry_ids) == [task.entry_ids[0]]
    assert sorted(bug.source_entry_ids) == [task.entry_ids[1], task.entry_ids[2]]
    assert "Rotate tokens before they expire" in active["episode"].content

    event = await _promotion_event(engine, task.task_id)
    assert event.payload["cognify_engine"] == f"llm:{MODEL}"
    assert event.payload["cognify_fallback"] is None
    assert status.cognify_engine == f"llm:{MODEL}" and status.cognify_fallback is None


async def test_promotion_llm_request_carries_schema_and_only_redacted_staging(
    ts_env: Any, engine: AsyncEngine, make_worker: Any, task_queue: str, fake_openai: FakeOpenAI
) -> None:
    fake_openai.chat = lambda body: (
        chat_reply(json.dumps(LLM_ANALYSIS), MODEL) if is_cognify(body) else _no_contradiction(body)
    )
    org, project = new_tenant()
    task = await make_task(engine, org, project, ENTRIES, description=f"fix the CI push (token {SECRET})")

    result, _ = await _promote(
        ts_env.client, make_worker, task_queue, task, **_llm_settings(fake_openai.base_url)
    )

    assert result.state == PromotionState.PUBLISHED
    cognify_requests = [b for b in fake_openai.chat_requests() if is_cognify(b)]
    assert len(cognify_requests) == 1  # one attempt, no silent retries
    (request,) = cognify_requests
    assert request["model"] == MODEL
    assert request["response_format"]["json_schema"]["schema"] == ANALYSIS_SCHEMA
    assert request["response_format"]["json_schema"]["strict"] is True
    prompt = "\n".join(m["content"] for m in request["messages"])
    # the staging the model sees: every entry by seq, the words around the secret, never the secret
    assert FACT in prompt and "remote rejected" in prompt and "[3] result:" in prompt
    assert "fix the CI push" in prompt
    for recorded in fake_openai.requests:  # the judge's requests too
        assert SECRET not in json.dumps(recorded.body)
    assert fake_openai.requests[0].headers.get("authorization") == f"Bearer {API_KEY}"


MALFORMED_JSON = chat_reply('{"success": true, "reward": 0.8, "candidates": [', MODEL)
OUT_OF_SCHEMA = chat_reply(
    json.dumps(
        {
            **LLM_ANALYSIS,
            "reward": 7.5,
            "candidates": [{**LLM_ANALYSIS["candidates"][0], "memory_type": "rumour"}],
        }
    ),
    MODEL,
)
EMPTY_ANSWER = chat_reply("", MODEL)
SERVER_ERROR = Reply(status=500, body={"error": {"message": "model overloaded", "type": "server_error"}})
TOO_SLOW = Reply(delay=3.0, body=chat_reply(json.dumps(LLM_ANALYSIS), MODEL).body)


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        pytest.param(MALFORMED_JSON, "malformed LLM answer: JSONDecodeError", id="malformed-json"),
        pytest.param(OUT_OF_SCHEMA, "malformed LLM answer: ValidationError", id="out-of-schema"),
        pytest.param(EMPTY_ANSWER, "malformed LLM answer: ValueError", id="empty-answer"),
        pytest.param(SERVER_ERROR, "LLM call failed: InternalServerError", id="http-500"),
        pytest.param(TOO_SLOW, "LLM call failed: APITimeoutError", id="timeout"),
        pytest.param(None, "LLM call failed: APIConnectionError", id="unreachable"),
    ],
)
async def test_promotion_llm_failure_publishes_rule_based_result(
    ts_env: Any,
    engine: AsyncEngine,
    make_worker: Any,
    task_queue: str,
    fake_openai: FakeOpenAI,
    reply: Reply | None,
    reason: str,
) -> None:
    fake_openai.chat = lambda body: (
        reply if reply is not None and is_cognify(body) else _no_contradiction(body)
    )
    base_url = fake_openai.base_url if reply is not None else unreachable_base_url()
    org, project = new_tenant()
    task = await make_task(engine, org, project, ENTRIES, description="fix the CI push")

    result, status = await _promote(
        ts_env.client, make_worker, task_queue, task, **_llm_settings(base_url, timeout=0.5)
    )

    assert result.state == PromotionState.PUBLISHED
    active = {m.memory_type: m for m in await active_memories(engine, task_id=task.task_id)}
    # the rule-based extractor's candidates: the staged fact verbatim, the error paired with its fix
    assert active["fact"].content == FACT and active["fact"].canonical_key == "db.driver"
    assert (
        active["bug_pattern"].content.startswith("CI push failed")
        and SECRET not in active["bug_pattern"].content
    )
    assert "Resolved by: Rotate the CI token" in active["bug_pattern"].content
    event = await _promotion_event(engine, task.task_id)
    assert event.payload["cognify_engine"] == "rule_based"
    assert event.payload["cognify_fallback"].startswith(reason)
    assert (
        status.cognify_engine == "rule_based" and status.cognify_fallback == event.payload["cognify_fallback"]
    )
    if reply is not None:
        assert len([b for b in fake_openai.chat_requests() if is_cognify(b)]) == 1
