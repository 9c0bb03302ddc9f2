# ruff: noqa: E501
"""Write the eighth redaction corpus: secrets in what coding agents stream into a log (tool output, transcripts).

    python tests/data/redaction_eighth/make_corpus.py

Every value is synthesised from a fixed seed (one `random.Random(f"q8:{family}")` per family), so rerunning
this script reproduces `secrets.jsonl` and `near_misses.jsonl` byte for byte. No value is a live credential.
"""

from __future__ import annotations

import base64
import json
import math
import random
import string
from collections.abc import Callable, Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
SPLIT_SEED = 8022
ALNUM = string.ascii_letters + string.digits
LOWER_DIGITS = string.ascii_lowercase + string.digits
UPPER_DIGITS = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"
URLSAFE = ALNUM + "-_"
B32 = string.ascii_uppercase + "234567"
PUNCT = "!#%*+-_.?^~"
NIST = "https://pages.nist.gov/800-63-3/sp800-63b.html"

SecretGen = Callable[[random.Random], Iterator[tuple[str, list[str]]]]
NearGen = Callable[[random.Random], Iterator[str]]
SECRET_FAMILIES: list[tuple[str, str, SecretGen]] = []
NEAR_FAMILIES: list[tuple[str, str, NearGen]] = []


def secret(source: str) -> Callable[[SecretGen], SecretGen]:
    """Register a secret family; its name is the function's name with dashes."""

    def deco(fn: SecretGen) -> SecretGen:
        SECRET_FAMILIES.append((fn.__name__.replace("_", "-"), source, fn))
        return fn

    return deco


def near(source: str) -> Callable[[NearGen], NearGen]:
    """Register a near-miss family; its name is the function's name with dashes, less the `n_` prefix."""

    def deco(fn: NearGen) -> NearGen:
        NEAR_FAMILIES.append((fn.__name__.removeprefix("n_").replace("_", "-"), source, fn))
        return fn

    return deco


# --- value helpers -------------------------------------------------------------------------------------


def pick(r: random.Random, alphabet: str, n: int) -> str:
    return "".join(r.choice(alphabet) for _ in range(n))


def pw(r: random.Random, n: int = 0) -> str:
    """A password: letters, digits and a few punctuation marks that need no quoting in JSON, XML or CSV."""
    n = n or r.randint(12, 18)
    body = pick(r, ALNUM + PUNCT, n - 2)
    return body[:3] + r.choice(string.digits) + body[3:] + r.choice(PUNCT)


def pw_url(r: random.Random, n: int = 0) -> str:
    """A password that reads the same percent-encoded or not (RFC 3986 unreserved characters only)."""
    n = n or r.randint(12, 18)
    return pick(r, string.ascii_letters, 2) + pick(r, ALNUM + "-_.~", n - 3) + r.choice(string.digits)


def tok(r: random.Random, n: int = 40) -> str:
    return pick(r, ALNUM, n)


def hexs(r: random.Random, n: int) -> str:
    return pick(r, HEX, n)


def rbytes(r: random.Random, n: int) -> bytes:
    return bytes(r.getrandbits(8) for _ in range(n))


def b64(data: bytes | str) -> str:
    raw = data.encode() if isinstance(data, str) else data
    return base64.b64encode(raw).decode()


def b64url(data: bytes | str) -> str:
    raw = data.encode() if isinstance(data, str) else data
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def uuid4(r: random.Random) -> str:
    h = hexs(r, 32)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{r.choice('89ab')}{h[17:20]}-{h[20:]}"


def jwt(r: random.Random, claims: dict[str, object]) -> str:
    header = {"alg": "ES256", "typ": "JWT", "kid": hexs(r, 16)}
    body = {**claims, "iat": 1741770000 + r.randint(0, 9_000_000), "jti": uuid4(r)}
    return f"{b64url(json.dumps(header, separators=(',', ':')))}.{b64url(json.dumps(body, separators=(',', ':')))}.{pick(r, URLSAFE, 86)}"


def akid(r: random.Random, prefix: str = "AKIA") -> str:
    return prefix + pick(r, UPPER_DIGITS, 16)


def aws_secret(r: random.Random) -> str:
    return pick(r, ALNUM + "+/", 40)


def stamp(r: random.Random) -> str:
    return f"2025-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}T{r.randint(0, 23):02d}:{r.randint(0, 59):02d}:{r.randint(0, 59):02d}"


def dumps(obj: object) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=False)


# --- secret families: HTTP debug output ------------------------------------------------------------------


@secret("https://curl.se/docs/manpage.html#-v")
def curl_verbose_headers(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    t = tok(r, 48)
    yield (
        f'$ curl -v https://api.internal.example/v2/jobs -H "Authorization: Bearer $JOBS_TOKEN"\n* Connected to api.internal.example (10.0.4.12) port 443\n> GET /v2/jobs HTTP/2\n> Host: api.internal.example\n> user-agent: curl/8.5.0\n> accept: */*\n> authorization: Bearer {t}\n>\n< HTTP/2 200\n< content-type: application/json',
        [t],
    )
    cred = b64(f"deploy:{pw(r)}")
    yield (
        f"$ curl -v -u deploy https://nexus.corp.example/service/rest/v1/status\nEnter host password for user 'deploy':\n* Server auth using Basic with user 'deploy'\n> GET /service/rest/v1/status HTTP/1.1\n> Host: nexus.corp.example\n> Authorization: Basic {cred}\n> User-Agent: curl/7.88.1\n< HTTP/1.1 200 OK",
        [cred],
    )
    k, c = hexs(r, 40), pick(r, URLSAFE, 32)
    yield (
        f"> POST /ingest HTTP/1.1\n> Host: metrics.example.net\n> X-Api-Key: {k}\n> Cookie: sid={c}; theme=dark\n> Content-Length: 512\n>\n}} [512 bytes data]\n< HTTP/1.1 202 Accepted",
        [k, c],
    )


@secret("https://httpie.io/docs/cli/authentication")
def httpie_verbose(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    p = pw(r)
    cred = b64(f"ci:{p}")
    yield (
        f'$ http -v -a \'ci:{p}\' POST https://builds.example.org/api/trigger ref=main\nPOST /api/trigger HTTP/1.1\nAccept: application/json, */*;q=0.5\nAuthorization: Basic {cred}\nContent-Type: application/json\nHost: builds.example.org\nUser-Agent: HTTPie/3.2.2\n\n{{\n    "ref": "main"\n}}',
        [p, cred],
    )
    t = pick(r, URLSAFE, 44)
    yield (
        f"$ https -v --auth-type=bearer --auth {t} api.example.dev/me\nGET /me HTTP/1.1\nAccept: */*\nAuthorization: Bearer {t}\nHost: api.example.dev\nUser-Agent: HTTPie/3.2.2\n\nHTTP/1.1 200 OK",
        [t],
    )


@secret("https://docs.python.org/3/library/http.client.html#http.client.HTTPConnection.set_debuglevel")
def python_http_client_debug(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    t = hexs(r, 40)
    yield (
        f">>> http.client.HTTPConnection.debuglevel = 1\n>>> requests.get(url, headers=hdrs)\nsend: b'GET /api/v1/export?format=csv HTTP/1.1\\r\\nHost: crm.example.com\\r\\nUser-Agent: python-requests/2.32.3\\r\\nAccept-Encoding: gzip, deflate\\r\\nAccept: */*\\r\\nConnection: keep-alive\\r\\nAuthorization: Token {t}\\r\\n\\r\\n'\nreply: 'HTTP/1.1 200 OK\\r\\n'\nheader: Content-Type: text/csv",
        [t],
    )
    p = pw_url(r)
    yield (
        f"send: b'POST /oauth/token HTTP/1.1\\r\\nHost: sso.example.com\\r\\nContent-Type: application/x-www-form-urlencoded\\r\\nContent-Length: 88\\r\\n\\r\\n'\nsend: b'grant_type=password&username=ops-robot&password={p}&client_id=cli&scope=admin'\nreply: 'HTTP/1.1 200 OK\\r\\n'",
        [p],
    )


@secret("https://docs.docker.com/reference/cli/docker/inspect/")
def docker_inspect_env(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    p = pw(r)
    yield (
        f'$ docker inspect pg --format \'{{{{json .Config}}}}\' | jq .Env\n[\n  "POSTGRES_USER=app",\n  "POSTGRES_PASSWORD={p}",\n  "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/usr/lib/postgresql/16/bin",\n  "PG_MAJOR=16",\n  "PGDATA=/var/lib/postgresql/data"\n]',
        [p],
    )
    j, s = b64(rbytes(r, 32)), hexs(r, 64)
    yield (
        f'$ docker inspect --format \'{{{{json .Config.Env}}}}\' api-1\n["NODE_ENV=production","PORT=8080","JWT_SECRET={j}","SESSION_SECRET={s}","NODE_VERSION=20.11.1","YARN_VERSION=1.22.19"]',
        [j, s],
    )
    p = pw(r)
    yield (
        f"$ docker inspect -f '{{{{range .Config.Env}}}}{{{{println .}}}}{{{{end}}}}' minio\nMINIO_ROOT_USER=storage-admin\nMINIO_ROOT_PASSWORD={p}\nMINIO_BROWSER=on\nPATH=/opt/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        [p],
    )


@secret("https://docs.docker.com/reference/cli/docker/image/history/")
def docker_history_layers(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    p = pw(r)
    yield (
        f'$ docker history --no-trunc --format \'{{{{.CreatedBy}}}}\' registry.corp.example/api:1.8.2\nCMD ["node" "server.js"]\nENV ARTIFACTORY_USER=ci-reader ARTIFACTORY_PASSWORD={p}\nWORKDIR /app\n/bin/sh -c #(nop) ADD file:4b1be1de1a1e5aa608c688cad2824587262081866180d7368feb79d33ca05953 in /',
        [p],
    )
    p = pw_url(r)
    yield (
        f"IMAGE          CREATED        CREATED BY                                                                                      SIZE\n<missing>      3 days ago     RUN |1 PIP_INDEX_URL=https://build:{p}@pypi.corp.example/simple /bin/sh -c pip install -r requirements.txt   212MB\n<missing>      3 days ago     ARG PIP_INDEX_URL                                                                               0B",
        [p],
    )


# --- Kubernetes ----------------------------------------------------------------------------------------


@secret("https://kubernetes.io/docs/tasks/manage-kubernetes-objects/declarative-config/")
def kubectl_secret_last_applied(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    p = pw(r)
    enc = b64(p)
    yield (
        f'$ kubectl get secret db-creds -o yaml\napiVersion: v1\ndata:\n  password: {enc}\n  username: YXBw\nkind: Secret\nmetadata:\n  annotations:\n    kubectl.kubernetes.io/last-applied-configuration: |\n      {{"apiVersion":"v1","kind":"Secret","metadata":{{"annotations":{{}},"name":"db-creds","namespace":"shop"}},"stringData":{{"password":"{p}","username":"app"}},"type":"Opaque"}}\n  name: db-creds\n  namespace: shop\ntype: Opaque',
        [enc, p],
    )
    k = b64(tok(r, 32))
    inner = json.dumps(
        {
            "apiVersion": "v1",
            "data": {"api-key": k},
            "kind": "Secret",
            "metadata": {"annotations": {}, "name": "billing-api", "namespace": "billing"},
            "type": "Opaque",
        },
        separators=(",", ":"),
    )
    yield (
        "$ kubectl get secret billing-api -n billing -o json\n"
        + dumps(
            {
                "apiVersion": "v1",
                "data": {"api-key": k},
                "kind": "Secret",
                "metadata": {
                    "annotations": {"kubectl.kubernetes.io/last-applied-configuration": inner + "\n"},
                    "name": "billing-api",
                    "namespace": "billing",
                    "resourceVersion": str(r.randint(10**6, 10**7)),
                    "uid": uuid4(r),
                },
                "type": "Opaque",
            }
        ),
        [k],
    )


@secret("https://kubernetes.io/docs/reference/kubectl/jsonpath/")
def kubectl_get_secret_jsonpath(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    p = tok(r, 24)
    enc = b64(p)
    yield (
        f"$ kubectl get secret grafana -n monitoring -o jsonpath='{{.data.admin-password}}'\n{enc}\n$ kubectl get secret grafana -n monitoring -o jsonpath='{{.data.admin-password}}' | base64 -d\n{p}",
        [enc, p],
    )
    t = pick(r, URLSAFE, 40)
    yield (
        f"$ kubectl get secret harbor-robot -o go-template='{{{{range $k,$v := .data}}}}{{{{$k}}}}={{{{$v|base64decode}}}}{{{{\"\\n\"}}}}{{{{end}}}}'\nsecret={t}\nusername=robot$ci-pusher",
        [t],
    )


@secret("https://kubernetes.io/docs/reference/kubectl/generated/kubectl_describe/")
def kubectl_describe_env(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    p = pw(r)
    yield (
        f"$ kubectl describe pod orders-7d9c8b6f5-x2kqp\n...\n    Environment:\n      DATABASE_HOST:      postgres.shop.svc.cluster.local\n      DATABASE_USER:      orders\n      DATABASE_PASSWORD:  {p}\n      REDIS_PASSWORD:     <set to the key 'redis-password' in secret 'redis'>  Optional: false\n    Mounts:\n      /var/run/secrets/kubernetes.io/serviceaccount from kube-api-access-8xk2m (ro)",
        [p],
    )
    p = pw(r)
    yield (
        f"$ kubectl describe configmap mailer-config\nName:         mailer-config\nNamespace:    default\n\nData\n====\nSMTP_HOST:\n----\nsmtp.example.net\nSMTP_PASSWORD:\n----\n{p}\n\nBinaryData\n====\n\nEvents:  <none>",
        [p],
    )


@secret(
    "https://kubernetes.io/docs/reference/kubectl/generated/kubectl_config/kubectl_config_set-credentials/"
)
def kubectl_token_commands(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    t = jwt(
        r,
        {
            "aud": ["https://kubernetes.default.svc"],
            "iss": "https://kubernetes.default.svc",
            "sub": "system:serviceaccount:ci:deployer",
        },
    )
    yield (f"$ kubectl create token deployer -n ci --duration=1h\n{t}", [t])
    t = pick(r, ALNUM, 52)
    yield (f'$ kubectl config set-credentials ci-bot --token={t}\nUser "ci-bot" set.', [t])
    p = pw(r)
    yield (
        f"$ kubectl config set-credentials cluster-admin --username=admin --password='{p}'\nUser \"cluster-admin\" set.\n$ kubectl config set-context admin@lab --cluster=lab --user=cluster-admin",
        [p],
    )


@secret("https://docs.docker.com/reference/cli/docker/login/")
def docker_config_identitytoken(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    t = jwt(r, {"aud": "corpreg.azurecr.io", "grant_type": "refresh_token", "tenant": uuid4(r)})
    yield (
        "$ cat ~/.docker/config.json\n"
        + dumps(
            {
                "auths": {
                    "corpreg.azurecr.io": {
                        "auth": "MDAwMDAwMDAtMDAwMC0wMDAwLTAwMDAtMDAwMDAwMDAwMDAwOg==",
                        "identitytoken": t,
                    }
                },
                "currentContext": "desktop-linux",
            }
        ),
        [t],
    )
    t = pick(r, URLSAFE, 64)
    yield (
        "Contents of /root/.docker/config.json on the runner:\n"
        + dumps(
            {
                "auths": {"registry.gitlab.example": {"registrytoken": t}},
                "credHelpers": {"123456789012.dkr.ecr.eu-west-1.amazonaws.com": "ecr-login"},
            }
        ),
        [t],
    )


# --- git -----------------------------------------------------------------------------------------------


@secret("https://git-scm.com/docs/git-config")
def git_config_list(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    h = b64("x-access-token:ghs_" + tok(r, 36))
    yield (
        f"$ git config --list --show-origin\nfile:.git/config\tcore.repositoryformatversion=0\nfile:.git/config\tcore.bare=false\nfile:.git/config\tremote.origin.url=https://github.com/acme/payments\nfile:.git/config\thttp.https://github.com/.extraheader=AUTHORIZATION: basic {h}\nfile:.git/config\tbranch.main.remote=origin",
        [h],
    )
    p = pw_url(r)
    yield (
        f"$ git config --list\nuser.name=Release Bot\ncredential.helper=cache\nremote.origin.url=https://builder:{p}@git.corp.example/platform/api.git\nremote.origin.fetch=+refs/heads/*:refs/remotes/origin/*",
        [p],
    )
    t = hexs(r, 40)
    yield (
        f"$ git config --global --list\nurl.https://{t}:x-oauth-basic@github.com/.insteadof=https://github.com/\ninit.defaultbranch=main\npull.rebase=true",
        [t],
    )


@secret("https://git-scm.com/docs/git-remote")
def git_remote_verbose(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    t = pick(r, URLSAFE, 32)
    yield (
        f"$ git remote -v\norigin\thttps://x-token-auth:{t}@bitbucket.org/acme/mobile-app.git (fetch)\norigin\thttps://x-token-auth:{t}@bitbucket.org/acme/mobile-app.git (push)",
        [t],
    )
    p = pw_url(r)
    yield (
        f"$ git fetch --all\nFetching origin\nfatal: unable to access 'https://deploy:{p}@git.example.org/ops/infra.git/': Could not resolve host: git.example.org\nerror: could not fetch origin",
        [p],
    )


# --- Terraform and cloud CLIs ----------------------------------------------------------------------------


@secret("https://developer.hashicorp.com/terraform/cli/commands/output")
def terraform_output_json(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    p = pw(r)
    yield (
        "$ terraform output -json\n"
        + dumps(
            {
                "db_endpoint": {
                    "sensitive": False,
                    "type": "string",
                    "value": "orders.cluster-c1x2.eu-west-1.rds.amazonaws.com",
                },
                "db_password": {"sensitive": True, "type": "string", "value": p},
            }
        ),
        [p],
    )
    t = pick(r, URLSAFE, 48)
    yield (f"$ terraform output -raw admin_token\n{t}%\n$ ", [t])
    k = b64(rbytes(r, 150))
    yield (
        "$ terraform output -json ci_key\n"
        + dumps({"sensitive": True, "type": "string", "value": k})
        + "\n(the private key of google_service_account_key.ci, base64)",
        [k],
    )


@secret("https://developer.hashicorp.com/terraform/language/functions/nonsensitive")
def terraform_console_nonsensitive(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    p = pw(r, 24)
    yield (
        f'$ terraform console\n> random_password.db.result\n(sensitive value)\n> nonsensitive(random_password.db.result)\n"{p}"',
        [p],
    )
    k = b64(rbytes(r, 64))
    yield (f'> nonsensitive(azurerm_storage_account.logs.primary_access_key)\n"{k}"\n> exit', [k])


@secret("https://cloud.google.com/sdk/gcloud/reference/auth/print-access-token")
def gcloud_print_token(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    t = "ya29.a0" + pick(r, URLSAFE, 160)
    yield (f"$ gcloud auth print-access-token\n{t}\n$ ", [t])
    t = jwt(
        r,
        {
            "aud": "https://reports-abc123-ew.a.run.app",
            "azp": str(r.randint(10**20, 10**21)),
            "iss": "https://accounts.google.com",
        },
    )
    yield (
        f'+ curl -sS -H \'Authorization: Bearer {t}\' https://reports-abc123-ew.a.run.app/run\n{{"status":"queued"}}',
        [t],
    )
    t = "ya29.c." + pick(r, URLSAFE, 140)
    yield (
        f"ACCESS_TOKEN=$(gcloud auth application-default print-access-token)\n+ ACCESS_TOKEN={t}\n+ curl -H 'Authorization: Bearer ...' https://bigquery.googleapis.com/bigquery/v2/projects/acme/datasets",
        [t],
    )


@secret("https://docs.aws.amazon.com/cli/latest/reference/ecr/get-login-password.html")
def aws_ecr_login_password(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    payload = json.dumps(
        {
            "payload": b64(rbytes(r, 180)),
            "datakey": b64(rbytes(r, 60)),
            "version": "2",
            "type": "DATA_KEY",
            "expiration": 1741800000 + r.randint(0, 10**6),
        },
        separators=(",", ":"),
    )
    t = b64(payload)
    yield (f"$ aws ecr get-login-password --region eu-west-1\n{t}", [t])
    payload = json.dumps(
        {
            "payload": b64(rbytes(r, 150)),
            "datakey": b64(rbytes(r, 60)),
            "version": "2",
            "type": "DATA_KEY",
            "expiration": 1741800000 + r.randint(0, 10**6),
        },
        separators=(",", ":"),
    )
    t = b64(payload)
    yield (
        f"+ aws ecr get-login-password --region us-east-1\n+ docker login --username AWS --password {t} 123456789012.dkr.ecr.us-east-1.amazonaws.com\nWARNING! Using --password via the CLI is insecure. Use --password-stdin.\nLogin Succeeded",
        [t],
    )


@secret("https://learn.microsoft.com/en-us/cli/azure/account#az-account-get-access-token")
def az_get_access_token(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    t = jwt(
        r,
        {
            "aud": "https://management.core.windows.net/",
            "iss": f"https://sts.windows.net/{uuid4(r)}/",
            "oid": uuid4(r),
        },
    )
    yield (
        "$ az account get-access-token\n"
        + dumps(
            {
                "accessToken": t,
                "expiresOn": "2025-03-12 10:41:07.000000",
                "expires_on": 1741772467,
                "subscription": uuid4(r),
                "tenant": uuid4(r),
                "tokenType": "Bearer",
            }
        ),
        [t],
    )
    t = jwt(r, {"aud": "corpreg.azurecr.io", "grant_type": "refresh_token", "tenant": uuid4(r)})
    yield (
        "$ az acr login --name corpreg --expose-token\nYou can perform manual login using the provided access token below, for example: 'docker login loginServer -u 00000000-0000-0000-0000-000000000000 -p accessToken'\n"
        + dumps({"accessToken": t, "loginServer": "corpreg.azurecr.io"}),
        [t],
    )


@secret("https://docs.aws.amazon.com/cli/latest/reference/s3/presign.html")
def aws_s3_presign(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    k, s = akid(r), hexs(r, 64)
    yield (
        f"$ aws s3 presign s3://acme-exports/2025/03/orders.csv --expires-in 3600\nhttps://acme-exports.s3.eu-west-1.amazonaws.com/2025/03/orders.csv?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential={k}%2F20250312%2Feu-west-1%2Fs3%2Faws4_request&X-Amz-Date=20250312T091402Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Signature={s}",
        [k, s],
    )
    k, s = akid(r, "ASIA"), hexs(r, 64)
    st = b64("IQoJb3JpZ2luX2Vj" + tok(r, 300)).replace("+", "%2B").replace("/", "%2F").replace("=", "%3D")
    yield (
        f">>> s3.generate_presigned_url('get_object', Params={{'Bucket': 'ml-artifacts', 'Key': 'model.bin'}}, ExpiresIn=900)\n'https://ml-artifacts.s3.amazonaws.com/model.bin?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential={k}%2F20250312%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20250312T101500Z&X-Amz-Expires=900&X-Amz-SignedHeaders=host&X-Amz-Security-Token={st}&X-Amz-Signature={s}'",
        [k, st, s],
    )


# --- cookies and OAuth -------------------------------------------------------------------------------


@secret("https://developer.mozilla.org/en-US/docs/Web/HTTP/Reference/Headers/Set-Cookie")
def set_cookie_session_ids(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    s = pick(r, LOWER_DIGITS, 26)
    yield (
        f"$ curl -si https://shop.example.com/login -d user=qa -d pass=...\nHTTP/1.1 302 Found\nLocation: /account\nSet-Cookie: PHPSESSID={s}; path=/; secure; HttpOnly; SameSite=Lax\nCache-Control: no-store",
        [s],
    )
    s = pick(r, "0123456789ABCDEF", 32)
    yield (
        f"< HTTP/1.1 200\n< Set-Cookie: JSESSIONID={s}; Path=/portal; Secure; HttpOnly\n...\n> GET /portal/reports HTTP/1.1\n> Cookie: JSESSIONID={s}",
        [s],
    )
    s = "CfDJ8" + pick(r, URLSAFE, 240)
    yield (
        f"response headers:\n  set-cookie: .AspNetCore.Identity.Application={s}; path=/; secure; samesite=lax; httponly\n  x-powered-by: ASP.NET",
        [s],
    )


@secret("https://curl.se/docs/http-cookies.html")
def curl_cookie_jar(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    s = pick(r, URLSAFE, 43)
    yield (
        f"$ cat cookies.txt\n# Netscape HTTP Cookie File\n# https://curl.se/docs/http-cookies.html\n# This file was generated by libcurl! Edit at your own risk.\n\n#HttpOnly_.app.example.com\tTRUE\t/\tTRUE\t1767225600\tsession\t{s}\napp.example.com\tFALSE\t/\tFALSE\t0\tlang\ten",
        [s],
    )
    s = f"eyJhbGciOiJkaXIiLCJlbmMiOiJBMjU2R0NNIn0..{pick(r, URLSAFE, 22)}.{pick(r, URLSAFE, 180)}.{pick(r, URLSAFE, 22)}"
    yield (
        f"# Netscape HTTP Cookie File\ndashboard.example.io\tFALSE\t/\tTRUE\t1769900000\t__Secure-next-auth.session-token\t{s}\ndashboard.example.io\tFALSE\t/\tTRUE\t0\t__Host-next-auth.csrf-token-present\t1",
        [s],
    )


@secret("https://datatracker.ietf.org/doc/html/rfc8628")
def oauth_device_flow(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    d = pick(r, URLSAFE, 43)
    yield (
        "POST /oauth/device/code -> 200\n"
        + dumps(
            {
                "device_code": d,
                "user_code": f"{pick(r, 'BCDFGHJKLMNPQRSTVWXZ', 4)}-{pick(r, 'BCDFGHJKLMNPQRSTVWXZ', 4)}",
                "verification_uri": "https://auth.example.com/device",
                "expires_in": 900,
                "interval": 5,
            }
        )
        + "\nOpen the URL above and enter the code; polling...",
        [d],
    )
    a, f = pick(r, URLSAFE, 64), pick(r, URLSAFE, 64)
    yield (
        "poll 4: POST /oauth/token grant_type=urn:ietf:params:oauth:grant-type:device_code -> 200\n"
        + dumps(
            {
                "access_token": a,
                "token_type": "Bearer",
                "expires_in": 3600,
                "refresh_token": f,
                "scope": "repo:read offline_access",
            }
        ),
        [a, f],
    )


@secret("https://datatracker.ietf.org/doc/html/rfc8693")
def oauth_token_exchange(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    t = jwt(
        r,
        {
            "aud": "https://sts.example.com",
            "iss": "https://token.actions.githubusercontent.com",
            "sub": "repo:acme/api:ref:refs/heads/main",
        },
    )
    yield (
        f"+ curl -s https://sts.example.com/token -d grant_type=urn:ietf:params:oauth:grant-type:token-exchange -d subject_token={t} -d subject_token_type=urn:ietf:params:oauth:token-type:jwt -d audience=deploy-api",
        [t],
    )
    a = pick(r, URLSAFE, 72)
    yield (
        "Token exchange response:\n"
        + dumps(
            {
                "access_token": a,
                "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
                "token_type": "Bearer",
                "expires_in": 60,
            }
        ),
        [a],
    )


# --- SQL and directories -----------------------------------------------------------------------------


@secret("https://docs.snowflake.com/en/sql-reference/sql/create-user")
def snowflake_sql_user(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    p = pw(r)
    yield (
        f"etl#LOADER_WH@ANALYTICS.PUBLIC>CREATE USER etl_svc PASSWORD = '{p}' DEFAULT_ROLE = loader MUST_CHANGE_PASSWORD = FALSE;\n+--------------------------------------+\n| status                               |\n|--------------------------------------|\n| User ETL_SVC successfully created.   |\n+--------------------------------------+",
        [p],
    )
    p = pw(r)
    yield (f"-- rotate after the incident\nALTER USER dbt_runner SET PASSWORD = '{p}';", [p])


@secret("https://clickhouse.com/docs/sql-reference/statements/create/user")
def clickhouse_sql_user(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    p = pw(r)
    yield (
        f"clickhouse-01 :) CREATE USER grafana IDENTIFIED WITH sha256_password BY '{p}' HOST IP '10.0.0.0/8';\n\nOk.\n\n0 rows in set. Elapsed: 0.004 sec.",
        [p],
    )
    p = pw(r)
    yield (f"ALTER USER ingest IDENTIFIED BY '{p}' SETTINGS max_memory_usage = 10000000000;", [p])


@secret("https://docs.oracle.com/en/database/oracle/oracle-database/19/sqlrf/CREATE-DATABASE-LINK.html")
def oracle_database_link(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    p = pw(r)
    yield (f"CREATE DATABASE LINK sales_link CONNECT TO sales_ro IDENTIFIED BY \"{p}\" USING 'SALESDB';", [p])
    p = tok(r, 14)
    yield (
        f"SQL> CREATE PUBLIC DATABASE LINK hr_remote CONNECT TO hr_reader IDENTIFIED BY {p} USING '(DESCRIPTION=(ADDRESS=(PROTOCOL=TCP)(HOST=hrdb.corp.example)(PORT=1521))(CONNECT_DATA=(SERVICE_NAME=HRPDB)))';\n\nDatabase link created.",
        [p],
    )


@secret("https://www.mongodb.com/docs/manual/reference/method/db.createUser/")
def mongodb_create_user(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    p = pw(r)
    yield (
        f'test> use admin\nswitched to db admin\nadmin> db.createUser({{ user: "reporting", pwd: "{p}", roles: [ {{ role: "read", db: "sales" }} ] }})\n{{ ok: 1 }}',
        [p],
    )
    p = pw(r)
    yield (
        f'rs0 [primary] admin> db.changeUserPassword("orders-api", "{p}")\n{{ ok: 1, \'$clusterTime\': {{ ... }} }}',
        [p],
    )
    p = pw(r)
    yield (
        f'mongosh> db.getSiblingDB("inventory").updateUser("sync", {{ pwd: "{p}", roles: ["readWrite"] }})',
        [p],
    )


@secret("https://datatracker.ietf.org/doc/html/rfc2849")
def ldif_user_password(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    p = pw(r)
    yield (
        f"dn: uid=jdoe,ou=people,dc=example,dc=org\nobjectClass: inetOrgPerson\nuid: jdoe\ncn: Jo Doe\nsn: Doe\nuserPassword: {p}",
        [p],
    )
    e = b64(pw(r))
    yield (
        f"$ ldapsearch -LLL -x -D cn=admin,dc=example,dc=org -W '(uid=svc-backup)' userPassword\ndn: uid=svc-backup,ou=services,dc=example,dc=org\nuserPassword:: {e}",
        [e],
    )
    p = pw(r)
    yield (
        f'$ ldapmodify -x -D cn=admin,dc=example,dc=org -W <<EOF\ndn: uid=kiosk,ou=people,dc=example,dc=org\nchangetype: modify\nreplace: userPassword\nuserPassword: {p}\nEOF\nmodifying entry "uid=kiosk,ou=people,dc=example,dc=org"',
        [p],
    )


# --- Windows, Jenkins ----------------------------------------------------------------------------------


@secret(
    "https://learn.microsoft.com/en-us/windows-hardware/customize/desktop/unattend/microsoft-windows-shell-setup-useraccounts-administratorpassword"
)
def windows_unattend(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    p = pw(r)
    yield (
        f'<component name="Microsoft-Windows-Shell-Setup" processorArchitecture="amd64">\n  <UserAccounts>\n    <AdministratorPassword>\n      <Value>{p}</Value>\n      <PlainText>true</PlainText>\n    </AdministratorPassword>\n  </UserAccounts>\n</component>',
        [p],
    )
    p1, p2 = pw(r), pw(r)
    yield (
        f'<AutoLogon>\n  <Password>\n    <Value>{p1}</Value>\n    <PlainText>true</PlainText>\n  </Password>\n  <Enabled>true</Enabled>\n  <Username>kiosk</Username>\n</AutoLogon>\n<LocalAccounts>\n  <LocalAccount wcm:action="add">\n    <Password>\n      <Value>{p2}</Value>\n      <PlainText>true</PlainText>\n    </Password>\n    <Name>support</Name>\n    <Group>Administrators</Group>\n  </LocalAccount>\n</LocalAccounts>',
        [p1, p2],
    )
    o = b64((pw(r) + "AdministratorPassword").encode("utf-16-le"))
    yield (
        f"C:\\Windows\\Panther\\unattend.xml:\n<AdministratorPassword>\n  <Value>{o}</Value>\n  <PlainText>false</PlainText>\n</AdministratorPassword>",
        [o],
    )


@secret(
    "https://learn.microsoft.com/en-us/openspecs/windows_protocols/ms-gppref/2c15cbf0-f086-4c74-8b70-1f2fa45dd4be"
)
def gpp_cpassword(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    c = b64(rbytes(r, 32)).rstrip("=")
    yield (
        f'\\\\corp.example\\SYSVOL\\corp.example\\Policies\\{{31B2F340-016D-11D2-945F-00C04FB984F9}}\\Machine\\Preferences\\Groups\\Groups.xml:\n<User clsid="{{DF5F1855-51E5-4d24-8B1A-D9BDE98BA1D1}}" name="LocalAdmin" image="2" changed="2019-04-11 09:12:44" uid="{{{uuid4(r).upper()}}}"><Properties action="U" newName="" fullName="" description="" cpassword="{c}" changeLogon="0" noChange="1" neverExpires="1" acctDisabled="0" userName="LocalAdmin"/></User>',
        [c],
    )
    c = b64(rbytes(r, 48)).rstrip("=")
    yield (
        f'ScheduledTasks.xml: <Task clsid="{{2DEECB1C-261F-4e13-9B21-16FB83BC03BD}}" name="NightlyBackup"><Properties action="U" name="NightlyBackup" runAs="CORP\\svc_backup" cpassword="{c}" logonType="Password"/></Task>',
        [c],
    )


@secret("https://www.jenkins.io/doc/developer/security/secrets/")
def jenkins_credentials_xml(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    s = "{AQAAABAAAAAQ" + b64(rbytes(r, 48)) + "}"
    yield (
        f"<com.cloudbees.plugins.credentials.impl.UsernamePasswordCredentialsImpl>\n  <scope>GLOBAL</scope>\n  <id>nexus-deploy</id>\n  <description>Nexus deploy user</description>\n  <username>deployer</username>\n  <password>{s}</password>\n</com.cloudbees.plugins.credentials.impl.UsernamePasswordCredentialsImpl>",
        [s],
    )
    s = "{AQAAABAAAAAw" + b64(rbytes(r, 60)) + "}"
    yield (
        f"<org.jenkinsci.plugins.plaincredentials.impl.StringCredentialsImpl>\n  <scope>GLOBAL</scope>\n  <id>slack-webhook</id>\n  <secret>{s}</secret>\n</org.jenkinsci.plugins.plaincredentials.impl.StringCredentialsImpl>",
        [s],
    )
    s, p = "{AQAAABAAAAAQ" + b64(rbytes(r, 45)) + "}", pw(r)
    yield (f'Script Console:\nprintln(hudson.util.Secret.decrypt("{s}"))\n\nResult:\n{p}', [s, p])


# --- API clients and password managers -------------------------------------------------------------------


@secret("https://learning.postman.com/docs/sending-requests/variables/managing-environments/")
def postman_environment(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    k = tok(r, 40)
    yield (
        dumps(
            {
                "id": uuid4(r),
                "name": "prod",
                "values": [
                    {
                        "key": "baseUrl",
                        "value": "https://api.example.com",
                        "type": "default",
                        "enabled": True,
                    },
                    {"key": "apiKey", "value": k, "type": "secret", "enabled": True},
                ],
                "_postman_variable_scope": "environment",
                "_postman_exported_using": "Postman/11.2.0",
            }
        ),
        [k],
    )
    t = pick(r, URLSAFE, 56)
    yield (
        '"auth": ' + dumps({"type": "bearer", "bearer": [{"key": "token", "value": t, "type": "string"}]}),
        [t],
    )
    p = pw(r)
    yield (
        '"auth": '
        + dumps(
            {
                "type": "basic",
                "basic": [
                    {"key": "password", "value": p, "type": "string"},
                    {"key": "username", "value": "svc-reports", "type": "string"},
                ],
            }
        ),
        [p],
    )


@secret("https://docs.usebruno.com/secrets-management/overview")
def bruno_collection(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    t = tok(r, 36)
    yield (
        f"$ cat environments/prod.bru\nvars {{\n  baseUrl: https://api.example.com\n  apiToken: {t}\n}}",
        [t],
    )
    t = pick(r, URLSAFE, 48)
    yield (
        f"meta {{\n  name: list invoices\n  type: http\n  seq: 3\n}}\n\nget {{\n  url: {{{{baseUrl}}}}/invoices\n  auth: bearer\n}}\n\nauth:bearer {{\n  token: {t}\n}}",
        [t],
    )
    p = pw(r)
    yield (f"auth:basic {{\n  username: admin\n  password: {p}\n}}", [p])


@secret("https://support.google.com/chrome/answer/95606")
def browser_password_csv(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    p1, p2 = pw(r), pw(r)
    yield (
        f"$ head -3 'Chrome Passwords.csv'\nname,url,username,password,note\nexample.com,https://example.com/login,jdoe,{p1},\ngrafana.corp.example,https://grafana.corp.example/login,admin,{p2},staging",
        [p1, p2],
    )
    p = pw(r)
    yield (
        f'"url","username","password","httpRealm","formActionOrigin","guid","timeCreated","timeLastUsed","timePasswordChanged"\n"https://router.home.arpa","admin","{p}",,"https://router.home.arpa","{{{uuid4(r)}}}","1709251200000","1741770000000","1709251200000"',
        [p],
    )


@secret("https://keepassxc.org/docs/KeePassXC_UserGuide#_exporting_databases")
def keepassxc_csv(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    p = pw(r)
    yield (
        f'"Group","Title","Username","Password","URL","Notes","TOTP","Icon","Last Modified","Created"\n"Root/Infra","Core switch","admin","{p}","https://10.0.0.2","","","0","2025-02-01T10:00:00Z","2023-06-12T08:30:00Z"',
        [p],
    )
    p, s = pw(r), pick(r, B32, 32)
    yield (
        f'"Root/SaaS","Registrar","acme-ops","{p}","https://registrar.example","2FA enforced","otpauth://totp/Registrar:acme-ops?secret={s}&period=30&digits=6&issuer=Registrar","1","2025-01-20T09:00:00Z","2022-11-03T14:11:00Z"',
        [p, s],
    )


@secret("https://bitwarden.com/help/export-your-data/")
def bitwarden_json_export(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    p, s = pw(r), pick(r, B32, 32)
    yield (
        dumps(
            {
                "id": uuid4(r),
                "type": 1,
                "name": "AWS root",
                "login": {
                    "uris": [{"match": None, "uri": "https://signin.aws.amazon.com"}],
                    "username": "root-acct-owner",
                    "password": p,
                    "totp": s,
                },
            }
        ),
        [p, s],
    )
    p, k = pw(r), tok(r, 40)
    yield (
        dumps(
            {
                "type": 1,
                "name": "Billing portal",
                "login": {"username": "finance", "password": p},
                "fields": [{"name": "API key", "value": k, "type": 1}],
            }
        ),
        [p, k],
    )


# --- source code ----------------------------------------------------------------------------------------


@secret("https://pkg.go.dev/net/smtp#PlainAuth")
def go_source(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    p = pw(r)
    yield (
        f'auth := smtp.PlainAuth("", "alerts@corp.example", "{p}", "smtp.corp.example")\nerr := smtp.SendMail("smtp.corp.example:587", auth, from, to, msg)',
        [p],
    )
    p = pw(r)
    yield (
        f'rdb := redis.NewClient(&redis.Options{{\n\tAddr:     "cache.internal:6379",\n\tPassword: "{p}",\n\tDB:       0,\n}})',
        [p],
    )
    k = tok(r, 32)
    yield (
        f'var signingKey = []byte("{k}")\n\nfunc sign(c jwt.Claims) (string, error) {{\n\treturn jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(signingKey)\n}}',
        [k],
    )


@secret("https://docs.rs/sqlx/latest/sqlx/postgres/struct.PgConnectOptions.html")
def rust_source(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    p = pw(r)
    yield (
        f'let opts = PgConnectOptions::new()\n    .host("db.internal")\n    .username("ledger")\n    .password("{p}")\n    .database("ledger");',
        [p],
    )
    p = pw(r)
    yield (
        f'let creds = Credentials::new("mailer".to_owned(), "{p}".to_owned());\nlet mailer = SmtpTransport::relay("smtp.example.net")?.credentials(creds).build();',
        [p],
    )
    k = hexs(r, 64)
    yield (f'const HMAC_SECRET: &[u8] = b"{k}";', [k])


@secret("https://square.github.io/okhttp/5.x/okhttp/okhttp3/-credentials/")
def kotlin_source(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    p = pw(r)
    yield (
        f'val credential = Credentials.basic("svc-android", "{p}")\nval request = chain.request().newBuilder().header("Authorization", credential).build()',
        [p],
    )
    k = tok(r, 39)
    yield (
        f'android {{\n    defaultConfig {{\n        buildConfigField("String", "TILES_API_KEY", "\\"{k}\\"")\n    }}\n}}',
        [k],
    )
    s = pick(r, URLSAFE, 40)
    yield (
        f'object AuthConfig {{\n    const val CLIENT_ID = "mobile-app"\n    private const val CLIENT_SECRET = "{s}"\n}}',
        [s],
    )


@secret("https://developer.apple.com/documentation/foundation/urlcredential")
def swift_source(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    p = pw(r)
    yield (
        f'let credential = URLCredential(user: "kiosk", password: "{p}", persistence: .forSession)\ncompletionHandler(.useCredential, credential)',
        [p],
    )
    t = tok(r, 48)
    yield (
        f'var request = URLRequest(url: URL(string: "https://api.example.com/v1/feed")!)\nrequest.setValue("Bearer {t}", forHTTPHeaderField: "Authorization")',
        [t],
    )


@secret("https://learn.microsoft.com/en-us/dotnet/api/system.net.http.headers.authenticationheadervalue")
def csharp_source(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    t = pick(r, URLSAFE, 52)
    yield (
        f'client.DefaultRequestHeaders.Authorization = new AuthenticationHeaderValue("Bearer", "{t}");',
        [t],
    )
    p = pw(r)
    yield (
        f'var builder = new SqlConnectionStringBuilder\n{{\n    DataSource = "sql01.corp.example",\n    InitialCatalog = "Payroll",\n    UserID = "payroll_app",\n    Password = "{p}",\n}};',
        [p],
    )
    k, s = akid(r), aws_secret(r)
    yield (
        f'var creds = new BasicAWSCredentials("{k}", "{s}");\nvar s3 = new AmazonS3Client(creds, RegionEndpoint.EUWest1);',
        [k, s],
    )


@secret("https://hexdocs.pm/ecto/Ecto.Repo.html")
def elixir_config(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    p = pw(r)
    yield (
        f'config :shop, Shop.Repo,\n  username: "shop",\n  password: "{p}",\n  hostname: "db.internal",\n  pool_size: 10',
        [p],
    )
    k = b64(rbytes(r, 48))
    yield (
        f'config :shop, ShopWeb.Endpoint,\n  url: [host: "shop.example.com", port: 443],\n  secret_key_base: "{k}"',
        [k],
    )
    a, s = akid(r), aws_secret(r)
    yield (
        f'config :ex_aws,\n  access_key_id: "{a}",\n  secret_access_key: "{s}",\n  region: "eu-central-1"',
        [a, s],
    )


@secret("https://github.com/openresty/lua-resty-redis#auth")
def lua_source(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    p = pw(r)
    yield (
        f'local red = redis:new()\nred:set_timeouts(1000, 1000, 1000)\nlocal ok, err = red:connect("127.0.0.1", 6379)\nlocal res, err = red:auth("{p}")',
        [p],
    )
    t = tok(r, 44)
    yield (f'access_by_lua_block {{\n    ngx.req.set_header("Authorization", "Bearer {t}")\n}}', [t])


@secret("https://dbi.r-dbi.org/reference/dbConnect.html")
def r_source(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    p = pw(r)
    yield (
        f'con <- DBI::dbConnect(RPostgres::Postgres(), dbname = "warehouse", host = "dwh.internal",\n                      user = "analyst", password = "{p}")',
        [p],
    )
    k = hexs(r, 40)
    yield (f'Sys.setenv(WAREHOUSE_API_KEY = "{k}")\nres <- httr2::request(base) |> httr2::req_perform()', [k])
    u = uuid4(r)
    yield (
        f"$ cat ~/.Renviron\nR_LIBS_USER=~/R/library\nDATAVERSE_SERVER=dataverse.harvard.edu\nDATAVERSE_KEY={u}",
        [u],
    )


# --- agents, transcripts, CI logs --------------------------------------------------------------------------


@secret("https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/overview")
def agent_tool_call_args(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    p = pw_url(r)
    yield (
        json.dumps(
            {
                "type": "tool_use",
                "id": "toolu_01" + tok(r, 22),
                "name": "bash",
                "input": {
                    "command": f"PGPASSWORD={p} psql -h db.internal -U app -c 'select count(*) from orders'"
                },
            }
        ),
        [p],
    )
    t = tok(r, 48)
    args = json.dumps(
        {
            "url": "https://api.example.com/v1/orders",
            "method": "GET",
            "headers": {"Authorization": f"Bearer {t}"},
        }
    )
    yield (
        json.dumps(
            {
                "id": "call_" + tok(r, 24),
                "type": "function",
                "function": {"name": "http_request", "arguments": args},
            }
        ),
        [t],
    )
    p = pw_url(r)
    yield (
        json.dumps(
            {
                "name": "write_file",
                "input": {
                    "path": ".env",
                    "content": f"REDIS_URL=redis://default:{p}@cache:6379/0\nLOG_LEVEL=info\n",
                },
            }
        ),
        [p],
    )


@secret("https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use")
def agent_tool_result(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    p = pw_url(r)
    yield (
        json.dumps(
            {
                "type": "tool_result",
                "tool_use_id": "toolu_01" + tok(r, 22),
                "content": f"DATABASE_URL=postgres://app:{p}@db.internal:5432/app\nPORT=8080\nLOG_LEVEL=debug\n",
            }
        ),
        [p],
    )
    t = tok(r, 40)
    yield (
        f"● Bash(cat config/secrets.yml)\n  ⎿  production:\n       payments_api_key: {t}\n       webhook_url: https://hooks.example.com/in\n● The key is hard-coded here; I'll move it to an environment variable.",
        [t],
    )


@secret("https://platform.openai.com/docs/api-reference/chat/create")
def llm_chat_paste(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    k = hexs(r, 40)
    yield (
        json.dumps(
            {
                "role": "user",
                "content": f"this keeps returning 401, here's my key {k} — what am I doing wrong?",
            },
            ensure_ascii=False,
        ),
        [k],
    )
    p = pw_url(r)
    yield (
        f'User: the staging db password is {p}, can you write the migration command?\nAssistant: Sure, run:\n    psql "postgresql://app:{p}@staging-db.internal/app" -f migrations/0042.sql\nand rotate the password afterwards since it is now in this chat.',
        [p],
    )


@secret("https://modelcontextprotocol.io/quickstart/user")
def mcp_server_config(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    p = pw_url(r)
    yield (
        "claude_desktop_config.json:\n"
        + dumps(
            {
                "mcpServers": {
                    "postgres": {
                        "command": "npx",
                        "args": [
                            "-y",
                            "@modelcontextprotocol/server-postgres",
                            f"postgresql://readonly:{p}@localhost:5432/app",
                        ],
                    }
                }
            }
        ),
        [p],
    )
    k = tok(r, 31)
    yield (
        dumps(
            {
                "mcpServers": {
                    "search": {"command": "npx", "args": ["-y", "search-mcp"], "env": {"SEARCH_API_KEY": k}}
                }
            }
        ),
        [k],
    )
    t = pick(r, URLSAFE, 54)
    yield (
        ".mcp.json:\n"
        + dumps(
            {
                "mcpServers": {
                    "tracker": {
                        "type": "http",
                        "url": "https://mcp.tracker.example/mcp",
                        "headers": {"Authorization": f"Bearer {t}"},
                    }
                }
            }
        ),
        [t],
    )


@secret(
    "https://docs.github.com/en/actions/reference/workflows-and-actions/workflow-commands#masking-a-value-in-a-log"
)
def github_actions_before_mask(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    t = tok(r, 40)
    yield (
        f'2025-03-12T09:14:02.1183321Z ##[group]Run TOKEN=$(./scripts/fetch-deploy-token.sh)\n2025-03-12T09:14:02.1184010Z   echo "fetched $TOKEN"\n2025-03-12T09:14:02.1184551Z   echo "::add-mask::$TOKEN"\n2025-03-12T09:14:02.1185002Z ##[endgroup]\n2025-03-12T09:14:03.5521876Z fetched {t}',
        [t],
    )
    p = pw(r)
    yield (
        f'2025-03-12T10:02:11.0021211Z Run aws secretsmanager get-secret-value --secret-id ci/db --query SecretString --output text\n2025-03-12T10:02:12.4410982Z {{"username":"ci","password":"{p}"}}\n2025-03-12T10:02:12.4471230Z Run echo "::add-mask::$(jq -r .password secret.json)"',
        [p],
    )


@secret(
    "https://docs.github.com/en/actions/reference/workflows-and-actions/workflow-commands#setting-an-output-parameter"
)
def github_actions_set_output(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    p = pw(r)
    yield (
        f"2025-03-12T09:20:41.7712030Z + echo 'db_password={p}'\n2025-03-12T09:20:41.7713101Z + echo 'db_host=orders.internal'\n2025-03-12T09:20:41.7790432Z ##[group]Run ./deploy.sh",
        [p],
    )
    t = pick(r, URLSAFE, 44)
    yield (
        f"##[warning]The `set-output` command is deprecated and will be disabled soon. Please upgrade to using Environment Files.\n::set-output name=registry_token::{t}",
        [t],
    )


@secret("https://docs.ansible.com/ansible/latest/reference_appendices/logging.html")
def ansible_verbose_module_args(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    p = pw(r)
    yield (
        "TASK [create app database] ****\nok: [db1] => "
        + json.dumps(
            {
                "changed": False,
                "db": "app",
                "invocation": {
                    "module_args": {
                        "login_host": "localhost",
                        "login_password": p,
                        "login_user": "postgres",
                        "name": "app",
                        "state": "present",
                    }
                },
            }
        ),
        [p],
    )
    p = pw(r)
    yield (
        f"TASK [users : set service passwords] ****\nchanged: [web2] => (item={{'name': 'api', 'password': '{p}'}})\nok: [web2] => (item={{'name': 'worker', 'password': None}})",
        [p],
    )


# --- process and wire traces ----------------------------------------------------------------------------


@secret("https://man7.org/linux/man-pages/man1/strace.1.html")
def strace_syscalls(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    p = pw(r)
    yield (
        f'$ strace -f -e trace=execve ./backup.sh\nexecve("/usr/bin/mysqldump", ["mysqldump", "-h", "db1", "-u", "backup", "-p{p}", "--single-transaction", "crm"], 0x7ffd5c1e8a40 /* 24 vars */) = 0',
        [p],
    )
    p = tok(r, 16)
    yield (
        f'connect(5, {{sa_family=AF_INET, sin_port=htons(6379), sin_addr=inet_addr("10.0.2.15")}}, 16) = 0\nwrite(5, "*2\\r\\n$4\\r\\nAUTH\\r\\n$16\\r\\n{p}\\r\\n", 37) = 37\nread(5, "+OK\\r\\n", 16384) = 5',
        [p],
    )


@secret("https://man7.org/linux/man-pages/man1/ps.1.html")
def ps_cmdline(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    p = pw_url(r)
    yield (
        f"$ ps aux | grep pg_dump\nroot      2231  4.1  0.3 221340 28112 ?  S  03:00   0:12 /usr/bin/pg_dump --dbname=postgresql://backup:{p}@db:5432/app -Fc -f /backups/app.dump",
        [p],
    )
    p = pw(r)
    yield (
        f"$ ps -ef | grep java\napp        881     1  2 09:12 ?        00:03:11 java -Xmx2g -Dspring.datasource.username=ledger -Dspring.datasource.password={p} -jar /opt/ledger/app.jar",
        [p],
    )


@secret("https://www.tcpdump.org/manpages/tcpdump.1.html")
def tcpdump_ascii(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    cred = b64(f"prometheus:{pw(r)}")
    yield (
        f"$ sudo tcpdump -A -i eth0 'tcp port 80'\n10:42:17.118230 IP 10.0.0.5.51544 > 10.0.0.9.http: Flags [P.], seq 1:182, ack 1, win 502, length 181: HTTP: GET /metrics HTTP/1.1\nE.....@.@...\nGET /metrics HTTP/1.1\nHost: 10.0.0.9\nUser-Agent: Prometheus/2.51.0\nAuthorization: Basic {cred}\nAccept: text/plain",
        [cred],
    )
    p = pw_url(r)
    yield (
        f"10:44:02.551003 IP 10.0.0.7.40322 > 10.0.0.9.http: Flags [P.], length 64: HTTP: POST /login HTTP/1.1\n...\nContent-Type: application/x-www-form-urlencoded\n\nusername=admin&password={p}&remember=1",
        [p],
    )


@secret("https://redis.io/docs/latest/commands/monitor/")
def redis_monitor(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    p = pw(r)
    yield (
        f'$ redis-cli MONITOR\nOK\n1741770000.123456 [0 10.0.3.7:53712] "AUTH" "worker" "{p}"\n1741770000.124010 [0 10.0.3.7:53712] "SELECT" "2"\n1741770000.124388 [2 10.0.3.7:53712] "LPOP" "jobs"',
        [p],
    )
    p = pw(r)
    yield (
        f'1741771234.998120 [0 127.0.0.1:40112] "CONFIG" "SET" "requirepass" "{p}"\n1741771235.000301 [0 127.0.0.1:40112] "CONFIG" "REWRITE"',
        [p],
    )


@secret("https://www.postgresql.org/docs/current/runtime-config-logging.html")
def postgres_log_statement(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    p = pw(r)
    yield (
        f"2025-03-12 09:14:02.123 UTC [4412] postgres@app LOG:  statement: ALTER ROLE reporting WITH LOGIN PASSWORD '{p}';",
        [p],
    )
    p = pw(r)
    yield (
        f"2025-03-12 09:20:17.771 UTC [4520] postgres@postgres ERROR:  syntax error at or near \"PASWORD\" at character 23\n2025-03-12 09:20:17.771 UTC [4520] postgres@postgres STATEMENT:  CREATE USER etl WITH PASWORD '{p}';",
        [p],
    )


# --- editor and platform config ---------------------------------------------------------------------------


@secret("https://code.visualstudio.com/docs/debugtest/debugging-configuration")
def vscode_launch_json(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    p = pw(r)
    yield (
        dumps(
            {
                "version": "0.2.0",
                "configurations": [
                    {
                        "name": "Django",
                        "type": "debugpy",
                        "request": "launch",
                        "program": "${workspaceFolder}/manage.py",
                        "args": ["runserver"],
                        "env": {"DJANGO_SETTINGS_MODULE": "app.settings.dev", "DATABASE_PASSWORD": p},
                    }
                ],
            }
        ),
        [p],
    )
    t = tok(r, 40)
    yield (
        dumps(
            {
                "name": "sync job",
                "type": "node",
                "request": "launch",
                "program": "${workspaceFolder}/bin/sync.js",
                "args": ["--api-key", t, "--dry-run"],
            }
        ),
        [t],
    )


@secret("https://containers.dev/implementors/json_reference/")
def devcontainer_json(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    p = pw(r)
    yield (
        ".devcontainer/devcontainer.json:\n"
        + dumps(
            {
                "name": "api",
                "image": "mcr.microsoft.com/devcontainers/python:3.12",
                "containerEnv": {"NPM_REGISTRY_USER": "dev", "NPM_REGISTRY_PASSWORD": p},
            }
        ),
        [p],
    )
    u = uuid4(r)
    yield (
        dumps(
            {"name": "scanner", "image": "node:20", "runArgs": ["--env", f"SNYK_TOKEN={u}", "--network=host"]}
        ),
        [u],
    )


@secret("https://devcenter.heroku.com/articles/config-vars")
def heroku_config_output(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    p, m = hexs(r, 64), hexs(r, 32)
    yield (
        f"$ heroku config -a shop-prod\n=== shop-prod Config Vars\nDATABASE_URL:     postgres://u{pick(r, LOWER_DIGITS, 13)}:{p}@ec2-52-1-2-3.compute-1.amazonaws.com:5432/d{pick(r, LOWER_DIGITS, 13)}\nRAILS_ENV:        production\nRAILS_MASTER_KEY: {m}",
        [p, m],
    )
    s = hexs(r, 64)
    yield (f"$ heroku config:get SECRET_TOKEN -a api-staging\n{s}", [s])


@secret("https://vercel.com/docs/cli/env")
def vercel_env_pull(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    t, p = (
        jwt(
            r,
            {
                "aud": "https://vercel.com/acme",
                "iss": "https://oidc.vercel.com/acme",
                "sub": "owner:acme:project:web:environment:development",
            },
        ),
        tok(r, 12),
    )
    yield (
        f'$ vercel env pull .env.local\n> Downloading `development` Environment Variables for acme/web\n✅  Created .env.local file\n$ cat .env.local\n# Created by Vercel CLI\nVERCEL_OIDC_TOKEN="{t}"\nPOSTGRES_URL="postgres://default:{p}@ep-quiet-sun-a1b2c3.eu-central-1.aws.example.tech:5432/verceldb"',
        [t, p],
    )
    k = b64(rbytes(r, 45))
    yield (
        f'$ cat .env.development.local\nKV_URL="rediss://cache.example.io:6379"\nKV_REST_API_TOKEN="{k}"\nKV_REST_API_READ_ONLY_TOKEN="(unset)"',
        [k],
    )


@secret("https://cli.github.com/manual/gh_auth_status")
def gh_auth_token_output(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    t = "gho_" + tok(r, 36)
    yield (
        f"$ gh auth status --show-token\ngithub.com\n  ✓ Logged in to github.com account octo-dev (keyring)\n  - Active account: true\n  - Git operations protocol: https\n  - Token: {t}\n  - Token scopes: 'gist', 'read:org', 'repo', 'workflow'",
        [t],
    )
    t = "gho_" + tok(r, 36)
    yield (f"$ gh auth token\n{t}\n$ export GH_TOKEN=$(gh auth token)", [t])


# --- secret stores printing their values -----------------------------------------------------------------


@secret("https://developer.hashicorp.com/vault/docs/commands/kv/get")
def vault_kv_get(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    p = pw(r)
    yield (
        f"$ vault kv get secret/orders/db\n===== Secret Path =====\nsecret/data/orders/db\n\n======= Metadata =======\nKey                Value\n---                -----\ncreated_time       2025-03-01T12:00:00.000000Z\nversion            4\n\n====== Data ======\nKey         Value\n---         -----\npassword    {p}\nusername    orders",
        [p],
    )
    k = tok(r, 40)
    yield (
        "$ vault kv get -format=json secret/billing/psp\n"
        + dumps(
            {
                "request_id": uuid4(r),
                "lease_duration": 0,
                "data": {"data": {"api_key": k}, "metadata": {"version": 2, "destroyed": False}},
            }
        ),
        [k],
    )
    p = pw(r)
    yield (f"$ vault kv get -field=password secret/ldap/bind\n{p}", [p])


@secret("https://docs.aws.amazon.com/cli/latest/reference/secretsmanager/get-secret-value.html")
def aws_cli_secret_values(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    p = pw(r)
    inner = json.dumps(
        {
            "username": "admin",
            "password": p,
            "engine": "postgres",
            "host": "orders.cluster-c1x2.eu-west-1.rds.amazonaws.com",
            "port": 5432,
        },
        separators=(",", ":"),
    )
    yield (
        "$ aws secretsmanager get-secret-value --secret-id prod/orders/db\n"
        + dumps(
            {
                "ARN": "arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/orders/db-" + tok(r, 6),
                "Name": "prod/orders/db",
                "VersionId": uuid4(r),
                "SecretString": inner,
                "VersionStages": ["AWSCURRENT"],
            }
        ),
        [p],
    )
    p = pw(r)
    yield (
        "$ aws ssm get-parameter --name /prod/ldap/bind-password --with-decryption\n"
        + dumps(
            {
                "Parameter": {
                    "Name": "/prod/ldap/bind-password",
                    "Type": "SecureString",
                    "Value": p,
                    "Version": 3,
                    "ARN": "arn:aws:ssm:eu-west-1:123456789012:parameter/prod/ldap/bind-password",
                    "DataType": "text",
                }
            }
        ),
        [p],
    )


@secret("https://learn.microsoft.com/en-us/cli/azure/keyvault/secret#az-keyvault-secret-show")
def az_keyvault_secret_show(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    p = pw(r)
    yield (
        "$ az keyvault secret show --vault-name kv-prod --name sql-admin\n"
        + dumps(
            {
                "attributes": {"enabled": True, "recoveryLevel": "Recoverable+Purgeable"},
                "id": f"https://kv-prod.vault.azure.net/secrets/sql-admin/{hexs(r, 32)}",
                "name": "sql-admin",
                "value": p,
            }
        ),
        [p],
    )
    p = pw(r)
    yield (f"$ az keyvault secret show --vault-name kv-dev --name redis-key --query value -o tsv\n{p}", [p])


@secret("https://developer.1password.com/docs/cli/reference/management-commands/item/#item-get")
def onepassword_cli_output(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    p = pw(r)
    yield (
        f'$ op item get "Prod DB" --vault Infra --reveal\nID:          {pick(r, LOWER_DIGITS, 26)}\nTitle:       Prod DB\nVault:       Infra\nCategory:    DATABASE\nFields:\n  type:        postgresql\n  server:      db.internal\n  username:    admin\n  password:    {p}',
        [p],
    )
    k = tok(r, 40)
    yield (f'$ op read "op://Infra/Payments API/credential"\n{k}', [k])


@secret("https://github.com/getsops/sops#usage")
def sops_decrypt_output(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    p, t = pw(r), tok(r, 40)
    yield (f"$ sops -d secrets.enc.yaml\ndb:\n    user: app\n    password: {p}\napi:\n    token: {t}", [p, t])
    p = pw(r)
    yield (
        f"$ sops -d --output-type dotenv secrets.enc.env\nSMTP_HOST=smtp.example.net\nSMTP_PASSWORD={p}",
        [p],
    )


@secret("https://docs.python.org/3/library/secrets.html")
def generated_secret_output(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    s = pick(r, URLSAFE, 43)
    yield (
        f"$ python -c 'import secrets; print(secrets.token_urlsafe(32))'\n{s}\nI've put that in the vault as the session key for staging.",
        [s],
    )
    s = b64(rbytes(r, 32))
    yield (
        f"$ openssl rand -base64 32\n{s}\nSet this as JWT_SECRET on the staging app, then restart it.",
        [s],
    )


@secret("https://argo-cd.readthedocs.io/en/stable/user-guide/commands/argocd_login/")
def argocd_cli(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    p = pw_url(r)
    yield (
        f"$ argocd login argocd.corp.example --username admin --password {p} --grpc-web\n'admin:login' logged in successfully\nContext 'argocd.corp.example' updated",
        [p],
    )
    t = jwt(r, {"iss": "argocd", "sub": "ci:apiKey", "nbf": 1741770000})
    yield (f"$ argocd account generate-token --account ci\n{t}", [t])
    p = tok(r, 16)
    yield (
        f'$ kubectl -n argocd get secret argocd-initial-admin-secret -o jsonpath="{{.data.password}}" | base64 -d\n{p}',
        [p],
    )


@secret("https://grafana.com/docs/grafana/latest/setup-grafana/configure-grafana/")
def grafana_ini(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    p, k = pw(r), tok(r, 20)
    yield (
        f"$ grep -A4 '^\\[security\\]' /etc/grafana/grafana.ini\n[security]\nadmin_user = admin\nadmin_password = {p}\nsecret_key = {k}",
        [p, k],
    )
    p = pw(r)
    yield (
        f'[database]\ntype = postgres\nhost = pg.internal:5432\nname = grafana\nuser = grafana\npassword = """{p}"""',
        [p],
    )


@secret("https://min.io/docs/minio/linux/reference/minio-mc/mc-alias-set.html")
def minio_mc_alias(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    a, s = pick(r, UPPER_DIGITS, 20), tok(r, 40)
    yield (f"$ mc alias set prod https://minio.corp.example {a} {s}\nAdded `prod` successfully.", [a, s])
    a, s = pick(r, UPPER_DIGITS, 20), tok(r, 40)
    yield (
        "$ cat ~/.mc/config.json\n"
        + dumps(
            {
                "version": "10",
                "aliases": {
                    "backup": {
                        "url": "https://s3.backup.example",
                        "accessKey": a,
                        "secretKey": s,
                        "api": "s3v4",
                        "path": "auto",
                    }
                },
            }
        ),
        [a, s],
    )


# --- chat in languages the earlier corpora did not use ---------------------------------------------------


@secret(NIST)
def chat_romanian(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    p = pw(r)
    yield (f"Parola pentru serverul de staging este {p}, te rog nu o da mai departe.", [p])
    t = tok(r, 40)
    yield (f"Cheia API pentru producție: {t} — o schimbăm vineri.", [t])


@secret(NIST)
def chat_danish(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    p = pw(r)
    yield (f"Adgangskoden til databasen er {p} – skift den efter demoen i morgen.", [p])
    t = tok(r, 40)
    yield (f"Her er API-nøglen til prod: {t}", [t])


@secret(NIST)
def chat_norwegian(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    p = pw(r)
    yield (f"Passordet til VPN-en er {p}, ikke del det med noen utenfor teamet.", [p])
    t = tok(r, 40)
    yield (f"API-nøkkelen for betalingstjenesten er {t}, legg den i hvelvet etterpå.", [t])


@secret(NIST)
def chat_tagalog(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    p = pw(r)
    yield (f"Ang password ng admin account ay {p}, huwag mong ibahagi sa iba.", [p])
    t = tok(r, 40)
    yield (f"Ito ang API key natin sa production: {t} — palitan natin pagkatapos ng release.", [t])


@secret(NIST)
def chat_urdu(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    p = pw(r)
    yield (f"سرور کا پاس ورڈ {p} ہے، براہ کرم کسی کو نہ بتائیں۔", [p])
    t = tok(r, 40)
    yield (f"پروڈکشن کی API کلید یہ ہے: {t}", [t])


@secret(NIST)
def chat_malay(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    p = pw(r)
    yield (f"Kata laluan untuk pelayan ujian ialah {p}, jangan kongsikan dengan sesiapa.", [p])
    t = tok(r, 40)
    yield (f"Kunci API produksi: {t} — tukar selepas pelancaran.", [t])


@secret(NIST)
def chat_catalan(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    p = pw(r)
    yield (f"La contrasenya del servidor de proves és {p}, no la comparteixis.", [p])
    t = tok(r, 40)
    yield (f"La clau de l'API de producció és {t}; la canviarem dilluns.", [t])


@secret(NIST)
def chat_bulgarian(r: random.Random) -> Iterator[tuple[str, list[str]]]:
    p = pw(r)
    yield (f"Паролата за базата данни е {p}, не я споделяй с никого.", [p])
    t = tok(r, 40)
    yield (f"API ключът за продукция е {t} – ще го сменим след пускането.", [t])


# --- near-misses ------------------------------------------------------------------------------------------


@near("https://curl.se/docs/manpage.html#-v")
def n_curl_verbose_no_secret(r: random.Random) -> Iterator[str]:
    yield f'< HTTP/2 200\n< content-type: application/json\n< x-request-id: {uuid4(r)}\n< etag: W/"{hexs(r, 32)}"\n< strict-transport-security: max-age=63072000'
    yield "$ curl -v --netrc-file ~/.netrc https://nexus.corp.example/service/rest/v1/status\n* Server auth using Basic with user 'deploy'\n> GET /service/rest/v1/status HTTP/1.1\n< HTTP/1.1 200 OK"
    yield "* SSL connection using TLSv1.3 / TLS_AES_256_GCM_SHA384 / X25519 / id-ecPublicKey\n*  subject: CN=api.example.com\n*  SSL certificate verify ok.\n* using HTTP/2\n* [HTTP/2] [1] OPENED stream for https://api.example.com/healthz"


@near("https://www.openldap.org/doc/admin26/security.html")
def n_ldif_hashed_password(r: random.Random) -> Iterator[str]:
    yield f"dn: uid=jdoe,ou=people,dc=example,dc=org\nuserPassword: {{SSHA}}{b64(rbytes(r, 24))}"
    yield f"userPassword: {{CRYPT}}$6$rounds=5000${pick(r, ALNUM + './', 16)}${pick(r, ALNUM + './', 86)}"
    yield f"$ slapcat -a '(uid=kiosk)' | grep -i userpassword\nuserPassword:: {b64('{SSHA}' + b64(rbytes(r, 24)))}"


@near("https://docs.aws.amazon.com/AmazonECS/latest/developerguide/secrets-envvar-secrets-manager.html")
def n_secret_store_references(r: random.Random) -> Iterator[str]:
    yield '"secrets": ' + dumps(
        [
            {
                "name": "DB_PASSWORD",
                "valueFrom": "arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/db-" + tok(r, 6),
            }
        ]
    )
    yield 'DB_PASSWORD="op://Infra/Prod DB/password"\nSTRIPE_KEY="op://Infra/Stripe/credential"\n$ op run --env-file=.env -- ./migrate.sh'
    yield "spec:\n  secretStoreRef:\n    name: aws-sm\n    kind: ClusterSecretStore\n  data:\n    - secretKey: password\n      remoteRef:\n        key: prod/orders/db\n        property: password"
    yield (
        dumps(
            {
                "mcpServers": {
                    "github": {"command": "github-mcp-server", "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}}
                }
            }
        )
        + '\n"env": {"DB_PASSWORD": "${env:DB_PASSWORD}", "API_KEY": "${input:apiKey}"}'
    )


@near("https://pip.pypa.io/en/stable/topics/authentication/")
def n_masked_tool_output(r: random.Random) -> Iterator[str]:
    yield "Looking in indexes: https://pypi.org/simple, https://build:****@pypi.corp.example/simple\nCollecting internal-sdk==2.4.1"
    yield '$ npm config list\n; "user" config from /home/dev/.npmrc\n\n//registry.npmjs.org/:_authToken = (protected)\nregistry = "https://registry.npmjs.org/"'
    yield "github.com\n  ✓ Logged in to github.com account octo-dev (keyring)\n  - Token: gho_************************************\n  - Token scopes: 'repo', 'workflow'"
    yield '$ terraform output\ndb_endpoint = "orders.cluster-c1x2.eu-west-1.rds.amazonaws.com"\ndb_password = <sensitive>'
    yield f'{stamp(r)}.1184010Z Run curl -H "Authorization: Bearer ***" https://api.example.com/deploy\n  env:\n    API_TOKEN: ***'


@near("https://kubernetes.io/docs/reference/config-api/kubeconfig.v1/")
def n_public_key_material(r: random.Random) -> Iterator[str]:
    body = "\n".join(b64(rbytes(r, 48)) for _ in range(6))
    yield f"clusters:\n- cluster:\n    certificate-authority-data: {b64('-----BEGIN CERTIFICATE-----' + chr(10) + body + chr(10) + '-----END CERTIFICATE-----' + chr(10))}\n    server: https://10.0.0.1:6443\n  name: lab"
    yield f"$ ssh-keyscan git.corp.example\ngit.corp.example ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{pick(r, ALNUM + '+/', 43)}"
    yield f"$ gpg --list-keys release@corp.example\npub   ed25519 2024-01-15 [SC]\n      {pick(r, '0123456789ABCDEF', 40)}\nuid           [ultimate] Release Signing <release@corp.example>"


@near("https://datatracker.ietf.org/doc/html/rfc4648")
def n_base64_ordinary_data(r: random.Random) -> Iterator[str]:
    yield f"$ kubectl get configmap branding -o yaml\nbinaryData:\n  logo.png: iVBORw0KGgoAAAANSUhEUgAA{b64(rbytes(r, 60))}"
    enc = b64(json.dumps({"tenant": "acme", "region": "eu-west-1"}, separators=(",", ":")))
    yield f'$ echo \'{enc}\' | base64 -d\n{{"tenant":"acme","region":"eu-west-1"}}'
    yield f"dn: ou=platform,dc=example,dc=org\ndescription:: {b64('Équipe plateforme – astreinte 24/7')}"
    svg = '<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16"><circle cx="8" cy="8" r="7"/></svg>'
    yield f'<img src="data:image/svg+xml;base64,{b64(svg)}">'


@near("https://docs.docker.com/reference/cli/docker/inspect/")
def n_hashes_and_digests(r: random.Random) -> Iterator[str]:
    yield f'"Id": "sha256:{hexs(r, 64)}",\n"RepoDigests": [\n    "nginx@sha256:{hexs(r, 64)}"\n],'
    yield "$ aws s3api head-object --bucket acme-exports --key orders.csv\n" + dumps(
        {"ETag": f'"{hexs(r, 32)}"', "ChecksumSHA256": b64(rbytes(r, 32)), "ContentLength": 88211}
    )
    yield f"$ git config --list\ncore.repositoryformatversion=0\ncore.filemode=true\nremote.origin.url=https://github.com/acme/api.git\nremote.origin.fetch=+refs/heads/*:refs/remotes/origin/*\nuser.signingkey={pick(r, '0123456789ABCDEF', 16)}\ncommit.gpgsign=true"


@near("https://docs.anthropic.com/en/api/messages")
def n_ids_in_agent_logs(r: random.Random) -> Iterator[str]:
    yield json.dumps(
        {
            "id": "msg_01" + tok(r, 22),
            "type": "message",
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "toolu_01" + tok(r, 22),
                    "name": "bash",
                    "input": {"command": "git status --short"},
                }
            ],
            "stop_reason": "tool_use",
        }
    )
    yield json.dumps(
        {
            "id": "chatcmpl-" + tok(r, 29),
            "object": "chat.completion",
            "choices": [
                {
                    "message": {
                        "role": "assistant",
                        "tool_calls": [
                            {
                                "id": "call_" + tok(r, 24),
                                "type": "function",
                                "function": {"name": "read_file", "arguments": '{"path": "README.md"}'},
                            }
                        ],
                    }
                }
            ],
        }
    )
    yield f"An error occurred (AccessDenied) when calling the GetObject operation: Access Denied\nx-amz-request-id: {pick(r, UPPER_DIGITS, 16)}\nx-amz-id-2: {b64(rbytes(r, 57))}"
    yield f"Current runner version: '2.322.0'\nRunner name: 'GitHub Actions 12'\nJob ID: {r.randint(10**10, 10**11)}\nDownload action repository 'actions/checkout@v4' (SHA:{hexs(r, 40)})"


@near("https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-query-string-auth.html")
def n_signature_names_without_values(r: random.Random) -> Iterator[str]:
    yield "A presigned URL carries X-Amz-Algorithm, X-Amz-Credential, X-Amz-Date, X-Amz-Expires, X-Amz-SignedHeaders and X-Amz-Signature; anyone holding the full URL can fetch the object until it expires."
    yield "https://storage.googleapis.com/acme-reports/q1.csv?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Credential=<service-account>%2F<date>%2Fauto%2Fstorage%2Fgoog4_request&X-Goog-Date=<timestamp>&X-Goog-Expires=900&X-Goog-SignedHeaders=host&X-Goog-Signature=<hex-signature>"
    yield 'query = {"X-Amz-Credential": credential_scope, "X-Amz-Security-Token": session.token, "X-Amz-Signature": signature}'


@near("https://datatracker.ietf.org/doc/html/rfc6749#section-5.1")
def n_rfc_example_values(r: random.Random) -> Iterator[str]:
    yield 'The example response in RFC 6749 section 5.1 is {"access_token":"2YotnFZFEjr1zCsicMWpAA","token_type":"example","expires_in":3600,"refresh_token":"tGzv3JOkF0XG5Qx2TlKWIA"}; our server returns the same fields.'
    yield 'RFC 8628 section 3.2 shows the device authorization response: {"device_code": "GmRhmhcxhwAzkoEqiMEg_DnyEysNkuNhszIySk9eS", "user_code": "WDJB-MJHT", "verification_uri": "https://example.com/device", "expires_in": 1800, "interval": 5}'
    yield "$ aws configure --profile docs-example\nAWS Access Key ID [None]: AKIAIOSFODNN7EXAMPLE\nAWS Secret Access Key [None]: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\nDefault region name [None]: us-west-2"


@near("https://learning.postman.com/docs/sending-requests/variables/variables/")
def n_placeholders_in_tool_configs(r: random.Random) -> Iterator[str]:
    yield (
        dumps({"key": "apiKey", "value": "", "type": "secret", "enabled": True})
        + '\n"Authorization": "Bearer {{apiKey}}"'
    )
    yield "vars {\n  baseUrl: https://api.example.com\n}\nvars:secret [\n  apiToken,\n  dbPassword\n]"
    yield "<AutoLogon>\n  <Password>\n    <Value>*SENSITIVE*DATA*DELETED*</Value>\n    <PlainText>true</PlainText>\n  </Password>\n</AutoLogon>"
    yield "withCredentials([usernamePassword(credentialsId: 'nexus-deploy', usernameVariable: 'NEXUS_USER', passwordVariable: 'NEXUS_PASS')]) {\n    sh 'mvn -s settings.xml deploy -Drepo.user=$NEXUS_USER -Drepo.password=$NEXUS_PASS'\n}"
    yield f'<User clsid="{{DF5F1855-51E5-4d24-8B1A-D9BDE98BA1D1}}" name="Guest" uid="{{{uuid4(r).upper()}}}"><Properties action="U" cpassword="" acctDisabled="1" userName="Guest"/></User>'


@near("https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/overview")
def n_agent_transcripts_without_secret(r: random.Random) -> Iterator[str]:
    yield "User: the API key is in .env as OPENAI_API_KEY; don't print it.\nAssistant: Understood. I'll load it with os.environ[\"OPENAI_API_KEY\"] and never echo it."
    yield (
        json.dumps(
            {
                "type": "tool_use",
                "id": "toolu_01" + tok(r, 22),
                "name": "bash",
                "input": {"command": "printenv | cut -d= -f1 | sort"},
            }
        )
        + "\n"
        + json.dumps({"type": "tool_result", "content": "HOME\nPATH\nPGPASSWORD\nSTRIPE_SECRET_KEY\n"})
    )
    yield "● Bash(grep -c PASSWORD .env)\n  ⎿  3\n● There are three password entries in .env; I did not open their values."


@near("https://pkg.go.dev/os#Getenv")
def n_code_env_lookups(r: random.Random) -> Iterator[str]:
    yield 'password := os.Getenv("DB_PASSWORD")\nlet token = std::env::var("API_TOKEN")?;'
    yield 'val apiKey = System.getenv("TILES_API_KEY")\nlet token = ProcessInfo.processInfo.environment["API_TOKEN"]'
    yield 'var pw = Environment.GetEnvironmentVariable("SQL_PASSWORD");\npassword: System.fetch_env!("DATABASE_PASSWORD"),'
    yield 'local res, err = red:auth(os.getenv("REDIS_PASSWORD"))\nkey <- Sys.getenv("WAREHOUSE_API_KEY")'


@near(NIST)
def n_chat_new_languages_no_value(r: random.Random) -> Iterator[str]:
    yield "Parola trebuie să aibă cel puțin 15 caractere; nu o trimite niciodată pe chat. / Husk at skifte adgangskoden, og del den aldrig i Slack."
    yield "Passordet ligger i 1Password under «Prod DB» – ikke lim det inn her. / Huwag ipadala ang password sa chat; gamitin ang vault."
    yield "پاس ورڈ کم از کم بارہ حروف کا ہونا چاہیے اور اسے چیٹ میں نہ بھیجیں۔"
    yield "Kata laluan baharu telah dihantar melalui pengurus kata laluan, bukan di sini. / He canviat la contrasenya; la trobaràs al gestor de contrasenyes."
    yield "Паролата е във Vault, път secret/db – не я пиши тук. API ключът се сменя автоматично всеки месец."


@near("https://www.mongodb.com/docs/manual/reference/method/passwordPrompt/")
def n_sql_without_password(r: random.Random) -> Iterator[str]:
    yield 'admin> db.createUser({ user: "reporting", pwd: passwordPrompt(), roles: [ "read" ] })\nEnter password\n{ ok: 1 }'
    yield "CREATE USER ops_ext IDENTIFIED EXTERNALLY;\nCREATE USER app_glob IDENTIFIED GLOBALLY AS 'CN=app,OU=svc,O=acme';"
    yield "clickhouse-01 :) CREATE USER etl IDENTIFIED WITH ldap SERVER 'corp_ldap';\n\nOk."
    yield f"{stamp(r)}.123456Z\t   12 Query\tCREATE USER 'app'@'%' IDENTIFIED BY <secret>"
    yield f"ALTER USER etl_svc SET RSA_PUBLIC_KEY='MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA{pick(r, ALNUM + '+/', 64)}';"


# --- assembly ---------------------------------------------------------------------------------------------


def halves(families: set[str]) -> dict[str, str]:
    """Whole families to one half: sorted names, shuffled with seed 8022, the first ceil(n/2) to tune."""
    names = sorted(families)
    random.Random(SPLIT_SEED).shuffle(names)
    cut = math.ceil(len(names) / 2)
    return {n: ("tune" if i < cut else "heldout") for i, n in enumerate(names)}


def records() -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    s_half = halves({name for name, _, _ in SECRET_FAMILIES})
    n_half = halves({name for name, _, _ in NEAR_FAMILIES})
    secrets_out: list[dict[str, object]] = []
    for name, source, gen in SECRET_FAMILIES:
        rng = random.Random(f"q8:{name}")
        for i, (text, pieces) in enumerate(gen(rng), 1):
            secrets_out.append(
                {
                    "id": f"q8-s-{name}-{i}",
                    "family": name,
                    "source": source,
                    "text": text,
                    "secrets": pieces,
                    "half": s_half[name],
                }
            )
    near_out: list[dict[str, object]] = []
    for name, source, ngen in NEAR_FAMILIES:
        rng = random.Random(f"q8:{name}")
        for i, text in enumerate(ngen(rng), 1):
            near_out.append(
                {
                    "id": f"q8-n-{name}-{i}",
                    "family": name,
                    "source": source,
                    "text": text,
                    "half": n_half[name],
                }
            )
    return secrets_out, near_out


def main() -> None:
    secrets_out, near_out = records()
    for name, rows in (("secrets.jsonl", secrets_out), ("near_misses.jsonl", near_out)):
        with (HERE / name).open("w", encoding="utf-8") as fh:
            fh.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


if __name__ == "__main__":
    main()
