"""The contradiction judges: conservative rules, and an LLM judge that falls back on any failure."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from governance.adapters.llm_judge import LLMJudge, make_judge
from governance.config import Settings
from governance.supersession import RuleBasedJudge
from governance.wording.differences import material_difference


@pytest.mark.parametrize(
    ("new", "old"),
    [
        ("The API timeout is 60 seconds.", "The API timeout is 30 seconds."),
        ("We use psycopg 3.3 as the database driver.", "We use psycopg 3.2 as the database driver."),
        ("Caching is disabled in the staging environment.", "Caching is enabled in the staging environment."),
        ("Do not run migrations on startup.", "Run migrations on startup."),
        ("스테이징 환경에서 캐시를 비활성화한다.", "스테이징 환경에서 캐시를 활성화한다."),
        ("배포 전에 마이그레이션을 실행하지 않는다.", "배포 전에 마이그레이션을 실행한다."),
        ("API 타임아웃은 60초이다.", "API 타임아웃은 30초이다."),
    ],
)
def test_rule_judge_detects_changed_value_or_polarity(new: str, old: str) -> None:
    assert RuleBasedJudge().judge(new=new, old=old, similarity=0.95).contradicts


@pytest.mark.parametrize(
    ("new", "old"),
    [
        ("The API timeout is 30 seconds.", "API requests time out after 30 seconds."),
        ("Use ruff for linting.", "Run the test suite with pytest -q before pushing."),
        ("Caching is disabled in staging.", "The login page renders a captcha after 5 failed attempts."),
        ("Never commit secrets.", "Never commit secrets to the repository."),
    ],
)
def test_rule_judge_stays_quiet_on_paraphrases_and_other_subjects(new: str, old: str) -> None:
    assert not RuleBasedJudge().judge(new=new, old=old, similarity=0.9).contradicts


def test_rule_judge_ignores_dissimilar_pairs() -> None:
    verdict = RuleBasedJudge().judge(new="timeout is 60 s", old="timeout is 30 s", similarity=0.5)
    assert not verdict.contradicts


def test_material_difference_none_for_case_and_whitespace() -> None:
    assert material_difference("Use  Ruff", "use ruff") is None
    assert material_difference("timeout 30", "timeout 60") is not None


class _Completions:
    def __init__(self, answer: str | Exception) -> None:
        self.answer = answer

    def create(self, **_: Any) -> Any:
        if isinstance(self.answer, Exception):
            raise self.answer
        message = SimpleNamespace(content=self.answer)
        return SimpleNamespace(choices=[SimpleNamespace(message=message)])


def _client(answer: str | Exception) -> Any:
    return SimpleNamespace(chat=SimpleNamespace(completions=_Completions(answer)))


def test_llm_judge_uses_the_json_answer() -> None:
    judge = LLMJudge(
        base_url="http://unused", model="m", client=_client('{"contradicts": true, "reason": "r"}')
    )
    verdict = judge.judge(new="a", old="b", similarity=0.9)
    assert verdict.contradicts and verdict.reason == "r"


@pytest.mark.parametrize("answer", ["not json", '{"contradicts": "yes"}', ConnectionError("down")])
def test_llm_judge_falls_back_to_rules_on_failure(answer: str | Exception) -> None:
    judge = LLMJudge(base_url="http://unused", model="m", client=_client(answer))
    verdict = judge.judge(new="The timeout is 60 s.", old="The timeout is 30 s.", similarity=0.95)
    assert verdict.contradicts  # the rule-based answer


def test_llm_judge_unreachable_endpoint_falls_back() -> None:
    judge = LLMJudge(base_url="http://127.0.0.1:9/v1", model="m", timeout=1.0)
    assert not judge.judge(new="Use ruff.", old="Use pytest.", similarity=0.5).contradicts


def test_make_judge_defaults_to_rules() -> None:
    assert isinstance(make_judge(Settings(llm_base_url=None, llm_model=None)), RuleBasedJudge)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (
            "The payments service is owned by the billing team.",
            "The payments service is owned by the platform team.",
        ),
        (
            "The billing team owns the payments service.",
            "The payments service is owned by the platform team.",
        ),
        (
            "HTTP responses are compressed with gzip above 1 KB.",
            "HTTP responses are compressed with brotli above 1 KB.",
        ),
        (
            "Responses larger than 1 KB get gzip compression.",
            "HTTP responses are compressed with brotli above 1 KB.",
        ),
        ("Always use UTC timestamps in the database.", "Always use local time timestamps in the database."),
        (
            "Branch names follow the pattern feature/<ticket>.",
            "Branch names follow the pattern fix/<ticket>.",
        ),
        ("결제 서비스는 빌링 팀이 담당한다.", "결제 서비스는 플랫폼 팀이 담당한다."),
        ("DB의 타임스탬프는 항상 UTC로 저장한다.", "데이터베이스에는 항상 현지 시간 타임스탬프를 사용한다."),
        ("스테이징에서는 캐시를 끈다.", "스테이징 환경에서는 캐시를 활성화한다."),
        (
            "통합 테스트는 SQLite가 아닌 실제 Postgres에서 실행한다.",
            "통합 테스트는 실제 Postgres가 아닌 SQLite에서 실행한다.",
        ),
    ],
)
def test_material_difference_substituted_owner_tool_or_unit_is_a_difference(a: str, b: str) -> None:
    assert material_difference(a, b) is not None


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("User passwords are hashed with argon2id.", "We hash user passwords using argon2id."),
        ("The frontend is built with Vite and React 18.", "We build the frontend using React 18 and Vite."),
        ("The staging database is reset every Monday.", "Every Monday the staging DB gets reset."),
        ("Kafka topics keep messages for 7 days.", "Messages in Kafka topics are retained for a week."),
        ("린트와 import 정렬에는 ruff를 사용한다.", "ruff로 린트와 import 정렬을 한다."),
        ("야간 보존 작업은 UTC 03:00에 실행된다.", "보존 작업은 매일 밤 UTC 새벽 3시에 돈다."),
    ],
)
def test_material_difference_paraphrase_is_no_difference(a: str, b: str) -> None:
    assert material_difference(a, b) is None
