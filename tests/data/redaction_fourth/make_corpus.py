# ruff: noqa: E501  (corpus text literals are kept on one line so they read as the leaked text does)
"""Write the fourth (blind) redaction corpus: secrets.jsonl and near_misses.jsonl.

Every value is synthesised from a fixed seed; rerunning reproduces both files byte for byte.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import random
import string
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
SPLIT_SEED = 4022
UP = string.ascii_uppercase
LO = string.ascii_lowercase
DIG = string.digits
ALNUM = UP + LO + DIG
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"
B32 = UP + "234567"
B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"

GITLEAKS = "https://github.com/gitleaks/gitleaks/blob/master/config/gitleaks.toml"
GH_PATTERNS = (
    "https://docs.github.com/en/code-security/secret-scanning/introduction/supported-secret-scanning-patterns"
)
TRUFFLEHOG = "https://github.com/trufflesecurity/trufflehog/tree/main/pkg/detectors"


def rs(r: random.Random, chars: str, n: int) -> str:
    return "".join(r.choice(chars) for _ in range(n))


def pw(r: random.Random) -> str:
    """A human-ish password: word, digits and a symbol, 10-16 chars."""
    words = [
        "Sommer",
        "Otter",
        "Kestrel",
        "Maple",
        "Zephyr",
        "Quartz",
        "Lantern",
        "Cobalt",
        "Harbor",
        "Juniper",
    ]
    return (
        r.choice(words) + rs(r, DIG, r.randint(2, 4)) + r.choice("!#$%&*?@") + rs(r, ALNUM, r.randint(3, 6))
    )


def luhn_complete(prefix: str, length: int, r: random.Random) -> str:
    body = prefix + rs(r, DIG, length - len(prefix) - 1)
    total = 0
    for i, ch in enumerate(reversed(body)):
        d = int(ch)
        if i % 2 == 0:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return body + str((10 - total % 10) % 10)


def luhn_ok(num: str) -> bool:
    digits = [int(c) for c in num if c.isdigit()]
    total = 0
    for i, d in enumerate(reversed(digits)):
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def iban_make(country: str, bban: str) -> str:
    s = bban + country + "00"
    n = int("".join(str(int(c, 36)) for c in s))
    check = 98 - n % 97
    return f"{country}{check:02d}{bban}"


def iban_ok(iban: str) -> bool:
    s = iban.replace(" ", "")
    s = s[4:] + s[:4]
    return int("".join(str(int(c, 36)) for c in s)) % 97 == 1


def b58encode(raw: bytes) -> str:
    n = int.from_bytes(raw, "big")
    out = ""
    while n:
        n, rem = divmod(n, 58)
        out = B58[rem] + out
    pad = len(raw) - len(raw.lstrip(b"\0"))
    return "1" * pad + out


def b58check(payload: bytes) -> str:
    chk = hashlib.sha256(hashlib.sha256(payload).digest()).digest()[:4]
    return b58encode(payload + chk)


def b58check_ok(s: str) -> bool:
    n = 0
    for c in s:
        n = n * 58 + B58.index(c)
    raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
    raw = b"\0" * (len(s) - len(s.lstrip("1"))) + raw
    return hashlib.sha256(hashlib.sha256(raw[:-4]).digest()).digest()[:4] == raw[-4:]


def b64u(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def jwt(r: random.Random, claims: dict[str, object]) -> str:
    head = b64u(json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")).encode())
    body = b64u(json.dumps(claims, separators=(",", ":")).encode())
    return f"{head}.{body}.{rs(r, B64URL, 43)}"


def pem_body(r: random.Random, lines: int, width: int = 64) -> list[str]:
    return [rs(r, B64, width) for _ in range(lines)]


Gen = Callable[[random.Random], tuple[str, list[str]]]
FAMILIES: list[tuple[str, str, int, Gen]] = []


def fam(name: str, source: str, count: int = 2) -> Callable[[Gen], Gen]:
    def deco(fn: Gen) -> Gen:
        FAMILIES.append((name, source, count, fn))
        return fn

    return deco


# ---------------------------------------------------------------- cloud providers
@fam("aws-credentials-file", "https://docs.aws.amazon.com/cli/latest/userguide/cli-configure-files.html")
def _aws(r: random.Random) -> tuple[str, list[str]]:
    kid = "AKIA" + rs(r, B32, 16)
    sec = rs(r, B64, 40)
    return f"[prod]\naws_access_key_id = {kid}\naws_secret_access_key = {sec}\nregion = eu-west-1", [kid, sec]


@fam("aws-sts-env-export", "https://docs.aws.amazon.com/STS/latest/APIReference/API_Credentials.html")
def _aws_sts(r: random.Random) -> tuple[str, list[str]]:
    kid = "ASIA" + rs(r, B32, 16)
    sec = rs(r, B64, 40)
    tok = "IQoJb3JpZ2luX2Vj" + rs(r, B64, 300)
    text = (
        f"$ aws sts assume-role ... | jq -r\nexport AWS_ACCESS_KEY_ID={kid}\nexport AWS_SECRET_ACCESS_KEY={sec}\n"
        f"export AWS_SESSION_TOKEN={tok}"
    )
    return text, [kid, sec, tok]


@fam(
    "azure-storage-connection-string",
    "https://learn.microsoft.com/en-us/azure/storage/common/storage-configure-connection-string",
)
def _az_conn(r: random.Random) -> tuple[str, list[str]]:
    key = rs(r, B64, 86) + "=="
    acct = "st" + rs(r, LO + DIG, 10)
    return (
        f'"AzureWebJobsStorage": "DefaultEndpointsProtocol=https;AccountName={acct};AccountKey={key};'
        f'EndpointSuffix=core.windows.net"',
        [key],
    )


@fam("azure-sas-query", "https://learn.microsoft.com/en-us/azure/storage/common/storage-sas-overview")
def _az_sas(r: random.Random) -> tuple[str, list[str]]:
    sig = rs(r, ALNUM, 43) + "%3D"
    return (
        f"az storage blob download --blob-url 'https://backups{rs(r, DIG, 3)}.blob.core.windows.net/db/dump.gz?"
        f"sv=2022-11-02&ss=b&srt=o&sp=r&se=2026-12-01T00:00:00Z&spr=https&sig={sig}'",
        [sig],
    )


@fam(
    "azure-ad-client-secret",
    "https://learn.microsoft.com/en-us/entra/identity-platform/how-to-add-credentials",
)
def _az_cs(r: random.Random) -> tuple[str, list[str]]:
    s = rs(r, ALNUM, 3) + str(r.randint(7, 8)) + "Q~" + rs(r, ALNUM + "-_.~", 34)
    return f"AZURE_TENANT_ID={r.randbytes(16).hex()}\nAZURE_CLIENT_SECRET={s}", [s]


@fam("gcp-api-key-url", "https://cloud.google.com/docs/authentication/api-keys")
def _gcp_key(r: random.Random) -> tuple[str, list[str]]:
    k = "AIza" + rs(r, B64URL, 35)
    return f"GET https://maps.googleapis.com/maps/api/geocode/json?address=Berlin&key={k}", [k]


@fam("gcp-service-account-json", "https://cloud.google.com/iam/docs/keys-create-delete")
def _gcp_sa(r: random.Random) -> tuple[str, list[str]]:
    kid = r.randbytes(20).hex()
    body = pem_body(r, 3)
    pk = "-----BEGIN PRIVATE KEY-----\\n" + "\\n".join(body) + "\\n-----END PRIVATE KEY-----\\n"
    text = (
        '{"type": "service_account", "project_id": "acme-data-'
        + rs(r, DIG, 4)
        + '", "private_key_id": "'
        + kid
        + '", "private_key": "'
        + pk
        + '", "client_email": "etl@acme.iam.gserviceaccount.com"}'
    )
    return text, [kid, *body]


@fam("gcp-oauth-refresh-token", "https://developers.google.com/identity/protocols/oauth2")
def _g_refresh(r: random.Random) -> tuple[str, list[str]]:
    t = "1//0" + rs(r, ALNUM, 1) + rs(r, B64URL, 98)
    cs = "GOCSPX-" + rs(r, B64URL, 28)
    return f'{{"refresh_token": "{t}", "client_secret": "{cs}", "scope": "drive.readonly"}}', [t, cs]


@fam("alibaba-accesskey", "https://www.alibabacloud.com/help/en/ram/user-guide/create-an-accesskey-pair")
def _ali(r: random.Random) -> tuple[str, list[str]]:
    kid = "LTAI5t" + rs(r, ALNUM, 18)
    sec = rs(r, ALNUM, 30)
    return f"ALIBABA_CLOUD_ACCESS_KEY_ID={kid}\nALIBABA_CLOUD_ACCESS_KEY_SECRET={sec}", [kid, sec]


@fam("digitalocean-pat", "https://docs.digitalocean.com/reference/api/create-personal-access-token/")
def _do(r: random.Random) -> tuple[str, list[str]]:
    t = "dop_v1_" + r.randbytes(32).hex()
    return f"doctl auth init --access-token {t}", [t]


# ---------------------------------------------------------------- code hosting / CI
@fam("github-fine-grained-pat", GH_PATTERNS)
def _gh_fg(r: random.Random) -> tuple[str, list[str]]:
    t = "github_pat_" + rs(r, ALNUM, 22) + "_" + rs(r, ALNUM, 59)
    return f"git clone https://{t}@github.com/acme/infra.git", [t]


@fam("github-classic-curl-header", GH_PATTERNS)
def _gh_cl(r: random.Random) -> tuple[str, list[str]]:
    t = "ghp_" + rs(r, ALNUM, 36)
    return f'curl -sS -H "Authorization: token {t}" https://api.github.com/user/repos', [t]


@fam("gitlab-pat", "https://docs.gitlab.com/ee/security/token_overview.html")
def _gl(r: random.Random) -> tuple[str, list[str]]:
    t = "glpat-" + rs(r, B64URL, 20)
    return f'export CI_TOKEN="{t}"  # used by release job', [t]


@fam("git-credentials-store", "https://git-scm.com/docs/git-credential-store")
def _gitcred(r: random.Random) -> tuple[str, list[str]]:
    p = rs(r, ALNUM, 32)
    return f"$ cat ~/.git-credentials\nhttps://build-bot:{p}@git.example.org", [p]


@fam(
    "gh-actions-log-basic-auth",
    "https://docs.github.com/en/actions/security-for-github-actions/security-guides/using-secrets-in-github-actions",
)
def _ci_log(r: random.Random) -> tuple[str, list[str]]:
    p = pw(r)
    return (
        f"2026-03-02T10:11:12.3456789Z + curl -fsSL -u deploy:{p} https://nexus.internal/repository/raw/\n"
        "2026-03-02T10:11:13.0000000Z ##[error]Process completed with exit code 22.",
        [p],
    )


@fam("circleci-personal-token", TRUFFLEHOG)
def _circle(r: random.Random) -> tuple[str, list[str]]:
    t = "CCIPAT_" + rs(r, ALNUM, 22) + "_" + r.randbytes(20).hex()
    return f"curl -H 'Circle-Token: {t}' https://circleci.com/api/v2/me", [t]


# ---------------------------------------------------------------- package registries
@fam("npmrc-auth-token", "https://docs.npmjs.com/cli/v10/configuring-npm/npmrc")
def _npmrc(r: random.Random) -> tuple[str, list[str]]:
    t = "npm_" + rs(r, ALNUM, 36)
    return f"registry=https://registry.npmjs.org/\n//registry.npmjs.org/:_authToken={t}\nalways-auth=true", [
        t
    ]


@fam("yarnrc-npm-auth-token", "https://yarnpkg.com/configuration/yarnrc#npmAuthToken")
def _yarnrc(r: random.Random) -> tuple[str, list[str]]:
    t = "npm_" + rs(r, ALNUM, 36)
    return f'npmRegistryServer: "https://registry.npmjs.org"\nnpmAuthToken: "{t}"', [t]


@fam("pypirc-api-token", "https://packaging.python.org/en/latest/specifications/pypirc/")
def _pypirc(r: random.Random) -> tuple[str, list[str]]:
    t = "pypi-AgEIcHlwaS5vcmc" + rs(r, B64URL, 150)
    return f"[distutils]\nindex-servers = pypi\n\n[pypi]\nusername = __token__\npassword = {t}", [t]


@fam("maven-settings-xml", "https://maven.apache.org/settings.html#servers")
def _mvn(r: random.Random) -> tuple[str, list[str]]:
    p = pw(r)
    return (
        f"<servers>\n  <server>\n    <id>internal-releases</id>\n    <username>ci</username>\n"
        f"    <password>{p}</password>\n  </server>\n</servers>",
        [p],
    )


@fam("gradle-properties", "https://docs.gradle.org/current/userguide/signing_plugin.html")
def _gradle(r: random.Random) -> tuple[str, list[str]]:
    a, b = pw(r), rs(r, ALNUM, 24)
    return (
        f"signing.keyId=24875D73\nsigning.password={a}\nsigning.secretKeyRingFile=/home/ci/.gnupg/secring.gpg\n"
        f"ossrhUsername=acme\nossrhPassword={b}",
        [a, b],
    )


@fam(
    "nuget-config-cleartext",
    "https://learn.microsoft.com/en-us/nuget/reference/nuget-config-file#packagesourcecredentials",
)
def _nuget(r: random.Random) -> tuple[str, list[str]]:
    p = rs(r, LO + DIG, 52)
    return (
        f'<packageSourceCredentials>\n  <feed>\n    <add key="Username" value="ci" />\n'
        f'    <add key="ClearTextPassword" value="{p}" />\n  </feed>\n</packageSourceCredentials>',
        [p],
    )


@fam("docker-login-password-flag", "https://docs.docker.com/reference/cli/docker/login/")
def _dlogin(r: random.Random) -> tuple[str, list[str]]:
    p = "dckr_pat_" + rs(r, B64URL, 27)
    return f"docker login -u acmebot -p {p} docker.io", [p]


@fam("docker-config-json-auth", "https://docs.docker.com/reference/cli/docker/login/#credential-stores")
def _dcfg(r: random.Random) -> tuple[str, list[str]]:
    a = base64.b64encode(f"robot$ci:{rs(r, ALNUM, 32)}".encode()).decode()
    return f'{{\n  "auths": {{\n    "registry.acme.io": {{\n      "auth": "{a}"\n    }}\n  }}\n}}', [a]


# ---------------------------------------------------------------- chat / comms / SaaS
@fam("slack-bot-token", "https://api.slack.com/authentication/token-types")
def _slack(r: random.Random) -> tuple[str, list[str]]:
    t = f"xoxb-{rs(r, DIG, 12)}-{rs(r, DIG, 13)}-{rs(r, ALNUM, 24)}"
    return f"SLACK_BOT_TOKEN={t}", [t]


@fam("slack-incoming-webhook", "https://api.slack.com/messaging/webhooks")
def _slack_wh(r: random.Random) -> tuple[str, list[str]]:
    path = f"T{rs(r, UP + DIG, 10)}/B{rs(r, UP + DIG, 10)}/{rs(r, ALNUM, 24)}"
    return f'curl -X POST -d \'{{"text":"deploy ok"}}\' https://hooks.slack.com/services/{path}', [path]


@fam("discord-bot-token", "https://discord.com/developers/docs/reference#authentication")
def _discord(r: random.Random) -> tuple[str, list[str]]:
    uid = base64.b64encode(rs(r, DIG, 18).encode()).decode().rstrip("=")
    t = f"{uid}.{rs(r, B64URL, 6)}.{rs(r, B64URL, 38)}"
    return f'client.run("{t}")', [t]


@fam("telegram-bot-token", "https://core.telegram.org/bots/api#authorizing-your-bot")
def _tg(r: random.Random) -> tuple[str, list[str]]:
    t = f"{r.randint(1000000000, 7999999999)}:AA{rs(r, B64URL, 33)}"
    return f"https://api.telegram.org/bot{t}/sendMessage?chat_id=-100123&text=hi", [t]


@fam("twilio-sid-and-auth-token", "https://www.twilio.com/docs/iam/api/authtoken")
def _twilio(r: random.Random) -> tuple[str, list[str]]:
    tok = r.randbytes(16).hex()
    sid = "AC" + r.randbytes(16).hex()
    return f"client = Client('{sid}', '{tok}')", [tok]


@fam("sendgrid-api-key", "https://www.twilio.com/docs/sendgrid/ui/account-and-settings/api-keys")
def _sg(r: random.Random) -> tuple[str, list[str]]:
    t = f"SG.{rs(r, B64URL, 22)}.{rs(r, B64URL, 43)}"
    return f"SENDGRID_API_KEY='{t}'", [t]


@fam(
    "mailgun-private-key",
    "https://documentation.mailgun.com/docs/mailgun/user-manual/get-started/#primary-account-api-key",
)
def _mg(r: random.Random) -> tuple[str, list[str]]:
    k = "key-" + r.randbytes(16).hex()
    return f"curl -s --user 'api:{k}' https://api.mailgun.net/v3/mg.acme.io/messages", [k]


@fam("okta-ssws-header", "https://developer.okta.com/docs/guides/create-an-api-token/main/")
def _okta(r: random.Random) -> tuple[str, list[str]]:
    t = "00" + rs(r, B64URL, 40)
    return f"Authorization: SSWS {t}", [t]


@fam(
    "atlassian-api-token",
    "https://support.atlassian.com/atlassian-account/docs/manage-api-tokens-for-your-atlassian-account/",
)
def _atl(r: random.Random) -> tuple[str, list[str]]:
    t = "ATATT3xFfGF0" + rs(r, B64URL, 170) + "=" + rs(r, UP + DIG, 8)
    return f"jira_token: {t}", [t]


@fam("linear-api-key", "https://linear.app/developers/graphql#personal-api-keys")
def _lin(r: random.Random) -> tuple[str, list[str]]:
    t = "lin_api_" + rs(r, ALNUM, 40)
    return f"const linear = new LinearClient({{ apiKey: '{t}' }});", [t]


@fam("notion-integration-token", "https://developers.notion.com/docs/authorization")
def _notion(r: random.Random) -> tuple[str, list[str]]:
    t = "ntn_" + rs(r, DIG, 11) + rs(r, ALNUM, 35)
    return f"NOTION_TOKEN={t}", [t]


@fam("shopify-admin-token", "https://shopify.dev/docs/apps/build/authentication-authorization/access-tokens")
def _shop(r: random.Random) -> tuple[str, list[str]]:
    t = "shpat_" + r.randbytes(16).hex()
    return f"X-Shopify-Access-Token: {t}", [t]


# ---------------------------------------------------------------- payments / finance
@fam("stripe-live-secret", "https://docs.stripe.com/keys")
def _stripe(r: random.Random) -> tuple[str, list[str]]:
    t = "sk_live_51" + rs(r, ALNUM, 97)
    return f'stripe.api_key = "{t}"', [t]


@fam("stripe-webhook-secret", "https://docs.stripe.com/webhooks#verify-events")
def _whsec(r: random.Random) -> tuple[str, list[str]]:
    t = "whsec_" + rs(r, ALNUM, 32)
    return f"STRIPE_WEBHOOK_SECRET={t}", [t]


@fam("card-number-with-cvv", "https://en.wikipedia.org/wiki/Luhn_algorithm", 3)
def _card(r: random.Random) -> tuple[str, list[str]]:
    num = luhn_complete(r.choice(["4", "51", "55", "2221"]), 16, r)
    spaced = " ".join(num[i : i + 4] for i in range(0, 16, 4))
    cvv = rs(r, DIG, 3)
    return f"Card: {spaced}, exp 09/28, CVV {cvv}. Please charge the renewal.", [spaced]


@fam("iban-prose-de", "https://www.iso13616.org/ (ISO 13616, mod-97 check)")
def _iban_de(r: random.Random) -> tuple[str, list[str]]:
    ib = iban_make("DE", rs(r, DIG, 18))
    return f"Bitte überweisen Sie den Betrag auf unser Konto IBAN {ib}, BIC COBADEFFXXX.", [ib]


@fam("iban-grouped-fr-es", "https://www.iso13616.org/ (ISO 13616, mod-97 check)")
def _iban_fr(r: random.Random) -> tuple[str, list[str]]:
    c = r.choice(["FR", "ES"])
    bban = rs(r, DIG, 23) if c == "FR" else rs(r, DIG, 20)
    ib = iban_make(c, bban)
    grouped = " ".join(ib[i : i + 4] for i in range(0, len(ib), 4))
    return f"Datos bancarios / coordonnées : {grouped}", [grouped]


@fam("us-bank-routing-account", "https://www.aba.com/about-us/routing-number", 2)
def _aba(r: random.Random) -> tuple[str, list[str]]:
    acct = rs(r, DIG, 12)
    return f"Direct deposit: routing 021000021, checking account number {acct}.", [acct]


# ---------------------------------------------------------------- AI / dev tools
@fam("openai-project-key-jupyter", "https://platform.openai.com/docs/api-reference/authentication")
def _oai(r: random.Random) -> tuple[str, list[str]]:
    t = "sk-proj-" + rs(r, B64URL, 156)
    return (
        "In [3]: import os; os.environ\nOut[3]: environ({'HOME': '/home/jovyan', "
        f"'OPENAI_API_KEY': '{t}', 'SHELL': '/bin/bash'}})",
        [t],
    )


@fam("anthropic-api-key", "https://docs.anthropic.com/en/api/getting-started")
def _ant(r: random.Random) -> tuple[str, list[str]]:
    t = "sk-ant-api03-" + rs(r, B64URL, 93) + "AA"
    return f"curl https://api.anthropic.com/v1/messages -H 'x-api-key: {t}'", [t]


@fam("huggingface-token", "https://huggingface.co/docs/hub/security-tokens")
def _hf(r: random.Random) -> tuple[str, list[str]]:
    t = "hf_" + rs(r, UP + LO, 34)
    return f"huggingface-cli login --token {t}", [t]


@fam("databricks-pat", "https://docs.databricks.com/en/dev-tools/auth/pat.html")
def _dbx(r: random.Random) -> tuple[str, list[str]]:
    t = "dapi" + r.randbytes(16).hex()
    return f"[DEFAULT]\nhost = https://adb-123.4.azuredatabricks.net\ntoken = {t}", [t]


@fam("pulumi-access-token", "https://www.pulumi.com/docs/pulumi-cloud/access-management/access-tokens/")
def _pul(r: random.Random) -> tuple[str, list[str]]:
    t = "pul-" + r.randbytes(20).hex()
    return f"PULUMI_ACCESS_TOKEN: {t}", [t]


@fam("vault-service-token", "https://developer.hashicorp.com/vault/docs/concepts/tokens#token-prefixes")
def _vault(r: random.Random) -> tuple[str, list[str]]:
    t = "hvs." + rs(r, B64URL, 90)
    return f"$ vault login\nToken (will be hidden):\nSuccess! token: {t}", [t]


@fam("doppler-service-token", "https://docs.doppler.com/docs/service-tokens")
def _dop(r: random.Random) -> tuple[str, list[str]]:
    t = "dp.st.prd." + rs(r, ALNUM, 40)
    return f"doppler run --token {t} -- ./server", [t]


@fam(
    "grafana-service-account-token",
    "https://grafana.com/docs/grafana/latest/administration/service-accounts/",
)
def _graf(r: random.Random) -> tuple[str, list[str]]:
    t = "glsa_" + rs(r, ALNUM, 32) + "_" + r.randbytes(4).hex()
    return f"GF_TOKEN={t}", [t]


@fam("newrelic-user-key", "https://docs.newrelic.com/docs/apis/intro-apis/new-relic-api-keys/")
def _nr(r: random.Random) -> tuple[str, list[str]]:
    t = "NRAK-" + rs(r, UP + DIG, 27)
    return f"newrelic:\n  apiKey: {t}", [t]


@fam("datadog-api-app-keys", "https://docs.datadoghq.com/account_management/api-app-keys/")
def _dd(r: random.Random) -> tuple[str, list[str]]:
    a, b = r.randbytes(16).hex(), r.randbytes(20).hex()
    return f"DD_API_KEY={a}\nDD_APP_KEY={b}", [a, b]


@fam("sentry-dsn", "https://docs.sentry.io/concepts/key-terms/dsn-explainer/")
def _sentry(r: random.Random) -> tuple[str, list[str]]:
    k = r.randbytes(16).hex()
    return f'sentry_sdk.init(dsn="https://{k}@o{rs(r, DIG, 6)}.ingest.sentry.io/{rs(r, DIG, 7)}")', [k]


@fam(
    "cloudflare-api-token-bearer",
    "https://developers.cloudflare.com/fundamentals/api/get-started/create-token/",
)
def _cf(r: random.Random) -> tuple[str, list[str]]:
    t = rs(r, B64URL, 40)
    return f'curl "https://api.cloudflare.com/client/v4/user/tokens/verify" -H "Authorization: Bearer {t}"', [
        t
    ]


# ---------------------------------------------------------------- auth artefacts
@fam("jwt-authorization-bearer", "https://datatracker.ietf.org/doc/html/rfc7519")
def _jwt(r: random.Random) -> tuple[str, list[str]]:
    t = jwt(r, {"sub": rs(r, DIG, 8), "role": "admin", "exp": 1790000000 + r.randint(0, 9999)})
    return f"> GET /api/v2/orders HTTP/1.1\n> Authorization: Bearer {t}\n< HTTP/1.1 200 OK", [t]


@fam("session-cookie-header", "https://developer.mozilla.org/en-US/docs/Web/HTTP/Headers/Cookie")
def _cookie(r: random.Random) -> tuple[str, list[str]]:
    s, c = rs(r, LO + DIG, 32), rs(r, ALNUM, 64)
    return f"Cookie: sessionid={s}; csrftoken={c}; theme=dark", [s, c]


@fam("set-cookie-express-session", "https://github.com/expressjs/session#cookie")
def _setcookie(r: random.Random) -> tuple[str, list[str]]:
    v = "s%3A" + rs(r, B64URL, 32) + "." + rs(r, B64, 43)
    return f"Set-Cookie: connect.sid={v}; Path=/; HttpOnly; SameSite=Lax", [v]


@fam("oauth-token-response", "https://datatracker.ietf.org/doc/html/rfc6749#section-5.1")
def _oauth(r: random.Random) -> tuple[str, list[str]]:
    a, b = rs(r, B64URL, 48), rs(r, B64URL, 64)
    return (
        f'{{"access_token":"{a}","token_type":"Bearer","expires_in":3600,"refresh_token":"{b}"}}',
        [a, b],
    )


@fam("access-token-query-param", "https://datatracker.ietf.org/doc/html/rfc6750#section-2.3")
def _qtok(r: random.Random) -> tuple[str, list[str]]:
    t = rs(r, ALNUM, 40)
    return f"GET https://graph.example.com/v1/me/photos?access_token={t}&limit=25", [t]


@fam("totp-otpauth-uri", "https://github.com/google/google-authenticator/wiki/Key-Uri-Format")
def _totp(r: random.Random) -> tuple[str, list[str]]:
    s = rs(r, B32, 32)
    return f"otpauth://totp/Acme:alice@acme.io?secret={s}&issuer=Acme", [s]


@fam("curl-basic-auth-flag", "https://curl.se/docs/manpage.html#-u")
def _curlu(r: random.Random) -> tuple[str, list[str]]:
    p = pw(r)
    return f"curl --user admin:{p} -X DELETE https://es.internal:9200/logs-2026.01", [p]


@fam("basic-auth-header-base64", "https://datatracker.ietf.org/doc/html/rfc7617")
def _basic(r: random.Random) -> tuple[str, list[str]]:
    b = base64.b64encode(f"svc-report:{pw(r)}".encode()).decode()
    return f"Authorization: Basic {b}", [b]


@fam("x-api-key-header-generic", "https://swagger.io/docs/specification/v3_0/authentication/api-keys/")
def _xkey(r: random.Random) -> tuple[str, list[str]]:
    k = rs(r, ALNUM, 32)
    return f"requests.get(url, headers={{'X-API-Key': '{k}'}})", [k]


# ---------------------------------------------------------------- key material
@fam("openssh-private-key", "https://man.openbsd.org/ssh-keygen")
def _ossh(r: random.Random) -> tuple[str, list[str]]:
    body = ["b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW"] + pem_body(r, 4, 70)
    return "-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(
        body
    ) + "\n-----END OPENSSH PRIVATE KEY-----", body[1:]


@fam("rsa-private-key-pem", "https://datatracker.ietf.org/doc/html/rfc8017#appendix-A.1.2")
def _rsa(r: random.Random) -> tuple[str, list[str]]:
    body = ["MIIEowIBAAKCAQEA" + rs(r, B64, 48)] + pem_body(r, 4)
    return "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(body) + "\n-----END RSA PRIVATE KEY-----", body


@fam("ec-private-key-pem", "https://datatracker.ietf.org/doc/html/rfc5915")
def _ec(r: random.Random) -> tuple[str, list[str]]:
    body = ["MHcCAQEEI" + rs(r, B64, 55), rs(r, B64, 64), rs(r, B64, 36) + "=="]
    return "-----BEGIN EC PRIVATE KEY-----\n" + "\n".join(body) + "\n-----END EC PRIVATE KEY-----", body


@fam("pgp-private-key-block", "https://datatracker.ietf.org/doc/html/rfc4880#section-6.2")
def _pgp(r: random.Random) -> tuple[str, list[str]]:
    body = ["lQdGBF" + rs(r, B64, 58)] + pem_body(r, 3)
    text = "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n" + "\n".join(body) + "\n=" + rs(r, B64, 4)
    return text + "\n-----END PGP PRIVATE KEY BLOCK-----", body


@fam("pkcs12-export-passout", "https://docs.openssl.org/3.0/man1/openssl-pkcs12/")
def _p12(r: random.Random) -> tuple[str, list[str]]:
    p = pw(r)
    return f"openssl pkcs12 -export -in cert.pem -inkey key.pem -out bundle.p12 -passout pass:{p}", [p]


@fam("java-keytool-storepass", "https://docs.oracle.com/en/java/javase/21/docs/specs/man/keytool.html")
def _kt(r: random.Random) -> tuple[str, list[str]]:
    a, b = pw(r), pw(r)
    return (
        f"keytool -importkeystore -srckeystore bundle.p12 -srcstorepass {a} -destkeystore app.jks -deststorepass {b}",
        [a, b],
    )


@fam("age-secret-key", "https://age-encryption.org/v1")
def _age(r: random.Random) -> tuple[str, list[str]]:
    k = "AGE-SECRET-KEY-1" + rs(r, BECH32, 58).upper()
    return f"# created: 2026-01-05T09:00:00Z\n# public key: age1{rs(r, BECH32, 58)}\n{k}", [k]


@fam("wireguard-private-key", "https://www.wireguard.com/quickstart/")
def _wg(r: random.Random) -> tuple[str, list[str]]:
    k = base64.b64encode(r.randbytes(32)).decode()
    pub = base64.b64encode(r.randbytes(32)).decode()
    return f"[Interface]\nPrivateKey = {k}\nAddress = 10.8.0.2/24\n\n[Peer]\nPublicKey = {pub}", [k]


@fam("ethereum-private-key-hardhat", "https://hardhat.org/hardhat-runner/docs/config#json-rpc-based-networks")
def _eth(r: random.Random) -> tuple[str, list[str]]:
    k = r.randbytes(32).hex()
    return f'sepolia: {{ url: "https://rpc.sepolia.org", accounts: ["0x{k}"] }}', [k]


@fam("bitcoin-wif-key", "https://en.bitcoin.it/wiki/Wallet_import_format")
def _wif(r: random.Random) -> tuple[str, list[str]]:
    k = b58check(b"\x80" + r.randbytes(32) + b"\x01")
    return f'importprivkey {k} "cold-wallet" false', [k]


@fam("bip39-mnemonic", "https://github.com/bitcoin/bips/blob/master/bip-0039.mediawiki")
def _bip(r: random.Random) -> tuple[str, list[str]]:
    words = "abandon ability absorb acoustic brisk canyon deputy elegant fossil glimpse harvest island jungle ladder meadow orbit pepper quantum rescue salmon tenant uncover velvet wisdom".split()
    ph = " ".join(r.sample(words, 12))
    return f"Recovery phrase (keep offline!): {ph}", [ph]


# ---------------------------------------------------------------- connection strings / URLs
@fam("postgres-url", "https://www.postgresql.org/docs/current/libpq-connect.html#LIBPQ-CONNSTRING-URIS")
def _pg(r: random.Random) -> tuple[str, list[str]]:
    p = rs(r, ALNUM, 20)
    return f"DATABASE_URL=postgresql://app_rw:{p}@db.internal:5432/orders?sslmode=require", [p]


@fam(
    "postgres-url-percent-encoded",
    "https://www.postgresql.org/docs/current/libpq-connect.html#LIBPQ-CONNSTRING-URIS",
)
def _pge(r: random.Random) -> tuple[str, list[str]]:
    p = rs(r, ALNUM, 8) + "%40" + rs(r, ALNUM, 6) + "%23" + rs(r, DIG, 3)
    return f"sqlalchemy.url = postgresql+psycopg://etl:{p}@10.0.3.7/warehouse", [p]


@fam("mongodb-srv-url", "https://www.mongodb.com/docs/manual/reference/connection-string/")
def _mongo(r: random.Random) -> tuple[str, list[str]]:
    p = rs(r, ALNUM, 16)
    return f'MONGO_URI="mongodb+srv://reporting:{p}@cluster0.ab12c.mongodb.net/?retryWrites=true"', [p]


@fam("redis-url-password-only", "https://www.iana.org/assignments/uri-schemes/prov/redis")
def _redis(r: random.Random) -> tuple[str, list[str]]:
    p = rs(r, ALNUM, 24)
    return f"CELERY_BROKER_URL=redis://:{p}@cache.internal:6379/0", [p]


@fam("amqp-url", "https://www.rabbitmq.com/docs/uri-spec")
def _amqp(r: random.Random) -> tuple[str, list[str]]:
    p = pw(r).replace("@", "!").replace("#", "!").replace("?", "!").replace("%", "!").replace("&", "!")
    return f"amqp://orders:{p}@rabbit.internal:5672/%2Fprod", [p]


@fam("http-proxy-userinfo", "https://curl.se/docs/manpage.html#-x")
def _proxy(r: random.Random) -> tuple[str, list[str]]:
    p = rs(r, ALNUM, 14)
    return f"export https_proxy=http://jdoe:{p}@proxy.corp.example:3128", [p]


@fam(
    "ado-net-connection-string",
    "https://learn.microsoft.com/en-us/dotnet/api/system.data.sqlclient.sqlconnection.connectionstring",
)
def _adonet(r: random.Random) -> tuple[str, list[str]]:
    p = pw(r).replace(";", "!")
    return (
        '{\n  "ConnectionStrings": {\n    "Default": "Server=tcp:sql-prod.database.windows.net,1433;'
        f'Initial Catalog=shop;User ID=shopadmin;Password={p};Encrypt=True;"\n  }}\n}}',
        [p],
    )


@fam("jdbc-url-password-param", "https://jdbc.postgresql.org/documentation/use/#connection-parameters")
def _jdbc(r: random.Random) -> tuple[str, list[str]]:
    p = rs(r, ALNUM, 16)
    return f"spring.datasource.url=jdbc:mysql://db:3306/app?user=app&password={p}&useSSL=true", [p]


# ---------------------------------------------------------------- config files
@fam("wp-config-php", "https://developer.wordpress.org/advanced-administration/wordpress/wp-config/")
def _wp(r: random.Random) -> tuple[str, list[str]]:
    p = pw(r)
    k = rs(r, ALNUM + "!@#%^&*()-_[]{}<>~+=,.;:/?|", 64).replace("'", "x")
    return f"define( 'DB_USER', 'wp' );\ndefine( 'DB_PASSWORD', '{p}' );\ndefine( 'AUTH_KEY', '{k}' );", [
        p,
        k,
    ]


@fam("spring-application-yaml", "https://docs.spring.io/spring-boot/reference/data/sql.html")
def _spring(r: random.Random) -> tuple[str, list[str]]:
    p = pw(r)
    return (
        f"spring:\n  datasource:\n    url: jdbc:postgresql://db/app\n    username: app\n    password: {p}",
        [p],
    )


@fam("django-secret-key-settings", "https://docs.djangoproject.com/en/5.0/ref/settings/#secret-key")
def _dj(r: random.Random) -> tuple[str, list[str]]:
    k = "django-insecure-" + rs(r, LO + DIG + "!@#$%^&*(-_=+)", 50)
    return f"SECRET_KEY = '{k}'\nDEBUG = False", [k]


@fam("laravel-app-key-env", "https://laravel.com/docs/11.x/encryption#configuration")
def _lara(r: random.Random) -> tuple[str, list[str]]:
    k = base64.b64encode(r.randbytes(32)).decode()
    p = pw(r)
    return f"APP_ENV=production\nAPP_KEY=base64:{k}\nDB_PASSWORD={p}", [k, p]


@fam("rails-secret-key-base", "https://guides.rubyonrails.org/security.html#custom-credentials")
def _rails(r: random.Random) -> tuple[str, list[str]]:
    k = r.randbytes(64).hex()
    return f"production:\n  secret_key_base: {k}", [k]


@fam("my-cnf-client-section", "https://dev.mysql.com/doc/refman/8.0/en/option-files.html")
def _mycnf(r: random.Random) -> tuple[str, list[str]]:
    p = pw(r)
    return f'[client]\nuser=backup\npassword="{p}"\nhost=127.0.0.1', [p]


@fam("pgpass-file", "https://www.postgresql.org/docs/current/libpq-pgpass.html")
def _pgpass(r: random.Random) -> tuple[str, list[str]]:
    a, b = rs(r, ALNUM, 18), rs(r, ALNUM, 18)
    return f"db1.internal:5432:*:replicator:{a}\n*:*:analytics:reader:{b}", [a, b]


@fam("netrc-file", "https://everything.curl.dev/usingcurl/netrc.html")
def _netrc(r: random.Random) -> tuple[str, list[str]]:
    a, b = rs(r, ALNUM, 20), pw(r)
    return (
        f"machine api.heroku.com\n  login ops@acme.io\n  password {a}\nmachine ftp.acme.io login up password {b}",
        [a, b],
    )


@fam("toml-config-password", "https://toml.io/en/v1.0.0")
def _toml(r: random.Random) -> tuple[str, list[str]]:
    p = pw(r)
    return f'[database]\nhost = "db.internal"\nuser = "svc"\npassword = "{p}"', [p]


@fam("dotenv-generic-secret", "https://github.com/motdotla/dotenv#usage")
def _dotenv(r: random.Random) -> tuple[str, list[str]]:
    a, b = rs(r, ALNUM, 40), pw(r)
    return f"PORT=8080\nJWT_SIGNING_SECRET={a}\nSMTP_PASS={b}", [a, b]


@fam("wpa-supplicant-psk", "https://w1.fi/cgit/hostap/plain/wpa_supplicant/wpa_supplicant.conf")
def _wpa(r: random.Random) -> tuple[str, list[str]]:
    p = pw(r)
    return f'network={{\n    ssid="Office-5G"\n    psk="{p}"\n    key_mgmt=WPA-PSK\n}}', [p]


@fam(
    "ansible-vars-become-password",
    "https://docs.ansible.com/ansible/latest/inventory_guide/intro_inventory.html",
)
def _ans(r: random.Random) -> tuple[str, list[str]]:
    a, b = pw(r), pw(r)
    return (
        f'all:\n  vars:\n    ansible_user: deploy\n    ansible_become_password: {a}\n    db_root_password: "{b}"',
        [a, b],
    )


@fam("k8s-secret-yaml-base64", "https://kubernetes.io/docs/concepts/configuration/secret/")
def _k8s(r: random.Random) -> tuple[str, list[str]]:
    p = base64.b64encode(pw(r).encode()).decode()
    k = base64.b64encode(rs(r, ALNUM, 32).encode()).decode()
    text = (
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: api-creds\ntype: Opaque\ndata:\n"
        f"  username: YWRtaW4=\n  password: {p}\n  api-key: {k}"
    )
    return text, [p, k]


@fam(
    "kubectl-create-secret-literal",
    "https://kubernetes.io/docs/tasks/configmap-secret/managing-secret-using-kubectl/",
)
def _kubectl(r: random.Random) -> tuple[str, list[str]]:
    p = pw(r).replace("$", "_").replace("&", "_")
    return (
        f"kubectl create secret generic db-pass --from-literal=username=app --from-literal=password='{p}'",
        [p],
    )


@fam("kubectl-get-secret-output", "https://kubernetes.io/docs/reference/kubectl/generated/kubectl_get/")
def _kget(r: random.Random) -> tuple[str, list[str]]:
    tok = base64.b64encode(rs(r, ALNUM, 40).encode()).decode()
    return f'$ kubectl get secret registry-token -o jsonpath=\'{{.data}}\'\n{{"token":"{tok}"}}', [tok]


@fam("helm-set-password", "https://helm.sh/docs/helm/helm_install/")
def _helm(r: random.Random) -> tuple[str, list[str]]:
    a = rs(r, ALNUM, 16)
    return (
        f"helm upgrade --install pg bitnami/postgresql --set auth.postgresPassword={a} --set auth.database=app",
        [a],
    )


@fam(
    "docker-compose-environment",
    "https://docs.docker.com/compose/how-tos/environment-variables/set-environment-variables/",
)
def _compose(r: random.Random) -> tuple[str, list[str]]:
    a, b = pw(r), rs(r, ALNUM, 24)
    return (
        "services:\n  db:\n    image: mysql:8.4\n    environment:\n"
        f'      MYSQL_ROOT_PASSWORD: "{a}"\n      MINIO_SECRET_KEY: {b}',
        [a, b],
    )


@fam("terraform-state-attributes", "https://developer.hashicorp.com/terraform/language/state/sensitive-data")
def _tfstate(r: random.Random) -> tuple[str, list[str]]:
    p = rs(r, ALNUM + "!#$%&*()-_=+[]{}<>:?", 16)
    return (
        '"resources": [{"type": "aws_db_instance", "name": "main", "instances": [{"attributes": '
        f'{{"username": "dbadmin", "password": "{p}", "engine": "postgres"}}}}]}}]',
        [p],
    )


@fam(
    "terraform-tfvars",
    "https://developer.hashicorp.com/terraform/language/values/variables#variable-definitions-tfvars-files",
)
def _tfvars(r: random.Random) -> tuple[str, list[str]]:
    a = rs(r, ALNUM, 32)
    return f'region        = "eu-central-1"\nadmin_password = "{a}"', [a]


# ---------------------------------------------------------------- SQL / shell
@fam("sql-create-user-password", "https://www.postgresql.org/docs/current/sql-createuser.html")
def _sqlcu(r: random.Random) -> tuple[str, list[str]]:
    p = pw(r).replace("'", "x")
    return f"CREATE USER reporting WITH LOGIN PASSWORD '{p}' VALID UNTIL '2027-01-01';", [p]


@fam("sql-alter-role-password", "https://www.postgresql.org/docs/current/sql-alterrole.html")
def _sqlar(r: random.Random) -> tuple[str, list[str]]:
    p = rs(r, ALNUM, 18)
    return f"psql -c \"ALTER ROLE app_rw WITH PASSWORD '{p}';\"", [p]


@fam("mysql-identified-by", "https://dev.mysql.com/doc/refman/8.0/en/create-user.html")
def _myid(r: random.Random) -> tuple[str, list[str]]:
    p = pw(r).replace("'", "x")
    return f"CREATE USER 'grafana'@'%' IDENTIFIED BY '{p}';\nGRANT SELECT ON metrics.* TO 'grafana'@'%';", [p]


@fam(
    "mssql-login-password", "https://learn.microsoft.com/en-us/sql/t-sql/statements/create-login-transact-sql"
)
def _mssql(r: random.Random) -> tuple[str, list[str]]:
    p = pw(r).replace("'", "x")
    return f"CREATE LOGIN etl_loader WITH PASSWORD = N'{p}', CHECK_POLICY = OFF;", [p]


@fam(
    "mysql-cli-inline-password",
    "https://dev.mysql.com/doc/refman/8.0/en/connection-options.html#option_general_password",
)
def _mycli(r: random.Random) -> tuple[str, list[str]]:
    p = rs(r, ALNUM, 14)
    return f"mysqldump -h db -u root -p{p} --all-databases > all.sql", [p]


@fam(
    "windows-net-use",
    "https://learn.microsoft.com/en-us/previous-versions/windows/it-pro/windows-server-2012-r2-and-2012/gg651155(v=ws.11)",
)
def _netuse(r: random.Random) -> tuple[str, list[str]]:
    p = pw(r)
    return f"C:\\> net use Z: \\\\fs01\\finance {p} /user:CORP\\svc_backup /persistent:yes", [p]


@fam("sshpass-inline", "https://linux.die.net/man/1/sshpass")
def _sshpass(r: random.Random) -> tuple[str, list[str]]:
    p = pw(r)
    return f"sshpass -p '{p}' ssh -o StrictHostKeyChecking=no root@10.0.0.12 uptime", [p]


@fam("ldapsearch-bind-password", "https://linux.die.net/man/1/ldapsearch")
def _ldap(r: random.Random) -> tuple[str, list[str]]:
    p = pw(r)
    return f'ldapsearch -x -H ldaps://dc1.corp -D "cn=svc,dc=corp" -w "{p}" "(uid=jdoe)"', [p]


@fam(
    "powershell-securestring-plain",
    "https://learn.microsoft.com/en-us/powershell/module/microsoft.powershell.security/convertto-securestring",
)
def _ps(r: random.Random) -> tuple[str, list[str]]:
    p = pw(r).replace("'", "x")
    return (
        f"$pw = ConvertTo-SecureString '{p}' -AsPlainText -Force\n$cred = New-Object PSCredential('CORP\\\\adm', $pw)",
        [p],
    )


# ---------------------------------------------------------------- source code
@fam("python-hardcoded-db-password", "https://www.psycopg.org/docs/module.html#psycopg2.connect")
def _py(r: random.Random) -> tuple[str, list[str]]:
    p = pw(r)
    return f'conn = psycopg2.connect(host="db", dbname="sales", user="etl", password="{p}")', [p]


@fam(
    "javascript-hardcoded-secret",
    "https://github.com/auth0/node-jsonwebtoken#jwtsignpayload-secretorprivatekey-options-callback",
)
def _js(r: random.Random) -> tuple[str, list[str]]:
    s = rs(r, ALNUM, 36)
    return f"const token = jwt.sign({{ uid }}, '{s}', {{ expiresIn: '1h' }});", [s]


@fam("go-hardcoded-const", "https://go.dev/ref/spec#Constant_declarations")
def _go(r: random.Random) -> tuple[str, list[str]]:
    p = rs(r, ALNUM, 22)
    return f'const (\n\tdbUser     = "svc"\n\tdbPassword = "{p}"\n)', [p]


@fam(
    "java-drivermanager-password",
    "https://docs.oracle.com/en/java/javase/21/docs/api/java.sql/java/sql/DriverManager.html",
)
def _java(r: random.Random) -> tuple[str, list[str]]:
    p = pw(r)
    return f'Connection c = DriverManager.getConnection("jdbc:oracle:thin:@db:1521/ORCL", "scott", "{p}");', [
        p
    ]


@fam(
    "rust-reqwest-bearer",
    "https://docs.rs/reqwest/latest/reqwest/struct.RequestBuilder.html#method.bearer_auth",
)
def _rust(r: random.Random) -> tuple[str, list[str]]:
    t = rs(r, ALNUM, 48)
    return f'let resp = client.get(url).bearer_auth("{t}").send().await?;', [t]


@fam("csharp-network-credential", "https://learn.microsoft.com/en-us/dotnet/api/system.net.networkcredential")
def _cs(r: random.Random) -> tuple[str, list[str]]:
    p = pw(r)
    return f'smtp.Credentials = new NetworkCredential("noreply@acme.io", "{p}");', [p]


@fam("php-pdo-password", "https://www.php.net/manual/en/pdo.construct.php")
def _php(r: random.Random) -> tuple[str, list[str]]:
    p = pw(r)
    return f"$pdo = new PDO('mysql:host=localhost;dbname=shop', 'shop', '{p}');", [p]


@fam(
    "ruby-hardcoded-smtp",
    "https://guides.rubyonrails.org/action_mailer_basics.html#action-mailer-configuration",
)
def _rb(r: random.Random) -> tuple[str, list[str]]:
    p = rs(r, ALNUM, 20)
    return f"config.action_mailer.smtp_settings = {{ user_name: 'apikey', password: '{p}' }}", [p]


# ---------------------------------------------------------------- prose, many languages
PROSE: dict[str, list[str]] = {
    "ko": ["서버 관리자 비밀번호는 {} 입니다. 외부에 공유하지 마세요.", "VPN 접속 암호: {}"],
    "ja": ["本番DBのパスワードは「{}」です。", "管理画面のログインパスワード：{} (来週変更予定)"],
    "zh-hans": ["数据库密码是 {}，请勿外传。", "测试环境的管理员口令：{}"],
    "zh-hant": ["伺服器的密碼是 {}，請妥善保管。", "資料庫管理員密碼：{}"],
    "de": [
        "Das Passwort für den Admin-Zugang lautet {} – bitte nicht weitergeben.",
        "Kennwort fürs WLAN: {}",
    ],
    "es": ["La contraseña del servidor de staging es {} hasta el lunes.", "Clave de acceso al panel: {}"],
    "fr": ["Le mot de passe du compte de service est {} pour l'instant.", "Mot de passe Wi-Fi invités : {}"],
    "pt": ["A senha do banco de produção é {}, não compartilhe.", "Senha provisória do e-mail: {}"],
    "it": ["La password dell'utente root è {} fino a domani.", "Parola d'ordine del router: {}"],
    "ru": ["Пароль от сервера: {} (сменить после релиза).", "Логин admin, пароль {}"],
    "nl": ["Het wachtwoord voor de beheeromgeving is {}.", "Wachtwoord van de gedeelde mailbox: {}"],
    "pl": ["Hasło do panelu administracyjnego to {}.", "Tymczasowe hasło do VPN: {}"],
    "tr": ["Veritabanı şifresi {} olarak ayarlandı.", "Yönetici parolası: {}"],
    "vi": ["Mật khẩu của máy chủ là {} nhé.", "Mật khẩu wifi văn phòng: {}"],
    "ar": ["كلمة المرور للخادم هي {} يرجى عدم مشاركتها.", "كلمة السر الخاصة بلوحة التحكم: {}"],
    "hi": ["सर्वर का पासवर्ड {} है, इसे किसी के साथ साझा न करें।", "डेटाबेस का पासवर्ड: {}"],
}


def _prose(lang: str) -> Gen:
    def gen(r: random.Random) -> tuple[str, list[str]]:
        p = pw(r)
        return r.choice(PROSE[lang]).format(p), [p]

    return gen


for _lang in PROSE:
    fam(f"prose-password-{_lang}", "https://en.wiktionary.org/wiki/password#Translations")(_prose(_lang))


@fam("prose-passphrase-words-en", "https://xkcd.com/936/ (diceware-style passphrases)")
def _pp(r: random.Random) -> tuple[str, list[str]]:
    ws = ["correct", "staple", "marble", "violin", "sunset", "garden", "rocket", "pillow", "canyon", "ember"]
    ph = "-".join(r.sample(ws, 4))
    return f"fyi the backup passphrase is: {ph} (the one on the sticky note)", [ph]


@fam(
    "prose-token-in-chat-en",
    "https://docs.github.com/en/authentication/keeping-your-account-and-data-secure/token-expiration-and-revocation",
)
def _chat(r: random.Random) -> tuple[str, list[str]]:
    t = rs(r, ALNUM, 28)
    return f"hey can you try with my API token {t}? mine has admin scope", [t]


# ---------------------------------------------------------------- near-misses
NearGen = Callable[[random.Random], str]
NEAR: list[tuple[str, str, int, NearGen]] = []


def near(name: str, source: str, count: int = 3) -> Callable[[NearGen], NearGen]:
    def deco(fn: NearGen) -> NearGen:
        NEAR.append((name, source, count, fn))
        return fn

    return deco


@near("git-sha", "https://git-scm.com/docs/git-log", 4)
def _n_sha(r: random.Random) -> str:
    return f"Fixed in commit {r.randbytes(20).hex()} (cherry-picked to release/2.4 as {r.randbytes(4).hex()[:7]})."


@near("uuid", "https://datatracker.ietf.org/doc/html/rfc9562", 4)
def _n_uuid(r: random.Random) -> str:
    h = r.randbytes(16).hex()
    return f"memory_id={h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]} was promoted to org scope."


@near("lockfile-integrity", "https://docs.npmjs.com/cli/v10/configuring-npm/package-lock-json")
def _n_integ(r: random.Random) -> str:
    return f'"resolved": "https://registry.npmjs.org/left-pad/-/left-pad-1.3.0.tgz",\n"integrity": "sha512-{base64.b64encode(r.randbytes(64)).decode()}"'


@near(
    "container-digest",
    "https://docs.docker.com/reference/cli/docker/image/pull/#pull-an-image-by-digest-immutable-identifier",
)
def _n_digest(r: random.Random) -> str:
    return f"image: ghcr.io/acme/api@sha256:{r.randbytes(32).hex()}"


@near("ssh-public-key", "https://man.openbsd.org/sshd.8#AUTHORIZED_KEYS_FILE_FORMAT")
def _n_sshpub(r: random.Random) -> str:
    return f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{rs(r, B64, 43)} alice@laptop"


@near("certificate-public-pem", "https://datatracker.ietf.org/doc/html/rfc7468#section-5.1")
def _n_cert(r: random.Random) -> str:
    return (
        "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIE"
        + rs(r, B64, 44)
        + "\n"
        + rs(r, B64, 64)
        + "\n-----END CERTIFICATE-----"
    )


@near("documented-placeholder", "https://docs.aws.amazon.com/IAM/latest/UserGuide/security-creds.html", 4)
def _n_ph(r: random.Random) -> str:
    return r.choice(
        [
            "Set AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE as shown in the AWS docs.",
            "password: <your-password-here>",
            "export GITHUB_TOKEN=${{ secrets.GITHUB_TOKEN }}",
            "DB_PASSWORD=${DB_PASSWORD}  # injected from Vault at deploy time",
            "api_key: YOUR_API_KEY",
            'token = os.environ["SLACK_BOT_TOKEN"]',
        ]
    )


@near("version-string", "https://semver.org/")
def _n_ver(r: random.Random) -> str:
    return f"Upgraded loregate from 1.{r.randint(0, 20)}.{r.randint(0, 9)} to 2.{r.randint(0, 9)}.0-rc.{r.randint(1, 5)}+build.{rs(r, DIG, 6)}"


@near("base64-harmless-text", "https://datatracker.ietf.org/doc/html/rfc4648")
def _n_b64(r: random.Random) -> str:
    msg = r.choice(["hello world from the build", "the quick brown fox jumps", "release notes for march"])
    return f"The fixture payload is {base64.b64encode(msg.encode()).decode()} (plain text, base64)."


@near("long-identifier", "https://peps.python.org/pep-0008/#naming-conventions")
def _n_ident(r: random.Random) -> str:
    return r.choice(
        [
            "AbstractSingletonProxyFactoryBeanConfigurationRegistryPostProcessor",
            "test_promotion_rejects_duplicate_supersede_requests_across_projects",
            "get_password_reset_token_expiry_seconds_from_settings",
            "TokenRefreshSchedulerBackoffPolicyIntervalMilliseconds",
        ]
    )


@near("secret-words-no-value", "https://owasp.org/www-project-top-ten/", 4)
def _n_words(r: random.Random) -> str:
    return r.choice(
        [
            "Rotate the password and the API token every 90 days; never paste either into chat.",
            "Das Passwort muss mindestens zwölf Zeichen lang sein.",
            "パスワードは定期的に変更してください。",
            "비밀번호를 잊으셨나요? 재설정 링크를 보내드립니다.",
            "La contraseña debe contener al menos un número.",
            "The secret key is stored in Vault at the usual path; ask ops for access.",
            "密码长度至少为八位。",
        ]
    )


@near("public-url-no-userinfo", "https://datatracker.ietf.org/doc/html/rfc3986")
def _n_url(r: random.Random) -> str:
    return r.choice(
        [
            "See https://github.com/acme/loregate/pull/1234#discussion_r987654321 for context.",
            "Docs: https://docs.python.org/3/library/secrets.html#secrets.token_urlsafe",
            "Download from https://example.com/downloads/tool-2.3.1-linux-amd64.tar.gz?mirror=eu",
            "postgresql://db.internal:5432/orders (credentials via PGPASSFILE)",
        ]
    )


@near("isbn", "https://www.isbn-international.org/content/what-isbn")
def _n_isbn(r: random.Random) -> str:
    return r.choice(["ISBN 978-0-13-468599-1", "ISBN-13: 9781491950357", "ISBN 0-306-40615-2"])


@near("invalid-luhn-digits", "https://en.wikipedia.org/wiki/Luhn_algorithm")
def _n_badcard(r: random.Random) -> str:
    while True:
        num = "4" + rs(r, DIG, 15)
        if not luhn_ok(num):
            break
    return f"Order reference {' '.join(num[i : i + 4] for i in range(0, 16, 4))} shipped."


@near("invalid-iban", "https://www.iso13616.org/")
def _n_badiban(r: random.Random) -> str:
    while True:
        ib = "DE" + rs(r, DIG, 20)
        if not iban_ok(ib):
            break
    return f"Tracking code {ib} (not a bank account)."


@near("css-colour", "https://developer.mozilla.org/en-US/docs/Web/CSS/hex-color", 4)
def _n_css(r: random.Random) -> str:
    return f".btn-primary {{ color: #{r.randbytes(3).hex()}; background: #{r.randbytes(4).hex()}; }}"


@near("request-id", "https://docs.aws.amazon.com/AmazonS3/latest/API/RESTCommonResponseHeaders.html")
def _n_reqid(r: random.Random) -> str:
    return f"x-amz-request-id: {rs(r, UP + DIG, 16)}\nx-request-id: req_{rs(r, LO + DIG, 24)}"


@near("timestamp-and-numbers", "https://datatracker.ietf.org/doc/html/rfc3339")
def _n_ts(r: random.Random) -> str:
    return f"2026-0{r.randint(1, 9)}-1{r.randint(0, 9)}T08:{r.randint(10, 59)}:00Z latency_p99=412ms rows=1834211 bytes=99218734"


@near("public-key-wireguard-peer", "https://www.wireguard.com/quickstart/")
def _n_wgpub(r: random.Random) -> str:
    return f"[Peer]\nPublicKey = {base64.b64encode(r.randbytes(32)).decode()}\nAllowedIPs = 10.8.0.0/24"


@near("hash-in-changelog", "https://docs.python.org/3/library/hashlib.html", 4)
def _n_hash(r: random.Random) -> str:
    return f"sha256sum dist/app.whl\n{r.randbytes(32).hex()}  dist/app.whl"


@near("kubernetes-configmap", "https://kubernetes.io/docs/concepts/configuration/configmap/")
def _n_cm(r: random.Random) -> str:
    level = r.choice(["info", "debug", "warning"])
    ttl = r.choice([900, 1800, 3600, 7200])
    return (
        f"apiVersion: v1\nkind: ConfigMap\ndata:\n  LOG_LEVEL: {level}\n  FEATURE_FLAGS: search,export\n"
        f'  TOKEN_TTL_SECONDS: "{ttl}"\n  PASSWORD_MIN_LENGTH: "12"'
    )


@near("publishable-key-doc", "https://docs.stripe.com/keys#obtain-api-keys", 2)
def _n_pk(r: random.Random) -> str:
    return r.choice(
        [
            "Use the test key sk_test_... from the dashboard; never the live one.",
            "Replace xoxb-your-token with your bot token.",
        ]
    )


# ---------------------------------------------------------------- assemble
def halves(names: list[str]) -> dict[str, str]:
    order = sorted(set(names))
    random.Random(SPLIT_SEED).shuffle(order)
    cut = math.ceil(len(order) / 2)
    return {n: ("tune" if i < cut else "heldout") for i, n in enumerate(order)}


def build() -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    sec_half = halves([f[0] for f in FAMILIES])
    secrets: list[dict[str, object]] = []
    for name, source, count, fn in FAMILIES:
        r = random.Random(f"q4:{name}")
        for i in range(count):
            text, pieces = fn(r)
            secrets.append(
                {
                    "id": f"q4-s-{name}-{i + 1}",
                    "family": name,
                    "source": source,
                    "text": text,
                    "secrets": pieces,
                    "half": sec_half[name],
                }
            )
    near_half = halves([n[0] for n in NEAR])
    nears: list[dict[str, object]] = []
    for name, source, count, nfn in NEAR:
        r = random.Random(f"q4n:{name}")
        seen: set[str] = set()
        i = 0
        tries = 0
        while i < count and tries < 50:
            tries += 1
            text = nfn(r)
            if text in seen:
                continue
            seen.add(text)
            i += 1
            nears.append(
                {
                    "id": f"q4-n-{name}-{i}",
                    "family": name,
                    "source": source,
                    "text": text,
                    "half": near_half[name],
                }
            )
    return secrets, nears


def dump(rows: list[dict[str, object]], path: Path) -> None:
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")


def main() -> None:
    secrets, nears = build()
    dump(secrets, HERE / "secrets.jsonl")
    dump(nears, HERE / "near_misses.jsonl")
    print(f"{len(secrets)} secret records, {len(nears)} near-misses")


if __name__ == "__main__":
    main()
