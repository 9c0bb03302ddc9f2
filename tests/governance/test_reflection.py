"""Reflection's rules (governance/reflection.py) and its LLM wording over a real loopback endpoint.

Groups of episodes become insights with counts and provenance; only groups holding a new episode speak; the
order and keys are stable, so a retried reflection stages the same insights. The model only rewords: a key
it was not given, a missing key or a failure keeps the rules' text.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from governance.adapters.llm_reflector import SCHEMA_NAME, make_reflector, word
from governance.cognify import StagedEntry
from governance.config import Settings
from governance.redaction import redact_json
from governance.reflection import EpisodeEvidence, ReflectionParams, distil, insight_key
from tests.utils.fake_openai import FakeOpenAI, Reply, chat_reply, unreachable_base_url

FIX = "Guard the lookup with dict.get and a default"
WRONG = "Clear the cache before loading"


def _episode(
    n: int,
    *,
    success: bool = True,
    error: str | None = "KeyError: 'user_{n}'",
    fixes: tuple[str, ...] = (FIX,),
    tool: str | None = None,
    failed_approach: str | None = None,
    vector: tuple[float, ...] | None = None,
) -> EpisodeEvidence:
    entries: list[StagedEntry] = []
    seq = 0

    def add(kind: str, content: str, payload: dict[str, Any] | None = None) -> None:
        nonlocal seq
        entries.append(StagedEntry(id=n * 100 + seq, seq=seq, kind=kind, content=content, payload=payload))
        seq += 1

    if tool:
        add("tool_output", "ran it", {"tool": tool})
    if failed_approach:
        add("approach", failed_approach, {"outcome": "failed", "reason": "made it worse"})
    for i, fix in enumerate(fixes):
        if error:
            add("error", error.format(n=f"{n}{i}"))
        add("result" if i == len(fixes) - 1 else "decision", fix)
    return EpisodeEvidence(
        id=f"ep-{n}",
        task_id=f"task-{n}",
        title=f"Episode: load the cache {n}",
        success=success,
        importance=0.7,
        entries=tuple(entries),
        embedding=vector,
    )


def test_distil_recurring_error_counts_fixes_that_held_and_that_did_not() -> None:
    episodes = [_episode(1), _episode(2, fixes=(WRONG, FIX)), _episode(3, success=False, fixes=(WRONG,))]
    insights = distil(episodes, {"ep-3"})
    [error] = [i for i in insights if i.kind == "error"]
    assert error.key == "insight.error.keyerror-q"
    assert error.episode_ids == ("ep-1", "ep-2", "ep-3") and error.support == 3 and error.successes == 2
    assert error.content.splitlines() == [
        "KeyError: <q> recurred in 3 tasks (2 succeeded).",
        f"What worked: {FIX} (2/2).",
        f"What did not: {WRONG} (0/2).",
    ]


def test_distil_speaks_only_for_groups_holding_a_new_episode() -> None:
    episodes = [_episode(1), _episode(2), _episode(3, error="TimeoutError: call {n} timed out")]
    assert [i for i in distil(episodes, {"ep-3"}) if i.kind == "error"] == []
    assert [i.kind for i in distil(episodes, {"ep-2"}) if i.kind == "error"] == ["error"]
    assert distil(episodes, set()) == []


def test_distil_decisions_approaches_tools_and_similar_tasks() -> None:
    near = (1.0, 0.0, 0.0)
    episodes = [
        _episode(1, tool="pytest", failed_approach="Pin the old driver", vector=near, fixes=(WRONG, FIX)),
        _episode(
            2,
            tool="pytest",
            failed_approach="pin the OLD driver",
            vector=(0.99, 0.05, 0.0),
            fixes=(WRONG, FIX),
        ),
        _episode(
            3, success=False, error=None, fixes=("Rewrite the loader",), tool="pytest", vector=(0, 1.0, 0)
        ),
    ]
    by_kind = {
        i.kind: i for i in distil(episodes, {"ep-1", "ep-2", "ep-3"}, ReflectionParams(similarity=0.95))
    }
    assert by_kind["approach"].content.startswith(
        "The approach 'Pin the old driver' failed in 2 tasks: avoid it."
    )
    assert "made it worse" in by_kind["approach"].content
    assert by_kind["tool"].content.startswith("Tasks using the tool 'pytest': 3, of which 2 succeeded (67%)")
    assert by_kind["similar"].episode_ids == ("ep-1", "ep-2")
    # a decision that answered an error is judged as a fix of it, not as a decision that "tends to work"
    assert "decision" not in by_kind
    decided = [
        EpisodeEvidence(
            f"d-{n}", f"t-{n}", "Episode: x", n < 2, 0.7, (StagedEntry(n, 0, "decision", "Use psycopg 3"),)
        )
        for n in range(3)
    ]
    [decision] = distil(decided, {"d-2"})
    assert decision.key == insight_key("decision", "use psycopg 3")
    assert decision.content.endswith("3 tasks: 2 succeeded (67%); it works about half the time.")


def test_distil_is_deterministic_and_keys_survive_redaction() -> None:
    episodes = [_episode(n, tool="ruff") for n in range(1, 6)]
    first = distil(episodes, {"ep-5"})
    assert first == distil(list(episodes), {"ep-5"})
    for insight in first:
        cleaned, counts = redact_json({"key": insight.key})
        assert cleaned == {"key": insight.key} and not counts, insight.key
    with pytest.raises(ValueError):
        distil(episodes, {"ep-5"}, ReflectionParams(min_support=1))


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


def _settings(base_url: str) -> Settings:
    return Settings(llm_base_url=base_url, llm_model="fake-reflector", llm_timeout_seconds=5)


async def test_word_llm_rewords_given_keys_only(fake_openai: FakeOpenAI) -> None:
    insights = distil([_episode(1), _episode(2)], {"ep-2"})
    error = next(i for i in insights if i.kind == "error")

    def chat(body: dict[str, Any]) -> Reply:
        assert body["response_format"]["json_schema"]["name"] == SCHEMA_NAME
        answer = [
            {"key": error.key, "title": "KeyError in the cache", "content": f"Use this: {FIX}."},
            {"key": "insight.error.invented", "title": "x", "content": "made up"},
        ]
        return chat_reply(json.dumps({"insights": answer}))

    fake_openai.chat = chat
    outcome = await word(insights, make_reflector(_settings(fake_openai.base_url)))
    assert outcome.engine == "llm:fake-reflector"
    reworded = next(i for i in outcome.insights if i.key == error.key)
    assert (reworded.title, reworded.content) == ("KeyError in the cache", f"Use this: {FIX}.")
    assert reworded.episode_ids == error.episode_ids  # provenance stays the rules'
    assert [i.key for i in outcome.insights] == [i.key for i in insights]  # nothing invented
    groups = json.loads(fake_openai.chat_requests()[-1]["messages"][1]["content"])["groups"]
    assert {g["key"] for g in groups} == {i.key for i in insights}
    if len(insights) > 1:
        assert (
            outcome.fallback_reason == f"the model left out {len(insights) - 1} of {len(insights)} insights"
        )


@pytest.mark.parametrize(
    "reply", [Reply(status=500, body={"error": {"message": "down"}}), chat_reply("not json")]
)
async def test_word_llm_failure_keeps_the_rules_text(fake_openai: FakeOpenAI, reply: Reply) -> None:
    insights = distil([_episode(1), _episode(2)], {"ep-2"})
    fake_openai.chat = lambda body: reply
    outcome = await word(insights, make_reflector(_settings(fake_openai.base_url)))
    assert outcome.insights == insights and outcome.engine == "rule_based"
    assert outcome.fallback_reason is not None


async def test_word_unreachable_endpoint_and_no_llm() -> None:
    insights = distil([_episode(1), _episode(2)], {"ep-2"})
    outcome = await word(insights, make_reflector(_settings(unreachable_base_url())))
    assert outcome.insights == insights and outcome.fallback_reason is not None
    assert make_reflector(Settings()) is None
    assert (await word(insights, None)).insights == insights
