"""Write tests/data/redaction_fresh/corpus.jsonl: a second, fresh redaction evaluation corpus.

    python tests/data/redaction_fresh/make_corpus.py

Written from vendors' documented token formats (prefixes, lengths, alphabets) and from the secret-bearing
shapes of issue 22, without reading loregate's redaction rules or its first corpus
(tests/data/redaction_eval). Token bodies are random draws of the documented alphabet and length from a
seeded generator, so nothing here is a live credential and the file is the same on every run.

One JSON object a line:

- `{"id", "family", "kind": "secret", "text", "secrets": [...]}`: caught when none of `secrets` (the secret
  value, or each fragment of a split one) survives redaction of `text`;
- `{"id", "family", "kind": "near_miss", "text", "keep": [...]}`: kept when every `keep` string (the thing
  that looks like a secret but is not) survives.

A family is one vendor format or one generic shape; the tune/held-out split is by family (see
`split_of`), so no held-out shape is seen while tuning.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import string
from collections.abc import Callable
from pathlib import Path

__all__ = ["build", "split_of"]

HERE = Path(__file__).resolve().parent
OUT = HERE / "corpus.jsonl"

_R = random.Random(20261127)
ALNUM = string.ascii_letters + string.digits
UPPER_ALNUM = string.ascii_uppercase + string.digits
LOWER_ALNUM = string.ascii_lowercase + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"
B32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"


def draw(alphabet: str, n: int) -> str:
    return "".join(_R.choice(alphabet) for _ in range(n))


def b64_block(n_bytes: int) -> str:
    return base64.b64encode(bytes(_R.randrange(256) for _ in range(n_bytes))).decode()


def luhn_complete(prefix: str, length: int) -> str:
    digits = prefix + "".join(_R.choice(string.digits) for _ in range(length - len(prefix) - 1))
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 0:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return digits + str((10 - total % 10) % 10)


def luhn_ok(number: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(number)):
        d = int(ch)
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def groups(number: str, sizes: list[int], sep: str) -> str:
    out, i = [], 0
    for s in sizes:
        out.append(number[i : i + s])
        i += s
    return sep.join(out)


def pem(label: str, n_bytes: int) -> tuple[str, list[str]]:
    body = b64_block(n_bytes)
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    text = f"-----BEGIN {label}-----\n" + "\n".join(lines) + f"\n-----END {label}-----"
    # Caught when no full line of the key's body survives.
    return text, [ln for ln in lines if len(ln) >= 16]


def fullwidth(s: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in s)


Sample = tuple[str, list[str]]


def secrets() -> dict[str, list[Sample]]:
    f: dict[str, list[Sample]] = {}

    t = [f"ghp_{draw(ALNUM, 36)}" for _ in range(3)]
    f["github_classic_pat"] = [
        (f"export GITHUB_TOKEN={t[0]}", [t[0]]),
        (f"git clone https://{t[1]}@github.com/acme/infra.git failed with 403", [t[1]]),
        (f"curl -H 'Authorization: token {t[2]}' https://api.github.com/user", [t[2]]),
    ]
    t = [f"{p}_{draw(ALNUM, 36)}" for p in ("gho", "ghu", "ghs", "ghr")]
    f["github_app_tokens"] = [
        (f"oauth access token from the device flow: {t[0]}", [t[0]]),
        (f"The app installation returned {t[2]} (expires in 1 hour)", [t[2]]),
        (f"refresh_token={t[3]}&grant_type=refresh_token", [t[3]]),
    ]
    t = [f"github_pat_{draw(ALNUM, 22)}_{draw(ALNUM, 59)}" for _ in range(2)]
    f["github_fine_grained_pat"] = [
        (f"GH_TOKEN: {t[0]}", [t[0]]),
        (f"I pasted the fine-grained token {t[1]} into the runner settings", [t[1]]),
    ]
    t = [f"glpat-{draw(B64URL, 20)}", f"glpat-{draw(B64URL, 20)}", f"glptt-{draw(HEX, 40)}"]
    f["gitlab_tokens"] = [
        (f'private_token = "{t[0]}"', [t[0]]),
        (f"curl --header 'PRIVATE-TOKEN: {t[1]}' https://gitlab.example.com/api/v4/projects", [t[1]]),
        (
            f"curl -X POST -F token={t[2]} -F ref=main https://gitlab.example.com/api/v4/projects/9/trigger/pipeline",
            [t[2]],
        ),
    ]
    ids = [f"AKIA{draw(B32, 16)}" for _ in range(2)] + [f"ASIA{draw(B32, 16)}"]
    sks = [draw(B64, 40) for _ in range(3)]
    sess = b64_block(180)
    f["aws_keys"] = [
        (
            f"[default]\naws_access_key_id = {ids[0]}\naws_secret_access_key = {sks[0]}\nregion = eu-west-1",
            [ids[0], sks[0]],
        ),
        (f"export AWS_ACCESS_KEY_ID={ids[1]}\nexport AWS_SECRET_ACCESS_KEY={sks[1]}", [ids[1], sks[1]]),
        (f"temporary creds: key {ids[2]} secret {sks[2]} session token {sess}", [ids[2], sks[2], sess[:60]]),
    ]
    t = [f"AIza{draw(B64URL, 35)}" for _ in range(3)]
    f["google_api_key"] = [
        (f"https://maps.googleapis.com/maps/api/geocode/json?address=Seoul&key={t[0]}", [t[0]]),
        (f"FIREBASE_API_KEY={t[1]}", [t[1]]),
        (f'  "apiKey": "{t[2]}",\n  "authDomain": "demo-app.firebaseapp.com",', [t[2]]),
    ]
    kid = draw(HEX, 40)
    pk, pk_lines = pem("PRIVATE KEY", 600)
    kid2 = draw(HEX, 40)
    sa_json = json.dumps(
        {
            "type": "service_account",
            "project_id": "demo-project-4821",
            "private_key_id": kid,
            "private_key": pk + "\n",
            "client_email": "deployer@demo-project-4821.iam.gserviceaccount.com",
            "client_id": "104857392847561029384",
        },
        indent=2,
    )
    f["gcp_service_account_json"] = [
        (sa_json, [kid] + pk_lines),
        (
            f'{{"type": "service_account", "private_key_id": "{kid2}", '
            '"client_email": "ci@x.iam.gserviceaccount.com"}',
            [kid2],
        ),
    ]
    t = [f"GOCSPX-{draw(B64URL, 28)}" for _ in range(2)]
    cs = draw(B64URL, 24)
    f["oauth_client_secret_json"] = [
        (
            json.dumps(
                {
                    "installed": {
                        "client_id": "3049-abc.apps.googleusercontent.com",
                        "client_secret": t[0],
                        "redirect_uris": ["http://localhost"],
                    }
                }
            ),
            [t[0]],
        ),
        (f"client_secret: {t[1]}", [t[1]]),
        (f'{{"web": {{"client_id": "app-91", "client_secret": "{cs}"}}}}', [cs]),
    ]
    t = [
        f"xoxb-{draw(string.digits, 12)}-{draw(string.digits, 13)}-{draw(ALNUM, 24)}",
        f"xoxp-{draw(string.digits, 12)}-{draw(string.digits, 12)}-{draw(string.digits, 13)}-{draw(HEX, 32)}",
        "https://hooks.slack.com/services/"
        f"T{draw(UPPER_ALNUM, 8)}/B{draw(UPPER_ALNUM, 10)}/{draw(ALNUM, 24)}",
    ]
    f["slack"] = [
        (f"SLACK_BOT_TOKEN={t[0]}", [t[0]]),
        (f"the user token {t[1]} still works after the reinstall", [t[1]]),
        (f"Alerts post to {t[2]}", [t[2].rsplit("/", 1)[1]]),
    ]
    t = [f"sk_live_{draw(ALNUM, 99)}", f"rk_live_{draw(ALNUM, 24)}", f"whsec_{draw(ALNUM, 32)}"]
    f["stripe"] = [
        (f"stripe.api_key = '{t[0]}'", [t[0]]),
        (f"restricted key for the reporting job: {t[1]}", [t[1]]),
        (f"STRIPE_WEBHOOK_SECRET={t[2]}", [t[2]]),
    ]
    t = [draw(HEX, 32) for _ in range(3)]
    sk = f"SK{draw(HEX, 32)}"
    f["twilio"] = [
        (f"TWILIO_ACCOUNT_SID=AC{draw(HEX, 32)}\nTWILIO_AUTH_TOKEN={t[0]}", [t[0]]),
        (f"Twilio auth token: {t[1]}", [t[1]]),
        (f"api key sid {sk} with secret {t[2]}", [sk, t[2]]),
    ]
    t = [f"SG.{draw(B64URL, 22)}.{draw(B64URL, 43)}" for _ in range(3)]
    f["sendgrid"] = [
        (f"SENDGRID_API_KEY='{t[0]}'", [t[0]]),
        (f"mail relay now authenticates with {t[1]}", [t[1]]),
        (f"Authorization: Bearer {t[2]}", [t[2]]),
    ]
    t = [f"key-{draw(HEX, 32)}" for _ in range(3)]
    f["mailgun"] = [
        (f"MAILGUN_API_KEY={t[0]}", [t[0]]),
        (f"curl -s --user 'api:{t[1]}' https://api.mailgun.net/v3/mg.example.org/messages", [t[1]]),
        (f"mailgun private key is {t[2]}", [t[2]]),
    ]
    t = [
        f"sk-proj-{draw(B64URL, 124)}T3BlbkFJ{draw(B64URL, 24)}",
        f"sk-{draw(ALNUM, 20)}T3BlbkFJ{draw(ALNUM, 20)}",
        f"sk-svcacct-{draw(B64URL, 74)}T3BlbkFJ{draw(B64URL, 74)}",
    ]
    f["openai"] = [
        (f"OPENAI_API_KEY={t[0]}", [t[0]]),
        (f'client = OpenAI(api_key="{t[1]}")', [t[1]]),
        (f"the service account key {t[2]} belongs to the eval project", [t[2]]),
    ]
    t = [f"sk-ant-api03-{draw(B64URL, 93)}AA", f"sk-ant-admin01-{draw(B64URL, 93)}AA"]
    f["anthropic"] = [
        (f"export ANTHROPIC_API_KEY={t[0]}", [t[0]]),
        (f"x-api-key: {t[1]}", [t[1]]),
    ]
    t = [f"hf_{draw(string.ascii_letters, 34)}" for _ in range(3)]
    f["huggingface"] = [
        (f"huggingface-cli login --token {t[0]}", [t[0]]),
        (f"HF_TOKEN={t[1]}", [t[1]]),
        (f"pipeline(model='acme/private', token='{t[2]}')", [t[2]]),
    ]
    t = [f"npm_{draw(ALNUM, 36)}" for _ in range(2)]
    f["npm"] = [
        (f"//registry.npmjs.org/:_authToken={t[0]}", [t[0]]),
        (f"NODE_AUTH_TOKEN is {t[1]} for the publish job", [t[1]]),
    ]
    t = [f"pypi-AgEIcHlwaS5vcmc{draw(B64URL, 150)}" for _ in range(2)]
    f["pypi"] = [
        (f"[pypi]\n  username = __token__\n  password = {t[0]}", [t[0]]),
        (f"twine upload -u __token__ -p {t[1]} dist/*", [t[1]]),
    ]
    t = [f"shpat_{draw(HEX, 32)}", f"shpss_{draw(HEX, 32)}", f"shppa_{draw(HEX, 32)}"]
    f["shopify"] = [
        (f"X-Shopify-Access-Token: {t[0]}", [t[0]]),
        (f"SHOPIFY_SHARED_SECRET={t[1]}", [t[1]]),
        (f"private app password {t[2]}", [t[2]]),
    ]
    t = [f"dop_v1_{draw(HEX, 64)}", f"doo_v1_{draw(HEX, 64)}", f"dor_v1_{draw(HEX, 64)}"]
    f["digitalocean"] = [
        (f"doctl auth init -t {t[0]}", [t[0]]),
        (f"oauth token {t[1]}", [t[1]]),
        (f"DIGITALOCEAN_REFRESH_TOKEN={t[2]}", [t[2]]),
    ]
    az_chars = ALNUM + "_~.-"
    t = [f"{draw(az_chars, 3)}{_R.choice(string.digits)}Q~{draw(az_chars, 34)}" for _ in range(3)]
    f["azure_client_secret"] = [
        (f"AZURE_CLIENT_SECRET={t[0]}", [t[0]]),
        (
            "az login --service-principal -u 5f2c7a10-1b2c-4d5e-8f90-a1b2c3d4e5f6 "
            f"-p {t[1]} --tenant contoso.onmicrosoft.com",
            [t[1]],
        ),
        (f"The app registration's client secret value is {t[2]} (expires 2027-01-01).", [t[2]]),
    ]
    t = [b64_block(64) for _ in range(2)]
    sig = b64_block(32).replace("+", "%2B").replace("/", "%2F").replace("=", "%3D")
    f["azure_storage"] = [
        (
            f"DefaultEndpointsProtocol=https;AccountName=acmelogs;AccountKey={t[0]};EndpointSuffix=core.windows.net",
            [t[0]],
        ),
        (f"storage account key1: {t[1]}", [t[1]]),
        (
            f"https://acmelogs.blob.core.windows.net/exports?sv=2022-11-02&ss=b&srt=co&sp=rl&se=2027-01-01T00:00:00Z&sig={sig}",
            [sig],
        ),
    ]
    ak = [f"LTAI{draw(ALNUM, 20)}" for _ in range(3)]
    sec = [draw(ALNUM, 30) for _ in range(3)]
    f["alibaba"] = [
        (f"AccessKeyId: {ak[0]}\nAccessKeySecret: {sec[0]}", [ak[0], sec[0]]),
        (f"aliyun configure set --access-key-id {ak[1]} --access-key-secret {sec[1]}", [ak[1], sec[1]]),
        (f'{{"AccessKeyId": "{ak[2]}", "AccessKeySecret": "{sec[2]}"}}', [ak[2], sec[2]]),
    ]
    t = [f"NRAK-{draw(UPPER_ALNUM, 27)}", f"NRII-{draw(B64URL, 32)}", f"{draw(HEX, 36)}NRAL"]
    f["new_relic"] = [
        (f"NEW_RELIC_API_KEY={t[0]}", [t[0]]),
        (f"insights insert key {t[1]}", [t[1]]),
        (f"license_key: {t[2]}", [t[2]]),
    ]
    t = [f"ATATT3xFfGF0{draw(B64URL, 171)}={draw(HEX.upper(), 8)}" for _ in range(2)]
    f["atlassian"] = [
        (f"JIRA_API_TOKEN={t[0]}", [t[0]]),
        (f"curl -u bot@acme.io:{t[1]} https://acme.atlassian.net/rest/api/3/myself", [t[1]]),
    ]
    t = [f"lin_api_{draw(ALNUM, 40)}", f"lin_api_{draw(ALNUM, 40)}", f"lin_oauth_{draw(HEX, 64)}"]
    f["linear"] = [
        (f"LINEAR_API_KEY={t[0]}", [t[0]]),
        (f"Authorization: {t[1]}", [t[1]]),
        (f"linear oauth token {t[2]}", [t[2]]),
    ]
    t = [
        f"ntn_{draw(string.digits, 11)}{draw(ALNUM, 35)}",
        f"ntn_{draw(string.digits, 11)}{draw(ALNUM, 35)}",
        f"secret_{draw(ALNUM, 43)}",
    ]
    f["notion"] = [
        (f"NOTION_TOKEN={t[0]}", [t[0]]),
        (f"const notion = new Client({{ auth: '{t[1]}' }})", [t[1]]),
        (f"legacy integration secret {t[2]}", [t[2]]),
    ]
    t = [f"dapi{draw(HEX, 32)}", f"dapi{draw(HEX, 32)}-2", f"dapi{draw(HEX, 32)}"]
    f["databricks"] = [
        (f"DATABRICKS_TOKEN={t[0]}", [t[0]]),
        (f"[DEFAULT]\nhost = https://adb-1234.5.azuredatabricks.net\ntoken = {t[1]}", [t[1]]),
        (f"connected with personal access token {t[2]}", [t[2]]),
    ]
    dsn_keys = [draw(HEX, 32) for _ in range(2)]
    t = [f"sntrys_eyJ{draw(B64URL, 120)}_{draw(B64URL, 43)}", f"sntryu_{draw(HEX, 64)}"]
    f["sentry"] = [
        (f"SENTRY_DSN=https://{dsn_keys[0]}@o482913.ingest.sentry.io/5512034", [dsn_keys[0]]),
        (f'sentry_sdk.init(dsn="https://{dsn_keys[1]}@o1.ingest.us.sentry.io/42")', [dsn_keys[1]]),
        (f"SENTRY_AUTH_TOKEN={t[0]}", [t[0]]),
        (f"user auth token {t[1]}", [t[1]]),
    ]
    t = [f"00{draw(B64URL, 40)}" for _ in range(3)]
    f["okta"] = [
        (f"Authorization: SSWS {t[0]}", [t[0]]),
        (f"OKTA_API_TOKEN={t[1]}", [t[1]]),
        (f"okta api token {t[2]} for the provisioning job", [t[2]]),
    ]
    t = [f"dp.st.prd.{draw(ALNUM, 43)}", f"dp.pt.{draw(ALNUM, 43)}", f"dp.sa.{draw(ALNUM, 43)}"]
    f["doppler"] = [
        (f"DOPPLER_TOKEN={t[0]}", [t[0]]),
        (f"doppler configure set token {t[1]}", [t[1]]),
        (f"service account token {t[2]}", [t[2]]),
    ]
    t = [f"AGE-SECRET-KEY-1{draw(BECH32, 58)}" for _ in range(2)]
    f["age_identity"] = [
        (f"# created: 2026-11-02T10:00:00Z\n# public key: age1{draw(BECH32.lower(), 58)}\n{t[0]}", [t[0]]),
        (f"SOPS_AGE_KEY={t[1]}", [t[1]]),
    ]
    rsa, rsa_l = pem("RSA PRIVATE KEY", 900)
    ec, ec_l = pem("EC PRIVATE KEY", 120)
    enc, enc_l = pem("ENCRYPTED PRIVATE KEY", 700)
    f["pem_private_key"] = [
        (f"server.key:\n{rsa}", rsa_l),
        (f"key: |\n{ec}", ec_l),
        (enc, enc_l),
    ]
    ssh, ssh_l = pem("OPENSSH PRIVATE KEY", 400)
    ssh2, ssh2_l = pem("OPENSSH PRIVATE KEY", 300)
    f["openssh_private_key"] = [
        (f"cat ~/.ssh/id_ed25519\n{ssh}", ssh_l),
        (f'DEPLOY_KEY="{ssh2}"', ssh2_l),
    ]
    body = b64_block(700)
    pgp_lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    pgp = (
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n"
        + "\n".join(pgp_lines)
        + "\n="
        + draw(B64, 4)
        + "\n-----END PGP PRIVATE KEY BLOCK-----"
    )
    body2 = b64_block(400)
    pgp2_lines = [body2[i : i + 64] for i in range(0, len(body2), 64)]
    pgp2 = (
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\nComment: signing subkey\n\n"
        + "\n".join(pgp2_lines)
        + "\n-----END PGP PRIVATE KEY BLOCK-----"
    )
    f["pgp_private_key"] = [
        (pgp, [ln for ln in pgp_lines if len(ln) >= 16]),
        (pgp2, [ln for ln in pgp2_lines if len(ln) >= 16]),
    ]

    def jwt() -> str:
        h = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("=")
        p = (
            base64.urlsafe_b64encode(
                json.dumps(
                    {"sub": draw(string.digits, 8), "role": "service_role", "exp": 1893456000}
                ).encode()
            )
            .decode()
            .rstrip("=")
        )
        return f"{h}.{p}.{draw(B64URL, 43)}"

    t = [jwt() for _ in range(3)]
    f["jwt"] = [
        (f"Authorization: Bearer {t[0]}", [t[0]]),
        (f"Set-Cookie: session={t[1]}; HttpOnly; Secure", [t[1]]),
        (f'{{"id_token": "{t[2]}", "expires_in": 3600}}', [t[2]]),
    ]
    t = [f"hvs.{draw(B64URL, 92)}", f"hvb.{draw(B64URL, 138)}", f"s.{draw(ALNUM, 24)}"]
    f["vault"] = [
        (f"VAULT_TOKEN={t[0]}", [t[0]]),
        (f"batch token {t[1]}", [t[1]]),
        (f"vault login {t[2]}", [t[2]]),
    ]
    t = [f"{draw(ALNUM, 14)}.atlasv1.{draw(ALNUM, 67)}" for _ in range(2)]
    f["terraform_cloud"] = [
        (f'credentials "app.terraform.io" {{\n  token = "{t[0]}"\n}}', [t[0]]),
        (f"TFE_TOKEN={t[1]}", [t[1]]),
    ]
    t = [f"PMAK-{draw(HEX, 24)}-{draw(HEX, 34)}" for _ in range(2)]
    f["postman"] = [
        (f"x-api-key: {t[0]}", [t[0]]),
        (f"POSTMAN_API_KEY={t[1]}", [t[1]]),
    ]
    t = [
        f"glsa_{draw(ALNUM, 32)}_{draw(HEX, 8)}",
        "glc_"
        + base64.b64encode(
            json.dumps({"o": "1", "n": "stack-1-key", "k": draw(ALNUM, 24), "m": {"r": "eu"}}).encode()
        ).decode(),
        f"glsa_{draw(ALNUM, 32)}_{draw(HEX, 8)}",
    ]
    f["grafana"] = [
        (f"GRAFANA_AUTH={t[0]}", [t[0]]),
        (f"cloud access policy token {t[1]}", [t[1]]),
        (f'provider "grafana" {{ auth = "{t[2]}" }}', [t[2]]),
    ]
    t = [
        f"M{draw(B64URL, 25)}.{draw(B64URL, 6)}.{draw(B64URL, 38)}",
        f"N{draw(B64URL, 25)}.{draw(B64URL, 6)}.{draw(B64URL, 38)}",
    ]
    wh = draw(B64URL, 68)
    f["discord"] = [
        (f"DISCORD_BOT_TOKEN={t[0]}", [t[0]]),
        (f"client.run('{t[1]}')", [t[1]]),
        (f"webhook: https://discord.com/api/webhooks/1187654321098765432/{wh}", [wh]),
    ]
    t = [f"{draw(string.digits, 10)}:AA{draw(B64URL, 33)}" for _ in range(2)]
    f["telegram"] = [
        (f"TELEGRAM_BOT_TOKEN={t[0]}", [t[0]]),
        (f"https://api.telegram.org/bot{t[1]}/sendMessage?chat_id=-100123", [t[1]]),
    ]
    t = [f"EAAA{draw(B64URL, 60)}", f"sq0csp-{draw(B64URL, 43)}"]
    f["square"] = [
        (f"SQUARE_ACCESS_TOKEN={t[0]}", [t[0]]),
        (f"application secret {t[1]}", [t[1]]),
    ]
    t = [f"sbp_{draw(HEX, 40)}"]
    srk = jwt()
    f["supabase"] = [
        (f"supabase login --token {t[0]}", [t[0]]),
        (f"SUPABASE_SERVICE_ROLE_KEY={srk}", [srk]),
    ]
    t = [f"pul-{draw(HEX, 40)}" for _ in range(2)]
    f["pulumi"] = [
        (f"PULUMI_ACCESS_TOKEN={t[0]}", [t[0]]),
        (f"pulumi login with {t[1]}", [t[1]]),
    ]
    t = [f"HRKU-AA{draw(B64URL, 58)}" for _ in range(2)]
    f["heroku"] = [
        (f"HEROKU_API_KEY={t[0]}", [t[0]]),
        (f"heroku authorizations:create returned {t[1]}", [t[1]]),
    ]
    t = [f"pscale_tkn_{draw(B64URL, 43)}", f"pscale_pw_{draw(B64URL, 43)}"]
    f["planetscale"] = [
        (f"PLANETSCALE_SERVICE_TOKEN={t[0]}", [t[0]]),
        (f"mysql -h aws.connect.psdb.cloud -u x7y8 -p{t[1]}", [t[1]]),
    ]
    t = [f"sl.B{draw(B64URL, 135)}"]
    f["dropbox"] = [(f"dbx = dropbox.Dropbox('{t[0]}')", [t[0]])]
    t = [f"figd_{draw(B64URL, 40)}", f"bkua_{draw(HEX, 40)}", f"CFPAT-{draw(B64URL, 43)}"]
    f["other_prefixed"] = [
        (f"FIGMA_TOKEN={t[0]}", [t[0]]),
        (f"buildkite-agent token {t[1]}", [t[1]]),
        (f"contentful management token {t[2]}", [t[2]]),
    ]
    up = [
        base64.b64encode(f"deploy:{draw(ALNUM, 16)}".encode()).decode(),
        base64.b64encode(f"admin:{draw(ALNUM, 14)}".encode()).decode(),
    ]
    f["basic_auth_header"] = [
        (f"Authorization: Basic {up[0]}", [up[0]]),
        (f'curl -H "Authorization: Basic {up[1]}" https://registry.internal/v2/', [up[1]]),
    ]
    t = [draw(ALNUM, 40), draw(B64URL, 48)]
    f["bearer_generic"] = [
        (f"Authorization: Bearer {t[0]}", [t[0]]),
        (f"headers = {{'Authorization': 'Bearer {t[1]}'}}", [t[1]]),
    ]
    pw = [draw(ALNUM, 14) + "!", draw(ALNUM, 18), draw(ALNUM, 12) + "#"]
    f["url_userinfo"] = [
        (f"DATABASE_URL=postgres://app:{pw[0]}@db.internal:5432/orders", [pw[0]]),
        (f"redis://:{pw[1]}@cache-01:6379/0", [pw[1]]),
        (f"broker_url = 'amqp://worker:{pw[2]}@mq.internal:5672//'", [pw[2]]),
    ]
    raw = [
        draw(ALNUM, 8) + "@" + draw(ALNUM, 5) + "/" + draw(ALNUM, 4),
        draw(ALNUM, 10) + "=+" + draw(ALNUM, 6),
        draw(ALNUM, 6) + ":" + draw(ALNUM, 8) + "%",
    ]

    def pct(s: str) -> str:
        return "".join(c if c.isalnum() else f"%{ord(c):02X}" for c in s)

    enc_pw = [pct(p) for p in raw]
    f["url_userinfo_encoded"] = [
        (f"postgresql://svc_reporting:{enc_pw[0]}@pg.prod:5432/analytics", [enc_pw[0]]),
        (
            f"MONGO_URI=mongodb+srv://etl:{enc_pw[1]}@cluster0.ab12c.mongodb.net/?retryWrites=true",
            [enc_pw[1]],
        ),
        (f"mysql://root:{enc_pw[2]}@127.0.0.1:3306/app", [enc_pw[2]]),
    ]
    visa = luhn_complete("4" + draw("0123456789", 1), 16)
    mc = luhn_complete("5" + _R.choice("12345"), 16)
    amex = luhn_complete("3" + _R.choice("47"), 15)
    disc = luhn_complete("6011", 16)
    cards = [
        groups(visa, [4, 4, 4, 4], " "),
        groups(mc, [4, 4, 4, 4], "-"),
        groups(amex, [4, 6, 5], " "),
        groups(disc, [4, 4, 4, 4], " - "),
    ]
    f["card_number"] = [
        (f"customer paid with card {cards[0]} exp 09/28", [cards[0]]),
        (f"card_number: {cards[1]}", [cards[1]]),
        (f"Amex {cards[2]} CVV 4821 declined", [cards[2]]),
        (f"Die Kreditkarte {cards[3]} wurde belastet.", [cards[3]]),
    ]
    pw = [draw(ALNUM, 12) + "$", draw(ALNUM, 16), draw(ALNUM, 11) + "!"]
    f["xml_password"] = [
        (f"<datasource>\n  <user>app</user>\n  <password>{pw[0]}</password>\n</datasource>", [pw[0]]),
        (f'<add key="ApiSecret" value="{pw[1]}" />', [pw[1]]),
        (f"<server><id>nexus</id><username>ci</username><password>{pw[2]}</password></server>", [pw[2]]),
    ]
    pw = [draw(ALNUM, 14), draw(ALNUM, 20), draw(ALNUM, 10) + "&" + draw(ALNUM, 3)]
    f["yaml_secret"] = [
        (f"database:\n  host: db\n  password: {pw[0]}\n  pool: 5", [pw[0]]),
        (f'smtp:\n  auth:\n    secret: "{pw[1]}"', [pw[1]]),
        (f"- name: DB_PASS\n  value: '{pw[2]}'", [pw[2]]),
    ]
    pw = [draw(ALNUM, 15), draw(ALNUM, 22)]
    f["toml_secret"] = [
        (f'[database]\nuser = "app"\npassword = "{pw[0]}"', [pw[0]]),
        (f"[api]\napi_key = '{pw[1]}'", [pw[1]]),
    ]
    pw = [draw(ALNUM, 13), draw(ALNUM, 12) + "%", draw(ALNUM, 18)]
    f["ini_password"] = [
        (f"[client]\nuser=backup\npassword={pw[0]}", [pw[0]]),
        (f"[mail]\nsmtp_pass = {pw[1]}", [pw[1]]),
        (f"spring.datasource.password={pw[2]}", [pw[2]]),
    ]
    pw = [draw(ALNUM, 16), draw(ALNUM, 24), draw(ALNUM, 12)]
    f["json_secret"] = [
        (f'{{"username": "svc", "password": "{pw[0]}"}}', [pw[0]]),
        (f'{{"auth": {{"apiSecret": "{pw[1]}"}}}}', [pw[1]]),
        (f'{{"db_pwd":"{pw[2]}","port":5432}}', [pw[2]]),
    ]
    pw = [draw(ALNUM, 18), draw(ALNUM, 32), draw(ALNUM, 14)]
    f["dotenv_secret"] = [
        (f"DB_PASSWORD={pw[0]}\nDB_HOST=localhost", [pw[0]]),
        (f'JWT_SECRET="{pw[1]}"', [pw[1]]),
        (f"export REDIS_PWD='{pw[2]}'", [pw[2]]),
    ]
    pw = [draw(ALNUM, 12), draw(ALNUM, 14), draw(ALNUM, 10), draw(ALNUM, 12)]
    f["cli_password_flag"] = [
        (f"mysql -u root -p{pw[0]} -h 10.0.3.7 shop", [pw[0]]),
        (f"./manage.py createsuperuser --password={pw[1]}", [pw[1]]),
        (f"sshpass -p '{pw[2]}' ssh deploy@10.0.0.8", [pw[2]]),
        (f"curl -u admin:{pw[3]} http://jenkins.local/api/json", [pw[3]]),
    ]
    pw = [draw(ALNUM, 16), draw(ALNUM, 20)]
    f["docker_login"] = [
        (f"docker login -u ci-bot -p {pw[0]} registry.acme.io", [pw[0]]),
        (f"docker login registry.gitlab.com --username deploy --password {pw[1]}", [pw[1]]),
    ]
    pw = [draw(ALNUM, 10) + "!", draw(ALNUM, 12)]
    f["prose_ko"] = [
        (f"운영 DB 비밀번호는 {pw[0]} 입니다", [pw[0]]),
        (f"API 토큰: {pw[1]}", [pw[1]]),
    ]
    pw = [draw(ALNUM, 11), draw(ALNUM, 13)]
    f["prose_ja"] = [
        (f"本番サーバーのパスワードは{pw[0]}です。", [pw[0]]),
        (f"管理者パスワード：{pw[1]}", [pw[1]]),
    ]
    pw = [draw(ALNUM, 12), draw(ALNUM, 10) + "#"]
    f["prose_zh"] = [
        (f"数据库密码是 {pw[0]}，请勿外传。", [pw[0]]),
        (f"访问令牌：{pw[1]}", [pw[1]]),
    ]
    pw = [draw(ALNUM, 12), draw(ALNUM, 14)]
    f["prose_de"] = [
        (f"Das Passwort für den Server lautet {pw[0]}.", [pw[0]]),
        (f"Kennwort: {pw[1]}", [pw[1]]),
    ]
    pw = [draw(ALNUM, 11), draw(ALNUM, 13)]
    f["prose_es"] = [
        (f"La contraseña del servidor es {pw[0]}, no la compartas.", [pw[0]]),
        (f"clave de acceso: {pw[1]}", [pw[1]]),
    ]
    pw = [draw(ALNUM, 12), draw(ALNUM, 10) + "!"]
    f["prose_fr"] = [
        (f"Le mot de passe de la base est {pw[0]}.", [pw[0]]),
        (f"mdp : {pw[1]}", [pw[1]]),
    ]
    f["passphrase_words"] = [
        ("The passphrase is: lantern orbit velvet quarry", ["lantern orbit velvet quarry", "velvet quarry"]),
        ("GPG passphrase = tundra-marble-sixty-echo", ["tundra-marble-sixty-echo", "sixty-echo"]),
    ]
    pw = [draw(ALNUM, 14), draw(ALNUM, 12)]
    f["password_prose_en"] = [
        (f"ssh root@10.0.0.5 (pw: {pw[0]})", [pw[0]]),
        (f"I reset the admin password to {pw[1]} so we can log in", [pw[1]]),
    ]
    t = [draw(ALNUM, 40), draw(HEX, 32)]
    f["entropy_near_keyword"] = [
        (f"cloudflare api token {t[0]}", [t[0]]),
        (f"DD_API_KEY={t[1]}", [t[1]]),
    ]
    t = [f"ghp_{draw(ALNUM, 36)}", f"sk_live_{draw(ALNUM, 30)}"]
    f["full_width"] = [
        (f"トークン {fullwidth(t[0])}", [fullwidth(t[0])]),
        (f"key: {fullwidth(t[1])}", [fullwidth(t[1])]),
    ]
    t = [f"ghp_{draw(ALNUM, 36)}", f"glpat-{draw(B64URL, 20)}"]
    f["reversed"] = [
        (f"reversed so the scanner misses it: {t[0][::-1]}", [t[0][::-1]]),
        (f"token (backwards) {t[1][::-1]}", [t[1][::-1]]),
    ]
    a = f"AKIA{draw(B32, 16)}"
    s = draw(B64, 40)
    g = f"ghp_{draw(ALNUM, 36)}"
    f["split_across_lines"] = [
        (f"aws key id: {a[:10]}\n{a[10:]}\nsecret: {s[:20]}\n{s[20:]}", [a[:10], a[10:], s[:20], s[20:]]),
        (f'token = "{g[:20]}" +\n        "{g[20:]}"', [g[:20], g[20:]]),
    ]
    return f


def near_misses() -> dict[str, list[Sample]]:
    f: dict[str, list[Sample]] = {}
    f["placeholder"] = [
        ("GITHUB_TOKEN=<your-github-token>", ["<your-github-token>"]),
        ("api_key: YOUR_API_KEY_HERE", ["YOUR_API_KEY_HERE"]),
        ("password: ********", ["********"]),
        ("Set OPENAI_API_KEY=sk-... before running the examples.", ["OPENAI_API_KEY"]),
        ("token: xxxxxxxxxxxxxxxxxxxx", ["token: xxxxxxxxxxxxxxxxxxxx"]),
        ("stripe key looks like sk_live_<redacted>", ["sk_live_<redacted>"]),
    ]
    f["variable_reference"] = [
        ("password: ${DB_PASSWORD}", ["${DB_PASSWORD}"]),
        ("env:\n  NPM_TOKEN: ${{ secrets.NPM_TOKEN }}", ["${{ secrets.NPM_TOKEN }}"]),
        ('token = os.environ["GITHUB_TOKEN"]', ['os.environ["GITHUB_TOKEN"]']),
        ("const key = process.env.STRIPE_SECRET_KEY;", ["process.env.STRIPE_SECRET_KEY"]),
        ('psql "host=db user=app password=$PGPASSWORD"', ["$PGPASSWORD"]),
        (
            "valueFrom:\n  secretKeyRef:\n    name: db-credentials\n    key: password",
            ["db-credentials", "key: password"],
        ),
    ]
    integ = base64.b64encode(hashlib.sha512(b"left-pad-1.3.0").digest()).decode()
    h1 = hashlib.sha256(b"requests-2.32.3").hexdigest()
    h2 = hashlib.sha256(b"serde-1.0.210").hexdigest()
    h3 = base64.b64encode(hashlib.sha256(b"golang.org/x/net v0.30.0").digest()).decode()
    h4 = hashlib.sha256(b"numpy-2.1.0").hexdigest()
    f["lockfile_hash"] = [
        (f'"integrity": "sha512-{integ}"', [integ]),
        (f'{{file = "requests-2.32.3-py3-none-any.whl", hash = "sha256:{h1}"}}', [h1]),
        (f'name = "serde"\nversion = "1.0.210"\nchecksum = "{h2}"', [h2]),
        (f"golang.org/x/net v0.30.0 h1:{h3}", [h3]),
        (f"numpy==2.1.0 \\\n    --hash=sha256:{h4}", [h4]),
    ]
    f["uuid"] = [
        ("request_id=7c9e6679-7425-40de-944b-e07fc1f90ae7", ["7c9e6679-7425-40de-944b-e07fc1f90ae7"]),
        ("tenant_id: 72f988bf-86f1-41af-91ab-2d7cd011db47", ["72f988bf-86f1-41af-91ab-2d7cd011db47"]),
        ("uid: 0b1f6c2e-5a3d-4e8f-9c7b-2d4a6e8f0a1c", ["0b1f6c2e-5a3d-4e8f-9c7b-2d4a6e8f0a1c"]),
        (
            "trace 550e8400-e29b-41d4-a716-446655440000 failed at step 3",
            ["550e8400-e29b-41d4-a716-446655440000"],
        ),
    ]
    shas = [hashlib.sha1(f"commit-{i}".encode()).hexdigest() for i in range(4)]
    dig = hashlib.sha256(b"image").hexdigest()
    f["commit_sha_digest"] = [
        (f"Fixed in {shas[0]} (merged to main).", [shas[0]]),
        (f"git checkout {shas[1]} && make test", [shas[1]]),
        (f"revert {shas[2][:12]}: flaky retry", [shas[2][:12]]),
        (f"image: ghcr.io/acme/api@sha256:{dig}", [dig]),
        (f"Merge pull request #812 from acme/fix\n\ncommit {shas[3]}", [shas[3]]),
    ]
    f["docs_example_credential"] = [
        ("The AWS docs use AKIAIOSFODNN7EXAMPLE as the example access key id.", ["AKIAIOSFODNN7EXAMPLE"]),
        (
            "example secret: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY (from the CLI guide)",
            ["wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"],
        ),
        ("Use the test card 4242 4242 4242 4242 in Stripe's test mode.", ["4242 4242 4242 4242"]),
    ]
    f["password_prose_no_value"] = [
        (
            "Reset your password from the login page if it expired.",
            ["Reset your password from the login page"],
        ),
        ("The token expired; the client requests a new one automatically.", ["The token expired"]),
        ("비밀번호를 잊으셨나요? 재설정 링크를 보내드립니다.", ["비밀번호를 잊으셨나요"]),
        ("パスワードは12文字以上にしてください。", ["パスワードは12文字以上にしてください"]),
        ("密码错误，请重试。", ["密码错误，请重试"]),
        ("Das Passwort muss mindestens 12 Zeichen lang sein.", ["mindestens 12 Zeichen"]),
        ("La contraseña debe tener al menos 8 caracteres.", ["al menos 8 caracteres"]),
        ("Mot de passe oublié ? Cliquez sur le lien.", ["Cliquez sur le lien"]),
    ]
    f["keyword_not_secret"] = [
        ("primary key: (org_id, task_id)", ["(org_id, task_id)"]),
        ("max_tokens: 4096", ["4096"]),
        ("password_min_length = 12", ["password_min_length = 12"]),
        ("The secret to fast ingest is batching into COPY.", ["batching into COPY"]),
        ("sort key: created_at_desc_index", ["created_at_desc_index"]),
        ("token budget exceeded by 312 tokens in the context block", ["312 tokens"]),
        (
            "def verify_password(plain: str, hashed: str) -> bool:",
            ["verify_password(plain: str, hashed: str)"],
        ),
        ("password = getpass.getpass('DB password: ')", ["getpass.getpass"]),
    ]
    pub = "AAAAC3NzaC1lZDI1NTE5AAAA" + draw(B64, 44)
    cert_body = b64_block(300)
    cert = (
        "-----BEGIN CERTIFICATE-----\n"
        + "\n".join(cert_body[i : i + 64] for i in range(0, len(cert_body), 64))
        + "\n-----END CERTIFICATE-----"
    )
    pkb = b64_block(270)
    pubpem = (
        "-----BEGIN PUBLIC KEY-----\n"
        + "\n".join(pkb[i : i + 64] for i in range(0, len(pkb), 64))
        + "\n-----END PUBLIC KEY-----"
    )
    agepub = "age1" + draw(BECH32.lower(), 58)
    f["public_key_material"] = [
        (f"ssh-ed25519 {pub} ops@bastion", [pub]),
        (cert, [cert_body[:64]]),
        (pubpem, [pkb[:64]]),
        (f"recipient: {agepub}", [agepub]),
    ]
    f["url_without_password"] = [
        ("git clone git@github.com:acme/infra.git", ["git@github.com:acme/infra.git"]),
        ("DATABASE_URL=postgres://localhost:5432/orders", ["postgres://localhost:5432/orders"]),
        ("https://ci@build.acme.io/job/42/console", ["https://ci@build.acme.io/job/42/console"]),
        ("https://docs.example.com/api?page=2&per_page=50", ["page=2&per_page=50"]),
    ]
    bad = "4111" + draw(string.digits, 11)
    bad = bad + str((int(bad[-1]) + 1) % 10)
    while luhn_ok(bad):
        bad = bad[:-1] + str((int(bad[-1]) + 1) % 10)
    f["numbers_not_cards"] = [
        (f"order {groups(bad, [4, 4, 4, 4], ' ')} shipped", [groups(bad, [4, 4, 4, 4], " ")]),
        ("ISBN 978-3-16-148410-0", ["978-3-16-148410-0"]),
        ("call +1 415-555-0100 for the on-call", ["415-555-0100"]),
        ("created_at_ms=1764201600000", ["1764201600000"]),
    ]
    pk_live = f"pk_live_{draw(ALNUM, 24)}"
    f["public_identifiers"] = [
        ("arn:aws:iam::123456789012:role/deploy", ["arn:aws:iam::123456789012:role/deploy"]),
        (f"publishable key {pk_live}", [pk_live]),
        ("client_id: 3049-9k2lq.apps.googleusercontent.com", ["3049-9k2lq.apps.googleusercontent.com"]),
        ("pod api-7d9f8b6c5d-x2k4p restarted", ["api-7d9f8b6c5d-x2k4p"]),
        ("bundle main.3f9a2c1b.js is 412 KB", ["main.3f9a2c1b.js"]),
    ]
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(40))).decode()
    md5 = hashlib.md5(b"release.tar.gz").hexdigest()
    sha = hashlib.sha256(b"release.tar.gz").hexdigest()
    f["checksums_and_data"] = [
        (f"SHA256 (loregate-0.4.0.tar.gz) = {sha}", [sha]),
        (f"md5sum: {md5}  release.tar.gz", [md5]),
        (f'<img src="data:image/png;base64,{png}">', [png]),
    ]
    return f


def split_of(rows: list[dict[str, object]]) -> dict[str, str]:
    """Family -> `tune` or `held_out`: within each kind, families ordered by a hash of their name go to the
    two halves in turn. Deterministic and blind to the rules."""
    out: dict[str, str] = {}
    for kind in ("secret", "near_miss"):
        fams = sorted(
            {str(r["family"]) for r in rows if r["kind"] == kind},
            key=lambda n: hashlib.sha256(n.encode()).hexdigest(),
        )
        for i, fam in enumerate(fams):
            out[fam] = "tune" if i % 2 == 0 else "held_out"
    return out


def build() -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    makers: list[tuple[str, Callable[[], dict[str, list[Sample]]]]] = [
        ("secret", secrets),
        ("near_miss", near_misses),
    ]
    for kind, make in makers:
        for family, samples in make().items():
            for i, (text, vals) in enumerate(samples):
                assert all(v and v in text for v in vals), (family, i)
                key = "secrets" if kind == "secret" else "keep"
                rows.append(
                    {"id": f"{family}-{i + 1}", "family": family, "kind": kind, "text": text, key: vals}
                )
    return rows


def main() -> None:
    rows = build()
    with OUT.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    n_s = sum(r["kind"] == "secret" for r in rows)
    fams = {r["family"] for r in rows if r["kind"] == "secret"}
    print(f"{n_s} secrets in {len(fams)} families, {len(rows) - n_s} near-misses -> {OUT}")


if __name__ == "__main__":
    main()
