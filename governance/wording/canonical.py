"""One spelling of what a statement says, and what it names.

Abbreviations and aliases ("k8s", "PR", "v2"), English loanwords in Korean text and units after a number
("30 s" = "30 seconds" = "30초") are written one way before any comparison, so a shortened paraphrase is
no different value. Numbers are read as values (spelt-out ones as digits, "03:00" as 3); named choices
(tools, products, identifiers, weekdays) are the words a near-miss swaps.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

__all__ = [
    "canonical_aliases",
    "quantities",
    "salient_terms",
    "normalise",
    "number_values",
    "named_choices",
    "name_order",
    "latin_words",
    "HANGUL",
    "NUMBER",
    "WORD",
    "CLOCK",
    "WEEKDAYS_KO",
    "UNIT_WORDS",
]

NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
WORD = re.compile(r"[\w']+", re.UNICODE)
WEEKDAYS_KO = ("월요일", "화요일", "수요일", "목요일", "금요일", "토요일", "일요일")
_NUMBER_WORDS = {
    "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7", "eight": "8",
    "nine": "9", "ten": "10", "twice": "2", "once": "1", "first": "1",
    # Korean native numerals before a counter ("두 명", "세 번")
    "한": "1", "두": "2", "세": "3", "네": "4", "다섯": "5", "여섯": "6",
    "일곱": "7", "여덟": "8", "아홉": "9",
    "열": "10",
}  # fmt: skip
# "03:00" is 3 o'clock, also when a Korean particle follows ("03:00에")
CLOCK = re.compile(r"\b(\d{1,2}):00(?!\d)")
# durations and rates spelt out without a digit: "a week" is 7 days, "분당" (per minute) is "1분당"
_SPELT_VALUES: tuple[tuple[str, str], ...] = (
    ("a week", "7 days"),
    ("one week", "7 days"),
    ("일주일", "7일"),
    ("분당", "1분당"),
)


# One name for what abbreviations and aliases spell several ways ("k8s" is "Kubernetes", "PR" is
# "pull request", "v2" is "version 2"), applied before any comparison: a shortened paraphrase is no
# different value.
_ALIASES: tuple[tuple[str, str], ...] = (
    ("k8s", "Kubernetes"),
    ("postgres", "PostgreSQL"),
    ("pg", "PostgreSQL"),
    ("js", "JavaScript"),
    ("ts", "TypeScript"),
    ("db", "database"),
    ("dbs", "databases"),
    ("prs", "pull requests"),
    ("pr", "pull request"),
    ("mfa", "multi-factor authentication"),
    ("2fa", "multi-factor authentication"),
    ("dlq", "dead letter queue"),
    ("req/s", "requests per second"),
    ("rps", "requests per second"),
    ("qps", "queries per second"),
    ("bg", "background"),
    ("prod", "production"),
    ("env", "environment"),
    ("config", "configuration"),
    ("auth", "authentication"),
    ("repo", "repository"),
    ("repos", "repositories"),
    ("app", "application"),
    ("apps", "applications"),
    ("max", "maximum"),
    ("min", "minimum"),
    ("infra", "infrastructure"),
)
# English loanwords written in Latin script inside Korean text, and the Korean word they stand for
_KOREAN_LOANWORDS: tuple[tuple[str, str], ...] = (
    ("kubernetes", "쿠버네티스"),
    ("production", "운영"),
    ("prod", "운영"),
    ("staging", "스테이징"),
    ("database", "데이터베이스"),
    ("db", "데이터베이스"),
    ("deploy", "배포"),
    ("deployment", "배포"),
    ("migration", "마이그레이션"),
    ("pr", "풀 리퀘스트"),
    ("pull request", "풀 리퀘스트"),
    ("test coverage", "테스트 커버리지"),
    ("coverage", "커버리지"),
    ("connection pool", "커넥션 풀"),
    ("background job", "백그라운드 작업"),
    ("load balancer", "로드 밸런서"),
    ("metrics", "메트릭"),
    ("metric", "메트릭"),
    ("access token", "액세스 토큰"),
    ("token", "토큰"),
    ("password", "비밀번호"),
    ("mfa", "다중 인증"),
    ("js", "자바스크립트"),
    ("javascript", "자바스크립트"),
    ("log", "로그"),
    ("logs", "로그"),
    ("replica", "레플리카"),
    ("partition", "파티션"),
    ("dlq", "데드 레터 큐"),
    ("mobile app", "모바일 앱"),
    ("app", "앱"),
    ("cache", "캐시"),
    ("config", "설정"),
    ("repo", "저장소"),
    ("branch", "브랜치"),
    ("timeout", "타임아웃"),
    ("backup", "백업"),
    ("queue", "큐"),
)
_ALIAS_RES = tuple(
    (re.compile(rf"(?<![\w/.-]){re.escape(short)}(?![\w/-])", re.IGNORECASE), long)
    for short, long in _ALIASES
)
_LOANWORD_RES = tuple(
    (re.compile(rf"(?<![A-Za-z]){re.escape(latin)}(?![A-Za-z])", re.IGNORECASE), korean)
    for latin, korean in sorted(_KOREAN_LOANWORDS, key=lambda p: -len(p[0]))
)
_VERSION_PREFIX = re.compile(r"(?<![\w.])v(\d+(?:\.\d+)*)(?!\d)")
# units after a number, by what they measure: "30 s" = "30 seconds" = "30초"; "30 seconds" / "30 minutes"
# differ
_UNITS: dict[str, str] = {
    **dict.fromkeys(("ms", "msec", "millisecond", "milliseconds", "밀리초"), "milliseconds"),
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds", "초"), "seconds"),
    **dict.fromkeys(("min", "mins", "minute", "minutes", "분"), "minutes"),
    **dict.fromkeys(("h", "hr", "hrs", "hour", "hours", "시간"), "hours"),
    **dict.fromkeys(("d", "day", "days", "일"), "days"),
    **dict.fromkeys(("week", "weeks", "주"), "weeks"),
    **dict.fromkeys(("month", "months", "개월", "달"), "months"),
    **dict.fromkeys(("year", "years", "년"), "years"),
    **dict.fromkeys(("b", "byte", "bytes", "바이트"), "bytes"),
    **dict.fromkeys(("kb", "kib", "kilobyte", "kilobytes", "킬로바이트"), "KB"),
    **dict.fromkeys(("mb", "mib", "megabyte", "megabytes", "메가바이트"), "MB"),
    **dict.fromkeys(("gb", "gib", "gigabyte", "gigabytes", "기가바이트"), "GB"),
    **dict.fromkeys(("tb", "tib", "terabyte", "terabytes", "테라바이트"), "TB"),
    **dict.fromkeys(("%", "percent", "per cent", "퍼센트", "프로"), "percent"),
}
# the units as `canonical_aliases` writes them: measures, not names
UNIT_WORDS = frozenset(_UNITS.values())
_QUANTITY = re.compile(
    r"(\d+(?:[.,]\d+)?)\s*("
    + "|".join(re.escape(u) for u in sorted(_UNITS, key=len, reverse=True))
    + r")(?![A-Za-z])",
    re.IGNORECASE,
)


@lru_cache(maxsize=8192)  # a neighbour's text is compared with every candidate near it
def canonical_aliases(text: str) -> str:
    """`text` with abbreviations and aliases spelt one way (and, in Korean text, loanwords in Korean)."""
    text = unicodedata.normalize("NFKC", text)
    korean = bool(HANGUL.search(text))
    text = _VERSION_PREFIX.sub(r"버전 \1" if korean else r"version \1", text)
    if korean:
        for pattern, word in _LOANWORD_RES:
            text = pattern.sub(word, text)
    for pattern, long in _ALIAS_RES:
        text = pattern.sub(long, text)
    return _QUANTITY.sub(lambda m: f"{m.group(1)} {_UNITS[m.group(2).casefold()]}", text)


def quantities(text: str) -> dict[str, set[str]]:
    """Each number that carries a unit, with the units it carries ("45 minutes" -> {"45": {"min"}})."""
    found: dict[str, set[str]] = {}
    for number, unit in _QUANTITY.findall(text):
        value = number.replace(",", ".").lstrip("0") or "0"
        found.setdefault(value, set()).add(_UNITS[unit.casefold()])
    return found


# tools and libraries whose names are written in lower case (so capitalisation does not mark them as names);
# words that are also common English words (black, make, go, node) are left out
_KNOWN_TOOLS = frozenset(
    """ruff flake8 pylint isort mypy pyright pytest unittest tox nox pip pipx poetry pipenv conda uv hatch
    npm yarn pnpm bun deno webpack vite esbuild rollup parcel babel eslint prettier jest vitest mocha cypress
    playwright selenium bcrypt scrypt argon2 argon2id pbkdf2 redis memcached nginx envoy haproxy traefik caddy
    psycopg psycopg2 asyncpg pg8000 sqlalchemy alembic django flask fastapi starlette celery rq dramatiq huey
    kafka rabbitmq nats zeromq helm kubectl kustomize terraform pulumi ansible docker podman git svn bazel
    cmake gradle maven sbt cargo rustc gcc clang postgresql mysql sqlite mariadb mongodb cassandra
    elasticsearch opensearch clickhouse duckdb prometheus grafana datadog sentry jaeger zipkin loki fluentd
    vector logstash kibana airflow dagster prefect temporal spark flink dbt pandas polars numpy""".split()
)


def normalise(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def number_values(text: str) -> set[str]:
    """Numbers as values: spelt-out ones as digits, "03:00" as 3, leading zeros dropped."""
    text = CLOCK.sub(r"\1", text)
    for spelt, value in _SPELT_VALUES:
        text = text.replace(spelt, value)
    found = {n.replace(",", ".") for n in NUMBER.findall(text)}
    found |= {_NUMBER_WORDS[w] for w in text.split() if w in _NUMBER_WORDS}
    return {n.lstrip("0") or "0" for n in found}


HANGUL = re.compile(r"[\uac00-\ud7a3]")
_LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_+#./-]*")
# short upper-case abbreviations are spelt out in paraphrases ("DB" / "database"), so they are no signal
_ABBREVIATION = re.compile(r"^[A-Z]{1,4}s?$")


def named_choices(text: str) -> set[str]:
    """Named choices in a text (tools, products, identifiers), the things a near-miss swaps.

    In Korean text every Latin-script word is such a name; in English ones, words capitalised mid-sentence,
    camel-cased or carrying a digit or path character.
    """
    korean = bool(HANGUL.search(text))
    names = {day for day in WEEKDAYS_KO if day in text}
    for position, match in enumerate(_LATIN_WORD.finditer(text)):
        raw = match.group(0)
        word = raw.rstrip("./-")
        if not word or _ABBREVIATION.match(word) or word in UNIT_WORDS:
            continue
        if korean or word.casefold() in _KNOWN_TOOLS:
            names.add(word.casefold())
        elif (
            raw.endswith("/")  # a path prefix: "feature/<ticket>"
            or (position > 0 and word[0].isupper())
            or any(c.isdigit() or c in "_/" for c in word)
            or (any(c.isupper() for c in word[1:]) and not word.isupper())
        ):
            names.add(word.casefold())
    return names


def salient_terms(text: str) -> tuple[set[str], set[str]]:
    """What a statement names (numbers as values, tools, products, identifiers), and every Latin-script word
    and number it contains: the first of one text should be found among the second of a duplicate."""
    text = canonical_aliases(text)
    numbers = number_values(normalise(text))
    names = named_choices(text) | numbers
    return names, latin_words(text) | numbers | names


def name_order(text: str, names: set[str]) -> list[str]:
    """The names of `names` in the order `text` first writes them."""
    order = []
    for match in _LATIN_WORD.finditer(text):
        word = match.group(0).rstrip("./-").casefold()
        if word in names and word not in order:
            order.append(word)
    return order


def latin_words(text: str) -> set[str]:
    return {w.rstrip("./-").casefold() for w in _LATIN_WORD.findall(text)}
