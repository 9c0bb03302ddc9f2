"""Rule-based intent routing (governance/intent.py's table), English and Korean."""

from __future__ import annotations

import pytest

from governance.intent import INTENT_TYPES, Intent, detect_intent, types_for_intent
from governance.scopes import MemoryType


@pytest.mark.parametrize(
    ("query", "intent"),
    [
        ("psycopg raises OperationalError: connection timed out", Intent.DEBUG),
        ("why does the worker crash with ECONNRESET", Intent.DEBUG),
        ("결제 워커에서 타임아웃 에러가 나요", Intent.DEBUG),
        ("which formatter do we prefer for python", Intent.PREFERENCE),
        ("코드 스타일은 어떤 걸 선호하나요", Intent.PREFERENCE),
        ("what is our tech stack", Intent.PROFILE),
        ("이 프로젝트의 담당자는 누구야", Intent.PROFILE),
        ("what happened last time we upgraded postgres", Intent.RECALL),
        ("지난번 마이그레이션 때 무슨 일이 있었지", Intent.RECALL),
        ("how does the promotion gate work", Intent.KNOWLEDGE),
        ("캐시 무효화 구조를 설명해줘", Intent.KNOWLEDGE),
        ("payments service", Intent.GENERAL),
    ],
)
def test_detect_intent_routes_english_and_korean(query: str, intent: Intent) -> None:
    assert detect_intent(query).intent is intent


def test_detect_intent_reports_its_cues() -> None:
    decision = detect_intent("fix the flaky test")
    assert decision.intent is Intent.DEBUG
    assert set(decision.cues) >= {"fix", "flaky"}


def test_detect_intent_without_cues_searches_every_type() -> None:
    decision = detect_intent("kubernetes ingress")
    assert decision.intent is Intent.GENERAL
    assert decision.types is None


def test_detect_intent_error_identifier_alone_is_debug() -> None:
    assert detect_intent("ERR-4012 in checkout").intent is Intent.DEBUG


def test_types_for_intent_follows_seed_table() -> None:
    assert types_for_intent("profile") == (MemoryType.PROFILE,)
    assert types_for_intent(Intent.RECALL) == (MemoryType.EPISODE,)
    assert MemoryType.BUG_PATTERN in (types_for_intent("debug") or ())
    assert MemoryType.EPISODE in (types_for_intent("debug") or ())
    assert set(types_for_intent("knowledge") or ()) >= {MemoryType.FACT, MemoryType.INSIGHT}
    assert INTENT_TYPES[Intent.GENERAL] is None


def test_types_for_intent_unknown_name_is_rejected() -> None:
    with pytest.raises(ValueError):
        types_for_intent("gossip")


def test_intent_which_thing_do_we_use_asks_for_knowledge() -> None:
    # a decision taken is a fact; "do we use" is not a preference cue
    assert detect_intent("which postgres driver do we use").intent == Intent.KNOWLEDGE
