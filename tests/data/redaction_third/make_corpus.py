# ruff: noqa: E501
"""Write the third redaction corpus (secrets.jsonl, near_misses.jsonl) from a fixed seed.

Every value is synthetic: random characters shaped like the vendor's documented format (prefix, length,
charset, checksum where one is documented). Nothing here is a live credential. Run from the repository root:
``python tests/data/redaction_third/make_corpus.py``; the output is byte-for-byte reproducible.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import string
import urllib.parse
from pathlib import Path

HERE = Path(__file__).resolve().parent
R = random.Random(20261127)  # values
SPLIT_SEED = 22  # family -> half

UP = string.ascii_uppercase
LO = string.ascii_lowercase
DI = string.digits
HEX = "0123456789abcdef"
AN = UP + LO + DI
B64 = AN + "+/"
URLS = AN + "-_"
B32 = UP + "234567"
B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
BECH = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"

GITLEAKS = "https://github.com/gitleaks/gitleaks/blob/master/config/gitleaks.toml"

secrets: list[dict[str, object]] = []
near: list[dict[str, object]] = []


def r(cs: str, n: int) -> str:
    return "".join(R.choice(cs) for _ in range(n))


def pw(n: int = 14) -> str:
    """A human-chosen-looking password: letters, digits and one or two symbols."""
    core = r(AN, n - 2)
    return core[:4] + R.choice("!#%&*@$") + core[4:] + R.choice(DI)


def b64u(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def jwt(payload: dict[str, object], alg: str = "HS256") -> str:
    head = b64u(json.dumps({"alg": alg, "typ": "JWT"}, separators=(",", ":")).encode())
    body = b64u(json.dumps(payload, separators=(",", ":")).encode())
    sig = b64u(R.randbytes(32 if alg == "HS256" else 256))
    return f"{head}.{body}.{sig}"


def luhn(prefix: str, length: int) -> str:
    digits = prefix + r(DI, length - len(prefix) - 1)
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 0:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return digits + str((10 - total % 10) % 10)


def luhn_ok(num: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(num)):
        d = int(ch)
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def pem_lines(nbytes: int) -> list[str]:
    body = base64.b64encode(R.randbytes(nbytes)).decode()
    return [body[i : i + 64] for i in range(0, len(body), 64)]


def uuid4() -> str:
    h = r(HEX, 32)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{R.choice('89ab')}{h[17:20]}-{h[20:]}"


def S(family: str, source: str, text: str, *pieces: str) -> None:
    n = sum(1 for s in secrets if s["family"] == family) + 1
    secrets.append(
        {"id": f"t3-{family}-{n}", "family": family, "source": source, "text": text, "secrets": list(pieces)}
    )


def N(family: str, source: str, text: str) -> None:
    n = sum(1 for s in near if s["family"] == family) + 1
    near.append({"id": f"t3nm-{family}-{n}", "family": family, "source": source, "text": text})


# ---------------------------------------------------------------- cloud providers
src = "https://docs.aws.amazon.com/IAM/latest/UserGuide/id_credentials_access-keys.html"
ak, sk = "AKIA" + r(B32, 16), r(B64, 40)
S(
    "aws-access-key",
    src,
    f"$ cat ~/.aws/credentials\n[default]\naws_access_key_id = {ak}\naws_secret_access_key = {sk}\nregion = eu-west-1\n",
    ak,
    sk,
)
ak, sk = "AKIA" + r(B32, 16), r(B64, 40)
S(
    "aws-access-key",
    src,
    f"The deploy job failed, I re-exported the keys by hand:\n```sh\nexport AWS_ACCESS_KEY_ID={ak}\nexport AWS_SECRET_ACCESS_KEY=\\\n  {sk[:20]}\\\n{sk[20:]}\n```",
    ak,
    sk[:20],
    sk[20:],
)
ak, sk, st = "ASIA" + r(B32, 16), r(B64, 40), "IQoJb3JpZ2luX2Vj" + r(B64, 300)
S(
    "aws-session-token",
    "https://docs.aws.amazon.com/STS/latest/APIReference/API_Credentials.html",
    json.dumps(
        {
            "Credentials": {
                "AccessKeyId": ak,
                "SecretAccessKey": sk,
                "SessionToken": st,
                "Expiration": "2026-11-27T13:02:11Z",
            }
        },
        indent=2,
    ),
    ak,
    sk,
    st,
)
sk = r(B64, 40)
S(
    "aws-secret-key-prose",
    src,
    f"aws configure asked me for the secret, I pasted {sk} and it worked; the key id is in 1Password.",
    sk,
)

src = "https://cloud.google.com/docs/authentication/api-keys"
k = "AIza" + r(URLS, 35)
S(
    "gcp-api-key",
    src,
    f"GET https://maps.googleapis.com/maps/api/geocode/json?address=Berlin&key={k} -> 200 OK (812 ms)",
    k,
)
k = "AIza" + r(URLS, 35)
S("gcp-api-key", src, f'<meta-data android:name="com.google.android.geo.API_KEY" android:value="{k}"/>', k)
kid, body = r(HEX, 40), pem_lines(600)
pem = "-----BEGIN PRIVATE KEY-----\\n" + "\\n".join(body) + "\\n-----END PRIVATE KEY-----\\n"
S(
    "gcp-service-account",
    "https://cloud.google.com/iam/docs/keys-create-delete",
    '{\n  "type": "service_account",\n  "project_id": "acme-build-4411",\n  "private_key_id": "'
    + kid
    + '",\n  "private_key": "'
    + pem
    + '",\n  "client_email": "ci-runner@acme-build-4411.iam.gserviceaccount.com",\n  "client_id": "108236476329412735501"\n}',
    kid,
    *body,
)
cs = "GOCSPX-" + r(URLS, 28)
S(
    "google-oauth-client-secret",
    "https://developers.google.com/identity/protocols/oauth2",
    f'{{"installed":{{"client_id":"4471-abc.apps.googleusercontent.com","client_secret":"{cs}","redirect_uris":["http://localhost"]}}}}',
    cs,
)
rt, at = "1//0g" + r(URLS, 98), "ya29." + r(URLS, 150)
S(
    "google-oauth-token",
    "https://developers.google.com/identity/protocols/oauth2",
    f"token.json after the consent flow:\nrefresh_token: {rt}\naccess_token: {at}\n",
    rt,
    at,
)

src = "https://learn.microsoft.com/en-us/entra/identity-platform/how-to-add-credentials"
c = r(AN, 3) + R.choice(DI) + "Q~" + r(AN + "~._-", 34)
S(
    "azure-client-secret",
    src,
    f"az login --service-principal -u 0f3c2a9e-1c55-4b7e-9d1a-7b3f0d2c8e11 -p {c} --tenant acme.onmicrosoft.com",
    c,
)
c = r(AN, 3) + R.choice(DI) + "Q~" + r(AN + "~._-", 34)
S(
    "azure-client-secret",
    src,
    f'"AzureAd": {{\n  "Instance": "https://login.microsoftonline.com/",\n  "ClientId": "{uuid4()}",\n  "ClientSecret": "{c}"\n}}',
    c,
)
k = base64.b64encode(R.randbytes(64)).decode()
S(
    "azure-storage-key",
    "https://learn.microsoft.com/en-us/azure/storage/common/storage-configure-connection-string",
    f"AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;AccountName=acmelogs;AccountKey={k};EndpointSuffix=core.windows.net",
    k,
)
sig = urllib.parse.quote(base64.b64encode(R.randbytes(32)).decode(), safe="")
S(
    "azure-sas-token",
    "https://learn.microsoft.com/en-us/azure/storage/common/storage-sas-overview",
    f"azcopy copy ./dump.tar 'https://acmelogs.blob.core.windows.net/backups/dump.tar?sv=2022-11-02&ss=b&srt=co&sp=rwdlac&se=2026-12-01T00:00:00Z&sig={sig}'",
    sig,
)
pat = r("abcdefghijklmnopqrstuvwxyz234567", 52)
S(
    "azure-devops-pat",
    "https://learn.microsoft.com/en-us/azure/devops/organizations/accounts/use-personal-access-tokens-to-authenticate",
    f"git clone https://build:{pat}@dev.azure.com/acme/platform/_git/api",
    pat,
)

k, s = "LTAI" + r(AN, 20), r(AN, 30)
S(
    "alibaba-access-key",
    "https://www.alibabacloud.com/help/en/ram/user-guide/create-an-accesskey-pair",
    f"[default]\ntype = access_key\naccess_key_id = {k}\naccess_key_secret = {s}\nregion_id = cn-hangzhou\n",
    k,
    s,
)
k = "YC" + r(URLS, 38)
S("yandex-cloud-key", GITLEAKS, f"yandex_static_key_secret: {k}", k)
t = "dop_v1_" + r(HEX, 64)
S(
    "digitalocean-token",
    "https://docs.digitalocean.com/reference/api/create-personal-access-token/",
    f"$ doctl auth init --access-token {t}\nValidating token... OK",
    t,
)
t = "doo_v1_" + r(HEX, 64)
S(
    "digitalocean-token",
    "https://docs.digitalocean.com/reference/api/create-personal-access-token/",
    f"oauth callback returned access_token={t}&token_type=bearer&expires_in=2592000",
    t,
)
t = "HRKU-AA" + r(URLS, 58)
S(
    "heroku-api-key",
    "https://devcenter.heroku.com/articles/authentication",
    f"machine api.heroku.com\n  login ops@acme.io\n  password {t}\n",
    t,
)
t = uuid4()
S(
    "heroku-api-key",
    "https://devcenter.heroku.com/articles/authentication",
    f"HEROKU_API_KEY={t} heroku apps:info -a acme-prod",
    t,
)
t = "fo1_" + r(URLS, 43)
S(
    "flyio-token",
    "https://fly.io/docs/security/tokens/",
    f"FLY_API_TOKEN: {t}  # set in GitHub secrets too",
    t,
)
t = "FlyV1 fm2_" + r(B64, 160)
S("flyio-token", "https://fly.io/docs/security/tokens/", f"flyctl deploy -t '{t}' --remote-only", t[6:])

# ---------------------------------------------------------------- source hosts / CI
src = "https://github.blog/2021-04-05-behind-githubs-new-authentication-token-formats/"
t = "ghp_" + r(AN, 36)
S(
    "github-pat-classic",
    src,
    f"remote: Invalid username or password.\n$ git remote set-url origin https://{t}@github.com/acme/api.git",
    t,
)
t = "ghp_" + r(AN, 36)
S("github-pat-classic", src, f"- name: checkout\n  uses: actions/checkout@v4\n  with:\n    token: {t}\n", t)
t = "ghp_" + r(AN, 36)
fw = "".join(chr(ord(c) + 0xFEE0) for c in t)
S("github-pat-fullwidth", src, f"チャットに貼られたトークン：{fw}（全角で入力されていた）", fw)
t = "gho_" + r(AN, 36)
S("github-oauth-token", src, f"gh auth status\n  ✓ Logged in to github.com as octo-dev (oauth_token: {t})", t)
t = "ghs_" + r(AN, 36)
S("github-app-token", src, f"DEBUG installation token minted: {t} expires 2026-11-27T12:44Z", t)
t = "ghu_" + r(AN, 36)
S("github-app-token", src, f"Authorization: token {t}", t)
t = "ghr_" + r(AN, 76)
S("github-refresh-token", src, f"refresh_token={t}&grant_type=refresh_token", t)
t = "github_pat_" + r(AN, 22) + "_" + r(AN, 59)
S(
    "github-fine-grained-pat",
    "https://docs.github.com/en/authentication/keeping-your-account-and-data-secure/managing-your-personal-access-tokens",
    f'[credential "https://github.com"]\n\thelper = store\n# ~/.git-credentials\nhttps://octo-dev:{t}@github.com',
    t,
)
t = "ghp_" + r(AN, 36)
S("github-pat-reversed", src, f"I stored it reversed so scanners miss it: TOKEN_REV={t[::-1]}", t[::-1])

src = "https://docs.gitlab.com/ee/security/tokens/"
t = "glpat-" + r(URLS, 20)
S("gitlab-pat", src, f'curl --header "PRIVATE-TOKEN: {t}" https://gitlab.acme.io/api/v4/projects', t)
t = "glpat-" + r(URLS, 27) + "." + r(LO + DI, 9)
S("gitlab-pat", src, f"GITLAB_TOKEN = '{t}'", t)
t = "glrt-" + r(URLS, 20)
S(
    "gitlab-runner-token",
    src,
    f'[[runners]]\n  name = "docker-1"\n  url = "https://gitlab.acme.io"\n  token = "{t}"\n  executor = "docker"',
    t,
)
t = "gldt-" + r(URLS, 20)
S("gitlab-deploy-token", src, f"docker login registry.gitlab.acme.io -u gitlab+deploy-token-7 -p {t}", t)
t = "glptt-" + r(HEX, 40)
S(
    "gitlab-trigger-token",
    src,
    f"curl -X POST -F token={t} -F ref=main https://gitlab.acme.io/api/v4/projects/12/trigger/pipeline",
    t,
)
t = "ATBB" + r(AN, 32)
S(
    "bitbucket-app-password",
    "https://support.atlassian.com/bitbucket-cloud/docs/app-passwords/",
    f"BITBUCKET_APP_PASSWORD={t}",
    t,
)
t = "ATATT3x" + r(URLS, 180) + "=" + r(HEX.upper(), 8)
S(
    "atlassian-api-token",
    "https://support.atlassian.com/atlassian-account/docs/manage-api-tokens-for-your-atlassian-account/",
    f"jira:\n  url: https://acme.atlassian.net\n  user: dev@acme.io\n  api_token: {t}\n",
    t,
)
t = "bkua_" + r(HEX, 40)
S(
    "buildkite-token",
    "https://buildkite.com/docs/apis/managing-api-tokens",
    f"export BUILDKITE_API_TOKEN={t}",
    t,
)
t = r(HEX, 40)
S(
    "circleci-token",
    "https://circleci.com/docs/managing-api-tokens/",
    f"curl -H 'Circle-Token: {t}' https://circleci.com/api/v2/me",
    t,
)
t = "squ_" + r(HEX, 40)
S(
    "sonar-token",
    "https://docs.sonarsource.com/sonarqube/latest/user-guide/user-account/generating-and-using-tokens/",
    f"mvn sonar:sonar -Dsonar.host.url=https://sonar.acme.io -Dsonar.token={t}",
    t,
)
t = "sqp_" + r(HEX, 40)
S(
    "sonar-token",
    "https://docs.sonarsource.com/sonarqube/latest/user-guide/user-account/generating-and-using-tokens/",
    f"sonar.login={t}\nsonar.projectKey=acme_api",
    t,
)
t = "AKCp" + r(AN, 69)
S(
    "jfrog-token",
    "https://jfrog.com/help/r/jfrog-platform-administration-documentation/access-tokens",
    f"<server>\n  <id>artifactory</id>\n  <username>ci</username>\n  <password>{t}</password>\n</server>",
    t,
)
t = "cmVmd" + r(AN, 59)
S(
    "jfrog-token",
    "https://jfrog.com/help/r/jfrog-platform-administration-documentation/access-tokens",
    f"jf config add prod --url=https://acme.jfrog.io --access-token={t} --interactive=false",
    t,
)
t = "sgp_" + r(HEX, 16) + "_" + r(HEX, 40)
S("sourcegraph-token", GITLEAKS, f"SRC_ACCESS_TOKEN={t} src search 'repo:acme lang:go'", t)

# ---------------------------------------------------------------- package registries
t = "npm_" + r(AN, 36)
S(
    "npm-token",
    "https://docs.npmjs.com/about-access-tokens",
    f"//registry.npmjs.org/:_authToken={t}\nalways-auth=true",
    t,
)
t = "npm_" + r(AN, 36)
S(
    "npm-token",
    "https://docs.npmjs.com/about-access-tokens",
    f"npm ERR! 403 Forbidden - PUT https://registry.npmjs.org/@acme%2fui (token {t} lacks publish scope)",
    t,
)
t = "pypi-AgEIcHlwaS5vcmc" + r(URLS, 140)
S("pypi-token", "https://pypi.org/help/#apitoken", f"[pypi]\n  username = __token__\n  password = {t}\n", t)
t = "pypi-AgEIcHlwaS5vcmc" + r(URLS, 120)
S("pypi-token", "https://pypi.org/help/#apitoken", f"$ twine upload -u __token__ -p {t} dist/*", t)
t = "rubygems_" + r(HEX, 48)
S("rubygems-key", "https://guides.rubygems.org/api-key-scopes/", f"---\n:rubygems_api_key: {t}\n", t)
t = "CLOJARS_" + r(LO + DI, 60)
S(
    "clojars-token",
    GITLEAKS,
    f':repositories [["clojars" {{:url "https://repo.clojars.org" :username "acme" :password "{t}"}}]]',
    t,
)
t = r(AN, 46)
S(
    "nuget-key",
    "https://learn.microsoft.com/en-us/nuget/reference/nuget-config-file",
    f'<packageSourceCredentials>\n  <AcmeFeed>\n    <add key="Username" value="ci" />\n    <add key="ClearTextPassword" value="{t}" />\n  </AcmeFeed>\n</packageSourceCredentials>',
    t,
)
t = "oy2" + r(LO + DI, 43)
S(
    "nuget-key",
    "https://learn.microsoft.com/en-us/nuget/nuget-org/publish-a-package",
    f"dotnet nuget push Acme.Core.2.1.0.nupkg --api-key {t} --source https://api.nuget.org/v3/index.json",
    t,
)
u, p = "deploy", pw(18)
S(
    "docker-registry",
    "https://docs.docker.com/reference/cli/docker/login/",
    f"$ docker login -u {u} -p {p} registry.acme.io\nWARNING! Using --password via the CLI is insecure. Use --password-stdin.",
    p,
)
a = base64.b64encode(f"ci-bot:{pw(20)}".encode()).decode()
S(
    "docker-registry",
    "https://docs.docker.com/reference/cli/docker/login/",
    '{\n  "auths": {\n    "ghcr.io": {\n      "auth": "' + a + '"\n    }\n  }\n}',
    a,
)
t = "dckr_pat_" + r(URLS, 27)
S(
    "docker-hub-pat",
    "https://docs.docker.com/security/for-developers/access-tokens/",
    f"echo ok; DOCKERHUB_TOKEN={t}",
    t,
)

# ---------------------------------------------------------------- chat / comms
src = "https://api.slack.com/authentication/token-types"
t = f"xoxb-{r(DI, 12)}-{r(DI, 13)}-{r(AN, 24)}"
S(
    "slack-bot-token",
    src,
    f'slack_sdk.errors.SlackApiError: The request to the Slack API failed. (url: https://slack.com/api/chat.postMessage)\nclient = WebClient(token="{t}")',
    t,
)
t = f"xoxp-{r(DI, 12)}-{r(DI, 12)}-{r(DI, 13)}-{r(HEX, 32)}"
S("slack-user-token", src, f'SLACK_USER_TOKEN: "{t}"', t)
t = f"xapp-1-A{r(UP + DI, 10)}-{r(DI, 13)}-{r(HEX, 64)}"
S("slack-app-token", src, f"socket mode: SlackAppToken={t}", t)
h = f"T{r(UP + DI, 8)}/B{r(UP + DI, 10)}/{r(AN, 24)}"
S(
    "slack-webhook",
    "https://api.slack.com/messaging/webhooks",
    f"curl -X POST -H 'Content-type: application/json' --data '{{\"text\":\"deploy ok\"}}' https://hooks.slack.com/services/{h}",
    h,
)
i, t = r(DI, 19), r(URLS, 68)
S(
    "discord-webhook",
    "https://discord.com/developers/docs/resources/webhook",
    f"ALERT_WEBHOOK=https://discord.com/api/webhooks/{i}/{t}",
    t,
)
t = b64u(r(DI, 18).encode()) + "." + r(URLS, 6) + "." + r(URLS, 38)
S(
    "discord-bot-token",
    "https://discord.com/developers/docs/reference#authentication",
    f"client.run('{t}')  # bot token, regenerate after demo",
    t,
)
t = f"{r(DI, 10)}:AA{r(URLS, 33)}"
S(
    "telegram-bot-token",
    "https://core.telegram.org/bots/api#authorizing-your-bot",
    f"requests.get('https://api.telegram.org/bot{t}/getUpdates')",
    t,
)
t = f"{r(DI, 9)}:AA{r(URLS, 33)}"
S(
    "telegram-bot-token",
    "https://core.telegram.org/bots/api#authorizing-your-bot",
    f"TELEGRAM_BOT_TOKEN={t}",
    t,
)
g1, g2, h, g3 = uuid4(), uuid4(), r(HEX, 32), uuid4()
url = f"https://acme.webhook.office.com/webhookb2/{g1}@{g2}/IncomingWebhook/{h}/{g3}"
S("teams-webhook", GITLEAKS, f"teams_webhook_url: {url}", h)
t = f"{r(HEX, 32)}-{r(HEX, 8)}-{r(HEX, 8)}"
S(
    "mailgun-key",
    "https://documentation.mailgun.com/docs/mailgun/api-reference/authentication/",
    f"MAILGUN_SIGNING_KEY={t}",
    t,
)
t = "key-" + r(HEX, 32)
S(
    "mailgun-key",
    "https://documentation.mailgun.com/docs/mailgun/api-reference/authentication/",
    f"curl -s --user 'api:{t}' https://api.mailgun.net/v3/mg.acme.io/messages -F to=ops@acme.io",
    t,
)
t = "SG." + r(URLS, 22) + "." + r(URLS, 43)
S(
    "sendgrid-key",
    "https://www.twilio.com/docs/sendgrid/ui/account-and-settings/api-keys",
    f"sg = SendGridAPIClient('{t}')",
    t,
)
t = r(HEX, 32) + "-us" + str(R.randint(10, 21))
S(
    "mailchimp-key",
    "https://mailchimp.com/developer/marketing/guides/quick-start/",
    f'mailchimp.setConfig({{ apiKey: "{t}", server: "us14" }});',
    t,
)
t = "xkeysib-" + r(HEX, 64) + "-" + r(AN, 16)
S("brevo-key", GITLEAKS, f'BREVO_API_KEY="{t}"', t)
sid, tok = "AC" + r(HEX, 32), r(HEX, 32)
S(
    "twilio-credentials",
    "https://www.twilio.com/docs/iam/api/account",
    f'client = Client("{sid}", "{tok}")',
    tok,
)
t, s = "SK" + r(HEX, 32), r(AN, 32)
S(
    "twilio-api-key",
    "https://www.twilio.com/docs/iam/api-keys",
    f"TWILIO_API_KEY={t}\nTWILIO_API_SECRET={s}",
    t,
    s,
)
t = r(URLS, 25)
S("messagebird-key", GITLEAKS, f"messagebird_api_key = '{t}'", t)

# ---------------------------------------------------------------- payments / fintech
src = "https://docs.stripe.com/keys"
t = "sk_live_" + r(AN, 99)
S("stripe-secret-key", src, f'stripe.api_key = "{t}"', t)
t = "sk_test_" + r(AN, 99)
S("stripe-secret-key", src, f"$ stripe listen --api-key {t} --forward-to localhost:8000/hooks", t)
t = "rk_live_" + r(AN, 99)
S("stripe-restricted-key", "https://docs.stripe.com/keys#limit-access", f"STRIPE_RESTRICTED_KEY={t}", t)
t = "whsec_" + r(AN, 32)
S(
    "stripe-webhook-secret",
    "https://docs.stripe.com/webhooks#verify-events",
    f"endpoint_secret = '{t}'\nevent = stripe.Webhook.construct_event(payload, sig_header, endpoint_secret)",
    t,
)
t = "EAAA" + r(URLS, 60)
S(
    "square-token",
    "https://developer.squareup.com/docs/build-basics/access-tokens",
    f"SQUARE_ACCESS_TOKEN={t}",
    t,
)
t = "sq0csp-" + r(URLS, 43)
S(
    "square-token",
    "https://developer.squareup.com/docs/build-basics/access-tokens",
    f"square:\n  application_id: sq0idp-{r(URLS, 22)}\n  application_secret: {t}",
    t,
)
t = f"access_token$production${r(LO + DI, 16)}${r(HEX, 32)}"
S(
    "braintree-token",
    "https://developer.paypal.com/braintree/docs/guides/authorization/overview",
    f'gateway = braintree.BraintreeGateway(access_token="{t}")',
    t,
)
c, s = r(URLS, 80), r(URLS, 80)
S(
    "paypal-client-secret",
    "https://developer.paypal.com/api/rest/authentication/",
    f'curl -v -X POST https://api-m.paypal.com/v1/oauth2/token -u "{c}:{s}" -d grant_type=client_credentials',
    s,
)
t, s = "access-production-" + uuid4(), r(HEX, 30)
S(
    "plaid-token",
    "https://plaid.com/docs/api/tokens/",
    f"PLAID_SECRET={s}\nplaid access_token for item 7: {t}",
    s,
    t,
)
name, body = f"organizations/{uuid4()}/apiKeys/{uuid4()}", pem_lines(120)
ec = "-----BEGIN EC PRIVATE KEY-----\\n" + "\\n".join(body) + "\\n-----END EC PRIVATE KEY-----\\n"
S(
    "coinbase-cdp-key",
    "https://docs.cdp.coinbase.com/get-started/docs/cdp-api-keys",
    '{\n  "name": "' + name + '",\n  "privateKey": "' + ec + '"\n}',
    *body,
)
t = "FLWSECK_TEST-" + r(HEX, 32) + "-X"
S("flutterwave-key", GITLEAKS, f"FLW_SECRET_KEY={t}", t)
card = luhn("4", 16)
spaced = " ".join(card[i : i + 4] for i in range(0, 16, 4))
S(
    "payment-card",
    "https://en.wikipedia.org/wiki/Payment_card_number",
    f"Customer called, card {spaced} exp 09/28 CVV 417, retry the charge manually.",
    spaced,
    "CVV 417",
)
card = luhn("51", 16)
dashed = "-".join(card[i : i + 4] for i in range(0, 16, 4))
S(
    "payment-card",
    "https://en.wikipedia.org/wiki/Payment_card_number",
    f'{{"order": 88123, "pan": "{dashed}", "status": "declined"}}',
    dashed,
)
card = luhn("37", 15)
S(
    "payment-card",
    "https://en.wikipedia.org/wiki/Payment_card_number",
    f"Amex für die Testbuchung: {card} (Ablauf 04/27)",
    card,
)
iban = "DE" + r(DI, 20)
S(
    "bank-account",
    "https://www.iban.com/structure",
    f"Überweisung an IBAN {iban}, BIC COBADEFFXXX, Online-Banking PIN 48213",
    "PIN 48213",
)

# ---------------------------------------------------------------- AI / ML
t = "sk-proj-" + r(URLS, 74) + "T3BlbkFJ" + r(URLS, 74)
S(
    "openai-key",
    "https://platform.openai.com/docs/api-reference/authentication",
    f"openai.AuthenticationError: Error code: 401 - Incorrect API key provided: {t}.",
    t,
)
t = "sk-" + r(AN, 20) + "T3BlbkFJ" + r(AN, 20)
S("openai-key", "https://platform.openai.com/docs/api-reference/authentication", f"OPENAI_API_KEY={t}", t)
t = "sk-ant-api03-" + r(URLS, 93) + "AA"
S(
    "anthropic-key",
    "https://docs.anthropic.com/en/api/getting-started",
    f'client = anthropic.Anthropic(api_key="{t}")',
    t,
)
t = "sk-ant-admin01-" + r(URLS, 93) + "AA"
S(
    "anthropic-key",
    "https://docs.anthropic.com/en/api/administration-api",
    f"curl https://api.anthropic.com/v1/organizations/users -H 'x-api-key: {t}'",
    t,
)
t = "hf_" + r(UP + LO, 34)
S(
    "huggingface-token",
    "https://huggingface.co/docs/hub/security-tokens",
    f"$ huggingface-cli login --token {t}\nToken is valid (permission: write).",
    t,
)
t = "hf_" + r(UP + LO, 34)
S(
    "huggingface-token",
    "https://huggingface.co/docs/hub/security-tokens",
    f"model = AutoModel.from_pretrained('acme/private-7b', token='{t}')",
    t,
)
t = "gsk_" + r(AN, 52)
S("groq-key", "https://console.groq.com/docs/quickstart", f"GROQ_API_KEY={t}", t)
t = "r8_" + r(AN, 37)
S(
    "replicate-token",
    "https://replicate.com/docs/topics/security/api-tokens",
    f"export REPLICATE_API_TOKEN={t}",
    t,
)
t = "pplx-" + r(AN, 48)
S("perplexity-key", GITLEAKS, f"headers = {{'Authorization': 'Bearer {t}'}}", t)
t = r(AN, 40)
S("cohere-key", GITLEAKS, f"co = cohere.Client(api_key='{t}')  # CO_API_KEY", t)
t = r(HEX, 40)
S(
    "wandb-key",
    "https://docs.wandb.ai/guides/track/environment-variables/",
    f"wandb: Appending key for api.wandb.ai to your netrc file: /root/.netrc\nWANDB_API_KEY={t}",
    t,
)
t = "pcsk_" + r(AN, 6) + "_" + r(AN, 64)
S(
    "pinecone-key",
    "https://docs.pinecone.io/guides/projects/manage-api-keys",
    f'pc = Pinecone(api_key="{t}")',
    t,
)
s = "sk-lf-" + uuid4()
S(
    "langfuse-key",
    "https://langfuse.com/docs/get-started",
    f'LANGFUSE_SECRET_KEY="{s}"\nLANGFUSE_PUBLIC_KEY="pk-lf-{uuid4()}"',
    s,
)
t = r(AN, 32)
S("mistral-key", "https://docs.mistral.ai/getting-started/quickstart/", f"MISTRAL_API_KEY: {t}", t)

# ---------------------------------------------------------------- observability / SaaS
t, a = r(HEX, 32), r(HEX, 40)
S(
    "datadog-keys",
    "https://docs.datadoghq.com/account_management/api-app-keys/",
    f"datadog:\n  apiKey: {t}\n  appKey: {a}\n  site: datadoghq.eu",
    t,
    a,
)
t = r(HEX, 32)
S(
    "datadog-keys",
    "https://docs.datadoghq.com/account_management/api-app-keys/",
    f"docker run -d -e DD_API_KEY={t} -e DD_SITE=datadoghq.com gcr.io/datadoghq/agent:7",
    t,
)
t = "glsa_" + r(AN, 32) + "_" + r(HEX, 8)
S(
    "grafana-token",
    "https://grafana.com/docs/grafana/latest/administration/service-accounts/",
    f'curl -H "Authorization: Bearer {t}" https://grafana.acme.io/api/dashboards/home',
    t,
)
t = "glc_" + r(B64, 120) + "=="
S(
    "grafana-token",
    "https://grafana.com/docs/grafana-cloud/account-management/authentication-and-permissions/access-policies/",
    f"basic_auth:\n  username: 712093\n  password: {t}",
    t,
)
t = "NRAK-" + r(UP + DI, 27)
S(
    "newrelic-key",
    "https://docs.newrelic.com/docs/apis/intro-apis/new-relic-api-keys/",
    f"NEW_RELIC_API_KEY={t} newrelic nerdgraph query '{{ actor {{ user {{ name }} }} }}'",
    t,
)
t = r(HEX, 36) + "NRAL"
S(
    "newrelic-key",
    "https://docs.newrelic.com/docs/apis/intro-apis/new-relic-api-keys/",
    f"newrelic.ini:\n[newrelic]\nlicense_key = {t}\napp_name = acme-api",
    t,
)
k = r(HEX, 32)
S(
    "sentry-dsn",
    "https://docs.sentry.io/concepts/key-terms/dsn-explainer/",
    f'sentry_sdk.init(dsn="https://{k}@o4504{r(DI, 6)}.ingest.sentry.io/45051{r(DI, 5)}", traces_sample_rate=0.2)',
    k,
)
t = "sntryu_" + r(HEX, 64)
S(
    "sentry-token",
    "https://docs.sentry.io/account/auth-tokens/",
    f"sentry-cli --auth-token {t} releases new 2.4.1",
    t,
)
t = "dt0c01." + r(UP + DI, 24) + "." + r(UP + DI, 64)
S(
    "dynatrace-token",
    "https://docs.dynatrace.com/docs/manage/identity-access-management/access-tokens-and-oauth-clients/access-tokens",
    f"Api-Token {t}",
    t,
)
t = "00" + r(URLS, 40)
S(
    "okta-token",
    "https://developer.okta.com/docs/guides/create-an-api-token/main/",
    f"curl -H 'Authorization: SSWS {t}' https://acme.okta.com/api/v1/users?limit=25",
    t,
)
t = "lin_api_" + r(AN, 40)
S(
    "linear-key",
    "https://developers.linear.app/docs/graphql/working-with-the-graphql-api",
    f"LINEAR_API_KEY={t}",
    t,
)
t = "ntn_" + r(DI, 11) + r(AN, 35)
S(
    "notion-token",
    "https://developers.notion.com/docs/authorization",
    f'const notion = new Client({{ auth: "{t}" }})',
    t,
)
t = "secret_" + r(AN, 43)
S("notion-token", "https://developers.notion.com/docs/authorization", f"NOTION_TOKEN={t}", t)
t = f"2/{r(DI, 16)}/{r(DI, 16)}:{r(HEX, 32)}"
S(
    "asana-pat",
    "https://developers.asana.com/docs/personal-access-token",
    f"curl https://app.asana.com/api/1.0/users/me -H 'Authorization: Bearer {t}'",
    t,
)
t = "pat" + r(AN, 14) + "." + r(HEX, 64)
S(
    "airtable-pat",
    "https://support.airtable.com/docs/creating-personal-access-tokens",
    f"AIRTABLE_TOKEN={t}",
    t,
)
t = "figd_" + r(URLS, 40)
S(
    "figma-token",
    "https://www.figma.com/developers/api#access-tokens",
    f"curl -H 'X-Figma-Token: {t}' https://api.figma.com/v1/files/AbC123",
    t,
)
t = "sk." + b64u(json.dumps({"u": "acme", "a": r(LO + DI, 25)}).encode()) + "." + r(URLS, 22)
S("mapbox-secret-token", "https://docs.mapbox.com/accounts/guides/tokens/", f"MAPBOX_DOWNLOADS_TOKEN={t}", t)
t = r(HEX, 32)
S(
    "algolia-admin-key",
    "https://www.algolia.com/doc/guides/security/api-keys/",
    f"const client = algoliasearch('Q1W2E3R4T5', '{t}'); // admin key!",
    t,
)
t = "CFPAT-" + r(URLS, 43)
S(
    "contentful-token",
    "https://www.contentful.com/developers/docs/references/authentication/",
    f"contentful space import --management-token {t} --space-id abc123",
    t,
)
t = "PMAK-" + r(HEX, 24) + "-" + r(HEX, 34)
S(
    "postman-key",
    "https://learning.postman.com/docs/developer/postman-api/authentication/",
    f"postman login --with-api-key {t}",
    t,
)
t = "pul-" + r(HEX, 40)
S(
    "pulumi-token",
    "https://www.pulumi.com/docs/pulumi-cloud/access-management/access-tokens/",
    f"env:\n  PULUMI_ACCESS_TOKEN: {t}",
    t,
)
t = r(AN, 14) + ".atlasv1." + r(URLS, 67)
S(
    "terraform-cloud-token",
    "https://developer.hashicorp.com/terraform/cloud-docs/users-teams-organizations/api-tokens",
    f'credentials "app.terraform.io" {{\n  token = "{t}"\n}}',
    t,
)
t = "hvs." + r(URLS, 92)
S(
    "vault-token",
    "https://developer.hashicorp.com/vault/docs/concepts/tokens#token-prefixes",
    f"$ vault login {t}\nSuccess! You are now authenticated.",
    t,
)
t = "hvb." + r(URLS, 150)
S(
    "vault-token",
    "https://developer.hashicorp.com/vault/docs/concepts/tokens#token-prefixes",
    f"VAULT_TOKEN={t} vault kv get secret/app",
    t,
)
t = "dp.st.prd." + r(AN, 43)
S("doppler-token", "https://docs.doppler.com/docs/service-tokens", f"doppler run --token {t} -- ./server", t)
t = "dp.pt." + r(AN, 43)
S("doppler-token", "https://docs.doppler.com/docs/service-tokens", f"DOPPLER_TOKEN='{t}'", t)
t = "ops_eyJ" + r(B64, 300)
S(
    "onepassword-token",
    "https://developer.1password.com/docs/service-accounts/",
    f"export OP_SERVICE_ACCOUNT_TOKEN={t}",
    t,
)
t = f"A3-{r(UP + DI, 6)}-{r(UP + DI, 6)}-{r(UP + DI, 5)}-{r(UP + DI, 5)}-{r(UP + DI, 5)}-{r(UP + DI, 5)}"
S(
    "onepassword-secret-key",
    "https://support.1password.com/secret-key/",
    f"Emergency kit: Secret Key {t}, sign-in address acme.1password.com",
    t,
)
t = "tskey-auth-" + r(AN, 12) + "CNTRL-" + r(AN, 33)
S(
    "tailscale-key",
    "https://tailscale.com/kb/1085/auth-keys",
    f"tailscale up --authkey={t} --advertise-tags=tag:ci",
    t,
)
t = r(AN, 27) + "_" + r(AN, 21)
S(
    "ngrok-token",
    "https://ngrok.com/docs/agent/config/",
    f"$ ngrok config add-authtoken {t}\nAuthtoken saved to configuration file.",
    t,
)
t = "rnd_" + r(AN, 32)
S("render-key", "https://render.com/docs/api#1-create-an-api-key", f"RENDER_API_KEY={t}", t)
t = "nfp_" + r(AN, 36)
S(
    "netlify-token",
    "https://docs.netlify.com/api/get-started/#authentication",
    f"netlify deploy --prod --auth {t}",
    t,
)
t = r(AN, 24)
S(
    "vercel-token",
    "https://vercel.com/docs/rest-api#creating-an-access-token",
    f"vercel --token {t} --prod --yes",
    t,
)
t = "sbp_" + r(HEX, 40)
S("supabase-key", "https://supabase.com/docs/guides/api/api-keys", f"supabase login --token {t}", t)
t = jwt({"iss": "supabase", "ref": r(LO, 20), "role": "service_role", "iat": 1730000000, "exp": 2045576000})
S("supabase-key", "https://supabase.com/docs/guides/api/api-keys", f"SUPABASE_SERVICE_ROLE_KEY={t}", t)
t = "pscale_tkn_" + r(URLS, 43)
S(
    "planetscale-token",
    "https://planetscale.com/docs/concepts/service-tokens",
    f"pscale auth login --service-token {t} --service-token-id k2x9",
    t,
)
t = "pscale_pw_" + r(URLS, 43)
S(
    "planetscale-token",
    "https://planetscale.com/docs/concepts/connection-strings",
    f"DATABASE_URL='mysql://u7xk2:{t}@aws.connect.psdb.cloud/acme?sslaccept=strict'",
    t,
)
t = "dapi" + r(HEX, 32)
S(
    "databricks-token",
    "https://docs.databricks.com/en/dev-tools/auth/pat.html",
    f"[DEFAULT]\nhost  = https://adb-4411.7.azuredatabricks.net\ntoken = {t}",
    t,
)
t = "v1.0-" + r(HEX, 24) + "-" + r(HEX, 146)
S(
    "cloudflare-token",
    "https://developers.cloudflare.com/ssl/origin-configuration/origin-ca/",
    f"CF_ORIGIN_CA_KEY={t}",
    t,
)
t = r(URLS, 40)
S(
    "cloudflare-token",
    "https://developers.cloudflare.com/fundamentals/api/get-started/create-token/",
    f"wrangler whoami\nCLOUDFLARE_API_TOKEN={t}",
    t,
)
t = r(HEX, 37)
S(
    "cloudflare-token",
    "https://developers.cloudflare.com/fundamentals/api/get-started/keys/",
    f"curl -H 'X-Auth-Email: ops@acme.io' -H 'X-Auth-Key: {t}' https://api.cloudflare.com/client/v4/zones",
    t,
)
k, s = r(DI, 15), r(URLS, 27)
S(
    "cloudinary-url",
    "https://cloudinary.com/documentation/how_to_integrate_cloudinary",
    f"CLOUDINARY_URL=cloudinary://{k}:{s}@acme-media",
    s,
)
t = "EAAC" + r(AN, 180)
S(
    "facebook-token",
    "https://developers.facebook.com/docs/facebook-login/guides/access-tokens",
    f"graph.facebook.com/v19.0/me/accounts?access_token={t}",
    t,
)
t = "A" * 22 + r(AN, 90)
S(
    "twitter-bearer",
    "https://developer.x.com/en/docs/authentication/oauth-2-0/bearer-tokens",
    f"TWITTER_BEARER_TOKEN={t}",
    t,
)
t = "sl." + r(URLS, 135)
S("dropbox-token", "https://developers.dropbox.com/oauth-guide", f"dbx = dropbox.Dropbox('{t}')", t)
t = "AAAA" + r(URLS, 7) + ":APA91b" + r(URLS, 134)
S(
    "firebase-fcm-key",
    "https://firebase.google.com/docs/cloud-messaging/auth-server",
    f"Authorization: key={t}",
    t,
)
t = f"sdk-{uuid4()}"
S(
    "launchdarkly-key",
    "https://docs.launchdarkly.com/home/account/environment/keys",
    f'ld_client = ldclient.LDClient(Config("{t}"))',
    t,
)
t = "shpat_" + r(HEX, 32)
S(
    "shopify-token",
    "https://shopify.dev/docs/apps/build/authentication-authorization/access-tokens",
    f"X-Shopify-Access-Token: {t}",
    t,
)
t = "shpss_" + r(HEX, 32)
S(
    "shopify-token",
    "https://shopify.dev/docs/apps/build/authentication-authorization/access-tokens",
    f"SHOPIFY_API_SECRET={t}",
    t,
)
t = "EZAK" + r(AN, 54)
S("easypost-key", GITLEAKS, f"EasyPost::Client.new(api_key: '{t}')", t)
t = "shippo_live_" + r(HEX, 40)
S("shippo-key", GITLEAKS, f'shippo.config.api_key = "{t}"', t)
t = "duffel_live_" + r(URLS, 43)
S("duffel-key", GITLEAKS, f"Duffel-Version: v2\nAuthorization: Bearer {t}", t)
t = "ico-" + r(AN, 32)
S("infracost-key", GITLEAKS, f"infracost configure set api_key {t}", t)
t = "pnu_" + r(AN, 36)
S("prefect-key", GITLEAKS, f"prefect cloud login -k {t}", t)
t = "rdme_" + r(LO + DI, 70)
S("readme-key", GITLEAKS, f"rdme openapi ./spec.yaml --key={t}", t)
t = "tk-us-" + r(URLS, 48)
S("scalingo-token", GITLEAKS, f"scalingo login --api-token {t}", t)
t = r(AN, 6) + "_" + r(AN, 29) + "_mmk"
S("maxmind-key", GITLEAKS, f"AccountID 998877\nLicenseKey {t}\nEditionIDs GeoLite2-City", t)
t = "API-" + r(UP + DI, 26)
S("octopus-key", GITLEAKS, f"octo push --package app.1.0.0.zip --server https://octo.acme.io --apiKey {t}", t)
t = "sha256~" + r(URLS, 43)
S("openshift-token", GITLEAKS, f"oc login --token={t} --server=https://api.ocp.acme.io:6443", t)

# ---------------------------------------------------------------- keys and key files
body = pem_lines(420)
S(
    "pem-rsa-private-key",
    "https://www.rfc-editor.org/rfc/rfc7468",
    "```\n-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(body) + "\n-----END RSA PRIVATE KEY-----\n```",
    *body,
)
body = pem_lines(300)
S(
    "pem-encrypted-private-key",
    "https://www.rfc-editor.org/rfc/rfc7468#section-11",
    "key.pem:\n-----BEGIN ENCRYPTED PRIVATE KEY-----\n"
    + "\n".join(body)
    + "\n-----END ENCRYPTED PRIVATE KEY-----",
    *body,
)
body = pem_lines(280)
S(
    "openssh-private-key",
    "https://man.openbsd.org/ssh-keygen",
    "cat ~/.ssh/id_ed25519\n-----BEGIN OPENSSH PRIVATE KEY-----\n"
    + "\n".join(body)
    + "\n-----END OPENSSH PRIVATE KEY-----",
    *body,
)
body = pem_lines(360)
S(
    "pgp-private-key",
    "https://www.rfc-editor.org/rfc/rfc4880#section-6.2",
    "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n"
    + "\n".join(body)
    + "\n="
    + r(B64, 4)
    + "\n-----END PGP PRIVATE KEY BLOCK-----",
    *body,
)
pub, priv, mac = pem_lines(51), pem_lines(120), r(HEX, 64)
S(
    "putty-private-key",
    "https://the.earth.li/~sgtatham/putty/0.80/htmldoc/AppendixC.html",
    "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: deploy@bastion\nPublic-Lines: 2\n"
    + "\n".join(pub)
    + f"\nPrivate-Lines: {len(priv)}\n"
    + "\n".join(priv)
    + f"\nPrivate-MAC: {mac}",
    *priv,
    mac,
)
t = "AGE-SECRET-KEY-1" + r(BECH.upper(), 58)
S(
    "age-secret-key",
    "https://age-encryption.org/v1",
    f"# created: 2026-11-20T10:11:12Z\n# public key: age1{r(BECH, 58)}\n{t}",
    t,
)
t = base64.b64encode(R.randbytes(32)).decode()
S(
    "wireguard-private-key",
    "https://www.wireguard.com/quickstart/",
    f"[Interface]\nAddress = 10.8.0.2/24\nPrivateKey = {t}\n\n[Peer]\nPublicKey = {base64.b64encode(R.randbytes(32)).decode()}\nEndpoint = vpn.acme.io:51820",
    t,
)
t = "0x" + r(HEX, 64)
S(
    "ethereum-private-key",
    "https://ethereum.org/en/developers/docs/accounts/",
    f"PRIVATE_KEY={t}\nRPC_URL=https://sepolia.infura.io/v3/{r(HEX, 32)}",
    t,
)
t = "5" + R.choice("HJK") + r(B58, 49)
S(
    "bitcoin-wif",
    "https://en.bitcoin.it/wiki/Wallet_import_format",
    f'importprivkey "{t}" "cold-wallet" false',
    t,
)
words = " ".join(
    R.sample(
        [
            "abandon",
            "velvet",
            "orbit",
            "cactus",
            "lantern",
            "ripple",
            "quarter",
            "pigeon",
            "glory",
            "ozone",
            "tribe",
            "wisdom",
            "elbow",
            "harvest",
            "jungle",
            "mosquito",
        ],
        12,
    )
)
S(
    "seed-phrase",
    "https://github.com/bitcoin/bips/blob/master/bip-0039.mediawiki",
    f"Recovery phrase for the test wallet: {words}",
    words,
)
h = "$2y$10$" + r("./" + AN, 53)
S(
    "htpasswd-hash",
    "https://httpd.apache.org/docs/2.4/misc/password_encryptions.html",
    f"# .htpasswd\nadmin:{h}",
    h,
)
t = pw(20)
S(
    "wifi-psk",
    "https://w1.fi/cgit/hostap/plain/wpa_supplicant/wpa_supplicant.conf",
    f'network={{\n    ssid="acme-office"\n    psk="{t}"\n}}',
    t,
)

# ---------------------------------------------------------------- tokens and auth headers
t = jwt({"sub": "user_8812", "scope": "admin", "iat": 1764200000, "exp": 1764286400})
S(
    "jwt",
    "https://www.rfc-editor.org/rfc/rfc7519",
    f"401 from /v1/admin, the cookie was session={t}; Path=/; HttpOnly",
    t,
)
t = jwt(
    {
        "iss": "https://kubernetes.default.svc.cluster.local",
        "sub": "system:serviceaccount:ci:deployer",
        "kubernetes.io": {"namespace": "ci"},
    },
    "RS256",
)
S(
    "kubernetes-sa-token",
    "https://kubernetes.io/docs/reference/access-authn-authz/service-accounts-admin/",
    f"$ kubectl create token deployer -n ci\n{t}",
    t,
)
tok, ckd = (
    jwt({"sub": "system:serviceaccount:kube-system:admin"}, "RS256"),
    base64.b64encode(
        (
            "-----BEGIN RSA PRIVATE KEY-----\n"
            + base64.b64encode(R.randbytes(90)).decode()
            + "\n-----END RSA PRIVATE KEY-----\n"
        ).encode()
    ).decode(),
)
S(
    "kubeconfig",
    "https://kubernetes.io/docs/concepts/configuration/organize-cluster-access-kubeconfig/",
    f"apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    server: https://10.0.0.12:6443\n  name: prod\nusers:\n- name: admin\n  user:\n    token: {tok}\n    client-key-data: {ckd}\n",
    tok,
    ckd,
)
v1, v2 = (
    base64.b64encode(pw(16).encode()).decode(),
    base64.b64encode(f"postgres://app:{pw(16)}@db:5432/app".encode()).decode(),
)
S(
    "kubernetes-secret-yaml",
    "https://kubernetes.io/docs/concepts/configuration/secret/",
    f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: db-credentials\ntype: Opaque\ndata:\n  password: {v1}\n  url: {v2}\n",
    v1,
    v2,
)
b = base64.b64encode(f"svc-report:{pw(16)}".encode()).decode()
S(
    "basic-auth-header",
    "https://www.rfc-editor.org/rfc/rfc7617",
    f"> GET /internal/report HTTP/1.1\n> Host: reports.acme.io\n> Authorization: Basic {b}\n< HTTP/1.1 200 OK",
    b,
)
t = r(URLS, 48)
S(
    "bearer-header",
    "https://www.rfc-editor.org/rfc/rfc6750",
    f"requests.exceptions.HTTPError: 403 Client Error\n  headers={{'Authorization': 'Bearer {t}', 'Accept': 'application/json'}}",
    t,
)
u, p = "svc", pw(16)
S(
    "curl-user",
    "https://curl.se/docs/manpage.html#-u",
    f"curl -u {u}:{p} https://jenkins.acme.io/job/deploy/buildWithParameters",
    p,
)
t = r(AN, 40)
S(
    "api-key-header",
    "https://swagger.io/docs/specification/authentication/api-keys/",
    f"http GET https://api.vendor.example/v2/orders X-API-Key:{t}",
    t,
)
c = r(LO + DI, 32)
S("session-cookie", GITLEAKS, f"Cookie: _gitlab_session={c}; event_filter=all", c)

# ---------------------------------------------------------------- connection strings and credential files
p = pw(16)
S(
    "postgres-url",
    "https://www.postgresql.org/docs/current/libpq-connect.html#LIBPQ-CONNSTRING",
    f"sqlalchemy.exc.OperationalError: (psycopg.OperationalError) connection failed\n  engine = create_engine('postgresql+psycopg://app:{p}@10.0.3.7:5432/orders')",
    p,
)
p = "p@ss:w/rd#" + r(AN, 8)
enc = urllib.parse.quote(p, safe="")
S(
    "postgres-url-encoded",
    "https://www.postgresql.org/docs/current/libpq-connect.html#LIBPQ-CONNSTRING",
    f"DATABASE_URL=postgres://reporting:{enc}@pg.internal:5432/warehouse?sslmode=require",
    enc,
)
p = pw(14)
S(
    "pgpass",
    "https://www.postgresql.org/docs/current/libpq-pgpass.html",
    f"$ cat ~/.pgpass\npg.internal:5432:*:reporting:{p}\n*:*:*:postgres:{(p2 := pw(12))}",
    p,
    p2,
)
p = pw(14)
S(
    "pgpassword-env",
    "https://www.postgresql.org/docs/current/libpq-envars.html",
    f"PGPASSWORD='{p}' psql -h pg.internal -U admin -c 'select 1'",
    p,
)
p = pw(14)
S(
    "mysql-cli",
    "https://dev.mysql.com/doc/refman/8.0/en/connecting.html",
    f"$ mysql -h db.acme.io -u root -p{p} shop < dump.sql",
    p,
)
p = pw(14)
S(
    "mysql-cli",
    "https://dev.mysql.com/doc/refman/8.0/en/option-files.html",
    f'# ~/.my.cnf\n[client]\nuser=backup\npassword="{p}"',
    p,
)
p = pw(16)
S(
    "mongodb-uri",
    "https://www.mongodb.com/docs/manual/reference/connection-string/",
    f'MongoServerError: bad auth : authentication failed\nuri = "mongodb+srv://atlas-admin:{p}@cluster0.ab12c.mongodb.net/prod?retryWrites=true&w=majority"',
    p,
)
p = pw(20)
S(
    "redis-password",
    "https://redis.io/docs/latest/operate/oss_and_stack/management/security/",
    f"# redis.conf\nbind 0.0.0.0\nrequirepass {p}\n",
    p,
)
p = r(AN, 32)
S(
    "redis-password",
    "https://www.iana.org/assignments/uri-schemes/prov/redis",
    f"CELERY_BROKER_URL=rediss://:{p}@acme-cache.redis.cache.windows.net:6380/0",
    p,
)
p = pw(16)
S(
    "amqp-url",
    "https://www.rabbitmq.com/docs/uri-spec",
    f"pika.URLParameters('amqps://orders:{p}@mq.acme.io:5671/%2Fprod')",
    p,
)
p = pw(16)
S(
    "mssql-connection-string",
    "https://learn.microsoft.com/en-us/dotnet/framework/data/adonet/connection-string-syntax",
    f'<connectionStrings>\n  <add name="Main" connectionString="Server=tcp:sql.acme.io,1433;Database=crm;User ID=crm_app;Password={p};Encrypt=True;" />\n</connectionStrings>',
    p,
)
p = pw(14)
S(
    "oracle-jdbc",
    "https://docs.oracle.com/en/database/oracle/oracle-database/21/jjdbc/data-sources-and-URLs.html",
    f"spring.datasource.url=jdbc:oracle:thin:scott/{p}@//ora.acme.io:1521/ORCLPDB1",
    p,
)
p = pw(14)
S(
    "jdbc-password",
    "https://docs.spring.io/spring-boot/appendix/application-properties/index.html",
    f"spring.datasource.username=svc_billing\nspring.datasource.password={p}",
    p,
)
p = pw(16)
S(
    "snowflake-credentials",
    "https://docs.snowflake.com/en/developer-guide/python-connector/python-connector-connect",
    f"conn = snowflake.connector.connect(\n    user='ETL_USER',\n    password='{p}',\n    account='acme-xy12345',\n)",
    p,
)
p = pw(18)
S(
    "snowflake-credentials",
    "https://docs.snowflake.com/en/user-guide/key-pair-auth",
    f'[connections.prod]\naccount = "acme-xy12345"\nuser = "ETL_USER"\nprivate_key_file = "/keys/rsa_key.p8"\nprivate_key_file_pwd = "{p}"',
    p,
)
p = pw(14)
S(
    "clickhouse-password",
    "https://clickhouse.com/docs/en/interfaces/cli",
    f"clickhouse-client --host ch.acme.io --user default --password '{p}' --query 'SELECT 1'",
    p,
)
p = pw(14)
S(
    "elasticsearch-password",
    "https://www.elastic.co/guide/en/elasticsearch/reference/current/built-in-users.html",
    f'elasticsearch.hosts: ["https://es01:9200"]\nelasticsearch.username: "kibana_system"\nelasticsearch.password: "{p}"',
    p,
)
p = pw(14)
S(
    "cassandra-password",
    "https://cassandra.apache.org/doc/stable/cassandra/managing/tools/cqlsh.html",
    f"cqlsh cass.acme.io -u cassandra -p {p}",
    p,
)
p = pw(16)
S(
    "ldap-bind-password",
    "https://www.openldap.org/software/man.cgi?query=ldapsearch",
    f"ldapsearch -x -H ldaps://ldap.acme.io -D 'cn=admin,dc=acme,dc=io' -w '{p}' '(uid=jdoe)'",
    p,
)
p = pw(16)
S(
    "smtp-password",
    "https://docs.djangoproject.com/en/5.0/ref/settings/#email-host-password",
    f"EMAIL_HOST = 'smtp.acme.io'\nEMAIL_HOST_USER = 'noreply@acme.io'\nEMAIL_HOST_PASSWORD = '{p}'",
    p,
)
p = pw(14)
S(
    "netrc",
    "https://everything.curl.dev/usingcurl/netrc.html",
    f"$ cat ~/.netrc\nmachine git.acme.io login deploy password {p}\nmachine api.acme.io\n  login bot\n  password {(p2 := pw(16))}",
    p,
    p2,
)
p = pw(14)
S(
    "sshpass",
    "https://linux.die.net/man/1/sshpass",
    f"sshpass -p '{p}' ssh -o StrictHostKeyChecking=no root@10.0.0.44 'systemctl restart api'",
    p,
)
p = pw(14)
S(
    "ftp-url",
    "https://www.rfc-editor.org/rfc/rfc1738",
    f"wget ftp://backup:{p}@files.acme.io/nightly/db.sql.gz",
    p,
)
p = pw(12)
S(
    "smb-mount",
    "https://linux.die.net/man/8/mount.cifs",
    f"mount -t cifs //nas/share /mnt/share -o username=svc_scan,password={p},vers=3.0",
    p,
)

# ---------------------------------------------------------------- app frameworks / config formats
t = "django-insecure-" + r(LO + DI + "!@#$%^&*(-_=+)", 50)
S(
    "django-secret-key",
    "https://docs.djangoproject.com/en/5.0/ref/settings/#secret-key",
    f"# settings.py\nSECRET_KEY = '{t}'\nDEBUG = False",
    t,
)
t = r(HEX, 128)
S(
    "rails-secret-key-base",
    "https://guides.rubyonrails.org/security.html#custom-credentials",
    f"production:\n  secret_key_base: {t}",
    t,
)
t = r(HEX, 64)
S(
    "flask-secret-key",
    "https://flask.palletsprojects.com/en/3.0.x/config/#SECRET_KEY",
    f"app.config['SECRET_KEY'] = '{t}'",
    t,
)
t = base64.b64encode(R.randbytes(32)).decode()
S(
    "laravel-app-key",
    "https://laravel.com/docs/11.x/encryption#configuration",
    f"APP_NAME=Acme\nAPP_ENV=production\nAPP_KEY=base64:{t}\nAPP_DEBUG=false",
    t,
)
t = r(AN, 40)
S(
    "nextauth-secret",
    "https://next-auth.js.org/configuration/options#secret",
    f"NEXTAUTH_URL=https://acme.io\nNEXTAUTH_SECRET={t}",
    t,
)
p = pw(16)
S(
    "password-xml",
    "https://maven.apache.org/settings.html#servers",
    f"<datasource>\n  <user-name>sa</user-name>\n  <password>{p}</password>\n</datasource>",
    p,
)
p = pw(16)
S(
    "password-yaml",
    "https://docs.docker.com/compose/environment-variables/set-environment-variables/",
    f"services:\n  db:\n    image: postgres:16\n    environment:\n      POSTGRES_PASSWORD: {p}\n",
    p,
)
p = pw(16)
S(
    "password-toml",
    "https://toml.io/en/v1.0.0",
    f'[database]\nhost = "db.internal"\nuser = "app"\npassword = "{p}"\n',
    p,
)
p = pw(16)
S(
    "password-ini",
    "https://docs.python.org/3/library/configparser.html",
    f"[mail]\nserver = smtp.acme.io\nusername = alerts\npasswd = {p}\n",
    p,
)
p = pw(16)
S(
    "password-hcl",
    "https://developer.hashicorp.com/terraform/language/values/variables",
    f'resource "azurerm_mssql_server" "main" {{\n  name                         = "acme-sql"\n  administrator_login          = "sqladmin"\n  administrator_login_password = "{p}"\n}}',
    p,
)
p = pw(16)
S(
    "password-json",
    "https://www.json.org/json-en.html",
    json.dumps({"db": {"user": "api", "pass": p, "host": "10.0.0.5"}}),
    p,
)
p = pw(16)
S(
    "password-cli-flag",
    "https://docs.ansible.com/ansible/latest/cli/ansible-playbook.html",
    f"ansible-playbook site.yml -i prod --extra-vars 'ansible_become_pass={p}'",
    p,
)
p = pw(16)
S("password-cli-flag", "https://www.rabbitmq.com/docs/cli", f"rabbitmqctl add_user metrics --password {p}", p)
p = pw(16)
S(
    "password-stack-trace",
    "https://docs.python.org/3/library/traceback.html",
    f'Traceback (most recent call last):\n  File "/app/db.py", line 41, in connect\n    conn = psycopg.connect(host=host, user="app", password="{p}")\npsycopg.OperationalError: FATAL:  password authentication failed for user "app"',
    p,
)
p = pw(16)
S(
    "password-diff",
    "https://git-scm.com/docs/git-diff",
    f"diff --git a/config/prod.env b/config/prod.env\n@@ -3,3 +3,3 @@\n-DB_PASSWORD=changeme\n+DB_PASSWORD={p}\n REDIS_HOST=cache",
    p,
)
p = pw(16)
S(
    "password-php",
    "https://www.php.net/manual/en/pdo.construct.php",
    f"$pdo = new PDO('mysql:host=localhost;dbname=shop', 'shop', '{p}');",
    p,
)
env = f"DB_PASSWORD={pw(16)}\nSTRIPE_KEY=sk_live_{r(AN, 24)}\n"
blob = base64.b64encode(env.encode()).decode()
S(
    "base64-env-file",
    "https://kubernetes.io/docs/concepts/configuration/secret/",
    f"echo '{blob}' | base64 -d > .env   # restore prod env",
    blob,
)
p = " ".join(R.sample(["marble", "tundra", "copper", "violet", "anchor", "meadow", "saffron", "glacier"], 5))
S(
    "passphrase-prose",
    "https://www.openssh.com/manual.html",
    f"The key is encrypted; the passphrase is: {p}",
    p,
)
p = pw(18)
S(
    "passphrase-prose",
    "https://www.gnupg.org/documentation/manuals/gnupg/",
    f"gpg --batch --pinentry-mode loopback --passphrase '{p}' --decrypt backup.tar.gpg",
    p,
)

# ---------------------------------------------------------------- prose in many languages
ko, ja, zh = pw(12), pw(12), pw(12)
S(
    "prose-password-ko",
    "https://en.wikipedia.org/wiki/Password",
    f"스테이징 DB 비밀번호는 {ko} 입니다. 배포 끝나면 바꿀게요.",
    ko,
)
k = r(AN, 32)
S(
    "prose-password-ko",
    "https://en.wikipedia.org/wiki/Application_programming_interface_key",
    f"결제 모듈 API 키: {k} (테스트용 아님, 공유 금지)",
    k,
)
S(
    "prose-password-ja",
    "https://en.wikipedia.org/wiki/Password",
    f"ステージング環境の管理者パスワードは「{ja}」です。明日変更します。",
    ja,
)
k = r(AN, 32)
S(
    "prose-password-ja",
    "https://en.wikipedia.org/wiki/Application_programming_interface_key",
    f"APIキーは {k} を使ってください。",
    k,
)
S(
    "prose-password-zh",
    "https://en.wikipedia.org/wiki/Password",
    f"测试服务器的root密码是{zh}，用完请改掉。",
    zh,
)
k = r(AN, 32)
S(
    "prose-password-zh",
    "https://en.wikipedia.org/wiki/Application_programming_interface_key",
    f"生产环境的访问令牌：{k}，不要提交到仓库。",
    k,
)
de = pw(12)
S(
    "prose-password-de",
    "https://en.wikipedia.org/wiki/Password",
    f"Das Passwort für den Jenkins-Admin lautet {de}, bitte nicht weitergeben.",
    de,
)
k = r(AN, 32)
S(
    "prose-password-de",
    "https://en.wikipedia.org/wiki/Application_programming_interface_key",
    f"Der API-Schlüssel für das Wetter-Backend ist {k}.",
    k,
)
es = pw(12)
S(
    "prose-password-es",
    "https://en.wikipedia.org/wiki/Password",
    f"La contraseña del usuario root es {es} y caduca el viernes.",
    es,
)
k = r(AN, 32)
S(
    "prose-password-es",
    "https://en.wikipedia.org/wiki/Application_programming_interface_key",
    f"Usa esta clave de API: {k}",
    k,
)
fr = pw(12)
S(
    "prose-password-fr",
    "https://en.wikipedia.org/wiki/Password",
    f"Le mot de passe du compte de service est : {fr}",
    fr,
)
k = r(AN, 32)
S(
    "prose-password-fr",
    "https://en.wikipedia.org/wiki/Application_programming_interface_key",
    f"Voici le jeton d'accès pour la démo : {k}",
    k,
)
pt = pw(12)
S(
    "prose-password-pt",
    "https://en.wikipedia.org/wiki/Password",
    f"A senha do banco de homologação é {pt}, troque depois do teste.",
    pt,
)
k = r(AN, 32)
S(
    "prose-password-pt",
    "https://en.wikipedia.org/wiki/Application_programming_interface_key",
    f"A chave de API do gateway de pagamento: {k}",
    k,
)
it = pw(12)
S(
    "prose-password-it",
    "https://en.wikipedia.org/wiki/Password",
    f"La password del database di collaudo è {it}, cambiala dopo il rilascio.",
    it,
)
k = r(AN, 32)
S(
    "prose-password-it",
    "https://en.wikipedia.org/wiki/Application_programming_interface_key",
    f"Ecco il token di accesso per l'ambiente di prova: {k}",
    k,
)
ru = pw(12)
S(
    "prose-password-ru",
    "https://en.wikipedia.org/wiki/Password",
    f"Пароль от сервера мониторинга: {ru} — не забудь сменить.",
    ru,
)
k = r(AN, 32)
S(
    "prose-password-ru",
    "https://en.wikipedia.org/wiki/Application_programming_interface_key",
    f"Ключ API для сервиса погоды: {k}",
    k,
)
en = pw(12)
S(
    "prose-password-en",
    "https://en.wikipedia.org/wiki/Password",
    f"fyi the wifi in the lab is acme-lab and the pw is {en}",
    en,
)

# ================================================================ near misses
N(
    "git-sha",
    "https://git-scm.com/book/en/v2/Git-Internals-Git-Objects",
    f"commit {hashlib.sha1(b'a').hexdigest()}\nAuthor: Dev <dev@acme.io>\n\n    Fix flaky retry test",
)
N(
    "git-sha",
    "https://git-scm.com/docs/git-rev-parse",
    f"HEAD is now at {hashlib.sha1(b'b').hexdigest()[:7]} Merge pull request #812 from acme/fix-timeouts",
)
N(
    "git-sha",
    "https://git-scm.com/docs/git-submodule",
    f"Submodule path 'vendor/proto': checked out '{hashlib.sha1(b'c').hexdigest()}'",
)
N("uuid", "https://www.rfc-editor.org/rfc/rfc9562", f"request_id={uuid4()} status=200 duration_ms=41")
N(
    "uuid",
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names/#uids",
    f"metadata:\n  name: api-7d9f8b6c5d-x2x7k\n  uid: {uuid4()}",
)
N(
    "uuid",
    "https://learn.microsoft.com/en-us/visualstudio/msbuild/common-msbuild-project-properties",
    f"<ProjectGuid>{{{uuid4().upper()}}}</ProjectGuid>",
)
N(
    "lockfile-hash",
    "https://docs.npmjs.com/cli/v10/configuring-npm/package-lock-json",
    '"node_modules/lodash": {\n  "version": "4.17.21",\n  "resolved": "https://registry.npmjs.org/lodash/-/lodash-4.17.21.tgz",\n  "integrity": "sha512-'
    + base64.b64encode(hashlib.sha512(b"lodash").digest()).decode()
    + '"\n}',
)
N(
    "lockfile-hash",
    "https://python-poetry.org/docs/basic-usage/#installing-with-poetrylock",
    f'[[package]]\nname = "requests"\nversion = "2.32.3"\nfiles = [\n    {{file = "requests-2.32.3-py3-none-any.whl", hash = "sha256:{hashlib.sha256(b"requests").hexdigest()}"}},\n]',
)
N(
    "lockfile-hash",
    "https://go.dev/ref/mod#go-sum-files",
    f"golang.org/x/net v0.25.0 h1:{base64.b64encode(hashlib.sha256(b'net').digest()).decode()}\ngolang.org/x/net v0.25.0/go.mod h1:{base64.b64encode(hashlib.sha256(b'netmod').digest()).decode()}",
)
N(
    "lockfile-hash",
    "https://pip.pypa.io/en/stable/topics/secure-installs/",
    f"django==5.0.6 \\\n    --hash=sha256:{hashlib.sha256(b'django').hexdigest()}",
)
N(
    "docker-digest",
    "https://docs.docker.com/reference/cli/docker/image/pull/#pull-an-image-by-digest-immutable-identifier",
    f"FROM python:3.11-slim@sha256:{hashlib.sha256(b'py').hexdigest()}",
)
N(
    "docker-digest",
    "https://docs.docker.com/reference/cli/docker/image/pull/",
    f"Digest: sha256:{hashlib.sha256(b'img').hexdigest()}\nStatus: Downloaded newer image for redis:7.2",
)
N(
    "content-hash",
    "https://developer.mozilla.org/en-US/docs/Web/Security/Subresource_Integrity",
    '<script src="https://cdn.jsdelivr.net/npm/htmx.org@1.9.12/dist/htmx.min.js" integrity="sha384-'
    + base64.b64encode(hashlib.sha384(b"htmx").digest()).decode()
    + '" crossorigin="anonymous"></script>',
)
N(
    "content-hash",
    "https://webpack.js.org/guides/caching/",
    f"dist/main.{hashlib.md5(b'main').hexdigest()[:20]}.js   142 KiB  [emitted] [immutable]",
)
N(
    "content-hash",
    "https://www.gnu.org/software/coreutils/manual/html_node/sha2-utilities.html",
    f"$ sha256sum release.tar.gz\n{hashlib.sha256(b'release').hexdigest()}  release.tar.gz",
)
N(
    "ssh-public-key",
    "https://man.openbsd.org/sshd.8#AUTHORIZED_KEYS_FILE_FORMAT",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + base64.b64encode(R.randbytes(32)).decode()[:43] + " dev@laptop",
)
N(
    "ssh-public-key",
    "https://man.openbsd.org/sshd.8#AUTHORIZED_KEYS_FILE_FORMAT",
    "# authorized_keys\nssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ"
    + base64.b64encode(R.randbytes(240)).decode()
    + " ci@runner",
)
N(
    "pem-public",
    "https://www.rfc-editor.org/rfc/rfc7468#section-13",
    "-----BEGIN PUBLIC KEY-----\n" + "\n".join(pem_lines(270)) + "\n-----END PUBLIC KEY-----",
)
N(
    "pem-public",
    "https://www.rfc-editor.org/rfc/rfc7468#section-5.1",
    "ca.crt:\n-----BEGIN CERTIFICATE-----\n" + "\n".join(pem_lines(500)) + "\n-----END CERTIFICATE-----",
)
N(
    "pem-public",
    "https://www.rfc-editor.org/rfc/rfc4880",
    "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n"
    + "\n".join(pem_lines(300))
    + "\n-----END PGP PUBLIC KEY BLOCK-----",
)
N("public-key-misc", "https://age-encryption.org/v1", f"recipients.txt:\nage1{r(BECH, 58)}")
N(
    "public-key-misc",
    "https://www.wireguard.com/quickstart/",
    f"[Peer]\nPublicKey = {base64.b64encode(R.randbytes(32)).decode()}\nAllowedIPs = 10.8.0.0/24",
)
N(
    "public-key-misc",
    "https://docs.stripe.com/keys#obtain-api-keys",
    f"<script>const stripe = Stripe('pk_live_{r(AN, 24)}');</script>  <!-- publishable key, safe in the browser -->",
)
N("public-key-misc", "https://en.bitcoin.it/wiki/Invoice_address", f"Donations: bc1q{r(BECH, 38)}")
N(
    "public-key-misc",
    "https://ethereum.org/en/developers/docs/accounts/",
    f"Contract deployed at 0x{r(HEX, 40)} (block 19233811)",
)
N(
    "placeholder",
    "https://docs.github.com/en/actions/security-guides/using-secrets-in-github-actions",
    "env:\n  NPM_TOKEN: ${{ secrets.NPM_TOKEN }}\n  GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}",
)
N(
    "placeholder",
    "https://12factor.net/config",
    "export OPENAI_API_KEY=<your-api-key>\nexport DATABASE_URL=postgres://user:<password>@localhost/db",
)
N(
    "placeholder",
    "https://docs.aws.amazon.com/IAM/latest/UserGuide/security-creds.html",
    "aws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
)
N(
    "placeholder",
    "https://docs.docker.com/compose/environment-variables/",
    "POSTGRES_PASSWORD=${POSTGRES_PASSWORD:?set it in .env}",
)
N(
    "placeholder",
    "https://en.wikipedia.org/wiki/Placeholder_name",
    "api_key: xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx  # replace with yours",
)
N("placeholder", "https://en.wikipedia.org/wiki/Placeholder_name", "password: ********")
N(
    "placeholder",
    "https://docs.python.org/3/library/os.html#os.environ",
    'password = os.environ["DB_PASSWORD"]\ntoken = os.getenv("SLACK_BOT_TOKEN")',
)
N(
    "placeholder",
    "https://docs.docker.com/reference/cli/docker/login/",
    'echo "$REGISTRY_TOKEN" | docker login ghcr.io -u ci-bot --password-stdin',
)
N(
    "placeholder",
    "https://docs.github.com/en/authentication",
    "Paste your token (it starts with ghp_) into the prompt: YOUR_GITHUB_TOKEN_HERE",
)
N(
    "placeholder",
    "https://helm.sh/docs/chart_template_guide/values_files/",
    'password: {{ .Values.db.password | quote }}\napiKey: "{{ required "apiKey is required" .Values.apiKey }}"',
)
N(
    "placeholder",
    "https://kubernetes.io/docs/concepts/configuration/secret/#using-secrets-as-environment-variables",
    "env:\n- name: DB_PASSWORD\n  valueFrom:\n    secretKeyRef:\n      name: db-credentials\n      key: password",
)
N(
    "placeholder",
    "https://developer.hashicorp.com/vault/docs/commands/kv/get",
    "vault kv get -field=password secret/data/prod/db",
)
N(
    "placeholder",
    "https://www.postgresql.org/docs/current/libpq-pgpass.html",
    "The .pgpass file holds hostname:port:database:username:password, one entry a line.",
)
N(
    "version-string",
    "https://semver.org/",
    "Bumped acme-sdk from 3.14.159-rc.2+build.20261127 to 3.15.0 (see CHANGELOG).",
)
N(
    "version-string",
    "https://peps.python.org/pep-0440/",
    "Python 3.11.9 (main, Apr  2 2024, 08:25:04) [GCC 12.2.0] on linux; pip 24.0; setuptools 69.5.1",
)
N(
    "version-string",
    "https://kubernetes.io/releases/",
    "Client Version: v1.30.2\nKustomize Version: v5.0.4-0.20230601165947-6ce0bf390ce3\nServer Version: v1.29.6-eks-db838b0",
)
N(
    "base64-harmless",
    "https://www.rfc-editor.org/rfc/rfc4648",
    f"echo {base64.b64encode(b'Hello from the build server, all green today!').decode()} | base64 -d",
)
N(
    "base64-harmless",
    "https://developer.mozilla.org/en-US/docs/Web/URI/Schemes/data",
    "background: url(data:image/png;base64,"
    + base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(40)).decode()
    + ");",
)
N(
    "base64-harmless",
    "https://kubernetes.io/docs/concepts/configuration/configmap/",
    f"binaryData:\n  logo.txt: {base64.b64encode(b'ACME Corp - internal tools - ascii banner v2').decode()}",
)
N(
    "long-identifier",
    "https://docs.oracle.com/javase/specs/",
    "at org.springframework.beans.factory.support.AbstractAutowireCapableBeanFactory.initializeBean(AbstractAutowireCapableBeanFactory.java:1791)",
)
N(
    "long-identifier",
    "https://docs.pytest.org/en/stable/how-to/usage.html",
    "tests/test_promotion.py::test_promotion_request_rejects_unknown_project_and_returns_404_with_message PASSED",
)
N(
    "long-identifier",
    "https://kubernetes.io/docs/concepts/workloads/pods/",
    "pod/acme-api-deployment-7d9f8b6c5d-x2x7k   1/1   Running   0   3h12m",
)
N(
    "long-identifier",
    "https://www.rfc-editor.org/rfc/rfc7230",
    "X-Request-Trace: internal-gateway-eu-west-1-prod-blue.acme-platform.svc.cluster.local",
)
N(
    "prose-no-value",
    "https://en.wikipedia.org/wiki/Password",
    "Remember to rotate the deploy token before Friday; the password policy now needs 14 characters.",
)
N(
    "prose-no-value",
    "https://en.wikipedia.org/wiki/Password",
    "비밀번호를 잊으셨나요? 설정 > 보안에서 재설정할 수 있습니다.",
)
N(
    "prose-no-value",
    "https://en.wikipedia.org/wiki/Password",
    "パスワードの有効期限が切れました。管理者に連絡してください。",
)
N("prose-no-value", "https://en.wikipedia.org/wiki/Password", "请不要把密码写在代码里，使用密钥管理服务。")
N(
    "prose-no-value",
    "https://en.wikipedia.org/wiki/Password",
    "Das Passwort muss mindestens 12 Zeichen lang sein und darf nicht dem Benutzernamen entsprechen.",
)
N(
    "prose-no-value",
    "https://en.wikipedia.org/wiki/Password",
    "¿Olvidaste tu contraseña? Te enviaremos un enlace para restablecerla.",
)
N(
    "prose-no-value",
    "https://en.wikipedia.org/wiki/Password",
    "Le mot de passe a été changé avec succès. Le jeton d'accès précédent est révoqué.",
)
N(
    "prose-no-value",
    "https://en.wikipedia.org/wiki/Password",
    "Смена пароля и ключа API выполняется раз в квартал.",
)
N(
    "prose-no-value",
    "https://en.wikipedia.org/wiki/Lexical_analysis#Token",
    "The tokenizer splits each line into tokens; token = tokens[i] is then matched against the keyword table.",
)
N(
    "i18n-labels",
    "https://www.i18next.com/misc/json-format",
    '{\n  "login": {\n    "password": "Passwort",\n    "password_hint": "Mindestens 12 Zeichen",\n    "token_expired": "Sitzung abgelaufen"\n  }\n}',
)
N(
    "i18n-labels",
    "https://guides.rubyonrails.org/i18n.html",
    "ja:\n  password: パスワード\n  secret_question: 秘密の質問\n  api_key_label: APIキー",
)
N(
    "config-non-secret",
    "https://www.rfc-editor.org/rfc/rfc6749#section-5.1",
    '{"token_type": "Bearer", "expires_in": 3600, "scope": "read:org"}',
)
N(
    "config-non-secret",
    "https://docs.docker.com/compose/",
    "secrets:\n  db_password:\n    file: ./secrets/db_password.txt\nservices:\n  db:\n    secrets: [db_password]",
)
N(
    "config-non-secret",
    "https://www.postgresql.org/docs/current/auth-pg-hba-conf.html",
    "# TYPE  DATABASE  USER  ADDRESS       METHOD\nhost    all       all   10.0.0.0/8    scram-sha-256",
)
N(
    "config-non-secret",
    "https://docs.python.org/3/library/getpass.html",
    "password = getpass.getpass('Password: ')\nif not check(password): raise SystemExit(1)",
)
N(
    "public-url",
    "https://www.rfc-editor.org/rfc/rfc3986",
    "See https://github.com/acme/api/blob/9fceb02d0ae598e95dc970b74767f19372d61af8/docs/setup.md?plain=1#L40 for setup.",
)
N(
    "public-url",
    "https://www.rfc-editor.org/rfc/rfc3986",
    "https://www.google.com/search?q=postgres+password+authentication+failed&oq=postgres&sourceid=chrome&ie=UTF-8",
)
N(
    "public-url",
    "https://www.rfc-editor.org/rfc/rfc3986",
    "git clone https://github.com/gitleaks/gitleaks.git && cd gitleaks && make build",
)
N("public-url", "https://www.rfc-editor.org/rfc/rfc3986", "ssh://git@gitlab.acme.io:2222/platform/infra.git")
N(
    "number",
    "https://www.isbn-international.org/content/what-isbn",
    "Reference: Designing Data-Intensive Applications, ISBN 978-1-4493-7332-0.",
)
bad = luhn("4", 16)
bad = bad[:-1] + str((int(bad[-1]) + 1) % 10)
assert not luhn_ok(bad)
N(
    "number",
    "https://en.wikipedia.org/wiki/Luhn_algorithm",
    f"Order number {bad} shipped via DHL, tracking 00340434161094042557.",
)
N(
    "number",
    "https://en.wikipedia.org/wiki/E.164",
    "Call the on-call phone +49 30 901820 or +1 (415) 555-0142 if paging fails.",
)
N(
    "number",
    "https://en.wikipedia.org/wiki/Unix_time",
    "ts=1764241597123 seq=884421930 offset=7739218834 partition=3",
)
N("number", "https://en.wikipedia.org/wiki/Pi", "pi ~ 3.14159265358979323846264338327950288419716939937510")
N(
    "number",
    "https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_identifiers.html#identifiers-arns",
    "arn:aws:iam::123456789012:role/ci-deployer (account 123456789012, region us-east-1)",
)
N(
    "css-colour",
    "https://developer.mozilla.org/en-US/docs/Web/CSS/hex-color",
    ".btn-primary { color: #ffffff; background: #1a73e8; border-color: #0b57d0aa; }",
)
N(
    "css-colour",
    "https://tailwindcss.com/docs/customizing-colors",
    "colors: { brand: { 50: '#eef6ff', 500: '#3b82f6', 900: '#1e3a8a' } }",
)
N(
    "network-id",
    "https://en.wikipedia.org/wiki/MAC_address",
    "eth0: ether 02:42:ac:11:00:02  inet 172.17.0.2/16  inet6 fe80::42:acff:fe11:2/64",
)
N(
    "network-id",
    "https://stripe.com/docs/api/request_ids",
    f"Stripe request id req_{r(AN, 14)} returned 402 card_declined for charge ch_{r(AN, 24)}",
)
N(
    "network-id",
    "https://github.com/ulid/spec",
    f"event 01J{r('0123456789ABCDEFGHJKMNPQRSTVWXYZ', 23)} appended to stream orders-42",
)
N(
    "ansible-vault-ref",
    "https://docs.ansible.com/ansible/latest/vault_guide/index.html",
    'db_password: "{{ vault_db_password }}"  # encrypted in group_vars/prod/vault.yml',
)
N(
    "stack-trace",
    "https://docs.python.org/3/library/traceback.html",
    'Traceback (most recent call last):\n  File "/app/auth.py", line 88, in verify\n    raise InvalidToken("token signature mismatch")\nauth.InvalidToken: token signature mismatch',
)
N(
    "diff-no-secret",
    "https://git-scm.com/docs/git-diff",
    "-    timeout_seconds: 30\n+    timeout_seconds: 45\n     password_min_length: 12",
)


# ---------------------------------------------------------------- split, check, write
def halves(families: list[str], seed: int) -> dict[str, str]:
    fams = sorted(set(families))
    random.Random(seed).shuffle(fams)
    cut = (len(fams) + 1) // 2
    return {f: ("tune" if i < cut else "heldout") for i, f in enumerate(fams)}


def main() -> None:
    sh = halves([str(s["family"]) for s in secrets], SPLIT_SEED)
    nh = halves([str(n["family"]) for n in near], SPLIT_SEED)
    for s in secrets:
        s["half"] = sh[str(s["family"])]
    for n in near:
        n["half"] = nh[str(n["family"])]
    with open(HERE / "secrets.jsonl", "w", encoding="utf-8") as fh:
        for s in secrets:
            fh.write(json.dumps(s, ensure_ascii=False) + "\n")
    with open(HERE / "near_misses.jsonl", "w", encoding="utf-8") as fh:
        for n in near:
            fh.write(json.dumps(n, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
