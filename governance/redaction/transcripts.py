"""Secrets in commands and what a terminal or a protocol prints, where no name stands beside the value:
`net user NAME PW /add`, an archive's password (`zip -P`, `7z -pPW`), IMAP `LOGIN user PW`, Cisco IOS keys
(`password 0 X`, `message-digest-key 1 md5 X`), a redis ACL's `>password`, a password written as a comment
after a flag that prompts for one (`psql -W  # PW`), SMTP `AUTH LOGIN`'s base64 answer to `Password:`, the
lines `cat` prints of a credential file, a `(user, password)` pair in a debugger's output, a random default
in a Dockerfile's `ENV`/`ARG`, and a random user name that is an API key beside its password (Kafka JAAS)."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator

from governance.redaction.kinds import _PRIORITY, Span
from governance.redaction.names import _benign, _looks_random, _password_like, _strong_password_like

__all__ = [
    "archive_passwords",
    "credential_file_lines",
    "debugger_pairs",
    "dockerfile_defaults",
    "ios_keys",
    "jaas_users",
    "net_user",
    "prompt_comments",
    "protocol_logins",
    "redis_acl",
    "smtp_auth_login",
]


def _shaped(value: str) -> bool:
    """A password's shape: strong, or random, and no reference or placeholder."""
    return not _benign(value) and (_strong_password_like(value) or _looks_random(value))


# `net user NAME PW [/add] [/domain]`: the second argument is the password (`*` prompts for it)
_NET_USER = re.compile(
    r"(?i)\bnet[^\S\n]+user[^\S\n]+(?:\"[^\"\n]+\"|[^\s/\"]+)[^\S\n]+(?P<v>[^\s/\"*][^\s\"]*)"
)


def net_user(text: str, depth: int) -> Iterator[Span]:
    priority = _PRIORITY["password"]
    for match in _NET_USER.finditer(text):
        if _shaped(match.group("v")):
            yield match.start("v"), match.end("v"), priority


# `zip -P PW`, `zip -r -P PW`, `unzip -P PW` (Info-ZIP), `7z a -pPW` (attached, as 7-Zip documents it),
# `rar a -pPW`, `unrar x -pPW`; `zip -e` and a bare `7z -p` prompt
_ARCHIVE = re.compile(
    r"\b(?:(?:un)?zip(?:[^\S\n]+-[A-Za-z]+)*[^\S\n]+-P[^\S\n]+(?P<z>[^\s\"']+|\"[^\"\n]+\"|'[^'\n]+')"
    r"|(?:7z|7za|7zr|rar|unrar)[^\S\n]+[^\n|;&]*?[^\S\n]-p(?P<s>[^\s\"']+))"
)


def archive_passwords(text: str, depth: int) -> Iterator[Span]:
    priority = _PRIORITY["password"]
    for match in _ARCHIVE.finditer(text):
        group = "z" if match.group("z") is not None else "s"
        start, end = match.span(group)
        value = match.group(group)
        if value[:1] in "\"'":
            start, end, value = start + 1, end - 1, value[1:-1]
        if _password_like(value) or _looks_random(value):
            if not _benign(value):
                yield start, end, priority


# IMAP `tag LOGIN user PW` (RFC 9051 6.2.3), POP3 and FTP `PASS PW` on a line of their own
_PROTOCOL_LOGIN = re.compile(
    r"(?m)^(?:[A-Za-z]:[^\S\n]*)?(?:[A-Za-z0-9.]{1,10}[^\S\n]+LOGIN[^\S\n]+(?:\"[^\"\n]*\"|\S+)[^\S\n]+"
    r"|PASS[^\S\n]+)(?:\"(?P<q>[^\"\n]+)\"|(?P<v>\S+))[^\S\n]*$"
)


def protocol_logins(text: str, depth: int) -> Iterator[Span]:
    priority = _PRIORITY["password"]
    for match in _PROTOCOL_LOGIN.finditer(text):
        group = "q" if match.group("q") is not None else "v"
        if _shaped(match.group(group)):
            yield match.start(group), match.end(group), priority


# Cisco IOS: `password 0 X`, `secret 0 X` (0 is clear text, 7 the reversible type 7), `key-string X`,
# `authentication-key X`, `message-digest-key N md5 X` (OSPF), `snmp-server community X`;
# `secret 5 $1$…`/`secret 9 $9$…` are hashes and are the password-hash rule's
_IOS = re.compile(
    r"(?m)(?:\b(?:password|secret)[^\S\n]+[07][^\S\n]+"
    r"|\b(?:key-string|authentication-key)[^\S\n]+(?:[07][^\S\n]+)?"
    r"|\bmessage-digest-key[^\S\n]+\d+[^\S\n]+md5[^\S\n]+(?:[07][^\S\n]+)?"
    r"|\bsnmp-server[^\S\n]+community[^\S\n]+)(?P<v>[^\s$][^\s]*)"
)


def ios_keys(text: str, depth: int) -> Iterator[Span]:
    priority = _PRIORITY["password"]
    for match in _IOS.finditer(text):
        value = match.group("v")
        if not _benign(value) and (_password_like(value) or _looks_random(value, hex_ok=True)):
            yield match.start("v"), match.end("v"), priority


# redis ACL: `user NAME on >PW ~keys +@cmds` (`#<sha256>` is a hash of one, `nopass` none)
_REDIS_ACL = re.compile(r"(?m)\buser[^\S\n]+\S+[^\S\n]+(?:on|off)\b[^\n]*")
_ACL_PASSWORD = re.compile(r"(?<!\S)>(?P<v>\S+)")


def redis_acl(text: str, depth: int) -> Iterator[Span]:
    priority = _PRIORITY["password"]
    for line in _REDIS_ACL.finditer(text):
        for match in _ACL_PASSWORD.finditer(text, line.start(), line.end()):
            if not _benign(match.group("v")):
                yield match.start("v"), match.end("v"), priority


# a flag that makes a client prompt for a password (`psql -W`, `mysql -p`, `--ask-pass`, `-k`), then the
# password itself written as a shell comment on the same line, for whoever runs it next
_PROMPT_COMMENT = re.compile(
    r"(?m)[^\S\n](?:-W|-p|--password|--ask-pass|--ask-become-pass|-k|-K)(?=[^\S\n])[^\n#]*[^\S\n]#[^\S\n]*"
    r"(?P<v>[^\s#]\S*)[^\S\n]*$"
)


def prompt_comments(text: str, depth: int) -> Iterator[Span]:
    priority = _PRIORITY["password"]
    if "#" not in text:
        return
    for match in _PROMPT_COMMENT.finditer(text):
        if _shaped(match.group("v")):
            yield match.start("v"), match.end("v"), priority


# SMTP `AUTH LOGIN` (draft-murchison-sasl-login): the server's `334 UGFzc3dvcmQ6` is base64 of
# `Password:`; the client's next line is the password in base64 (and `334 VXNlcm5hbWU6`, `Username:`,
# asks for the user, which stays)
_SMTP_PASSWORD = re.compile(
    r"(?m)^(?:S:[^\S\n]*)?334[^\S\n]+UGFzc3dvcmQ6[^\S\n]*\r?\n(?:C:[^\S\n]*)?(?P<v>[A-Za-z0-9+/]{4,}={0,2})[^\S\n]*$"
)


def smtp_auth_login(text: str, depth: int) -> Iterator[Span]:
    priority = _PRIORITY["password"]
    for match in _SMTP_PASSWORD.finditer(text):
        try:
            base64.b64decode(match.group("v"), validate=True)
        except (binascii.Error, ValueError):
            continue
        yield match.start("v"), match.end("v"), priority


# `cat ~/.vault_pass.txt`, `cat /etc/openvpn/client/creds.txt`: a file named for a credential, then what it
# prints up to the next prompt; a line there with a password's shape is the credential (an OpenVPN
# `auth-user-pass` file holds the user on its first line and the password on its second)
_CAT_FILE = re.compile(
    r"(?im)^[^\S\n]*(?:\S*[$#>][^\S\n]*)?(?:sudo[^\S\n]+)?(?:cat|type|Get-Content)"
    r"[^\S\n]+\S*(?:pass|pwd|cred|secret|token|auth|key)[^\s/]*[^\S\n]*\n"
)
_PROMPT_LINE = re.compile(r"[^\S\n]*(?:\S*[$#>][^\S\n]|PS[^\S\n])")


def credential_file_lines(text: str, depth: int) -> Iterator[Span]:
    priority = _PRIORITY["password"]
    for match in _CAT_FILE.finditer(text):
        pos, lines = match.end(), 0
        while pos < len(text) and lines < 4:
            end = text.find("\n", pos)
            end = len(text) if end < 0 else end
            line = text[pos:end]
            if _PROMPT_LINE.match(line):
                break
            value = line.strip()
            mixed = any(c.isupper() for c in value) and any(c.islower() for c in value)
            if (
                value
                and " " not in value
                and "=" not in value
                and mixed
                and any(c.isdigit() for c in value)
                and _shaped(value)
            ):
                offset = line.index(value)
                yield pos + offset, pos + offset + len(value), priority
            pos, lines = end + 1, lines + 1


# `('etl_loader', 'Y~zh~qKS21H3~')` in a debugger's or a test runner's output: a pair of strings, a user
# name and a random one, as the repr of a credentials tuple prints
# (a tuple, not a call's arguments: no name before the parenthesis; a flag or an assignment is no password)
_PAIR = re.compile(r"(?<![\w.])\(\s*'(?P<u>[A-Za-z][\w.@-]{1,40})',\s*'(?P<v>[^'\s=-][^'\s=]{7,})'\s*\)")


def debugger_pairs(text: str, depth: int) -> Iterator[Span]:
    priority = _PRIORITY["password"]
    for match in _PAIR.finditer(text):
        value = match.group("v")
        symbols = sum(1 for c in value if not c.isalnum())
        if _looks_random(value) or (_strong_password_like(value) and symbols >= 2 and "." not in value):
            yield match.start("v"), match.end("v"), priority


# a Dockerfile's `ENV NAME=VALUE …` or `ARG NAME=VALUE`: a random default baked into every image layer
_DOCKER_LINE = re.compile(r"(?m)^[^\S\n]*(?:ENV|ARG)[^\S\n]+[^\n]*")
_DOCKER_PAIR = re.compile(r"(?<![^\s])[A-Za-z_][A-Za-z0-9_]*=(?P<v>[A-Za-z0-9+/_-]{20,}={0,2})(?![^\s])")
_HEX = re.compile(r"[0-9a-fA-F]+")


def dockerfile_defaults(text: str, depth: int) -> Iterator[Span]:
    priority = _PRIORITY["generic_secret"]
    for line in _DOCKER_LINE.finditer(text):
        for match in _DOCKER_PAIR.finditer(text, line.start(), line.end()):
            value = match.group("v")
            if not _HEX.fullmatch(value) and _looks_random(value):
                yield match.start("v"), match.end("v"), priority


# Kafka's JAAS line (and any login module's): `username="<key>" password="<secret>"`; Confluent Cloud's user
# name is an API key (16 upper-case letters and digits), so a random one goes with its password
_JAAS_USER = re.compile(r"(?i)\busername=\"(?P<v>[A-Za-z0-9+/_-]{12,})\"[^\n]*\bpassword=")


def jaas_users(text: str, depth: int) -> Iterator[Span]:
    priority = _PRIORITY["generic_secret"]
    for match in _JAAS_USER.finditer(text):
        value = match.group("v")
        digits = sum(c.isdigit() for c in value)
        if value.upper() == value and 2 <= digits < len(value) - 2 or _looks_random(value):
            yield match.start("v"), match.end("v"), priority
