"""Labelled corpus for governance/redaction.py: planted secrets and near-misses, from a fixed seed.

Every value is FAKE: random characters in the shape of a credential (its prefix, length and alphabet),
never a real key. They are generated when the module is imported, so no credential-shaped literal sits in
the repository for a secret scanner to trip over. Secrets are embedded the way agents write them down:
English and Korean sentences, JSON events, log lines, shell commands, config files.

`tests/governance/redaction_heldout.py` is a second corpus with another seed and other templates; rules
are tuned on this one only.
"""

from __future__ import annotations

import base64
import json
import random
import re
import string
from collections.abc import Callable
from dataclasses import dataclass

SEED = 20240514
ZERO_WIDTH = ("\u200b", "\u200c", "\u200d", "\u2060", "\ufeff")
MARK = "§"  # stands for a secret in `Sample.context`
PRIVATE_SPAN = re.compile(r"(?is)<\s*private[^>]*>(.*?)(?:<\s*/\s*private\s*>|\Z)")

B62 = string.ascii_letters + string.digits
URLSAFE = B62 + "-_"
HEX = "0123456789abcdef"
PASSWORD_CHARS = B62 + "!@#$%^*-_.+="


@dataclass(frozen=True)
class Sample:
    """One text; `secrets` must all be gone after redaction (none for a near-miss, which must not change)."""

    label: str
    text: str
    secrets: tuple[str, ...] = ()
    context: str = ""  # the text with each secret replaced by MARK: what is not secret


Template = Callable[[str], str]


class Fake:
    """Random values in the shape of credentials and of things that only look like them."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def chars(self, alphabet: str, n: int) -> str:
        return "".join(self.rng.choice(alphabet) for _ in range(n))

    def mixed(self, n: int) -> str:
        """Base62 with at least one digit, one lower and one upper letter (as random keys have)."""
        while True:
            value = self.chars(B62, n)
            if (
                any(c.isdigit() for c in value)
                and any(c.islower() for c in value)
                and any(c.isupper() for c in value)
            ):
                return value

    def password(self) -> str:
        words = [
            "Tiger",
            "Maple",
            "Orbit",
            "Canyon",
            "Falcon",
            "Harbor",
            "Velvet",
            "Quartz",
            "Summit",
            "Nimbus",
        ]
        if self.rng.random() < 0.5:
            return (
                self.rng.choice(words)
                + self.chars(string.digits, self.rng.randint(2, 4))
                + self.rng.choice("!@#$%^*-_")
                + self.chars(string.ascii_lowercase, 3)
            )
        first = self.rng.choice(string.ascii_letters)
        while True:
            rest = self.chars(PASSWORD_CHARS, self.rng.randint(10, 17))
            if any(c.isdigit() for c in rest) and any(c.isalpha() for c in rest):
                return first + rest

    def discord(self) -> str:
        first = self.rng.choice("MNO") + self.chars(URLSAFE, 25)
        return f"{first}.{self.chars(URLSAFE, 6)}.{self.chars(URLSAFE, 27)}"

    def uuid(self) -> str:
        parts = [self.chars(HEX, 8), self.chars(HEX, 4), "4" + self.chars(HEX, 3), "a" + self.chars(HEX, 3)]
        return "-".join([*parts, self.chars(HEX, 12)])

    def b64(self, n_bytes: int) -> str:
        return base64.b64encode(self.rng.randbytes(n_bytes)).decode()

    def luhn_number(self, prefix: str, length: int) -> str:
        body = prefix + self.chars(string.digits, length - len(prefix) - 1)
        for check in string.digits:
            if luhn_ok(body + check):
                return body + check
        raise AssertionError("unreachable")

    def non_luhn_number(self, prefix: str, length: int) -> str:
        while True:
            value = prefix + self.chars(string.digits, length - len(prefix))
            if not luhn_ok(value):
                return value

    def rrn(self) -> str:
        yy = self.rng.randint(0, 99)
        mm = self.rng.randint(1, 12)
        dd = self.rng.randint(1, 28)
        return f"{yy:02d}{mm:02d}{dd:02d}-{self.rng.randint(1, 4)}{self.chars(string.digits, 6)}"

    def jwt(self) -> str:
        def enc(obj: object) -> str:
            return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")

        header = enc({"alg": self.rng.choice(["HS256", "RS256"]), "typ": "JWT"})
        payload = enc(
            {
                "sub": f"agent-{self.rng.randint(1, 999)}",
                "exp": self.rng.randint(1_700_000_000, 1_800_000_000),
            }
        )
        return f"{header}.{payload}.{self.chars(URLSAFE, 43)}"

    def pem(self, kind: str) -> tuple[str, str]:
        body = "\n".join(self.b64(48) for _ in range(self.rng.randint(3, 6)))
        return f"-----BEGIN {kind}-----\n{body}\n-----END {kind}-----", body


def luhn_ok(digits: str) -> bool:
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = int(char)
        if index % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def _zw_password(value: str) -> str:
    return f"pass\u200bword={value} in the old compose file"


def sample(label: str, template: Template, *secrets: str) -> Sample:
    """Render `template` with the secrets; the context is the same template with MARK in their place."""
    values = list(secrets)
    text = template(values[0]) if len(values) == 1 else template("\x00".join(values))
    context = template(MARK) if len(values) == 1 else template("\x00".join(MARK for _ in values))
    return Sample(label, text, tuple(values), context)


def multi(fmt: str) -> Template:
    """A template for several secrets: `{0}`, `{1}`... are filled from the \\x00-joined argument."""
    return lambda joined: fmt.format(*joined.split("\x00"))


# ---------------------------------------------------------------------------------------------------------
# where a token-shaped secret shows up

TOKEN_CONTEXTS: list[Template] = [
    lambda s: f"CI failed because the deploy step still used {s} after it had been revoked.",
    lambda s: f"배포 파이프라인이 {s} 토큰으로 인증하다가 만료되어 실패했다.",
    lambda s: json.dumps(
        {"level": "error", "msg": "upstream rejected credential", "value": s}, ensure_ascii=False
    ),
    lambda s: f"2024-05-14T10:22:31Z WARN client: retrying with {s} (attempt 2/3)",
    lambda s: f"export SERVICE_CREDENTIAL={s}",
    lambda s: f"integration:\n  provider: acme\n  credential: {s}\n  retries: 3",
    lambda s: f"노트북 출력에 {s} 값이 그대로 남아 있어서 즉시 폐기했다.",
    lambda s: f"- `{s}` was pasted into the incident channel; rotated on Friday.",
    lambda s: f"Found in .env.local: INTEGRATION={s} # do not commit",
    lambda s: f'{{"service": "billing", "headers": {{"X-Auth": "{s}"}}, "status": 401}}',
]


def token_samples(fake: Fake, label: str, make: Callable[[], str], n: int) -> list[Sample]:
    contexts = fake.rng.sample(TOKEN_CONTEXTS, k=min(n, len(TOKEN_CONTEXTS)))
    return [sample(label, contexts[i % len(contexts)], make()) for i in range(n)]


def secret_samples(seed: int = SEED) -> list[Sample]:
    fake = Fake(seed)
    r = fake.rng
    out: list[Sample] = []

    # --- token shapes (detect-secrets plugins and own prefixes) ---
    shapes: list[tuple[str, Callable[[], str]]] = [
        ("stripe", lambda: f"sk_live_{fake.mixed(24)}"),
        ("stripe", lambda: f"rk_live_{fake.mixed(24)}"),
        ("stripe", lambda: f"sk_test_{fake.mixed(r.choice([24, 34, 99]))}"),
        ("stripe", lambda: f"whsec_{fake.mixed(32)}"),
        ("gitlab", lambda: f"glpat-{fake.chars(URLSAFE, 20)}"),
        ("npm", lambda: f"npm_{fake.mixed(36)}"),
        ("pypi", lambda: f"pypi-AgEIcHlwaS5vcmc{fake.chars(URLSAFE, r.randint(70, 140))}"),
        ("sendgrid", lambda: f"SG.{fake.chars(URLSAFE, 22)}.{fake.chars(URLSAFE, 43)}"),
        ("twilio", lambda: f"AC{fake.chars(HEX, 32)}"),
        ("twilio", lambda: f"SK{fake.chars(HEX, 32)}"),
        ("discord", fake.discord),
        ("telegram", lambda: f"{r.randint(100_000_000, 9_999_999_999)}:AA{fake.chars(URLSAFE, 33)}"),
        ("vault", lambda: f"hvs.{fake.chars(URLSAFE, r.choice([24, 90]))}"),
        ("vault", lambda: f"hvb.{fake.chars(URLSAFE, 120)}"),
        ("shopify", lambda: f"{r.choice(['shpat', 'shpss', 'shpca', 'shppa'])}_{fake.chars(HEX, 32)}"),
        ("google_oauth", lambda: f"GOCSPX-{fake.chars(URLSAFE, 28)}"),
        ("openai", lambda: f"sk-proj-{fake.mixed(48)}"),
        ("anthropic", lambda: f"sk-ant-api03-{fake.chars(URLSAFE, 93)}AA"),
        ("github", lambda: f"ghp_{fake.mixed(36)}"),
        ("github", lambda: f"github_pat_{fake.mixed(22)}_{fake.mixed(59)}"),
        ("aws_access_key", lambda: f"AKIA{fake.chars(string.ascii_uppercase + string.digits, 16)}"),
        ("google_api_key", lambda: f"AIza{fake.chars(URLSAFE, 35)}"),
        (
            "slack_token",
            lambda: f"xoxb-{r.randint(10**10, 10**11)}-{r.randint(10**10, 10**11)}-{fake.mixed(24)}",
        ),
        ("mailchimp", lambda: f"{fake.chars(HEX, 32)}-us{r.randint(1, 21)}"),
        ("square", lambda: f"sq0atp-{fake.chars(URLSAFE, 22)}"),
        ("square", lambda: f"sq0csp-{fake.chars(URLSAFE, 43)}"),
        ("huggingface", lambda: f"hf_{fake.mixed(34)}"),
        ("jwt", fake.jwt),
    ]
    for label, make in shapes:
        out.extend(token_samples(fake, label, make, 4))

    # --- Slack / Discord webhooks: the whole URL is the secret ---
    for _ in range(5):
        url = (
            f"https://hooks.slack.com/services/T{fake.chars(string.ascii_uppercase + string.digits, 8)}"
            f"/B{fake.chars(string.ascii_uppercase + string.digits, 10)}/{fake.mixed(24)}"
        )
        out.append(sample("slack_webhook", r.choice(TOKEN_CONTEXTS), url))
    out.append(
        sample(
            "slack_webhook",
            lambda s: f"알림은 {s} 로 보낸다 (채널 #deploys).",
            f"https://discord.com/api/webhooks/{r.randint(10**17, 10**18)}/{fake.chars(URLSAFE, 68)}",
        )
    )

    # --- Azure: connection strings and SAS signatures ---
    for _ in range(4):
        account = f"acct{fake.chars(string.ascii_lowercase, 6)}"
        out.append(
            sample(
                "azure_conn",
                lambda s, a=account: (
                    f"DefaultEndpointsProtocol=https;AccountName={a};AccountKey={s};EndpointSuffix=core.windows.net"
                ),
                fake.b64(64),
            )
        )
    for _ in range(3):
        out.append(
            sample(
                "azure_conn",
                lambda s: (
                    "Endpoint=sb://orders-ns.servicebus.windows.net/;"
                    f"SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={s}"
                ),
                fake.b64(32),
            )
        )
    for _ in range(4):
        sig = fake.b64(32).replace("+", "%2B").replace("/", "%2F").replace("=", "%3D")
        out.append(
            sample(
                "azure_sas",
                lambda s: (
                    "다운로드 링크: https://acctdata.blob.core.windows.net/exports/2024-05.csv?sv=2022-11-02&ss=b"
                    f"&srt=o&sp=r&se=2025-01-01T00:00:00Z&spr=https&sig={s}"
                ),
                sig,
            )
        )

    # --- credentials in URLs ---
    url_templates: list[Template] = [
        lambda s: f"cache lives at redis://:{s}@cache.internal:6379/0 since the migration",
        lambda s: f"DATABASE_URL=postgres://app:{s}@db.internal:5432/app",
        lambda s: f"브로커 주소는 amqp://guest:{s}@mq.internal:5672/ 로 바꿨다",
        lambda s: f"git clone https://deploy:{s}@git.internal/org/repo.git failed with 403",
        lambda s: f'{{"mongo_uri": "mongodb+srv://svc:{s}@cluster0.example.net/prod"}}',
        lambda s: f"redis://:{s}@10.0.3.7:6380 was hard-coded in worker.py",
    ]
    for template in url_templates:
        out.append(sample("url_credentials", template, fake.password()))

    # --- assignments: secret names, including db_pass and passphrase ---
    assignment_templates: list[Template] = [
        lambda s: f"db_pass={s}",
        lambda s: f"DB_PASS: {s}",
        lambda s: f'{{"passphrase": "{s}", "key_file": "~/.ssh/id_ed25519"}}',
        lambda s: f"ssh passphrase: {s}",
        lambda s: f"client_secret = '{s}'",
        lambda s: f"SMTP_PASSWORD={s} in the worker's environment",
        lambda s: f"spring.datasource.password={s}",
        lambda s: f'"dbPassword": "{s}",',
        lambda s: f"PGPASSWORD={s} psql -h db -U app",
        lambda s: f'passphrase = "{s}"  # gpg signing key',
        lambda s: f"운영 설정 파일에 db_pass={s} 가 평문으로 있었다",
        lambda s: f"x-api-key: {s}",
        lambda s: f"env:\n  - name: DB_PASSWORD\n    value: {s}\n  - name: LOG_LEVEL\n    value: info",
        lambda s: f'"environment": [{{"name": "API_TOKEN", "value": "{s}"}}]',
        lambda s: f'<add key="SmtpPassword" value="{s}" />',
        lambda s: f"Server=sql.internal;Database=app;User Id=sa;Password={s};Encrypt=true",
    ]
    for template in assignment_templates:
        out.append(sample("assignment", template, fake.password()))

    # --- AWS secret keys ---
    aws_templates: list[Template] = [
        lambda s: f"aws_secret_access_key = {s}",
        lambda s: f"AWS_SECRET_ACCESS_KEY={s}",
        lambda s: f"The AWS secret key {s} was rotated by the security team.",
    ]
    for template in aws_templates:
        out.append(sample("aws_secret", template, fake.chars(B62 + "+/", 40)))
    aws_pairs = [
        multi('{{"AccessKeyId": "{0}", "SecretAccessKey": "{1}"}}'),
        multi("[default]\naws_access_key_id = {0}\naws_secret_access_key = {1}"),
    ]
    for template in aws_pairs:
        key_id = f"AKIA{fake.chars(string.ascii_uppercase + string.digits, 16)}"
        out.append(sample("aws_secret", template, key_id, fake.chars(B62 + "+/", 40)))

    # --- generic high-entropy values under secret-sounding names ---
    generic_templates: list[Template] = [
        lambda s: f"session_token: {s}",
        lambda s: f'signing_key = "{s}"',
        lambda s: f'{{"auth": "{s}", "user": "svc-ci"}}',
        lambda s: f"X-Session-Key: {s}",
        lambda s: f"token={s}&user=ci",
        lambda s: f"encryption key: {s}",
        lambda s: f"webhook signature secret = {s}",
        lambda s: f"cookie: sid={s}; Path=/; HttpOnly",
    ]
    for template in generic_templates:
        out.append(sample("generic", template, fake.mixed(r.choice([24, 32, 40]))))

    # --- passwords in prose ---
    english_prose: list[Template] = [
        lambda s: f"The staging password is {s}, rotate it after the demo.",
        lambda s: f"Admin password was set to {s} during the outage.",
        lambda s: f"FYI the wifi password is {s}",
        lambda s: f"Log in with password {s} then change it.",
        lambda s: f"The password for the staging db is {s} until Monday.",
        lambda s: f"password for deploy@bastion was {s}",
    ]
    for template in english_prose:
        out.append(sample("prose_en", template, fake.password()))
    korean_prose: list[Template] = [
        lambda s: f"운영 DB 비밀번호: {s} (다음 주에 교체 예정)",
        lambda s: f"스테이징 서버 비번 {s} 으로 접속했다",
        lambda s: f"관리자 암호: {s}",
        lambda s: f"VPN 비밀번호는 {s} 입니다.",
        lambda s: f"비밀번호는 `{s}`이고 90일마다 바뀐다",
        lambda s: f"테스트 계정 패스워드 = {s}",
        lambda s: f"레디스 비번은 {s}로 설정함",
        lambda s: f"압축 파일 암호 {s} 로 풀면 된다",
        lambda s: f"공유 계정(ops@example.com) 비밀번호: {s}",
        lambda s: f"젠킨스 비번: {s}",
        lambda s: f"DB 비밀번호 공유드립니다: {s}",
        lambda s: f"비밀번호 알려드립니다 = {s}",
    ]
    for template in korean_prose:
        out.append(sample("prose_ko", template, fake.password()))

    # --- CLI flags ---
    cli_templates: list[Template] = [
        lambda s: f"mysql -h db.internal -u app -p{s} app_db",
        lambda s: f"mysql -u root -p {s} -e 'show databases'",
        lambda s: f"sshpass -p {s} ssh deploy@10.0.0.5",
        lambda s: f"redis-cli -h cache -a {s} ping",
        lambda s: f"curl -u admin:{s} https://ci.internal/api/json",
        lambda s: f"./deploy.sh --password {s} --env prod",
        lambda s: f"vault-sync --token {s} --dry-run",
        lambda s: f"tool sync --api-key={s} --verbose",
        lambda s: f"docker login -u bot --password {s} registry.internal",
        lambda s: f"openssl enc -aes-256-cbc -pass pass:{s} -in backup.tar",
        lambda s: f"이렇게 실행했다: ./migrate --db-password {s} --yes",
    ]
    for template in cli_templates:
        out.append(sample("cli", template, fake.password()))
    out.append(
        sample(
            "cli",
            multi("keytool -importkeystore -srcstorepass {0} -deststorepass {1} -srckeystore a.p12"),
            fake.password(),
            fake.password(),
        )
    )

    # --- private keys ---
    for kind in ("RSA PRIVATE KEY", "OPENSSH PRIVATE KEY", "EC PRIVATE KEY", "PRIVATE KEY"):
        block, body = fake.pem(kind)
        text = f"Sign with this key:\n{block}\nthen upload."
        out.append(Sample("private_key", text, (body,), f"Sign with this key:\n{MARK}\nthen upload."))

    # --- private tags ---
    private_phrases = [
        "Jane Doe lives at 12 Hidden Lane",
        "김민수 팀장 휴대폰 010-9876-5432",
        "the customer's divorce case is pending",
        "internal codename BLUEHERON launch date",
        "서울시 마포구 비공개 사무실 주소",
    ]
    private_templates: list[Template] = [
        lambda s: f"Notes for the team. <private>{s}</private> Everything else is public.",
        lambda s: f'<private reason="pii">{s}</private> 외에는 공개해도 된다.',
        lambda s: f"< private >{s}</ private > then the deploy ran.",
        lambda s: f"<PRIVATE>{s}</PRIVATE> (do not share)",
        lambda s: f"Summary first. <private>{s}",
        lambda s: f"<private>\n{s}\n</private>\nPublic part follows.",
        lambda s: f"회의록 < private   scope='hr' >{s}< /private > 끝.",
    ]
    for template in private_templates:
        text = template(r.choice(private_phrases))
        # the tags go with what they hold
        held = PRIVATE_SPAN.search(text)
        assert held is not None
        out.append(Sample("private_tag", text, (held.group(1),), PRIVATE_SPAN.sub(MARK, text)))

    # --- card numbers and resident registration numbers ---
    card_specs = [("4", 16), ("51", 16), ("55", 16), ("37", 15), ("6011", 16), ("4", 16)]
    card_templates: list[Template] = [
        lambda s: f"payment failed for card {s} (declined)",
        lambda s: f"고객이 카드번호 {s} 로 결제를 시도했다",
        lambda s: json.dumps({"event": "charge", "card": s, "amount": 12000}, ensure_ascii=False),
        lambda s: f"card={s} exp=12/27",
    ]
    for prefix, length in card_specs:
        number = fake.luhn_number(prefix, length)
        style = r.choice(["plain", "space", "dash"])
        if style != "plain":
            sep = " " if style == "space" else "-"
            if length == 15:
                number = f"{number[:4]}{sep}{number[4:10]}{sep}{number[10:]}"
            else:
                number = sep.join(number[i : i + 4] for i in range(0, len(number), 4))
        out.append(sample("card", r.choice(card_templates), number))
    rrn_templates: list[Template] = [
        lambda s: f"주민등록번호 {s} 가 로그에 찍혀 있었다",
        lambda s: f"RRN: {s}",
        lambda s: json.dumps({"name": "홍길동", "rrn": s}, ensure_ascii=False),
        lambda s: f"신청서의 주민번호({s})는 마스킹해야 한다",
        lambda s: f"customer id card number {s} leaked in the export",
    ]
    for template in rrn_templates:
        out.append(sample("rrn", template, fake.rrn()))

    # --- bearer and basic auth ---
    for _ in range(3):
        out.append(
            sample(
                "bearer",
                lambda s: f"curl -H 'Authorization: Bearer {s}' https://api.internal/v1",
                fake.mixed(40),
            )
        )
    basic = base64.b64encode(f"svc:{fake.password()}".encode()).decode()
    out.append(sample("basic_auth", lambda s: f"Authorization: Basic {s}", basic))

    # --- base64-wrapped secrets ---
    inner_secrets = [
        lambda: f"password={fake.password()}",
        lambda: f"sk_live_{fake.mixed(24)}",
        lambda: json.dumps({"api_key": fake.mixed(32)}),
        lambda: f"DB_PASSWORD={fake.password()}\nDB_HOST=db.internal",
        lambda: f"ghp_{fake.mixed(36)}",
        lambda: f"postgres://app:{fake.password()}@db:5432/app",
    ]
    b64_templates: list[Template] = [
        lambda s: f"kubectl get secret app -o yaml showed data.env: {s}",
        lambda s: f"헤더에 base64로 {s} 를 넣어 보냈다",
        lambda s: json.dumps({"blob": s, "encoding": "base64"}, ensure_ascii=False),
        lambda s: f"config blob {s} was committed by mistake",
    ]
    for i, make_inner in enumerate(inner_secrets * 2):
        raw = make_inner().encode()
        encoded = base64.urlsafe_b64encode(raw).decode() if i % 3 == 2 else base64.b64encode(raw).decode()
        out.append(sample("base64", b64_templates[i % len(b64_templates)], encoded))

    # --- split across lines ---
    split_makers: list[Callable[[], str]] = [
        lambda: f"ghp_{fake.mixed(36)}",
        lambda: f"sk_live_{fake.mixed(24)}",
        lambda: f"glpat-{fake.mixed(20)}",
        lambda: f"xoxb-{r.randint(10**10, 10**11)}-{fake.mixed(24)}",
        lambda: f"AKIA{fake.chars(string.ascii_uppercase + string.digits, 16)}",
        lambda: fake.jwt(),
        lambda: f"npm_{fake.mixed(36)}",
        lambda: f"hvs.{fake.mixed(90)}",
    ]
    split_templates = [
        "Token from the log (wrapped):\n{0}\n{1}\nEnd of paste.",
        "터미널 폭 때문에 줄이 바뀌었다:\n{0}\n    {1}\n다음 단계로 진행.",
        "key = {0}\n{1}\n# rotated since",
    ]
    for i, make in enumerate(split_makers * 2):
        value = make()
        cut = r.randint(6, len(value) - 8)
        template = split_templates[i % len(split_templates)]
        text = template.format(value[:cut], value[cut:])
        context = template.format(MARK, MARK)
        out.append(Sample("split_lines", text, (value,), context))

    # --- broken by zero-width characters ---
    zw_makers: list[Callable[[], str]] = [
        lambda: f"sk_live_{fake.mixed(24)}",
        lambda: f"ghp_{fake.mixed(36)}",
        lambda: f"AKIA{fake.chars(string.ascii_uppercase + string.digits, 16)}",
        lambda: f"glpat-{fake.mixed(20)}",
        lambda: f"SG.{fake.chars(URLSAFE, 22)}.{fake.chars(URLSAFE, 43)}",
        lambda: f"hf_{fake.mixed(34)}",
    ]
    for i, make in enumerate(zw_makers * 2):
        value = make()
        broken = list(value)
        for _ in range(r.randint(1, 3)):
            broken.insert(r.randint(1, len(broken) - 1), r.choice(ZERO_WIDTH))
        template = TOKEN_CONTEXTS[i % len(TOKEN_CONTEXTS)]
        out.append(Sample("zero_width", template("".join(broken)), (value,), template(MARK)))
    for _ in range(3):
        pw = fake.password()
        broken = pw[:3] + "\u200b" + pw[3:]
        out.append(Sample("zero_width", _zw_password(broken), (pw,), _zw_password(MARK)))

    return out


# ---------------------------------------------------------------------------------------------------------
# near-misses: must come back unchanged


def near_miss_samples(seed: int = SEED) -> list[Sample]:
    fake = Fake(seed + 1)
    r = fake.rng
    out: list[Sample] = []

    def add(label: str, text: str) -> None:
        out.append(Sample(label, text))

    for _ in range(10):
        sha = fake.chars(HEX, 40)
        add(
            "git_sha",
            r.choice(
                [
                    f"Fixed in commit {sha} on main.",
                    f"git revert {sha}",
                    json.dumps({"commit": sha, "branch": "main"}),
                    f"배포된 커밋은 {sha} 이다",
                    f"HEAD is now at {sha}",
                ]
            ),
        )
    for _ in range(10):
        short = fake.chars(HEX, r.randint(7, 12))
        add(
            "short_sha",
            r.choice(
                [
                    f"fixed in {short}",
                    f"cherry-pick {short} onto release/2.3",
                    f"커밋 {short} 에서 회귀가 생겼다",
                    f"see {short}..HEAD for the diff",
                ]
            ),
        )
    for _ in range(10):
        uid = fake.uuid()
        add(
            "uuid",
            r.choice(
                [
                    f"request_id={uid} took 1.2s",
                    json.dumps({"task_id": uid, "state": "done"}),
                    f"작업 {uid} 이 재시도 후 성공했다",
                    f"idempotency key: {uid}",
                    f"session: {uid}",
                ]
            ),
        )
    for _ in range(10):
        digest = fake.chars(HEX, 64)
        add(
            "sha256",
            r.choice(
                [
                    f"image ghcr.io/acme/api@sha256:{digest}",
                    f"sha256sum: {digest}  dist/app.tar.gz",
                    json.dumps({"content_hash": digest, "size": 1024}),
                    f"checksum {digest} matches the release page",
                    f"cache key: {digest}",
                ]
            ),
        )
    for _ in range(6):
        png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + r.randbytes(r.randint(40, 120))).decode()
        add(
            "data_uri",
            r.choice(
                [
                    f"![chart](data:image/png;base64,{png})",
                    f'<img src="data:image/png;base64,{png}">',
                    json.dumps({"thumbnail": f"data:image/png;base64,{png}"}),
                ]
            ),
        )
    for note in [
        "hello world, this is only a test note",
        "빌드 로그 요약: 경고 3건, 오류 없음",
        '{"retries": 3}',
    ]:
        add("base64_plain", f"encoded note: {base64.b64encode(note.encode()).decode()}")
    versions = ["1.2.3", "v2.0.0-rc.1", "3.11.7", "0.17.4", "v1.35.0", "2.0.0+build.5", "10.4.1-beta.2"]
    for v in versions:
        add(
            "version",
            r.choice([f"bumped to {v}", f"version: {v}", f"릴리스 {v} 배포 완료", f'"version": "{v}"']),
        )
    for rng_ in ["^1.2.3", "~2.0", ">=1.4,<2", "1.x", ">=3.11", "~=2.31.0", "<5.0.0 || >=6.1"]:
        add(
            "semver_range",
            r.choice([f"requires {rng_}", f'"dependencies": {{"lib": "{rng_}"}}', f"pin to {rng_}"]),
        )
    for _ in range(8):
        day = f"2024-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}"
        add(
            "date",
            r.choice(
                [
                    f"released on {day}",
                    f"{day}T{r.randint(0, 23):02d}:{r.randint(0, 59):02d}:00Z INFO worker started",
                    f"만료일: {day}",
                    json.dumps({"expires_at": f"{day}T00:00:00Z"}),
                ]
            ),
        )
    for text in [
        "psql -h db.internal -p 5432 -U app app",
        "mysql -h db -P 3306 -u app",
        "listening on 0.0.0.0:8080",
        "port: 6379",
        "EXPOSE 8080",
        "postgres://db.internal:5432/app",
        "redis://cache.internal:6379/0",
        "http://localhost:3000/health",
        "ssh -p 2222 deploy@bastion",
        "docker run -p 8080:80 nginx",
    ]:
        add("port", text)
    for text in [
        "call 010-1234-5678 for the on-call",
        "대표번호 1588-1234 로 문의",
        "+82-2-555-0123 (Seoul office)",
        "order ORD-2024-000123 shipped",
        "ticket JIRA-4821 closed",
        "tracking 9400 1000 0000 0000 0000 00",
        "epoch_ms=1715680951000",
        "invoice 20240514-0001234",
        "batch 20240514-1234567 finished",
        "주문번호 240514-00123 처리 완료",
    ]:
        add("phone_or_id", text)
    for _ in range(6):
        prefix, length = r.choice([("4", 16), ("51", 16), ("37", 15)])
        number = fake.non_luhn_number(prefix, length)
        grouped = " ".join(number[i : i + 4] for i in range(0, len(number), 4))
        add("non_luhn", r.choice([f"reference {number}", f"ref no. {grouped}", f"송장번호 {number}"]))
    for text in [
        "token_count = 1532",
        "MAX_TOKENS=4096",
        "max_tokens=512",
        "secret_name: db-credentials",
        "password_min_length: 12",
        "getPasswordPolicy() returns the rules",
        "password_reset_token_ttl: 3600",
        "the secretary: Jane",
        "TokenBucket(capacity=10)",
        "KeyError: 'user_id'",
        "primary key: user_id",
        "sort_key=created_at",
        "cache key: user:42:profile",
        "secretKeyRef:\n  name: db-credentials\n  key: password",
        "token_type: Bearer",
        '"token_type": "Bearer", "expires_in": 3600',
        "auth_method: oauth2",
        "auth.session: signed session tokens expire after one hour",
        "credentials_file: /etc/app/creds.json",
        "password_file: /run/secrets/db_password",
        "PASSWORD_HASHERS = ['argon2']",
        "api_key_header: X-API-Key",
        "sessionTimeout: 1800",
        "key: value",
        "pin: true",
        "otp_enabled: false",
    ]:
        add("identifier", text)
    for text in [
        "/etc/ssl/private/server.key",
        "~/.ssh/id_ed25519.pub",
        "C:\\Users\\dev\\AppData\\Local\\secrets\\cache",
        "src/governance/redaction.py:42",
        "config/credentials.yml.enc",
        "/var/lib/postgresql/16/main/pg_hba.conf",
        "docs/how-to/reset-password.md",
        "tests/fixtures/private_keys/README",
    ]:
        add("path", text)
    for text in [
        "https://github.com/acme/api/pull/1234",
        "https://example.com/reset-password?step=2",
        "https://docs.internal/auth/tokens#rotation",
        "https://myteam.slack.com/archives/C024BE91L",
        "https://registry.npmjs.org:443/@types/node",
        "s3://backups/2024/05/db.dump",
        "https://accounts.google.com/o/oauth2/auth?client_id=123.apps.googleusercontent.com&response_type=code",
        "https://api.internal/v1/users?page=2&limit=50",
    ]:
        add("url", text)
    for text in [
        "reset the password via the admin page",
        "passwords must be rotated every 90 days",
        "The password is stored in the vault, not in the repo.",
        "password was rotated yesterday",
        "the password is 12 characters long at minimum",
        "Password: at least 12 characters",
        "Enter your password: ",
        "password hashing uses argon2id",
        "Forgot password? Use the reset link.",
        "API keys are created in the console under Settings.",
        "Rotate the secret key every quarter.",
        "Bearer authentication is configured on the gateway.",
        "Authorization: Bearer <token>",
        "Use basic auth only for the local dev server.",
        "The token expired, so the job re-authenticated.",
        "token: 5",
        "tokens: 1532 in, 210 out",
        "Token: 12 remaining",
        "input_tokens: 1532, output_tokens: 210",
        "password: ${DB_PASSWORD}",
        "password=<your-password>",
        "password: ****",
        '"password": null',
        "DB_PASSWORD=$DB_PASSWORD",
        "password = os.environ['DB_PASSWORD']",
        "def login(user: str, password: str) -> bool:",
        "password = getpass.getpass()",
        "if password_hash == expected:",
        "pass the token to the next step",
        "the PIN pad was replaced",
        "the password for staging is stored in the vault",
        "The password for every account was reset on Monday.",
        "- name: LOG_LEVEL\n  value: debug",
        '{"name": "DB_HOST", "value": "db.internal"}',
        '<add key="PasswordPolicy" value="strict" />',
        "- name: DB_PASSWORD\n  valueFrom:\n    secretKeyRef: {name: db, key: password}",
    ]:
        add("prose_en", text)
    for text in [
        "비밀번호를 재설정하세요",
        "비밀번호 변경 주기는 90일이다",
        "암호화 방식은 AES-256-GCM으로 통일했다",
        "비밀번호 정책: 12자 이상, 특수문자 포함",
        "비밀번호는 관리자 페이지에서 바꿀 수 있다",
        "비번을 잊어버려서 초기화 요청을 보냈다",
        "암호 알고리즘은 bcrypt 를 쓴다",
        "비밀번호 8자리 이상으로 설정할 것",
        "토큰 수: 1532",
        "패스워드 만료 알림이 3일 전에 온다",
        "암호화 키는 KMS 에서 관리한다",
        "비밀번호가 틀렸다는 로그가 5번 찍혔다",
        "비밀번호는 90일마다 바뀐다",
        "인증 토큰은 1시간 뒤 만료된다",
        "비밀번호 변경 방법: admin 페이지에서 재설정",
        "비밀번호 분실 시: 관리자에게 문의",
        "암호 정책 요약: 12자 이상",
    ]:
        add("prose_ko", text)
    for text in [
        "Deploy finished for payments-api v2.3.1; 3 pods rolled out behind the load balancer.",
        "배포 후 세션이 끊기는 문제는 idle timeout 60초 설정 때문이었다.",
        "The worker retries 5 times with exponential backoff (base 2s, max 60s).",
        "internationalization_settings_loader_v2 was renamed.",
        "ResourceQuotaExceededException raised by the scheduler",
        "AC adapter replaced; SK hynix memory installed.",
        "RSA-2048 keys are rotated yearly.",
        "arn:aws:iam::123456789012:role/deploy-role",
        "color: #1a2b3c; background: #ffffff;",
        "SELECT id, name FROM users WHERE created_at > '2024-01-01'",
        "kubectl rollout restart deployment/api -n prod",
        "pytest -q tests/governance -p no:cacheprovider",
        "GET /api/v1/tokens?limit=20 200 OK 12ms",
        "lg_keys table has 3 rows",
        "ghp_ prefixes identify GitHub personal access tokens.",
        "Stripe keys start with sk_live_ in production.",
        "The header looks like eyJhbGciOi... when decoded.",
    ]:
        add("ordinary", text)
    # code, config and logs that mention secrets without holding one
    for text in [
        "def rotate_api_key(client: Client, key_id: str) -> None:",
        "if not secrets.compare_digest(token, expected_token):",
        "token = request.headers.get('Authorization', '')",
        "api_key = os.getenv('OPENAI_API_KEY')",
        "DB_PASSWORD: ${{ secrets.DB_PASSWORD }}",
        "password: !vault |",
        "password: {{ vault_db_password }}",
        "valueFrom:\n  secretKeyRef:\n    name: api-secrets\n    key: stripe-key",
        "env:\n  - name: DB_PASSWORD\n    valueFrom: {secretKeyRef: {name: db, key: password}}",
        "WARN auth: invalid token for user_id=4821 (expired 2024-05-14T10:00:00Z)",
        "INFO  login ok user=alice mfa=totp session_ttl=3600",
        "ERROR password check failed for user bob (3 attempts)",
        "grep -r 'BEGIN RSA' . returned nothing",
        "chmod 600 ~/.ssh/id_rsa",
        "ssh-keygen -t ed25519 -C 'ci@acme'",
        "gpg --list-secret-keys --keyid-format LONG",
        "openssl rand -base64 32 > /dev/null",
        "helm upgrade api ./chart --set image.tag=v2.3.1 --set replicas=3",
        "npm install --save-dev @types/node@20.11.30",
        "pip install 'requests>=2.31,<3'",
        "git push origin feature/password-reset",
        "docker build -t acme/api:2024.05.14 .",
        "terraform plan -var 'region=ap-northeast-2'",
        "aws s3 cp s3://backups/db.dump . --region ap-northeast-2",
        "kubectl create secret generic db --from-file=./password.txt",
        "export KUBECONFIG=~/.kube/config",
        "SELECT count(*) FROM api_keys WHERE revoked_at IS NULL;",
        "UPDATE users SET password_hash = $1 WHERE id = $2",
        "jwt.decode(token, key, algorithms=['HS256'])",
        "Token refresh failed: 400 invalid_grant",
        "세션 키 길이를 256비트로 늘렸다",
        "토큰 발급 API 응답 시간 p95 120ms",
        "로그인 실패 시 비밀번호 필드를 비운다",
        "API 키는 콘솔의 설정 메뉴에서 발급한다",
        "config.yaml 의 password 항목은 비워 둔다",
        "OAuth client_id=acme-web redirect_uri=https://app.example.com/callback",
        "Cache-Control: no-store",
        "Set-Cookie: theme=dark; Path=/",
        "X-Request-Id: 7f3c9a2e-1b4d-4e8f-9a6b-2c5d8e1f0a3b",
        'If-None-Match: W/"5e8f1a2b"',
    ]:
        add("code_or_log", text)
    return out
