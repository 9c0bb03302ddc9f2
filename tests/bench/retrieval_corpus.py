"""Generates the labelled retrieval set (tests/data/retrieval/) and the large speed corpus, deterministically.

Why it is built this way: a fair test of hybrid search needs queries each retriever alone gets wrong.

- Every service gets the same ~36 templates (facts, bug patterns, preferences, code rules, episodes,
  profiles), so each memory has dozens of near-twins: same wording, another service, other numbers or
  error codes.
- *Paraphrase* queries reword a memory with synonyms and share little beyond the service name with it, so
  full text finds every memory of that service and cannot tell them apart; meaning (vectors) can.
- *Identifier* queries name only an error code or config key. A service's error codes are numbered together
  (BIL-3790, BIL-3791, BIL-3792) and its twins share the wording, so vectors see near-ties while full text
  matches the one memory that carries the string.
- *Cross-lingual* queries ask in Korean about an English memory (and the reverse): only vectors can.
- *Mixed* queries combine an identifier with a paraphrased symptom: both retrievers contribute.

Run `python tests/bench/retrieval_corpus.py` to (re)write the JSONL files; the bench reads them.
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

__all__ = ["Memory", "Query", "quality_set", "speed_corpus", "DATA_DIR"]

DATA_DIR = Path(__file__).resolve().parents[1] / "data" / "retrieval"
SEED = 20261121

SERVICES = [
    "billing",
    "checkout",
    "search-indexer",
    "auth-gateway",
    "notifier",
    "inventory",
    "payments-worker",
    "report-builder",
    "media-transcoder",
    "user-profile",
    "feature-flags",
    "audit-log",
    "scheduler",
    "geo-lookup",
    "email-relay",
    "recommender",
    "pricing-engine",
    "fraud-detector",
    "cart",
    "shipping",
    "ledger",
    "analytics-etl",
    "webhook-dispatcher",
    "session-store",
    "image-resizer",
    "pdf-renderer",
    "chat-backend",
    "sms-gateway",
    "export-service",
    "import-pipeline",
]
DATABASES = [
    "Postgres 16",
    "MySQL 8",
    "MongoDB",
    "DynamoDB",
    "CockroachDB",
    "SQLite",
    "Cassandra",
    "ClickHouse",
]
QUEUES = ["Kafka", "RabbitMQ", "SQS", "NATS", "Redis Streams", "Pub/Sub"]
LANGS = ["Python 3.12", "Go 1.22", "TypeScript on Node 20", "Kotlin", "Rust", "Java 21"]
TEAMS = ["platform", "payments", "growth", "core-infra", "data", "trust-and-safety", "mobile", "search"]
REGIONS = ["eu-west-1", "us-east-1", "ap-northeast-2", "us-west-2", "eu-central-1"]
CAUSES = [
    ("the connection pool is exhausted under burst traffic", "raise the pool size and add a queue in front"),
    ("a retry storm follows a downstream timeout", "add jittered exponential backoff and a circuit breaker"),
    ("the migration locks the table for minutes", "split it into batches of 10k rows run off-peak"),
    ("a cached token outlives its rotation", "cap the cache TTL below the rotation period"),
    ("clock skew between pods breaks signature checks", "allow 30 s of leeway and sync NTP"),
    ("an unbounded in-memory list grows per request", "stream results and cap the page size"),
    ("two workers pick up the same job", "claim jobs with SELECT ... FOR UPDATE SKIP LOCKED"),
    ("the DNS cache keeps a stale address after failover", "lower the resolver TTL to 5 s"),
    ("a UTF-8 filename breaks the S3 key encoding", "percent-encode keys before signing"),
    ("the health check hits the database on every probe", "serve liveness without touching the database"),
]


@dataclass(frozen=True)
class Memory:
    """One memory of the corpus (what the bench inserts)."""

    id: str
    memory_type: str
    title: str
    content: str
    lang: str


@dataclass(frozen=True)
class Query:
    """A labelled query: which memories answer it, and which retriever it was written to need."""

    id: str
    query: str
    relevant: list[str]
    kind: str


def _code(svc: str, base: int, n: int) -> str:
    """Error codes of one service are numbered together, as real subsystems do (PAY-4012, PAY-4013)."""
    prefix = "".join(part[0] for part in svc.split("-")).upper() + svc.replace("-", "")[1:3].upper()
    return f"{prefix}-{base + n}"


def _memories_for(
    svc: str, rng: random.Random, index: int
) -> Iterator[tuple[str, Memory, list[tuple[str, str]]]]:
    """(template name, memory, [(query kind, query text)]) for one service."""
    db, queue, lang = rng.choice(DATABASES), rng.choice(QUEUES), rng.choice(LANGS)
    team, region = rng.choice(TEAMS), rng.choice(REGIONS)
    pool, replicas, ttl = (
        rng.choice([5, 10, 20, 40]),
        rng.randint(2, 12),
        rng.choice([30, 60, 300, 900, 3600]),
    )
    port, partitions = rng.choice([8080, 8443, 9090, 50051, 7000]), rng.choice([6, 12, 24, 48])
    key_a = f"{svc.upper().replace('-', '_')}_MAX_INFLIGHT"
    key_b = f"{svc.upper().replace('-', '_')}_RETRY_BUDGET"
    topic = f"{svc}.events.v{rng.randint(1, 4)}"
    mid = lambda n: f"m{index:02d}{n:02d}"  # noqa: E731

    def mem(n: int, mtype: str, title: str, content: str, lang: str = "en") -> Memory:
        return Memory(id=mid(n), memory_type=mtype, title=title, content=content, lang=lang)

    yield (
        "db",
        mem(
            0,
            "fact",
            f"{svc} datastore",
            f"{svc} keeps its state in {db} and talks to it through a pool of {pool} connections.",
        ),
        [
            ("paraphrase", f"what storage engine backs {svc}, and how many sessions does it hold open?"),
            ("crosslingual", f"{svc} 서비스는 어떤 데이터베이스를 쓰고 커넥션은 몇 개야?"),
        ],
    )
    yield (
        "deploy",
        mem(1, "fact", f"{svc} deployment", f"{svc} runs as {replicas} replicas on Kubernetes in {region}."),
        [
            ("paraphrase", f"how many copies of {svc} are running and in which cloud location?"),
        ],
    )
    yield (
        "topic",
        mem(
            2,
            "fact",
            f"{svc} events",
            f"{svc} publishes its domain events to {queue} topic {topic} with {partitions} partitions.",
        ),
        [
            ("identifier", f"who produces {topic}"),
        ],
    )
    yield (
        "owner",
        mem(
            3,
            "profile",
            f"{svc} owner",
            f"The {team} team owns {svc}; page them through the #{team}-oncall channel.",
        ),
        [
            ("paraphrase", f"who should I contact when {svc} breaks at night?"),
            ("crosslingual", f"{svc} 장애 나면 누구한테 연락해야 해?"),
        ],
    )
    yield (
        "lang",
        mem(4, "profile", f"{svc} stack", f"{svc} is written in {lang} and built with Bazel."),
        [
            ("paraphrase", f"which programming language is {svc} implemented in?"),
        ],
    )
    yield (
        "cache",
        mem(
            5,
            "fact",
            f"{svc} cache",
            f"{svc} caches lookups in Redis with a TTL of {ttl} seconds; stale reads are acceptable.",
        ),
        [
            ("paraphrase", f"how long does {svc} remember results in its in-memory store before refreshing?"),
        ],
    )
    yield (
        "port",
        mem(6, "fact", f"{svc} endpoint", f"{svc} serves gRPC on port {port} behind Envoy."),
        [
            ("paraphrase", f"on which network port does {svc} listen for RPC calls?"),
        ],
    )
    # bug patterns: identical wording across services except the code and the cause; sibling codes per service
    base = rng.randint(100, 989) * 10
    for n in range(3):
        cause, fix = CAUSES[(index * 3 + n) % len(CAUSES)]
        code = _code(svc, base, n)
        text = f"{svc} fails with {code} when {cause}. Fix: {fix}."
        queries = [("identifier", f"what does {code} mean?")]
        if n == 0:
            queries.append(("mixed", f"getting {code} again in production, what was the remedy last time?"))
        if n == 1:
            queries.append(("identifier", f"{code} 에러 해결 방법"))
        yield f"bug{n}", mem(7 + n, "bug_pattern", f"{svc} {code}", text), queries
    yield (
        "config",
        mem(
            10,
            "code_rule",
            f"{svc} limits",
            f"In {svc}, {key_a} caps concurrent requests and {key_b} caps retries per minute; "
            "change both together.",
        ),
        [
            ("identifier", f"where is {key_b} used"),
        ],
    )
    yield (
        "pref",
        mem(
            11,
            "preference",
            f"{svc} tooling",
            f"For {svc} we prefer pytest with testcontainers over mocking the database.",
        ),
        [
            ("paraphrase", f"how do we like to write integration tests for {svc}?"),
        ],
    )
    yield (
        "rule",
        mem(
            12,
            "code_rule",
            f"{svc} logging rule",
            f"In {svc}, never log request bodies; log the request id and the route instead.",
        ),
        [
            ("paraphrase", f"is it ok to print full payloads in {svc} logs?"),
        ],
    )
    yield (
        "episode",
        mem(
            13,
            "episode",
            f"{svc} incident",
            f"During the last {svc} incident, latency rose after a config push; rolling back the "
            f"deploy restored it within 20 minutes.",
        ),
        [
            ("paraphrase", f"what happened the previous time {svc} got slow after a change?"),
        ],
    )
    # Korean memories: the team writes some knowledge in Korean
    yield (
        "ko_backup",
        mem(
            14,
            "fact",
            f"{svc} 백업",
            f"{svc}의 데이터베이스 백업은 매일 새벽 {rng.randint(1, 5)}시에 실행되고 "
            f"{rng.choice([7, 14, 30])}일간 보관된다.",
            "ko",
        ),
        [
            ("paraphrase", f"{svc} 백업은 언제 돌고 얼마나 보관해?"),
            ("crosslingual", f"when are {svc} database snapshots taken and how long are they retained?"),
        ],
    )
    yield (
        "ko_rule",
        mem(
            15,
            "code_rule",
            f"{svc} 재시도 규칙",
            f"{svc}에서 외부 API를 호출할 때는 멱등성 키 없이 재시도하지 않는다.",
            "ko",
        ),
        [
            ("paraphrase", f"{svc}에서 외부 호출 다시 시도해도 돼?"),
        ],
    )
    yield (
        "ko_alert",
        mem(
            16,
            "insight",
            f"{svc} 알림",
            f"{svc}의 p99 지연 시간이 {rng.choice([300, 500, 800])}ms를 넘으면 온콜에게 알림이 간다.",
            "ko",
        ),
        [
            ("crosslingual", f"at what tail latency does {svc} page the on-call engineer?"),
        ],
    )
    # filler knowledge: more near-twins per service, no queries
    fillers = [
        (
            "fact",
            f"{svc} feature flags",
            f"{svc} reads feature flags from the flag service at startup and every "
            f"{rng.choice([10, 30, 60])} seconds.",
        ),
        ("fact", f"{svc} secrets", f"{svc} loads secrets from Vault path secret/{svc}/prod at boot."),
        (
            "insight",
            f"{svc} load profile",
            f"{svc} traffic peaks on {rng.choice(['Mondays', 'Fridays'])} "
            f"around {rng.randint(9, 18)}:00 UTC.",
        ),
        (
            "skill",
            f"{svc} local run",
            f"To run {svc} locally: make dev, then open http://localhost:{port}/docs.",
        ),
        ("fact", f"{svc} dashboards", f"{svc} has Grafana dashboards under the folder {team}/{svc}."),
        ("preference", f"{svc} reviews", f"{svc} changes need two approvals, one from the {team} team."),
        ("insight", f"{svc} cost", f"{svc} costs about ${rng.randint(2, 40) * 100} a month, mostly compute."),
        (
            "fact",
            f"{svc} SLO",
            f"{svc} targets {rng.choice(['99.9', '99.95', '99.5'])}% availability monthly.",
        ),
        (
            "episode",
            f"{svc} upgrade",
            f"Upgrading {svc} to the new base image broke TLS until CA certs were added.",
        ),
        ("fact", f"{svc} 로그", f"{svc} 로그는 {rng.choice([7, 14, 30])}일 동안 Loki에 보관된다."),
        ("skill", f"{svc} 배포 방법", f"{svc} 배포는 Argo CD에서 sync 버튼을 누르면 된다."),
        (
            "fact",
            f"{svc} API versioning",
            f"{svc} versions its API in the URL path, currently /v{rng.randint(1, 3)}.",
        ),
        ("code_rule", f"{svc} timeouts", f"Every outbound call from {svc} sets a timeout below 2 seconds."),
        (
            "insight",
            f"{svc} flaky tests",
            f"{svc} integration tests flake when run in parallel against one DB.",
        ),
        (
            "fact",
            f"{svc} data retention",
            f"{svc} deletes personal data {rng.choice([30, 90, 365])} days after account closure.",
        ),
        ("preference", f"{svc} style", f"{svc} code uses structured logging with JSON output only."),
        (
            "fact",
            f"{svc} rate limit",
            f"{svc} allows {rng.choice([100, 500, 1000])} requests per minute per key.",
        ),
        ("skill", f"{svc} rollback", f"Roll back {svc} with argocd app rollback {svc} <revision>."),
        (
            "fact",
            f"{svc} dependencies",
            f"{svc} depends on {rng.choice(SERVICES)} and {rng.choice(SERVICES)}.",
        ),
    ]
    for n, (mtype, title, content) in enumerate(fillers):
        lang = "ko" if any("\uac00" <= ch <= "\ud7a3" for ch in content) else "en"
        yield f"filler{n}", mem(17 + n, mtype, title, content, lang), []


def quality_set() -> tuple[list[Memory], list[Query]]:
    """The labelled set: ~1,080 memories over 30 services and the queries sampled from them."""
    rng = random.Random(SEED)
    memories: list[Memory] = []
    candidates: list[Query] = []
    for index, svc in enumerate(SERVICES):
        for _, memory, queries in _memories_for(svc, rng, index):
            memories.append(memory)
            for kind, text in queries:
                candidates.append(Query(id="", query=text, relevant=[memory.id], kind=kind))
    # a fixed, balanced sample: every identifier/mixed/crosslingual query, and paraphrases to match
    by_kind: dict[str, list[Query]] = {}
    for q in candidates:
        by_kind.setdefault(q.kind, []).append(q)
    picked = (
        rng.sample(by_kind["identifier"], 60)
        + rng.sample(by_kind["paraphrase"], 60)
        + rng.sample(by_kind["crosslingual"], 30)
        + rng.sample(by_kind["mixed"], 20)
    )
    queries = [
        Query(id=f"q{n:03d}", query=q.query, relevant=q.relevant, kind=q.kind) for n, q in enumerate(picked)
    ]
    return memories, queries


def speed_corpus(n: int) -> tuple[list[str], list[str]]:
    """`n` memory texts and up to 200 query texts for the speed run: the templates over generated services."""
    rng = random.Random(SEED + 1)
    adjectives = [
        "blue",
        "fast",
        "quiet",
        "north",
        "prime",
        "delta",
        "amber",
        "swift",
        "lunar",
        "solid",
        "rapid",
        "green",
        "polar",
        "urban",
        "vivid",
        "cedar",
        "iron",
        "coral",
        "noble",
        "misty",
    ]
    texts: list[str] = []
    queries: list[str] = []
    index = 0
    while len(texts) < n:
        svc = f"{rng.choice(adjectives)}-{rng.choice(SERVICES)}-{index}"
        for _, memory, qs in _memories_for(svc, rng, index % 100):
            texts.append(f"{memory.title}: {memory.content}")
            if qs and len(queries) < 200 and rng.random() < 0.05:
                queries.append(qs[0][1])
        index += 1
    return texts[:n], queries


def write_quality_set(directory: Path = DATA_DIR) -> None:
    """Write memories.jsonl and queries.jsonl."""
    memories, queries = quality_set()
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / "memories.jsonl").open("w", encoding="utf-8") as f:
        for m in memories:
            f.write(json.dumps(asdict(m), ensure_ascii=False) + "\n")
    with (directory / "queries.jsonl").open("w", encoding="utf-8") as f:
        for q in queries:
            f.write(json.dumps(asdict(q), ensure_ascii=False) + "\n")
    print(f"wrote {len(memories)} memories and {len(queries)} queries to {directory}", file=sys.stderr)


if __name__ == "__main__":
    write_quality_set()
