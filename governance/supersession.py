"""Contradiction judges: does a new statement contradict an old one about the same subject?

Supersession needs a decision the canonical key cannot give (two memories about the same thing
without a shared key). Two judges share one protocol:

- `RuleBasedJudge` (default, deterministic, offline): only speaks when the texts are nearly the same
  statement and differ in polarity (a negation on one side), in an opposite pair (enabled/disabled,
  always/never, 허용/금지 ...) or in a number/version. It is deliberately conservative: a false
  "contradicts" would deprecate good knowledge, a false "no" only leaves two related memories.
- `LLMJudge` (governance/adapters/llm_judge.py): any OpenAI-compatible chat endpoint answering JSON; on any
  failure it falls back to the rule-based judge, so a flaky endpoint never blocks promotion.

`material_difference` is also used by deduplication: two texts that differ in a number or a negation are
never merged, however close their embeddings are (embedders place "timeout 30 s" next to "timeout 60 s").
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol

from rapidfuzz import fuzz

__all__ = [
    "Verdict",
    "ContradictionJudge",
    "RuleBasedJudge",
    "material_difference",
    "value_difference",
    "wording_difference",
    "order_difference",
    "order_signals",
    "canonical_aliases",
    "quantities",
    "salient_terms",
]

_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_WORD = re.compile(r"[\w']+", re.UNICODE)

# English negation words, and Korean negation morphemes (they attach to verb stems, so we look inside tokens).
_NEGATION_WORDS = frozenset(
    {
        "not", "no", "never", "none", "nothing", "without", "cannot", "can't", "don't", "doesn't",
        "didn't", "isn't", "aren't", "wasn't", "weren't", "won't", "shouldn't", "mustn't", "avoid",
        "neither", "nor", "instead",
    }
)  # fmt: skip
_KOREAN_NEGATIONS = ("않", "못", "없", "말아", "말고", "말것", "금지", "아니", "아닌", "대신")
# standalone negating words ("안 한다"); as a substring "안" is everywhere ("동안", "보안")
_KOREAN_NEGATION_WORDS = frozenset({"안"})

# Opposite pairs: one side on each text (and not both on one side) reads as a contradiction.
_OPPOSITES: tuple[tuple[frozenset[str], frozenset[str]], ...] = tuple(
    (frozenset(a.split()), frozenset(b.split()))
    for a, b in (
        ("enable enabled enables", "disable disabled disables off"),
        ("true", "false"),
        ("on", "off"),
        ("allow allowed allows", "deny denied denies forbid forbidden forbids"),
        ("always", "never"),
        ("sync synchronous", "async asynchronous"),
        ("required mandatory must", "optional"),
        ("increase increased", "decrease decreased"),
        ("include included", "exclude excluded"),
        ("before", "after"),
        ("deprecated", "recommended"),
        ("safe", "unsafe"),
        ("supported", "unsupported"),
        ("resolve resolved", "unresolved"),
        ("both", "only"),
    )
)
_KOREAN_OPPOSITES: tuple[tuple[str, str], ...] = (
    ("비활성화", "활성화"),
    ("금지", "허용"),
    ("미사용", "사용"),
    ("비동기", "동기"),
    ("선택", "필수"),
    ("감소", "증가"),
    ("제외", "포함"),
    ("후에", "전에"),
    ("반드시", "선택"),
    ("불가능", "가능"),
    ("불필요", "필요"),
    ("비공개", "공개"),
    ("미지원", "지원"),
    ("꺼져", "켜져"),
)
_WEEKDAYS_KO = ("월요일", "화요일", "수요일", "목요일", "금요일", "토요일", "일요일")
_NUMBER_WORDS = {
    "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7", "eight": "8",
    "nine": "9", "ten": "10", "twice": "2", "once": "1", "first": "1",
    # Korean native numerals before a counter ("두 명", "세 번")
    "한": "1", "두": "2", "세": "3", "네": "4", "다섯": "5", "여섯": "6",
    "일곱": "7", "여덟": "8", "아홉": "9",
    "열": "10",
}  # fmt: skip
# "03:00" is 3 o'clock, also when a Korean particle follows ("03:00에")
_CLOCK = re.compile(r"\b(\d{1,2}):00(?!\d)")
# durations and rates spelt out without a digit: "a week" is 7 days, "분당" (per minute) is "1분당"
_SPELT_VALUES: tuple[tuple[str, str], ...] = (
    ("a week", "7 days"),
    ("one week", "7 days"),
    ("일주일", "7일"),
    ("분당", "1분당"),
)
# Korean verbs of switching that carry no 활성화/비활성화: "끈다" (turns off), "켠다" (turns on)
_KOREAN_SWITCHES: tuple[tuple[str, str], ...] = (("끈다", "비활성화한다"), ("켠다", "활성화한다"))
# Choices that look like common words (no capital, digit or path character), grouped by what they choose
# between: naming two members of one group is two different facts ("gzip" / "brotli", "UTC" / "local time").
_CHOICE_GROUPS: tuple[frozenset[str], ...] = (
    frozenset({"gzip", "brotli", "zstd", "deflate", "lz4", "snappy"}),
    frozenset({"utc", "local time", "현지 시간", "kst", "gmt"}),
    frozenset({"json", "yaml", "toml", "xml", "protobuf", "csv"}),
    frozenset({"tabs", "spaces"}),
)
# an owner named before "team" / "팀" ("the billing team", "빌링 팀이")
_TEAM = re.compile(r"(\S+)\s+(?:team|팀)", re.UNICODE)
# words that only mark a contrast: the order of two names matters only next to one ("X, not Y", "Y 대신 X")
_NEVER = re.compile(r"\b(?:never|only)\b|만\b")
_CONTRAST = re.compile(r"\b(?:not|instead|rather|over|than|vs)\b|대신|아니라|아닌|말고")


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
_UNIT_WORDS = frozenset(_UNITS.values())
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
    korean = bool(_HANGUL.search(text))
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


# Korean terms of polarity, glossed in English so that an English text and a Korean one can be compared
_KOREAN_GLOSSES: tuple[tuple[str, str], ...] = (
    ("비활성화", "disabled"),
    ("활성화", "enabled"),
    ("필수", "required"),
    ("반드시", "must"),
    ("선택", "optional"),
    ("금지", "forbidden"),
    ("허용", "allowed"),
    ("증가", "increase"),
    ("감소", "decrease"),
    ("포함", "include"),
    ("제외", "exclude"),
    ("전에", "before"),
    ("후에", "after"),
    ("항상", "always"),
    ("꺼져", "off"),
    ("끈다", "off"),
    ("켜져", "enabled"),
    ("켠다", "enabled"),
)
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


def _gloss(korean: str) -> str:
    """The English glosses of the polarity terms in a Korean text ("비활성화" is not also "활성화")."""
    words = []
    for term, gloss in _KOREAN_GLOSSES:
        if term in korean:
            words.append(gloss)
            korean = korean.replace(term, " ")
    return " ".join(words)


def _unit_difference(a: str, b: str) -> str | None:
    qa, qb = quantities(a), quantities(b)
    for value in sorted(qa.keys() & qb.keys()):
        if not qa[value] & qb[value]:
            return f"different units: {value} {sorted(qa[value])} vs {sorted(qb[value])}"
    return None


@dataclass(frozen=True)
class Verdict:
    """A judge's answer: whether the new text contradicts the old one, and why (kept as the note)."""

    contradicts: bool
    reason: str


class ContradictionJudge(Protocol):
    """Decides whether `new` contradicts `old`; `similarity` is their embedding cosine (a hint).

    `blocking` says whether `judge` waits on the network (callers then run it in a thread).
    """

    blocking: bool

    def judge(self, *, new: str, old: str, similarity: float) -> Verdict: ...


def _normalise(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def _numbers(text: str) -> set[str]:
    """Numbers as values: spelt-out ones as digits, "03:00" as 3, leading zeros dropped."""
    text = _CLOCK.sub(r"\1", text)
    for spelt, value in _SPELT_VALUES:
        text = text.replace(spelt, value)
    found = {n.replace(",", ".") for n in _NUMBER.findall(text)}
    found |= {_NUMBER_WORDS[w] for w in text.split() if w in _NUMBER_WORDS}
    return {n.lstrip("0") or "0" for n in found}


# "once it has ..." is "when", not a count
_ONCE_WHEN = re.compile(r"\bonce (?:it|its|the|a|an|we|they|you|this|that|there|all|every)\b")


def _article_one(a: str, b: str, nums_a: set[str], nums_b: set[str]) -> bool:
    """The values differ only by a spelt-out "one" ("for one hour" / "for the first hour", "한 페이지에
    50개" / "페이지당 50개"), read as an article, not a value, when that side has no digit 1; or by "once"
    meaning "when" ("once it has 5 failures")."""
    if nums_a ^ nums_b != {"1"}:
        return False
    side = a if "1" in nums_a else b
    if _ONCE_WHEN.search(side):
        return True
    return not re.search(r"(?<![\d.,])0*1(?![\d.,])", _CLOCK.sub(r"\1", side)) and bool(
        re.search(r"(?<!\w)(?:one|한)(?!\w)", side)
    )


def _negated(text: str) -> bool:
    """Odd number of negations: a double negation reads as an affirmation."""
    words = _WORD.findall(text)
    count = sum(1 for w in words if w in _NEGATION_WORDS or w.endswith("n't"))
    count += sum(text.count(marker) for marker in _KOREAN_NEGATIONS)
    count += sum(1 for w in text.split() if w in _KOREAN_NEGATION_WORDS)
    return count % 2 == 1


def _skeleton(text: str) -> str:
    """The text without numbers and negation markers: what both sides say if they say the same thing."""
    text = _NUMBER.sub(" ", text)
    for marker in _KOREAN_NEGATIONS:
        text = text.replace(marker, " ")
    words = [w for w in _WORD.findall(text) if w not in _NEGATION_WORDS and not w.endswith("n't")]
    return "".join(words)


def _overlap(a: str, b: str) -> float:
    """Jaccard overlap of character bigrams (works for Korean, where particles glue onto words)."""
    grams_a = {a[i : i + 2] for i in range(max(1, len(a) - 1))}
    grams_b = {b[i : i + 2] for i in range(max(1, len(b) - 1))}
    if not grams_a or not grams_b:
        return 0.0
    return len(grams_a & grams_b) / len(grams_a | grams_b)


# "optional" on one side only: "every administrator uses MFA" / "MFA is optional for administrators"
_OPTIONAL = re.compile(r"\boptional(?:ly)?\b|선택\s*사항|선택이다|선택적")


def _stems(text: str) -> set[str]:
    return {w[:5] for w in _WORD.findall(text) if len(w) > 2}


def _converse(a: str, b: str) -> bool:
    """ "X before Y" and "Y after X" (either way round): one order of events said twice, no opposite."""
    for first, second in ((a, b), (b, a)):
        if " before " in first and " after " in second:
            f1, f2 = (_stems(part) for part in first.split(" before ", 1))
            s1, s2 = (_stems(part) for part in second.split(" after ", 1))
            return len(f1 & s2) + len(f2 & s1) > len(f1 & s1) + len(f2 & s2)
    return False


def _opposite(a: str, b: str) -> str | None:
    words_a, words_b = set(_WORD.findall(a)), set(_WORD.findall(b))
    for left, right in _OPPOSITES:
        a_left, a_right = bool(words_a & left), bool(words_a & right)
        b_left, b_right = bool(words_b & left), bool(words_b & right)
        if (a_left and not a_right and b_right and not b_left) or (
            a_right and not a_left and b_left and not b_right
        ):
            if "before" in left and _converse(a, b):
                continue
            return f"{sorted(left)[0]}/{sorted(right)[0]}"
    optional_a, optional_b = bool(_OPTIONAL.search(a)), bool(_OPTIONAL.search(b))
    if optional_a != optional_b:
        return "optional on one side only"
    for longer, shorter in _KOREAN_OPPOSITES:
        # "비활성화" contains "활성화": count the short form only where it is not part of the long one
        a_long, b_long = longer in a, longer in b
        a_short = shorter in a.replace(longer, "")
        b_short = shorter in b.replace(longer, "")
        if (a_long and not a_short and b_short and not b_long) or (
            b_long and not b_short and a_short and not a_long
        ):
            return f"{shorter}/{longer}"
    return None


_HANGUL = re.compile(r"[\uac00-\ud7a3]")
_LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_+#./-]*")
# short upper-case abbreviations are spelt out in paraphrases ("DB" / "database"), so they are no signal
_ABBREVIATION = re.compile(r"^[A-Z]{1,4}s?$")


def _names(text: str) -> set[str]:
    """Named choices in a text (tools, products, identifiers), the things a near-miss swaps.

    In Korean text every Latin-script word is such a name; in English ones, words capitalised mid-sentence,
    camel-cased or carrying a digit or path character.
    """
    korean = bool(_HANGUL.search(text))
    names = {day for day in _WEEKDAYS_KO if day in text}
    for position, match in enumerate(_LATIN_WORD.finditer(text)):
        raw = match.group(0)
        word = raw.rstrip("./-")
        if not word or _ABBREVIATION.match(word) or word in _UNIT_WORDS:
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
    numbers = _numbers(_normalise(text))
    names = _names(text) | numbers
    return names, _latin_words(text) | numbers | names


def _name_order(text: str, names: set[str]) -> list[str]:
    order = []
    for match in _LATIN_WORD.finditer(text):
        word = match.group(0).rstrip("./-").casefold()
        if word in names and word not in order:
            order.append(word)
    return order


def _latin_words(text: str) -> set[str]:
    return {w.rstrip("./-").casefold() for w in _LATIN_WORD.findall(text)}


def _raw_tokens(text: str) -> list[str]:
    return [w.strip(".,;:!?()\"'") for w in text.split() if w.strip(".,;:!?()\"'")]


def _looks_named(word: str) -> bool:
    """A word written as a name: capitalised, upper-case or carrying a digit (not a Korean word)."""
    if not word or not word.isascii() or word.casefold() in _OPENING_WORDS:
        return False
    return word[0].isupper() or any(c.isdigit() for c in word)


# words a sentence opens with, capitalised only for being first
_OPENING_WORDS = frozenset(
    "the a an our we they you this that these those every each all some any it its their my no "
    "in on at after before for when if by with from to".split()
)


def _substitution(a: str, b: str) -> str | None:
    """Words swapped for others in the same place, the rest identical: another value, not a paraphrase.

    "owned by the billing team" / "owned by the platform team", "pattern feature/<ticket>" / "pattern
    fix/<ticket>": both neighbours of the swapped words are shared, and the texts align otherwise (at
    least 3/4 of their words in order). Synonym swaps in paraphrases rarely keep every other word.
    """
    teams_a, teams_b = set(_TEAM.findall(a.casefold())), set(_TEAM.findall(b.casefold()))
    if teams_a and teams_b and not teams_a & teams_b:
        return f"different owners: {sorted(teams_a)} vs {sorted(teams_b)}"
    raw_a, raw_b = _raw_tokens(a), _raw_tokens(b)
    ta, tb = [w.casefold() for w in raw_a], [w.casefold() for w in raw_b]
    matcher = difflib.SequenceMatcher(a=ta, b=tb, autojunk=False)
    if matcher.ratio() < 0.75:
        return None
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op != "replace" or max(i2 - i1, j2 - j1) > 2:
            continue
        left, right = ta[i1:i2], tb[j1:j2]
        # an inflection of the same word (owns/owned, 담당한다/담당했다) is no new value
        if len(left) == len(right) == 1 and left[0][:3] == right[0][:3]:
            continue
        if i1 == 0 or j1 == 0 or i2 >= len(ta) or j2 >= len(tb):
            # at an edge only one neighbour is shared: count a single word swapped for a single word, and
            # at the start only a name for a name ("Kafka carries ..." / "NATS carries ...")
            if len(left) != 1 or len(right) != 1 or min(len(left[0]), len(right[0])) < 3:
                continue
            if (i1 == 0 or j1 == 0) and not (_looks_named(raw_a[i1]) and _looks_named(raw_b[j1])):
                continue
        return f"substituted {' '.join(left)!r} for {' '.join(right)!r}"
    return None


def _choices(a: str, b: str) -> str | None:
    """Two members of one choice group, one on each side only (texts normalised)."""
    for group in _CHOICE_GROUPS:
        in_a = {c for c in group if re.search(rf"(?<!\w){re.escape(c)}(?![A-Za-z0-9_])", a)}
        in_b = {c for c in group if re.search(rf"(?<!\w){re.escape(c)}(?![A-Za-z0-9_])", b)}
        if in_a and in_b and in_a != in_b and not (in_a & in_b):
            return f"different choices: {sorted(in_a)} vs {sorted(in_b)}"
    return None


# words that carry no role of their own: their moving about says nothing about who does what to whom
_FUNCTION_WORDS = frozenset(
    "the a an of in on at to for from by with and or as is are was were be been being it its this that "
    "these those which who whom whose he she they his her their them we our you your i my me also then "
    "there here has have had do does did will would can could should may might must into onto upon over "
    "under between through during after before while since until about against among within without".split()
)
# qualifiers whose place decides what they qualify: "only admins can deploy on Friday" / "admins can
# deploy only on Friday"
_SCOPE_WORDS = frozenset("only not never no except without".split())
# a moved qualifier counts between texts sharing at least this share of their words (Jaccard)
_QUALIFIER_SHARED_WORDS = 0.7
_ARTICLES = frozenset({"the", "a", "an"})
# an exchange needs one of the two words standing where the other stood (chosen on the PAWS tune part:
# requiring both let 0.058 of different-meaning pairs merge there, one 0.041, the labelled sets unchanged)
_EXCHANGE_SLOTS = 1
_PREPOSITIONS = frozenset("in on at by with for from to via through of into onto under over".split())
_COORDINATORS = frozenset({"and", "or", "nor", "plus", "&"})


# "the same words in another order": both texts of at least 12 words, their word sets nearly equal
# (rapidfuzz token_set_ratio >= 0.8), the in-order alignment (difflib ratio of the word sequences) at
# least 0.2 below that, and the shared words in three or more runs (a phrase moved whole makes two);
# chosen on the tune part of PAWS-Wiki dev (docs/dedup-calibration.md). Shorter
# texts are left to the exchange test: a short paraphrase often turns a sentence round ("We use psycopg 3
# as the PostgreSQL driver" / "The PostgreSQL driver we use is psycopg 3")
_REORDER_MIN_WORDS = 12
_REORDER_MIN_RUNS = 3
_REORDER_SAME_WORDS = 0.8
_REORDER_GAP = 0.2


def _order_tokens(text: str, *, join_names: bool = False) -> tuple[list[str], list[bool]]:
    """Case-folded words without punctuation, and which of them carry content (a role: a name, a noun,
    a number, a qualifier); a lone upper-case letter ("A calls B") is a name, not an article. With
    `join_names`, a name of several capitalised words is one token ("Emma Townshend" -> "emma_townshend"):
    it fills one role."""
    raw = [w.strip(".,;:!?()[]{}\"'`") for w in text.split()]
    raw = [w for w in raw if w]
    words: list[str] = []
    named: list[bool] = []
    for w in raw:
        capital = w[0].isupper() and w.casefold() not in _FUNCTION_WORDS and len(w) > 1
        if join_names and capital and named and named[-1]:
            words[-1] = f"{words[-1]}_{w}"
        else:
            words.append(w)
            named.append(capital)
    folded = [w.casefold() for w in words]
    content = [
        f not in _FUNCTION_WORDS or (len(w) == 1 and w.isupper()) for w, f in zip(words, folded, strict=True)
    ]
    return folded, content


def _shape(word: str) -> str:
    return "number" if any(c.isdigit() for c in word) else "word"


def order_difference(a: str, b: str) -> str | None:
    """Two texts of (nearly) the same words whose order says another thing, or None.

    Word order carries meaning where two words exchange places: swapped entities or roles ("A calls B" /
    "B calls A", "migrate from X to Y" / "from Y to X", "34 Nigerians, 28 Chadians" / "34 Chadians, 28
    Nigerians", "useless against X, effective against Y" / the other way), and where a qualifier moves
    ("only admins deploy on Friday" / "admins deploy only on Friday").

    An exchange: two content words x, y of one shape (two words or two numbers) that each text holds
    once, in opposite order, one standing where the other stood (the same non-article word before or
    after it), with a word between them in both texts (the middle that stays: "calls", "to"), and no
    preposition put before one of them that it lacked ("The CI runs the suite" / "the suite runs in
    CI"). A phrase moved as a whole ("In August, X left" / "X left in August"), two adjacent words turned
    round ("black southern" / "southern black") or a date moved past a place ("in Gloucester in 1923" /
    "in 1923 in Gloucester") has no such middle, or no such pair, and is no exchange. A moved qualifier:
    `only`, `not`, `never`, `all`, ... taken out in one place and put in at another (difflib alignment).
    Beyond these, texts of 12 words or more, of nearly the same words (word sets >= 0.8 alike), whose
    in-order alignment falls 0.2 or more below that and whose shared words fall in three or more runs
    (not one phrase moved) are taken as different statements: a paraphrase
    that only reorders is refused a merge too, so no fact is lost where the roles are not clear
    (PAWS-shaped pairs).
    Latin-script texts only: Korean marks roles with particles, so its order is free.
    """
    if _HANGUL.search(a) or _HANGUL.search(b):
        return None
    ca_text, cb_text = canonical_aliases(a), canonical_aliases(b)
    ta, content_a = _order_tokens(ca_text)
    tb, _ = _order_tokens(cb_text)
    if ta == tb:
        return None
    # names of several words are compared whole and word by word ("Sir Edward Hulton" fills one role,
    # but "Santa Cruz Sky Park" / "Santa Cruz County" differ in one word)
    na, named_a = _order_tokens(ca_text, join_names=True)
    nb, _ = _order_tokens(cb_text, join_names=True)
    return (
        _exchange(ta, content_a, tb)
        or _exchange(na, named_a, nb)
        or _moved_qualifier(ta, tb)
        or _reordered(ta, tb)
    )


def order_signals(a: str, b: str) -> tuple[bool, bool, bool]:
    """Which rules of `order_difference` speak for two Latin-script texts: (an exchange of two words, a
    moved qualifier, a long reordering); all False for Korean text."""
    if _HANGUL.search(a) or _HANGUL.search(b):
        return (False, False, False)
    ca_text, cb_text = canonical_aliases(a), canonical_aliases(b)
    ta, content_a = _order_tokens(ca_text)
    tb, _ = _order_tokens(cb_text)
    if ta == tb:
        return (False, False, False)
    na, named_a = _order_tokens(ca_text, join_names=True)
    nb, _ = _order_tokens(cb_text, join_names=True)
    exchange = _exchange(ta, content_a, tb) or _exchange(na, named_a, nb)
    return (exchange is not None, _moved_qualifier(ta, tb) is not None, _reordered(ta, tb) is not None)


def _once(tokens: list[str]) -> dict[str, int]:
    """Each word the text holds exactly once, and where."""
    return {w: i for i, w in enumerate(tokens) if tokens.count(w) == 1}


def _slot(tokens: list[str], i: int) -> set[tuple[str, str]]:
    """Where a word stands: the word before it and the word after it (an article, or the text's edge,
    marks no place: "The payments team ..." / "The batch pipeline's ..." is no exchange)."""
    found = set()
    if i > 0 and tokens[i - 1] not in _ARTICLES:
        found.add(("before", tokens[i - 1]))
    if i + 1 < len(tokens) and tokens[i + 1] not in _ARTICLES:
        found.add(("after", tokens[i + 1]))
    return found


def _preposition(tokens: list[str], i: int) -> str:
    """The preposition right before a word, or ""."""
    return tokens[i - 1] if i > 0 and tokens[i - 1] in _PREPOSITIONS else ""


def _exchange(ta: list[str], ca: list[bool], tb: list[str]) -> str | None:
    """Two content words of one shape in opposite order, one standing where the other stood, a word
    between them in both texts that is no mere "and" ("React and Webpack" / "Webpack and React" lists the
    same two); not where a preposition marks one of them anew ("The CI runs ..." / "... runs in CI")."""
    once_a, once_b = _once(ta), _once(tb)
    shared = sorted(once_a.keys() & once_b.keys(), key=lambda w: once_a[w])
    content = [w for w in shared if ca[once_a[w]]]
    for k, x in enumerate(content):
        for y in content[k + 1 :]:
            if _shape(x) != _shape(y) or once_b[y] > once_b[x]:
                continue
            slots = bool(_slot(ta, once_a[x]) & _slot(tb, once_b[y])) + bool(
                _slot(ta, once_a[y]) & _slot(tb, once_b[x])
            )
            if slots == 1 and (
                _preposition(ta, once_a[x]) != _preposition(tb, once_b[x])
                or _preposition(ta, once_a[y]) != _preposition(tb, once_b[y])
            ):
                # one word's role is marked anew ("The CI runs the suite" / "the suite runs in CI")
                continue
            between_a = set(ta[once_a[x] + 1 : once_a[y]])
            between_b = set(tb[once_b[y] + 1 : once_b[x]])
            if slots >= _EXCHANGE_SLOTS and (between_a & between_b) - _COORDINATORS:
                return f"{x!r} and {y!r} exchanged places"
    return None


def _moved_qualifier(ta: list[str], tb: list[str]) -> str | None:
    """`only`, `not`, `never` ... taken out in one place and put in at another, before another word
    ("only admins" / "only on Friday"), in texts of nearly the same words (else the sentence was said
    anew: "stored in the vault, never in the repository" / "never commit them to the repo"); moved with
    the word it qualifies, it says the same."""
    if len(set(ta) & set(tb)) < _QUALIFIER_SHARED_WORDS * len(set(ta) | set(tb)):
        return None
    for w in sorted(_SCOPE_WORDS & set(ta) & set(tb)):
        if ta.count(w) != 1 or tb.count(w) != 1:
            continue
        i, j = ta.index(w), tb.index(w)
        after_a = ta[i + 1] if i + 1 < len(ta) else ""
        after_b = tb[j + 1] if j + 1 < len(tb) else ""
        before_a = ta[i - 1] if i > 0 else ""
        before_b = tb[j - 1] if j > 0 else ""
        if after_a != after_b and before_a != before_b:
            return f"the qualifier {w!r} moved"
    return None


def _reordered(ta: list[str], tb: list[str]) -> str | None:
    """Long texts of nearly the same words whose order differs in three or more places."""
    if min(len(ta), len(tb)) < _REORDER_MIN_WORDS:
        return None
    same_words = fuzz.token_set_ratio(" ".join(ta), " ".join(tb)) / 100.0
    in_order = difflib.SequenceMatcher(a=ta, b=tb, autojunk=False).ratio()
    if same_words < _REORDER_SAME_WORDS or same_words - in_order < _REORDER_GAP:
        return None
    once_a, once_b = _once(ta), _once(tb)
    positions = [once_a[w] for w in sorted(once_a.keys() & once_b.keys(), key=lambda w: once_b[w])]
    runs = 1 + sum(1 for p, q in zip(positions, positions[1:], strict=False) if q < p)
    if runs < _REORDER_MIN_RUNS:
        return None
    return f"the same words in another order (word sets {same_words:.2f}, in order {in_order:.2f})"


def material_difference(a: str, b: str) -> str | None:
    """Why two near-identical texts still say different things, or None.

    Checked: named choices (tools, products, weekdays) one side names and the other never mentions, the
    same names in swapped order ("Postgres, not SQLite" / "SQLite, not Postgres"), numbers (spelt-out
    ones too), a negation on one side only, and opposite terms.
    """
    if _normalise(a) == _normalise(b):
        return None
    a, b = canonical_aliases(a), canonical_aliases(b)
    if bool(_HANGUL.search(a)) == bool(_HANGUL.search(b)):
        named = _named_difference(a, b)
        if named:
            return named
        return _value_difference(a, b) or _substitution(a, b)
    return _value_difference(a, b)


def value_difference(a: str, b: str) -> str | None:
    """The part of `material_difference` no rewording explains, or None: another number, unit or version, a
    negation on one side, opposite terms, another member of a choice group (gzip/brotli) or another owner;
    between an English and a Korean text, also a name swapped across them.

    Left out (see `wording_difference`): a name one side writes and the other does not, the same names or
    words in another order around a contrast, and a substituted word — what a paraphrase of a long
    sentence also does ("the Royal Navy" / "the navy"), and what `governance.order_model` weighs instead.
    """
    if _normalise(a) == _normalise(b):
        return None
    a, b = canonical_aliases(a), canonical_aliases(b)
    if bool(_HANGUL.search(a)) == bool(_HANGUL.search(b)):
        teams_a, teams_b = set(_TEAM.findall(a.casefold())), set(_TEAM.findall(b.casefold()))
        if teams_a and teams_b and not teams_a & teams_b:
            return f"different owners: {sorted(teams_a)} vs {sorted(teams_b)}"
    return _value_difference(a, b)


def wording_difference(a: str, b: str) -> tuple[bool, bool, bool]:
    """Which of the wording checks of `material_difference` speak for two texts of one script: (a name on
    one side only, the same names or words in another order around a contrast, a substituted word)."""
    if _normalise(a) == _normalise(b):
        return (False, False, False)
    a, b = canonical_aliases(a), canonical_aliases(b)
    if bool(_HANGUL.search(a)) != bool(_HANGUL.search(b)):
        return (False, False, False)
    named = _named_difference(a, b) or ""
    return (
        named.startswith("different named choices"),
        "another order" in named,
        _substitution(a, b) is not None,
    )


def _named_difference(a: str, b: str) -> str | None:
    """Named choices one side writes and the other does not; the same names, or words, in another order next
    to a contrast. Same-script texts, aliases spelt one way."""
    names_a, names_b = _names(a), _names(b)
    words_a = _latin_words(a) | {d for d in _WEEKDAYS_KO if d in a}
    words_b = _latin_words(b) | {d for d in _WEEKDAYS_KO if d in b}
    only_a, only_b = names_a - words_b, names_b - words_a
    if only_a or only_b:
        return f"different named choices: {sorted(only_a)} vs {sorted(only_b)}"
    shared = names_a & names_b
    contrast = bool(_CONTRAST.search(a.casefold())) or bool(_CONTRAST.search(b.casefold()))
    if contrast and len(shared) >= 2 and _name_order(a, shared) != _name_order(b, shared):
        return f"the same names in another order: {_name_order(a, shared)} vs {_name_order(b, shared)}"
    tokens_a, tokens_b = _raw_tokens(a.casefold()), _raw_tokens(b.casefold())
    polar = contrast or bool(_NEVER.search(a.casefold()))
    if polar and tokens_a != tokens_b and sorted(tokens_a) == sorted(tokens_b):
        # "on the server, never in the browser" / "in the browser, never on the server"
        return "the same words in another order around a contrast"
    return None


def _value_difference(a: str, b: str) -> str | None:
    """Numbers, units, a negation, opposite terms, choice groups (aliases spelt one way); between an English
    and a Korean text also a name swapped across them and the Korean polarity terms glossed."""
    same_script = bool(_HANGUL.search(a)) == bool(_HANGUL.search(b))
    if not same_script:
        # an English text and a Korean one: a name on each side that the other does not write is a swap
        # ("managed in Crowdin" / "Lokalise에서 관리한다"); a name on one side only is a translation's freedom
        english, korean = (a, b) if _HANGUL.search(b) else (b, a)
        latin_ko = {n for n in _names(korean) if n.isascii()} - _UNIT_WORDS
        only_en = _names(english) - _latin_words(korean)
        only_ko = latin_ko - _latin_words(english)
        if only_en and only_ko:
            return f"different named choices: {sorted(only_en)} vs {sorted(only_ko)}"
    na, nb = _normalise(a), _normalise(b)
    for spoken, plain in _KOREAN_SWITCHES:
        na, nb = na.replace(spoken, plain), nb.replace(spoken, plain)
    nums_a, nums_b = _numbers(na), _numbers(nb)
    if nums_a != nums_b and (nums_a or nums_b) and not _article_one(na, nb, nums_a, nums_b):
        return f"different values: {sorted(nums_a - nums_b)} vs {sorted(nums_b - nums_a)}"
    units = _unit_difference(na, nb)
    if units:
        return units
    if _negated(na) != _negated(nb):
        return "one states the negation of the other"
    pair = _opposite(na, nb)
    if pair:
        return f"opposite terms ({pair})"
    chosen = _choices(na, nb)
    if chosen:
        return chosen
    if same_script:
        return None
    # an English text and a Korean one: their polarity terms, the Korean ones glossed
    english, korean = (na, nb) if _HANGUL.search(nb) else (nb, na)
    pair = _opposite(english, _gloss(korean))
    return f"opposite terms ({pair})" if pair else None


class RuleBasedJudge:
    """Deterministic judge: a contradiction is the same statement with a different value or polarity."""

    blocking = False

    def __init__(self, *, min_similarity: float = 0.8, min_overlap: float = 0.55) -> None:
        self.min_similarity = min_similarity
        self.min_overlap = min_overlap

    def judge(self, *, new: str, old: str, similarity: float) -> Verdict:
        if similarity < self.min_similarity:
            return Verdict(False, "not about the same subject")
        na, nb = _normalise(new), _normalise(old)
        difference = material_difference(na, nb)
        if difference is None:
            return Verdict(False, "no contradicting value, negation or opposite")
        # the same words with roles exchanged are another fact beside the old one, not its new version
        exchanged = order_difference(new, old)
        if exchanged is not None:
            return Verdict(False, f"{difference}, but {exchanged}: another statement, not a revision")
        # the rest of the text must be (nearly) the same statement, else they are two different facts
        if _overlap(_skeleton(na), _skeleton(nb)) < self.min_overlap:
            return Verdict(False, f"{difference}, but the statements differ otherwise")
        return Verdict(True, difference)
