# ruff: noqa: E501
"""Write the fifth redaction corpus (secrets in free-text notes and prose) from fixed seeds.

Every value is synthesised here: random characters of a vendor's documented prefix, length and alphabet, so
none is a live credential. Each family draws from its own `random.Random(f"q5:{family}")`, so adding or
reordering families does not change the others, and rerunning this script reproduces both files byte for byte.

    python tests/data/redaction_fifth/make_corpus.py
"""

from __future__ import annotations

import base64
import json
import math
import random
import re
import string
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
SPLIT_SEED = 5022

Gen = Callable[[random.Random], str]

ALNUM = string.ascii_letters + string.digits
LOWER_ALNUM = string.ascii_lowercase + string.digits
UPPER_ALNUM = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"
B64 = string.ascii_letters + string.digits + "+/"
B64URL = string.ascii_letters + string.digits + "-_"
BASE32 = string.ascii_uppercase + "234567"
PW_SYMBOLS = "!#%*?"


def chars(alphabet: str, n: int) -> Gen:
    return lambda rng: "".join(rng.choice(alphabet) for _ in range(n))


def an(n: int) -> Gen:
    return chars(ALNUM, n)


def lo(n: int) -> Gen:
    return chars(LOWER_ALNUM, n)


def up(n: int) -> Gen:
    return chars(UPPER_ALNUM, n)


def hx(n: int) -> Gen:
    return chars(HEX, n)


def b64(n: int) -> Gen:
    return chars(B64, n)


def b64u(n: int) -> Gen:
    return chars(B64URL, n)


def digits(n: int) -> Gen:
    return lambda rng: str(rng.randint(1, 9)) + "".join(rng.choice(string.digits) for _ in range(n - 1))


def pre(prefix: str, gen: Gen, suffix: str = "") -> Gen:
    return lambda rng: prefix + gen(rng) + suffix


def cat(*gens: Gen | str) -> Gen:
    return lambda rng: "".join(g if isinstance(g, str) else g(rng) for g in gens)


def uuid4(rng: random.Random) -> str:
    h = hx(32)(rng)
    h = h[:12] + "4" + h[13:16] + rng.choice("89ab") + h[17:]
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def password(lo_len: int = 6, hi_len: int = 9, symbols: bool = True) -> Gen:
    """A short human password: letters and digits (and sometimes a symbol), at least one of each class."""

    def gen(rng: random.Random) -> str:
        n = rng.randint(lo_len, hi_len)
        body = [
            rng.choice(string.ascii_lowercase),
            rng.choice(string.ascii_uppercase),
            rng.choice(string.digits),
        ]
        pool = ALNUM + (PW_SYMBOLS if symbols else "")
        body += [rng.choice(pool) for _ in range(n - 3)]
        rng.shuffle(body)
        return "".join(body)

    return gen


def url_password(lo_len: int = 8, hi_len: int = 16) -> Gen:
    return password(lo_len, hi_len, symbols=False)


def basic_auth(user: str, pw: Gen) -> Gen:
    return lambda rng: base64.b64encode(f"{user}:{pw(rng)}".encode()).decode()


def b64_of(inner: Gen) -> Gen:
    return lambda rng: base64.b64encode(inner(rng).encode()).decode()


def jwt(claims: Callable[[random.Random], dict[str, object]]) -> Gen:
    def gen(rng: random.Random) -> str:
        def enc(obj: dict[str, object]) -> str:
            raw = json.dumps(obj, separators=(",", ":")).encode()
            return base64.urlsafe_b64encode(raw).decode().rstrip("=")

        return f"{enc({'alg': 'HS256', 'typ': 'JWT'})}.{enc(claims(rng))}.{b64u(43)(rng)}"

    return gen


def pem_body(rng: random.Random, lines: int, first: str = "MII") -> list[str]:
    out = [first + b64(64 - len(first))(rng)]
    out += [b64(64)(rng) for _ in range(lines - 1)]
    return out


@dataclass
class Family:
    """One credential kind (or one language's way of stating one) and the texts that carry it."""

    name: str
    source: str
    templates: list[str]
    gens: dict[str, Gen] = field(default_factory=dict)
    public: tuple[str, ...] = ()  # generated values that are not secret (ids, user names)
    build: Callable[[random.Random], list[tuple[str, list[str]]]] | None = None


PLACEHOLDER = re.compile(r"\{(\w+)\}")


def render(fam: Family) -> list[tuple[str, list[str]]]:
    rng = random.Random(f"q5:{fam.name}")
    if fam.build is not None:
        return fam.build(rng)
    out: list[tuple[str, list[str]]] = []
    for template in fam.templates:
        vals = {k: g(rng) for k, g in fam.gens.items()}
        # Templates escape literal braces as in str.format ("{{" for "{"); values never contain braces.
        text = PLACEHOLDER.sub(lambda m, v=vals: v.get(m[1], m[0]), template)
        text = text.replace("{{", "{").replace("}}", "}")
        secrets: list[str] = []
        for m in PLACEHOLDER.finditer(template):
            key = m[1]
            if key in vals and key not in fam.public and vals[key] not in secrets:
                secrets.append(vals[key])
        out.append((text, secrets))
    return out


def halves(families: list[str]) -> dict[str, str]:
    names = sorted(set(families))
    random.Random(SPLIT_SEED).shuffle(names)
    cut = math.ceil(len(names) / 2)
    return {n: ("tune" if i < cut else "heldout") for i, n in enumerate(names)}


# --------------------------------------------------------------------------------------------------------
# Families built by hand: split lines, PEM bodies pasted into prose.
# --------------------------------------------------------------------------------------------------------


def build_pem_mid_sentence(rng: random.Random) -> list[tuple[str, list[str]]]:
    out = []
    body = pem_body(rng, 4)
    out.append(
        (
            "ok here is the deploy key so you can unblock the release: -----BEGIN RSA PRIVATE KEY----- "
            + " ".join(body)
            + " -----END RSA PRIVATE KEY----- please delete this message after you copied it",
            body,
        )
    )
    body = pem_body(rng, 3, first="MIG")
    out.append(
        (
            "Approval note: signing key for the webhook verifier is -----BEGIN PRIVATE KEY-----"
            + "".join(body)
            + "-----END PRIVATE KEY----- (pasted on one line by the chat client); rotate after the audit.",
            body,
        )
    )
    body = pem_body(rng, 3, first="MHc")
    out.append(
        (
            "The EC key that the ingest agent uses (-----BEGIN EC PRIVATE KEY-----\\n"
            + "\\n".join(body)
            + "\\n-----END EC PRIVATE KEY-----) ended up in the task description, see TASK-4417.",
            body,
        )
    )
    return out


def build_split_token(rng: random.Random) -> list[tuple[str, list[str]]]:
    out = []
    tok = "ghp_" + an(36)(rng)
    a, b = tok[:20], tok[20:]
    out.append(
        (
            f"terminal wrapped it, so the token is {a}\n{b} (join the two lines), it expires tonight",
            [a, b],
        )
    )
    key = "sk-or-v1-" + hx(64)(rng)
    a, b, c = key[:25], key[25:50], key[50:]
    out.append(
        (
            f'OPENROUTER_KEY="{a}" \\\n  "{b}" \\\n  "{c}"   # split so the linter would not flag it',
            [a, b, c],
        )
    )
    secret = an(40)(rng)
    a, b = secret[:22], secret[22:]
    out.append(
        (
            f"2026-11-12T08:14:03Z worker-3 WARN config dump truncated: aws_secret_access_key={a}\n2026-11-12T08:14:03Z worker-3 WARN (cont.) {b}",
            [a, b],
        )
    )
    return out


def build_split_password_chat(rng: random.Random) -> list[tuple[str, list[str]]]:
    out = []
    pw1 = password(10, 12)(rng)
    out.append(
        (
            f"[10:02] ana: what's the staging db password again?\n[10:02] ben: {pw1}\n[10:03] ben: same for the replica",
            [pw1],
        )
    )
    pw2 = password(12, 14)(rng)
    a, b = pw2[:6], pw2[6:]
    out.append(
        (
            f"[14:20] ops-bot: vault is sealed, unseal share part one: {a}\n[14:21] ops-bot: part two: {b}",
            [a, b],
        )
    )
    return out


def build_multiline_netrc_prose(rng: random.Random) -> list[tuple[str, list[str]]]:
    pw = url_password(10, 12)(rng)
    tok = "glpat-" + b64u(20)(rng)
    return [
        (
            f"Task: make the mirror job work again. It reads ~/.netrc, which should say\n  machine git.internal.example\n  login mirror-bot\n  password {pw}\nand the GitLab side wants {tok} as the password for the https remote.",
            [pw, tok],
        ),
    ]


# --------------------------------------------------------------------------------------------------------
# Secret families.
# --------------------------------------------------------------------------------------------------------

GH = "https://docs.github.com/en/authentication/keeping-your-account-and-data-secure/about-authentication-to-github#githubs-token-formats"

SECRET_FAMILIES: list[Family] = [
    # ---- code hosting, CI, registries, value before the word naming it -------------------------------
    Family(
        "github_classic_pat_value_first",
        GH,
        [
            "use {a} as the token for the release bot, the old one was revoked",
            "fix(ci): {a} is the PAT the nightly job needs, put it in the org secret not the yaml",
            "{a} ← that's the github token, don't paste it anywhere else",
        ],
        {"a": pre("ghp_", an(36))},
    ),
    Family(
        "github_oauth_token_chat",
        GH,
        [
            "hey, my gh cli session token is {a}, can you check why it gets 403 on the org repos?",
            "debug: gh auth status printed Token: {a} for account octo-dev",
        ],
        {"a": pre("gho_", an(36))},
    ),
    Family(
        "github_app_installation_token_log",
        GH,
        [
            "2026-11-02 09:31:44,120 DEBUG github.app installation 48213377 token {a} expires_at=2026-11-02T10:31:44Z",
            'INFO push rejected; retrying with installation token {a} (repo "infra/terraform")',
        ],
        {"a": pre("ghs_", an(36))},
    ),
    Family(
        "github_refresh_token_note",
        GH,
        [
            "Note for the next agent: the OAuth app refresh token is {a}; the access token expires every 8h.",
            "{a} is the ghr refresh token from the device flow, store it in the keyring",
        ],
        {"a": pre("ghr_", an(36))},
    ),
    Family(
        "gitlab_runner_token_task",
        "https://docs.gitlab.com/ee/security/token_overview.html#token-prefixes",
        [
            "Task description: register the new runner on build-07 with {a} (runner authentication token).",
            "gitlab-runner register --url https://gitlab.example.org --token {a} --executor docker",
        ],
        {"a": pre("glrt-", b64u(20))},
    ),
    Family(
        "gitlab_deploy_token_url",
        "https://docs.gitlab.com/ee/user/project/deploy_tokens/",
        [
            "the helm chart pulls from https://gitlab+deploy-token-1182:{a}@gitlab.example.org/platform/charts.git",
            "deploy token {a} (user gitlab+deploy-token-77) only has read_registry",
        ],
        {"a": pre("gldt-", b64u(20))},
    ),
    Family(
        "gitlab_pat_commit_message",
        "https://docs.gitlab.com/ee/user/profile/personal_access_tokens.html",
        [
            'Revert "ci: hard-code token"\n\nThis reverts commit 4e1b0c2. The commit contained {a} in .gitlab-ci.yml.',
            "chore: remove {a} from scripts/sync.sh (leaked PAT, already revoked)",
        ],
        {"a": pre("glpat-", b64u(20))},
    ),
    Family(
        "npm_token_shell_history",
        "https://docs.npmjs.com/about-access-tokens",
        [
            "  511  echo //registry.npmjs.org/:_authToken={a} >> ~/.npmrc\n  512  npm publish --access public",
            "npm token {a} (automation, bypasses 2FA) is what the publish job uses",
        ],
        {"a": pre("npm_", an(36))},
    ),
    Family(
        "pypi_token_prose",
        "https://pypi.org/help/#apitoken",
        [
            "For the upload use __token__ as the user name and {a} as the password.",
            "twine upload -u __token__ -p {a} dist/*",
        ],
        {"a": pre("pypi-AgEIcHlwaS5vcmc", b64u(70))},
    ),
    Family(
        "rubygems_api_key",
        "https://guides.rubygems.org/api-key-scopes/",
        [
            "gem push failed, set GEM_HOST_API_KEY={a} and retry",
            "the rubygems key {a} belongs to the old maintainer account",
        ],
        {"a": pre("rubygems_", hx(48))},
    ),
    Family(
        "crates_io_token",
        "https://doc.rust-lang.org/cargo/reference/registry-authentication.html",
        [
            "cargo login {a}",
            "crates.io token {a} has publish-update scope for loregate-* crates only",
        ],
        {"a": pre("cio", an(32))},
    ),
    Family(
        "nuget_api_key",
        "https://learn.microsoft.com/en-us/nuget/nuget-org/scoped-api-keys",
        [
            "dotnet nuget push bin/Release/*.nupkg --api-key {a} --source https://api.nuget.org/v3/index.json",
            "nuget key {a} expires in 365 days",
        ],
        {"a": pre("oy2", lo(43))},
    ),
    Family(
        "docker_hub_pat",
        "https://docs.docker.com/security/for-developers/access-tokens/",
        [
            "docker login -u ci-bot with {a} as the password (it's a PAT, read/write)",
            "echo {a} | docker login --username ci-bot --password-stdin",
        ],
        {"a": pre("dckr_pat_", b64u(27))},
    ),
    Family(
        "azure_devops_pat",
        "https://learn.microsoft.com/en-us/azure/devops/organizations/accounts/use-personal-access-tokens-to-authenticate",
        [
            "az devops login — paste {a} when it asks for the token",
            "ADO pat {a} (scope Code: Read & write), owner: build-svc",
        ],
        {"a": chars("abcdefghijklmnopqrstuvwxyz234567", 52)},
    ),
    Family(
        "buildkite_agent_token",
        "https://buildkite.com/docs/apis/managing-api-access-tokens",
        [
            "buildkite api token {a} for the pipeline-sync script",
            "Approved — use {a} for the Buildkite REST calls during the migration window only.",
        ],
        {"a": pre("bkua_", hx(40))},
    ),
    Family(
        "jenkins_api_token",
        "https://www.jenkins.io/doc/book/system-administration/authenticating-scripted-clients/",
        [
            "curl -X POST -u deployer:{a} https://jenkins.example.net/job/release/build",
            "Jenkins API token for deployer is {a}",
        ],
        {"a": pre("11", hx(32))},
    ),
    Family(
        "sonarqube_token",
        "https://docs.sonarsource.com/sonarqube/latest/user-guide/user-account/generating-and-using-tokens/",
        [
            "mvn sonar:sonar -Dsonar.token={a}",
            "sonar user token {a} — analysis only",
        ],
        {"a": pre("squ_", hx(40))},
    ),
    Family(
        "jfrog_identity_token",
        "https://jfrog.com/help/r/jfrog-platform-administration-documentation/access-tokens",
        [
            "artifactory api key {a} (legacy, to be replaced by an access token)",
            "jf c add ci --url https://acme.jfrog.io --access-token {a}",
        ],
        {"a": pre("AKCp", an(69))},
    ),
    Family(
        "postman_api_key",
        "https://learning.postman.com/docs/developer/postman-api/authentication/",
        [
            "X-Api-Key: {a}",
            "postman key {a} for the collection runner",
        ],
        {"a": cat("PMAK-", hx(24), "-", hx(34))},
    ),
    Family(
        "terraform_cloud_token",
        "https://developer.hashicorp.com/terraform/cloud-docs/users-teams-organizations/api-tokens",
        [
            'credentials "app.terraform.io" {{ token = "{a}" }} — that block is in my ~/.terraformrc',
            "TFC team token {a}",
        ],
        {"a": cat(an(14), ".atlasv1.", an(67))},
    ),
    Family(
        "vault_legacy_token",
        "https://developer.hashicorp.com/vault/docs/concepts/tokens#token-prefixes",
        [
            "vault login {a}",
            "root token {a} from the init output, keep it offline",
        ],
        {"a": pre("s.", an(24))},
    ),
    # ---- cloud: regional and less common ------------------------------------------------------------
    Family(
        "tencent_cloud_keypair",
        "https://www.tencentcloud.com/document/product/598/32675",
        [
            "腾讯云的 SecretId 是 {a}，SecretKey 是 {b}，只给 COS 上传用。",
            "export TENCENTCLOUD_SECRET_ID={a} TENCENTCLOUD_SECRET_KEY={b}",
        ],
        {"a": pre("AKID", an(32)), "b": an(32)},
    ),
    Family(
        "huawei_cloud_aksk",
        "https://support.huaweicloud.com/intl/en-us/usermanual-ca/ca_01_0003.html",
        [
            "华为云 AK {a} SK {b}，OBS 桶 backup-cn-north-4",
            "obsutil config -i={a} -k={b} -e=obs.cn-north-4.myhuaweicloud.com",
        ],
        {"a": up(20), "b": an(40)},
    ),
    Family(
        "baidu_cloud_aksk",
        "https://intl.cloud.baidu.com/doc/Reference/s/9jwvz2egb-en",
        [
            "百度智能云 access key {a}，secret key {b}，用于 BOS",
            "bce configure: Access Key ID [{a}] Secret Access Key [{b}]",
        ],
        {"a": hx(32), "b": hx(32)},
    ),
    Family(
        "volcengine_access_key",
        "https://www.volcengine.com/docs/6291/65568",
        [
            "火山引擎 AccessKey {a}，SecretAccessKey {b}",
            "VOLC_ACCESSKEY={a} VOLC_SECRETKEY={b} python sync_tos.py",
        ],
        {"a": pre("AKLT", b64u(43)), "b": b64(60)},
    ),
    Family(
        "qiniu_aksk",
        "https://developer.qiniu.com/kodo/1289/python",
        [
            "七牛的 AK 是 {a} SK 是 {b}",
            "qshell account {a} {b} backup-bot",
        ],
        {"a": b64u(40), "b": b64u(40)},
    ),
    Family(
        "yandex_cloud_api_key",
        "https://yandex.cloud/en/docs/iam/concepts/authorization/api-key",
        [
            "API-ключ сервисного аккаунта: {a}, используйте его в заголовке Authorization: Api-Key",
            "curl -H 'Authorization: Api-Key {a}' https://llm.api.cloud.yandex.net/foundationModels/v1/completion",
        ],
        {"a": pre("AQVN", b64u(36))},
    ),
    Family(
        "yandex_cloud_iam_token",
        "https://yandex.cloud/en/docs/iam/concepts/authorization/iam-token",
        [
            "IAM-токен {a} действует 12 часов",
            "yc iam create-token вывел {a}, я положил его в переменную YC_TOKEN",
        ],
        {"a": pre("t1.9euelZ", b64u(150))},
    ),
    Family(
        "yandex_static_access_key",
        "https://yandex.cloud/en/docs/iam/concepts/authorization/access-key",
        [
            "статический ключ: идентификатор {a}, секрет {b} — для Object Storage",
            "aws configure --profile yc: key id {a}, secret {b}",
        ],
        {"a": pre("YCAJE", b64u(20)), "b": pre("YCM", b64u(37))},
    ),
    Family(
        "naver_cloud_keys",
        "https://api.ncloud-docs.com/docs/en/common-ncpapi",
        [
            "네이버 클라우드 Access Key ID {a} / Secret Key {b} 로 Object Storage 접근",
            "ncloud configure 에 {a} 넣고 secret 은 {b}",
        ],
        {"a": up(20), "b": an(40)},
    ),
    Family(
        "kakao_rest_api_key",
        "https://developers.kakao.com/docs/latest/en/getting-started/app#app-key",
        [
            "카카오 REST API 키는 {a} 입니다. 로그인 리다이렉트에 사용하세요.",
            "curl -H 'Authorization: KakaoAK {a}' https://dapi.kakao.com/v2/local/search/address.json",
        ],
        {"a": hx(32)},
    ),
    Family(
        "line_channel_access_token",
        "https://developers.line.biz/en/docs/basics/channel-access-token/",
        [
            "LINE の長期チャネルアクセストークンは {a} です。Bot の push に使います。",
            "Authorization: Bearer {a}",
        ],
        {"a": cat(b64(171), "=")},
    ),
    Family(
        "oci_auth_token",
        "https://docs.oracle.com/en-us/iaas/Content/Registry/Tasks/registrygettingauthtoken.htm",
        [
            "docker login fra.ocir.io -u 'frxyz/oracleidentitycloudservice/ci@example.com' -p '{a}'",
            "OCI auth token {a} (shown once, copied from the console)",
        ],
        {"a": chars(ALNUM + "()<>;:.-+", 20)},
    ),
    Family(
        "ibm_cloud_api_key",
        "https://cloud.ibm.com/docs/account?topic=account-userapikey",
        [
            "ibmcloud login --apikey {a} -r eu-de",
            "IBM Cloud API key {a}, owner platform-automation",
        ],
        {"a": b64u(44)},
    ),
    Family(
        "scaleway_keys",
        "https://www.scaleway.com/en/docs/identity-and-access-management/iam/how-to/create-api-keys/",
        [
            "Clé d'accès Scaleway {a}, clé secrète {b} : à mettre dans le coffre, pas dans le ticket.",
            "SCW_ACCESS_KEY={a} SCW_SECRET_KEY={b} scw instance server list",
        ],
        {"a": pre("SCW", up(17)), "b": uuid4},
    ),
    Family(
        "ovh_api_credentials",
        "https://help.ovhcloud.com/csm/en-gb-api-getting-started-ovhcloud-api",
        [
            "OVH : application secret {a} et consumer key {b} pour le script DNS",
            "ovh.conf → application_secret={a}, consumer_key={b}",
        ],
        {"a": an(32), "b": an(32)},
    ),
    Family(
        "hetzner_cloud_token",
        "https://docs.hetzner.cloud/#authentication",
        [
            "Hetzner-API-Token {a} gehört zum Projekt build-farm, bitte nur lesend nutzen.",
            "hcloud context create ci  # token: {a}",
        ],
        {"a": an(64)},
    ),
    Family(
        "ionos_api_token",
        "https://docs.ionos.com/cloud/set-up-ionos-cloud/management/identity-access-management/token-manager",
        [
            "IONOS Token für Terraform: {a} (läuft am 31.12. ab)",
            "export IONOS_TOKEN={a}",
        ],
        {
            "a": jwt(
                lambda r: {
                    "iss": "ionoscloud",
                    "iat": r.randint(1700000000, 1790000000),
                    "kid": uuid4(r),
                    "identity": {"contractNumber": r.randint(10000000, 99999999)},
                }
            )
        },
    ),
    Family(
        "linode_pat",
        "https://techdocs.akamai.com/linode-api/reference/get-started#personal-access-tokens",
        [
            "linode-cli configure --token {a}",
            "linode token {a}",
        ],
        {"a": hx(64)},
    ),
    Family(
        "vultr_api_key",
        "https://www.vultr.com/api/#section/Authentication",
        [
            "vultr api key {a} — ACL restricted to the office IP",
            "Authorization: Bearer {a} (Vultr)",
        ],
        {"a": up(36)},
    ),
    Family(
        "backblaze_b2_key",
        "https://www.backblaze.com/docs/cloud-storage-application-keys",
        [
            "b2 authorize-account {a} {b}",
            "B2 keyID {a} applicationKey {b} (bucket-restricted)",
        ],
        {"a": pre("005", hx(22)), "b": pre("K005", b64(27))},
        public=("a",),
    ),
    Family(
        "aws_presigned_url",
        "https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-query-string-auth.html",
        [
            "download link for the auditor (valid 7 days): https://exports-prod.s3.eu-central-1.amazonaws.com/q3.tar.gz?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA{k}%2F20261102%2Feu-central-1%2Fs3%2Faws4_request&X-Amz-Date=20261102T101500Z&X-Amz-Expires=604800&X-Amz-SignedHeaders=host&X-Amz-Signature={a}",
            "signed url …&X-Amz-Security-Token={t}&X-Amz-Signature={a}",
        ],
        {"k": up(16), "a": hx(64), "t": pre("IQoJb3JpZ2luX2VjE", b64(180))},
    ),
    Family(
        "gcs_signed_url",
        "https://cloud.google.com/storage/docs/access-control/signed-urls",
        [
            "share this with the vendor: https://storage.googleapis.com/acme-dumps/db.sql.gz?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Credential=dumper%40acme.iam.gserviceaccount.com%2F20261102%2Fauto%2Fstorage%2Fgoog4_request&X-Goog-Date=20261102T090000Z&X-Goog-Expires=86400&X-Goog-SignedHeaders=host&X-Goog-Signature={a}",
        ],
        {"a": hx(512)},
    ),
    Family(
        "cloudfront_signed_url",
        "https://docs.aws.amazon.com/AmazonCloudFront/latest/DeveloperGuide/private-content-creating-signed-url-canned-policy.html",
        [
            "video link https://d111111abcdef8.cloudfront.net/lesson-4.mp4?Expires=1793577600&Signature={a}&Key-Pair-Id=K2JCJMDEHXQW5F",
        ],
        {"a": cat(b64u(160), "__")},
    ),
    Family(
        "azure_function_key_url",
        "https://learn.microsoft.com/en-us/azure/azure-functions/function-keys-how-to",
        [
            "the webhook target is https://ingest-fn.azurewebsites.net/api/receive?code={a} — don't share outside the team",
            "function key {a} (default host key)",
        ],
        {"a": cat(b64u(54), "==")},
    ),
    Family(
        "firebase_fcm_server_key",
        "https://firebase.google.com/docs/cloud-messaging/auth-server",
        [
            "legacy FCM server key {a} still used by the android push service",
            "Authorization: key={a}",
        ],
        {"a": cat("AAAA", b64u(7), ":APA91b", b64u(134))},
    ),
    # ---- databases and DSNs -------------------------------------------------------------------------
    Family(
        "planetscale_password_dsn",
        "https://planetscale.com/docs/concepts/connection-strings",
        [
            "DATABASE_URL is mysql://k2x9a8n1m0q7:{a}@aws.connect.psdb.cloud/shop?sslaccept=strict",
            "planetscale branch password {a} for main",
        ],
        {"a": pre("pscale_pw_", b64u(43))},
    ),
    Family(
        "neon_dsn",
        "https://neon.tech/docs/connect/connect-from-any-app",
        [
            "connect with postgresql://neondb_owner:{a}@ep-cool-darkness-123456.eu-central-1.aws.neon.tech/neondb?sslmode=require",
            "neon password is {a}",
        ],
        {"a": pre("npg_", an(12))},
    ),
    Family(
        "upstash_redis_url",
        "https://upstash.com/docs/redis/howto/connectclient",
        [
            "REDIS_URL=rediss://default:{a}@eu1-keen-lynx-38721.upstash.io:6379",
            "upstash rest token {a}",
        ],
        {"a": cat("A", b64u(59))},
    ),
    Family(
        "mongodb_atlas_dsn_prose",
        "https://www.mongodb.com/docs/manual/reference/connection-string/",
        [
            "Please run the backfill against mongodb+srv://etl:{a}@cluster0.ab1cd.mongodb.net/events?retryWrites=true — it's read-write, be careful.",
            'mongosh "mongodb+srv://cluster0.ab1cd.mongodb.net/" --username etl --password {a}',
        ],
        {"a": url_password()},
    ),
    Family(
        "cockroach_dsn",
        "https://www.cockroachlabs.com/docs/stable/connection-parameters",
        [
            "cockroach sql --url 'postgresql://maxroach:{a}@free-tier.gcp-us-central1.cockroachlabs.cloud:26257/defaultdb?sslmode=verify-full'",
        ],
        {"a": an(22)},
    ),
    Family(
        "clickhouse_https_url",
        "https://clickhouse.com/docs/en/interfaces/http",
        [
            "curl 'https://default:{a}@abc123.eu-west-1.aws.clickhouse.cloud:8443/?query=SELECT%201'",
            "clickhouse-client --host abc123.clickhouse.cloud --secure --password {a}",
        ],
        {"a": chars(ALNUM + "~_.", 18)},
    ),
    Family(
        "snowflake_jdbc_password",
        "https://docs.snowflake.com/en/developer-guide/jdbc/jdbc-configure",
        [
            "jdbc:snowflake://xy12345.eu-central-1.snowflakecomputing.com/?user=LOADER&password={a}&warehouse=ETL_WH",
            "snowsql -a xy12345 -u loader, password {a}",
        ],
        {"a": url_password(10, 14)},
    ),
    Family(
        "mssql_odbc_pwd",
        "https://learn.microsoft.com/en-us/sql/connect/odbc/dsn-connection-string-attribute",
        [
            "Driver={{ODBC Driver 18 for SQL Server}};Server=tcp:sql-prod.database.windows.net,1433;Uid=reporter;Pwd={a};Encrypt=yes;",
            "the report service connects with Uid=reporter and Pwd={a}",
        ],
        {"a": password(9, 12)},
    ),
    Family(
        "oracle_sqlplus_connect",
        "https://docs.oracle.com/en/database/oracle/oracle-database/19/sqpug/SQL-Plus-command-line.html",
        [
            "sqlplus scott/{a}@//db-ora-01.example.com:1521/ORCLPDB1",
            "$ sqlplus system/{a} as sysdba",
        ],
        {"a": password(8, 10, symbols=False)},
    ),
    Family(
        "go_mysql_dsn",
        "https://github.com/go-sql-driver/mysql#dsn-data-source-name",
        [
            'db, err := sql.Open("mysql", "app:{a}@tcp(10.0.4.12:3306)/orders?parseTime=true")',
            "DSN app:{a}@tcp(mysql.internal:3306)/orders was printed in the panic message",
        ],
        {"a": url_password()},
    ),
    Family(
        "sqlalchemy_url_traceback",
        "https://docs.sqlalchemy.org/en/20/core/engines.html#database-urls",
        [
            'Traceback (most recent call last):\n  File "/app/etl/load.py", line 41, in <module>\n    engine = create_engine("postgresql+psycopg://etl:{a}@pg-replica:5432/warehouse")\nsqlalchemy.exc.OperationalError: connection refused',
            "sqlalchemy.exc.OperationalError: (pymysql.err.OperationalError) (1045, \"Access denied for user 'etl'@'10.1.2.3'\") URL: mysql+pymysql://etl:{a}@mysql-01/warehouse",
        ],
        {"a": url_password()},
    ),
    Family(
        "java_jdbc_exception",
        "https://jdbc.postgresql.org/documentation/use/#connection-parameters",
        [
            'org.postgresql.util.PSQLException: FATAL: password authentication failed for user "billing"\n\tat org.postgresql.core.v3.ConnectionFactoryImpl.doAuthentication(ConnectionFactoryImpl.java:693)\n\t... url=jdbc:postgresql://pg-billing:5432/billing?user=billing&password={a}',
        ],
        {"a": url_password()},
    ),
    Family(
        "neo4j_bolt_url",
        "https://neo4j.com/docs/operations-manual/current/configuration/connectors/",
        [
            "NEO4J_URI=neo4j+s://neo4j:{a}@7f3a1b2c.databases.neo4j.io",
            "neo4j auth is neo4j/{a} (set via NEO4J_AUTH)",
        ],
        {"a": b64u(43)},
    ),
    Family(
        "influxdb_token",
        "https://docs.influxdata.com/influxdb/v2/admin/tokens/",
        [
            "influx config create -n prod -u https://influx.example.net -t {a} -o acme",
            "all-access influx token {a}",
        ],
        {"a": cat(b64u(86), "==")},
    ),
    Family(
        "kafka_sasl_jaas",
        "https://kafka.apache.org/documentation/#security_sasl_plain_clientconfig",
        [
            'sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="ZX4TQ7QJH2S4VPUA" password="{a}";',
            "Confluent API key ZX4TQ7QJH2S4VPUA with secret {a} for the orders cluster",
        ],
        {"a": b64(64)},
    ),
    Family(
        "redis_cli_auth",
        "https://redis.io/docs/latest/develop/tools/cli/",
        [
            "  204  redis-cli -h cache-01 -a {a} --no-auth-warning FLUSHDB",
            "AUTH {a}",
        ],
        {"a": password(8, 12, symbols=False)},
    ),
    Family(
        "elasticsearch_api_key",
        "https://www.elastic.co/guide/en/elasticsearch/reference/current/security-api-create-api-key.html",
        [
            "curl -H 'Authorization: ApiKey {a}' https://es.example.net:9200/_cat/indices",
            "the encoded elastic api key is {a}",
        ],
        {"a": b64_of(cat(b64u(20), ":", b64u(22)))},
    ),
    # ---- basic auth, URLs with userinfo, shell history ----------------------------------------------
    Family(
        "basic_auth_header_log",
        "https://www.rfc-editor.org/rfc/rfc7617",
        [
            '10.0.3.7 - - [02/Nov/2026:10:12:09 +0000] "GET /metrics HTTP/1.1" 200 512 "-" "curl/8.5" "Authorization: Basic {a}"',
            "request headers: {{'Authorization': 'Basic {a}', 'Accept': 'application/json'}}",
            'curl -H "Authorization: Basic {a}" https://registry.internal/v2/_catalog',
        ],
        {"a": basic_auth("svc-registry", url_password(10, 14))},
    ),
    Family(
        "basic_auth_prose",
        "https://www.rfc-editor.org/rfc/rfc7617",
        [
            "the partner API wants basic auth, header value {a}",
            "{a} is the base64 user:pass for the grafana datasource",
        ],
        {"a": basic_auth("partner-acme", url_password(8, 12))},
    ),
    Family(
        "https_userinfo_git_remote",
        "https://www.rfc-editor.org/rfc/rfc3986#section-3.2.1",
        [
            "git remote set-url origin https://deploy:{a}@git.example.org/platform/infra.git",
            "fatal: unable to access 'https://deploy:{a}@git.example.org/platform/infra.git/': Could not resolve host",
        ],
        {"a": url_password()},
    ),
    Family(
        "https_userinfo_prose",
        "https://www.rfc-editor.org/rfc/rfc3986#section-3.2.1",
        [
            "Try https://admin:{a}@grafana.staging.example.com/d/abc — the dashboard is behind basic auth",
            "pip install --index-url https://ci:{a}@pypi.internal.example.com/simple/ loregate-plugins",
            "proxy is http://alice:{a}@proxy.corp:3128, set it in HTTPS_PROXY",
        ],
        {"a": url_password(6, 12)},
    ),
    Family(
        "ftp_sftp_url",
        "https://www.rfc-editor.org/rfc/rfc1738",
        [
            "the supplier drops files at ftp://edi_upload:{a}@ftp.supplier.example:21/inbound/",
            "lftp sftp://edi:{a}@sftp.partner.example -e 'mirror /out /data/in; quit'",
        ],
        {"a": url_password(8, 10)},
    ),
    Family(
        "smtp_url",
        "https://docs.djangoproject.com/en/stable/topics/email/",
        [
            "EMAIL_URL=smtp+tls://noreply@example.com:{a}@smtp.example.com:587",
            "smtp://apikey:{a}@smtp.relay.example:587",
        ],
        {"a": url_password(10, 16)},
    ),
    Family(
        "shell_history_mysql",
        "https://dev.mysql.com/doc/refman/8.0/en/password-security-user.html",
        [
            "  88  mysql -u root -p{a} -h 127.0.0.1 shop\n  89  history | tail",
            "$ mysqladmin -uroot -p{a} status",
        ],
        {"a": password(6, 9, symbols=False)},
    ),
    Family(
        "shell_history_htpasswd",
        "https://httpd.apache.org/docs/2.4/programs/htpasswd.html",
        [
            "  301  htpasswd -bc /etc/nginx/.htpasswd kibana {a}",
            "sudo htpasswd -b /etc/nginx/.htpasswd reviewer {a}",
        ],
        {"a": password(6, 9)},
    ),
    Family(
        "shell_history_export",
        "https://www.gnu.org/software/bash/manual/html_node/Bash-History-Builtins.html",
        [
            "  17  export PGPASSWORD={a}\n  18  psql -h pg-01 -U app app",
            "  42  export SMTP_PASSWORD='{a}'; ./send_digest.sh",
        ],
        {"a": password(7, 10)},
    ),
    Family(
        "curl_user_flag",
        "https://curl.se/docs/manpage.html#-u",
        [
            "curl -s -u admin:{a} http://localhost:15672/api/overview",
            "curl --user 'elastic:{a}' https://localhost:9200 -k",
        ],
        {"a": password(6, 10, symbols=False)},
    ),
    Family(
        "smbclient_password",
        "https://www.samba.org/samba/docs/current/man-html/smbclient.1.html",
        [
            "smbclient //fs01/finance -U 'CORP\\jdoe%{a}'",
            "mount -t cifs //fs01/scans /mnt/scans -o username=scanner,password={a}",
        ],
        {"a": password(7, 9, symbols=False)},
    ),
    # ---- SaaS tokens and webhook URLs ---------------------------------------------------------------
    Family(
        "slack_webhook_url_prose",
        "https://api.slack.com/messaging/webhooks",
        [
            "post alerts to https://hooks.slack.com/services/T{t}/B{b}/{a} (channel #deploys)",
            "the slack incoming webhook secret part is {a}",
        ],
        {"t": up(10), "b": up(10), "a": an(24)},
        public=("t", "b"),
    ),
    Family(
        "slack_user_token",
        "https://api.slack.com/authentication/token-types",
        [
            "slack user token {a} has admin scopes, revoke it after the export",
            "SLACK_USER_TOKEN={a} python export_channels.py",
        ],
        {"a": cat("xoxp-", digits(12), "-", digits(12), "-", digits(13), "-", hx(32))},
    ),
    Family(
        "slack_app_level_token",
        "https://api.slack.com/authentication/token-types#app-level",
        [
            "socket mode needs the app-level token {a}",
            "{a} (xapp, connections:write)",
        ],
        {"a": cat("xapp-1-A", up(10), "-", digits(13), "-", hx(64))},
    ),
    Family(
        "discord_webhook_url",
        "https://discord.com/developers/docs/resources/webhook",
        [
            "webhook for the build channel: https://discord.com/api/webhooks/{i}/{a}",
            "curl -X POST -H 'Content-Type: application/json' -d '{{\"content\":\"deployed\"}}' https://discordapp.com/api/webhooks/{i}/{a}",
        ],
        {"i": digits(19), "a": b64u(68)},
        public=("i",),
    ),
    Family(
        "teams_incoming_webhook",
        "https://learn.microsoft.com/en-us/microsoftteams/platform/webhooks-and-connectors/how-to/add-incoming-webhook",
        [
            "Teams connector: https://acme.webhook.office.com/webhookb2/{g1}@{g2}/IncomingWebhook/{a}/{g3}/{b}",
        ],
        {"g1": uuid4, "g2": uuid4, "a": hx(32), "g3": uuid4, "b": cat("V2", b64u(43))},
        public=("g1", "g2", "g3"),
    ),
    Family(
        "telegram_bot_url",
        "https://core.telegram.org/bots/api#authorizing-your-bot",
        [
            "curl https://api.telegram.org/bot{a}/sendMessage -d chat_id=-100123 -d text=ok",
            "бот для алертов: токен {a}, чат -1001234567",
        ],
        {"a": cat(digits(10), ":AA", b64u(33))},
    ),
    Family(
        "dingtalk_robot_webhook",
        "https://open.dingtalk.com/document/orgapp/custom-robot-access",
        [
            "钉钉机器人 webhook: https://oapi.dingtalk.com/robot/send?access_token={a}，加签密钥 {b}",
            "告警推送用的是 access_token={a}",
        ],
        {"a": hx(64), "b": pre("SEC", hx(64))},
    ),
    Family(
        "feishu_bot_webhook",
        "https://open.feishu.cn/document/client-docs/bot-v3/add-custom-bot",
        [
            "飞书群机器人地址 https://open.feishu.cn/open-apis/bot/v2/hook/{a} 签名校验密钥 {b}",
            "lark webhook https://open.larksuite.com/open-apis/bot/v2/hook/{a}",
        ],
        {"a": uuid4, "b": an(22)},
    ),
    Family(
        "wecom_bot_webhook",
        "https://developer.work.weixin.qq.com/document/path/91770",
        [
            "企业微信群机器人：https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key={a}",
            "wecom robot key {a}",
        ],
        {"a": uuid4},
    ),
    Family(
        "wechat_app_secret",
        "https://developers.weixin.qq.com/doc/offiaccount/en/Basic_Information/Get_access_token.html",
        [
            "公众号 AppID wx{i}，AppSecret {a}，不要提交到仓库",
            "GET https://api.weixin.qq.com/cgi-bin/token?grant_type=client_credential&appid=wx{i}&secret={a}",
        ],
        {"i": hx(16), "a": hx(32)},
        public=("i",),
    ),
    Family(
        "chatwork_api_token",
        "https://developer.chatwork.com/docs/endpoints",
        [
            "Chatwork の API トークン {a} を通知スクリプトに設定しました。",
            "curl -H 'X-ChatWorkToken: {a}' https://api.chatwork.com/v2/me",
        ],
        {"a": hx(32)},
    ),
    Family(
        "backlog_api_key",
        "https://developer.nulab.com/docs/backlog/auth/",
        [
            "Backlog の APIキーは {a} です（課題の自動起票用）",
            "https://acme.backlog.jp/api/v2/issues?apiKey={a}",
        ],
        {"a": an(64)},
    ),
    Family(
        "vk_service_token",
        "https://dev.vk.com/en/api/access-token/getting-started",
        [
            "сервисный ключ доступа VK: {a}",
            "https://api.vk.com/method/users.get?user_ids=1&access_token={a}&v=5.199",
        ],
        {"a": hx(64)},
    ),
    Family(
        "mercadopago_access_token",
        "https://www.mercadopago.com.ar/developers/en/docs/your-integrations/credentials",
        [
            "El access token de producción de Mercado Pago es {a}; no lo subas al repo.",
            "Authorization: Bearer {a}",
        ],
        {"a": cat("APP_USR-", digits(16), "-", digits(6), "-", hx(32), "-", digits(9))},
    ),
    Family(
        "paystack_secret_key",
        "https://paystack.com/docs/api/authentication/",
        [
            "paystack live secret {a}",
            "Authorization: Bearer {a} on /transaction/initialize",
        ],
        {"a": pre("sk_live_", hx(40))},
    ),
    Family(
        "flutterwave_secret_key",
        "https://developer.flutterwave.com/docs/integration-guides/authentication",
        [
            "flutterwave secret key {a} (live)",
            "FLW_SECRET_KEY={a}",
        ],
        {"a": cat("FLWSECK-", hx(32), "-X")},
    ),
    Family(
        "razorpay_key_secret",
        "https://razorpay.com/docs/api/authentication/",
        [
            "Razorpay key rzp_live_{i} with secret {a}",
            "curl -u rzp_live_{i}:{a} https://api.razorpay.com/v1/payments",
        ],
        {"i": an(14), "a": an(24)},
        public=("i",),
    ),
    Family(
        "square_access_token",
        "https://developer.squareup.com/docs/build-basics/access-tokens",
        [
            "Square production access token {a}",
            "square oauth app secret {b}",
        ],
        {"a": pre("EAAA", b64u(60)), "b": pre("sq0csp-", b64u(43))},
    ),
    Family(
        "braintree_access_token",
        "https://developer.paypal.com/braintree/docs/guides/authentication/overview",
        [
            "braintree gateway access token {a}",
            "BT_ACCESS_TOKEN={a}",
        ],
        {"a": cat("access_token$production$", lo(16), "$", hx(32))},
    ),
    Family(
        "mailchimp_api_key",
        "https://mailchimp.com/developer/marketing/guides/quick-start/",
        [
            "mailchimp key {a}, the datacenter is the suffix",
            "curl --user anystring:{a} https://us21.api.mailchimp.com/3.0/lists",
        ],
        {"a": cat(hx(32), "-us21")},
    ),
    Family(
        "brevo_api_key",
        "https://developers.brevo.com/docs/getting-started",
        [
            "Brevo (ex-Sendinblue) : clé API {a}",
            "api-key: {a}",
        ],
        {"a": cat("xkeysib-", hx(64), "-", an(16))},
    ),
    Family(
        "mailjet_keys",
        "https://dev.mailjet.com/email/guides/",
        [
            "mailjet api key {a} secret {b}",
            'curl -s -X POST --user "{a}:{b}" https://api.mailjet.com/v3.1/send',
        ],
        {"a": hx(32), "b": hx(32)},
    ),
    Family(
        "postmark_server_token",
        "https://postmarkapp.com/developer/api/overview#authentication",
        [
            "postmark token {a}",
            "X-Postmark-Server-Token: {a}",
        ],
        {"a": uuid4},
    ),
    Family(
        "resend_api_key",
        "https://resend.com/docs/dashboard/api-keys/introduction",
        [
            "use {a} as the resend key for transactional mail",
            "RESEND_API_KEY={a}",
        ],
        {"a": cat("re_", an(8), "_", an(24))},
    ),
    Family(
        "twilio_api_key_secret",
        "https://www.twilio.com/docs/iam/api-keys",
        [
            "twilio api key SK{i} secret {a}",
            "client = Client('SK{i}', '{a}', 'AC{j}')",
        ],
        {"i": hx(32), "a": an(32), "j": hx(32)},
        public=("i", "j"),
    ),
    Family(
        "algolia_admin_key",
        "https://www.algolia.com/doc/guides/security/api-keys/",
        [
            "algolia admin api key {a} (app id 7Q2ZK1LMNO) — never in the frontend bundle",
            "ALGOLIA_ADMIN_KEY={a}",
        ],
        {"a": hx(32)},
    ),
    Family(
        "mapbox_secret_token",
        "https://docs.mapbox.com/accounts/guides/tokens/",
        [
            "mapbox secret token {a} with downloads:read",
            "MAPBOX_DOWNLOADS_TOKEN={a}",
        ],
        {"a": cat("sk.eyJ1IjoiYWNtZSIsImEiOiJ", b64u(20), "In0.", b64u(22))},
    ),
    Family(
        "here_api_key",
        "https://www.here.com/docs/bundle/identity-and-access-management-developer-guide/page/topics/dev-apikey.html",
        [
            "https://geocode.search.hereapi.com/v1/geocode?q=Invalidenstr+117+Berlin&apiKey={a}",
            "HERE apiKey {a}",
        ],
        {"a": b64u(43)},
    ),
    Family(
        "figma_pat",
        "https://www.figma.com/developers/api#access-tokens",
        [
            "figma token {a} for the design-tokens export",
            "X-Figma-Token: {a}",
        ],
        {"a": cat("figd_", b64u(40))},
    ),
    Family(
        "airtable_pat",
        "https://airtable.com/developers/web/guides/personal-access-tokens",
        [
            "airtable PAT {a} (scopes data.records:read)",
            "Authorization: Bearer {a}",
        ],
        {"a": cat("pat", an(14), ".", hx(64))},
    ),
    Family(
        "asana_pat",
        "https://developers.asana.com/docs/personal-access-token",
        [
            "asana token {a}",
            "curl -H 'Authorization: Bearer {a}' https://app.asana.com/api/1.0/users/me",
        ],
        {"a": cat("2/", digits(16), "/", digits(16), ":", hx(32))},
    ),
    Family(
        "clickup_token",
        "https://clickup.com/api/developer-portal/authentication/",
        [
            "clickup personal token {a}",
            "Authorization: {a}",
        ],
        {"a": cat("pk_", digits(8), "_", up(32))},
    ),
    Family(
        "trello_token",
        "https://developer.atlassian.com/cloud/trello/guides/rest-api/authorization/",
        [
            "https://api.trello.com/1/members/me/boards?key={k}&token={a}",
            "trello token {a}",
        ],
        {"k": hx(32), "a": cat("ATTA", hx(60), up(8))},
        public=("k",),
    ),
    Family(
        "hubspot_private_app_token",
        "https://developers.hubspot.com/docs/api/private-apps",
        [
            "hubspot private app token {a} (crm.objects.contacts.read)",
            "Authorization: Bearer {a}",
        ],
        {"a": cat("pat-eu1-", uuid4)},
    ),
    Family(
        "salesforce_access_token",
        "https://help.salesforce.com/s/articleView?id=sf.remoteaccess_oauth_flows.htm",
        [
            "sf session id {a} (from the debug log, valid 2h)",
            "Authorization: OAuth {a}",
        ],
        {"a": cat("00D", an(12), "!AQ", b64u(3), ".", an(90))},
    ),
    Family(
        "zendesk_api_token",
        "https://developer.zendesk.com/api-reference/introduction/security-and-auth/",
        [
            "curl https://acme.zendesk.com/api/v2/tickets.json -u support-bot@acme.example/token:{a}",
            "zendesk api token {a}",
        ],
        {"a": an(40)},
    ),
    Family(
        "freshdesk_api_key",
        "https://developers.freshdesk.com/api/#authentication",
        [
            "curl -u {a}:X https://acme.freshdesk.com/api/v2/tickets",
            "freshdesk key {a}",
        ],
        {"a": an(20)},
    ),
    Family(
        "launchdarkly_keys",
        "https://docs.launchdarkly.com/sdk/concepts/client-side-server-side",
        [
            "launchdarkly server sdk key {a}",
            "LD api access token {b}",
        ],
        {"a": cat("sdk-", uuid4), "b": cat("api-", uuid4)},
    ),
    Family(
        "contentful_cma_token",
        "https://www.contentful.com/developers/docs/references/authentication/",
        [
            "contentful management token {a}",
            "CONTENTFUL_MANAGEMENT_TOKEN={a} npm run migrate",
        ],
        {"a": cat("CFPAT-", b64u(43))},
    ),
    Family(
        "netlify_pat",
        "https://docs.netlify.com/api/get-started/#authentication",
        [
            "netlify token {a}",
            "NETLIFY_AUTH_TOKEN={a} netlify deploy --prod",
        ],
        {"a": cat("nfp_", an(36))},
    ),
    Family(
        "vercel_token",
        "https://vercel.com/docs/rest-api#creating-an-access-token",
        [
            "vercel token {a}",
            "vercel deploy --prod --token {a}",
        ],
        {"a": an(24)},
    ),
    Family(
        "flyio_token",
        "https://fly.io/docs/security/tokens/",
        [
            "fly deploy -a api-prod --access-token {a}",
            "fly.io org token {a}",
        ],
        {"a": cat("fo1_", b64u(43))},
    ),
    Family(
        "render_api_key",
        "https://api-docs.render.com/reference/authentication",
        [
            "render api key {a}",
            "curl -H 'Authorization: Bearer {a}' https://api.render.com/v1/services",
        ],
        {"a": cat("rnd_", an(32))},
    ),
    Family(
        "supabase_access_token",
        "https://supabase.com/docs/reference/cli/supabase-login",
        [
            "supabase login --token {a}",
            "SUPABASE_ACCESS_TOKEN={a}",
        ],
        {"a": cat("sbp_", hx(40))},
    ),
    Family(
        "supabase_service_role_jwt",
        "https://supabase.com/docs/guides/api/api-keys",
        [
            "service_role key (bypasses RLS!) {a}",
            "const supabase = createClient('https://xyzcompany.supabase.co', '{a}')",
        ],
        {
            "a": jwt(
                lambda r: {
                    "iss": "supabase",
                    "ref": lo(20)(r),
                    "role": "service_role",
                    "iat": r.randint(1700000000, 1790000000),
                }
            )
        },
    ),
    Family(
        "onepassword_service_account",
        "https://developer.1password.com/docs/service-accounts/use-with-1password-cli/",
        [
            "OP_SERVICE_ACCOUNT_TOKEN={a} op read op://ci/db/password",
            "1password service account token {a}",
        ],
        {"a": cat("ops_eyJ", b64u(200))},
    ),
    Family(
        "dynatrace_token",
        "https://docs.dynatrace.com/docs/manage/access-control/access-tokens",
        [
            "Authorization: Api-Token {a}",
            "dynatrace token {a} (metrics.ingest)",
        ],
        {"a": cat("dt0c01.", up(24), ".", up(64))},
    ),
    Family(
        "pagerduty_api_key",
        "https://developer.pagerduty.com/docs/authentication",
        [
            "{a} — pagerduty REST key for the escalation sync",
            "Authorization: Token token={a}",
        ],
        {"a": cat(b64u(20))},
    ),
    Family(
        "splunk_hec_token",
        "https://docs.splunk.com/Documentation/Splunk/latest/Data/UsetheHTTPEventCollector",
        [
            "curl -k https://splunk:8088/services/collector -H 'Authorization: Splunk {a}' -d '{{\"event\":\"hi\"}}'",
            "HEC token {a} for index=app_logs",
        ],
        {"a": uuid4},
    ),
    Family(
        "honeycomb_ingest_key",
        "https://docs.honeycomb.io/get-started/configure/environments/manage-api-keys/",
        [
            "OTEL_EXPORTER_OTLP_HEADERS=x-honeycomb-team={a}",
            "honeycomb ingest key {a}",
        ],
        {"a": cat("hcaik_", lo(58))},
    ),
    Family(
        "grafana_cloud_token",
        "https://grafana.com/docs/grafana-cloud/account-management/authentication-and-permissions/access-policies/",
        [
            "grafana cloud access policy token {a}",
            "GRAFANA_CLOUD_TOKEN={a} alloy run config.alloy",
        ],
        {"a": cat("glc_", b64(120), "=")},
    ),
    Family(
        "sentry_user_token",
        "https://docs.sentry.io/account/auth-tokens/",
        [
            "sentry-cli --auth-token {a} releases new 1.4.2",
            "SENTRY_AUTH_TOKEN={a}",
        ],
        {"a": cat("sntryu_", hx(64))},
    ),
    Family(
        "wandb_api_key",
        "https://docs.wandb.ai/guides/track/environment-variables/",
        [
            "wandb login {a}",
            "WANDB_API_KEY={a} python train.py",
        ],
        {"a": hx(40)},
    ),
    Family(
        "kaggle_json_in_sentence",
        "https://www.kaggle.com/docs/api#authentication",
        [
            'put {{"username":"mlbot","key":"{a}"}} into ~/.kaggle/kaggle.json',
            "kaggle key {a}",
        ],
        {"a": hx(32)},
    ),
    Family(
        "prefect_api_key",
        "https://docs.prefect.io/latest/cloud/users/api-keys/",
        [
            "prefect cloud login -k {a}",
            "PREFECT_API_KEY={a}",
        ],
        {"a": cat("pnu_", an(36))},
    ),
    Family(
        "tailscale_auth_key",
        "https://tailscale.com/kb/1085/auth-keys",
        [
            "tailscale up --authkey={a}",
            "reusable ephemeral auth key {a} for the CI runners",
        ],
        {"a": cat("tskey-auth-k", an(10), "CNTRL-", an(33))},
    ),
    Family(
        "ngrok_authtoken",
        "https://ngrok.com/docs/agent/#authtokens",
        [
            "ngrok config add-authtoken {a}",
            "ngrok authtoken {a}",
        ],
        {"a": cat("2", an(26), "_", an(21))},
    ),
    Family(
        "cloudflare_global_api_key",
        "https://developers.cloudflare.com/fundamentals/api/get-started/keys/",
        [
            "X-Auth-Key: {a}",
            "cloudflare global api key {a} for ops@acme.example",
        ],
        {"a": hx(37)},
    ),
    Family(
        "akamai_edgegrid",
        "https://techdocs.akamai.com/developer/docs/set-up-authentication-credentials",
        [
            "[default]\nclient_secret = {a}\nhost = akab-xxxx.luna.akamaiapis.net\naccess_token = {b}\nclient_token = {c}",
            "edgegrid client_secret {a}",
        ],
        {
            "a": cat(b64(43), "="),
            "b": cat("akab-", lo(16), "-", lo(16)),
            "c": cat("akab-", lo(16), "-", lo(16)),
        },
    ),
    Family(
        "fastly_api_token",
        "https://docs.fastly.com/en/guides/using-api-tokens",
        [
            "Fastly-Key: {a}",
            "fastly token {a}",
        ],
        {"a": b64u(32)},
    ),
    Family(
        "auth0_client_secret",
        "https://auth0.com/docs/get-started/applications/application-settings",
        [
            "auth0 m2m client secret {a}",
            "AUTH0_CLIENT_SECRET={a}",
        ],
        {"a": b64u(64)},
    ),
    Family(
        "keycloak_client_secret",
        "https://www.keycloak.org/docs/latest/server_admin/#_client-credentials",
        [
            "curl -d client_id=ingest -d client_secret={a} -d grant_type=client_credentials https://sso.example/realms/acme/protocol/openid-connect/token",
            "keycloak client secret for ingest: {a}",
        ],
        {"a": an(32)},
    ),
    # ---- AI providers --------------------------------------------------------------------------------
    Family(
        "groq_api_key",
        "https://console.groq.com/docs/quickstart",
        [
            "use {a} as the groq key in the eval harness",
            "GROQ_API_KEY={a}",
        ],
        {"a": cat("gsk_", an(52))},
    ),
    Family(
        "replicate_token",
        "https://replicate.com/docs/reference/http#authentication",
        [
            "replicate token {a}",
            "Authorization: Token {a}",
        ],
        {"a": cat("r8_", an(37))},
    ),
    Family(
        "perplexity_api_key",
        "https://docs.perplexity.ai/guides/getting-started",
        [
            "perplexity key {a}",
            "PPLX_API_KEY={a}",
        ],
        {"a": cat("pplx-", an(48))},
    ),
    Family(
        "xai_api_key",
        "https://docs.x.ai/docs/overview",
        [
            "xai key {a} for the grok comparison",
            "XAI_API_KEY={a}",
        ],
        {"a": cat("xai-", an(80))},
    ),
    Family(
        "anthropic_admin_key",
        "https://docs.anthropic.com/en/api/administration-api",
        [
            "the admin key {a} can create workspaces, keep it out of agent memory",
            "x-api-key: {a}",
        ],
        {"a": cat("sk-ant-admin01-", b64u(93), "AA")},
    ),
    Family(
        "pinecone_api_key",
        "https://docs.pinecone.io/guides/projects/manage-api-keys",
        [
            "pinecone key {a}",
            "PINECONE_API_KEY={a}",
        ],
        {"a": cat("pcsk_", an(5), "_", an(63))},
    ),
    # ---- auth artefacts in prose --------------------------------------------------------------------
    Family(
        "jwt_in_prose",
        "https://www.rfc-editor.org/rfc/rfc7519",
        [
            "session jwt {a} — it still works after logout, that's the bug",
            "Repro: call /api/admin with {a} as the bearer and you get 200",
        ],
        {
            "a": jwt(
                lambda r: {
                    "sub": uuid4(r),
                    "role": "admin",
                    "exp": r.randint(1790000000, 1800000000),
                }
            )
        },
    ),
    Family(
        "totp_seed_prose",
        "https://github.com/google/google-authenticator/wiki/Key-Uri-Format",
        [
            "2FA seed for the shared ops account is {a}, add it to your authenticator",
            "{a} (base32 TOTP secret for break-glass@)",
        ],
        {"a": chars(BASE32, 32)},
    ),
    Family(
        "recovery_codes",
        "https://docs.github.com/en/authentication/securing-your-account-with-two-factor-authentication-2fa/configuring-two-factor-authentication-recovery-methods",
        [
            "recovery codes for the org owner: {a} {b} {c}",
            "if the yubikey is lost use recovery code {a}",
        ],
        {"a": cat(lo(5), "-", lo(5)), "b": cat(lo(5), "-", lo(5)), "c": cat(lo(5), "-", lo(5))},
    ),
    Family(
        "apple_app_specific_password",
        "https://support.apple.com/en-us/102654",
        [
            "notarytool needs an app-specific password: {a}",
            "xcrun altool --upload-app -u dev@acme.example -p {a}",
        ],
        {
            "a": cat(
                chars(string.ascii_lowercase, 4),
                "-",
                chars(string.ascii_lowercase, 4),
                "-",
                chars(string.ascii_lowercase, 4),
                "-",
                chars(string.ascii_lowercase, 4),
            )
        },
    ),
    Family(
        "google_app_password",
        "https://support.google.com/accounts/answer/185833",
        [
            "gmail app password for the alert mailer: {a}",
            "EMAIL_HOST_PASSWORD='{a}'",
        ],
        {
            "a": cat(
                chars(string.ascii_lowercase, 4),
                " ",
                chars(string.ascii_lowercase, 4),
                " ",
                chars(string.ascii_lowercase, 4),
                " ",
                chars(string.ascii_lowercase, 4),
            )
        },
    ),
    Family(
        "nostr_nsec",
        "https://github.com/nostr-protocol/nips/blob/master/19.md",
        [
            "the relay bot signs with {a}",
            "nostr private key {a} (npub is public, this is not)",
        ],
        {"a": cat("nsec1", chars("qpzry9x8gf2tvdw0s3jn54khce6mua7l", 58))},
    ),
    Family(
        "solana_keypair_json",
        "https://docs.solanalabs.com/cli/wallets/file-system",
        [
            "the devnet deployer keypair file is [{a}]",
        ],
        {"a": lambda r: ",".join(str(r.randint(0, 255)) for _ in range(64))},
    ),
    Family(
        "ldap_bind_password_prose",
        "https://linux.die.net/man/1/ldapsearch",
        [
            "bind as cn=svc-wiki,ou=services,dc=acme,dc=example with {a}",
            "ldapmodify -x -D 'cn=admin,dc=acme,dc=example' -w {a} -f add_user.ldif",
        ],
        {"a": password(8, 10)},
    ),
    Family(
        "ssh_password_prose",
        "https://man.openbsd.org/ssh",
        [
            "ssh root@10.20.0.5, pw {a}, then sudo -i",
            "the jump host login is ops / {a}",
        ],
        {"a": password(6, 9)},
    ),
    Family(
        "wifi_password_prose",
        "https://www.rfc-editor.org/rfc/rfc8110",
        [
            "guest wifi ACME-Guest, {a} is the password this month",
            "Office Wi-Fi: SSID acme-corp, key {a}",
        ],
        {"a": password(8, 9, symbols=False)},
    ),
    Family(
        "approval_note_breakglass",
        "https://sre.google/sre-book/managing-incidents/",
        [
            "Approved by J. Park. Break-glass password for db-prod is {a}; valid until Friday 18:00 UTC.",
            "APPROVED — temporary admin creds admin/{a}, revoke after INC-2291 closes.",
            "Reviewer note: I reset the root password to {a}, change it on first login.",
        ],
        {"a": password(8, 12)},
    ),
    Family(
        "task_description_hardcoded",
        "https://cwe.mitre.org/data/definitions/798.html",
        [
            "TODO(agent): replace the hard-coded API key {a} in worker/fetch.py with the settings value.",
            "Task: the cron container logs in with {a}; move it to a secret and rotate.",
        ],
        {"a": cat(an(8), "-", an(8), "-", an(8))},
    ),
    Family(
        "commit_message_leak",
        "https://docs.github.com/en/code-security/secret-scanning/about-secret-scanning",
        [
            "feat(billing): wire stripe webhook\n\nUses whsec_{a} for signature verification until we have vault.",
            "fix: rotate stripe key, old one was rk_live_{b}",
        ],
        {"a": an(32), "b": an(99)},
    ),
    Family(
        "log_line_key_value",
        "https://owasp.org/Top10/A09_2021-Security_Logging_and_Monitoring_Failures/",
        [
            'level=info ts=2026-11-02T10:11:12Z caller=client.go:88 msg="auth ok" api_key={a} user=svc-sync',
            '{{"ts":"2026-11-02T10:11:12Z","level":"debug","msg":"login","username":"svc-sync","password":"{b}"}}',
            '203.0.113.9 - - [02/Nov/2026:10:11:12 +0000] "GET /export?format=csv&token={a} HTTP/1.1" 200 18231',
        ],
        {"a": an(32), "b": password(8, 12)},
    ),
    Family(
        "node_error_config_dump",
        "https://nodejs.org/api/errors.html",
        [
            "Error: connect ECONNREFUSED 10.0.0.7:5432\n    at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1607:16) {{\n  config: {{ host: '10.0.0.7', user: 'api', password: '{a}', database: 'api' }}\n}}",
        ],
        {"a": password(10, 14)},
    ),
    Family(
        "config_snippet_in_sentence",
        "https://docs.spring.io/spring-boot/appendix/application-properties/index.html",
        [
            "set `spring.datasource.password={a}` in application-prod.properties and restart",
            "add `password = {a}` under [client] in ~/.my.cnf so the backup script stops prompting",
            "In values.yaml I changed redis.auth.password to {a} — please approve the PR",
        ],
        {"a": password(8, 12, symbols=False)},
    ),
    Family(
        "pem_private_key_mid_sentence",
        "https://www.rfc-editor.org/rfc/rfc7468",
        [],
        build=build_pem_mid_sentence,
    ),
    Family(
        "secret_split_across_lines",
        "https://docs.github.com/en/code-security/secret-scanning/introduction/supported-secret-scanning-patterns",
        [],
        build=build_split_token,
    ),
    Family(
        "chat_password_split_messages",
        "https://www.rfc-editor.org/rfc/rfc8265",
        [],
        build=build_split_password_chat,
    ),
    Family(
        "netrc_described_in_task",
        "https://www.gnu.org/software/inetutils/manual/html_node/The-_002enetrc-file.html",
        [],
        build=build_multiline_netrc_prose,
    ),
    Family(
        "heroku_token_no_verb",
        "https://devcenter.heroku.com/articles/authentication",
        [
            "heroku token {a}",
            "{a} heroku api key (from heroku auth:token)",
            "HEROKU_API_KEY={a} heroku apps",
        ],
        {"a": uuid4},
    ),
    Family(
        "heroku_new_format_key",
        "https://devcenter.heroku.com/changelog-items/2937",
        [
            "heroku key {a}",
            "heroku authorizations:create printed {a}",
        ],
        {"a": cat("HRKU-AA", b64u(58))},
    ),
    Family(
        "openrouter_key_value_first",
        "https://openrouter.ai/docs/api-reference/authentication",
        [
            "{a} is the openrouter key for the eval runs",
            "please use {a} as the key, mine ran out of credits",
        ],
        {"a": cat("sk-or-v1-", hx(64))},
    ),
    # ---- prose in eight languages: a short password, and an API token, each named after the value ----
    Family(
        "prose_password_en",
        "https://pages.nist.gov/800-63-3/sp800-63b.html",
        [
            "the staging password is {a}",
            "{a} is my password for the test tenant, don't judge",
            "login failed with password {a}, then worked after the reset",
        ],
        {"a": password(6, 9)},
    ),
    Family(
        "prose_password_ko",
        "https://www.kisa.or.kr/",
        [
            "스테이징 DB 비밀번호는 {a} 입니다.",
            "{a} 이게 관리자 비번이에요. 내일 바꿀게요.",
            "VPN 접속 암호: {a}",
        ],
        {"a": password(6, 9)},
    ),
    Family(
        "prose_password_ja",
        "https://www.ipa.go.jp/security/",
        [
            "検証環境のパスワードは {a} です。",
            "{a} が管理画面のパスワードなので、共有しないでください。",
            "サーバーのrootパスは{a}に変更しました",
        ],
        {"a": password(6, 9)},
    ),
    Family(
        "prose_password_zh",
        "https://www.cac.gov.cn/",
        [
            "测试库的密码是 {a}，用完记得改掉。",
            "{a} 就是路由器后台的密码",
            "堡垒机口令：{a}（本周有效）",
        ],
        {"a": password(6, 9)},
    ),
    Family(
        "prose_password_ru",
        "https://www.consultant.ru/",
        [
            "пароль от стенда {a}, логин admin",
            "{a} — это пароль от почтового ящика мониторинга",
            "Сбросил пароль на {a}, смени при первом входе.",
        ],
        {"a": password(6, 9)},
    ),
    Family(
        "prose_password_de",
        "https://www.bsi.bund.de/",
        [
            "Das Passwort für den Testserver lautet {a}.",
            "{a} ist das Kennwort vom Jenkins-Admin, bitte nach dem Release ändern.",
            "Zugang: admin, Passwort {a}",
        ],
        {"a": password(6, 9)},
    ),
    Family(
        "prose_password_es",
        "https://www.incibe.es/",
        [
            "La contraseña del entorno de pruebas es {a}.",
            "{a} es la clave del usuario de soporte",
            "Te paso la contraseña: {a} (cámbiala mañana)",
        ],
        {"a": password(6, 9)},
    ),
    Family(
        "prose_password_fr",
        "https://cyber.gouv.fr/",
        [
            "Le mot de passe du serveur de recette est {a}.",
            "{a}, c'est le mot de passe du compte admin du wiki",
            "mdp : {a} — à changer après la démo",
        ],
        {"a": password(6, 9)},
    ),
    Family(
        "prose_token_ko",
        "https://developers.kakao.com/docs/latest/en/getting-started/app#app-key",
        [
            "{a} 이 배포용 토큰입니다. 깃에 올리지 마세요.",
            "API 키: {a} (운영 환경)",
        ],
        {"a": an(40)},
    ),
    Family(
        "prose_token_ja",
        "https://developers.line.biz/en/docs/basics/channel-access-token/",
        [
            "{a} がデプロイ用のトークンです。",
            "APIキーは{a}です、本番用なので注意",
        ],
        {"a": an(40)},
    ),
    Family(
        "prose_token_zh",
        "https://open.dingtalk.com/document/orgapp/custom-robot-access",
        [
            "{a} 是生产环境的接口令牌，别发到群里",
            "API 密钥：{a}",
        ],
        {"a": an(40)},
    ),
    Family(
        "prose_token_ru",
        "https://yandex.cloud/en/docs/iam/concepts/authorization/api-key",
        [
            "{a} — токен для деплоя, не коммить его",
            "ключ API: {a} (прод)",
        ],
        {"a": an(40)},
    ),
    Family(
        "prose_token_de",
        "https://docs.hetzner.cloud/#authentication",
        [
            "{a} ist der API-Schlüssel für die Produktion, bitte nicht ins Ticket kopieren.",
            "Der Token lautet {a}",
        ],
        {"a": an(40)},
    ),
    Family(
        "prose_token_es",
        "https://www.mercadopago.com.ar/developers/en/docs/your-integrations/credentials",
        [
            "{a} es el token de la API de producción",
            "Clave de API: {a}",
        ],
        {"a": an(40)},
    ),
    Family(
        "prose_token_fr",
        "https://www.scaleway.com/en/docs/identity-and-access-management/iam/how-to/create-api-keys/",
        [
            "{a} est le jeton d'accès pour la prod, ne le mets pas dans Slack",
            "Clé d'API : {a}",
        ],
        {"a": an(40)},
    ),
    Family(
        "prose_token_en_no_verb",
        "https://docs.github.com/en/code-security/secret-scanning/introduction/supported-secret-scanning-patterns",
        [
            "prod api token {a}",
            "{a} api key, expires 2026-12-31",
        ],
        {"a": an(40)},
    ),
]


# --------------------------------------------------------------------------------------------------------
# Near-miss families: nothing here is secret; all must come back unchanged.
# --------------------------------------------------------------------------------------------------------

NEAR_MISS_FAMILIES: list[Family] = [
    Family(
        "nm_request_trace_ids",
        "https://www.w3.org/TR/trace-context/",
        [
            "request id {a} failed with 502 after 30s, trace id {b}",
            '2026-11-02T10:11:12Z ERROR handler request_id={a} trace_id={c} span_id={d} msg="upstream timeout"',
            "traceparent: 00-{c}-{d}-01",
            "Correlation-Id: {a} (please include it in the support ticket)",
        ],
        {"a": uuid4, "b": uuid4, "c": hx(32), "d": hx(16)},
    ),
    Family(
        "nm_commit_shas",
        "https://git-scm.com/docs/git-log",
        [
            "Reverted {a} because it broke the migration; the fix is in {b}.",
            "commit {a}\nAuthor: Dana Liu <dana@example.org>\nDate:   Mon Nov 2 10:11:12 2026 +0000\n\n    Fix token bucket refill rate",
            "bisect says {a} is the first bad commit",
            "cherry-pick {c} onto release-1.4",
        ],
        {"a": hx(40), "b": hx(40), "c": hx(7)},
    ),
    Family(
        "nm_version_strings",
        "https://semver.org/",
        [
            "Upgraded psycopg from 3.1.18 to 3.2.3 and temporalio to 1.8.0; no token changes.",
            "loregate v2.14.0-rc.3+build.20261102.a1b2c3d is on staging",
            "pinned openssl 3.0.13-0ubuntu3.4 and python 3.11.10",
            "Chrome/130.0.6723.117 Safari/537.36 in the user agent",
        ],
    ),
    Family(
        "nm_ssh_public_keys",
        "https://man.openbsd.org/ssh-keygen",
        [
            "add my public key to the jump host: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{a} dana@laptop",
            "authorized_keys line: ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ{b} ci@builder",
            "host key fingerprint SHA256:{c} (ED25519)",
            "age recipient {d} — that's the public half, safe to share",
        ],
        {
            "a": b64(43),
            "b": b64(340),
            "c": b64(43),
            "d": cat("age1", chars("qpzry9x8gf2tvdw0s3jn54khce6mua7l", 58)),
        },
    ),
    Family(
        "nm_public_pem",
        "https://www.rfc-editor.org/rfc/rfc7468",
        [
            "The verifier's public key is -----BEGIN PUBLIC KEY----- MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE{a} -----END PUBLIC KEY----- and it may be published.",
            "cert chain starts with -----BEGIN CERTIFICATE----- MIIB{b} -----END CERTIFICATE-----",
        ],
        {"a": b64(88), "b": b64(120)},
    ),
    Family(
        "nm_placeholders_angle",
        "https://docs.github.com/en/rest/authentication/authenticating-to-the-rest-api",
        [
            "curl -H 'Authorization: Bearer <your-token>' https://api.github.com/user",
            "export OPENAI_API_KEY=<YOUR_API_KEY> before running the notebook",
            "postgresql://<user>:<password>@<host>:5432/<db>",
            "set the password to {{{{ vault_db_password }}}} in the template, never a literal",
        ],
    ),
    Family(
        "nm_placeholders_x",
        "https://docs.stripe.com/keys",
        [
            "the key looks like sk_live_xxxxxxxxxxxxxxxxxxxxxxxx, yours will differ",
            "token: ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx (example from the wiki)",
            "password=******** in the redacted log",
            "Authorization: Bearer ...",
            'api_key = "XXXX-XXXX-XXXX-XXXX"  # replace me',
        ],
    ),
    Family(
        "nm_security_words",
        "https://pages.nist.gov/800-63-3/sp800-63b.html",
        [
            "We need a password policy: at least 12 characters, no rotation unless compromised.",
            "The token bucket refills at 50 tokens per second with a burst of 200.",
            "Please rotate the key before Friday and update the secret in the vault.",
            "password reset emails are rate limited; the reset token expires after 15 minutes",
            "Session tokens are opaque to the client; the secret key used to sign them is rotated quarterly.",
        ],
    ),
    Family(
        "nm_base64_plain_text",
        "https://www.rfc-editor.org/rfc/rfc4648",
        [
            "the header decodes fine: {a}",
            "payload (base64) {b}",
            "X-Request-Context: {c}",
        ],
        {
            "a": lambda r: base64.b64encode(b"The quick brown fox jumps over the lazy dog").decode(),
            "b": lambda r: base64.b64encode(b'{"event":"deploy","service":"ingest","ok":true}').decode(),
            "c": lambda r: base64.b64encode(b"tenant=acme;region=eu-central-1;tier=gold").decode(),
        },
    ),
    Family(
        "nm_measurements",
        "https://www.brendangregg.com/usemethod.html",
        [
            "p50 12.4 ms, p95 41.9 ms, p99 118.2 ms over 184023 requests; 0.031% errors; 2 of 16 pods restarted",
            "bench: 3812.55 ops/s vs 3790.12 baseline (ratio 1.0059), rss 412 MiB, 1234567 rows scanned",
            "recall@10 0.8731 (tune) / 0.8412 (heldout), 4096-dim, 250000 vectors, ef_search 64",
            "disk 73.2% used, 1953125000 blocks, inode 41200311/122093568",
        ],
    ),
    Family(
        "nm_file_hashes",
        "https://www.gnu.org/software/coreutils/manual/html_node/sha2-utilities.html",
        [
            "{a}  loregate-2.14.0-py3-none-any.whl",
            "md5 of the dump is {b}, matches the vendor's",
            "image digest sha256:{a}",
            "integrity sha512-{c}",
        ],
        {"a": hx(64), "b": hx(32), "c": cat(b64(86), "==")},
    ),
    Family(
        "nm_multilingual_security_words",
        "https://pages.nist.gov/800-63-3/sp800-63b.html",
        [
            "비밀번호 정책을 12자 이상으로 바꾸고 토큰 만료는 1시간으로 합시다.",
            "パスワードポリシーを更新し、APIキーのローテーションを毎月実施します。",
            "请在周五之前轮换密钥，并更新密码策略文档。",
            "Политика паролей: минимум 12 символов; токены живут один час.",
            "Die Passwortrichtlinie verlangt 12 Zeichen; der Schlüssel wird quartalsweise rotiert.",
            "La política de contraseñas exige 12 caracteres y rotar la clave cada trimestre.",
            "La politique de mots de passe impose 12 caractères ; le jeton expire après une heure.",
        ],
    ),
    Family(
        "nm_env_references",
        "https://docs.github.com/en/actions/security-for-github-actions/security-guides/using-secrets-in-github-actions",
        [
            "password: ${{{{ secrets.DB_PASSWORD }}}}",
            "PGPASSWORD=$DB_PASSWORD psql -h db -U app",
            'api_key = os.environ["STRIPE_API_KEY"]',
            "vault kv get -field=password secret/data/prod/db",
            "token is read from /run/secrets/github_token at startup",
        ],
    ),
    Family(
        "nm_urls_without_credentials",
        "https://www.rfc-editor.org/rfc/rfc3986",
        [
            "clone git@github.com:acme/loregate.git or https://github.com/acme/loregate.git",
            "docs at https://docs.example.com/auth/tokens?lang=en#rotation",
            "ssh deploy@10.20.0.5 -p 2222",
            "postgresql://app@db-primary:5432/app?sslmode=require (password from PGPASSFILE)",
        ],
    ),
    Family(
        "nm_identifiers",
        "https://github.com/ulid/spec",
        [
            "order {a} shipped; invoice INV-2026-004711; customer 88123004",
            "ULID {b} assigned to the episode",
            "tweet id {c}, discord message id {d}",
            "JIRA PLAT-4821, PR #5521, incident INC-2291",
        ],
        {
            "a": digits(12),
            "b": chars("0123456789ABCDEFGHJKMNPQRSTVWXYZ", 26),
            "c": digits(19),
            "d": digits(18),
        },
    ),
    Family(
        "nm_aws_public_ids",
        "https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_identifiers.html",
        [
            "role arn:aws:iam::{a}:role/ingest-worker assumed by the task",
            "the docs' example key AKIAIOSFODNN7EXAMPLE with wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "vpc-{b}, subnet-{c}, sg-{d}",
            "instance i-{b} in account {a}",
        ],
        {"a": digits(12), "b": hx(17), "c": hx(17), "d": hx(17)},
    ),
    Family(
        "nm_redacted_already",
        "https://owasp.org/www-project-cheat-sheets/cheatsheets/Logging_Cheat_Sheet.html",
        [
            "token=[REDACTED] user=svc-sync status=401",
            "password: ****** (masked by the logger)",
            "Authorization: Bearer <redacted>",
            "DATABASE_URL=postgresql://app:***@db:5432/app",
        ],
    ),
    Family(
        "nm_stack_trace_clean",
        "https://docs.python.org/3/library/traceback.html",
        [
            'Traceback (most recent call last):\n  File "/app/governance/tokens.py", line 88, in refill\n    bucket.take(n_tokens)\nValueError: token bucket underflow: wanted 12, had 3',
            "java.lang.IllegalStateException: password policy violated (min length 12)\n\tat com.acme.auth.PolicyChecker.check(PolicyChecker.java:42)",
            "panic: runtime error: index out of range [5] with length 5\n\ngoroutine 1 [running]:\nmain.parseKey(0xc000012345)",
        ],
    ),
    Family(
        "nm_shell_history_clean",
        "https://www.gnu.org/software/bash/manual/html_node/Bash-History-Builtins.html",
        [
            "  101  read -s PGPASSWORD && export PGPASSWORD\n  102  psql -h pg-01 -U app",
            '  55  echo "$TOKEN" | docker login ghcr.io -u ci --password-stdin',
            "  12  ssh-keygen -t ed25519 -C dana@laptop\n  13  cat ~/.ssh/id_ed25519.pub",
            "  77  kubectl create secret generic db --from-file=password=./db-password.txt",
        ],
    ),
    Family(
        "nm_config_without_secret",
        "https://www.postgresql.org/docs/current/libpq-pgpass.html",
        [
            "password_file = /run/secrets/db_password",
            "auth: { method: oidc, token_ttl: 3600, password_min_length: 12 }",
            "ssl_key_file = '/etc/ssl/private/server.key'  # path only",
            "PasswordAuthentication no\nPubkeyAuthentication yes",
        ],
    ),
    Family(
        "nm_pgp_fingerprints",
        "https://www.rfc-editor.org/rfc/rfc4880#section-12.2",
        [
            "release signing key fingerprint {a}",
            "gpg --recv-keys {b}",
            "Key ID 0x{b}, expires 2027-01-01",
        ],
        {
            "a": lambda r: " ".join(chars("0123456789ABCDEF", 4)(r) for _ in range(10)),
            "b": chars("0123456789ABCDEF", 16),
        },
    ),
    Family(
        "nm_hostnames_and_ips",
        "https://www.rfc-editor.org/rfc/rfc5737",
        [
            "ip-10-20-31-44.eu-central-1.compute.internal is draining; moving pods to ip-10-20-33-17",
            "203.0.113.42:8443 → 198.51.100.7:443, mtu 1450, 2001:db8::1f",
            "pg-replica-0.pg-headless.db.svc.cluster.local:5432",
        ],
    ),
    Family(
        "nm_public_client_ids",
        "https://www.rfc-editor.org/rfc/rfc6749#section-2.2",
        [
            "OAuth client_id {a} is public (it's in the SPA bundle); the secret lives in the vault",
            "Google client id {b}.apps.googleusercontent.com",
            "Stripe publishable key pk_test_{c} is meant for the browser",
        ],
        {"a": uuid4, "b": cat(digits(12), "-", lo(32)), "c": an(24)},
    ),
]


def records() -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    s_half = halves([f.name for f in SECRET_FAMILIES])
    n_half = halves([f.name for f in NEAR_MISS_FAMILIES])
    secrets_out: list[dict[str, object]] = []
    for fam in SECRET_FAMILIES:
        for i, (text, secrets) in enumerate(render(fam), start=1):
            secrets_out.append(
                {
                    "id": f"q5-s-{fam.name}-{i}",
                    "family": fam.name,
                    "source": fam.source,
                    "text": text,
                    "secrets": secrets,
                    "half": s_half[fam.name],
                }
            )
    near_out: list[dict[str, object]] = []
    for fam in NEAR_MISS_FAMILIES:
        for i, (text, _unused) in enumerate(render(fam), start=1):
            near_out.append(
                {
                    "id": f"q5-n-{fam.name}-{i}",
                    "family": fam.name,
                    "source": fam.source,
                    "text": text,
                    "half": n_half[fam.name],
                }
            )
    return secrets_out, near_out


def main() -> None:
    secrets_out, near_out = records()
    for name, rows in (("secrets.jsonl", secrets_out), ("near_misses.jsonl", near_out)):
        with (HERE / name).open("w", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"wrote {len(secrets_out)} secret records, {len(near_out)} near-misses")


if __name__ == "__main__":
    main()
