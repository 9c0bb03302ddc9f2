"""`governance.adapters.llm_cognifier.cognify` against a real OpenAI-compatible chat endpoint on loopback.

The verification evidence outranks the model: an unverified task publishes no LLM candidates and no
skill, whatever the model claims; without an endpoint configured, cognify is the rule-based extractor.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from governance.adapters.llm_cognifier import cognify, make_llm
from governance.cognify import StagedEntry, rule_based_analysis
from governance.config import Settings
from tests.utils.fake_openai import FakeOpenAI, chat_reply

MODEL = "fake-distiller-1"
ENTRIES = [
    StagedEntry(id=101, seq=0, kind="fact", content="db.driver: psycopg 3", payload={"key": "db.driver"}),
    StagedEntry(id=102, seq=1, kind="result", content="All tests pass with psycopg 3."),
]


def _answer(**overrides: Any) -> str:
    analysis: dict[str, Any] = {
        "success": True,
        "reward": 0.9,
        "critique": "fine",
        "key_decisions": ["use psycopg 3"],
        "repeatable": True,
        "summary": "switched the driver",
        "candidates": [
            {
                "memory_type": "skill",
                "title": "Switch the driver",
                "content": "Replace psycopg2 with psycopg.",
                "canonical_key": None,
                "importance": 0.7,
                "source_seqs": [1],
            },
            {
                "memory_type": "fact",
                "title": "Driver",
                "content": "The driver is psycopg 3.",
                "canonical_key": "Not A Key!",
                "importance": 0.8,
                "source_seqs": [0],
            },
        ],
    }
    return json.dumps({**analysis, **overrides})


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


def _settings(base_url: str | None) -> Settings:
    return Settings(llm_base_url=base_url, llm_model=MODEL if base_url else None, llm_timeout_seconds=2.0)


async def test_cognify_without_llm_endpoint_is_rule_based() -> None:
    llm = make_llm(_settings(None))

    outcome = await cognify("switch the driver", ENTRIES, success=True, llm=llm)

    assert llm is None
    assert outcome.analysis == rule_based_analysis("switch the driver", ENTRIES, success=True)
    assert outcome.analysis.engine == "rule_based" and outcome.fallback_reason is None


async def test_cognify_llm_answer_maps_candidates_and_provenance(fake_openai: FakeOpenAI) -> None:
    fake_openai.chat = lambda body: chat_reply(_answer(), MODEL)

    outcome = await cognify(
        "switch the driver", ENTRIES, success=True, llm=make_llm(_settings(fake_openai.base_url))
    )

    analysis = outcome.analysis
    assert outcome.fallback_reason is None and analysis.engine == f"llm:{MODEL}"
    skill, fact = analysis.candidates
    assert skill.memory_type == "skill" and skill.source_entry_ids == [102]
    # a key that breaks the convention is dropped rather than published as a wrong subject
    assert (
        fact.content == "The driver is psycopg 3."
        and fact.canonical_key is None
        and fact.source_entry_ids == [101]
    )
    assert analysis.reward == 0.9 and analysis.repeatable


async def test_cognify_llm_cannot_overrule_failed_verification(fake_openai: FakeOpenAI) -> None:
    fake_openai.chat = lambda body: chat_reply(_answer(success=True, reward=0.95), MODEL)

    outcome = await cognify(
        "switch the driver", ENTRIES, success=False, llm=make_llm(_settings(fake_openai.base_url))
    )

    analysis = outcome.analysis
    assert analysis.engine == f"llm:{MODEL}"
    assert analysis.success is False and analysis.candidates == [] and not analysis.repeatable
    assert analysis.reward <= 0.3
    (request,) = fake_openai.chat_requests()
    assert "Verified outcome: failure" in request["messages"][1]["content"]
