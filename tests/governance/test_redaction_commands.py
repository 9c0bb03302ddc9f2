"""Secrets passed as command arguments, split over chat messages, in webhook paths and auth headers, and
three vendor shapes (Tencent Cloud `AKID…`, Nostr `nsec1…`, FCM legacy server keys): what each rule removes
and what it keeps. Every value is made up for the test.
"""

from __future__ import annotations

import pytest

from governance.redaction import redact

# Written before the rules, shaped like their inputs but holding no secret: each must come back unchanged.
COMMAND_NEAR_MISSES = [
    # a client that prompts for the password, or `-p` as a port or a path
    "mysql -u root -p prod",
    "mysql -u root -p",
    "mysql -h db.internal -P 3306 -u app -p",
    "redis-cli -p 6379 ping",
    "redis-cli -h cache.internal -p 6380 --tls",
    "psql -h db -p 5432 -U app orders",
    "ssh -p 2222 deploy@bastion.example.com",
    "scp -P 2222 build.tar.gz deploy@host:/srv",
    "mkdir -p /var/lib/app/data",
    "docker run -p 8080:80 nginx:1.27",
    "kubectl port-forward svc/db 5432:5432 -n prod",
    "python -m http.server -p 8000",
    # passwords read from a file, a prompt, stdin or a variable
    "mytool --password-file /run/secrets/db_password",
    "docker login -u ci --password-stdin < token.txt",
    'curl -u "$USER:$PASS" https://api.example.com/v1/items',
    "curl -u ${API_USER}:${API_PASS} https://api.example.com/v1/items",
    "curl -u alice https://api.example.com/v1/items",
    "sshpass -f ~/.ssh/pw.txt ssh root@host",
    "sshpass -e ssh root@host",
    "htpasswd -c /etc/nginx/.htpasswd admin",
    "htpasswd -B /etc/apache2/.htpasswd reviewer",
    "sqlplus / as sysdba",
    "sqlplus /nolog",
    "sqlplus scott@orcl",
    "AUTH failed: WRONGPASS invalid username-password pair",
    "redis AUTH is required when requirepass is set",
    "127.0.0.1:6379> AUTH",
    "xcrun altool --upload-app -u dev@acme.example -p @keychain:AC_PASSWORD",
    "xcrun notarytool submit app.zip --keychain-profile notary",
    # chat that asks about a password and gets no value back
    "[10:02] ana: what's the staging db password again?\n[10:02] ben: check 1Password\n[10:03] ana: thanks",
    "[09:14] ops: did anyone rotate the api token?\n[09:15] kim: yes, yesterday",
    "[11:40] lee: password reset link expired\n[11:41] max: resend it",
    # a UUID that is a request id, an API path or a resource, not a webhook's token
    "GET https://api.example.com/v1/requests/3f6b1c2e-8a4d-4e5f-9b1a-2c3d4e5f6a7b returned 404",
    "https://github.com/acme/app/settings/hooks/482913",
    "GET /repos/acme/app/hooks/482913/deliveries",
    "open https://open.feishu.cn/document/client-docs/bot-v3/add-custom-bot",
    "X-Request-Id: 6a5072c9-3c33-45b9-85cc-8b9339c97201",
    "Authorization: Splunk <hec-token>",
    "Authorization: Bearer $TOKEN",
    # vendor prefixes without a value
    "AKID is the prefix of a Tencent Cloud SecretId",
    "set TENCENTCLOUD_SECRET_ID from the vault, never from the repo",
    "nsec1 keys are private; share only the npub1 form",
    "npub1q3sle0kvfsehgsuexttt3ugjd8xdklxfwwkh559wxckmzddywnws6cd26p",
]


# one was altered before the rules ("mysql -u root -p prod": the database read as `-p`'s password)
@pytest.mark.parametrize("text", COMMAND_NEAR_MISSES)
def test_command_shaped_text_without_a_secret_is_kept(text: str) -> None:
    assert redact(text).text == text


def _gone(text: str, *secrets: str) -> str:
    out = redact(text).text
    for secret in secrets:
        assert secret not in out, (text, out)
    return out


@pytest.mark.parametrize(
    ("text", "secret", "kept"),
    [
        ("htpasswd -b /etc/nginx/.htpasswd reviewer Qm7xTz2", "Qm7xTz2", "reviewer"),
        ("  12  htpasswd -bcB /etc/nginx/.htpasswd kibana w4Rk9p", "w4Rk9p", "kibana"),
        ("htpasswd -nb admin 'hunter22!x' > users", "hunter22!x", "admin"),
        ("sqlplus system/Z7xtjWd3Dz as sysdba", "Z7xtjWd3Dz", "system"),
        ('sqlplus -s "scott/Tg8kq2Lw"', "Tg8kq2Lw", "scott"),
        ("smbclient //fs/share -U alice%Pw9kq2Lm", "Pw9kq2Lm", "alice"),
        ("rabbitmqctl add_user deploy Rb7mq2Xk", "Rb7mq2Xk", "deploy"),
        ("rabbitmqctl change_password deploy Rb7mq2Xk", "Rb7mq2Xk", "deploy"),
        (
            "xcrun altool --upload-app -u dev@acme.example -p cqeo-frks-hdnn-qjug",
            "cqeo-frks-hdnn-qjug",
            "dev@",
        ),
        ("mysql -u root -pX9kz2Lq7Tw prod", "X9kz2Lq7Tw", "prod"),
        ("mysql -u root -p X9kz2Lq7Tw", "X9kz2Lq7Tw", "root"),
    ],
)
def test_command_password_arguments_are_removed(text: str, secret: str, kept: str) -> None:
    assert kept in _gone(text, secret)


def test_curl_user_that_is_an_api_key_goes_with_its_secret() -> None:
    key, secret = "5c1ce66c4a0a0c6d335457712697ecb5", "345c9006760d8a5bfd16987630127a0f"
    out = _gone(f'curl -s --user "{key}:{secret}" https://api.mailjet.com/v3.1/send', key, secret)
    assert "api.mailjet.com" in out
    assert "alice" in redact("curl -u alice:Pw9kq2Lm https://x.example").text  # a user name stays


@pytest.mark.parametrize(
    "text",
    ["AUTH oeWlx62bazcL", "127.0.0.1:6379> AUTH default oeWlx62bazcL", "redis> AUTH 'oeWlx62bazcL'"],
)
def test_redis_auth_command_loses_its_password(text: str) -> None:
    assert "AUTH" in _gone(text, "oeWlx62bazcL")


def test_password_in_the_next_chat_message_is_removed() -> None:
    text = (
        "[10:02] ana: what's the staging db password again?\n[10:02] ben: N%bLk7yV%OFs\n[10:03] ben: thanks"
    )
    assert "what's the staging db password again?" in _gone(text, "N%bLk7yV%OFs")
    split = "[14:20] ops: vault sealed, unseal share part one: gOQ1Ku\n[14:21] ops: part two: Dpj0!DoM"
    assert "part two:" in _gone(split, "gOQ1Ku", "Dpj0!DoM")


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (
            "hook https://open.feishu.cn/open-apis/bot/v2/hook/b04cd8b5-33f8-4152-bf2d-7b94153d45af",
            "b04cd8b5",
        ),
        ("https://open.larksuite.com/open-apis/bot/v2/hook/c5c1d24d-3f79-471a-a37c-7d7555058e84", "c5c1d24d"),
        ("POST https://chat.example.com/hooks/xq7bm2kz9wrd8tfy3ncp5hj4ga", "xq7bm2kz9wrd8tfy3ncp5hj4ga"),
        ("-H 'Authorization: Splunk 6a5072c9-3c33-45b9-85cc-8b9339c97201'", "6a5072c9-3c33"),
        ('{"Authorization": "SSWS 00Qx7kLm2Pz9Rt4Vb6Nc8Wd1Yf3Hg5Js"}', "00Qx7kLm2Pz9Rt4Vb6Nc8Wd1Yf3Hg5Js"),
    ],
)
def test_webhook_path_and_header_tokens_are_removed(text: str, secret: str) -> None:
    _gone(text, secret)


@pytest.mark.parametrize(
    "secret",
    [
        "AKIDOPDlYSWBqBknTQXBtzTQ7ONR7eEi7AWI",
        "nsec16fma4y5sznxhat4k0pduae8cyyvxfs0hsarrvs6hq5fc9huf85247kcp2a",
        "AAAAkZ337F6:APA91bj-qHaByMdC9bVZqHDagBvx1upd-tvdlRwLbnvis6B7jgPuZmC__WgML3btRJuBAxDkyJSemRAIlc5Gre38dN",
    ],
)
def test_vendor_shapes_are_removed_in_a_sentence(secret: str) -> None:
    assert "the bot uses" in _gone(f"the bot uses {secret} for now", secret, secret[:12])


def test_japanese_short_password_word_takes_a_password_not_a_path() -> None:
    assert "rootパス" in _gone("サーバーのrootパスはDtMjW9fに変更しました", "DtMjW9f")
    for kept in (
        "設定ファイルのパスは/etc/app/conf.d/x.yamlです",
        "インストールパスはC:\\Tools\\bin",
        "コンパスは北",
    ):
        assert redact(kept).text == kept


def test_a_ticket_or_a_version_in_the_next_chat_message_is_kept() -> None:
    text = "[10:02] ana: which PR rotated the token?\n[10:03] ben: OPS-1234\n[10:03] ben: 3.2.1-rc1"
    assert redact(text).text == text


@pytest.mark.parametrize(
    "text",
    [  # written after the rules: this project's own API names webhooks by UUID
        "DELETE /v1/webhooks/3f6b1c2e-8a4d-4e5f-9b1a-2c3d4e5f6a7b returned 204",
        "GET https://api.example.com/v1/webhooks/3f6b1c2e-8a4d-4e5f-9b1a-2c3d4e5f6a7b/deliveries",
        "PUT /2.0/repositories/acme/app/hooks/3f6b1c2e-8a4d-4e5f-9b1a-2c3d4e5f6a7b",
    ],
)
def test_a_webhook_named_by_uuid_in_an_api_path_is_kept(text: str) -> None:
    assert redact(text).text == text


def test_value_opening_its_line_before_a_credential_word_is_removed() -> None:
    uuid = "be5ce3c8-7b73-48a0-9e24-8e6593249dd0"
    assert "heroku api key (from" in _gone(f"{uuid} heroku api key (from heroku auth:token)", uuid)
    assert "- " in _gone("- Xk9mQ2pa7Lw3Zr5T deploy token", "Xk9mQ2pa7Lw3Zr5T")


@pytest.mark.parametrize(
    "text",
    [
        "3f9a2c1d4e Refresh token",  # a git log line: a hex value is a commit
        "3f9a2c1d4e5b6a7c8d9e0f1a2b3c4d5e6f7a8b9c fix the token",
        "8f3e2a1c-9b7d-4c6e-a5f4-3b2a1c0d9e8f request id for the api key call",
        "release-2024-01 api key",
        "v1.2.3-beta.4 token",
    ],
)
def test_value_opening_its_line_that_is_no_credential_is_kept(text: str) -> None:
    assert redact(text).text == text


def test_spanish_clave_of_an_account_is_a_password_word() -> None:
    assert "es la clave del usuario" in _gone("?FI1iS es la clave del usuario de soporte", "?FI1iS")
    assert "la clave del usuario es" in _gone("la clave del usuario es Xk9mQ2pa", "Xk9mQ2pa")
    for kept in ("la clave del usuario debe tener 8 caracteres", "la clave del usuario se guarda en Vault"):
        assert redact(kept).text == kept


def test_ldap_bind_dn_with_a_password_in_a_sentence() -> None:
    assert "cn=svc-wiki" in _gone(
        "bind as cn=svc-wiki,ou=services,dc=acme,dc=example with ?9Ri0xtGw6", "9Ri0xtGw6"
    )
    kept = "bind as cn=admin,dc=acme,dc=example with TLS"
    assert redact(kept).text == kept


def test_base64_user_password_on_a_line_that_says_so() -> None:
    value = "cGFydG5lci1hY21lOkJQSUM0YWlneA=="  # partner-acme:BPIC4aigx
    assert "is the base64 user:pass" in _gone(f"{value} is the base64 user:pass for grafana", value)
    for kept in ("the base64 of hello world is aGVsbG8gd29ybGQ=", f"the cache key is {value}"):
        assert redact(kept).text == kept


@pytest.mark.parametrize(
    "text",
    [
        "kubectl create secret generic db --from-file=password=./db-password.txt",
        "DB_PASSWORD=../secrets/pw.txt",
        "password_file: /run/secrets/db.key",
    ],
)
def test_a_path_to_a_secret_file_is_kept(text: str) -> None:
    assert redact(text).text == text
