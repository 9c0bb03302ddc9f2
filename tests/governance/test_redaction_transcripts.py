"""Secrets in commands and what terminals and protocols print (transcripts.py), in people's prose by their
shape (people.py), and hidden by percent-encoding or a quoted e-mail's wrapping (disguised.py, the wrap pass
of `redact`): what each rule removes and what it keeps. Every value is made up for the test.
"""

from __future__ import annotations

import pytest

from governance.redaction import redact

# shaped like the rules' inputs but holding no secret: each must come back unchanged
NEAR_MISSES = [
    # people's prose with symbols, digits and letters that no one typed as a password
    "fixed in issue#1234 today",
    "Fix bug#2244 in the parser",
    "PR#4521 merged, see RFC2616#section-14 and gh-1234#issuecomment",
    "Ticket#INC0012345 closed; SKU#AB-1234 shipped; Room#101A is booked",
    "Upgraded to Python3.11! finally, and Go1.21! too",
    "we hit 100%! on coverage, 50%-75%range2 next",
    "**Note2** read this first",
    "rename test_*_v2 files, pass *args2 and **kwargs2",
    "$HOME2dir is set, %APPDATA2% too",
    "AT&T2024 deal and R&D2024 budget; US$100million raised",
    "#DevOps2024 rocks; colour #1a2b3c4d here",
    "see String#valueOf2 and foo_bar#baz2",
    "Welcome2024! to the team, Congrats2024!! all",
    "Hello!World2 prints; Section~3a; amd64&&arm64",
    "build#1234-rc1 is green",
    # commands that prompt, or name a file rather than a value
    "net user svc_backup * /add",
    "net user alice",
    "zip -e secrets.zip notes.txt",
    "7z a -p archive.7z dir/",
    "psql -W -h db -U app  # prompts for the password",
    "cat ~/.vault_pass.txt | wc -c",
    "$ cat creds.txt\nvpn-gw-03\n$ ls",
    # protocol transcripts without a password
    "a001 LOGIN completed",
    "S: 334 VXNlcm5hbWU6\nC: cmVsYXktdXNlcg==",
    "user default on nopass ~* +@all",
    "user worker on #5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8 ~jobs:*",
    "interface Gi0/1\n ip ospf message-digest-key 1 md5 7",
    "ENV PATH=/usr/local/bin:$PATH NODE_ENV=production",
    "ARG BASE_DIGEST=sha256:4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945",
    "('en_US', 'Hello World')",
    'sasl.jaas.config=... username="alice" password="${KAFKA_PASSWORD}";',
    # references where a value would be
    "existingSecret: app-db",
    "LoadCredential=db-password:/etc/credstore/db-password",
    "Server=myServerAddress;Database=myDataBase;User Id=myUsername;Password=myPassword;",
    "password: undefined",
    "secret_key_base: <%= ENV.fetch('SECRET_KEY_BASE') %>",
    "Authorization: Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==",
    # code from installed packages that a first draft of these rules altered
    "Return a new free identifier as :class:`~jinja2.nodes.InternalName`.",
    'console.print("[#1BB152 on #DA812D]#1BB152 on #DA812D!")',
    'm = re.match(r"def ([_a-zA-Z0-9.*$]+)\\(", s)',
    "@grouped_option(*GENERATION_ALLOW_X00.args, **GENERATION_ALLOW_X00.kwargs)",
    "core.exportVariable('RUSTFLAGS', '-Csymbol-mangling-version=v0');",
    '"secret": {\n  "$ref": "/api/_definitions.json#/$defs/io.k8s.api.core.v1.SecretVolumeSource",',
    "# secret key handling\nclass OAuthRegistrationError2(OAuthFlowError):",
    'HEXDIGIT_CHARS: Final = frozenset("abcdef" "ABCDEF" "0123456789")',
    # percent-encoding and webhook hosts without a secret
    "https://example.com/search?q=caf%C3%A9%20au%20lait&page=2",
    "https://hooks.example.com/services/status/health",
    "> On Tue, ops wrote:\n> the job\n> Expires Friday.",
]


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_transcript_and_prose_near_misses_are_kept(text: str) -> None:
    assert redact(text).text == text


def _gone(text: str, *secrets: str) -> str:
    out = redact(text).text
    for secret in secrets:
        assert secret not in out, out
    return out


@pytest.mark.parametrize(
    ("text", "secret", "kept"),
    [
        ("C:\\> net user svc_sync Vb7#qLm2xR9t /add /domain", "Vb7#qLm2xR9t", "svc_sync"),
        ("net use Y: \\\\fs02\\share *Kq7.pL2m9Zx /user:CORP\\sync", "*Kq7.pL2m9Zx", "/user:CORP"),
        ("zip -r -P Ab3-kz9Q*tw out.zip ./dir", "Ab3-kz9Q*tw", "out.zip"),
        ("7z a -pTq8.mZ2~pLx -mhe=on out.7z in.sql", "Tq8.mZ2~pLx", "out.7z"),
        ("a002 LOGIN ops Rk4Hj9Tq2Wz_Lm\na002 OK", "Rk4Hj9Tq2Wz_Lm", "a002 OK"),
        ("username admin privilege 15 password 0 Qz7.Kp2mWx4L", "Qz7.Kp2mWx4L", "privilege 15"),
        (" ip ospf message-digest-key 2 md5 Hx8sK2mQz9TwPb4N", "Hx8sK2mQz9TwPb4N", "md5"),
        ("user reports on >Zq8.mK2~pLw7 ~rep:* +@read", "Zq8.mK2~pLw7", "~rep:*"),
        ("sudo -u app psql -W  # Wm4kQ8zT2_pLx", "Wm4kQ8zT2_pLx", "psql -W"),
        ("S: 334 UGFzc3dvcmQ6\nC: cTdLbTJ+eFA5dw==\nS: 235 ok", "cTdLbTJ+eFA5dw==", "235 ok"),
        ("$ cat ~/.db_pass\nKw9.zT2mQx7Lp4\n$ ls", "Kw9.zT2mQx7Lp4", "$ ls"),
        ("$ cat /etc/openvpn/auth.txt\nvpn-user-7\n#Xp4mK9zLq2w\n$ openvpn", "#Xp4mK9zLq2w", "vpn-user-7"),
        ("(Pdb) p login\n('svc_etl', 'Tz~q8KmL2p~W')", "Tz~q8KmL2p~W", "svc_etl"),
        ("ENV REGION=eu LICENSE=Kq7mZ2xT9pLw4Rb8Vn3s", "Kq7mZ2xT9pLw4Rb8Vn3s", "REGION=eu"),
        (
            'PlainLoginModule required username="Q7KZ2MX9PL4TRB8V" password="x";',
            "Q7KZ2MX9PL4TRB8V",
            "PlainLoginModule",
        ),
        ("ldap_default_authtok = Kw9zT2mQx7Lp", "Kw9zT2mQx7Lp", "ldap_default_authtok"),
    ],
)
def test_transcript_secrets_are_removed(text: str, secret: str, kept: str) -> None:
    assert kept in _gone(text, secret)


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("Approved. Emergency login is Kp2.#mZ~8xq4W if SSO fails.", "Kp2.#mZ~8xq4W"),
        ("FYI I set the demo admin to Cedar_harbor57# for the call.", "Cedar_harbor57#"),
        ("Log in as `qa@example.com` / `Birch.meadow31%` and open billing.", "Birch.meadow31%"),
        ("Sure, it's Thistle-copper42! (case matters).", "Thistle-copper42!"),
        ("Logga in som admin med qwTRzk83LMpv~ och byt det", "qwTRzk83LMpv~"),
        ("სერვერის პაროლია Kp2x_m8Tq.w", "Kp2x_m8Tq.w"),
    ],
)
def test_typed_passwords_in_prose_are_removed(text: str, secret: str) -> None:
    _gone(text, secret)


def test_percent_encoded_secret_is_found_decoded_and_cut_as_written() -> None:
    text = "next=https%3A%2F%2Fa.example%2F%3Fuser%3Dops%26pass%3D%2525Tq8mZ2%2526pLx"
    out = _gone(text, "Tq8mZ2", "pLx")
    assert out.startswith("next=https%3A%2F%2Fa.example")


def test_token_wrapped_in_a_quoted_email_is_joined() -> None:
    first, second = "github_pat_11AAAAAAA0Qz7KpX2mLw9TbR4vN8sJ3dF6hG1kY5", "cXe2Wq9Lm4Tz7Rb1Np8Vs3Kd6Hf0"
    _gone(f"> Use this: {first}\n> {second}\n> Expires Friday.", first, second)


def test_random_segment_on_a_webhook_host_is_removed() -> None:
    out = _gone("POST https://hooks.vendor.example/in/Tq8mZ2pLx7Kw9zQ4Rb3Vn6Hs", "Tq8mZ2pLx7Kw9zQ4Rb3Vn6Hs")
    assert "hooks.vendor.example/in/" in out


def test_random_token_under_a_subject_naming_a_secret_is_removed() -> None:
    token = "Kq7mZ2xT9pLw4Rb8Vn3sQz6HjF1d"
    _gone(f"Rotate the deploy secret\n\nThe old value {token} leaked, revoked at noon.", token)
