"""Secrets in what coding agents stream into a log, from the eighth corpus's tune half: Oracle's `IDENTIFIED
BY`, setters and positional calls in code, password-manager exports (CSV columns, custom fields, TOTP seeds),
Windows answer files, Docker's registry tokens, a token as a URL's user, MinIO aliases, GitHub Actions masks,
chat in Romanian, Norwegian and Bulgarian; and what each rule keeps. Every value is made up for the test.
"""

from __future__ import annotations

import pytest

from governance.redaction import redact

# (text, the secret that must not survive)
SECRETS = [
    ("CREATE DATABASE LINK s CONNECT TO ro IDENTIFIED BY \"7*D0vBjFQ~\" USING 'DB';", "7*D0vBjFQ~"),
    (
        "SQL> CREATE PUBLIC DATABASE LINK hr CONNECT TO rd IDENTIFIED BY KhymLqnDRhC USING 'HR';",
        "KhymLqnDRhC",
    ),
    ("ALTER USER app IDENTIFIED BY Xk9fjw2Lq;", "Xk9fjw2Lq"),
    ('let o = PgConnectOptions::new().username("l").password("?x00Y~oygfX.M~");', "?x00Y~oygfX.M~"),
    ('client.setApiKey("8VuaxuFBFnwK6EipeWPEJG16");', "8VuaxuFBFnwK6EipeWPEJG16"),
    (
        'auth := smtp.PlainAuth("", "alerts@corp.example", "4pa7eKC9fgz__", "smtp.corp.example")',
        "4pa7eKC9fgz__",
    ),
    ('admin> db.changeUserPassword("orders-api", "LiS5pFAcbaXlL99d_")', "LiS5pFAcbaXlL99d_"),
    (
        "name,url,username,password,note\nex,https://ex.example/login,jdoe,S%%1mqc98HQB10B-,\n",
        "S%%1mqc98HQB10B-",
    ),
    (
        '"Group","Title","Username","Password","URL"\n"Root","Switch","admin","?Zf8mZ!4ApNw~","https://10.0.0.2"',
        "?Zf8mZ!4ApNw~",
    ),
    (
        '{"login": {"password": "x", "totp": "KIIDI3MWGWGCWE2BRQ2I53XM4B6ESRLE"}}',
        "KIIDI3MWGWGCWE2BRQ2I53XM4B6ESRLE",
    ),
    (
        '"fields": [{"name": "API key", "value": "9MyDqJr7ey5a8S4o4jTF1wzFk10o7L1h", "type": 1}]',
        "9MyDqJr7ey5a8S4o4jTF1wzFk10o7L1h",
    ),
    ("<AdministratorPassword>\n  <Value>o1o170B~qGH%</Value>\n</AdministratorPassword>", "o1o170B~qGH%"),
    (
        '{"auths": {"registry.example": {"registrytoken": "qqfmzS_O7HCaQrhz0p7ZUYFFbaOKiO"}}}',
        "qqfmzS_O7HCaQrhz0p7ZUYFFbaOKiO",
    ),
    (
        "url.https://89edc81a9a3d46b993278ec219ca78b7863fa8dd:x-oauth-basic@github.com/.insteadof=x",
        "89edc81a9a3d46b993278ec219ca78b7863fa8dd",
    ),
    (
        "$ mc alias set prod https://minio.example PQX9SEBHTP2PMPTKMBK0 cjYmDHHmelIdnGu7yankqOkv0lDkr31",
        "cjYmDHHmelIdnGu7yankqOkv0lDkr31",
    ),
    ('echo "::add-mask::$T"\nfetched Q9zFiy10livOdDWB6msN7M4vk3HUeGSl', "Q9zFiy10livOdDWB6msN7M4vk3HUeGSl"),
    ('echo "::add-mask::hunter2-Secret"', "hunter2-Secret"),
    ("Parola pentru serverul de staging este Pt40fBQ9REBRRy?, te rog.", "Pt40fBQ9REBRRy"),
    (
        "Cheia API pentru producție: 8VuaxuFBFnwK6EipeWPEJG16TOGrhl5q — o schimbăm.",
        "8VuaxuFBFnwK6EipeWPEJG16TOGrhl5q",
    ),
    (
        "API-nøkkelen for betalingstjenesten er RnXRS4E4NkgPb3zEkXuzs5pB8Hw, legg den i hvelvet.",
        "RnXRS4E4NkgPb3zEkXuzs5pB8Hw",
    ),
    (
        "API ключът за продукция е bzrQ9SIg648oQyAvvWNmndlgmvBb – ще го сменим.",
        "bzrQ9SIg648oQyAvvWNmndlgmvBb",
    ),
]

# shaped like the rules' inputs but holding no secret: each must come back unchanged
NEAR_MISSES = [
    "CREATE USER scott IDENTIFIED BY tiger;",
    "ALTER USER app IDENTIFIED BY :new_pw;",
    "create user x identified by &pw;",
    "CREATE USER u IDENTIFIED BY VALUES 'S:ABC';",
    "The user is identified by username and password",
    'cfg.getPassword("db")',
    'self.assertEqual(token("abcdefg"), 1)',
    'os.getenv("API_TOKEN")',
    'db.changeUserPassword("u", passwordPrompt())',
    'smtp.PlainAuth("", user, pass, host)',
    "name,url,username,password,note\nex,https://ex.example/login,jdoe,,\n",
    "<AutoLogon>\n  <Password>\n    <Value>*SENSITIVE*DATA*DELETED*</Value>\n  </Password>\n</AutoLogon>",
    'DB_PASSWORD="op://Infra/Prod DB/password"',
    "data:\n  - secretKey: password\n    remoteRef:\n      key: prod/orders/db",
    "//registry.npmjs.org/:_authToken = (protected)",
    "https://storage.example/q1.csv?X-Goog-Credential=<service-account>%2F<date>%2Fauto%2Fstorage%2Fgoog4_request",
    'query = {"X-Amz-Security-Token": session.token, "X-Amz-Signature": signature}',
    "mc alias set local http://localhost:9000 minioadmin minioadmin",
    "2025-03-12T09:14:02Z ##[group]Run actions/checkout@8e5e7e5ab8b370d6c329ec480221332ada57f0ab",
    "Parola este stocată în seif.",
    "Fields: id, email, password\nThen we hash it, store it, and move on.",
    "- name: Require strong password\n  value: always",
]


@pytest.mark.parametrize(("text", "secret"), SECRETS, ids=[s[:24] for _, s in SECRETS])
def test_the_secret_is_removed(text: str, secret: str) -> None:
    cleaned = redact(text).text
    assert secret not in cleaned
    assert "[REDACTED]" in cleaned


@pytest.mark.parametrize("text", NEAR_MISSES, ids=[t[:32] for t in NEAR_MISSES])
def test_the_near_miss_is_kept(text: str) -> None:
    assert redact(text).text == text
