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
from governance.redaction.assignments import (
    _CLI_CURL,
    _CLI_DB,
    _CLI_FLAG,
    _CLI_LOGIN,
    _CLI_MSSQL,
    _CLI_REDIS,
    _assignments,
    _cli,
    _cli_set,
    _named_values,
    _xml_elements,
    csv_password_columns,
)
from governance.redaction.catalogue import catalogue_spans
from governance.redaction.commands import (
    auth_headers,
    basic_credentials,
    chat_passwords,
    command_arguments,
    htpasswd_arguments,
    ldap_binds,
    masked_in_actions,
    minio_aliases,
    oracle_logins,
    redis_auth,
    webhook_paths,
)
from governance.redaction.disguised import percent_encoded
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
    quoted_pairs,
    secure_strings,
    setter_calls,
    short_codes,
    sql_passwords,
    terraform_state_passwords,
    url_tokens,
    wifi_qr,
    yaml_blocks,
)
from governance.redaction.kinds import _PRIORITY, Detector, Span
from governance.redaction.names import (
    _benign,
)
from governance.redaction.numbers import _cards, _rrn
from governance.redaction.people import POLICY_SYMBOLS, password_shapes
from governance.redaction.prose import (
    CREDENTIAL_NEEDLES,
    _english_prose,
    _korean_prose,
    credential_prose,
    multilingual_prose,
    passphrases,
)
from governance.redaction.transcripts import (
    archive_passwords,
    credential_file_lines,
    debugger_pairs,
    dockerfile_defaults,
    ios_keys,
    jaas_users,
    net_user,
    prompt_comments,
    protocol_logins,
    redis_acl,
    smtp_auth_login,
)
from governance.redaction.value_first import VALUE_FIRST_NEEDLES, value_first

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
    (_gate(lower=("password", "passwd", "pwd", "totp")), csv_password_columns),
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
                "sandi",
                "mật khẩu",
                "كلمة",
                "رمز",
                "पासवर्ड",
                "गुप्त",
                "รหัสผ่าน",
                "סיסמה",
                "κωδικ",
                "συνθηματικ",
                "პაროლ",
                "cheia",
                "cheie",
                "nøkkel",
                "парола",
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
    (_gate(lower=CREDENTIAL_NEEDLES), credential_prose),
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
    (
        _gate(
            lower=(
                "password(",
                "passwd(",
                "pwd(",
                "secret(",
                "token(",
                "key(",
                "plainauth(",
                "changeuserpassword(",
            )
        ),
        setter_calls,
    ),
    (_gate(":"), pgpass_lines),
    (_gate(lower=("oracle", "sqlplus", "expdp", "impdp", "rman", "sqlldr", "userid")), oracle_userpass),
    (_gate("htpasswd"), htpasswd_arguments),
    (_gate("mc alias", "mc config"), minio_aliases),
    (_gate("::add-mask::"), masked_in_actions),
    (_gate(lower=("sqlplus", "sqlldr", "expdp", "impdp", "rman", "dgmgrl")), oracle_logins),
    (_gate("smbclient", "smbmap", "rpcclient", "rabbitmqctl"), command_arguments),
    (_gate("AUTH"), redis_auth),
    (_gate("] ", "> "), chat_passwords),
    (_gate("hook"), webhook_paths),
    (_gate(lower=("authorization",)), auth_headers),
    (_gate(lower=("cn=", "uid=")), ldap_binds),
    (_gate(lower=("base64", "basic", "user:pass", "username:password", "credentials")), basic_credentials),
    # Tencent Cloud SecretId (`AKID` and 32 letters and digits), Nostr private keys (NIP-19: `nsec1` and 58
    # bech32 characters), FCM legacy server keys (`AAAA` and 7 characters, `:APA91b` and the rest)
    (
        _gate("AKID", "nsec1", ":APA91b"),
        _patterns(
            "vendor_token",
            _B + r"AKID[A-Za-z0-9]{32}" + _E,
            _B + r"nsec1[02-9ac-hj-np-z]{58}" + _E,
            _B + r"AAAA[A-Za-z0-9_-]{7}:APA91b[A-Za-z0-9_-]{60,}",
        ),
    ),
    (_gate(lower=("pass", "auth", "secret", "rootpw", "bindpw", "psk", "ldap")), directives),
    (_gate("login"), login_arguments),
    (_gate(lower=VALUE_FIRST_NEEDLES), value_first),
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
    (_gate("random_password"), terraform_state_passwords),
    (_gate(lower=("net user",)), net_user),
    (_gate("zip ", "7z ", "7za ", "7zr ", "rar "), archive_passwords),
    (_gate(" LOGIN ", "PASS "), protocol_logins),
    (
        _gate(
            "password 0 ",
            "password 7 ",
            "secret 0 ",
            "secret 7 ",
            "key-string ",
            "authentication-key ",
            "message-digest-key ",
            "community ",
        ),
        ios_keys,
    ),
    (_gate("user "), redis_acl),
    (_gate(" -W", " -p", " -k", " -K", "--password", "--ask-"), prompt_comments),
    (_gate("UGFzc3dvcmQ6"), smtp_auth_login),
    (_gate(lower=("cat ", "type ", "get-content")), credential_file_lines),
    (_gate("('"), debugger_pairs),
    (_gate("ENV", "ARG"), dockerfile_defaults),
    (_gate(lower=("username=",)), jaas_users),
    (_gate(*POLICY_SYMBOLS), password_shapes),
    (_gate("-", "–", "주민"), _rrn),
    (_ALWAYS, _encoded),
    (_gate("%"), percent_encoded(lambda text, depth: _spans(text, depth))),
]


def _spans(text: str, depth: int = 0) -> list[Span]:
    found: list[Span] = []
    lower = text.lower()
    for gate, detect in _DETECTORS:
        if gate.passes(text, lower):
            found.extend(detect(text, depth))
    return found
