"""Detectors: each reports the spans of one kind of secret in a text; `_spans` runs them all behind gates.

Shapes come from the maintained `detect-secrets` scanner (the compiled `denylist` regexes of its plugins, run
directly on the text), from the catalogue of vendor token formats (`catalogue.toml`, see `catalogue.py`) and
from own rules: assignments, CLI flags, prose in several languages, URLs, cards, resident numbers, base64.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
from detect_secrets.plugins.basic_auth import BasicAuthDetector
from detect_secrets.plugins.cloudant import CloudantDetector
from detect_secrets.plugins.discord import DiscordBotTokenDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.ibm_cloud_iam import IbmCloudIamDetector
from detect_secrets.plugins.ibm_cos_hmac import IbmCosHmacDetector
from detect_secrets.plugins.jwt import JwtTokenDetector
from detect_secrets.plugins.mailchimp import MailchimpDetector
from detect_secrets.plugins.npm import NpmDetector
from detect_secrets.plugins.openai import OpenAIDetector
from detect_secrets.plugins.private_key import PrivateKeyDetector
from detect_secrets.plugins.pypi_token import PypiTokenDetector
from detect_secrets.plugins.sendgrid import SendGridDetector
from detect_secrets.plugins.slack import SlackDetector
from detect_secrets.plugins.softlayer import SoftlayerDetector
from detect_secrets.plugins.square_oauth import SquareOAuthDetector
from detect_secrets.plugins.stripe import StripeDetector
from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
from detect_secrets.plugins.twilio import TwilioKeyDetector

from governance.redaction.accounts import bank_accounts, ibans
from governance.redaction.catalogue import catalogue_spans
from governance.redaction.generic import (
    bitcoin_wif,
    call_credentials,
    directives,
    hex_private_keys,
    login_arguments,
    near_word_tokens,
    net_use,
    oracle_userpass,
    password_hashes,
    pgpass_lines,
    plain_base64,
    quoted_pairs,
    secure_strings,
    short_codes,
    sql_passwords,
    url_tokens,
    value_first,
    wifi_qr,
    yaml_blocks,
)
from governance.redaction.kinds import _PRIORITY, Detector, Span
from governance.redaction.names import (
    _HANGUL,
    _NEAR_MISS_VALUE,
    _benign,
    _looks_random,
    _name_class,
    _password_like,
    _strong_password_like,
)
from governance.redaction.prose import multilingual_prose, passphrases

__all__ = ["_spans"]

# A detector runs only when its gate passes: a few substrings one of which any match must contain, looked up
# in the text (or in its lower-case copy). Most texts hold none of them, which keeps `redact` cheap.


@dataclass(frozen=True)
class _Gate:
    needles: tuple[str, ...] = ()
    lower: tuple[str, ...] = ()

    def passes(self, text: str, lower: str) -> bool:
        if not self.needles and not self.lower:
            return True
        for needle in self.needles:
            if needle in text:
                return True
        for needle in self.lower:
            if needle in lower:
                return True
        return False


_ALWAYS = _Gate()


def _regex(kind: str, pattern: re.Pattern[str], group: int | str = 0) -> Detector:
    priority = _PRIORITY[kind]

    def detect(text: str, depth: int) -> Iterator[Span]:
        for match in pattern.finditer(text):
            start, end = match.span(group)
            if start < end:
                yield start, end, priority

    return detect


def _patterns(kind: str, *patterns: str) -> Detector:
    return _regex(kind, re.compile("|".join(f"(?:{p})" for p in patterns)))


def _checked(
    kind: str, pattern: re.Pattern[str], accept: Callable[[str], bool], group: int | str
) -> Detector:
    priority = _PRIORITY[kind]

    def detect(text: str, depth: int) -> Iterator[Span]:
        for match in pattern.finditer(text):
            start, end = match.span(group)
            if start < end and accept(match.group(group)):
                yield start, end, priority

    return detect


_NAME_PREFIX = re.compile(r"[A-Za-z]+=")
_WHITESPACE = re.compile(r"\s")


def _detect_secrets(
    plugin: type[Any], kind: str, *, kinds: tuple[str, ...] = (), value_group: bool = False
) -> Detector:
    """The compiled `denylist` regexes of a detect-secrets plugin, run directly on the text.

    `kinds` names the kind of each regex where they differ (Slack's second one is a webhook).
    `value_group`: the plugin's regexes capture the secret after some context (`aws ... = "<secret>"`);
    otherwise a capture group is only a prefix (GitLab's `(glpat|...)-`) and the whole match is the secret.
    A span never runs past the end of its line or includes a `Name=` its regex starts with (Azure's).
    """
    patterns: list[re.Pattern[str]] = list(plugin.denylist)
    priorities = [_PRIORITY[kinds[i] if i < len(kinds) else kind] for i in range(len(patterns))]
    valid: Callable[[str], bool] = JwtTokenDetector.is_formally_valid if plugin is JwtTokenDetector else bool

    def detect(text: str, depth: int) -> Iterator[Span]:
        for pattern, priority in zip(patterns, priorities, strict=True):
            use_group = value_group and pattern.groups > 0
            for match in pattern.finditer(text):
                if use_group:
                    groups = [g for g in range(1, pattern.groups + 1) if match.group(g)]
                    if not groups:
                        continue
                    start, end = match.span(groups[0])
                else:
                    start, end = match.span()
                prefix = _NAME_PREFIX.match(text, start, end)
                if prefix is not None:
                    start = prefix.end()
                cut = _WHITESPACE.search(text, start, end)
                if cut is not None:
                    end = cut.start()
                if start < end and valid(text[start:end]):
                    yield start, end, priority

    return detect


# a bare value stops at `&` only where a query string's next `name=` starts (`pw=a&b` is one value)
_VALUE = (
    r"(?:\"(?P<dq>[^\"\n]*)\"|'(?P<sq>[^'\n]*)'|`(?P<bq>[^`\n]*)`"
    r"|(?P<bare>[^\s,;&\"'`]+(?:&(?![A-Za-z_][\w.\[\]-]*=)[^\s,;&\"'`]+)*))"
)


def _value_span(match: re.Match[str]) -> tuple[int, int, str]:
    for group in ("dq", "sq", "bq", "bare"):
        if group in match.re.groupindex and match.group(group) is not None:
            start, end = match.span(group)
            return start, end, match.group(group)
    return 0, 0, ""


# `name = value`, `name: value`, `"name": "value"`, `name := value`, `name => value`. Found from the
# secret-sounding roots outwards: a name is the identifier around a root, maybe with the word before it
# ("admin password: x", "secret key = y").
_ROOT = re.compile(
    r"pass|pw|secret|key|token|auth|cred|sig|salt|hmac|cookie|sess|sid|pin|otp|bearer|contrase|refresh"
    r"|access|jwt|nonce|psk"
)
_ROOT_ANY_CASE = re.compile(_ROOT.pattern, re.IGNORECASE)
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_WORD_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_SEP_VALUE = re.compile(r"[\"']?\]?(?P<sep>[^\S\n]*(?::=|=>|=(?!=)|:(?!:))[^\S\n]*)" + _VALUE)


def _assignments(text: str, depth: int) -> Iterator[Span]:
    strong, generic = _PRIORITY["password"], _PRIORITY["generic_secret"]
    size = len(text)
    seen = -1
    lower = text.lower()
    if len(lower) != len(text):  # a few letters grow when lowered; then match case-insensitively (slower)
        lower = text
    for root in _ROOT.finditer(lower) if lower is not text else _ROOT_ANY_CASE.finditer(text):
        if root.start() < seen:
            continue
        start = root.start()
        while start > 0 and text[start - 1] in _NAME_CHARS:
            start -= 1
        end = root.end()
        while end < size and text[end] in _NAME_CHARS:
            end += 1
        seen = end
        if start > 0 and text[start - 1] == ":" and text[start - 2 : start - 1] != ":":
            continue  # a segment of a colon path (`arn:aws:secretsmanager:…:secret:prod/db`), not a name
        if text[max(0, start - 2) : start] == "${":
            continue  # a shell reference with a default or an error (`${DB_PASSWORD:?unset}`), not a value
        name = text[start:end].rstrip(".-")
        match = _SEP_VALUE.match(text, start + len(name))
        if match is None or not name:
            continue
        if match.group("sep").strip() == ":" and text.startswith("//", match.end("sep")):
            continue  # a URL scheme
        value_start, value_end, value = _value_span(match)
        if match.group("bare") is not None:
            hangul = _HANGUL.search(value)  # "DB_PASSWORD=abc123로 바꿨다": the particle is not the password
            if hangul is not None and hangul.start() > 0:
                value = value[: hangul.start()]
                value_end = value_start + len(value)
        if value_start >= value_end:
            continue
        cls = _name_class(name)
        if cls < 2 and start >= 2 and text[start - 1] in " \t":
            word = start - 1
            while word > 0 and text[word - 1] in _WORD_CHARS:
                word -= 1
            if word < start - 1:
                combined = f"{text[word : start - 1]}_{name}"
                # "public key: x" is published; "admin password: x" is a password
                cls = 0 if _PUBLIC_WORD.match(combined) else max(cls, _name_class(combined))
        if cls == 2:
            if _benign(value) or (name == "PWD" and value[:1] in "/~"):
                continue
            yield value_start, value_end, strong
        elif (
            cls == 1
            and _looks_random(value, hex_ok=not _DIGEST_NAME.search(name))
            and not plain_base64(value)
        ):
            yield value_start, value_end, generic


_PUBLIC_WORD = re.compile(r"(?i)(?:public|pub|publishable)_")
_DIGEST_NAME = re.compile(r"(?i)sha|hash|digest|commit|checksum|rev|etag|fingerprint|integrity")


# the name and the value apart: `<add key="SmtpPassword" value="x" />` (.NET config), a Kubernetes env entry
# (`- name: DB_PASSWORD` then `value: x`), `{"name": "API_TOKEN", "value": "x"}` (ECS task definitions)
_NAMED_VALUE = re.compile(
    r"(?i)\b(?:key|name)[\"']?[^\S\n]*[:=][^\S\n]*[\"']?(?P<name>[A-Za-z0-9_.\-]{2,80})[\"']?[^\S\n]*,?"
    r"\s{1,40}?(?:-[^\S\n]*)?[\"']?value[\"']?[^\S\n]*[:=][^\S\n]*" + _VALUE
)


def _named_values(text: str, depth: int) -> Iterator[Span]:
    for match in _NAMED_VALUE.finditer(text):
        start, end, value = _value_span(match)
        cls = _name_class(match.group("name"))
        if start < end and ((cls == 2 and not _benign(value)) or (cls == 1 and _looks_random(value))):
            yield start, end, _PRIORITY["password" if cls == 2 else "generic_secret"]


# --password x, --api-key=x, -storepass x (keytool), -pass pass:x (openssl)
_CLI_FLAG = re.compile(
    r"(?i)-(?<![\w-]-)-?(?:[A-Za-z0-9]+-)*(?:password|passwd|pass|pwd|passphrase|token|secret|api-?key"
    r"|access-key|secret-key|auth-token|client-secret|private-key|storepass|keypass|srcstorepass"
    r"|deststorepass)(?:=|[^\S\n]+)(?!-)" + _VALUE
)
# `-p` after a database client or sshpass (a number there is psql's port), `-a` after redis-cli
_CLI_DB = re.compile(
    r"\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mariadb|mariadb-dump|psql|pg_dump|pg_restore|mongo|mongosh|cqlsh"
    r"|mongodump|mongorestore|mongoimport|sshpass)\b[^\n|;&]*?[^\S\n]-p(?:[^\S\n]+|(?=[^\s-]))(?!-)" + _VALUE
)
# `-P` after SQL Server's clients (sqlcmd, bcp, osql, isql)
_CLI_MSSQL = re.compile(
    r"\b(?:sqlcmd|bcp|osql|isql)\b[^\n|;&]*?[^\S\n]-P(?:[^\S\n]+|(?=[^\s-]))(?!-)" + _VALUE
)
_CLI_REDIS = re.compile(r"\bredis-cli\b[^\n|;&]*?[^\S\n]-a[^\S\n]+(?!-)" + _VALUE)
_CLI_CURL = re.compile(r"\bcurl\b[^\n|;&]*?[^\S\n](?:-u|--user)[^\S\n]*[\"']?[^\s:\"']*:(?P<bare>[^\s\"']+)")


def _cli(pattern: re.Pattern[str]) -> Detector:
    priority = _PRIORITY["password"]

    def detect(text: str, depth: int) -> Iterator[Span]:
        for match in pattern.finditer(text):
            start, end, value = _value_span(match)
            if start >= end or value.startswith("-") or _benign(value):
                continue
            if pattern is _CLI_DB and value.isdigit():
                continue  # psql -p 5432
            yield start, end, priority

    return detect


# "the password is hunter2", "passphrase was set to ...", "with password Winter2024!"
_EN_PROSE = re.compile(
    r"(?i)\b(?:password|passwd|passphrase|passcode|pwd|pw)\b"
    r"(?:[^\S\n]+for[^\S\n]+(?:the[^\S\n]+)?[\w.@/-]+(?:[^\S\n]+(?:account|user|server|box|db|database))?"
    r"(?=[^\S\n]+(?:is|was)\b))?"  # "the password for staging is x"
    r"(?P<verb>(?:[^\S\n]+(?:is|was|=|:|of|set to|changed to|reset to|now|would be|should be|to|as|still))"
    r"{0,2})"
    r"[^\S\n]+[\"'`“‘]?(?P<bare>[\x21-\x7e]+)"
)
# "비밀번호: x", "비번은 x", "암호 = x", "DB 패스워드는 `x`입니다", "비밀번호 알려드립니다: x"
_KO_PROSE = re.compile(
    r"(?:비밀\s?번호|비번|패스\s?워드|암호|핀\s?번호|PIN\s?번호)(?P<particle>은|는|이|가|도|를|을)?"
    r"(?P<words>(?:[^\S\n]+[\uac00-\ud7a3]+){1,2}(?=[^\S\n]*[:=：]))?"
    r"(?P<sep>[^\S\n]*[:=：][^\S\n]*|[^\S\n]*)[\"'`“‘「『(]?(?P<bare>[\x21-\x7e]+)"
)
_COUNTER = re.compile(r"[년월일시분초자개회번명원건차주]")
_TRAILING = ".,;:)]}'\"`”’」』"


def _english_prose(text: str, depth: int) -> Iterator[Span]:
    priority = _PRIORITY["password"]
    for match in _EN_PROSE.finditer(text):
        start = match.start("bare")
        value = match.group("bare").rstrip(_TRAILING)
        strict = not match.group("verb")  # "password hashing" is a topic; "password is x" gives a value
        if value and _password_like(value) and (not strict or _strong_password_like(value)):
            yield start, start + len(value), priority


def _korean_prose(text: str, depth: int) -> Iterator[Span]:
    priority = _PRIORITY["password"]
    for match in _KO_PROSE.finditer(text):
        start = match.start("bare")
        value = match.group("bare").rstrip(_TRAILING)
        end = start + len(value)
        if not value or _benign(value):
            continue
        if value.isdigit():
            ok = len(value) >= 4 and not _COUNTER.match(text, end)
        else:
            # with words between ("비밀번호 변경 방법: admin 페이지"), only a password-shaped value
            explicit = bool(re.search("[:=：]", match.group("sep"))) and not match.group("words")
            plain = len(value) >= 3 and not _NEAR_MISS_VALUE.fullmatch(value)
            ok = (explicit and plain) or _password_like(value)
        if ok:
            yield start, end, priority


# separators: a space, a dash, or a dash between spaces ("6011 - 6239 - ...")
_CARD = re.compile(r"(?<![0-9A-Za-z.,/:_-])[2-6]\d{3}(?:(?: - |[ -])?\d){9,15}(?![0-9A-Za-z_-]|\.\d)")
_CARD_SEPARATOR = re.compile(r" - |[ -]")


def _luhn(digits: str) -> bool:
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = int(char)
        if index % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


# the test numbers payment processors publish for their sandboxes (Stripe, Braintree, Adyen, PayPal docs):
# public, and no bank issues them, so they are kept like any documented example
_TEST_CARDS = frozenset(
    """4242424242424242 4000056655665556 5555555555554444 2223003122003222 5200828282828210
    5105105105105100 378282246310005 371449635398431 6011111111111117 6011000990139424 6011981111111113
    3056930009020004 36227206271667 3566002020360505 6200000000000005 4000002500003155 4000000000003220
    4000000000009995 4000000000000002 4000000000000077 4000000000000341 4111111111111111 4012888888881881
    4222222222222 5431111111111111 378734493671000 6011601160116611 3530111333300000 30569309025904
    38520000023237 4005519200000004 4009348888881881 5500000000000004 340000000000009 30000000000004
    4000000000000010 4000000000000028 4000000000000036 4000000000000101 4000000000000119""".split()
)


def _cards(text: str, depth: int) -> Iterator[Span]:
    """13 to 19 digits, grouped by fours (or 4-6-5) with one kind of separator or none, Luhn-valid; not a
    processor's published test number."""
    priority = _PRIORITY["card_number"]
    for match in _CARD.finditer(text):
        found = match.group()
        separators = set(_CARD_SEPARATOR.findall(found))
        if len(separators) > 1:
            continue
        digits = _CARD_SEPARATOR.sub("", found)
        if not 13 <= len(digits) <= 19 or not _luhn(digits) or digits in _TEST_CARDS:
            continue
        if separators:
            groups = [len(g) for g in _CARD_SEPARATOR.split(found)]
            if groups[:-1] != [4] * (len(groups) - 1) and groups[:2] != [4, 6]:
                continue
        yield match.start(), match.end(), priority


# birth date, a dash, a 1-8 and six digits; without the dash only right after the word naming it
_RRN = re.compile(
    r"(?<![0-9A-Za-z-])\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])[^\S\n]?[-–][^\S\n]?[1-8]\d{6}(?![\d-])"
    r"|(?:주민(?:등록)?번호)[^\S\n]*[:은는]?[^\S\n]*(?P<bare>\d{6}[1-8]\d{6})(?!\d)"
)


def _rrn(text: str, depth: int) -> Iterator[Span]:
    priority = _PRIORITY["resident_number"]
    for match in _RRN.finditer(text):
        start, end = match.span("bare") if match.group("bare") else match.span()
        yield start, end, priority


_B64_RUN = re.compile(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{16,65536}={0,2}(?![A-Za-z0-9+/=_-])")


def _decode_b64(run: str) -> str | None:
    body = run.rstrip("=")
    if len(body) % 4 == 1:
        return None
    padded = body + "=" * (-len(body) % 4)
    try:
        if "-" in body or "_" in body:
            if "+" in body or "/" in body:
                return None
            raw = base64.urlsafe_b64decode(padded)
        else:
            raw = base64.b64decode(padded, validate=True)
        decoded = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    if not decoded.strip() or not all(c.isprintable() or c in "\r\n\t" for c in decoded):
        return None
    return decoded


def _encoded(text: str, depth: int) -> Iterator[Span]:
    """A base64 run whose decoded text holds a secret (decoded once more inside, not deeper)."""
    if depth >= 2:
        return
    priority = _PRIORITY["encoded_secret"]
    for match in _B64_RUN.finditer(text):
        decoded = _decode_b64(match.group())
        if decoded is not None and _spans(decoded, depth + 1):
            yield match.start(), match.end(), priority


# `<password>x</password>` (Maven settings.xml, Tomcat, Jenkins, any XML config): the element names the secret
_XML_ELEMENT = re.compile(
    r"<(?P<tag>[A-Za-z_][\w:.-]{1,60})(?:[^\S\n][^<>]*)?>(?P<v>[^<>\n]{1,300})</(?P=tag)>"
)


def _xml_elements(text: str, depth: int) -> Iterator[Span]:
    strong, generic = _PRIORITY["password"], _PRIORITY["generic_secret"]
    for match in _XML_ELEMENT.finditer(text):
        tag = match.group("tag").rsplit(":", 1)[-1]
        cls = _name_class(tag)
        if cls == 0:
            continue
        start, end = match.span("v")
        value = match.group("v").strip()
        start += len(match.group("v")) - len(match.group("v").lstrip())
        end = start + len(value)
        if value and cls == 2 and not _benign(value):
            yield start, end, strong
        elif value and cls == 1 and _looks_random(value):
            yield start, end, generic


# `-p` after a login subcommand (`docker login -u x -p y`, `az login -p`, `oc login -p`, `cf login -p`)
_CLI_LOGIN = re.compile(
    r"\b(?:docker|podman|buildah|nerdctl|skopeo|oras|helm[^\S\n]+registry|az|oc|cf)[^\S\n]+login\b"
    r"[^\n|;&]*?[^\S\n]-p(?:[^\S\n]+|=)(?!-)" + _VALUE
)
# `aws configure set aws_secret_access_key x`, `infracost configure set api_key x`, `config set token x`
_CLI_SET = re.compile(
    r"\b(?:configure|config)[^\S\n]+set[^\S\n]+(?P<name>[\w.-]{2,80})(?:[^\S\n]+|=)(?!-)" + _VALUE
)


def _cli_set(text: str, depth: int) -> Iterator[Span]:
    for match in _CLI_SET.finditer(text):
        start, end, value = _value_span(match)
        cls = _name_class(match.group("name").rsplit(".", 1)[-1])
        if start < end and ((cls == 2 and not _benign(value)) or (cls == 1 and _looks_random(value))):
            yield start, end, _PRIORITY["password" if cls == 2 else "generic_secret"]


_PRIVATE_TAG = re.compile(
    r"<[^\S\n]*private(?:\s[^<>]*)?>.*?(?:<[^\S\n]*/[^\S\n]*private[^\S\n]*>|\Z)", re.IGNORECASE | re.DOTALL
)
_PEM = re.compile(
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?"
    r"(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)"
    r"|PuTTY-User-Key-File-\d:.*?(?:Private-MAC:[^\S\n]*\S+|\Z)",
    re.DOTALL,
)
_B = r"(?<![A-Za-z0-9_])"  # a token starts here
_E = r"(?![A-Za-z0-9_])"  # and ends here


def _gate(*needles: str, lower: tuple[str, ...] = ()) -> _Gate:
    return _Gate(needles, lower)


_DETECTORS: list[tuple[_Gate, Detector]] = [
    (_gate("<"), _regex("private", _PRIVATE_TAG)),
    (_gate("PRIVATE KEY", "PuTTY"), _regex("private_key", _PEM)),
    (_gate("PRIVATE KEY", "PuTTY"), _detect_secrets(PrivateKeyDetector, "private_key")),
    (_gate("eyJ"), _patterns("jwt", _B + r"eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}")),
    (_gate("eyJ"), _detect_secrets(JwtTokenDetector, "jwt")),
    # "bearer authentication" is prose; a token has a digit, a symbol or mixed case
    (
        _gate(lower=("bearer",)),
        _checked(
            "bearer_token",
            re.compile(r"(?i)\bbearer[^\S\n]+(?P<v>[A-Za-z0-9._~+/=-]{8,})"),
            lambda value: not re.fullmatch(r"[a-z]+|[A-Z][a-z]+", value) and not _benign(value),
            "v",
        ),
    ),
    # "basic" alone is an English word: only the header form is a credential
    (
        _gate(lower=("basic",)),
        _regex(
            "basic_auth",
            re.compile(
                r"(?i)\bauthorization[\"']?[^\S\n]*[:=][^\S\n]*[\"']?basic[^\S\n]+(?P<v>[A-Za-z0-9+/=]{8,})"
            ),
            "v",
        ),
    ),
    (
        _gate("sk-"),
        _patterns("openai_key", _B + r"sk-(?:proj-|ant-(?:api\d\d-)?|svcacct-|admin-)?[A-Za-z0-9_-]{16,}"),
    ),
    (_gate("T3BlbkFJ"), _detect_secrets(OpenAIDetector, "openai_key")),
    (
        _gate("gh", "github_pat_"),
        _patterns("github_token", _B + r"gh[pousr]_[A-Za-z0-9]{20,}", _B + r"github_pat_[A-Za-z0-9_]{20,}"),
    ),
    (_gate("gh"), _detect_secrets(GitHubTokenDetector, "github_token")),
    (
        _gate("A3T", "ABIA", "ACCA", "AKIA", "ASIA"),
        _patterns("aws_access_key", _B + r"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[0-9A-Z]{16}" + _E),
    ),
    (
        _gate("A3T", "ABIA", "ACCA", "AKIA", "ASIA", lower=("aws",)),
        _detect_secrets(
            AWSKeyDetector, "aws_access_key", kinds=("aws_access_key", "aws_secret_key"), value_group=True
        ),
    ),
    (
        _gate("xox", "xapp-"),
        _patterns("slack_token", _B + r"xox[abeoprs]-[A-Za-z0-9-]{10,}", _B + r"xapp-\d-[A-Za-z0-9-]{10,}"),
    ),
    (
        _gate(lower=("xox", "hooks.slack")),
        _detect_secrets(SlackDetector, "slack_token", kinds=("slack_token", "slack_webhook")),
    ),
    (
        _gate("hooks.slack.com", "discord"),
        _patterns(
            "slack_webhook",
            r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/-]{10,}",
            r"https://discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_-]{20,}",
        ),
    ),
    (_gate("AIza"), _patterns("google_api_key", _B + r"AIza[0-9A-Za-z_-]{35}")),
    (_gate("lg_"), _patterns("loregate_key", _B + r"lg_[0-9a-f]{12}_[A-Za-z0-9_-]{20,}")),
    (
        _gate("k_live_", "k_test_", "whsec_"),
        _patterns(
            "stripe_key", _B + r"(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{10,}", _B + r"whsec_[A-Za-z0-9]{20,}"
        ),
    ),
    (_gate("k_live_"), _detect_secrets(StripeDetector, "stripe_key")),
    (
        _gate("gl"),
        _patterns(
            "gitlab_token",
            _B + r"(?:glpat|gldt|glft|glsoat|glrt|glcbt|glimt|glptt|glagent|gloas|glsa)-[A-Za-z0-9_-]{16,}",
        ),
    ),
    (_gate("gl", "GR1348941"), _detect_secrets(GitLabTokenDetector, "gitlab_token")),
    (_gate("npm_"), _patterns("npm_token", _B + r"npm_[A-Za-z0-9]{30,}")),
    (_gate("_authToken"), _detect_secrets(NpmDetector, "npm_token", value_group=True)),
    (_gate("pypi-"), _patterns("pypi_token", _B + r"pypi-AgE[A-Za-z0-9_-]{40,}")),
    (_gate("pypi-"), _detect_secrets(PypiTokenDetector, "pypi_token")),
    (_gate("SG."), _patterns("sendgrid_key", _B + r"SG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{16,64}")),
    (_gate("SG."), _detect_secrets(SendGridDetector, "sendgrid_key")),
    (_gate("AC", "SK"), _patterns("twilio_key", _B + r"(?:AC|SK)[0-9a-fA-F]{32}" + _E)),
    (_gate("AC", "SK"), _detect_secrets(TwilioKeyDetector, "twilio_key")),
    (
        _gate("."),
        _patterns(
            "discord_token", _B + r"[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6,7}\.[A-Za-z0-9_-]{27,40}" + _E
        ),
    ),
    (_gate("."), _detect_secrets(DiscordBotTokenDetector, "discord_token")),
    (_gate(":AA"), _patterns("telegram_token", r"(?<![\d:])\d{8,10}:AA[A-Za-z0-9_-]{30,40}")),
    (_gate(":"), _detect_secrets(TelegramBotTokenDetector, "telegram_token")),
    (
        _gate("hvs.", "hvb.", "hvr.", "s."),
        _patterns(
            "vault_token",
            r"hv(?<![A-Za-z0-9_]hv)[sbr]\.[A-Za-z0-9_-]{20,}",
            r"s\.(?<![\w./-]s\.)[A-Za-z0-9]{24}" + _E,
        ),
    ),
    (_gate("shp"), _patterns("shopify_token", _B + r"shp(?:at|ss|ca|pa)_[A-Fa-f0-9]{32}" + _E)),
    # the key, not the `AccountKey=` / `SharedAccessKey=` before it
    (
        _gate(lower=("accountkey", "sharedaccesskey", "primarykey", "secondarykey")),
        _regex(
            "azure_key",
            re.compile(
                r"(?i)(?:AccountKey|SharedAccessKey|PrimaryKey|SecondaryKey)[^\S\n]*=[^\S\n]*"
                r"(?P<v>[A-Za-z0-9+/=]{16,})"
            ),
            "v",
        ),
    ),
    (_gate("AccountKey="), _detect_secrets(AzureStorageKeyDetector, "azure_key")),
    (
        _gate("sig="),
        _regex("azure_sas", re.compile(r"(?<![A-Za-z0-9_])sig=(?P<v>[A-Za-z0-9%+/=_-]{16,})"), "v"),
    ),
    (
        _gate("GOCSPX-", "ya29."),
        _patterns("google_oauth_secret", _B + r"GOCSPX-[A-Za-z0-9_-]{20,}", _B + r"ya29\.[A-Za-z0-9_-]{20,}"),
    ),
    (_gate("-us"), _patterns("mailchimp_key", _B + r"[0-9a-f]{32}-us\d{1,2}" + _E)),
    (_gate("-us"), _detect_secrets(MailchimpDetector, "mailchimp_key")),
    (
        _gate("sq0", "EAAA"),
        _patterns(
            "square_token", _B + r"sq0(?:atp|csp|idp)-[A-Za-z0-9_-]{20,}", _B + r"EAAA[A-Za-z0-9_-]{60}"
        ),
    ),
    (_gate("sq0csp"), _detect_secrets(SquareOAuthDetector, "square_token")),
    (_gate("hf_"), _patterns("huggingface_token", _B + r"hf_[A-Za-z0-9]{30,}" + _E)),
    (_gate("_v1_"), _patterns("digitalocean_token", _B + r"do[pro]_v1_[a-f0-9]{64}" + _E)),
    (_gate("://"), _detect_secrets(BasicAuthDetector, "url_credentials", value_group=True)),
    (_gate(lower=("cl",)), _detect_secrets(CloudantDetector, "cloud_credentials", value_group=True)),
    (
        _gate(lower=("key", "pwd", "pass", "token")),
        _detect_secrets(IbmCloudIamDetector, "cloud_credentials", value_group=True),
    ),
    (_gate(lower=("secret",)), _detect_secrets(IbmCosHmacDetector, "cloud_credentials", value_group=True)),
    (_gate(lower=("sl",)), _detect_secrets(SoftlayerDetector, "cloud_credentials", value_group=True)),
    # scheme://user:password@host (user may be empty: redis://:pw@host); "host:5432/x@y" is a port
    (
        _gate("://"),
        _regex(
            "url_credentials",
            re.compile(r"://(?<=[A-Za-z0-9+.-]://)[^\s:/@]*:(?!\d+(?:/|$))(?P<v>[^\s@]+)@"),
            "v",
        ),
    ),
    (_ALWAYS, _assignments),
    (_gate(lower=("value",)), _named_values),
    (_gate("-"), _cli(_CLI_FLAG)),
    (_gate(" -p"), _cli(_CLI_DB)),
    (_gate("redis-cli"), _cli(_CLI_REDIS)),
    (_gate(" -P"), _cli(_CLI_MSSQL)),
    (_gate("curl"), _cli(_CLI_CURL)),
    (_gate(lower=("pass", "pwd", "pw")), _english_prose),
    (_gate("비밀", "비번", "패스", "암호", "핀", "PIN"), _korean_prose),
    # in prose, near the words that say what it is: "AWS secret key wJalr..."
    (
        _gate(lower=("aws",)),
        _regex(
            "aws_secret_key",
            re.compile(
                r"(?i)\baws\b[^\n]{0,40}?\bsecret\b[^\n]{0,30}?(?<![A-Za-z0-9/+])(?P<v>[A-Za-z0-9/+]{40})"
                r"(?![A-Za-z0-9/+=])"
            ),
            "v",
        ),
    ),
    (_gate("</"), _xml_elements),
    (_gate("login"), _cli(_CLI_LOGIN)),
    (_gate(lower=("config",)), _cli_set),
    (
        _gate(
            "パス",
            "暗証",
            "合言葉",
            "トークン",
            "秘密",
            "シークレット",
            "キー",
            "密",
            "口令",
            "令牌",
            "金鑰",
            "私钥",
            "비밀",
            "비번",
            "패스",
            "암호",
            "토큰",
            "시크릿",
            "키",
            lower=(
                "pass",
                "pwd",
                "secret",
                "token",
                "key",
                "pin",
                "kennwort",
                "zugang",
                "geheim",
                "schlüssel",
                "contrase",
                "clave",
                "mdp",
                "clé",
                "clef",
                "jeton",
                "senha",
                "chave",
                "chiave",
                "parola",
                "passwort",
                "token",
                "пароль",
                "ключ",
                "токен",
                "секрет",
                "şifre",
                "sifre",
                "wachtwoord",
                "hasło",
                "haslo",
                "lösenord",
                "passord",
                "adgangskode",
                "salasana",
                "heslo",
                "jelsz",
                "parolă",
                "kata sandi",
                "mật khẩu",
                "كلمة",
                "رمز",
                "पासवर्ड",
                "गुप्त",
                "รหัสผ่าน",
                "סיסמה",
                "κωδικ",
                "συνθηματικ",
            ),
        ),
        multilingual_prose,
    ),
    (
        _gate(
            lower=(
                "phrase",
                "mnemonic",
                "seed",
                "recovery",
                "wallet",
                "パスフレーズ",
                "口令",
                "助记",
                "助記",
                "ニーモニック",
                "シード",
                "복구",
                "시드",
                "wiederherstellung",
            ),
        ),
        passphrases,
    ),
    (_ALWAYS, catalogue_spans),
    (_ALWAYS, near_word_tokens),
    (
        _gate(
            "(",
            lower=(
                "pdo",
                "connect",
                "getconnection",
                "sign",
                "encode",
                "verify",
                "hmac",
                "login",
                "auth",
                "credential",
                "algolia",
                "initializeapp",
            ),
        ),
        call_credentials,
    ),
    (_gate(":"), pgpass_lines),
    (_gate(lower=("oracle", "sqlplus", "expdp", "impdp", "rman", "sqlldr", "userid")), oracle_userpass),
    (_gate(lower=("pass", "auth", "secret", "rootpw", "bindpw", "psk", "ldap")), directives),
    (_gate("login"), login_arguments),
    (_gate(lower=("password", "passphrase", "passcode", "pwd", "key", "token", "secret")), value_first),
    (_gate("WIFI:"), wifi_qr),
    (_gate(": |", ": >", ":|", ":>"), yaml_blocks),
    (_gate(lower=("convertto-securestring",)), secure_strings),
    (_gate("@"), url_tokens),
    (_gate("5H", "5J", "5K", "K", "L"), bitcoin_wif),
    (_gate("$", "{"), password_hashes),
    (
        _gate(
            lower=(
                "pin",
                "cvv",
                "cvc",
                "cid ",
                "csc",
                "otp",
                "security code",
                "verification",
                "geheimzahl",
                "prüf",
                "código",
                "code ",
                "cryptogramme",
                "codice",
                "暗証",
                "セキュリティ",
                "安全码",
                "验证码",
                "보안",
                "пин",
            ),
        ),
        short_codes,
    ),
    (_ALWAYS, _cards),
    (_ALWAYS, ibans),
    (_gate("0x"), hex_private_keys),
    (_gate(lower=("acc", "a/c", "konto", "compte", "cuenta", "conta")), bank_accounts),
    (_gate(lower=("net use",)), net_use),
    (_gate("'", '"'), quoted_pairs),
    (_gate(lower=("identified", "password")), sql_passwords),
    (_gate("-", "–", "주민"), _rrn),
    (_ALWAYS, _encoded),
]


def _spans(text: str, depth: int = 0) -> list[Span]:
    found: list[Span] = []
    lower = text.lower()
    for gate, detect in _DETECTORS:
        if gate.passes(text, lower):
            found.extend(detect(text, depth))
    return found
