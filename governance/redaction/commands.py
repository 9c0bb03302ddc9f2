"""Secrets a command takes by position or through its own syntax, where no name stands beside the value:
`htpasswd -b file user PASS`, `sqlplus user/PASS`, redis `AUTH [user] PASS`, `smbclient -U user%PASS`,
`rabbitmqctl add_user user PASS`, `mc alias set name url ACCESS SECRET`; a password given in the next chat
message; a token that is a webhook URL's path segment or an `Authorization` header of any scheme; and three
vendor shapes (Tencent Cloud SecretIds, Nostr private keys, FCM legacy server keys); an LDAP bind DN and its
password in a sentence; base64 of `user:password` outside a header, on a line that says so."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator

from governance.redaction.kinds import _PRIORITY, Span
from governance.redaction.names import _UUID, _benign, _looks_random, _password_like

__all__ = [
    "auth_headers",
    "basic_credentials",
    "chat_passwords",
    "command_arguments",
    "htpasswd_arguments",
    "ldap_binds",
    "masked_in_actions",
    "minio_aliases",
    "oracle_logins",
    "redis_auth",
    "webhook_paths",
]

_ARG = re.compile(r"\"(?P<dq>[^\"\n]*)\"|'(?P<sq>[^'\n]*)'|(?P<bare>[^\s|;&<>\"']+)")


def _arguments(text: str, start: int) -> Iterator[tuple[int, int, str]]:
    """The arguments of a command from `start` to the end of its line or pipeline: span and value."""
    pos, size = start, len(text)
    while pos < size:
        while pos < size and text[pos] in " \t":
            pos += 1
        match = _ARG.match(text, pos)
        if match is None:
            return
        group = "dq" if match.group("dq") is not None else "sq" if match.group("sq") is not None else "bare"
        yield match.start(group), match.end(group), match.group(group)
        pos = match.end()


def _varied_uuid(value: str) -> bool:
    """A UUID of more than five characters: the nil UUID and `11111111-…` stand in for one."""
    return len(set(value)) > 5


def _secret(value: str) -> bool:
    return bool(value) and not value.startswith(("-", "$", "%", "@", "<")) and not _benign(value)


# `htpasswd -b[c…] FILE USER PASS`, `htpasswd -nb USER PASS`: with `-b` the password is the last argument
_HTPASSWD = re.compile(r"\bhtpasswd(?=[^\S\n]+-)")
# `sqlplus user/PASS`, `sqlplus user/PASS@db as sysdba` (with `@` the older rule reads it too)
_ORACLE_TOOL = re.compile(r"(?i)\b(?:sqlplus|sqlldr|expdp|impdp|rman|dgmgrl)(?:[^\S\n]+-[A-Za-z]+)*[^\S\n]+")
_ORACLE_LOGIN = re.compile(r"[\"']?[A-Za-z][\w$#]{0,60}/(?P<v>[^\s/@\"']{3,})(?=[@\s\"']|$)")
# `smbclient -U user%PASS` (`rpcclient`, `smbmap` alike); `mount.cifs -o password=…` is an assignment
_SMB = re.compile(
    r"\b(?:smbclient|smbmap|rpcclient)\b[^\n|;&]*?[^\S\n](?:-U[^\S\n]*|--user(?:=|[^\S\n]+))[\"']?"
    r"[^\s%\"']+%(?P<v>[^\s\"']+)"
)
# `rabbitmqctl add_user USER PASS`, `rabbitmqctl change_password USER PASS`
_RABBIT = re.compile(r"\brabbitmqctl[^\S\n]+(?:add_user|change_password)[^\S\n]+\S+[^\S\n]+")


# MinIO's client: `mc alias set NAME URL ACCESS_KEY SECRET_KEY` (`mc config host add` before it)
_MC_ALIAS = re.compile(r"\bmc[^\S\n]+(?:alias[^\S\n]+set|config[^\S\n]+host[^\S\n]+add)[^\S\n]+")


def minio_aliases(text: str, depth: int) -> Iterator[Span]:
    """The access key and the secret key an `mc alias set` is given (each when it looks like one)."""
    priority = _PRIORITY["password"]
    for match in _MC_ALIAS.finditer(text):
        arguments = list(_arguments(text, match.end()))[:4]
        for start, end, value in arguments[2:4]:
            if not value.startswith("-") and _looks_random(value):
                yield start, end, priority


# GitHub Actions masks a value only from the `::add-mask::` on: the value given to it is a secret, and so is a
# random token a log that masks things printed (often before the mask, `echo "fetched $TOKEN"`)
_ADD_MASK = re.compile(r"::add-mask::(?P<v>[^\s\"'$%][^\s\"']{5,})")
_LOG_TOKEN = re.compile(r"(?<![\w/+=.-])[A-Za-z0-9_-]{24,}(?![\w/+=.-])")
_HEX_OR_DIGITS = re.compile(r"[0-9a-fA-F]+|[0-9_-]+")


def masked_in_actions(text: str, depth: int) -> Iterator[Span]:
    priority = _PRIORITY["password"]
    for match in _ADD_MASK.finditer(text):
        if not _benign(match.group("v")):
            yield match.start("v"), match.end("v"), priority
    for match in _LOG_TOKEN.finditer(text):
        token = match.group()
        if not _HEX_OR_DIGITS.fullmatch(token) and _looks_random(token):
            yield match.start(), match.end(), priority


def htpasswd_arguments(text: str, depth: int) -> Iterator[Span]:
    priority = _PRIORITY["password"]
    for match in _HTPASSWD.finditer(text):
        flags, positional = "", list[tuple[int, int, str]]()
        for start, end, value in _arguments(text, match.end()):
            if value.startswith("-") and not positional:
                flags += value[1:]
            else:
                positional.append((start, end, value))
        wanted = 2 if "n" in flags else 3
        if "b" in flags and len(positional) >= wanted:
            start, end, value = positional[wanted - 1]
            if _secret(value):
                yield start, end, priority


def oracle_logins(text: str, depth: int) -> Iterator[Span]:
    priority = _PRIORITY["password"]
    for match in _ORACLE_TOOL.finditer(text):
        login = _ORACLE_LOGIN.match(text, match.end())
        if login is not None and _secret(login.group("v")):
            yield login.start("v"), login.end("v"), priority


def command_arguments(text: str, depth: int) -> Iterator[Span]:
    """`smbclient -U user%PASS`, `rabbitmqctl add_user user PASS`."""
    priority = _PRIORITY["password"]
    for match in _SMB.finditer(text):
        if _secret(match.group("v")):
            yield match.start("v"), match.end("v"), priority
    for match in _RABBIT.finditer(text):
        for start, end, value in _arguments(text, match.end()):
            if _secret(value):
                yield start, end, priority
            break


# redis `AUTH [username] password` typed at a prompt or alone on a line; "AUTH failed: …" is a reply
_REDIS_AUTH = re.compile(
    r"(?m)^[^\S\n]*(?:(?:[\w.-]+:\d+(?:\[\d+\])?|redis)?>[^\S\n]*)?AUTH(?:[^\S\n]+\S+)?[^\S\n]+(?P<v>\S+)[^\S\n]*$"
)


def redis_auth(text: str, depth: int) -> Iterator[Span]:
    priority = _PRIORITY["password"]
    for match in _REDIS_AUTH.finditer(text):
        value = match.group("v").strip("\"'")
        if _password_like(value):
            start = match.start("v") + (1 if match.group("v")[0] in "\"'" else 0)
            yield start, start + len(value), priority


# a chat message with its time or its author in angle brackets: `[10:02] ben: text`, `<ben> text`,
# `10:02 <ben> text` (a bare `name: text` is as often YAML)
_CHAT = re.compile(
    r"(?m)^[^\S\n]*(?:\[[\d:. ]{4,12}\][^\S\n]*(?:<[\w.@-]{1,32}>|[\w.@-]{1,32}:)"
    r"|(?:[\d:]{4,8}[^\S\n]+)?<[\w.@-]{1,32}>)[^\S\n]+(?P<body>[^\n]*)$"
)
_SECRET_WORD = re.compile(
    r"(?i)\b(?:password|passwort|passphrase|passcode|pw|pwd|secret|token|api key|unseal|key share|pin)s?\b"
)
# the value alone in the next message, or after "part two:", or at the end of the asking message
_ALONE = re.compile(
    r"(?i)(?:(?:part|piece|half|share)[^\S\n]+(?:one|two|three|four|\d)(?:[^\S\n]*/[^\S\n]*\d)?[^\S\n]*:[^\S\n]*)?"
    r"(?P<v>\S{6,})"
)
_TICKET = re.compile(
    r"[A-Z][A-Z0-9]{1,9}-\d+|#\d+|v?\d[\w.-]*"
)  # `PR-1234`, `#812`, `3.2.1-rc1`: no password
_LAST = re.compile(r":[^\S\n]*(?P<v>[^\s:]{6,})[^\S\n]*$")


def chat_passwords(text: str, depth: int) -> Iterator[Span]:
    """A password asked for or announced in one chat message and given in the next ones."""
    priority = _PRIORITY["password"]
    messages = list(_CHAT.finditer(text))
    for i, message in enumerate(messages):
        body = message.group("body")
        if _SECRET_WORD.search(body) is None:
            continue
        last = _LAST.search(body)
        if last is not None and "unseal" in body.lower() and _password_like(last.group("v")):
            yield message.start("body") + last.start("v"), message.start("body") + last.end("v"), priority
        line_end = message.end()
        for following in messages[i + 1 : i + 3]:
            if following.start() != line_end + 1:
                break  # the next line is no message of the same chat
            line_end = following.end()
            alone = _ALONE.fullmatch(following.group("body").strip())
            if alone is None:
                break
            value = alone.group("v")
            if _password_like(value) and not value.endswith("?") and not _TICKET.fullmatch(value):
                start = (
                    following.start("body")
                    + len(following.group("body"))
                    - len(following.group("body").lstrip())
                    + alone.start("v")
                )
                yield start, start + len(value), priority


# a webhook's token as a path segment: Feishu/Lark `/open-apis/bot/v2/hook/<uuid>` (a UUID only after the
# singular `hook`: `/v1/webhooks/<uuid>` and `/hooks/<uuid>` name a webhook in an API that manages them), a
# random token after `hooks`/`webhook(s)` (`/hooks/<token>`); a number is a webhook's id (`/hooks/482913`)
# Rocket.Chat's incoming webhook puts its token after the integration's id (`/hooks/<id>/<token>`)
_HOOK_PATH = re.compile(
    r"(?i)/(?P<seg>hook|hooks|webhook|webhooks)/(?P<v>[A-Za-z0-9_-]{8,})(?![A-Za-z0-9_-])"
    r"(?:/(?P<w>[A-Za-z0-9_-]{16,})(?![A-Za-z0-9_-]))?"
)


# a host that receives webhooks (`hooks.partner.example`, `webhook.site`, `webhooks.example.com`): what it
# takes as a path is the address a sender must know, so a random segment there is the token
_HOOK_HOST = re.compile(r"(?i)//(?:hooks?|webhooks?)[.-][A-Za-z0-9.-]+(?::\d+)?(?P<path>/[^\s?#\"'<>)]*)")
_SEGMENT = re.compile(r"[^/]+")


def webhook_paths(text: str, depth: int) -> Iterator[Span]:
    priority = _PRIORITY["generic_secret"]
    for host in _HOOK_HOST.finditer(text):
        base = host.start("path")
        for segment in _SEGMENT.finditer(host.group("path")):
            value = segment.group()
            if len(value) >= 16 and not _UUID.fullmatch(value) and _looks_random(value, hex_ok=True):
                yield base + segment.start(), base + segment.end(), priority
    for match in _HOOK_PATH.finditer(text):
        value = match.group("v")
        if _UUID.fullmatch(value):
            if match.group("seg").lower() == "hook" and _varied_uuid(value):
                yield match.start("v"), match.end("v"), priority
        elif len(value) >= 16 and _looks_random(value, hex_ok=True):
            yield match.start("v"), match.end("v"), priority
        token = match.group("w")
        if token is not None and not _UUID.fullmatch(token) and _looks_random(token, hex_ok=True):
            yield match.start("w"), match.end("w"), priority


# `Authorization: Splunk <uuid>`, `Authorization: SSWS …`, `Authorization: Token …`: any scheme's credential
_AUTH_HEADER = re.compile(
    r"(?i)authorization[\"']?[^\S\n]*[:=][^\S\n]*[\"']?[A-Za-z][\w-]{1,30}[^\S\n]+"
    r"(?P<v>[A-Za-z0-9._~+/=-]{16,})"
)


def auth_headers(text: str, depth: int) -> Iterator[Span]:
    priority = _PRIORITY["generic_secret"]
    lower = text.lower()
    at = lower.find("authorization")
    while at >= 0:
        match = _AUTH_HEADER.match(text, at)
        at = lower.find("authorization", at + 13)
        if match is None:
            continue
        value = match.group("v")
        if (_UUID.fullmatch(value) and _varied_uuid(value)) or _looks_random(value, hex_ok=True):
            yield match.start("v"), match.end("v"), priority


# an LDAP bind described in a sentence: "bind as cn=svc,ou=services,dc=acme with X", "… using X"
_LDAP_BIND = re.compile(
    r"(?i)\b(?:cn|uid)=[^\s,]+(?:,[a-z]{1,6}=[^\s,]+)+[^\S\n]+(?:with|using|password:?|pw:?|/)[^\S\n]+"
    r"(?P<v>[^\s\"']{6,})"
)


def ldap_binds(text: str, depth: int) -> Iterator[Span]:
    priority = _PRIORITY["password"]
    for match in _LDAP_BIND.finditer(text):
        value = match.group("v").rstrip(".,;:)")
        if _password_like(value) and "=" not in value:
            yield match.start("v"), match.start("v") + len(value), priority


# base64 of `user:password` outside a header, on a line that says what it is ("… is the base64 user:pass",
# "basic auth credentials: …"): the header form is a rule of its own
_B64_RUN = re.compile(r"(?<![A-Za-z0-9+/=])(?P<v>[A-Za-z0-9+/]{12,}={0,2})(?![A-Za-z0-9+/=])")
_B64_LINE = re.compile(r"base64|basic|user:pass|username:password|credentials")  # in lower case
_USER_PASS = re.compile(r"[\w.@+-]{1,64}:(?P<p>[\x21-\x7e]{6,128})")


def basic_credentials(text: str, depth: int) -> Iterator[Span]:
    priority = _PRIORITY["basic_auth"]
    done = 0
    lower = text.lower()
    if len(lower) != len(text):
        lower = text  # a letter that grows when lowered would shift the indices: look in the text as written
    for line_word in _B64_LINE.finditer(lower):
        if line_word.start() < done:
            continue
        line_start = text.rfind("\n", 0, line_word.start()) + 1
        line_end = text.find("\n", line_word.end())
        done = len(text) if line_end < 0 else line_end
        yield from _basic_pairs(text, line_start, done, priority)


def _basic_pairs(text: str, start: int, end: int, priority: int) -> Iterator[Span]:
    for match in _B64_RUN.finditer(text, start, end):
        value = match.group("v")
        if len(value) % 4:
            continue
        try:
            decoded = base64.b64decode(value, validate=True).decode("ascii")
        except (binascii.Error, UnicodeDecodeError):
            continue
        pair = _USER_PASS.fullmatch(decoded)
        if pair is not None and _password_like(pair.group("p")):
            yield match.start("v"), match.end("v"), priority
