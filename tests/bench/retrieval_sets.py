"""Two more labelled retrieval sets, generated deterministically: multi-session conversations, a coding agent.

    python tests/bench/retrieval_sets.py   # writes tests/data/retrieval_conversation/, retrieval_coding/

**Conversation** (`retrieval_conversation/`): people talk to an assistant over many sessions. Each session
is staged as one task and promoted, so it becomes one `episode` (a summary mentioning two or three events)
plus the `fact`, `profile` and `preference` memories distilled from it. Everyone lives through the same
kinds of events (a move, a new job, a pet, a trip, an illness, a purchase ...) with other cities, dates and
names, so every memory has near-twins. Questions ask who/what/when, in English and Korean, and are worded
the way people ask ("When did Mina move to Busan?", "지난번에 지우가 입양한 고양이 이름이 뭐였지?"): their
cue words route them to `recall` although a fact answers them. The fact and the session's episode both
count as relevant.

**Coding** (`retrieval_coding/`): a coding agent's project memory over a dozen components: errors with
their fixes (`bug_pattern`), decisions (`fact`), rules (`code_rule`), task runs (`episode`), lessons
(`insight`), and superseded choices: the old decision stays in the set, deprecated, and only the new one
(which says what it replaced and why) is relevant. Questions quote error strings and identifiers, ask why a
choice was made, what replaced what, and how something was fixed, in English and Korean.

Each memory row may carry `deprecated: true` (loaded with `deprecated_at` set, as supersession leaves it).
"""

from __future__ import annotations

import json
import random
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

__all__ = ["SetMemory", "SetQuery", "conversation_set", "coding_set", "write_sets"]

DATA = Path(__file__).resolve().parents[1] / "data"
SEED = 20261123


@dataclass(frozen=True)
class SetMemory:
    """One memory of a set."""

    id: str
    memory_type: str
    title: str
    content: str
    lang: str
    deprecated: bool = False


@dataclass(frozen=True)
class SetQuery:
    """A labelled question: the memories that answer it, and what kind of question it is."""

    id: str
    query: str
    relevant: list[str] = field(default_factory=list)
    kind: str = ""
    lang: str = "en"


# ---------------------------------------------------------------- conversation
EN_PEOPLE = [
    "Mina", "Daniel", "Priya", "Tomas", "Grace", "Omar", "Lucia", "Ethan", "Hana", "Noah", "Sofia", "Liam",
    "Aisha", "Mateo", "Chloe", "Ravi",
]  # fmt: skip
KO_PEOPLE = [
    "민아", "지우", "서준", "하린", "도윤", "수빈", "예준", "지민", "유나", "현우", "다은", "시우", "채원",
    "건우", "소연", "태민",
]  # fmt: skip


def _j(word: str, with_final: str, without: str) -> str:
    """`word` and the Korean particle its last syllable takes (은/는, 이/가, 을/를, 과/와, 으로/로)."""
    last = ord(word[-1]) - 0xAC00
    final = 0 <= last < 11172 and last % 28 != 0
    if with_final == "으로" and final and last % 28 == 8:  # a final ㄹ takes 로
        return word + without
    return word + (with_final if final else without)


EN_CITIES = [
    "Busan",
    "Lisbon",
    "Denver",
    "Osaka",
    "Toronto",
    "Berlin",
    "Austin",
    "Melbourne",
    "Seattle",
    "Porto",
]
KO_CITIES = ["부산", "대구", "제주", "광주", "인천", "대전", "강릉", "전주", "수원", "울산"]
EN_MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
EN_JOBS = ["a shipyard", "a bakery", "a game studio", "a hospital", "a law firm", "a bike shop", "a school"]
KO_JOBS = ["조선소", "빵집", "게임 회사", "병원", "법률 사무소", "자전거 가게", "초등학교"]
EN_PETS = [("cat", "Dubu"), ("dog", "Biscuit"), ("cat", "Miso"), ("dog", "Pepper"), ("parrot", "Kiwi")]
KO_PETS = [("고양이", "두부"), ("강아지", "콩이"), ("고양이", "치즈"), ("강아지", "보리"), ("앵무새", "초코")]
EN_GIFTS = ["a record player", "a rice cooker", "a telescope", "a pair of hiking boots", "a sewing machine"]
KO_GIFTS = ["턴테이블", "전기밥솥", "천체망원경", "등산화", "재봉틀"]
EN_HOBBIES = ["pottery", "rock climbing", "salsa dancing", "bird watching", "chess", "sourdough baking"]
KO_HOBBIES = ["도자기 공예", "클라이밍", "살사 댄스", "탐조", "체스", "사워도우 굽기"]
EN_DRINKS = ["green tea", "oat-milk lattes", "black coffee", "barley tea", "hot chocolate"]
KO_DRINKS = ["녹차", "오트 라떼", "아메리카노", "보리차", "핫초코"]
EN_RELATIVES = ["sister", "brother", "cousin", "best friend", "mother"]
KO_RELATIVES = ["언니", "남동생", "사촌", "친한 친구", "어머니"]


def _en_events(name: str, rng: random.Random, used: set[str]) -> list[tuple[str, str, str, list[str]]]:
    """(event kind, memory type, fact sentence, [questions]) for an English-speaking person."""
    city = rng.choice(EN_CITIES)
    month, year = rng.choice(EN_MONTHS), rng.choice([2022, 2023, 2024])
    job = rng.choice(EN_JOBS)
    pet, pet_name = rng.choice(EN_PETS)
    gift, rel = rng.choice(EN_GIFTS), rng.choice(EN_RELATIVES)
    hobby, drink = rng.choice(EN_HOBBIES), rng.choice(EN_DRINKS)
    trip_city = rng.choice([c for c in EN_CITIES if c != city])
    day = rng.randint(2, 27)
    return [
        (
            "move",
            "fact",
            f"{name} moved to {city} in {month} {year}.",
            [f"When did {name} move to {city}?", f"Where did {name} move in {year}?"],
        ),
        (
            "job",
            "profile",
            f"{name} started working at {job} in {city} after the move.",
            [f"Where does {name} work now?", f"Who started a job at {job}?"],
        ),
        (
            "pet",
            "fact",
            f"{name} adopted a {pet} named {pet_name} from a shelter in {month} {year}.",
            [f"What is the name of {name}'s {pet}?", f"Do you remember when {name} adopted {pet_name}?"],
        ),
        (
            "gift",
            "fact",
            f"{name} bought {gift} for their {rel}'s birthday on {month} {day}.",
            [f"What did {name} buy for their {rel}'s birthday?", f"When is the birthday of {name}'s {rel}?"],
        ),
        (
            "hobby",
            "preference",
            f"{name} took up {hobby} and goes every weekend.",
            [f"What hobby did {name} pick up?", f"Who does {hobby} on weekends?"],
        ),
        (
            "drink",
            "preference",
            f"{name} prefers {drink} and avoids anything too sweet.",
            [f"What does {name} like to drink?"],
        ),
        (
            "trip",
            "fact",
            f"{name} visited {trip_city} for a week in {month} {year} and lost their passport there.",
            [f"What happened to {name} in {trip_city}?", f"When did {name} travel to {trip_city}?"],
        ),
    ]


def _ko_events(name: str, rng: random.Random, used: set[str]) -> list[tuple[str, str, str, list[str]]]:
    """The same kinds of events for a Korean-speaking person, written and asked in Korean."""
    city = rng.choice(KO_CITIES)
    month, year = rng.randint(1, 12), rng.choice([2022, 2023, 2024])
    job = rng.choice(KO_JOBS)
    pet, pet_name = rng.choice(KO_PETS)
    gift, rel = rng.choice(KO_GIFTS), rng.choice(KO_RELATIVES)
    hobby, drink = rng.choice(KO_HOBBIES), rng.choice(KO_DRINKS)
    trip_city = rng.choice([c for c in KO_CITIES if c != city])
    day = rng.randint(2, 27)
    return [
        (
            "move",
            "fact",
            f"{_j(name, '은', '는')} {year}년 {month}월에 {_j(city, '으로', '로')} 이사했다.",
            [
                f"{_j(name, '은', '는')} 언제 {_j(city, '으로', '로')} 이사했어?",
                f"{_j(name, '이', '가')} {year}년에 이사 간 도시는 어디야?",
            ],
        ),
        (
            "job",
            "profile",
            f"{_j(name, '은', '는')} 이사 후 {city}의 {job}에서 일하기 시작했다.",
            [f"{_j(name, '은', '는')} 요즘 어디서 일해?", f"{job}에 취직한 사람이 누구였지?"],
        ),
        (
            "pet",
            "fact",
            f"{_j(name, '은', '는')} {year}년 {month}월에 보호소에서 {pet} "
            f"{_j(pet_name, '을', '를')} 입양했다.",
            [
                f"지난번에 {_j(name, '이', '가')} 입양한 {pet} 이름이 뭐였지?",
                f"{_j(name, '이', '가')} {_j(pet_name, '을', '를')} 언제 입양했어?",
            ],
        ),
        (
            "gift",
            "fact",
            f"{_j(name, '은', '는')} {rel} 생일({month}월 {day}일) 선물로 {_j(gift, '을', '를')} 샀다.",
            [f"{_j(name, '이', '가')} {rel} 생일 선물로 뭘 샀어?", f"{name}의 {rel} 생일이 언제야?"],
        ),
        (
            "hobby",
            "preference",
            f"{_j(name, '은', '는')} {_j(hobby, '을', '를')} 시작해서 주말마다 다닌다.",
            [f"{_j(name, '이', '가')} 새로 시작한 취미가 뭐야?", f"주말마다 {hobby} 하는 사람이 누구지?"],
        ),
        (
            "drink",
            "preference",
            f"{_j(name, '은', '는')} {_j(drink, '을', '를')} 좋아하고 너무 단 음료는 피한다.",
            [f"{_j(name, '이', '가')} 즐겨 마시는 음료가 뭐야?"],
        ),
        (
            "trip",
            "fact",
            f"{_j(name, '은', '는')} {year}년 {month}월에 {_j(trip_city, '으로', '로')} "
            "일주일 여행을 갔다가 여권을 잃어버렸다.",
            [
                f"{_j(name, '이', '가')} {trip_city}에서 무슨 일이 있었지?",
                f"{_j(name, '은', '는')} 언제 {trip_city}에 여행 갔어?",
            ],
        ),
    ]


def conversation_set() -> tuple[list[SetMemory], list[SetQuery]]:
    """People, dates and events over sessions; who/what/when questions in English and Korean."""
    rng = random.Random(SEED)
    memories: list[SetMemory] = []
    queries: list[SetQuery] = []
    for lang, people in (("en", EN_PEOPLE), ("ko", KO_PEOPLE)):
        for name in people:
            events = (_en_events if lang == "en" else _ko_events)(name, rng, set())
            rng.shuffle(events)
            # sessions of two or three events each: one episode per session, one memory per event
            sessions: list[list[tuple[str, str, str, list[str]]]] = []
            while events:
                take = min(len(events), rng.choice([2, 3]))
                sessions.append(events[:take])
                events = events[take:]
            for number, session in enumerate(sessions, start=1):
                episode_id = f"c{len(memories):04d}"
                if lang == "en":
                    summary = f"Session {number} with {name}. {name} told the assistant: " + " ".join(
                        fact for _, _, fact, _ in session
                    )
                    title = f"Session {number} with {name}"
                else:
                    summary = f"{_j(name, '과', '와')}의 {number}번째 대화: " + " ".join(
                        f"{fact[:-1]}고 말했다." for _, _, fact, _ in session
                    )
                    title = f"{_j(name, '과', '와')}의 {number}번째 대화"
                memories.append(SetMemory(episode_id, "episode", title, summary, lang))
                for kind, mtype, fact, questions in session:
                    fact_id = f"c{len(memories):04d}"
                    title = f"{name}: {kind}"
                    memories.append(SetMemory(fact_id, mtype, title, fact, lang))
                    for question in questions:
                        queries.append(
                            SetQuery("", question, [fact_id, episode_id], kind=f"{kind}", lang=lang)
                        )
    picked = sorted(rng.sample(range(len(queries)), min(len(queries), 160)))
    return memories, [
        SetQuery(f"cq{n:03d}", queries[i].query, queries[i].relevant, queries[i].kind, queries[i].lang)
        for n, i in enumerate(picked)
    ]


# ---------------------------------------------------------------- coding agent
COMPONENTS = [
    ("ingest", "src/ingest/worker.py"),
    ("billing", "src/billing/invoice.py"),
    ("search", "src/search/indexer.py"),
    ("auth", "src/auth/session.py"),
    ("exporter", "src/exporter/csv_writer.py"),
    ("scheduler", "src/scheduler/cron.py"),
    ("notifier", "src/notifier/email.py"),
    ("api", "src/api/routes.py"),
    ("cache", "src/cache/redis_store.py"),
    ("uploads", "src/uploads/s3.py"),
    ("reports", "src/reports/render.py"),
    ("webhooks", "src/webhooks/dispatch.py"),
]
ERRORS = [
    (
        "psycopg.errors.DeadlockDetected",
        "two batches update the same rows in different orders",
        "sort the ids before the UPDATE so every batch locks rows in one order",
        "두 배치가 같은 행을 다른 순서로 갱신한다",
        "UPDATE 전에 id를 정렬해서 모든 배치가 같은 순서로 잠그게 했다",
    ),
    (
        "ECONNRESET",
        "the upstream closes idle keep-alive connections after 5 s",
        "set the client's idle timeout to 4 s",
        "업스트림이 5초 뒤 유휴 keep-alive 연결을 끊는다",
        "클라이언트 유휴 타임아웃을 4초로 줄였다",
    ),
    (
        "TypeError: 'NoneType' object is not subscriptable",
        "the config loader returns None when the YAML file is empty",
        "return an empty dict for an empty file and validate with pydantic",
        "YAML 파일이 비어 있으면 설정 로더가 None을 돌려준다",
        "빈 파일이면 빈 dict를 돌려주고 pydantic으로 검증하게 했다",
    ),
    (
        "RecursionError: maximum recursion depth exceeded",
        "a self-referencing category tree is walked recursively",
        "walk the tree iteratively with a visited set",
        "자기 자신을 참조하는 카테고리 트리를 재귀로 순회한다",
        "방문 집합을 둔 반복 순회로 바꿨다",
    ),
    (
        "OOMKilled",
        "the whole export is built in memory before writing",
        "stream rows in chunks of 10,000",
        "내보내기 전체를 메모리에 올린 뒤에 쓴다",
        "1만 행 단위로 스트리밍하게 바꿨다",
    ),
    (
        "SSL: CERTIFICATE_VERIFY_FAILED",
        "the container image lacks the corporate CA bundle",
        "mount the CA bundle and set SSL_CERT_FILE",
        "컨테이너 이미지에 사내 CA 번들이 없다",
        "CA 번들을 마운트하고 SSL_CERT_FILE을 설정했다",
    ),
    (
        "asyncio.TimeoutError",
        "the retry loop has no overall deadline",
        "wrap the call in asyncio.timeout(30) and give up after three attempts",
        "재시도 루프에 전체 마감 시간이 없다",
        "asyncio.timeout(30)으로 감싸고 세 번 시도 후 포기하게 했다",
    ),
    (
        "UnicodeDecodeError: 'utf-8' codec can't decode",
        "partner files arrive in CP949",
        "detect the encoding with charset-normalizer before decoding",
        "파트너 파일이 CP949 인코딩으로 들어온다",
        "디코딩 전에 charset-normalizer로 인코딩을 감지하게 했다",
    ),
]
CHOICES = [
    (
        "HTTP client",
        "requests",
        "httpx",
        "we needed async calls and HTTP/2",
        "비동기 호출과 HTTP/2가 필요해서",
    ),
    (
        "task queue",
        "Celery",
        "Temporal",
        "retries and long waits must survive restarts",
        "재시작에도 재시도와 대기가 유지돼야 해서",
    ),
    ("linter", "flake8", "ruff", "it is fifty times faster and also formats", "50배 빠르고 포매팅도 해서"),
    (
        "ORM",
        "Django ORM",
        "SQLAlchemy 2",
        "we left Django and need async sessions",
        "Django를 떠났고 비동기 세션이 필요해서",
    ),
    ("package manager", "pip-tools", "uv", "lock files resolve in seconds", "잠금 파일이 몇 초 만에 풀려서"),
    (
        "date library",
        "arrow",
        "the standard zoneinfo",
        "one less dependency and correct DST",
        "의존성을 줄이고 서머타임을 정확히 처리하려고",
    ),
    ("test runner", "nose", "pytest", "nose is unmaintained", "nose가 더 이상 관리되지 않아서"),
    ("serializer", "marshmallow", "pydantic v2", "validation is ten times faster", "검증이 10배 빨라서"),
]
RULES = [
    (
        "never call time.sleep in async code; use asyncio.sleep",
        "async 코드에서는 time.sleep 대신 asyncio.sleep을 쓴다",
    ),
    ("every SQL statement lives in the storage package", "모든 SQL 문은 storage 패키지에만 둔다"),
    ("log with structured fields, never f-strings", "로그는 f-string 말고 구조화된 필드로 남긴다"),
    (
        "public functions carry type hints and pass mypy --strict",
        "공개 함수는 타입 힌트를 달고 mypy --strict를 통과한다",
    ),
    ("feature flags are removed within two releases", "기능 플래그는 두 릴리스 안에 제거한다"),
]


def coding_set() -> tuple[list[SetMemory], list[SetQuery]]:
    """Errors, decisions, fixes and superseded choices of a coding agent; English and Korean."""
    rng = random.Random(SEED + 1)
    memories: list[SetMemory] = []
    queries: list[SetQuery] = []

    def add(mtype: str, title: str, content: str, lang: str, deprecated: bool = False) -> str:
        mid = f"k{len(memories):04d}"
        memories.append(SetMemory(mid, mtype, title, content, lang, deprecated))
        return mid

    def ask(text: str, relevant: list[str], kind: str, lang: str) -> None:
        queries.append(SetQuery("", text, relevant, kind, lang))

    for index, (comp, path) in enumerate(COMPONENTS):
        korean = index % 3 == 2  # a third of the components were worked on in Korean
        lang = "ko" if korean else "en"
        errors = rng.sample(ERRORS, 4)
        for n, (err, cause, fix, cause_ko, fix_ko) in enumerate(errors):
            issue = f"{comp.upper()[:3]}-{100 + index * 10 + n}"
            line = rng.randint(40, 400)
            if korean:
                bug = add(
                    "bug_pattern",
                    f"{comp} {err.split(':')[0]}",
                    f"{comp}의 {path}:{line}에서 {err} 발생 ({issue}). 원인: {cause_ko}. 해결: {fix_ko}.",
                    lang,
                )
                ep = add(
                    "episode",
                    f"{issue} 작업 기록",
                    f"{issue} 작업: {comp}에서 {err} 재현, 처음엔 재시도 횟수만 늘렸다가 실패했다. "
                    f"결국 {fix_ko}. 테스트 통과 후 머지.",
                    lang,
                )
                ask(f"{comp}에서 {err.split(':')[0]} 에러 어떻게 고쳤어?", [bug, ep], "fix", lang)
                ask(f"{issue} 원인이 뭐였지?", [bug, ep], "identifier", lang)
                if n == 0:
                    ask(f"{path} 에서 났던 에러 기억나?", [bug, ep], "identifier", lang)
            else:
                bug = add(
                    "bug_pattern",
                    f"{comp} {err.split(':')[0]}",
                    f"{comp} fails with {err} at {path}:{line} ({issue}). Cause: {cause}. Fix: {fix}.",
                    lang,
                )
                ep = add(
                    "episode",
                    f"work on {issue}",
                    f"Task {issue}: reproduced {err} in {comp}; first tried raising the retry count, which "
                    f"did not help. Then we {fix}. Tests passed and the PR was merged.",
                    lang,
                )
                ask(f"how did we fix {err.split(':')[0]} in {comp}?", [bug, ep], "fix", lang)
                ask(f"what caused {issue}?", [bug, ep], "identifier", lang)
                ask(
                    f"did we already try raising the retry count for the {comp} {err.split(':')[0]}?",
                    [ep, bug],
                    "recall",
                    lang,
                )
                if n == 0:
                    ask(f"error at {path} last week", [bug, ep], "identifier", lang)
        for what, old, new, why, why_ko in rng.sample(CHOICES, 3):
            year = rng.choice([2022, 2023])
            if korean:
                add("fact", f"{comp} {what}", f"{comp}는 {what}로 {old}를 쓴다 ({year}년 결정).", lang, True)
                cur = add(
                    "fact",
                    f"{comp} {what}",
                    f"{comp}는 {what}를 {old}에서 {new}로 바꿨다: {why_ko}. {old}는 더 이상 쓰지 않는다.",
                    lang,
                )
                ask(f"{comp}에서 지금 쓰는 {what}가 뭐야?", [cur], "decision", lang)
                ask(f"왜 {old} 대신 {new}를 쓰기로 했어?", [cur], "why", lang)
            else:
                add(
                    "fact",
                    f"{comp} {what}",
                    f"{comp} uses {old} as its {what} (decided in {year}).",
                    lang,
                    True,
                )
                cur = add(
                    "fact",
                    f"{comp} {what}",
                    f"{comp} switched its {what} from {old} to {new} because {why}; {old} is no longer used.",
                    lang,
                )
                ask(f"which {what} does {comp} use?", [cur], "decision", lang)
                ask(f"why did {comp} drop {old}?", [cur], "why", lang)
                ask(f"what replaced {old} in {comp}?", [cur], "decision", lang)
        rule, rule_ko = rng.choice(RULES)
        rid = add(
            "code_rule", f"{comp} rule", f"In {comp}: {rule}." if not korean else f"{comp}: {rule_ko}.", lang
        )
        ask(
            f"{comp} 코드 규칙이 뭐야?" if korean else f"what coding rule applies in {comp}?",
            [rid],
            "rule",
            lang,
        )
    # cross-lingual questions: Korean about English memories and back, on the fixes
    for q in list(queries):
        if q.kind == "fix" and rng.random() < 0.35:
            comp = next(c for c, _ in COMPONENTS if c in q.query)
            if q.lang == "en":
                err = q.query.split("fix ")[1].split(" in ")[0]
                ask(f"{comp}의 {err} 문제는 어떻게 해결했나요?", q.relevant, "crosslingual", "ko")
            else:
                err = q.query.split("에서 ")[1].split(" 에러")[0]
                ask(f"how was the {err} error in {comp} resolved?", q.relevant, "crosslingual", "en")
    picked = sorted(rng.sample(range(len(queries)), min(len(queries), 170)))
    return memories, [
        SetQuery(f"kq{n:03d}", queries[i].query, queries[i].relevant, queries[i].kind, queries[i].lang)
        for n, i in enumerate(picked)
    ]


def write_sets() -> None:
    """Write both sets' memories.jsonl and queries.jsonl."""
    for name, (memories, queries) in (
        ("retrieval_conversation", conversation_set()),
        ("retrieval_coding", coding_set()),
    ):
        directory = DATA / name
        directory.mkdir(parents=True, exist_ok=True)
        with (directory / "memories.jsonl").open("w", encoding="utf-8") as f:
            for m in memories:
                row = {k: v for k, v in asdict(m).items() if k != "deprecated" or v}
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
        with (directory / "queries.jsonl").open("w", encoding="utf-8") as f:
            for q in queries:
                f.write(json.dumps(asdict(q), ensure_ascii=False) + "\n")
        print(f"wrote {len(memories)} memories and {len(queries)} queries to {directory}", file=sys.stderr)


if __name__ == "__main__":
    write_sets()
