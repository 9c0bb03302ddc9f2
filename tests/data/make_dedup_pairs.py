"""Write tests/data/dedup_pairs.jsonl: the labelled pairs the dedup decision is fitted and measured on.

    python tests/data/make_dedup_pairs.py

Two sources, one file:

- the hand-curated pairs of tests/data/dedup_pairs_curated.jsonl (paraphrases, near-misses and unrelated
  pairs written one by one, English, Korean and mixed), kept as written;
- pairs generated from the fact families below. A family is one statement with slots (a number, a unit, a
  version, a tool, an owner), written in several English and Korean phrasings and negated forms. From it:

  hard positives (duplicate): `paraphrase` (two phrasings, same values), `reorder` (two phrasings with
  mostly the same words in another order), `abbreviation` (a phrasing against itself or another with
  abbreviations: DB, k8s, config ...),
  `codemix` (a Korean phrasing against itself with English loanwords: 배포 -> deploy), `translation` (an
  English phrasing against a Korean one);
  hard negatives (different facts, never duplicates): `number`, `unit`, `version`, `tool`, `owner` (the same
  phrasing or a paraphrase with one slot changed), `negation` (a negated phrasing), `related_topic` (another
  family about the same subject);
  `unrelated`: phrasings of two families about different subjects.

Every pair carries `category`, `lang` (`en`, `ko`, or `mixed` for an English text against a Korean one) and
`split`: `test` for pairs of the held-out families (every fifth family, and every fifth curated pair by a
hash of its text), `train` otherwise, so no held-out statement is seen while fitting. Deterministic.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "dedup_pairs.jsonl"
CURATED = HERE / "dedup_pairs_curated.jsonl"
SEED = 13

# slot name -> the hard-negative category a changed value makes
SLOT_CATEGORY = {
    "n": "number",
    "m": "number",
    "unit": "unit",
    "ver": "version",
    "tool": "tool",
    "owner": "owner",
}

HARD_NEGATIVES = ("number", "unit", "version", "tool", "owner", "negation")
HARD_POSITIVES = ("paraphrase", "reorder", "abbreviation", "codemix", "translation")


@dataclass(frozen=True)
class Family:
    """One statement in several phrasings; `{slot}` marks a value (a pair (English, Korean) or one string)."""

    topic: str
    slots: dict[str, list[object]]
    en: list[str]
    ko: list[str]
    en_neg: list[str] = field(default_factory=list)
    ko_neg: list[str] = field(default_factory=list)


TEAMS = [
    ("billing", "빌링"),
    ("platform", "플랫폼"),
    ("security", "보안"),
    ("payments", "결제"),
    ("search", "검색"),
]
SECONDS_MINUTES = [("seconds", "초"), ("minutes", "분")]
MB_GB = [("MB", "MB"), ("GB", "GB")]

FAMILIES: list[Family] = [
    Family(
        "http",
        {"n": [30, 45, 90], "unit": SECONDS_MINUTES},
        [
            "The API gateway times out requests after {n} {unit}.",
            "Requests to the API gateway time out after {n} {unit}.",
            "After {n} {unit} the API gateway gives up on a request.",
        ],
        [
            "API 게이트웨이는 {n}{unit} 후에 요청을 타임아웃시킨다.",
            "API 게이트웨이 요청은 {n}{unit} 후 타임아웃된다.",
            "{n}{unit} 후에 API 게이트웨이는 요청을 끊는다.",
        ],
        ["The API gateway never times out requests, even after {n} {unit}."],
        ["API 게이트웨이는 {n}{unit} 후에도 요청을 타임아웃시키지 않는다."],
    ),
    Family(
        "http",
        {"n": [5, 10, 20]},
        [
            "Each client may send at most {n} requests per second to the public API.",
            "The public API allows each client at most {n} requests per second.",
            "Clients are rate limited to {n} requests per second on the public API.",
        ],
        [
            "공개 API는 클라이언트마다 초당 최대 {n}개의 요청을 허용한다.",
            "클라이언트 하나는 공개 API에 초당 {n}개까지 요청할 수 있다.",
            "공개 API의 요청 한도는 클라이언트당 초당 {n}개다.",
        ],
        ["The public API does not rate limit clients to {n} requests per second."],
        ["공개 API는 클라이언트를 초당 {n}개로 제한하지 않는다."],
    ),
    Family(
        "http",
        {"n": [50, 100, 200]},
        [
            "List endpoints return {n} items per page by default.",
            "By default a list endpoint returns a page of {n} items.",
            "The default page size of the list endpoints is {n} items.",
        ],
        [
            "목록 엔드포인트는 기본으로 한 페이지에 {n}개 항목을 반환한다.",
            "목록 API의 기본 페이지 크기는 {n}개다.",
            "기본적으로 목록 엔드포인트는 페이지당 {n}개를 돌려준다.",
        ],
    ),
    Family(
        "http",
        {"tool": ["nginx", "Envoy", "HAProxy"]},
        [
            "TLS is terminated at the {tool} load balancer.",
            "The {tool} load balancer terminates TLS.",
            "We terminate TLS on the {tool} load balancer.",
        ],
        [
            "TLS는 {tool} 로드 밸런서에서 종료한다.",
            "{tool} 로드 밸런서가 TLS를 종료한다.",
            "TLS 종료는 {tool} 로드 밸런서에서 처리한다.",
        ],
        ["TLS is not terminated at the {tool} load balancer."],
        ["TLS는 {tool} 로드 밸런서에서 종료하지 않는다."],
    ),
    Family(
        "db",
        {"tool": ["psycopg 3", "asyncpg", "pg8000"]},
        [
            "We use {tool} as the PostgreSQL driver.",
            "The PostgreSQL driver we use is {tool}.",
            "Our services talk to PostgreSQL through the {tool} driver.",
        ],
        [
            "PostgreSQL 드라이버로 {tool}을 사용한다.",
            "우리가 쓰는 PostgreSQL 드라이버는 {tool}이다.",
            "서비스는 {tool} 드라이버로 PostgreSQL에 접속한다.",
        ],
        ["We do not use {tool} as the PostgreSQL driver."],
        ["PostgreSQL 드라이버로 {tool}을 사용하지 않는다."],
    ),
    Family(
        "db",
        {"n": [10, 20, 40]},
        [
            "The database connection pool holds at most {n} connections.",
            "At most {n} connections are kept in the database connection pool.",
            "The maximum size of the database connection pool is {n} connections.",
        ],
        [
            "데이터베이스 커넥션 풀은 최대 {n}개의 연결을 유지한다.",
            "데이터베이스 커넥션 풀의 최대 크기는 {n}개다.",
            "커넥션 풀에는 데이터베이스 연결이 최대 {n}개까지 있다.",
        ],
    ),
    Family(
        "db",
        {"ver": ["14", "15", "16"]},
        [
            "Production runs PostgreSQL {ver}.",
            "The production database is PostgreSQL {ver}.",
            "PostgreSQL {ver} is the version running in production.",
        ],
        [
            "운영 환경은 PostgreSQL {ver}을 쓴다.",
            "운영 데이터베이스는 PostgreSQL {ver}이다.",
            "운영 환경에서 돌아가는 버전은 PostgreSQL {ver}이다.",
        ],
    ),
    Family(
        "db",
        {"n": [7, 14, 30]},
        [
            "Database backups are kept for {n} days.",
            "We keep database backups for {n} days.",
            "Backups of the database are retained {n} days.",
        ],
        [
            "데이터베이스 백업은 {n}일 동안 보관한다.",
            "데이터베이스 백업 보관 기간은 {n}일이다.",
            "백업은 {n}일간 보관된다.",
        ],
        ["Database backups are never kept for {n} days."],
        ["데이터베이스 백업은 {n}일 동안 보관하지 않는다."],
    ),
    Family(
        "db",
        {},
        [
            "Schema migrations must run before the application starts.",
            "Run the schema migrations before starting the application.",
            "The application starts only after the schema migrations have run.",
        ],
        [
            "스키마 마이그레이션은 애플리케이션이 시작되기 전에 실행해야 한다.",
            "애플리케이션을 시작하기 전에 스키마 마이그레이션을 돌린다.",
            "스키마 마이그레이션을 먼저 실행하고 애플리케이션을 시작한다.",
        ],
        ["Schema migrations must not run before the application starts."],
        ["스키마 마이그레이션은 애플리케이션 시작 전에 실행하면 안 된다."],
    ),
    Family(
        "db",
        {"owner": TEAMS},
        [
            "The {owner} team owns the orders database.",
            "The orders database is owned by the {owner} team.",
            "Ownership of the orders database lies with the {owner} team.",
        ],
        [
            "주문 데이터베이스는 {owner} 팀이 담당한다.",
            "{owner} 팀이 주문 데이터베이스를 소유한다.",
            "주문 데이터베이스의 소유 팀은 {owner} 팀이다.",
        ],
    ),
    Family(
        "deploy",
        {"owner": TEAMS},
        [
            "The {owner} team approves every production deployment.",
            "Every production deployment needs approval from the {owner} team.",
            "Production deployments are approved by the {owner} team.",
        ],
        [
            "모든 운영 배포는 {owner} 팀이 승인한다.",
            "운영 배포에는 {owner} 팀의 승인이 필요하다.",
            "{owner} 팀이 운영 배포를 모두 승인한다.",
        ],
        ["The {owner} team does not approve production deployments."],
        ["{owner} 팀은 운영 배포를 승인하지 않는다."],
    ),
    Family(
        "deploy",
        {"n": [3, 5, 10]},
        [
            "A canary release receives {n} percent of traffic for the first hour.",
            "For the first hour the canary release gets {n} percent of traffic.",
            "Canary releases start with {n} percent of the traffic for one hour.",
        ],
        [
            "카나리 릴리스는 처음 한 시간 동안 트래픽의 {n}퍼센트를 받는다.",
            "처음 한 시간 동안 카나리 릴리스에 트래픽 {n}퍼센트를 보낸다.",
            "카나리 릴리스는 트래픽 {n}퍼센트로 한 시간 동안 시작한다.",
        ],
    ),
    Family(
        "deploy",
        {"tool": ["Argo CD", "Flux", "Spinnaker"]},
        [
            "Deployments to Kubernetes go through {tool}.",
            "We deploy to Kubernetes with {tool}.",
            "{tool} handles our deployments to Kubernetes.",
        ],
        [
            "쿠버네티스 배포는 {tool}로 한다.",
            "{tool}가 쿠버네티스 배포를 맡는다.",
            "우리는 {tool}를 통해 쿠버네티스에 배포한다.",
        ],
        ["Deployments to Kubernetes no longer go through {tool}."],
        ["쿠버네티스 배포에 {tool}를 쓰지 않는다."],
    ),
    Family(
        "deploy",
        {"n": [2, 3, 4]},
        [
            "Each service runs at least {n} replicas in production.",
            "In production every service has at least {n} replicas.",
            "The minimum replica count of a service in production is {n}.",
        ],
        [
            "운영 환경에서 각 서비스는 최소 {n}개의 레플리카로 돈다.",
            "운영 환경의 서비스 레플리카 수는 최소 {n}개다.",
            "모든 서비스는 운영 환경에서 레플리카를 최소 {n}개 둔다.",
        ],
    ),
    Family(
        "deploy",
        {},
        [
            "Deployments are frozen on Friday afternoons.",
            "We do not deploy on Friday afternoons.",
            "No deployments happen on Friday afternoons.",
        ],
        [
            "금요일 오후에는 배포를 동결한다.",
            "금요일 오후에는 배포를 하지 않는다.",
            "금요일 오후에는 배포가 금지된다.",
        ],
    ),
    Family(
        "auth",
        {"n": [15, 30, 60], "unit": SECONDS_MINUTES},
        [
            "Access tokens expire after {n} {unit}.",
            "An access token is valid for {n} {unit}.",
            "After {n} {unit} an access token expires.",
        ],
        [
            "액세스 토큰은 {n}{unit} 후에 만료된다.",
            "액세스 토큰의 유효 시간은 {n}{unit}이다.",
            "{n}{unit}이 지나면 액세스 토큰이 만료된다.",
        ],
        ["Access tokens do not expire after {n} {unit}."],
        ["액세스 토큰은 {n}{unit} 후에도 만료되지 않는다."],
    ),
    Family(
        "auth",
        {"tool": ["argon2id", "bcrypt", "scrypt"]},
        [
            "Passwords are hashed with {tool}.",
            "We hash passwords using {tool}.",
            "User passwords are stored as {tool} hashes.",
        ],
        [
            "비밀번호는 {tool}로 해시한다.",
            "비밀번호 해시에는 {tool}를 사용한다.",
            "사용자 비밀번호는 {tool} 해시로 저장한다.",
        ],
        ["Passwords are not hashed with {tool}."],
        ["비밀번호를 {tool}로 해시하지 않는다."],
    ),
    Family(
        "auth",
        {"n": [3, 5, 10]},
        [
            "An account is locked after {n} failed login attempts.",
            "After {n} failed login attempts the account gets locked.",
            "We lock an account once it has {n} failed login attempts.",
        ],
        [
            "로그인에 {n}번 실패하면 계정이 잠긴다.",
            "계정은 로그인 실패 {n}회 후에 잠긴다.",
            "로그인 실패가 {n}번 쌓이면 계정을 잠근다.",
        ],
        ["An account is never locked after {n} failed login attempts."],
        ["로그인에 {n}번 실패해도 계정은 잠기지 않는다."],
    ),
    Family(
        "auth",
        {},
        [
            "Multi-factor authentication is required for administrators.",
            "Administrators must use multi-factor authentication.",
            "Every administrator signs in with multi-factor authentication.",
        ],
        [
            "관리자는 다중 인증이 필수다.",
            "관리자는 반드시 다중 인증을 사용해야 한다.",
            "모든 관리자는 다중 인증으로 로그인한다.",
        ],
        ["Multi-factor authentication is optional for administrators."],
        ["관리자에게 다중 인증은 선택이다."],
    ),
    Family(
        "auth",
        {"ver": ["1.2", "1.3"]},
        [
            "Clients must connect with TLS {ver} or newer.",
            "The minimum TLS version for clients is {ver}.",
            "Only TLS {ver} and newer is accepted from clients.",
        ],
        [
            "클라이언트는 TLS {ver} 이상으로 접속해야 한다.",
            "클라이언트의 최소 TLS 버전은 {ver}이다.",
            "클라이언트 접속은 TLS {ver} 이상만 받는다.",
        ],
    ),
    Family(
        "ci",
        {"tool": ["ruff", "flake8", "pylint"]},
        [
            "The CI pipeline lints Python code with {tool}.",
            "Python code is linted with {tool} in the CI pipeline.",
            "In the CI pipeline, {tool} lints the Python code.",
        ],
        [
            "CI 파이프라인은 {tool}로 파이썬 코드를 린트한다.",
            "파이썬 코드는 CI 파이프라인에서 {tool}로 린트한다.",
            "CI 파이프라인에서 {tool}가 파이썬 코드를 린트한다.",
        ],
        ["The CI pipeline does not lint Python code with {tool}."],
        ["CI 파이프라인은 {tool}로 파이썬 코드를 린트하지 않는다."],
    ),
    Family(
        "ci",
        {"n": [80, 85, 90]},
        [
            "Pull requests need at least {n} percent test coverage to merge.",
            "A pull request merges only with test coverage of {n} percent or more.",
            "The coverage gate for merging a pull request is {n} percent.",
        ],
        [
            "풀 리퀘스트는 테스트 커버리지가 {n}퍼센트 이상이어야 머지된다.",
            "머지하려면 풀 리퀘스트의 테스트 커버리지가 최소 {n}퍼센트여야 한다.",
            "풀 리퀘스트 머지의 커버리지 기준은 {n}퍼센트다.",
        ],
    ),
    Family(
        "ci",
        {"n": [1, 2, 3]},
        [
            "Every pull request needs {n} approving reviews before merging.",
            "A pull request is merged only after {n} approving reviews.",
            "Merging a pull request requires {n} approving reviews.",
        ],
        [
            "모든 풀 리퀘스트는 머지 전에 승인 리뷰 {n}개가 필요하다.",
            "풀 리퀘스트는 승인 리뷰 {n}개를 받은 뒤에 머지한다.",
            "풀 리퀘스트를 머지하려면 승인 리뷰가 {n}개 있어야 한다.",
        ],
        ["Pull requests do not need {n} approving reviews before merging."],
        ["풀 리퀘스트는 머지 전에 승인 리뷰 {n}개가 필요하지 않다."],
    ),
    Family(
        "ci",
        {"ver": ["3.11", "3.12", "3.13"]},
        [
            "The CI runs the test suite on Python {ver}.",
            "Our test suite runs on Python {ver} in CI.",
            "Python {ver} is what the CI uses for the test suite.",
        ],
        [
            "CI는 Python {ver}에서 테스트 스위트를 실행한다.",
            "테스트 스위트는 CI에서 Python {ver}로 돈다.",
            "CI가 테스트에 쓰는 버전은 Python {ver}이다.",
        ],
    ),
    Family(
        "ci",
        {"n": [20, 30, 45], "unit": SECONDS_MINUTES},
        [
            "A CI job is cancelled after running for {n} {unit}.",
            "CI jobs that run longer than {n} {unit} are cancelled.",
            "The CI cancels any job after {n} {unit}.",
        ],
        [
            "CI 작업은 {n}{unit} 넘게 돌면 취소된다.",
            "{n}{unit}보다 오래 걸리는 CI 작업은 취소한다.",
            "CI는 {n}{unit} 후에 작업을 취소한다.",
        ],
    ),
    Family(
        "cache",
        {"n": [60, 300, 600]},
        [
            "The session cache in Redis has a TTL of {n} seconds.",
            "Sessions are cached in Redis with a {n} second TTL.",
            "Redis keeps cached sessions for {n} seconds.",
        ],
        [
            "Redis의 세션 캐시 TTL은 {n}초다.",
            "세션은 Redis에 TTL {n}초로 캐시한다.",
            "Redis는 캐시된 세션을 {n}초 동안 보관한다.",
        ],
        ["The session cache in Redis has no TTL of {n} seconds."],
        ["Redis의 세션 캐시에는 {n}초 TTL이 없다."],
    ),
    Family(
        "cache",
        {"n": [256, 512], "unit": MB_GB},
        [
            "The Redis instance is capped at {n} {unit} of memory.",
            "Redis may use at most {n} {unit} of memory.",
            "The memory limit of the Redis instance is {n} {unit}.",
        ],
        [
            "Redis 인스턴스의 메모리는 {n}{unit}로 제한된다.",
            "Redis는 메모리를 최대 {n}{unit}까지 쓴다.",
            "Redis 인스턴스 메모리 한도는 {n}{unit}이다.",
        ],
    ),
    Family(
        "cache",
        {},
        [
            "The response cache is disabled in the staging environment.",
            "In the staging environment the response cache is disabled.",
            "Staging runs with the response cache disabled.",
        ],
        [
            "스테이징 환경에서는 응답 캐시를 비활성화한다.",
            "응답 캐시는 스테이징 환경에서 비활성화되어 있다.",
            "스테이징은 응답 캐시를 비활성화한 채로 돈다.",
        ],
        ["The response cache is enabled in the staging environment."],
        ["스테이징 환경에서는 응답 캐시를 활성화한다."],
    ),
    Family(
        "jobs",
        {"n": [2, 3, 4]},
        [
            "The nightly retention job runs at {n}:00 UTC.",
            "At {n}:00 UTC the nightly retention job runs.",
            "Every night the retention job starts at {n}:00 UTC.",
        ],
        [
            "야간 보존 작업은 UTC {n}:00에 실행된다.",
            "매일 밤 UTC {n}:00에 보존 작업이 돈다.",
            "보존 작업은 매일 밤 UTC {n}:00에 시작한다.",
        ],
    ),
    Family(
        "jobs",
        {"n": [3, 5, 8]},
        [
            "Failed background jobs are retried {n} times.",
            "A failed background job gets {n} retries.",
            "We retry a failed background job up to {n} times.",
        ],
        [
            "실패한 백그라운드 작업은 {n}번 재시도한다.",
            "백그라운드 작업이 실패하면 최대 {n}회 재시도한다.",
            "실패한 백그라운드 작업에는 재시도가 {n}번 주어진다.",
        ],
        ["Failed background jobs are not retried {n} times."],
        ["실패한 백그라운드 작업은 {n}번 재시도하지 않는다."],
    ),
    Family(
        "jobs",
        {"tool": ["Celery", "RQ", "Dramatiq"]},
        [
            "Background jobs run on {tool} workers.",
            "We run background jobs with {tool}.",
            "{tool} workers process the background jobs.",
        ],
        [
            "백그라운드 작업은 {tool} 워커에서 돈다.",
            "백그라운드 작업은 {tool}로 실행한다.",
            "{tool} 워커가 백그라운드 작업을 처리한다.",
        ],
        ["Background jobs do not run on {tool} workers."],
        ["백그라운드 작업은 {tool} 워커에서 돌지 않는다."],
    ),
    Family(
        "jobs",
        {"owner": TEAMS},
        [
            "The {owner} team is on call for the batch pipeline.",
            "On-call duty for the batch pipeline belongs to the {owner} team.",
            "The batch pipeline's on-call rotation is run by the {owner} team.",
        ],
        [
            "배치 파이프라인 온콜은 {owner} 팀이 맡는다.",
            "{owner} 팀이 배치 파이프라인 온콜을 담당한다.",
            "배치 파이프라인의 온콜 담당은 {owner} 팀이다.",
        ],
    ),
    Family(
        "obs",
        {"n": [7, 14, 30]},
        [
            "Application logs are retained for {n} days.",
            "We keep application logs for {n} days.",
            "The retention period of application logs is {n} days.",
        ],
        [
            "애플리케이션 로그는 {n}일 동안 보관한다.",
            "애플리케이션 로그 보관 기간은 {n}일이다.",
            "애플리케이션 로그를 {n}일간 남겨 둔다.",
        ],
    ),
    Family(
        "obs",
        {"tool": ["Prometheus", "Datadog", "Grafana Mimir"]},
        [
            "Service metrics are collected by {tool}.",
            "We collect service metrics with {tool}.",
            "{tool} scrapes the metrics of every service.",
        ],
        [
            "서비스 메트릭은 {tool}로 수집한다.",
            "{tool}가 모든 서비스의 메트릭을 수집한다.",
            "서비스 메트릭 수집에는 {tool}를 쓴다.",
        ],
        ["Service metrics are not collected by {tool}."],
        ["서비스 메트릭은 {tool}로 수집하지 않는다."],
    ),
    Family(
        "obs",
        {"n": [200, 500, 800]},
        [
            "An alert fires when p99 latency exceeds {n} milliseconds.",
            "When the p99 latency goes above {n} milliseconds an alert fires.",
            "We alert on a p99 latency over {n} milliseconds.",
        ],
        [
            "p99 지연 시간이 {n}밀리초를 넘으면 알림이 울린다.",
            "p99 지연이 {n}밀리초 이상이면 알림을 보낸다.",
            "알림은 p99 지연 시간이 {n}밀리초를 초과할 때 발생한다.",
        ],
        ["No alert fires when p99 latency exceeds {n} milliseconds."],
        ["p99 지연 시간이 {n}밀리초를 넘어도 알림이 울리지 않는다."],
    ),
    Family(
        "obs",
        {},
        [
            "All timestamps in logs are written in UTC.",
            "Logs record every timestamp in UTC.",
            "Log timestamps use UTC throughout.",
        ],
        [
            "로그의 모든 타임스탬프는 UTC로 기록한다.",
            "로그는 타임스탬프를 전부 UTC로 남긴다.",
            "로그 타임스탬프는 항상 UTC를 쓴다.",
        ],
        ["Timestamps in logs are written in local time."],
        ["로그의 타임스탬프는 현지 시간으로 기록한다."],
    ),
    Family(
        "frontend",
        {"ver": ["17", "18", "19"], "tool": ["Vite", "Webpack"]},
        [
            "The frontend is built with React {ver} and {tool}.",
            "We build the frontend with {tool} and React {ver}.",
            "Our frontend uses React {ver}, bundled by {tool}.",
        ],
        [
            "프런트엔드는 React {ver}와 {tool}로 빌드한다.",
            "프런트엔드 빌드는 {tool}와 React {ver}를 쓴다.",
            "우리 프런트엔드는 React {ver}를 {tool}로 번들링한다.",
        ],
    ),
    Family(
        "frontend",
        {"n": [200, 300, 500]},
        [
            "The JavaScript bundle must stay under {n} kilobytes.",
            "Keep the JavaScript bundle below {n} kilobytes.",
            "The size budget of the JavaScript bundle is {n} kilobytes.",
        ],
        [
            "자바스크립트 번들은 {n}킬로바이트 미만이어야 한다.",
            "자바스크립트 번들 크기는 {n}킬로바이트 아래로 유지한다.",
            "자바스크립트 번들의 크기 예산은 {n}킬로바이트다.",
        ],
    ),
    Family(
        "frontend",
        {},
        [
            "Images are served as WebP with a PNG fallback.",
            "We serve images in WebP and fall back to PNG.",
            "Images go out as WebP, with PNG as the fallback.",
        ],
        [
            "이미지는 WebP로 제공하고 PNG를 대체로 둔다.",
            "이미지는 WebP로 서빙하며 필요하면 PNG로 대체한다.",
            "이미지는 WebP 형식으로 내보내고 PNG를 폴백으로 쓴다.",
        ],
    ),
    Family(
        "storage",
        {"n": [5, 10, 25], "unit": MB_GB},
        [
            "Uploaded files larger than {n} {unit} are rejected.",
            "The upload limit for a file is {n} {unit}.",
            "We reject any uploaded file over {n} {unit}.",
        ],
        [
            "{n}{unit}보다 큰 업로드 파일은 거부한다.",
            "파일 업로드 한도는 {n}{unit}이다.",
            "업로드한 파일이 {n}{unit}를 넘으면 거부된다.",
        ],
        ["Uploaded files larger than {n} {unit} are not rejected."],
        ["{n}{unit}보다 큰 업로드 파일도 거부하지 않는다."],
    ),
    Family(
        "storage",
        {"tool": ["S3", "GCS", "MinIO"]},
        [
            "User uploads are stored in {tool}.",
            "We store user uploads in {tool}.",
            "{tool} holds the files users upload.",
        ],
        [
            "사용자 업로드 파일은 {tool}에 저장한다.",
            "사용자가 올린 파일은 {tool}에 보관된다.",
            "{tool}에 사용자 업로드를 저장한다.",
        ],
    ),
    Family(
        "storage",
        {"n": [90, 180, 365]},
        [
            "Objects in the archive bucket move to cold storage after {n} days.",
            "After {n} days, objects in the archive bucket go to cold storage.",
            "The archive bucket transitions objects to cold storage at {n} days.",
        ],
        [
            "아카이브 버킷의 객체는 {n}일 후 콜드 스토리지로 옮긴다.",
            "{n}일이 지나면 아카이브 버킷 객체가 콜드 스토리지로 간다.",
            "아카이브 버킷은 {n}일째에 객체를 콜드 스토리지로 전환한다.",
        ],
    ),
    Family(
        "queue",
        {"tool": ["Kafka", "RabbitMQ", "NATS"]},
        [
            "Order events are published to {tool}.",
            "We publish order events on {tool}.",
            "{tool} carries the order events.",
        ],
        [
            "주문 이벤트는 {tool}에 발행한다.",
            "주문 이벤트를 {tool}로 보낸다.",
            "{tool}가 주문 이벤트를 전달한다.",
        ],
        ["Order events are no longer published to {tool}."],
        ["주문 이벤트는 {tool}에 발행하지 않는다."],
    ),
    Family(
        "queue",
        {"n": [3, 7, 14]},
        [
            "Messages in the dead letter queue are kept for {n} days.",
            "The dead letter queue keeps messages for {n} days.",
            "We hold dead-lettered messages for {n} days.",
        ],
        [
            "데드 레터 큐의 메시지는 {n}일 동안 보관한다.",
            "데드 레터 큐는 메시지를 {n}일간 보관한다.",
            "데드 레터 메시지는 {n}일 동안 남겨 둔다.",
        ],
    ),
    Family(
        "queue",
        {"n": [12, 24, 48]},
        [
            "The orders topic has {n} partitions.",
            "There are {n} partitions in the orders topic.",
            "We split the orders topic into {n} partitions.",
        ],
        [
            "주문 토픽은 파티션이 {n}개다.",
            "주문 토픽에는 {n}개의 파티션이 있다.",
            "주문 토픽을 {n}개 파티션으로 나눈다.",
        ],
    ),
    Family(
        "support",
        {"owner": TEAMS, "n": [1, 4, 8]},
        [
            "The {owner} team answers incident pages within {n} hours.",
            "Incident pages get an answer from the {owner} team within {n} hours.",
            "Within {n} hours the {owner} team responds to an incident page.",
        ],
        [
            "{owner} 팀은 장애 호출에 {n}시간 안에 응답한다.",
            "장애 호출에는 {owner} 팀이 {n}시간 이내에 답한다.",
            "{n}시간 안에 {owner} 팀이 장애 호출에 응답한다.",
        ],
    ),
    Family(
        "support",
        {"ver": ["2", "3"]},
        [
            "The mobile app calls version {ver} of the accounts API.",
            "Version {ver} of the accounts API is what the mobile app calls.",
            "The mobile app talks to the accounts API v{ver}.",
        ],
        [
            "모바일 앱은 계정 API {ver} 버전을 호출한다.",
            "모바일 앱이 호출하는 계정 API는 {ver} 버전이다.",
            "모바일 앱은 계정 API v{ver}와 통신한다.",
        ],
    ),
]

# abbreviations (English) and English loanwords in Korean text: the same statement, written shorter or mixed
ABBREVIATIONS: list[tuple[str, str]] = [
    ("database", "DB"),
    ("Kubernetes", "k8s"),
    ("PostgreSQL", "Postgres"),
    ("production", "prod"),
    ("staging environment", "staging env"),
    ("environment", "env"),
    ("configuration", "config"),
    ("application", "app"),
    ("authentication", "auth"),
    ("Multi-factor authentication", "MFA"),
    ("multi-factor authentication", "MFA"),
    ("pull requests", "PRs"),
    ("Pull requests", "PRs"),
    ("pull request", "PR"),
    ("A pull request", "A PR"),
    ("milliseconds", "ms"),
    ("seconds", "s"),
    ("minutes", "min"),
    ("kilobytes", "KB"),
    ("percent", "%"),
    ("requests per second", "req/s"),
    ("JavaScript", "JS"),
    ("The CI pipeline", "CI"),
    ("maximum", "max"),
    ("minimum", "min"),
    ("dead letter queue", "DLQ"),
    ("background jobs", "bg jobs"),
    ("repository", "repo"),
]
CODEMIX: list[tuple[str, str]] = [
    ("데이터베이스", "DB"),
    ("쿠버네티스", "Kubernetes"),
    ("운영 환경", "production"),
    ("운영", "prod"),
    ("배포", "deploy"),
    ("스테이징 환경", "staging"),
    ("애플리케이션", "앱"),
    ("마이그레이션", "migration"),
    ("풀 리퀘스트", "PR"),
    ("테스트 커버리지", "test coverage"),
    ("커넥션 풀", "connection pool"),
    ("백그라운드 작업", "background job"),
    ("로드 밸런서", "load balancer"),
    ("메트릭", "metrics"),
    ("액세스 토큰", "access token"),
    ("비밀번호", "password"),
    ("다중 인증", "MFA"),
    ("자바스크립트", "JS"),
    ("로그", "log"),
    ("레플리카", "replica"),
    ("파티션", "partition"),
    ("데드 레터 큐", "DLQ"),
    ("모바일 앱", "mobile app"),
    ("밀리초", "ms"),
    ("퍼센트", "%"),
]


def _abbreviate(text: str, table: list[tuple[str, str]]) -> str:
    for long, short in sorted(table, key=lambda p: -len(p[0])):
        text = re.sub(rf"(?<![\w-]){re.escape(long)}(?![\w-])", short, text)
    return text


def _fill(template: str, values: dict[str, object], lang: str) -> str:
    filled = {k: (v[0] if lang == "en" else v[1]) if isinstance(v, tuple) else v for k, v in values.items()}
    return template.format(**filled)


def _assignments(family: Family, rng: random.Random, count: int) -> list[dict[str, object]]:
    names = sorted(family.slots)
    combos = list(itertools.product(*(family.slots[n] for n in names)))
    rng.shuffle(combos)
    return [dict(zip(names, c, strict=True)) for c in combos[:count]] or [{}]


def _jaccard(a: str, b: str) -> float:
    """Word-set overlap: a pair sharing most words in another order is a reordering, not a rewording."""
    wa, wb = ({w.strip(".,").casefold() for w in t.split()} for t in (a, b))
    return len(wa & wb) / len(wa | wb)


def _pair(a: str, b: str, category: str, lang: str, split: str, source: str) -> dict[str, object]:
    duplicate = category in HARD_POSITIVES
    label = "paraphrase" if duplicate else ("unrelated" if category == "unrelated" else "near_miss")
    return {
        "a": a,
        "b": b,
        "label": label,
        "duplicate": duplicate,
        "lang": lang,
        "category": category,
        "split": split,
        "source": source,
    }


def _family_pairs(index: int, family: Family, rng: random.Random) -> list[dict[str, object]]:
    split = "test" if index % 5 == 4 else "train"
    src = f"family-{index:02d}"
    out: list[dict[str, object]] = []
    for lang in ("en", "ko"):
        phrasings = family.en if lang == "en" else family.ko
        negs = family.en_neg if lang == "en" else family.ko_neg
        for values in _assignments(family, rng, 2):
            texts = [_fill(t, values, lang) for t in phrasings]
            for a, b in itertools.combinations(texts, 2):
                category = "reorder" if _jaccard(a, b) >= 0.7 else "paraphrase"
                out.append(_pair(a, b, category, lang, split, src))
            table = ABBREVIATIONS if lang == "en" else CODEMIX
            shortened = [(t, _abbreviate(t, table)) for t in texts]
            for i, (t, short) in enumerate(shortened):
                if short != t:
                    other = texts[(i + 1) % len(texts)]
                    out.append(
                        _pair(short, t, "abbreviation" if lang == "en" else "codemix", lang, split, src)
                    )
                    out.append(
                        _pair(short, other, "abbreviation" if lang == "en" else "codemix", lang, split, src)
                    )
            # one slot changed: the same phrasing, and a paraphrase
            for slot, options in sorted(family.slots.items()):
                for other_value in options:
                    if other_value == values[slot]:
                        continue
                    changed = {**values, slot: other_value}
                    i = rng.randrange(len(phrasings))
                    j = (i + 1 + rng.randrange(len(phrasings) - 1)) % len(phrasings)
                    cat = SLOT_CATEGORY[slot]
                    out.append(_pair(texts[i], _fill(phrasings[i], changed, lang), cat, lang, split, src))
                    out.append(_pair(texts[i], _fill(phrasings[j], changed, lang), cat, lang, split, src))
            for neg in negs:
                negated = _fill(neg, values, lang)
                for t in rng.sample(texts, 2):
                    out.append(_pair(t, negated, "negation", lang, split, src))
    # an English statement and its Korean rendering (same values)
    for values in _assignments(family, rng, 1):
        for i in rng.sample(range(len(family.en)), 2):
            j = rng.randrange(len(family.ko))
            en, ko = _fill(family.en[i], values, "en"), _fill(family.ko[j], values, "ko")
            out.append(_pair(en, ko, "translation", "mixed", split, src))
        if family.ko_neg:
            en = _fill(family.en[0], values, "en")
            out.append(_pair(en, _fill(family.ko_neg[0], values, "ko"), "negation", "mixed", split, src))
    return out


def _between_families(rng: random.Random) -> list[dict[str, object]]:
    """`related_topic` (same subject, another statement) and `unrelated` pairs across families."""
    out: list[dict[str, object]] = []
    first = {
        i: {lang: [_fill(t, v, lang) for t in (f.en if lang == "en" else f.ko)] for lang in ("en", "ko")}
        for i, f in enumerate(FAMILIES)
        for v in _assignments(f, random.Random(i), 1)
    }
    for i, j in itertools.combinations(range(len(FAMILIES)), 2):
        # a pair is held out when either family is
        split = "test" if i % 5 == 4 or j % 5 == 4 else "train"
        src = f"family-{i:02d}-{j:02d}"
        same_topic = FAMILIES[i].topic == FAMILIES[j].topic
        if not same_topic and rng.random() > 0.05:
            continue
        category = "related_topic" if same_topic else "unrelated"
        for lang in ("en", "ko"):
            out.append(
                _pair(rng.choice(first[i][lang]), rng.choice(first[j][lang]), category, lang, split, src)
            )
        if rng.random() < 0.3:
            out.append(
                _pair(rng.choice(first[i]["en"]), rng.choice(first[j]["ko"]), category, "mixed", split, src)
            )
    return out


def _curated() -> list[dict[str, object]]:
    out = []
    with CURATED.open(encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            p = json.loads(line)
            digest = int(hashlib.sha256(p["a"].encode()).hexdigest(), 16)
            category = {"paraphrase": "curated_paraphrase", "near_miss": "curated_near_miss"}.get(
                p["label"], "unrelated"
            )
            split = "test" if digest % 5 == 4 else "train"
            out.append({**p, "category": category, "split": split, "source": "curated"})
    return out


def build() -> list[dict[str, object]]:
    """Every pair, curated first, then generated (deterministic), without repeats."""
    rng = random.Random(SEED)
    pairs = _curated()
    for index, family in enumerate(FAMILIES):
        pairs.extend(_family_pairs(index, family, rng))
    pairs.extend(_between_families(rng))
    seen: set[tuple[str, str]] = set()
    unique = []
    for p in pairs:
        key = tuple(sorted((str(p["a"]), str(p["b"]))))
        if p["a"] == p["b"] or key in seen:
            continue
        seen.add(key)  # type: ignore[arg-type]
        unique.append(p)
    return unique


def main() -> None:
    pairs = build()
    with OUT.open("w", encoding="utf-8") as handle:
        for p in pairs:
            handle.write(json.dumps(p, ensure_ascii=False) + "\n")
    from collections import Counter

    print(f"{len(pairs)} pairs -> {OUT}")
    print(dict(Counter(str(p["category"]) for p in pairs)))
    print(dict(Counter(str(p["lang"]) for p in pairs)), dict(Counter(str(p["split"]) for p in pairs)))


if __name__ == "__main__":
    main()
