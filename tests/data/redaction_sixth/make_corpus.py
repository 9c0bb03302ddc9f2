# ruff: noqa: E501
"""Write the sixth redaction corpus (secrets in config files, logs, code and chat) from fixed seeds.

Every value is synthesised here (random characters of a documented prefix, length and alphabet), so none is a
live credential. Each family draws from its own `random.Random(f"q6:{family}")`, so adding or reordering
families leaves the others unchanged, and rerunning this script reproduces both files byte for byte.

    python tests/data/redaction_sixth/make_corpus.py
"""

from __future__ import annotations

import base64
import json
import math
import random
import string
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
SPLIT_SEED = 6022

ALNUM = string.ascii_letters + string.digits
LOWER_ALNUM = string.ascii_lowercase + string.digits
UPPER_ALNUM = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"
B64 = string.ascii_letters + string.digits + "+/"
B64URL = string.ascii_letters + string.digits + "-_"
BASE32 = string.ascii_uppercase + "234567"
BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
PW_CHARS = string.ascii_letters + string.digits + "!#%*?@^-_+="
WORDS = (
    "maple", "falcon", "harbor", "cobalt", "juniper", "lantern", "orbit", "saffron", "tundra", "violet",
    "walnut", "zephyr", "quartz", "pepper", "meadow", "glacier", "ember", "copper", "willow", "thistle",
)  # fmt: skip

Pair = tuple[str, list[str]]
Family = Callable[[random.Random], list[Pair]]


def rs(rng: random.Random, alphabet: str, n: int) -> str:
    """n characters drawn from alphabet."""
    return "".join(rng.choice(alphabet) for _ in range(n))


def pw(rng: random.Random) -> str:
    """A password a person might choose: a word with digits and a symbol, or 12-16 random characters."""
    if rng.random() < 0.5:
        word = rng.choice(WORDS)
        leet = word.replace("o", "0").replace("e", "3") if rng.random() < 0.5 else word
        return f"{leet.capitalize()}{rng.choice('!#%*?@&')}{rs(rng, string.digits, rng.randint(2, 4))}{rng.choice(WORDS)[:4]}"
    while True:
        value = rs(rng, PW_CHARS, rng.randint(12, 16))
        if any(c.isdigit() for c in value) and any(c.isalpha() for c in value):
            return value


def pw_url(rng: random.Random) -> str:
    """A password that can sit in a URL or a query string unescaped: letters, digits and `-_.~`."""
    while True:
        value = rs(rng, ALNUM + "-_.~", rng.randint(14, 20))
        if any(c.isdigit() for c in value) and any(c.isalpha() for c in value):
            return value


def b64s(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def b64url_nopad(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def jwt(rng: random.Random, claims: dict[str, object], alg: str = "HS256") -> str:
    head = b64url_nopad(json.dumps({"alg": alg, "typ": "JWT"}, separators=(",", ":")).encode())
    body = b64url_nopad(json.dumps(claims, separators=(",", ":")).encode())
    sig = rs(rng, B64URL, 43 if alg == "HS256" else 342)
    return f"{head}.{body}.{sig}"


def pem_lines(rng: random.Random, first: str, n: int) -> list[str]:
    """Lines of a PEM body: the documented DER opening, then random base64, 64 characters a line."""
    lines = [first + rs(rng, B64, 64 - len(first))]
    lines += [rs(rng, B64, 64) for _ in range(n - 2)]
    lines.append(rs(rng, B64, 40) + "=")
    return lines


def ip(rng: random.Random) -> str:
    return f"10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(2, 254)}"


def uuid(rng: random.Random) -> str:
    h = rs(rng, HEX, 32)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{rng.choice('89ab')}{h[17:20]}-{h[20:]}"


SECRET_FAMILIES: list[tuple[str, str, Family]] = []
NEAR_FAMILIES: list[tuple[str, str, Callable[[random.Random], list[str]]]] = []


def secret(name: str, source: str) -> Callable[[Family], Family]:
    def register(fn: Family) -> Family:
        SECRET_FAMILIES.append((name, source, fn))
        return fn

    return register


def near(
    name: str, source: str
) -> Callable[[Callable[[random.Random], list[str]]], Callable[[random.Random], list[str]]]:
    def register(fn: Callable[[random.Random], list[str]]) -> Callable[[random.Random], list[str]]:
        NEAR_FAMILIES.append((name, source, fn))
        return fn

    return register


# --- configuration files --------------------------------------------------------------------------------


@secret("yaml_app_config", "https://docs.spring.io/spring-boot/reference/data/sql.html")
def _yaml_app_config(rng: random.Random) -> list[Pair]:
    a, b, c = pw(rng), pw(rng), rs(rng, ALNUM, 32)
    return [
        (
            f'here is application-prod.yml, the datasource is failing:\nspring:\n  datasource:\n    url: jdbc:postgresql://db-prod.internal:5432/orders\n    username: orders_svc\n    password: "{a}"\n',
            [a],
        ),
        (
            f"config.yaml for the worker:\n```yaml\nredis:\n  host: cache.internal\n  port: 6379\n  password: {b}\nqueue:\n  name: ingest\n```",
            [b],
        ),
        (
            f"values that broke the deploy:\nsmtp:\n  host: smtp.mailgun.org\n  user: postmaster@mg.example.com\n  pass: {c}\n  port: 587",
            [c],
        ),
    ]


@secret("toml_credentials", "https://doc.rust-lang.org/cargo/reference/config.html#credentials")
def _toml_credentials(rng: random.Random) -> list[Pair]:
    a = "cio" + rs(rng, ALNUM, 32)
    b = pw(rng)
    return [
        (f'~/.cargo/credentials.toml on the build box:\n[registry]\ntoken = "{a}"\n', [a]),
        (
            f'pyproject for the internal tool reads its settings from settings.toml:\n[database]\nhost = "pg.internal"\nuser = "reporter"\npassword = "{b}"\n',
            [b],
        ),
    ]


@secret("ini_odbc_mycnf", "https://dev.mysql.com/doc/refman/8.0/en/option-files.html")
def _ini_odbc_mycnf(rng: random.Random) -> list[Pair]:
    a, b = pw(rng), pw(rng)
    return [
        (
            f"~/.my.cnf that I copied to the jump host:\n[client]\nuser=backup\npassword={a}\nhost=mysql-replica-2\n",
            [a],
        ),
        (
            f"/etc/odbc.ini\n[Reporting]\nDriver = PostgreSQL Unicode\nServername = {ip(rng)}\nDatabase = warehouse\nUserName = bi_reader\nPassword = {b}\n",
            [b],
        ),
    ]


@secret("pypirc_file", "https://packaging.python.org/en/latest/specifications/pypirc/")
def _pypirc_file(rng: random.Random) -> list[Pair]:
    a = "pypi-AgEIcHlwaS5vcmc" + rs(rng, B64URL, 140)
    b = pw(rng)
    return [
        (
            f"my ~/.pypirc, upload still 403s:\n[distutils]\nindex-servers = pypi\n\n[pypi]\nusername = __token__\npassword = {a}\n",
            [a],
        ),
        (
            f"[testpypi]\nrepository = https://nexus.internal/repository/pypi-internal/\nusername = release-bot\npassword = {b}",
            [b],
        ),
    ]


@secret("dotenv_file", "https://github.com/motdotla/dotenv#usage")
def _dotenv_file(rng: random.Random) -> list[Pair]:
    a = "sk_live_" + rs(rng, ALNUM, 99)
    b = rs(rng, HEX, 128)
    c = pw(rng)
    d = "xoxb-" + rs(rng, string.digits, 12) + "-" + rs(rng, string.digits, 13) + "-" + rs(rng, ALNUM, 24)
    return [
        (f"# .env.production\nNODE_ENV=production\nSTRIPE_SECRET_KEY={a}\nLOG_LEVEL=info\n", [a]),
        (f"cat .env\nRAILS_ENV=production\nSECRET_KEY_BASE={b}\nDATABASE_HOST=pg-1\n", [b]),
        (f".env.local (do not commit!)\nDB_USER=app\nDB_PASS='{c}'\nSLACK_BOT_TOKEN={d}\n", [c, d]),
    ]


@secret("docker_compose_env", "https://hub.docker.com/_/postgres")
def _docker_compose_env(rng: random.Random) -> list[Pair]:
    a, b, c = pw(rng), pw(rng), pw(rng)
    return [
        (
            f"docker-compose.yml:\nservices:\n  db:\n    image: postgres:16\n    environment:\n      - POSTGRES_USER=app\n      - POSTGRES_PASSWORD={a}\n",
            [a],
        ),
        (
            f"services:\n  mysql:\n    image: mysql:8\n    environment:\n      MYSQL_ROOT_PASSWORD: {b}\n      MYSQL_DATABASE: shop\n",
            [b],
        ),
        (
            f'compose override for the dev box:\n  rabbitmq:\n    environment:\n      RABBITMQ_DEFAULT_USER: admin\n      RABBITMQ_DEFAULT_PASS: "{c}"',
            [c],
        ),
    ]


@secret("k8s_secret_data", "https://kubernetes.io/docs/concepts/configuration/secret/")
def _k8s_secret_data(rng: random.Random) -> list[Pair]:
    a, b = b64s(pw(rng)), b64s(rs(rng, ALNUM, 40))
    c = pw(rng)
    return [
        (
            f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: db-credentials\ntype: Opaque\ndata:\n  username: YXBw\n  password: {a}\n",
            [a],
        ),
        (f"kubectl get secret api-keys -o yaml\n...\ndata:\n  STRIPE_KEY: {b}\nkind: Secret\n", [b]),
        (f"kind: Secret\nmetadata:\n  name: redis-auth\nstringData:\n  redis-password: {c}\n", [c]),
    ]


@secret(
    "k8s_dockerconfigjson",
    "https://kubernetes.io/docs/tasks/configure-pod-container/pull-image-private-registry/",
)
def _k8s_dockerconfigjson(rng: random.Random) -> list[Pair]:
    token = "dckr_pat_" + rs(rng, B64URL, 27)
    auth = b64s(f"ci-bot:{token}")
    blob = b64s(json.dumps({"auths": {"https://index.docker.io/v1/": {"auth": auth}}}))
    auth2 = b64s(f"deploy:{pw(rng)}")
    return [
        (
            f"kind: Secret\ntype: kubernetes.io/dockerconfigjson\nmetadata:\n  name: regcred\ndata:\n  .dockerconfigjson: {blob}\n",
            [blob],
        ),
        (
            f'~/.docker/config.json from the runner:\n{{\n  "auths": {{\n    "registry.gitlab.example.com": {{\n      "auth": "{auth2}"\n    }}\n  }}\n}}',
            [auth2],
        ),
    ]


@secret(
    "kubeconfig_credentials",
    "https://kubernetes.io/docs/concepts/configuration/organize-cluster-access-kubeconfig/",
)
def _kubeconfig_credentials(rng: random.Random) -> list[Pair]:
    tok = jwt(
        rng,
        {
            "iss": "kubernetes/serviceaccount",
            "kubernetes.io/serviceaccount/namespace": "ci",
            "sub": "system:serviceaccount:ci:deployer",
        },
        "RS256",
    )
    key = pem_lines(rng, "MIIEpAIBAAKCAQEA", 6)
    keydata = b64s("-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(key) + "\n-----END RSA PRIVATE KEY-----\n")
    return [
        (f"users:\n- name: deployer\n  user:\n    token: {tok}\n", [tok]),
        (
            f"users:\n- name: kind-admin\n  user:\n    client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t\n    client-key-data: {keydata}\n",
            [keydata],
        ),
    ]


@secret(
    "terraform_tfvars",
    "https://developer.hashicorp.com/terraform/language/values/variables#variable-definitions-tfvars-files",
)
def _terraform_tfvars(rng: random.Random) -> list[Pair]:
    a = pw(rng)
    b = rs(rng, B64URL, 40)
    c = "dop_v1_" + rs(rng, HEX, 64)
    return [
        (f'prod.auto.tfvars:\nregion      = "eu-west-1"\ndb_username = "admin"\ndb_password = "{a}"\n', [a]),
        (f'terraform.tfvars\ncloudflare_api_token = "{b}"\nzone_id = "{rs(rng, HEX, 32)}"', [b]),
        (f'plan fails with 401, my tfvars:\ndo_token = "{c}"\ndroplet_size = "s-2vcpu-4gb"', [c]),
    ]


@secret("terraform_state", "https://developer.hashicorp.com/terraform/language/state/sensitive-data")
def _terraform_state(rng: random.Random) -> list[Pair]:
    a = rs(rng, ALNUM + "!#%&*()-_=+[]{}<>:?", 24)
    b = pw(rng)
    return [
        (
            f'grep -A8 random_password terraform.tfstate\n  "type": "random_password",\n  "instances": [{{\n    "attributes": {{\n      "id": "none",\n      "length": 24,\n      "result": "{a}",\n      "special": true\n',
            [a],
        ),
        (
            f'from the state file of the rds module:\n"attributes": {{\n  "engine": "postgres",\n  "identifier": "orders-prod",\n  "password": "{b}",\n  "username": "orders"\n}}',
            [b],
        ),
    ]


@secret("aws_credentials_file", "https://docs.aws.amazon.com/cli/latest/userguide/cli-configure-files.html")
def _aws_credentials_file(rng: random.Random) -> list[Pair]:
    a, b = "AKIA" + rs(rng, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16), rs(rng, B64, 40)
    c, d = "ASIA" + rs(rng, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16), rs(rng, B64, 40)
    e = "IQoJb3JpZ2luX2Vj" + rs(rng, B64, 300)
    return [
        (
            f"~/.aws/credentials\n[default]\naws_access_key_id = {a}\naws_secret_access_key = {b}\nregion = eu-central-1\n",
            [a, b],
        ),
        (
            f"[profile-sso-copy]\naws_access_key_id={c}\naws_secret_access_key={d}\naws_session_token={e}\n",
            [c, d, e],
        ),
    ]


@secret("wp_config_php", "https://developer.wordpress.org/advanced-administration/wordpress/wp-config/")
def _wp_config_php(rng: random.Random) -> list[Pair]:
    a = pw(rng)
    salt_chars = string.ascii_letters + string.digits + "!#$%&()*+,-./:;<=>?@[]^_`{|}~"
    b, c = rs(rng, salt_chars, 64), rs(rng, salt_chars, 64)
    return [
        (
            f"wp-config.php on the old host:\ndefine( 'DB_NAME', 'wp_blog' );\ndefine( 'DB_USER', 'wp_admin' );\ndefine( 'DB_PASSWORD', '{a}' );\n",
            [a],
        ),
        (f"define( 'AUTH_KEY',         '{b}' );\ndefine( 'SECURE_AUTH_KEY',  '{c}' );", [b, c]),
    ]


@secret("maven_settings_xml", "https://maven.apache.org/settings.html#servers")
def _maven_settings_xml(rng: random.Random) -> list[Pair]:
    a, b = pw(rng), "cmVmdGtuOjAx" + rs(rng, ALNUM, 52)
    return [
        (
            f"<servers>\n  <server>\n    <id>nexus-releases</id>\n    <username>deployment</username>\n    <password>{a}</password>\n  </server>\n</servers>",
            [a],
        ),
        (
            f"settings.xml for artifactory:\n<server><id>central</id><username>ci</username><password>{b}</password></server>",
            [b],
        ),
    ]


@secret("netrc_pgpass_gitcreds", "https://www.postgresql.org/docs/current/libpq-pgpass.html")
def _netrc_pgpass_gitcreds(rng: random.Random) -> list[Pair]:
    a, b = pw(rng), "ghp_" + rs(rng, ALNUM, 36)
    c = uuid(rng)
    return [
        (f"~/.pgpass\ndb-prod.internal:5432:orders:orders_svc:{a}\n", [a]),
        (f"cat ~/.git-credentials\nhttps://octo-bot:{b}@github.com\n", [b]),
        (f"~/.netrc\nmachine api.heroku.com\n  login ops@example.com\n  password {c}\n", [c]),
    ]


@secret("npmrc_auth", "https://docs.npmjs.com/cli/v10/configuring-npm/npmrc")
def _npmrc_auth(rng: random.Random) -> list[Pair]:
    a = "npm_" + rs(rng, ALNUM, 36)
    b = b64s(f"builder:{pw(rng)}")
    return [
        (f".npmrc in the repo root:\n//registry.npmjs.org/:_authToken={a}\n", [a]),
        (
            f"registry=https://npm.internal.example.com/\n//npm.internal.example.com/:_auth={b}\nalways-auth=true",
            [b],
        ),
    ]


# --- CI logs and notebooks -----------------------------------------------------------------------------


@secret(
    "github_actions_log",
    "https://docs.github.com/en/actions/security-for-github-actions/security-guides/using-secrets-in-github-actions",
)
def _github_actions_log(rng: random.Random) -> list[Pair]:
    a = "github_pat_11" + rs(rng, UPPER_ALNUM, 20) + "_" + rs(rng, ALNUM, 59)
    b = pw(rng)
    c = "ghs_" + rs(rng, ALNUM, 36)
    return [
        (
            f'2024-05-02T10:11:12.3456789Z ##[group]Run curl -sf -H "Authorization: token {a}" https://api.github.com/repos/acme/app/releases\n2024-05-02T10:11:12.9Z ##[endgroup]',
            [a],
        ),
        (
            f"Run docker login ghcr.io\n+ docker login -u release-bot -p {b} registry.acme.io\nWARNING! Using --password via the CLI is insecure.",
            [b],
        ),
        (
            f"the step echoes the installation token because it was built from a string, not a secret:\n2024-06-11T08:00:01Z token is {c}",
            [c],
        ),
    ]


@secret("gitlab_ci_log", "https://docs.gitlab.com/ee/ci/variables/")
def _gitlab_ci_log(rng: random.Random) -> list[Pair]:
    a = "glpat-" + rs(rng, B64URL, 20)
    b = pw(rng)
    return [
        (
            f"Running with gitlab-runner 16.11.0\n$ git clone https://oauth2:{a}@gitlab.example.com/platform/infra.git\nCloning into 'infra'...",
            [a],
        ),
        (
            f'$ echo "deploying with DEPLOY_PASSWORD=$DEPLOY_PASSWORD"\ndeploying with DEPLOY_PASSWORD={b}\n$ ./deploy.sh',
            [b],
        ),
    ]


@secret("jenkins_console", "https://www.jenkins.io/doc/book/using-jenkins/using-credentials/")
def _jenkins_console(rng: random.Random) -> list[Pair]:
    a = pw(rng)
    b = "11" + rs(rng, HEX, 32)
    return [
        (
            f"[Pipeline] sh\n+ mvn deploy -Drepo.user=ci -Drepo.password={a}\n[INFO] Scanning for projects...",
            [a],
        ),
        (
            f"Started by remote host 10.0.0.4\n[trigger] curl -X POST -u admin:{b} https://jenkins.example.com/job/release/build",
            [b],
        ),
    ]


@secret("jupyter_output", "https://nbformat.readthedocs.io/en/latest/format_description.html")
def _jupyter_output(rng: random.Random) -> list[Pair]:
    a = "sk-proj-" + rs(rng, B64URL, 156)
    b = "hf_" + rs(rng, string.ascii_letters, 34)
    c = pw(rng)
    return [
        (
            json.dumps(
                {
                    "cell_type": "code",
                    "execution_count": 3,
                    "source": ["import os\n", "print(os.environ['OPENAI_API_KEY'])"],
                    "outputs": [{"name": "stdout", "output_type": "stream", "text": [a + "\n"]}],
                }
            ),
            [a],
        ),
        (f"In [7]: !huggingface-cli whoami --token {b}\nOut[7]: ml-team", [b]),
        (
            json.dumps(
                {
                    "output_type": "execute_result",
                    "data": {
                        "text/plain": [f"{{'user': 'analyst', 'password': '{c}', 'host': 'dwh.internal'}}"]
                    },
                }
            ),
            [c],
        ),
    ]


# --- SQL and connection strings ------------------------------------------------------------------------


@secret("sql_create_user", "https://www.postgresql.org/docs/current/sql-createrole.html")
def _sql_create_user(rng: random.Random) -> list[Pair]:
    a, b, c = pw(rng), pw(rng), pw(rng)
    return [
        (f"CREATE USER reporting WITH LOGIN PASSWORD '{a}' VALID UNTIL '2026-01-01';", [a]),
        (
            f"migration 0042:\nCREATE USER 'shop'@'%' IDENTIFIED BY '{b}';\nGRANT SELECT, INSERT ON shop.* TO 'shop'@'%';",
            [b],
        ),
        (f"CREATE LOGIN etl_loader WITH PASSWORD = '{c}', CHECK_POLICY = OFF;", [c]),
    ]


@secret("sql_alter_role", "https://www.postgresql.org/docs/current/sql-alterrole.html")
def _sql_alter_role(rng: random.Random) -> list[Pair]:
    a, b, c = pw(rng), pw(rng), pw(rng)
    return [
        (f"rotated it by hand: ALTER ROLE app_rw WITH PASSWORD '{a}';", [a]),
        (f'SQL> ALTER USER scott IDENTIFIED BY "{b}" ACCOUNT UNLOCK;\nUser altered.', [b]),
        (f"mysql> SET PASSWORD FOR 'repl'@'10.%' = '{c}';\nQuery OK, 0 rows affected", [c]),
    ]


@secret("sql_user_mapping", "https://www.postgresql.org/docs/current/sql-createusermapping.html")
def _sql_user_mapping(rng: random.Random) -> list[Pair]:
    a, b = pw(rng), pw(rng)
    return [
        (f"CREATE USER MAPPING FOR analytics SERVER legacy_pg OPTIONS (user 'ro', password '{a}');", [a]),
        (f"CREATE DATABASE SCOPED CREDENTIAL blob_cred WITH IDENTITY = 'loader', SECRET = '{b}';", [b]),
    ]


@secret("dsn_jdbc", "https://jdbc.postgresql.org/documentation/use/")
def _dsn_jdbc(rng: random.Random) -> list[Pair]:
    a, b, c = pw_url(rng), pw(rng), pw_url(rng)
    return [
        (f"jdbc:postgresql://pg-1.internal:5432/billing?user=billing&password={a}&ssl=true", [a]),
        (
            f"spring.datasource.url=jdbc:sqlserver://sql01.corp:1433;databaseName=hr;user=hr_app;password={b};encrypt=true",
            [b],
        ),
        (
            f"Caused by: java.sql.SQLException: Access denied, url=jdbc:mysql://shop:{c}@mysql-2:3306/shop",
            [c],
        ),
    ]


@secret(
    "dsn_adonet",
    "https://learn.microsoft.com/en-us/dotnet/api/system.data.sqlclient.sqlconnection.connectionstring",
)
def _dsn_adonet(rng: random.Random) -> list[Pair]:
    a, b = pw(rng), pw(rng)
    return [
        (
            f'"ConnectionStrings": {{ "Default": "Server=tcp:sql-prod.database.windows.net,1433;Initial Catalog=crm;User ID=crm_app;Password={a};Encrypt=True;" }}',
            [a],
        ),
        (
            f"appsettings.Development.json has Data Source=localhost;Database=Shop;Uid=sa;Pwd={b}; and it is in git",
            [b],
        ),
    ]


@secret("dsn_libpq_keyword", "https://www.postgresql.org/docs/current/libpq-connect.html#LIBPQ-CONNSTRING")
def _dsn_libpq_keyword(rng: random.Random) -> list[Pair]:
    a, b = pw(rng), pw(rng)
    return [
        (f'psql "host=pg-replica port=5432 dbname=events user=reader password={a} sslmode=require"', [a]),
        (f"conn = psycopg.connect(\"dbname=app user=app password='{b}' host=127.0.0.1\")", [b]),
    ]


@secret("dsn_broker_uri", "https://www.rabbitmq.com/docs/uri-spec")
def _dsn_broker_uri(rng: random.Random) -> list[Pair]:
    a, b, c = pw_url(rng), rs(rng, ALNUM, 32), rs(rng, ALNUM, 24)
    return [
        (f"CELERY_BROKER_URL=amqp://celery:{a}@rabbit.internal:5672/prod", [a]),
        (f"REDIS_URL=rediss://default:{b}@eu1-wise-owl-31245.upstash.io:6379", [b]),
        (f"nats-server -c nats.conf, clients connect with nats://svc:{c}@nats-0.nats:4222", [c]),
    ]


@secret("dsn_airflow_spark", "https://airflow.apache.org/docs/apache-airflow/stable/howto/connection.html")
def _dsn_airflow_spark(rng: random.Random) -> list[Pair]:
    a, b = rs(rng, ALNUM, 20), pw(rng)
    return [
        (f"export AIRFLOW_CONN_WAREHOUSE='postgresql://etl:{a}@dwh.internal:5432/warehouse'", [a]),
        (
            f'df = spark.read.format("jdbc").option("url", jdbc_url).option("user", "etl").option("password", "{b}").load()',
            [b],
        ),
    ]


@secret(
    "azure_storage_connstr",
    "https://learn.microsoft.com/en-us/azure/storage/common/storage-configure-connection-string",
)
def _azure_storage_connstr(rng: random.Random) -> list[Pair]:
    a, b = rs(rng, B64, 86) + "==", rs(rng, B64, 86) + "=="
    return [
        (
            f"AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;AccountName=acmelogs;AccountKey={a};EndpointSuffix=core.windows.net",
            [a],
        ),
        (
            f"the function app setting AzureWebJobsStorage is DefaultEndpointsProtocol=https;AccountName=fnstate01;AccountKey={b}",
            [b],
        ),
    ]


@secret("azure_sas_url", "https://learn.microsoft.com/en-us/rest/api/storageservices/create-service-sas")
def _azure_sas_url(rng: random.Random) -> list[Pair]:
    a = rs(rng, ALNUM, 43) + "%3D"
    b = rs(rng, ALNUM, 42) + "%2B" + "%3D"
    return [
        (
            f"download it from https://acmeexports.blob.core.windows.net/exports/q2.csv?sv=2022-11-02&ss=b&srt=o&sp=r&se=2025-07-01T00:00:00Z&st=2025-06-01T00:00:00Z&spr=https&sig={a}",
            [a],
        ),
        (
            f"azcopy copy ./dump 'https://backup01.blob.core.windows.net/db?sp=racwl&st=2025-01-01&se=2026-01-01&sv=2022-11-02&sr=c&sig={b}' --recursive",
            [b],
        ),
    ]


# --- tokens in headers, cookies and OAuth JSON ---------------------------------------------------------


@secret("jwt_bearer_header", "https://datatracker.ietf.org/doc/html/rfc6750")
def _jwt_bearer_header(rng: random.Random) -> list[Pair]:
    a = jwt(
        rng,
        {
            "sub": str(rng.randint(10000, 99999)),
            "role": "admin",
            "iat": 1717000000 + rng.randint(0, 9999),
            "exp": 1717086400,
        },
    )
    b = jwt(
        rng,
        {"iss": "https://auth.example.com/", "aud": "orders-api", "scope": "orders:write", "exp": 1719000000},
        "RS256",
    )
    return [
        (f"curl -s https://api.example.com/v1/orders -H 'Authorization: Bearer {a}'", [a]),
        (
            f"GET /internal/metrics HTTP/1.1\nHost: orders.internal\nAuthorization: Bearer {b}\nAccept: */*",
            [b],
        ),
    ]


@secret("cookie_request_header", "https://datatracker.ietf.org/doc/html/rfc6265#section-5.4")
def _cookie_request_header(rng: random.Random) -> list[Pair]:
    a = rs(rng, LOWER_ALNUM, 32)
    b = (
        b64url_nopad(json.dumps({"_user_id": str(rng.randint(1, 999)), "_fresh": True}).encode())
        + "."
        + rs(rng, B64URL, 6)
        + "."
        + rs(rng, B64URL, 27)
    )
    return [
        (
            f"repro with curl 'https://admin.example.com/dashboard/' -H 'Cookie: csrftoken=abc; sessionid={a}'",
            [a],
        ),
        (f"Copied from devtools: Cookie: session={b}; theme=dark", [b]),
    ]


@secret("set_cookie_header", "https://datatracker.ietf.org/doc/html/rfc6265#section-4.1")
def _set_cookie_header(rng: random.Random) -> list[Pair]:
    a = rs(rng, B64, 120) + "--" + rs(rng, B64, 24) + "--" + rs(rng, B64, 24) + "=="
    b = rs(rng, B64URL, 43)
    return [
        (
            f"HTTP/1.1 302 Found\nLocation: /account\nSet-Cookie: _shop_session={a}; path=/; secure; HttpOnly; SameSite=Lax",
            [a],
        ),
        (f"< set-cookie: __Host-sid={b}; Path=/; Secure; HttpOnly; Max-Age=86400", [b]),
    ]


@secret("oauth_client_secret_json", "https://developers.google.com/identity/protocols/oauth2/native-app")
def _oauth_client_secret_json(rng: random.Random) -> list[Pair]:
    a = "GOCSPX-" + rs(rng, B64URL, 28)
    cid = f"{rng.randint(10**11, 10**12 - 1)}-{rs(rng, LOWER_ALNUM, 32)}.apps.googleusercontent.com"
    b = rs(rng, B64URL, 64)
    return [
        (
            json.dumps(
                {
                    "installed": {
                        "client_id": cid,
                        "project_id": "acme-tools",
                        "auth_uri": "https://accounts.google.com/o/oauth2/auth",
                        "client_secret": a,
                        "redirect_uris": ["http://localhost"],
                    }
                }
            ),
            [a],
        ),
        (
            f'auth0 app export:\n{{"name": "dashboard", "client_id": "{rs(rng, ALNUM, 32)}", "client_secret": "{b}", "app_type": "regular_web"}}',
            [b],
        ),
    ]


@secret("oauth_token_response", "https://datatracker.ietf.org/doc/html/rfc6749#section-5.1")
def _oauth_token_response(rng: random.Random) -> list[Pair]:
    a = "ya29.a0" + rs(rng, B64URL, 150)
    b = "1//0" + rs(rng, B64URL, 99)
    c = "def50200" + rs(rng, HEX, 300)
    d = rs(rng, B64URL, 40)
    return [
        (
            json.dumps(
                {
                    "access_token": a,
                    "expires_in": 3599,
                    "refresh_token": b,
                    "scope": "https://www.googleapis.com/auth/drive.readonly",
                    "token_type": "Bearer",
                }
            ),
            [a, b],
        ),
        (f'saved tokens.json: {{"token_type":"Bearer","expires_in":3600,"refresh_token":"{c}"}}', [c]),
        (f"the zoom app refresh_token={d} stopped working after rotation", [d]),
    ]


@secret("gcp_service_account_json", "https://cloud.google.com/iam/docs/keys-create-delete")
def _gcp_service_account_json(rng: random.Random) -> list[Pair]:
    lines = pem_lines(rng, "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ", 5)
    key = "-----BEGIN PRIVATE KEY-----\\n" + "\\n".join(lines) + "\\n-----END PRIVATE KEY-----\\n"
    text = f'{{\n  "type": "service_account",\n  "project_id": "acme-data",\n  "private_key_id": "{rs(rng, HEX, 40)}",\n  "private_key": "{key}",\n  "client_email": "loader@acme-data.iam.gserviceaccount.com"\n}}'
    return [(text, lines)]


@secret("basic_auth_header_log", "https://datatracker.ietf.org/doc/html/rfc7617")
def _basic_auth_header_log(rng: random.Random) -> list[Pair]:
    a = b64s(f"grafana:{pw(rng)}")
    b = b64s(f"api:{rs(rng, HEX, 32)}")
    return [
        (
            f"[2025-02-11 09:12:44] DEBUG urllib3 send: b'GET /api/datasources HTTP/1.1\\r\\nHost: grafana:3000\\r\\nAuthorization: Basic {a}\\r\\n'",
            [a],
        ),
        (f'requests.post(url, headers={{"Authorization": "Basic {b}"}}, json=payload)', [b]),
    ]


# --- source code ---------------------------------------------------------------------------------------


@secret("curl_api_key_header", "https://curl.se/docs/manpage.html#-H")
def _curl_api_key_header(rng: random.Random) -> list[Pair]:
    a = rs(rng, HEX, 32)
    b = "sk-ant-api03-" + rs(rng, B64URL, 93) + "AA"
    c = rs(rng, ALNUM, 40)
    return [
        (
            f'curl "https://acme-openai.openai.azure.com/openai/deployments/gpt4o/chat/completions?api-version=2024-06-01" -H "api-key: {a}" -d @body.json',
            [a],
        ),
        (
            f'curl https://api.anthropic.com/v1/messages -H "x-api-key: {b}" -H "anthropic-version: 2023-06-01"',
            [b],
        ),
        (f"curl -H 'X-API-Key: {c}' https://partner.example.net/v2/shipments?status=open", [c]),
    ]


@secret("python_source_key", "https://github.com/openai/openai-python#usage")
def _python_source_key(rng: random.Random) -> list[Pair]:
    a = "sk-proj-" + rs(rng, B64URL, 156)
    b = "rk_live_" + rs(rng, ALNUM, 99)
    c = pw(rng)
    return [
        (f'from openai import OpenAI\nclient = OpenAI(api_key="{a}")\n', [a]),
        (f"import stripe\nstripe.api_key = '{b}'  # TODO move to vault", [b]),
        (
            f"engine = create_engine(URL.create('postgresql+psycopg', username='etl', password='{c}', host='dwh'))",
            [c],
        ),
    ]


@secret("js_source_key", "https://docs.sendgrid.com/for-developers/sending-email/api-getting-started")
def _js_source_key(rng: random.Random) -> list[Pair]:
    a = "SG." + rs(rng, B64URL, 22) + "." + rs(rng, B64URL, 43)
    b = rs(rng, HEX, 20)
    c = pw(rng)
    return [
        (f"const sgMail = require('@sendgrid/mail');\nsgMail.setApiKey('{a}');", [a]),
        (
            f"const pusher = new Pusher({{ appId: '1234567', key: '{rs(rng, HEX, 20)}', secret: '{b}', cluster: 'eu' }});",
            [b],
        ),
        (f"export default {{ db: {{ user: 'web', password: `{c}`, host: 'localhost' }} }};", [c]),
    ]


@secret("go_source_key", "https://pkg.go.dev/github.com/IBM/sarama#Config")
def _go_source_key(rng: random.Random) -> list[Pair]:
    a, b = pw(rng), rs(rng, ALNUM, 48)
    return [
        (f'cfg.Net.SASL.Enable = true\ncfg.Net.SASL.User = "ingest"\ncfg.Net.SASL.Password = "{a}"', [a]),
        (f'const apiToken = "{b}" // bugsnag-like ingest token, hard-coded for the demo', [b]),
    ]


@secret("java_source_key", "https://docs.oracle.com/javase/8/docs/api/java/sql/DriverManager.html")
def _java_source_key(rng: random.Random) -> list[Pair]:
    a, b = pw(rng), rs(rng, B64, 44)
    return [
        (f'Connection conn = DriverManager.getConnection(url, "payroll", "{a}");', [a]),
        (f'private static final String HMAC_SECRET = "{b}";', [b]),
    ]


@secret("framework_secret_keys", "https://docs.djangoproject.com/en/5.0/ref/settings/#secret-key")
def _framework_secret_keys(rng: random.Random) -> list[Pair]:
    a = "django-insecure-" + rs(rng, string.ascii_lowercase + string.digits + "!@#$%^&*(-_=+)", 50)
    b = "base64:" + base64.b64encode(rng.randbytes(32)).decode()
    c = rs(rng, HEX, 64)
    return [
        (f"settings.py still has SECRET_KEY = '{a}' in prod", [a]),
        (f"APP_NAME=Shop\nAPP_ENV=production\nAPP_KEY={b}\n", [b]),
        (f"app = Flask(__name__)\napp.secret_key = bytes.fromhex('{c}')", [c]),
    ]


# --- key material and codes ----------------------------------------------------------------------------


@secret("hex_key_after_heading", "https://guides.rubyonrails.org/security.html#custom-credentials")
def _hex_key_after_heading(rng: random.Random) -> list[Pair]:
    a, b, c = rs(rng, HEX, 32), rs(rng, HEX, 64), rs(rng, HEX, 64).upper()
    return [
        (f"## config/master.key\n\n{a}\n\n(keep this out of the repo)", [a]),
        (f"### Encryption key (AES-256, prod)\n\n```\n{b}\n```", [b]),
        (f"Webhook signing secret\n{c}\n", [c]),
    ]


@secret("base64_key_after_heading", "https://cryptography.io/en/latest/fernet/")
def _base64_key_after_heading(rng: random.Random) -> list[Pair]:
    a = base64.urlsafe_b64encode(rng.randbytes(32)).decode()
    b = base64.b64encode(rng.randbytes(64)).decode()
    return [
        (f"Fernet key for the exports bucket:\n\n    {a}\n", [a]),
        (f"**JWT signing secret (HS512)**\n{b}", [b]),
    ]


@secret("openssh_private_key", "https://man.openbsd.org/ssh-keygen.1")
def _openssh_private_key(rng: random.Random) -> list[Pair]:
    lines = [rs(rng, B64, 70) for _ in range(3)] + [rs(rng, B64, 28) + "=="]
    body = "\n".join(["b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW", *lines])
    return [
        (
            f"this is the deploy key, paste it into the runner:\n-----BEGIN OPENSSH PRIVATE KEY-----\n{body}\n-----END OPENSSH PRIVATE KEY-----",
            lines,
        )
    ]


@secret("putty_ppk", "https://the.earth.li/~sgtatham/putty/0.78/htmldoc/AppendixC.html")
def _putty_ppk(rng: random.Random) -> list[Pair]:
    lines = [rs(rng, B64, 64) for _ in range(2)]
    mac = rs(rng, HEX, 64)
    text = f"PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: ops-laptop\nPublic-Lines: 2\nAAAAC3NzaC1lZDI1NTE5AAAAI{rs(rng, B64, 43)}\nPrivate-Lines: 2\n{lines[0]}\n{lines[1]}\nPrivate-MAC: {mac}"
    return [(text, lines)]


@secret("age_secret_key", "https://github.com/FiloSottile/age#readme")
def _age_secret_key(rng: random.Random) -> list[Pair]:
    a = "AGE-SECRET-KEY-1" + rs(rng, BECH32, 58).upper()
    b = "AGE-SECRET-KEY-1" + rs(rng, BECH32, 58).upper()
    return [
        (f"# created: 2025-03-01T10:00:00Z\n# public key: age1{rs(rng, BECH32, 58)}\n{a}", [a]),
        (f"sops needs SOPS_AGE_KEY={b} in the CI env", [b]),
    ]


@secret("wireguard_private_key", "https://www.wireguard.com/quickstart/")
def _wireguard_private_key(rng: random.Random) -> list[Pair]:
    a, b = base64.b64encode(rng.randbytes(32)).decode(), base64.b64encode(rng.randbytes(32)).decode()
    return [
        (
            f"[Interface]\nAddress = 10.8.0.2/24\nPrivateKey = {a}\n\n[Peer]\nPublicKey = {base64.b64encode(rng.randbytes(32)).decode()}\nEndpoint = vpn.example.com:51820",
            [a],
        ),
        (f"wg set wg0 private-key <(echo {b})", [b]),
    ]


@secret("otpauth_wifi_uri", "https://github.com/google/google-authenticator/wiki/Key-Uri-Format")
def _otpauth_wifi_uri(rng: random.Random) -> list[Pair]:
    a = rs(rng, BASE32, 32)
    b = pw(rng).replace(";", "")
    return [
        (
            f"QR decoded: otpauth://totp/ACME:ops@example.com?secret={a}&issuer=ACME&algorithm=SHA1&digits=6",
            [a],
        ),
        (f"guest network QR payload: WIFI:T:WPA;S:Acme-Guest;P:{b};;", [b]),
    ]


@secret("vapid_fcm_keys", "https://datatracker.ietf.org/doc/html/rfc8292")
def _vapid_fcm_keys(rng: random.Random) -> list[Pair]:
    a = b64url_nopad(rng.randbytes(32))
    b = "AAAA" + rs(rng, B64URL, 7) + ":APA91b" + rs(rng, B64URL, 134)
    return [
        (f"VAPID_PUBLIC_KEY=B{rs(rng, B64URL, 86)}\nVAPID_PRIVATE_KEY={a}", [a]),
        (f"legacy FCM server key: key={b}", [b]),
    ]


# --- webhooks and callback URLs ------------------------------------------------------------------------


@secret("mattermost_rocketchat_webhook", "https://developers.mattermost.com/integrate/webhooks/incoming/")
def _mattermost_rocketchat_webhook(rng: random.Random) -> list[Pair]:
    a = rs(rng, LOWER_ALNUM, 26)
    b = rs(rng, ALNUM, 48)
    return [
        (f"alerts go to https://chat.example.com/hooks/{a}", [a]),
        (f"ROCKETCHAT_WEBHOOK=https://rocket.example.org/hooks/{rs(rng, ALNUM, 17)}/{b}", [b]),
    ]


@secret("google_chat_webhook", "https://developers.google.com/workspace/chat/quickstart/webhooks")
def _google_chat_webhook(rng: random.Random) -> list[Pair]:
    key = "AIzaSy" + rs(rng, B64URL, 33)
    tok = rs(rng, B64URL, 43) + "%3D"
    return [
        (
            f"https://chat.googleapis.com/v1/spaces/AAAA{rs(rng, B64URL, 7)}/messages?key={key}&token={tok}",
            [tok],
        )
    ]


@secret("callback_url_token", "https://www.jenkins.io/doc/book/using/remote-access-api/")
def _callback_url_token(rng: random.Random) -> list[Pair]:
    a, b, c = rs(rng, ALNUM, 32), rs(rng, HEX, 40), rs(rng, B64URL, 32)
    return [
        (f"trigger the job remotely: https://ci.example.com/job/nightly/build?token={a}", [a]),
        (f"Payment provider posts to https://shop.example.com/hooks/payments/{b}/notify", [b]),
        (
            f"registered callback: https://api.example.com/v1/callbacks/sms?access_token={c}&source=twilio",
            [c],
        ),
    ]


# --- vendor tokens in varied settings ------------------------------------------------------------------


@secret(
    "shopify_token",
    "https://shopify.dev/docs/apps/build/authentication-authorization/access-tokens/generate-app-access-tokens-admin",
)
def _shopify_token(rng: random.Random) -> list[Pair]:
    a, b = "shpat_" + rs(rng, HEX, 32), "shpss_" + rs(rng, HEX, 32)
    return [
        (
            f'curl -X GET "https://acme-store.myshopify.com/admin/api/2024-04/products.json" -H "X-Shopify-Access-Token: {a}"',
            [a],
        ),
        (f"SHOPIFY_API_SECRET={b}", [b]),
    ]


@secret("linear_notion_tokens", "https://developers.notion.com/docs/authorization")
def _linear_notion_tokens(rng: random.Random) -> list[Pair]:
    a = "lin_api_" + rs(rng, ALNUM, 40)
    b = "ntn_" + rs(rng, string.digits, 11) + rs(rng, ALNUM, 35)
    c = "secret_" + rs(rng, ALNUM, 43)
    return [
        (f'linear MCP server config: {{"env": {{"LINEAR_API_KEY": "{a}"}}}}', [a]),
        (f"notion integration token {b} — shared with the wiki importer", [b]),
        (f'const notion = new Client({{ auth: "{c}" }})', [c]),
    ]


@secret(
    "atlassian_api_token",
    "https://support.atlassian.com/atlassian-account/docs/manage-api-tokens-for-your-atlassian-account/",
)
def _atlassian_api_token(rng: random.Random) -> list[Pair]:
    a = "ATATT3xFfGF0" + rs(rng, B64URL, 170) + "=" + rs(rng, HEX, 8).upper()
    b = "ATATT3xFfGF0" + rs(rng, B64URL, 170) + "=" + rs(rng, HEX, 8).upper()
    return [
        (f"jira-cli config: login: bot@example.com, api_token: {a}", [a]),
        (f"curl -u bot@example.com:{b} https://acme.atlassian.net/rest/api/3/myself", [b]),
    ]


@secret("doppler_token", "https://docs.doppler.com/docs/service-tokens")
def _doppler_token(rng: random.Random) -> list[Pair]:
    a = "dp.st.prd." + rs(rng, ALNUM, 43)
    b = "dp.pt." + rs(rng, ALNUM, 43)
    return [
        (f"docker run -e DOPPLER_TOKEN={a} acme/api:1.4.2", [a]),
        (f"doppler configure set token {b} --scope /", [b]),
    ]


@secret("databricks_token", "https://docs.databricks.com/en/dev-tools/auth/pat.html")
def _databricks_token(rng: random.Random) -> list[Pair]:
    a, b = "dapi" + rs(rng, HEX, 32), "dapi" + rs(rng, HEX, 32) + "-2"
    return [
        (
            f"~/.databrickscfg\n[DEFAULT]\nhost = https://adb-1234567890123456.7.azuredatabricks.net\ntoken = {a}\n",
            [a],
        ),
        (f"notebook widget value was {b}, which is the PAT, oops", [b]),
    ]


@secret("pulumi_token", "https://www.pulumi.com/docs/pulumi-cloud/access-management/access-tokens/")
def _pulumi_token(rng: random.Random) -> list[Pair]:
    a, b = "pul-" + rs(rng, HEX, 40), "pul-" + rs(rng, HEX, 40)
    return [
        (f"PULUMI_ACCESS_TOKEN={a} pulumi up --stack prod", [a]),
        (f"new org token for CI is {b}", [b]),
    ]


@secret("stripe_webhook_secret", "https://docs.stripe.com/webhooks#verify-events")
def _stripe_webhook_secret(rng: random.Random) -> list[Pair]:
    a, b = "whsec_" + rs(rng, ALNUM, 32), "whsec_" + rs(rng, ALNUM, 32)
    return [
        (f"> Ready! Your webhook signing secret is {a} (^C to quit)", [a]),
        (
            f"endpoint_secret = '{b}'\nevent = stripe.Webhook.construct_event(payload, sig_header, endpoint_secret)",
            [b],
        ),
    ]


@secret("newrelic_datadog_keys", "https://docs.datadoghq.com/account_management/api-app-keys/")
def _newrelic_datadog_keys(rng: random.Random) -> list[Pair]:
    a = "NRAK-" + rs(rng, UPPER_ALNUM, 27)
    b, c = rs(rng, HEX, 32), rs(rng, HEX, 40)
    d = rs(rng, HEX, 36) + "NRAL"
    return [
        (f"newrelic.yml:\ncommon: &default_settings\n  license_key: {d}\n  app_name: checkout", [d]),
        (f"NEW_RELIC_API_KEY={a} terraform apply", [a]),
        (
            f'curl -X GET https://api.datadoghq.eu/api/v1/validate -H "DD-API-KEY: {b}" -H "DD-APPLICATION-KEY: {c}"',
            [b, c],
        ),
    ]


@secret("dropbox_token", "https://developers.dropbox.com/oauth-guide")
def _dropbox_token(rng: random.Random) -> list[Pair]:
    a = "sl.B" + rs(rng, B64URL, 135)
    return [
        (
            f'rclone.conf\n[dropbox]\ntype = dropbox\ntoken = {{"access_token":"{a}","token_type":"bearer","expiry":"2025-06-01T12:00:00Z"}}',
            [a],
        )
    ]


@secret("mailgun_key", "https://documentation.mailgun.com/docs/mailgun/api-reference/authentication/")
def _mailgun_key(rng: random.Random) -> list[Pair]:
    a = rs(rng, HEX, 32) + "-" + rs(rng, HEX, 8) + "-" + rs(rng, HEX, 8)
    b = "key-" + rs(rng, HEX, 32)
    return [
        (
            f"curl -s --user 'api:{a}' https://api.eu.mailgun.net/v3/mg.example.com/messages -F to=ops@example.com",
            [a],
        ),
        (f'MAILGUN_API_KEY = "{b}"', [b]),
    ]


@secret("grafana_service_account", "https://grafana.com/docs/grafana/latest/administration/service-accounts/")
def _grafana_service_account(rng: random.Random) -> list[Pair]:
    a = "glsa_" + rs(rng, ALNUM, 32) + "_" + rs(rng, HEX, 8)
    b = "glsa_" + rs(rng, ALNUM, 32) + "_" + rs(rng, HEX, 8)
    return [
        (f"provisioning/datasources: the sync job uses Authorization: Bearer {a}", [a]),
        (f"grafana token for the dashboards exporter: {b}", [b]),
    ]


@secret("huggingface_token", "https://huggingface.co/docs/hub/security-tokens")
def _huggingface_token(rng: random.Random) -> list[Pair]:
    a, b = "hf_" + rs(rng, string.ascii_letters, 34), "hf_" + rs(rng, string.ascii_letters, 34)
    return [
        (f"HF_TOKEN={a} python train.py --push-to-hub", [a]),
        (f'from huggingface_hub import login\nlogin(token="{b}")', [b]),
    ]


@secret("slack_app_token", "https://api.slack.com/authentication/token-types")
def _slack_app_token(rng: random.Random) -> list[Pair]:
    a = "xapp-1-A" + rs(rng, UPPER_ALNUM, 10) + "-" + rs(rng, string.digits, 13) + "-" + rs(rng, HEX, 64)
    b = (
        "xoxp-"
        + rs(rng, string.digits, 12)
        + "-"
        + rs(rng, string.digits, 12)
        + "-"
        + rs(rng, string.digits, 13)
        + "-"
        + rs(rng, HEX, 32)
    )
    return [
        (f"socket mode app: SLACK_APP_TOKEN={a}", [a]),
        (f"my user token (needed for search.messages): {b}", [b]),
    ]


@secret("twilio_okta_tokens", "https://developer.okta.com/docs/guides/create-an-api-token/main/")
def _twilio_okta_tokens(rng: random.Random) -> list[Pair]:
    a = "00" + rs(rng, B64URL, 40)
    b = rs(rng, HEX, 32)
    return [
        (f'curl -H "Authorization: SSWS {a}" https://acme.okta.com/api/v1/users?limit=25', [a]),
        (f"client = Client('AC{rs(rng, HEX, 32)}', '{b}')", [b]),
    ]


@secret("gitlab_pat_in_prose", "https://docs.gitlab.com/ee/user/profile/personal_access_tokens.html")
def _gitlab_pat_in_prose(rng: random.Random) -> list[Pair]:
    a, b = "glpat-" + rs(rng, B64URL, 20), "glpat-" + rs(rng, B64URL, 20)
    return [
        (f"renovate needs RENOVATE_TOKEN, I made {a} with api scope, expires in 30 days", [a]),
        (f"git remote set-url origin https://gitlab-ci-token:{b}@gitlab.example.com/web/site.git", [b]),
    ]


@secret("cli_password_flags", "https://mosquitto.org/man/mosquitto_pub-1.html")
def _cli_password_flags(rng: random.Random) -> list[Pair]:
    a, b, c, d = pw(rng), pw(rng), pw(rng), pw(rng)
    return [
        (f"mosquitto_pub -h broker.local -u sensor -P '{a}' -t home/temp -m 21.5", [a]),
        (f"helm upgrade --install pg bitnami/postgresql --set auth.postgresPassword='{b}' -n data", [b]),
        (f"mongosh \"mongodb://db-1:27017/admin\" --username root --password '{c}'", [c]),
        (f"ldapsearch -x -H ldaps://ldap.corp -D 'cn=admin,dc=corp' -w '{d}' -b 'ou=people,dc=corp'", [d]),
    ]


# --- passwords in chat and prose -----------------------------------------------------------------------


@secret("pw_no_keyword_context", "https://pages.nist.gov/800-63-3/sp800-63b.html")
def _pw_no_keyword_context(rng: random.Random) -> list[Pair]:
    a, b, c, d = pw(rng), pw(rng), pw(rng), pw(rng)
    return [
        (f"log in as admin with {a} and click Settings > Users", [a]),
        (f"the router is admin / {b}", [b]),
        (f"ssh deploy@{ip(rng)}, it's {c} until we move to keys", [c]),
        (f"for the staging grafana use ops:{d}", [d]),
    ]


@secret("pw_two_messages", "https://pages.nist.gov/800-63-3/sp800-63b.html")
def _pw_two_messages(rng: random.Random) -> list[Pair]:
    a, b = pw(rng), pw(rng)
    return [
        (f"[10:02] alice: what do I type when sudo asks?\n[10:02] bob: {a}\n[10:03] alice: thx, in", [a]),
        (f"ana: qual é o login do painel?\nbruno: usuário financeiro\nbruno: {b}", [b]),
    ]


def _lang_family(name: str, templates: tuple[str, ...]) -> None:
    @secret(name, "https://pages.nist.gov/800-63-3/sp800-63b.html")
    def _gen(rng: random.Random) -> list[Pair]:
        out = []
        for t in templates:
            v = pw(rng)
            out.append((t.format(pw=v, ip=ip(rng)), [v]))
        return out


_lang_family(
    "pw_chat_portuguese",
    (
        "A senha do Wi-Fi do escritório é {pw}",
        "Oi, pode entrar no servidor {ip} com usuário deploy e senha {pw}? Troca depois.",
        "{pw} é a senha do root no banco de homologação",
    ),
)
_lang_family(
    "pw_chat_italian",
    (
        "La password del database di staging è {pw}, non condividerla.",
        "Ciao, ti ho resettato l'account: nuova password {pw}",
    ),
)
_lang_family(
    "pw_chat_turkish",
    ("Sunucu şifresi {pw}, lütfen kimseyle paylaşma.", "VPN parolası: {pw} (yarın değiştireceğim)"),
)
_lang_family(
    "pw_chat_vietnamese",
    ("Mật khẩu wifi phòng họp là {pw} nhé", "Anh ơi, tài khoản admin trên {ip}, mật khẩu {pw}"),
)
_lang_family(
    "pw_chat_hindi", ("सर्वर का पासवर्ड {pw} है, किसी को मत बताना।", "एडमिन लॉगिन: यूज़र admin, पासवर्ड {pw}")
)
_lang_family(
    "pw_chat_arabic",
    ("كلمة المرور لقاعدة البيانات هي {pw}", "كلمة السر الجديدة للحساب: {pw} لا تشاركها مع أحد"),
)
_lang_family(
    "pw_chat_polish", ("Hasło do serwera to {pw}, zmień je po wdrożeniu.", "Nowe hasło do VPN: {pw}")
)
_lang_family(
    "pw_chat_dutch",
    (
        "Het wachtwoord van de testomgeving is {pw}",
        "Je kunt inloggen met gebruiker beheer en wachtwoord {pw}.",
    ),
)
_lang_family(
    "pw_chat_indonesian",
    ("Kata sandi server staging: {pw}, jangan disebar ya", "sandi wifi kantor sekarang {pw}"),
)
_lang_family("pw_chat_thai", ("รหัสผ่านเซิร์ฟเวอร์คือ {pw} อย่าบอกใคร", "รหัสผ่านใหม่ของบัญชีแอดมิน: {pw}"))


# --- near-misses ---------------------------------------------------------------------------------------


@near("nm_hashes_checksums", "https://httpd.apache.org/docs/2.4/programs/htpasswd.html")
def _nm_hashes_checksums(rng: random.Random) -> list[str]:
    return [
        f"sha256sum terraform_1.8.5_linux_amd64.zip\n{rs(rng, HEX, 64)}  terraform_1.8.5_linux_amd64.zip",
        f"git cat-file -p {rs(rng, HEX, 40)} shows the tree; the blob is {rs(rng, HEX, 40)}",
        f"the md5 of the uploaded file is {rs(rng, HEX, 32)}, matches the manifest",
        f"docker pull nginx@sha256:{rs(rng, HEX, 64)}",
    ]


@near("nm_encrypted_blobs", "https://docs.ansible.com/ansible/latest/vault_guide/index.html")
def _nm_encrypted_blobs(rng: random.Random) -> list[str]:
    vault = "\n".join(rs(rng, HEX, 80) for _ in range(3))
    return [
        f"group_vars/prod/vault.yml is encrypted, safe to commit:\n$ANSIBLE_VAULT;1.1;AES256\n{vault}",
        f"db_password: ENC[AES256_GCM,data:{rs(rng, B64, 24)},iv:{rs(rng, B64, 43)}=,tag:{rs(rng, B64, 22)}==,type:str]",
        f"kind: SealedSecret\nspec:\n  encryptedData:\n    password: AgB{rs(rng, B64, 120)}",
    ]


@near("nm_public_keys", "https://www.wireguard.com/quickstart/")
def _nm_public_keys(rng: random.Random) -> list[str]:
    return [
        f"[Peer]\nPublicKey = {base64.b64encode(rng.randbytes(32)).decode()}\nAllowedIPs = 10.8.0.0/24",
        f"recipients for sops: age1{rs(rng, BECH32, 58)}",
        f'{{"keys":[{{"kty":"RSA","kid":"{rs(rng, B64URL, 16)}","use":"sig","alg":"RS256","e":"AQAB","n":"{rs(rng, B64URL, 342)}"}}]}}',
        f"applicationServerKey: 'B{rs(rng, B64URL, 86)}' (VAPID public key, shipped to browsers)",
    ]


@near("nm_documented_examples", "https://jwt.io/introduction")
def _nm_documented_examples(rng: random.Random) -> list[str]:
    return [
        "jwt.io's sample token eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c decodes to John Doe",
        "Slack's docs use xoxb-not-a-real-token-this-will-not-work in every example",
        f'the Firebase web config is public by design: apiKey: "AIza{rs(rng, B64URL, 35)}", authDomain: "acme.firebaseapp.com"',
    ]


@near(
    "nm_masked_ci_logs",
    "https://docs.github.com/en/actions/writing-workflows/choosing-what-your-workflow-does/workflow-commands-for-github-actions#masking-a-value-in-a-log",
)
def _nm_masked_ci_logs(rng: random.Random) -> list[str]:
    return [
        "2024-05-02T10:11:12Z + docker login -u release-bot -p *** ghcr.io\nLogin Succeeded",
        "$ echo $DEPLOY_TOKEN\n[MASKED]",
        f"token: glpat-****************, expires 2025-09-01, scopes api,read_repository (job {rng.randint(10**8, 10**9)})",
        'Run curl -H "Authorization: token ***" https://api.github.com/user',
    ]


@near(
    "nm_config_references",
    "https://kubernetes.io/docs/concepts/configuration/secret/#using-secrets-as-environment-variables",
)
def _nm_config_references(rng: random.Random) -> list[str]:
    return [
        "env:\n  - name: DB_PASSWORD\n    valueFrom:\n      secretKeyRef:\n        name: db-credentials\n        key: password",
        "db_password = var.db_password\n# set in terraform.tfvars, which is gitignored",
        "spring:\n  datasource:\n    password: ${DB_PASSWORD}\n",
        "POSTGRES_PASSWORD_FILE=/run/secrets/postgres_password",
        'password: "{{ vault_db_password }}"',
    ]


@near("nm_source_env_lookups", "https://docs.python.org/3/library/os.html#os.getenv")
def _nm_source_env_lookups(rng: random.Random) -> list[str]:
    return [
        'client = OpenAI(api_key=os.environ["OPENAI_API_KEY"])',
        "const stripe = require('stripe')(process.env.STRIPE_SECRET_KEY);",
        'token := os.Getenv("GITHUB_TOKEN")\nif token == "" { log.Fatal("GITHUB_TOKEN not set") }',
        'String password = System.getenv("DB_PASSWORD");',
    ]


@near(
    "nm_placeholders",
    "https://docs.docker.com/compose/how-tos/environment-variables/set-environment-variables/",
)
def _nm_placeholders(rng: random.Random) -> list[str]:
    return [
        "DB_PASSWORD=<REPLACE_ME>\nAPI_KEY=your-api-key-here",
        '{"client_id": "YOUR_CLIENT_ID", "client_secret": "YOUR_CLIENT_SECRET"}',
        "curl -H 'X-API-Key: $API_KEY' https://api.example.com/v1/items",
        "CREATE USER reporting WITH PASSWORD '********';",
    ]


@near("nm_sql_without_secrets", "https://www.postgresql.org/docs/current/sql-alterrole.html")
def _nm_sql_without_secrets(rng: random.Random) -> list[str]:
    return [
        "ALTER ROLE app_rw VALID UNTIL 'infinity';",
        "CREATE ROLE readonly NOLOGIN;\nGRANT SELECT ON ALL TABLES IN SCHEMA public TO readonly;",
        'postgres=# \\password app_rw\nEnter new password for user "app_rw":',
        "CREATE USER 'monitor'@'localhost' IDENTIFIED WITH auth_socket;",
        "SELECT rolname, rolpassword IS NOT NULL AS has_password FROM pg_authid;",
    ]


@near(
    "nm_terraform_plan_sensitive",
    "https://developer.hashicorp.com/terraform/language/values/outputs#sensitive-suppressing-values-in-cli-output",
)
def _nm_terraform_plan_sensitive(rng: random.Random) -> list[str]:
    return [
        '  + resource "aws_db_instance" "orders" {\n      + password = (sensitive value)\n      + username = "orders"\n    }',
        f'"outputs": {{ "db_endpoint": {{ "value": "orders-prod.c{rs(rng, LOWER_ALNUM, 12)}.eu-west-1.rds.amazonaws.com", "type": "string" }} }}',
        f'"attributes": {{ "arn": "arn:aws:iam::{rng.randint(10**11, 10**12 - 1)}:role/deployer", "id": "deployer", "unique_id": "AROA{rs(rng, UPPER_ALNUM, 17)}" }}',
    ]


@near(
    "nm_cookies_non_secret",
    "https://developers.google.com/analytics/devguides/collection/analyticsjs/cookie-usage",
)
def _nm_cookies_non_secret(rng: random.Random) -> list[str]:
    return [
        "Set-Cookie: theme=dark; Path=/; Max-Age=31536000; SameSite=Lax",
        f"Cookie: _ga=GA1.2.{rng.randint(10**8, 10**9)}.{rng.randint(1700000000, 1730000000)}; lang=pt-BR; cookie_consent=accepted",
        "Set-Cookie: sessionid=; expires=Thu, 01 Jan 1970 00:00:00 GMT; Path=/",
    ]


@near(
    "nm_hex_after_heading",
    "https://docs.docker.com/reference/cli/docker/image/pull/#pull-an-image-by-digest-immutable-identifier",
)
def _nm_hex_after_heading(rng: random.Random) -> list[str]:
    return [
        f"## Release commit\n\n{rs(rng, HEX, 40)}\n",
        f"### Image digest\nsha256:{rs(rng, HEX, 64)}",
        f"Build id\n{uuid(rng)}",
        f"**Trace id**\n{rs(rng, HEX, 32)}",
    ]


@near("nm_sri_integrity", "https://developer.mozilla.org/en-US/docs/Web/Security/Subresource_Integrity")
def _nm_sri_integrity(rng: random.Random) -> list[str]:
    return [
        f'<script src="https://cdn.example.com/lib.min.js" integrity="sha384-{base64.b64encode(rng.randbytes(48)).decode()}" crossorigin="anonymous"></script>',
        f'"resolved": "https://registry.npmjs.org/left-pad/-/left-pad-1.3.0.tgz", "integrity": "sha512-{base64.b64encode(rng.randbytes(64)).decode()}"',
    ]


@near("nm_vendor_object_ids", "https://docs.stripe.com/api/customers/object")
def _nm_vendor_object_ids(rng: random.Random) -> list[str]:
    return [
        f"refund failed for customer cus_{rs(rng, ALNUM, 14)}, charge ch_{rs(rng, ALNUM, 24)}",
        f"webhook event evt_{rs(rng, ALNUM, 24)} arrived twice",
        f"Slack channel C{rs(rng, UPPER_ALNUM, 10)} in workspace T{rs(rng, UPPER_ALNUM, 10)}",
        f"k8s uid {uuid(rng)} for pod api-7c9f-{rs(rng, LOWER_ALNUM, 5)}",
    ]


@near("nm_oauth_public_values", "https://datatracker.ietf.org/doc/html/rfc7636")
def _nm_oauth_public_values(rng: random.Random) -> list[str]:
    return [
        f"GET /authorize?response_type=code&client_id={rs(rng, ALNUM, 32)}&code_challenge={b64url_nopad(rng.randbytes(32))}&code_challenge_method=S256",
        f"client_id: {rng.randint(10**11, 10**12 - 1)}-{rs(rng, LOWER_ALNUM, 32)}.apps.googleusercontent.com (public, goes in the frontend)",
        f"Stripe publishable key pk_live_{rs(rng, ALNUM, 99)} is fine in the checkout page",
    ]


@near("nm_notebook_outputs", "https://nbformat.readthedocs.io/en/latest/format_description.html")
def _nm_notebook_outputs(rng: random.Random) -> list[str]:
    return [
        json.dumps(
            {
                "output_type": "execute_result",
                "data": {"text/plain": [f"<sklearn.pipeline.Pipeline object at 0x7f{rs(rng, HEX, 10)}>"]},
            }
        ),
        json.dumps(
            {
                "name": "stdout",
                "output_type": "stream",
                "text": ["epoch 3/10 loss=0.4127 acc=0.8812\n", "torch.Size([64, 3, 224, 224])\n"],
            }
        ),
        "Out[12]: {'user': 'analyst', 'password': None, 'host': 'dwh.internal'}",
    ]


@near("nm_no_keyword_context", "https://pages.nist.gov/800-63-3/sp800-63b.html")
def _nm_no_keyword_context(rng: random.Random) -> list[str]:
    return [
        "log in as admin with SSO and click Settings > Users",
        "the router is at 192.168.1.1, admin login is on the sticker",
        f"ssh deploy@{ip(rng)}, it uses your own key now",
        f"build 2025.06.{rng.randint(10, 28)}-rc{rng.randint(1, 4)} is the one to test",
    ]


@near("nm_urls_without_tokens", "https://datatracker.ietf.org/doc/html/rfc3986")
def _nm_urls_without_tokens(rng: random.Random) -> list[str]:
    return [
        f"https://www.youtube.com/watch?v={rs(rng, B64URL, 11)}&t=42s",
        "https://acmeexports.blob.core.windows.net/public/logo.png?sv=2022-11-02 (anonymous container, no sig)",
        f"https://github.com/acme/app/compare/{rs(rng, HEX, 12)}...{rs(rng, HEX, 12)}",
        "jdbc:postgresql://pg-1.internal:5432/billing?ssl=true&sslmode=verify-full",
        "https://chat.example.com/hooks/ is where incoming webhooks live; create one under Integrations",
    ]


@near("nm_policy_talk_a", "https://pages.nist.gov/800-63-3/sp800-63b.html")
def _nm_policy_talk_a(rng: random.Random) -> list[str]:
    return [
        "Política de senhas: mínimo de 12 caracteres, troca a cada 90 dias.",
        "Ho cambiato la password come richiesto dalla policy di sicurezza.",
        "Şifre sıfırlama bağlantısı e-postanıza gönderildi.",
        "Vui lòng đổi mật khẩu sau khi đăng nhập lần đầu.",
        "पासवर्ड कम से कम 12 अक्षरों का होना चाहिए।",
    ]


@near("nm_policy_talk_b", "https://pages.nist.gov/800-63-3/sp800-63b.html")
def _nm_policy_talk_b(rng: random.Random) -> list[str]:
    return [
        "يرجى تغيير كلمة المرور كل ٩٠ يومًا.",
        "Hasło musi mieć co najmniej 12 znaków i jedną cyfrę.",
        "Wachtwoord vergeten? Klik op 'opnieuw instellen'.",
        "Kata sandi harus diganti setiap 90 hari.",
        "กรุณาเปลี่ยนรหัสผ่านทุก 90 วัน",
    ]


@near("nm_base64_ordinary", "https://kubernetes.io/docs/concepts/configuration/configmap/")
def _nm_base64_ordinary(rng: random.Random) -> list[str]:
    return [
        f"kind: ConfigMap\nbinaryData:\n  banner.txt: {b64s('Welcome to the staging cluster. Be nice.')}",
        f"echo {b64s(json.dumps({'feature': 'search', 'enabled': True}))} | base64 -d",
        "client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t (that is just the public cert)",
    ]


# --- assembly ------------------------------------------------------------------------------------------


def halves(families: list[str]) -> dict[str, str]:
    names = sorted(set(families))
    random.Random(SPLIT_SEED).shuffle(names)
    cut = math.ceil(len(names) / 2)
    return {n: ("tune" if i < cut else "heldout") for i, n in enumerate(names)}


def records() -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    s_half = halves([name for name, _, _ in SECRET_FAMILIES])
    n_half = halves([name for name, _, _ in NEAR_FAMILIES])
    secrets_out: list[dict[str, object]] = []
    for name, source, fn in sorted(SECRET_FAMILIES, key=lambda f: f[0]):
        pairs = fn(random.Random(f"q6:{name}"))
        for k, (text, listed) in enumerate(pairs, 1):
            secrets_out.append(
                {
                    "id": f"q6-s-{name}-{k}",
                    "family": name,
                    "source": source,
                    "text": text,
                    "secrets": listed,
                    "half": s_half[name],
                }
            )
    near_out: list[dict[str, object]] = []
    for name, source, nfn in sorted(NEAR_FAMILIES, key=lambda f: f[0]):
        for k, text in enumerate(nfn(random.Random(f"q6:{name}")), 1):
            near_out.append(
                {
                    "id": f"q6-n-{name}-{k}",
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
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"{len(secrets_out)} secret records, {len(near_out)} near-misses")


if __name__ == "__main__":
    main()
