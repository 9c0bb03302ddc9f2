"""Held-out corpus for governance/redaction.py: another seed, other templates, other phrasings.

The rules are tuned on `redaction_corpus`; this one checks that they carry over to text they were not
shaped on. All values are FAKE and generated at import (see `redaction_corpus`).
"""

from __future__ import annotations

import base64
import json
import string
from collections.abc import Callable

from tests.governance.redaction_corpus import B62, HEX, MARK, PRIVATE_SPAN, URLSAFE, ZERO_WIDTH, Fake, Sample

SEED = 977_331

Template = Callable[[str], str]


def _one(label: str, template: Template, secret: str) -> Sample:
    return Sample(label, template(secret), (secret,), template(MARK))


PLACES: list[Template] = [
    lambda s: f"Heads-up: someone committed {s} to the wiki page, please revoke it.",
    lambda s: f"어제 장애 때 임시로 {s} 를 썼는데 아직 살아 있다.",
    lambda s: json.dumps(
        {"ts": "2024-06-02T08:00:00Z", "event": "secret_scan_hit", "match": s}, ensure_ascii=False
    ),
    lambda s: f"[worker-3] 401 Unauthorized using {s}; falling back to anonymous",
    lambda s: f"| staging | {s} | expires in 30 days |",
    lambda s: f"INTEGRATION_CREDENTIAL: '{s}'",
    lambda s: f"리뷰 코멘트: `{s}` 는 환경변수로 옮겨 주세요.",
    lambda s: f"> {s}\n> (copied from the vendor dashboard)",
]


def secret_samples(seed: int = SEED) -> list[Sample]:
    fake = Fake(seed)
    r = fake.rng
    out: list[Sample] = []

    makers: list[tuple[str, Callable[[], str]]] = [
        ("stripe", lambda: f"sk_test_{fake.mixed(24)}"),
        ("stripe", lambda: f"rk_live_{fake.mixed(99)}"),
        ("gitlab", lambda: f"glpat-{fake.chars(URLSAFE, 20)}"),
        ("npm", lambda: f"npm_{fake.mixed(36)}"),
        ("pypi", lambda: f"pypi-AgENdGVzdC5weXBpLm9yZw{fake.chars(URLSAFE, 90)}"),
        ("sendgrid", lambda: f"SG.{fake.chars(URLSAFE, 22)}.{fake.chars(URLSAFE, 43)}"),
        ("twilio", lambda: f"SK{fake.chars(HEX, 32)}"),
        ("discord", lambda: f"N{fake.chars(URLSAFE, 23)}.{fake.chars(URLSAFE, 6)}.{fake.chars(URLSAFE, 27)}"),
        ("telegram", lambda: f"{r.randint(10**8, 10**9)}:AA{fake.chars(URLSAFE, 33)}"),
        ("vault", lambda: f"hvs.{fake.chars(URLSAFE, 24)}"),
        ("shopify", lambda: f"shpat_{fake.chars(HEX, 32)}"),
        ("google_oauth", lambda: f"GOCSPX-{fake.chars(URLSAFE, 28)}"),
        ("openai", lambda: f"sk-{fake.mixed(48)}"),
        ("github", lambda: f"gho_{fake.mixed(36)}"),
        ("aws_access_key", lambda: f"ASIA{fake.chars(string.ascii_uppercase + string.digits, 16)}"),
        (
            "slack_token",
            lambda: f"xoxp-{r.randint(10**10, 10**11)}-{r.randint(10**10, 10**11)}-{fake.mixed(32)}",
        ),
        ("jwt", fake.jwt),
        ("huggingface", lambda: f"hf_{fake.mixed(34)}"),
        ("square", lambda: f"sq0csp-{fake.chars(URLSAFE, 43)}"),
        ("mailchimp", lambda: f"{fake.chars(HEX, 32)}-us{r.randint(1, 21)}"),
    ]
    for label, make in makers:
        for place in r.sample(PLACES, k=3):
            out.append(_one(label, place, make()))

    out.append(
        _one(
            "npmrc",
            lambda s: f"//registry.npmjs.org/:_authToken={s}",
            f"npm_{fake.mixed(36)}",
        )
    )
    out.append(
        _one(
            "pypirc", lambda s: f"[pypi]\nusername = __token__\npassword = {s}", f"pypi-AgEI{fake.mixed(80)}"
        )
    )
    out.append(
        _one(
            "slack_webhook",
            lambda s: f"SLACK_WEBHOOK_URL={s}",
            f"https://hooks.slack.com/services/T{fake.mixed(8).upper()}/B{fake.mixed(10).upper()}/{fake.mixed(24)}",
        )
    )
    out.append(
        _one(
            "azure_conn",
            lambda s: (
                '"ConnectionStrings": {"Storage": '
                f'"DefaultEndpointsProtocol=https;AccountName=logs;AccountKey={s}"}}'
            ),
            fake.b64(64),
        )
    )
    out.append(
        _one(
            "azure_conn",
            lambda s: (
                f"이벤트 허브 연결 문자열: Endpoint=sb://hub.servicebus.windows.net/;SharedAccessKeyName=send;SharedAccessKey={s};EntityPath=orders"
            ),
            fake.b64(32),
        )
    )
    sig = fake.b64(32).replace("/", "%2F").replace("+", "%2B").replace("=", "%3D")
    out.append(_one("azure_sas", lambda s: f"SAS URL ...&sp=racwdl&sig={s}&se=2024-12-31", sig))

    for template in [
        lambda s: f"celery broker: redis://:{s}@redis-master:6379/1",
        lambda s: f"SQLALCHEMY_DATABASE_URI = 'mysql+pymysql://svc:{s}@10.1.2.3/shop'",
        lambda s: f"ftp://backup:{s}@files.internal/dumps",
    ]:
        out.append(_one("url_credentials", template, fake.password()))

    for template in [
        lambda s: f"MYSQL_ROOT_PASSWORD: {s}",
        lambda s: f'const dbPass = "{s}";',
        lambda s: f"passphrase={s}",
        lambda s: f'<add key="SmtpPassword" value="{s}" />',
        lambda s: f"admin_password => '{s}',",
        lambda s: f"설정값 DB_PASS: {s} 로 되어 있음",
        lambda s: f"keystore.password={s}",
        lambda s: f"root pass: {s}",
    ]:
        out.append(_one("assignment", template, fake.password()))

    for template in [
        lambda s: f"aws_secret_access_key={s}",
        lambda s: f"SecretAccessKey: {s}",
        lambda s: f"회전 전 AWS secret access key 는 {s} 였다",
    ]:
        out.append(_one("aws_secret", template, fake.chars(B62 + "/+", 40)))

    for template in [
        lambda s: f"refresh: {s}",
        lambda s: f"api-token: {s}",
        lambda s: f"HMAC key = {s}",
        lambda s: f'"csrf_token": "{s}"',
        lambda s: f"Set-Cookie: session={s}; Secure",
    ]:
        out.append(_one("generic", template, fake.mixed(32)))

    for template in [
        lambda s: f"Note: the root password is now {s}.",
        lambda s: f"Shared drive password: {s}",
        lambda s: f"we changed the passphrase to {s} yesterday",
    ]:
        out.append(_one("prose_en", template, fake.password()))
    for template in [
        lambda s: f"공용 계정 비밀번호 = {s}",
        lambda s: f"NAS 비번: {s}",
        lambda s: f"임시 비밀번호는 {s} 로 발급했습니다",
        lambda s: f"와이파이 암호는 {s}",
        lambda s: f"새 비번 {s} 공유 드려요",
        lambda s: f"패스워드: {s} (변경 필요)",
    ]:
        out.append(_one("prose_ko", template, fake.password()))

    for template in [
        lambda s: f"mysqldump -uroot -p{s} shop > shop.sql",
        lambda s: f"mongosh 'mongodb://db:27017' -u admin -p {s}",
        lambda s: f"gh auth login --with-token --token {s}",
        lambda s: f"helm install app ./chart --set db.password={s}",
        lambda s: f"java -jar tool.jar -storepass {s}",
        lambda s: f"./cli --secret={s}",
    ]:
        out.append(_one("cli", template, fake.password()))

    block, body = fake.pem("DSA PRIVATE KEY")
    out.append(Sample("private_key", f"키 파일 내용:\n{block}", (body,), f"키 파일 내용:\n{MARK}"))
    block, body = fake.pem("ENCRYPTED PRIVATE KEY")
    as_json = json.dumps({"private_key": block})
    out.append(Sample("private_key", as_json, (body,), json.dumps({"private_key": MARK}, ensure_ascii=False)))

    for template in [
        lambda s: f'<private note="hr">{s}</private>',
        lambda s: f"Status update.\n< private>{s}</private >\nAll good.",
        lambda s: f"<Private>{s}</Private> 나머지는 공개.",
    ]:
        text = template(r.choice(["Bob's medical leave until June", "연봉 협상 내용 비공개"]))
        held = PRIVATE_SPAN.search(text)
        assert held is not None
        out.append(Sample("private_tag", text, (held.group(1),), PRIVATE_SPAN.sub(MARK, text)))

    for prefix, length in [("4", 16), ("52", 16), ("34", 15), ("65", 16)]:
        number = fake.luhn_number(prefix, length)
        if length == 15:
            shown = f"{number[:4]}-{number[4:10]}-{number[10:]}"
        else:
            shown = " ".join(number[i : i + 4] for i in range(0, length, 4))
        out.append(_one("card", lambda s: f"환불 요청 카드 {s} 확인 부탁", shown))
    for _ in range(3):
        out.append(_one("rrn", lambda s: f"지원자 주민등록번호: {s}", fake.rrn()))

    for inner in [
        f"api_key={fake.mixed(32)}",
        f"xoxb-{r.randint(10**10, 10**11)}-{fake.mixed(24)}",
        json.dumps({"username": "svc", "password": fake.password()}),
        f"AKIA{fake.chars(string.ascii_uppercase + string.digits, 16)}",
    ]:
        encoded = base64.b64encode(inner.encode()).decode()
        out.append(_one("base64", lambda s: f"Secret manifest data: {{ creds: {s} }}", encoded))

    for make in [lambda: f"sk_live_{fake.mixed(24)}", lambda: f"glpat-{fake.mixed(20)}", fake.jwt]:
        value = make()
        cut = r.randint(8, len(value) - 8)
        text = f"copied:\n  {value[:cut]}\n  {value[cut:]}\nthat's it"
        out.append(Sample("split_lines", text, (value,), f"copied:\n  {MARK}\n  {MARK}\nthat's it"))

    for make in [lambda: f"npm_{fake.mixed(36)}", lambda: f"GOCSPX-{fake.chars(URLSAFE, 28)}"]:
        value = make()
        broken = value[:6] + r.choice(ZERO_WIDTH) + value[6:]
        out.append(Sample("zero_width", f"토큰: {broken}", (value,), f"토큰: {MARK}"))
    return out


def near_miss_samples(seed: int = SEED) -> list[Sample]:
    fake = Fake(seed + 1)
    r = fake.rng
    out: list[Sample] = []

    def add(label: str, text: str) -> None:
        out.append(Sample(label, text))

    for _ in range(8):
        add("git_sha", f"Merge pull request #{r.randint(10, 9999)} from acme/fix ({fake.chars(HEX, 40)})")
    for _ in range(6):
        add("short_sha", f"롤백 대상 커밋: {fake.chars(HEX, r.randint(7, 10))}")
    for _ in range(8):
        uid = "-".join(fake.chars(HEX, n) for n in (8, 4, 4, 4, 12))
        add("uuid", r.choice([f"trace {uid} exceeded 2s", f'{{"id": "{uid}"}}', f"token id {uid} revoked"]))
    for _ in range(6):
        add("sha256", f"layer sha256:{fake.chars(HEX, 64)} already exists")
    for _ in range(4):
        jpeg = base64.b64encode(b"\xff\xd8\xff\xe0" + r.randbytes(90)).decode()
        add("data_uri", f"avatar: data:image/jpeg;base64,{jpeg}")
    for text in [
        "node >= 18.17.0",
        "upgrade django 4.2.11 -> 5.0.4",
        "chart version 0.3.0-alpha.7",
        "go 1.22",
        "semver ~1.4.2 || ^2.0.0",
        "tag v3.2.1-hotfix.2",
        "python_requires='>=3.11,<3.13'",
    ]:
        add("version", text)
    for text in [
        "2024-06-02 08:00:00 KST 배치 시작",
        "valid until 2025-12-31T23:59:59+09:00",
        "cron: 0 3 * * 1-5",
        "uptime 13d 04:22:10",
        "port=5432",
        "kubectl port-forward svc/db 15432:5432",
        "mongo --port 27017",
        "PGPORT=5433 psql -p 5433",
    ]:
        add("time_or_port", text)
    for text in [
        "고객센터 02-123-4567",
        "fax +1 (415) 555-0134",
        "사업자등록번호 123-45-67890",
        "AS 접수번호 20240602-000045",
        "account no. 110-234-567890",
        "meter id 3344556677",
        "shipment 1Z 999 AA1 01 2345 6784",
    ]:
        add("phone_or_id", text)
    for _ in range(4):
        add("non_luhn", f"order {fake.non_luhn_number('4', 16)} refunded")
    for text in [
        "tokens_per_minute: 90000",
        "rate_limit_tokens=10000",
        "DEFAULT_SECRET_BACKEND = 'vault'",
        "session_cookie_name: sid",
        "hmac_algorithm: sha256",
        "salt_rounds = 12",
        "password_expiry_days: 90",
        "api_key_id: key-prod-01",
        "signature_version: v4",
        "TOKEN_TTL=900",
        "key_length = 2048",
        "credentials: see 1Password vault 'ops'",
        "auth: required",
        "token: null",
        "keyFile: /etc/tls/tls.key",
        "passwordless login via WebAuthn",
        "PasswordField(max_length=128)",
        "self.password = password",
        "password = input('Password: ')",
        "user.set_password(raw_password)",
    ]:
        add("identifier", text)
    for text in [
        "/home/deploy/.aws/credentials",
        "secrets/prod/db.yaml.age",
        "D:\\keys\\readme.txt",
        "https://vault.internal/ui/vault/secrets/kv/list",
        "https://gitlab.internal/acme/api/-/merge_requests/77",
        "https://support.example.com/kb/how-to-change-your-password",
        "amqp://mq.internal:5672/",
        "https://user@github.com/acme/api.git",
    ]:
        add("path_or_url", text)
    for text in [
        "Ask IT to reset your password if you are locked out.",
        "The password policy requires 14 characters.",
        "passwords are hashed with bcrypt (cost 12)",
        "No password is needed for the read replica.",
        "Password rotation is automated by the vault job.",
        "The passphrase protects the signing key.",
        "Type the password twice to confirm.",
        "token: 5",
        "Each request costs 1 token.",
        "tokens left: 42",
        "API key rotation happens monthly.",
        "The secret is mounted at /run/secrets.",
        'password: ""',
        "password: changeme-later? no, use the vault",
        "--password-stdin reads it from the pipe",
        "docker login --password-stdin < token.txt",
        "echo $REGISTRY_TOKEN | docker login -u ci --password-stdin",
    ]:
        add("prose_en", text)
    for text in [
        "비밀번호 찾기 기능을 추가했다",
        "비밀번호는 암호화해서 저장한다",
        "암호 해시 비교 로직을 고쳤다",
        "비번 변경 알림 메일 문구 수정",
        "비밀번호 입력 5회 실패 시 잠금",
        "패스워드 정책 문서를 업데이트함",
        "토큰 만료 시간을 30분으로 줄였다",
        "암호문은 base64 로 인코딩된다",
        "비밀번호: 사내 위키 참고",
        "주민등록번호 뒷자리는 마스킹한다",
    ]:
        add("prose_ko", text)
    for text in [
        "Rolled back payments-api to the previous ReplicaSet after p99 latency hit 1.8s.",
        "캐시 적중률이 92%에서 71%로 떨어져 TTL 을 600초로 늘렸다.",
        "The migration added an index on (tenant_id, created_at).",
        "SKU-ACME-000123-BLUE is out of stock",
        "ACME_CORP_INTERNAL_TOOLS_PLATFORM_TEAM owns this",
        "Base64 of the payload is logged at debug level only.",
        "aGVsbG8= is just 'hello'",
        "pypi- prefixed tokens are scoped per project.",
        "AKIA keys are long-lived; prefer ASIA session keys.",
    ]:
        add("ordinary", text)
    return out
