"""Prose that calls a value a credential in the shapes `credential_prose` first let through: the value before
the word (governance/redaction/value_first.py), no verb or colon between the word and the value, a value of
six to nine characters, a lower-case name between a Russian word and a colon (governance/redaction/prose.py).
What each removes, and what each keeps. Every value is made up for the test.
"""

from __future__ import annotations

import pytest

from governance.redaction import PLACEHOLDER, redact
from governance.redaction.prose import credential_prose
from governance.redaction.value_first import value_first
from tests.governance.gitleaks_shapes import RULES as GITLEAKS
from tests.governance.redaction_eval import Sample, leftovers
from tests.governance.test_redaction_catalogue import _gitleaks_sample

UUID = "5b91250c-bb74-4a62-8f63-cb52956100c0"
LOWER = "yb1slrkk3imnwp8bi"  # a short lowercase value, as Airtable's or Confluent's
NUMBER = "826753198340077912"

# gitleaks' name-only formats (values it recognises only beside the vendor's name), in each new shape
GAP_SENTENCES = [
    # the value before the word
    "{value} is the {vendor} API key",
    "use {value} as the {vendor} token",
    "{value} — that's the {vendor} prod password",
    "{value}가 {vendor} API 키입니다",
    "{value}が{vendor}のAPIキーです",
    "{value}是{vendor}的API密钥",
    "使用{value}作为{vendor}令牌",
    "{value} ist das {vendor}-Passwort",
    "{value} es la clave de API de {vendor}",
    "{value} est le jeton {vendor}",
    "{value} — это токен {vendor}",
    # no verb, no colon
    "the {vendor} token {value}",
    "{vendor} deploy token {value} for staging",
    "{vendor} 토큰 {value}",
    "{vendor}のAPIキー {value}",
    "{vendor}令牌 {value}",
    # a lower-case name between a Russian word and a colon
    "Токен {vendor}: {value}",
]


@pytest.mark.parametrize("entry", [r for r in GITLEAKS if r[1] == "context"], ids=lambda e: e[0])
def test_gap_shapes_remove_a_name_only_value(entry: tuple[str, str, str, str]) -> None:
    rule_id, _, vendor, template = entry
    for seed in range(3):
        value, secret = _gitleaks_sample(rule_id, template, seed)
        for sentence in GAP_SENTENCES:
            text = sentence.format(vendor=vendor, value=value)
            out = redact(text).text
            assert not leftovers(Sample("prose", "test", text, (secret,)), out), (rule_id, text, out)


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (f"{UUID} is the Heroku API key", UUID),
        (f"use {LOWER} as the token", LOWER),
        (f"Use '{UUID}' as the API key for staging.", UUID),
        (f"{LOWER} — that's the prod password", LOWER),
        (f"{UUID} - that's the prod secret", UUID),
        (f"{LOWER} is our confluent credential", LOWER),
        (f"{NUMBER} was the Discord secret until Monday", NUMBER),
        (f"{UUID}가 Heroku API 키입니다", UUID),
        (f"{LOWER}를 토큰으로 사용하세요", LOWER),
        (f"{UUID}がHerokuのAPIキーです", UUID),
        (f"{LOWER}をトークンとして使ってください", LOWER),
        (f"{UUID}是Heroku的API密钥", UUID),
        (f"使用{LOWER}作为令牌", LOWER),
        ("k9X2m7q is the staging token", "k9X2m7q"),
        (f"{UUID} ist das Heroku-Passwort", UUID),
        (f"{LOWER} ist der API-Schlüssel für Heroku", LOWER),
        (f"{UUID} es la clave de API de Heroku", UUID),
        (f"{LOWER} est le jeton Heroku", LOWER),
        (f"{UUID} é a chave de API da HubSpot", UUID),
        (f"{LOWER} è la chiave API di Heroku", LOWER),
        (f"{UUID} — это токен Heroku", UUID),
    ],
)
def test_value_before_the_word_naming_a_credential_is_redacted(text: str, secret: str) -> None:
    out = redact(text).text
    assert secret not in out and out.count(PLACEHOLDER) == 1, (text, out)


@pytest.mark.parametrize(
    "text",
    [
        # the word heads no noun of its own: it qualifies another ("hash", "store", "ID", "library", "库")
        "use argon2id as the password hashing scheme",
        "use redis-cluster-2 as the token store",
        f"{UUID} is the API key ID",
        "use v2.3.1 as the version of the token library",
        "使用v2.3.1作为令牌库的版本",
        # the words between say id or name
        f"{UUID} is the request id for the Heroku API key",
        "blue-river is the Heroku app name for the token",
        "kid-2024-06 is the key id of the signing key",
        # a word, a name, a version
        "Rotating is the secret",
        "OPENAI_API_KEY is the name of the secret",
        "the deploy uses GITHUB_TOKEN as the token",
        # German and the languages that put the noun first
        "v2.3.1 ist die Version der Token-Bibliothek",
        "blue-river ist der Name des Heroku-Tokens",
        f"{UUID} ist die ID des API-Schlüssels",
        f"{UUID} es el ID de la clave de API",
        "argon2id est le hachage du mot de passe",
        f"{UUID} — это идентификатор токена",
        "redis-cluster-2 é o armazenamento da senha",
        "3600 es la duración del token",
        "OAuth2 est le jeton standard",
        # templates
        "`{value}가 {vendor} API 키입니다`",
        "<your-token> is the token",
        "${API_KEY} is the API key",
        # a package's or a resource's name (the rule before this one took these four)
        "Use 1Password as the password manager",
        "Try auth0-spa-js as the token provider",
        "oauth2-proxy is the token",
        "k8s-secret-v2 is the secret",
    ],
)
def test_value_before_the_word_keeps_what_is_no_credential(text: str) -> None:
    assert list(value_first(text, 0)) == [] and redact(text).text == text


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (f"the heroku token {LOWER}", LOWER),
        (f"deploy token {UUID} for staging", UUID),
        (f"rotate the access token {LOWER}, then redeploy", LOWER),
        (f"Heroku 토큰 {UUID}", UUID),
        (f"HerokuのAPIキー {LOWER}", LOWER),
        (f"Heroku令牌 {UUID}", UUID),
    ],
)
def test_credential_with_no_verb_or_colon_is_redacted(text: str, secret: str) -> None:
    out = redact(text).text
    assert secret not in out and out.count(PLACEHOLDER) == 1, (text, out)


@pytest.mark.parametrize(
    "text",
    [
        "the token bucket holds 10 requests",
        "the github token GITHUB_TOKEN is injected by Actions",
        "the session token cookie __Host-session is set on login",
        f"the token request id {UUID} in the logs",
        "the token k9X2m7q is short",  # under ten characters with no verb: not read
        "the token release2024 format",
    ],
)
def test_credential_with_no_verb_or_colon_keeps_words_names_and_short_values(text: str) -> None:
    assert redact(text).text == text


@pytest.mark.parametrize(
    "text",
    [
        "the credential is k9X2m7q",
        "the heroku secret is x7k2m9q4 for prod",
        "the credential is t0k3n9x!",
        "Le jeton est Tr0ub4x",
        "トークンは k9X2m7q です",
    ],
)
def test_short_value_called_a_credential_is_redacted(text: str) -> None:
    out = redact(text).text
    assert PLACEHOLDER in out and out.count(PLACEHOLDER) == 1, (text, out)


@pytest.mark.parametrize(
    "text",
    [
        "the credential is sha256",
        "the secret is 3600sec",
        "the credential is v2.3.1",
        "the secret version is k9X2m7q",
        "the credential is abc1234",  # a short git hash
        "the secret is rotated",
        "the credential is hunter22",  # a word and a number: only a password word takes that shape
        "the token is OAuth2",
    ],
)
def test_short_value_keeps_units_versions_hashes_and_words(text: str) -> None:
    """The rule for a value the sentence calls a credential reads none of these. (The older multilingual
    rule still takes a password-shaped value after `secret` or `token`, "the secret is 3600sec".)"""
    assert list(credential_prose(text, 0)) == []


@pytest.mark.parametrize(
    "text",
    [
        # lines of installed packages that the rule before this one took
        "if (username is None or password is None) and netloc in self.passwords:",
        "if token.type is TOKEN_EOF:",
        "as functions. `Name.Function` is the default token type.",
        "# if origin_type is Secret, then cls is a GenericAlias, and we can extract the inner type",
    ],
)
def test_code_is_read_as_no_credential_before_the_word(text: str) -> None:
    assert redact(text).text == text


@pytest.mark.parametrize("text", ["#   token          = 1*tchar", '        Token:         "#d8dee9",'])
def test_code_gives_no_short_value_to_the_credential_rule(text: str) -> None:
    """Lines of installed packages the first draft of short values took. (Alone, out of their files, the
    assignment rule still takes them, as before.)"""
    assert list(credential_prose(text, 0)) == []


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (f"Токен heroku: {UUID}", UUID),
        (f"Ключ api heroku: {NUMBER}", NUMBER),
        (f"Le jeton heroku : {UUID}", UUID),
    ],
)
def test_lower_case_name_before_a_colon_after_the_noun_is_redacted(text: str, secret: str) -> None:
    out = redact(text).text
    assert secret not in out, (text, out)


def test_lower_case_word_before_a_colon_after_an_english_word_is_kept() -> None:
    assert redact(f"the token fix: {UUID}").text == f"the token fix: {UUID}"


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        # a password word, what it is for, then the value (no verb)
        ("пароль от стенда JUWvc42B, логин admin", "JUWvc42B"),
        ("Сбросил пароль на WPxW70MwE, смени при первом входе.", "WPxW70MwE"),
        # Korean 비번 and Japanese なので after the word, the value first
        ("xrsS02U 이게 관리자 비번이에요. 내일 바꿀게요.", "xrsS02U"),
        ("sxFR4x が管理画面のパスワードなので、共有しないでください。", "sxFR4x"),
    ],
)
def test_password_after_what_it_is_for_or_before_a_colloquial_word_goes(text: str, secret: str) -> None:
    out = redact(text).text
    assert secret not in out, (text, out)


@pytest.mark.parametrize(
    "text",
    [
        "# raise exception in second pass for 1-dimensional loop",
        'Creates a new API key for programmatic access"A\\n\\x16\\x41PI Key',
        "the password for staging is rotated weekly",
        "пароль от стенда лежит в хранилище",
    ],
)
def test_words_after_what_a_password_is_for_are_kept(text: str) -> None:
    assert redact(text).text == text
