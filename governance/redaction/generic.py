"""Detectors that need no vendor format: what the surrounding text says a value is, or how a file lays it out.

* A random-looking token on a line that names a secret (`key`, `token`, `secret`, `password`, `auth` and
  their equivalents in other languages), before or after it, or on the line before when the token stands
  alone on its line ("Here is the key:" then the key). Qualified names that are not secrets (`public key`,
  `primary key`, `idempotency key`, `key id`) do not count; a token that is a hash, an id, a path or base64
  of plain text is no credential.
* Credentials passed by position: `new PDO(dsn, 'user', 'pw')`, `mysqli_connect(host, user, pw)`,
  `.login('user', 'pw')`, `auth=('user', 'pw')`.
* Credential files and connect strings: `.pgpass` lines (`host:port:db:user:password`), Oracle's
  `user/password@host`, space-separated directives (`requirepass x`, `masterauth x`), `-w x` after an LDAP
  client.
* Password hashes in crypt formats (`$2y$10$…`, `$argon2id$…`, `$6$…`, `{SSHA}…`, Django's `pbkdf2_sha256$…`).
* Short numeric secrets right after the word naming them: PIN, CVV/CVC, TAN, one-time codes.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Iterator
from functools import lru_cache
from urllib.parse import unquote

from governance.redaction.kinds import _PRIORITY, Span
from governance.redaction.names import (
    _benign,
    _looks_random,
    _name_class,
    _password_like,
    _strong_password_like,
)

__all__ = [
    "bitcoin_wif",
    "plain_base64",
    "quoted_pairs",
    "sql_passwords",
    "terraform_state_passwords",
    "call_credentials",
    "setter_calls",
    "directives",
    "hex_private_keys",
    "login_arguments",
    "near_word_tokens",
    "net_use",
    "oracle_userpass",
    "password_hashes",
    "pgpass_lines",
    "short_codes",
    "secure_strings",
    "url_tokens",
    "wifi_qr",
    "yaml_blocks",
]

# ---------------------------------------------------------------------------------------------------------
# random tokens near a word naming a secret

# a word naming a secret, found in the lower-cased line; Latin words stand alone or as a part of an
# identifier (`api_key`, `x-api-key`, `add-authtoken`, `key1`), not inside another word (`keyring`, `monkey`)
_SECRET_WORD = re.compile(
    r"(?<![a-z])(?:api[-_ ]?key|apikey|access[-_ ]?key|secret[-_ ]?key|private[-_ ]?key|auth[-_ ]?token"
    r"|authtoken|access[-_ ]?token|refresh[-_ ]?token|keys?|tokens?|secrets?|passwords?|passwd|pwd"
    r"|passphrase|credentials?|creds|auth|bearer|license[-_ ]?key|licence[-_ ]?key|signing[-_ ]?key"
    r"|master[-_ ]?key|sas|pat|wif|privkey|importprivkey|dumpprivkey|psk|seed|mnemonic|cookie"
    r"|session[-_ ]?(?:id|key|token)?|sid"
    r"|schlüssel|kennwort|passwort|clave|contraseña|clé|jeton|mot de passe|chave|senha|chiave"
    r"|zugriffstoken|zugangstoken|sitzungstoken|zugriffsschlüssel|accesstoken|idtoken"
    r"|ключ|токен|пароль|секрет)(?:\d{0,2})(?![a-zà-ÿа-я])"
    r"|密钥|秘钥|私钥|密码|密碼|金鑰|令牌|口令|トークン|キー|鍵|パスワード|シークレット|토큰|키|비밀|암호|시크릿"
)
_SECRET_WORD_ANY = re.compile(_SECRET_WORD.pattern, re.IGNORECASE)
# qualified names that are not secrets: the word before or after says so
_NOT_SECRET = re.compile(
    r"(?:public|pub|publishable|primary|foreign|partition|sort|cache|idempotency|object|row|dedup|routing"
    r"|shard|lookup|composite|unique|natural|surrogate|map|dict|hash|index|sharding|group|ssh-rsa|ssh-ed25519"
    r"|host|signing-key-id|next|page|continuation|pagination|csrf|xsrf|max|min|num|input|output)"
    r"[-_ ]?(?:key|keys|token|tokens)(?![a-z])"
    r"|(?:key|token)[-_ ]?(?:id|ids|ttl|type|name|count|length|size|usage|limit|expiry|prefix|fingerprint"
    r"|alias|file|path|url|endpoint)(?![a-z])"
    r"|公钥|公開鍵|공개\s?키|öffentlicher|clave pública|clé publique|chave pública|chiave pubblica|открытый"
)
# what marks a line as about public material or hashes whatever words it also holds
_PUBLIC_LINE = re.compile(
    r"(?i)-----BEGIN (?:[A-Z ]*PUBLIC KEY|CERTIFICATE)|ssh-(?:rsa|ed25519|dss)|ecdsa-sha2|sk-ssh"
    r"|\bage1[0-9a-z]{20,}|\bpk_(?:live|test)_|publishable|\bintegrity\b|\bchecksum\b|\bdigest\b"
)
# a run of token characters; `=` only as base64 padding at its end (`name=value` is two runs)
_TOKEN = re.compile(r"(?<![A-Za-z0-9_+/.~%-])[A-Za-z0-9_+/.~%-]{16,}(?:={1,3}(?![A-Za-z0-9]))?")
_WORDY = re.compile(r"[A-Z]?[a-z]{2,}|[A-Z]{2,}(?![a-z])|\d{1,4}|[_.\-/]")
_KNOWN_SHAPE = re.compile(
    r"(?i)(?:sha(?:1|224|256|384|512)|md5|blake2b?|h1)[-:_][A-Za-z0-9+/=_-]+"  # lockfile and SRI hashes
    r"|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"  # a bare UUID
    r"|[0-7][0-9A-HJKMNP-TV-Z]{25}"  # ULID
    r"|0x[0-9a-f]{40}|0x[0-9a-f]{8,16}"  # an Ethereum address, a PGP key id
    r"|(?:bc1|tb1)[0-9a-z]{25,87}|[13][1-9A-HJ-NP-Za-km-z]{25,34}"  # Bitcoin addresses
    # Stripe's object ids (requests, charges, customers, events…): ids, never credentials
    r"|(?:req|ch|cus|pi|pm|evt|acct|sub|in|ii|price|prod|txn|py|po|re|seti|src|card|ba|ipi|si|file|link|sess"
    r"|cs_(?:test|live)|pi_\w+_secret)_[A-Za-z0-9]{8,}"
    r"|[a-z]+(?:[-_.][a-z]+)+"  # words joined by separators
    r"|(?:[a-z0-9-]+\.)+[a-z]{2,}(?:/\S*)?"  # a host name, maybe with a path
)
# the value of a name that says it is an id, a digest or a version
_ID_NAME_BEFORE = re.compile(
    r"(?i)(?:\b|_)(?:id|ids|uuid|guid|kid|trace|span|request|correlation|hash|sha\d*|digest|etag|checksum|version"
    r"|commit|ref|fingerprint|nonce|salt|iv)[\"']?[^\S\n]*[:=][^\S\n]*[\"']?$|(?<=[a-z])Id[\"']?[^\S\n]*[:=][^\S\n]*[\"']?$"
)
_HEX_DIGEST = re.compile(r"[0-9a-fA-F]{32,}")
# words that say a hex string is a digest or a revision, not a key
_DIGEST_WORDS = re.compile(
    r"(?i)\b(?:commit|sha\w*|hash\w*|digest|checksum|revision|rev|etag|fingerprint|md5|revert\w*|merge\w*"
    r"|cherry-pick\w*|blob|tree|head|branch|tag)\b"
)


def _path_like(token: str) -> bool:
    """`src/app/main.py`, `v1/users/42`: segments that are words, numbers or names, none random."""
    if "/" not in token:
        return False
    return all(len(part) < 16 or not _looks_random(part) for part in token.split("/"))


def _identifier_like(token: str) -> bool:
    """A name made of words (`getUserAccessTokenForTenant`, `PROD_DB_READ_REPLICA_2`), not random."""
    pieces = _WORDY.findall(token)
    if "".join(pieces) != token:
        return False
    words = [p for p in pieces if len(p) >= 2 and p.isalpha()]
    return len(words) >= 2 and sum(len(w) for w in words) >= len(token) * 0.7


_CREDENTIAL_PAIR = re.compile(r"(?i)pass|secret|token|key|auth|pwd|credential|(?<!\s)\S*:[^\s/]{6,}(?:\s|$)")


def plain_base64(token: str) -> bool:
    """Base64 (standard or URL-safe) of printable text: encoded prose or config, no key material."""
    body = token.rstrip("=")
    if len(body) < 16 or len(body) % 4 == 1:
        return False
    try:
        raw = base64.urlsafe_b64decode(body.replace("+", "-").replace("/", "_") + "=" * (-len(body) % 4))
        decoded = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return False
    # words with spaces between them, or a structure of them (`{"logLevel": "info"}`); `user:password`, the
    # shape of Basic and Docker credentials, has no space and stays random
    if " " not in decoded.strip() or _CREDENTIAL_PAIR.search(decoded):
        return False
    return sum(c.isalnum() or c in " .,:;-_/\n\"'{}[]=" for c in decoded) >= len(decoded) * 0.9


@lru_cache(maxsize=4096)
def _random_token(token: str) -> bool:
    token = token.strip(".=-~%")
    if len(token) < 16 or not _MIXED.search(token):
        return False
    if _KNOWN_SHAPE.fullmatch(token) or not _looks_random(token, hex_ok=True):
        return False
    return not (_identifier_like(token) or plain_base64(token) or _path_like(token))


# a random token has a digit, or upper- and lower-case letters
_MIXED = re.compile(r"\d|[A-Z][^A-Z]*[a-z]|[a-z][^a-z]*[A-Z]")


def _names_secret(segment: str) -> bool:
    lower = segment.lower()
    for word in _SECRET_WORD.finditer(lower):
        around = lower[max(0, word.start() - 16) : word.end() + 16]
        if not _NOT_SECRET.search(around):
            return True
    return False


def _line_at(text: str, index: int) -> tuple[int, int]:
    start = text.rfind("\n", 0, index) + 1
    end = text.find("\n", index)
    return start, len(text) if end < 0 else end


# a line that says nothing: blank, or a Markdown code fence (a key is often shown in a block under its
# heading)
_EMPTY_LINE = re.compile(r"[^\S\n]*(?:```\w*|~~~\w*)?[^\S\n]*")


def _line_above(text: str, start: int, skip: int = 3) -> str:
    """The nearest line above the line starting at `start` that says something, passing at most `skip`
    blank or code-fence lines."""
    end = start - 1
    for _ in range(skip + 1):
        if end < 0:
            return ""
        line_start = text.rfind("\n", 0, end) + 1
        line = text[line_start:end]
        if not _EMPTY_LINE.fullmatch(line):
            return line
        end = line_start - 1
    return ""


# a line of prose: none of the characters code, markup and data are written with
_PROSE_LINE = re.compile(r"[^=(){}\[\]<>\"'`;|\\$@*]*")
_PLAIN_TOKEN = re.compile(r"[A-Za-z0-9]{20,}")


def _paragraph_token(token: str, line: str, hexadecimal: bool) -> bool:
    """A long random token of letters and digits (both cases and a digit, not hex) in a line of prose: it
    may be named by a heading or a subject above its paragraph."""
    return (
        not hexadecimal
        and _PLAIN_TOKEN.fullmatch(token) is not None
        and any(c.isdigit() for c in token)
        and any(c.isupper() for c in token)
        and any(c.islower() for c in token)
        and _PROSE_LINE.fullmatch(line) is not None
    )


def _encoded_path(token: str) -> bool:
    """A percent-encoded path of plain segments (`%2Fauto%2Fstorage%2Fgoog4_request`), not one random token;
    a segment that is random itself (a key whose `/` was encoded) still counts."""
    if "%2" not in token.upper():
        return False
    segments = [s for s in unquote(token).split("/") if s]
    return len(segments) > 1 and not any(_random_token(s) for s in segments)


def near_word_tokens(text: str, depth: int) -> Iterator[Span]:
    """Random tokens that a word naming a secret stands beside: found token first (random tokens are rare in
    ordinary text, so most texts cost one scan), then the words around it are read."""
    priority = _PRIORITY["generic_secret"]
    lines: dict[int, tuple[str, bool, bool]] = {}  # line start -> (line, public, about digests)
    for match in _TOKEN.finditer(text):
        token = match.group()
        if not _random_token(token) or _encoded_path(token):
            continue
        start, end = _line_at(text, match.start())
        if start not in lines:
            line = text[start:end]
            lines[start] = (line, bool(_PUBLIC_LINE.search(line)), bool(_DIGEST_WORDS.search(line)))
        line, public, digests = lines[start]
        if public:
            continue
        hexadecimal = _HEX_DIGEST.fullmatch(token) is not None
        if hexadecimal and digests:
            continue
        at = match.start() - start
        before = line[max(0, at - 80) : at]
        if _ID_NAME_BEFORE.search(before):
            continue  # `trace_id=<hex>`, `"kid": "<…>"`: the name says it is an id
        if hexadecimal and len(token) in (40, 64):
            # a SHA's length in hex is a credential only right after the word naming it ("API key: <hex>")
            found = _names_secret(line[max(0, at - 24) : at])
        else:
            found = _names_secret(before) or _names_secret(line[at + len(token) : at + len(token) + 40])
        alone = token == line.strip().strip("\"'`,;")
        if not found and start > 0 and (alone or _paragraph_token(token, line, hexadecimal)):
            # the token alone on its line, under a line naming it ("Here is the key:" then the key), maybe
            # with blank lines or a code fence between (a heading, then the key in a block); or a long
            # random token in a paragraph under a heading or a subject naming it ("Rotate partner webhook
            # secret", a blank line, "Old value <token> was pasted in #general")
            previous = _line_above(text, start)
            if not alone and _PROSE_LINE.fullmatch(previous) is None:
                continue
            found = (
                _names_secret(previous[-80:])
                and not _PUBLIC_LINE.search(previous)
                and not (hexadecimal and _DIGEST_WORDS.search(previous))
            )
        if found:
            yield match.start(), match.end(), priority


# ---------------------------------------------------------------------------------------------------------
# credentials passed by position

# the name of a call that takes credentials by position, just before its `(` (found in the lower-cased text)
_CALL_NAME = re.compile(
    r"(?:\bnew[^\S\n]+pdo|\bmysqli?(?:_connect|_real_connect)?|\bpg_connect|connect|login|\bauth"
    r"|credentials?|basicauth|digestauth|networkcredential|passwordauthentication|searchclient\.create"
    r"|algoliasearch|initializeapp|getconnection)[^\S\n]*(?:=[^\S\n]*)?$"
)
# a call named after the secret it sets, with one string literal: `.password("x")` (Rust's and Java's
# builders), `setPassword("x")`, `withToken("x")`; a getter or a check takes a name or a candidate
# (`getPassword("db")`, `check_password(…)`) and is not one of these names
_SETTER_CALL = re.compile(
    r"(?<![\w$])(?P<name>(?i:(?:set_?|with_?|use_?)?(?:password|passwd|pwd|secret|token|api_?key|access_?token"
    r"|auth_?token|client_?secret|secret_?key|bearer_?token)))\([^\S\n]*(?P<q>[\"'])(?P<v>[^\"'\n\\]{6,200})(?P=q)"
    r"[^\S\n]*\)"
)
# calls whose password is one argument among others, by its position: Go's `smtp.PlainAuth(identity, user,
# password, host)`, MongoDB's `db.changeUserPassword(user, password)`
_PASSWORD_ARGUMENT = {"plainauth": 2, "changeuserpassword": 1}
_POSITIONAL_CALL = re.compile(r"(?i)\b(?P<name>PlainAuth|changeUserPassword)\((?P<args>[^()\n]{0,300})\)")
_ARGUMENT = re.compile(r"[^\S\n]*(?:\"(?P<dq>[^\"\n]*)\"|'(?P<sq>[^'\n]*)'|[^,]*)[^\S\n]*(?:,|$)")


def setter_calls(text: str, depth: int) -> Iterator[Span]:
    """The literal given to a setter named after a secret, and the password argument of a call that takes
    it by position."""
    priority = _PRIORITY["password"]
    for match in _SETTER_CALL.finditer(text):
        value = match.group("v")
        if " " in value or _benign(value):
            continue
        # a password setter's literal is the password; a token's or a key's must look like one
        if match.group("name").lower().endswith(("password", "passwd", "pwd")) or _looks_random(value):
            yield match.start("v"), match.end("v"), priority
    for match in _POSITIONAL_CALL.finditer(text):
        wanted = _PASSWORD_ARGUMENT[match.group("name").lower()]
        pos, end = match.start("args"), match.end("args")
        for index in range(wanted + 1):
            argument = _ARGUMENT.match(text, pos, end)
            if argument is None or argument.end() == pos:
                break
            if index == wanted:
                group = "dq" if argument.group("dq") is not None else "sq"
                value = argument.group(group)
                if value is not None and value and not _benign(value):
                    yield argument.start(group), argument.end(group), priority
            pos = argument.end()


# a call that signs or checks with a shared secret: `jwt.sign(payload, "…")`, `jwt.encode(claims, "…", …)`,
# `crypto.createHmac("sha256", "…")`, `hmac.new(b"…", …)`: any of its literals may be the secret
_SIGN_CALL = re.compile(
    r"(?:\b(?:jwt|jws|jose|jsonwebtoken)\.(?:sign|encode|verify|decode)|createhmac|\bhmac\.new)$"
)
_STRING = re.compile(r"\"(?P<dq>[^\"\n]*)\"|'(?P<sq>[^'\n]*)'")


# a client set up with a random string: `messagebird.initClient("…")`, `algoliasearch("APPID", "…")`
_CLIENT_CALL = re.compile(
    r"(?:client|init|sdk|api|auth|configure|setup|set_?key|credential|login|token)\w*\W{0,2}$"
)


def call_credentials(text: str, depth: int) -> Iterator[Span]:
    """The last string literal of a call that takes credentials by position, when it looks like a password
    (`new PDO($dsn, 'shop', 'qwGd*l0THMyg7t37')`, `auth=('bob', 'Zx8!q')`, `login("u", "p4ss!")`), and a
    random literal passed to a call that sets up a client (`messagebird.initClient("…")`)."""
    priority = _PRIORITY["password"]
    lower = text.lower()
    if len(lower) != len(text):
        return
    index = lower.find("(")
    while index >= 0:
        following = lower.find("(", index + 1)
        named = _CALL_NAME.search(lower, max(0, index - 40), index) is not None
        signing = not named and _SIGN_CALL.search(lower, max(0, index - 40), index) is not None
        named = named or signing
        client = not named and _CLIENT_CALL.search(lower, max(0, index - 40), index) is not None
        if named or client:
            close = text.find(")", index, index + 300)
            args = text[index + 1 : close] if close > 0 else ""
            literals = list(_STRING.finditer(args)) if "\n" not in args else []
            chosen = literals if client or signing else literals[-1:] if len(literals) >= 2 else []
            for last in chosen:
                group = "dq" if last.group("dq") is not None else "sq"
                value = last.group(group)
                if signing:
                    ok = not _benign(value) and (_strong_password_like(value) or _looks_random(value))
                elif client:
                    ok = len(value) >= 20 and _random_token(value)
                else:
                    ok = (
                        bool(value) and not _benign(value) and (_password_like(value) or _looks_random(value))
                    )
                if ok:
                    yield index + 1 + last.start(group), index + 1 + last.end(group), priority
        index = following


# `wandb login <key>`, `huggingface-cli login --token <token>`: a random argument after a login subcommand
_LOGIN_ARG = re.compile(
    r"\blogin(?:[^\S\n]+--?[\w-]+(?:=\S+)?)*[^\S\n]+(?:--?[\w-]+[=\s])?(?P<v>[\w.~+/-]{20,}=*)"
)


def login_arguments(text: str, depth: int) -> Iterator[Span]:
    priority = _PRIORITY["generic_secret"]
    for match in _LOGIN_ARG.finditer(text):
        if _random_token(match.group("v")):
            yield match.start("v"), match.end("v"), priority


# ---------------------------------------------------------------------------------------------------------
# credential files and connect strings

# hostname:port:database:username:password (PostgreSQL's password file)
_PGPASS = re.compile(r"(?m)^[^\S\n]*[\w.*-]+:(?:\d{1,5}|\*):[\w.*-]+:[\w.@*-]+:(?P<v>[^\s:][^\n]*?)[^\S\n]*$")


def pgpass_lines(text: str, depth: int) -> Iterator[Span]:
    priority = _PRIORITY["password"]
    for match in _PGPASS.finditer(text):
        value = match.group("v")
        if not _benign(value):
            yield match.start("v"), match.end("v"), priority


# scott/tiger@host (Oracle's connect strings: JDBC thin, sqlplus, Data Pump, RMAN)
_ORACLE = re.compile(
    r"(?i)(?:jdbc:oracle:[a-z]+:|\bsqlplus(?:[^\S\n]+-[a-z]+)*[^\S\n]+|\b(?:expdp|impdp|rman"
    r"|sqlldr)[^\S\n]+(?:[a-z]+=)?|\b(?:userid|target)[^\S\n]*=?[^\S\n]*)"
    r"[\"']?[A-Za-z][\w$#]{0,60}/(?P<v>[^\s/@\"']{3,})@"
)


def oracle_userpass(text: str, depth: int) -> Iterator[Span]:
    priority = _PRIORITY["password"]
    for match in _ORACLE.finditer(text):
        if not _benign(match.group("v")):
            yield match.start("v"), match.end("v"), priority


# `requirepass x`, `masterauth x`, `password x` alone on a line (redis.conf, sshd-style, .netrc lines);
# `-w x` / `-W`-less after an LDAP client (`ldapsearch -D cn=admin -w x`)
# the value runs to the end of the line or to a comment after a space (`#` inside a value is part of it)
_DIRECTIVE = re.compile(
    r"[^\S\n]*(?P<name>[A-Za-z][\w.-]{1,60})[^\S\n]+(?P<v>[^\s;]+)(?:[^\S\n]+[#;][^\n]*)?[^\S\n]*"
)
_DIRECTIVE_NAMES = frozenset(
    {"requirepass", "masterauth", "masterpassword", "authpass", "rootpw", "bindpw", "secret", "psk"}
)
_LDAP = re.compile(
    r"\bldap(?:search|add|modify|delete|passwd|whoami|compare|modrdn|exop)\b[^\n|;&]*?[^\S\n]-w[^\S\n]+"
    r"(?:\"(?P<dq>[^\"\n]+)\"|'(?P<sq>[^'\n]+)'|(?P<bare>[^\s\"']+))"
)


_DIRECTIVE_ROOT = re.compile(r"pass|pw|auth|secret|psk|token|key")


def directives(text: str, depth: int) -> Iterator[Span]:
    priority = _PRIORITY["password"]
    seen: set[int] = set()
    for root in _DIRECTIVE_ROOT.finditer(text.lower() if text.isascii() else text):
        start, end = _line_at(text, root.start())
        if start in seen:
            continue
        seen.add(start)
        match = _DIRECTIVE.fullmatch(text, start, end)
        if match is None:
            continue
        name = match.group("name")
        value = match.group("v")
        if _benign(value):
            continue
        # "Passwort vergessen?" is a line of prose: a directive's value looks like a password
        plain = value.rstrip(".,;:!?")
        if not (_password_like(plain) or _looks_random(plain)):
            continue
        if name.lower() in _DIRECTIVE_NAMES or _name_class(name) == 2:
            yield match.start("v"), match.end("v"), priority
    for match in _LDAP.finditer(text):
        group = next(g for g in ("dq", "sq", "bare") if match.group(g) is not None)
        if not _benign(match.group(group)):
            yield match.start(group), match.end(group), priority


# ---------------------------------------------------------------------------------------------------------
# password hashes: whoever reads one can try passwords against it offline

_HASH = re.compile(
    r"\$(?:2[abxy]?)\$\d{2}\$[./A-Za-z0-9]{53}"  # bcrypt
    r"|\$argon2(?:id|i|d)\$v=\d+\$m=\d+,t=\d+,p=\d+\$[A-Za-z0-9+/]{8,}\$[A-Za-z0-9+/]{16,}"
    r"|\$(?:1|5|6|apr1|y|gy|7)\$(?:rounds=\d+\$)?[./A-Za-z0-9]{1,64}\$[./A-Za-z0-9]{16,}"  # crypt(3)
    r"|\{(?:SSHA|SSHA256|SSHA512|SHA|SMD5|PBKDF2[\w-]*|CRYPT)\}[A-Za-z0-9+/.$=]{16,}"  # LDAP userPassword
    r"|\b(?:pbkdf2_sha(?:1|256)|argon2|bcrypt_sha256|scrypt)\$[A-Za-z0-9$+/=.,_-]{30,}"  # Django
    r"|\bscrypt:\d+:\d+:\d+\$[A-Za-z0-9]+\$[0-9a-f]{32,}"  # Werkzeug
)


def password_hashes(text: str, depth: int) -> Iterator[Span]:
    priority = _PRIORITY["password"]
    for match in _HASH.finditer(text):
        yield match.start(), match.end(), priority


# ---------------------------------------------------------------------------------------------------------
# PIN, CVV and one-time codes: short digits, a secret only right after the word naming them

# matched in the lower-cased text
_SHORT_CODE = re.compile(
    r"(?<![a-z])(?:pin(?:[- ]?(?:code|nummer|number|no\.?))?|cvv2?|cvc2?|cid|csc|otp"
    r"|security[ ]code|card[ ]verification[ ](?:value|code)|geheimzahl|prüfnummer|kartenprüfnummer"
    r"|código[ ](?:pin|de[ ]seguridad|cvv)|code[ ](?:pin|de[ ]sécurité|confidentiel)|cryptogramme"
    r"|codice[ ](?:pin|di[ ]sicurezza)|código[ ]de[ ]segurança|暗証番号|セキュリティコード|安全码|验证码"
    r"|보안[ ]?코드|пин(?:-код)?|cvv-код)"
    # "PIN for the corporate card: 7391"
    r"(?![a-z])(?:[^\S\n]+(?:for|of|für|de|du|del|da|di|для)[^\S\n]+[^:=\n]{1,40}?(?=[:=]))?"
    r"[^\S\n]*(?:[:=：#]|is|ist|lautet|es|est|é|è|は|是|:?[^\S\n]*-)?[^\S\n]*[\"'`]?"
    r"(?P<v>\d{3,8})(?![\d/.:,-]\d)(?!\d)"
)
_SHORT_CODE_ANY = re.compile(_SHORT_CODE.pattern, re.IGNORECASE)


def short_codes(text: str, depth: int) -> Iterator[Span]:
    priority = _PRIORITY["pin"]
    lower = text.lower()
    matches = _SHORT_CODE.finditer(lower) if len(lower) == len(text) else _SHORT_CODE_ANY.finditer(text)
    for match in matches:
        yield match.start("v"), match.end("v"), priority


# the Wi-Fi QR code payload: `WIFI:T:WPA;S:<ssid>;P:<password>;;`
_WIFI_QR = re.compile(r"WIFI:(?:[TSHIE]:(?:\\.|[^;\\])*;)*?P:(?P<v>(?:\\.|[^;\\\n])+);")


def wifi_qr(text: str, depth: int) -> Iterator[Span]:
    priority = _PRIORITY["password"]
    for match in _WIFI_QR.finditer(text):
        yield match.start("v"), match.end("v"), priority


# a Bitcoin private key in Wallet Import Format: Base58Check, version 0x80, the checksum proves it is one
_WIF = re.compile(
    r"(?<![1-9A-HJ-NP-Za-km-z])(?:5[HJK][1-9A-HJ-NP-Za-km-z]{49}|[KLc][1-9A-HJ-NP-Za-km-z]{51})"
    r"(?![1-9A-HJ-NP-Za-km-z])"
)
_B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def _base58check(value: str) -> bytes | None:
    number = 0
    for char in value:
        number = number * 58 + _B58.index(char)
    raw = number.to_bytes((number.bit_length() + 7) // 8, "big")
    body, checksum = raw[:-4], raw[-4:]
    if hashlib.sha256(hashlib.sha256(body).digest()).digest()[:4] != checksum:
        return None
    return body


def bitcoin_wif(text: str, depth: int) -> Iterator[Span]:
    priority = _PRIORITY["private_key"]
    for match in _WIF.finditer(text):
        body = _base58check(match.group())
        if body is not None and body[:1] in (b"\x80", b"\xef") and len(body) in (33, 34):
            yield match.start(), match.end(), priority


# a YAML block scalar under a secret name: `password: >-` and the value on the next, deeper line
_YAML_BLOCK = re.compile(
    r"(?m)^(?P<indent>[^\S\n]*)(?:-[^\S\n]+)?[\"']?(?P<name>[\w.-]+)[\"']?:[^\S\n]*[|>][-+]?\d?[^\S\n]*\r?\n"
    r"(?P=indent)[^\S\n]+(?P<v>\S[^\n]*)"
)


def yaml_blocks(text: str, depth: int) -> Iterator[Span]:
    for match in _YAML_BLOCK.finditer(text):
        value = match.group("v").rstrip()
        cls = _name_class(match.group("name"))
        if (cls == 2 and not _benign(value)) or (cls == 1 and _looks_random(value)):
            start = match.start("v")
            yield start, start + len(value), _PRIORITY["password" if cls == 2 else "generic_secret"]


# PowerShell: `ConvertTo-SecureString "pw" -AsPlainText`; `-Password (ConvertTo-SecureString 'pw' …)`
_SECURE_STRING = re.compile(
    r"(?i)ConvertTo-SecureString[^\S\n]+(?:-String[^\S\n]+)?(?:\"(?P<dq>[^\"\n]+)\"|'(?P<sq>[^'\n]+)')"
    r"(?=[^\n]*-AsPlainText)"
)
# a URL whose userinfo is a token alone: `https://<token>@github.com/acme/repo.git`, or a token with GitHub's
# documented stand-in password (`https://<token>:x-oauth-basic@github.com/…`)
_URL_TOKEN = re.compile(
    r"\b[a-z][a-z0-9+.-]*://(?P<v>[A-Za-z0-9_.~-]{20,})(?::x-oauth-(?:basic|token))?@[A-Za-z0-9.-]+"
)


def secure_strings(text: str, depth: int) -> Iterator[Span]:
    for match in _SECURE_STRING.finditer(text):
        group = "dq" if match.group("dq") is not None else "sq"
        if not _benign(match.group(group)):
            yield match.start(group), match.end(group), _PRIORITY["password"]


def url_tokens(text: str, depth: int) -> Iterator[Span]:
    for match in _URL_TOKEN.finditer(text):
        if _random_token(match.group("v")):
            yield match.start("v"), match.end("v"), _PRIORITY["url_credentials"]


# ---------------------------------------------------------------------------------------------------------
# a quoted name and its quoted value side by side: `define('DB_PASSWORD', 'x')`, `config.set("api_key", "x")`,
# `("client_secret", "x")`: the name says secret, the value is judged as an assignment's is

_QUOTED_PAIR = re.compile(
    r"(?P<q>[\"'])(?P<name>[A-Za-z_][A-Za-z0-9_.-]{1,60})(?P=q)[^\S\n]*,[^\S\n]*"
    r"(?P<vq>[\"'])(?P<v>(?:(?!(?P=vq))[^\n\\]){4,200})(?P=vq)"
)
_QUOTED_NAME_ROOT = re.compile(r"(?i)pass|pwd|secret|key|token|auth|cred|salt|psk")
_QUOTED_NAME_NOT = re.compile(r"(?i)public|pub_|publishable|_id$|_ids$|keyid|name$|user|_url$|_path$|_file$")


def quoted_pairs(text: str, depth: int) -> Iterator[Span]:
    priority = _PRIORITY["password"]
    for match in _QUOTED_PAIR.finditer(text):
        name, value = match.group("name"), match.group("v")
        if not _QUOTED_NAME_ROOT.search(name) or _QUOTED_NAME_NOT.search(name):
            continue
        if _benign(value) or " " in value.strip() and not _looks_random(value.replace(" ", "")):
            continue
        if _strong_password_like(value) or _looks_random(value):
            yield match.start("v"), match.end("v"), priority


# SQL that sets a password: MySQL `IDENTIFIED BY 'x'` (and `IDENTIFIED WITH plugin BY 'x'`), PostgreSQL and
# T-SQL `PASSWORD 'x'`, `PASSWORD = N'x'`
_SQL_PASSWORD = re.compile(
    r"(?i)\b(?:identified(?:[^\S\n]+with[^\S\n]+\w+)?[^\S\n]+by(?:[^\S\n]+password)?|password[^\S\n]*=?)"
    r"[^\S\n]*N?'(?P<v>[^'\n]{4,200})'"
)
# Oracle's `CREATE USER u IDENTIFIED BY "x"`, or a bare `… IDENTIFIED BY x` (`ALTER USER`, a database link's
# `CONNECT TO u IDENTIFIED BY x USING …`): a bare value of six characters or more, no bind variable
# (`:pw`, `&pw`)
_SQL_PASSWORD_ORACLE = re.compile(
    r"(?i)\b(?:(?:create|alter)[^\S\n]+(?:user|role)|connect[^\S\n]+to)[^\S\n]+[\w$#.\"@-]+"
    r"[^\S\n]+identified[^\S\n]+by[^\S\n]+(?:\"(?P<q>[^\"\n]{4,200})\"|(?P<v>[^\s;'\":&?%$][^\s;'\"]{3,127})(?=[\s;]|$))"
)


# Terraform state keeps a generated password in clear: the `result` of a `random_password` resource
_TF_RANDOM_PASSWORD = re.compile(
    r"\"type\":[^\S\n]*\"random_password\"[^{}]*?\{(?:[^{}]|\{[^{}]*\})*?\"attributes\":[^\S\n]*\{[^{}]*?"
    r"\"result\":[^\S\n]*\"(?P<v>(?:\\.|[^\"\\\n]){4,})\""
)


def terraform_state_passwords(text: str, depth: int) -> Iterator[Span]:
    priority = _PRIORITY["password"]
    for match in _TF_RANDOM_PASSWORD.finditer(text):
        yield match.start("v"), match.end("v"), priority


def sql_passwords(text: str, depth: int) -> Iterator[Span]:
    priority = _PRIORITY["password"]
    for match in _SQL_PASSWORD.finditer(text):
        value = match.group("v")
        if not _benign(value) and not _looks_like_prose(value):
            yield match.start("v"), match.end("v"), priority
    for match in _SQL_PASSWORD_ORACLE.finditer(text):
        group = "q" if match.group("q") is not None else "v"
        value = match.group(group)
        if _benign(value) or _looks_like_prose(value) or value.upper() in ("VALUES", "PASSWORD"):
            continue
        if group == "q" or len(value) >= 6:  # the syntax says it is the password
            yield match.start(group), match.end(group), priority


def _looks_like_prose(value: str) -> bool:
    return value.count(" ") >= 2


# `net use Z: \\srv\share Pw /user:DOMAIN\bob` or `… /user:DOMAIN\bob Pw`: the one argument that is
# neither a drive, a share, a switch nor `*` (which prompts) is the password
_NET_USE = re.compile(r"(?i)\bnet[^\S\n]+use\b(?P<args>[^\n]*)")
_NET_USE_ARG = re.compile(r"[^\s\"]+|\"[^\"\n]*\"")


def net_use(text: str, depth: int) -> Iterator[Span]:
    priority = _PRIORITY["password"]
    for match in _NET_USE.finditer(text):
        base = match.start("args")
        for arg in _NET_USE_ARG.finditer(match.group("args")):
            value = arg.group().strip('"')
            # `*` alone prompts; a password may start with one
            if value[:1] in ("\\", "/", "$", "%") or value == "*" or value.endswith(":") or "\\" in value:
                continue
            if _strong_password_like(value) or _looks_random(value):
                offset = 1 if arg.group().startswith('"') else 0
                yield base + arg.start() + offset, base + arg.start() + offset + len(value), priority


# an Ethereum (any EVM chain) private key: `0x` and 64 hex digits on a line that names an account or a key
# (`accounts: ["0x…"]` in a Hardhat config, `PRIVATE_KEY=0x…`, `new Wallet("0x…")`); a transaction or block
# hash has the same shape, and a line that names one is left alone
_HEX_KEY = re.compile(r"(?<![0-9A-Za-z])0x(?P<v>[0-9a-fA-F]{64})(?![0-9A-Za-z])")
_HEX_KEY_LINE = re.compile(r"(?i)account|priv|key|wallet|signer|deployer|secret|\bpk\b")
_HEX_HASH_LINE = re.compile(r"(?i)\btx|transaction|hash|block|root|topic|digest|commit|receipt|salt|nonce")


def hex_private_keys(text: str, depth: int) -> Iterator[Span]:
    priority = _PRIORITY["private_key"]
    for match in _HEX_KEY.finditer(text):
        begin = text.rfind("\n", 0, match.start()) + 1
        end = text.find("\n", match.end())
        line = text[begin : end if end >= 0 else len(text)]
        if _HEX_KEY_LINE.search(line) and not _HEX_HASH_LINE.search(line):
            yield match.start(), match.end(), priority
