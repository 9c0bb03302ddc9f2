"""A value named by the syntax around it: assignments (`name = value`, `"name": "value"`, `name := value`),
a name and its value apart (.NET `<add key= value=>`, Kubernetes env entries), XML elements, and command-line
flags and subcommands that take a password (`--password x`, `mysql -p…`, `docker login -p x`,
`aws configure set … x`)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from governance.redaction.generic import plain_base64
from governance.redaction.kinds import _PRIORITY, Detector, Span
from governance.redaction.names import _HANGUL, _benign, _looks_random, _name_class, _password_like

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
    r"|access|jwt|nonce|psk|material|csrf|xsrf"
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
        if start > 0 and text[start - 1] == ":" and text[start - 2 : start - 1] not in (":", "/"):
            # a segment of a colon path (`arn:aws:secretsmanager:…:secret:prod/db`), not a name; after a
            # URL's `/` it is a name scoped to that registry (.npmrc `//registry.example.com/:_auth=…`)
            continue
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
        elif cls == 1:
            pair = _PAIR.match(value) if match.group("bare") is not None else None
            if pair is not None:  # `Cookie: _ga=GA1.2.…`: a header of pairs; each pair's value is judged
                value_start += pair.end("name") + 1
                value = value[pair.end("name") + 1 :]
            if _looks_random(value, hex_ok=not _DIGEST_NAME.search(name)) and not plain_base64(value):
                yield value_start, value_end, generic


_PUBLIC_WORD = re.compile(r"(?i)(?:public|pub|publishable)_")
# a bare value that is itself `name=value` (a cookie in a `Cookie:` header)
_PAIR = re.compile(r"(?P<name>[A-Za-z_][\w.-]*)=(?=[^=])")
_DIGEST_NAME = re.compile(r"(?i)sha|hash|digest|commit|checksum|rev|etag|fingerprint|integrity")


# the name and the value apart: `<add key="SmtpPassword" value="x" />` (.NET config), a Kubernetes env entry
# (`- name: DB_PASSWORD` then `value: x`), `{"name": "API_TOKEN", "value": "x"}` (ECS task definitions), a
# password manager's custom field (`{"name": "API key", "value": "x"}`: a name of words only when quoted)
_NAMED_VALUE = re.compile(
    r"(?i)\b(?:key|name)[\"']?[^\S\n]*[:=][^\S\n]*"
    r"(?:\"(?P<spaced>[A-Za-z0-9_.\-]{2,40}(?:[ ][A-Za-z0-9_.\-]{1,40}){1,3})\""
    r"|[\"']?(?P<name>[A-Za-z0-9_.\-]{2,80})[\"']?)"
    r"[^\S\n]*,?"
    r"\s{1,40}?(?:-[^\S\n]*)?[\"']?value[\"']?[^\S\n]*[:=][^\S\n]*" + _VALUE
)


def _named_values(text: str, depth: int) -> Iterator[Span]:
    for match in _NAMED_VALUE.finditer(text):
        start, end, value = _value_span(match)
        cls = _name_class(match.group("name") or match.group("spaced").replace(" ", "_"))
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
    r"\b(?P<tool>mysql|mysqldump|mysqladmin|mysqlimport|mariadb|mariadb-dump|psql|pg_dump|pg_restore|mongo"
    r"|mongosh|cqlsh|mongodump|mongorestore|mongoimport|sshpass|altool)\b[^\n|;&]*?[^\S\n]-p(?P<gap>[^\S\n]+|(?=[^\s-]))"
    r"(?!-)" + _VALUE
)
# MySQL's `-p` takes its password attached (`-pX`); the word after `-p ` is the database (`mysql -p prod`)
_MYSQL = frozenset({"mysql", "mysqldump", "mysqladmin", "mysqlimport", "mariadb", "mariadb-dump"})
# `-P` after SQL Server's clients (sqlcmd, bcp, osql, isql) and Mosquitto's MQTT clients (`-u user -P pw`)
_CLI_MSSQL = re.compile(
    r"\b(?:sqlcmd|bcp|osql|isql|mosquitto_(?:pub|sub|rr))\b[^\n|;&]*?[^\S\n]-P(?:[^\S\n]+|(?=[^\s-]))(?!-)"
    + _VALUE
)
_CLI_REDIS = re.compile(r"\bredis-cli\b[^\n|;&]*?[^\S\n]-a[^\S\n]+(?!-)" + _VALUE)
_CLI_CURL = re.compile(
    r"\bcurl\b[^\n|;&]*?[^\S\n](?:-u|--user)[^\S\n]*[\"']?(?P<user>[^\s:\"']*):(?P<bare>[^\s\"']+)"
)


def _cli(pattern: re.Pattern[str]) -> Detector:
    priority = _PRIORITY["password"]

    def detect(text: str, depth: int) -> Iterator[Span]:
        for match in pattern.finditer(text):
            start, end, value = _value_span(match)
            if start >= end or value.startswith(("-", "@keychain:", "@env:")) or _benign(value):
                continue  # a flag, altool's reference to a keychain item or a variable, a placeholder
            if pattern is _CLI_DB and value.isdigit():
                continue  # psql -p 5432
            if pattern is _CLI_DB and match.group("tool") in _MYSQL and match.group("gap"):
                if not _password_like(value):
                    continue  # `mysql -u root -p prod` prompts; `prod` is the database
            if pattern is _CLI_CURL and _looks_random(match.group("user"), hex_ok=True):
                # an API key as the user (Mailjet's `key:secret`, Stripe's `sk_…:`) goes with the password
                yield match.start("user"), match.end("user"), priority
            yield start, end, priority

    return detect


# `<password>x</password>` (Maven settings.xml, Tomcat, Jenkins, any XML config): the element names the secret
_XML_ELEMENT = re.compile(
    r"<(?P<tag>[A-Za-z_][\w:.-]{1,60})(?:[^\S\n][^<>]*)?>(?P<v>[^<>\n]{1,300})</(?P=tag)>"
)


# the value one level down: Windows `unattend.xml`'s `<AdministratorPassword><Value>x</Value>`
_XML_VALUE_CHILD = re.compile(
    r"<(?P<tag>[A-Za-z_][\w:.-]{1,60})(?:[^\S\n][^<>]*)?>\s{0,40}<Value>(?P<v>[^<>\n]{1,300})</Value>"
)


def _xml_elements(text: str, depth: int) -> Iterator[Span]:
    strong, generic = _PRIORITY["password"], _PRIORITY["generic_secret"]
    matches = list(_XML_ELEMENT.finditer(text))
    if "<Value>" in text:
        matches += _XML_VALUE_CHILD.finditer(text)
    for match in matches:
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


# a CSV export whose header names a password column (browsers', KeePassXC's, Bitwarden's, 1Password's):
# that column's cell in each row under it, until a blank line or a row of another width
_CSV_SECRET_COLUMNS = frozenset({"password", "passwd", "pwd", "login_password", "totp", "login_totp"})
# an export names whose login it keeps, or where: a header without one of these is not an export's
_CSV_LOGIN_COLUMNS = frozenset(
    {"username", "user", "login", "login_username", "email", "url", "login_uri", "uri", "website", "title"}
)
_CSV_HEADER_CELL = re.compile(
    r"(?im)(?:^|,)[^\S\n]*\"?(?:password|passwd|pwd|login_password|totp|login_totp)\"?[^\S\n]*(?=,|\r?$)"
)
_CSV_CELL = re.compile(r'[^\S\n]*(?:"(?P<q>(?:[^"\n]|"")*)"|(?P<b>[^,\n]*))[^\S\n]*(?:,|(?=\r?\n)|$)')


def _csv_cells(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The cells of the line text[start:end] as (start, end) of their values, quotes left out."""
    cells: list[tuple[int, int]] = []
    pos = start
    while pos <= end:
        match = _CSV_CELL.match(text, pos, end)
        if match is None:
            return []
        group = "q" if match.group("q") is not None else "b"
        cells.append(match.span(group))
        if match.end() == pos or match.end() >= end and not text[match.end() - 1 : match.end()] == ",":
            break
        pos = match.end()
    return cells


def csv_password_columns(text: str, depth: int) -> Iterator[Span]:
    priority = _PRIORITY["password"]
    headers: set[int] = set()
    for match in _CSV_HEADER_CELL.finditer(text):
        line_start = text.rfind("\n", 0, match.start()) + 1
        if line_start in headers:
            continue
        headers.add(line_start)
        line_end = text.find("\n", line_start)
        line_end = len(text) if line_end < 0 else line_end
        header = _csv_cells(text, line_start, line_end)
        if len(header) < 3:
            continue
        names = [text[s:e].strip().lower() for s, e in header]
        if not _CSV_LOGIN_COLUMNS.intersection(names):
            continue  # a list of words in prose ("we store name, email, password"), not an export's header
        columns = [i for i, name in enumerate(names) if name in _CSV_SECRET_COLUMNS]
        row_start = line_end + 1
        while row_start < len(text):
            row_end = text.find("\n", row_start)
            row_end = len(text) if row_end < 0 else row_end
            cells = _csv_cells(text, row_start, row_end)
            if len(cells) != len(header):
                break
            for i in columns:
                s, e = cells[i]
                value = text[s:e]
                if value.strip() and not any(c.isspace() for c in value) and not _benign(value):
                    yield s, e, priority
            row_start = row_end + 1
