"""Names that hold secrets and values that look like them (or like placeholders, prose and ids)."""

from __future__ import annotations

import re

from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString, HexHighEntropyString
from detect_secrets.plugins.keyword import DENYLIST as KEYWORD_DENYLIST

__all__ = ["is_secret_name"]

_ENTROPY = Base64HighEntropyString()
_HEX_ENTROPY = HexHighEntropyString()


def _snake(name: str) -> str:
    """`dbPassword` and `DB-PASSWORD` and `db.password` all become `db_password`."""
    name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name.strip())
    return re.sub(r"[^a-z0-9ñ]+", "_", name.lower()).strip("_")


_KEYWORDS = "|".join(KEYWORD_DENYLIST)  # detect-secrets' secret-sounding names (api_?key, db_?pass...)
# a name *ending* in one of these (optionally followed by more segments) names a secret; `secretary` and
# `passwords` do not, `pgpassword`, `db_pass`, `client_secret_value` and `github_token` do
_STRONG_NAME = re.compile(
    rf"(?:{_KEYWORDS}|passphrase|passcode|access_?key|access_?token|auth_?token|refresh_?token"
    r"|admin_?pass|root_?pass|user_?pass|_pass|_pw|_token|^pw|^pass_?word|^pass|^pwd"
    r"|(?:^|_)psk|pre_?shared_?key"
    # SSSD's `ldap_default_authtok`, nslcd's `bindpw`-like `authtok`: an authentication token by name
    r"|(?:^|_)authtok"
    # Docker's `config.json` keeps a registry's OAuth tokens under `identitytoken` and `registrytoken`
    r"|identity_?token|registry_?token"
    # the same words in other languages (German, Spanish, French, Portuguese, Italian)
    r"|passwort|kennwort|contrase\w*|clave|mot_de_passe|mdp|senha|parola_?d_?ordine)(?:_[a-z0-9]+)*$"
)
# names whose value is a credential whatever their suffix (`private_key_id` names a key of a service account)
_ALWAYS_SECRET = frozenset({"private_key_id", "private_key", "client_secret", "client_secret_key"})
# names that hold a secret only when the value looks random (`token: 5` is a count, `key: id` a column);
# an anti-CSRF token is bound to its session like the session id beside it (Django's `csrftoken` cookie
# and `csrfmiddlewaretoken` field, Angular's `XSRF-TOKEN`, Express's `_csrf`, Django's `X-CSRFToken`)
_AMBIGUOUS_NAME = re.compile(
    r"(?:^|_)(?:token|key|auth|authorization|credentials?|creds?|signature|sig|salt|hmac|cookie|session"
    r"|sessionid|sid|pin|otp|totp|mfa|bearer|apikey|refresh|access|jwt|nonce|material"
    r"|csrf|xsrf|csrftoken|xsrftoken|csrfmiddlewaretoken)(?:_[a-z0-9]+)*$"
)
# names whose value is about a secret, not the secret (`password_file`, `secret_name`, `token_ttl`)
_METADATA_SUFFIX = re.compile(
    r"_(?:name|names|id|ids|arn|ref|path|file|dir|url|uri|type|kind|len|length|count|min|max|version"
    r"|policy|rotation|ttl|expiry|expires|expires_at|expires_in|expiration|hint|field|env|label|prompt"
    r"|required|enabled|disabled|changed|reset|algo|algorithm|format|header|param|location|mount|store"
    r"|provider|source|manager|backend|scope|scopes|usage|limit|size|bits|strength|mode|age|regex"
    r"|pattern|rule|rules|endpoint|enforced|issuer|audience|lifetime|period|interval|timeout|hasher|hashers"
    r"|validator|validators|checker|days|hours|minutes|seconds|retries|attempts)$"
)


# published on purpose
# a UUID in any case (the detectors that take one as a credential decide when it stands in for one)
_UUID = re.compile(r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}")
# the Push API's `applicationServerKey` is the VAPID *public* key, shipped to every browser
_PUBLIC_NAME = re.compile(
    r"(?:^|_)(?:public|pub|publishable)(?:_|$)|^pubkey|_pubkey|(?:^|_)application_server_key$"
)


# names whose value names a secret kept elsewhere (Helm's `existingSecret: app-db`)
_REFERENCE_NAME = re.compile(r"(?:^|_)existing_")


def _name_class(name: str) -> int:
    """2 for a name that holds a secret, 1 for one that does when the value looks random, 0 otherwise."""
    snake = _snake(name)
    if snake in _ALWAYS_SECRET:
        return 2
    if _PUBLIC_NAME.search(snake):
        return 0  # `public_key`, `PublicKey`, `publishable_key`: published on purpose
    if not snake or _METADATA_SUFFIX.search(snake) or _REFERENCE_NAME.search(snake):
        return 0
    if _STRONG_NAME.search(snake):
        return 2
    if _AMBIGUOUS_NAME.search(snake):
        return 1
    return 0


def is_secret_name(name: str) -> bool:
    """Whether a field called `name` holds a secret (`password`, `DB_PASSWORD`, `aws_secret_access_key`)."""
    # a JSON field may be called just "token"; in prose "token: 5" is too often not a credential
    return _name_class(name) == 2 or _snake(name) == "token"


# ---------------------------------------------------------------------------------------------------------
# values

_PLACEHOLDER_VALUE = re.compile(
    r"(?i)\[REDACTED\].*|REDACTED|true|false|null|nil|none|yes|no|on|off|n/a|tbd|todo|empty|unset|\d{1,3}"
    # words that stand for a value in documentation and templates
    r"|change_?me|replace_?me|placeholder|dummy|example|sample|secret|password|foo|bar|foobar"
    # the label a translation file gives the field (`"password": "Passwort"`)
    r"|passwort|kennwort|contraseña|contrasena|mot de passe|senha|palavra-passe|parola d'ordine|пароль"
    r"|passphrase|passcode|token|api key|clave|clé|chave|chiave|jeton|schlüssel"
    r"|(?:your|my|insert|enter|put)[_-].*|.*[_-](?:here|goes_here)|x{4,}.*|.*x{6,}|\*{3,}.*"
    r"|<[^<>]*>|<[A-Za-z_][^<>]*|<[A-Za-z][\w -]*>(?:%2F|/).*|<%.*|\*+|x{3,}|\.{3}|…|\?+|-+|_+"
    # JavaScript's `undefined` printed where a value is unset (`password: undefined` in a config dump);
    # connection-string docs' stand-ins (`Password=myPassword;`, `User Id=myUsername`)
    r"|undefined|(?-i:my[A-Z][a-z]+(?:[A-Z][a-z]+)*)"
    # a token's documented prefix cut short by an ellipsis: `sk-...`, `ghp_…`
    r"|[A-Za-z0-9_.-]{1,16}?(?:\.{3,}|…)"
    # Terraform's plan shows a sensitive attribute as `(sensitive value)`, never the value itself
    r"|\(sensitive(?:[ ]value)?\)?"
    # what a tool prints instead of a value it keeps to itself (`_authToken = (protected)` in `npm config`)
    r"|\((?:protected|hidden|masked|redacted|encrypted)\)"
    # what Windows Setup writes over a password in its answer files and logs
    r"|\*SENSITIVE\*DATA\*DELETED\*"
    r"|[\[{(]"  # a structure opens: the value is on the next lines or in a list
    r"|[|>][-+]?\d?"  # a YAML block scalar: the value is on the next lines
    # references: ${DB_PASSWORD}, $DB_PASSWORD, $(cat file), {{ vault_pw }}, {% ... %}, %(password)s, %s,
    # !vault (a YAML tag), $1 and :password (SQL parameters)
    r"|\$\{[^}]*\}|\$\{[A-Za-z_]\w*:?[-?=+][^}\s]*|\$[A-Z_][A-Z0-9_]*|\$\(.*|\$?\{\{.*|\{%.*|%\([A-Za-z_]\w*\)s|%s|![A-Za-z]\w*|\$\d+"
    r"|:[a-z_]\w*"
    # more reference syntaxes (the ones gitleaks' global allowlist names): ${{ secrets.X }}, %VAR%, @VAR@,
    # a run of one character
    r"|\$\{\{.*|%[A-Za-z_]+%|@[A-Za-z_]+@|(.)\1*"
    # secret references: 1Password `op://vault/item/field`, `vault:secret/x#y`, `ref+vault://…`, `!Ref X`
    r"|op://[^\n\"']+|vault:\S+|ref\+\w+://\S+|(?:awssm|gcpsm|azkv)://\S+|!(?:Ref|Sub|GetAtt|ImportValue)\b.*"
    # an environment variable's name standing for its value (`Bearer ACCESS_TOKEN`, `API_KEY_HERE`)
    r"|(?-i:(?:[A-Z][A-Z0-9]*_)*(?:TOKEN|KEY|SECRET|PASSWORD|PASS|PWD|CREDENTIALS?|APIKEY)(?:_[A-Z0-9]+)*)"
    # code, not a value: `password = get_password()`, `password: str`, `password = settings.DB_PASSWORD`
    r"|(?-i:[A-Za-z_][A-Za-z0-9_.]{2,}[(\[].*)"
    r"|(?:str|bytes|string|SecretStr|(?:Optional|Secret)\[[^\]]*\])(?:\|None)?"
    r"|(?:self|cls|args|opts|options|config|cfg|conf|settings|env|os|params|request|req|ctx|kwargs|creds"
    r"|credentials|secrets|vault|process|this|props|data|user|values"
    r"|session|client|auth|account|response|resp|result|app|identity|conn|connection)\.[\w.]+"
)
# words that follow "password:" in prose about passwords rather than before a password
_STOPWORDS = frozenset(
    "a an the at is are was were be been must should will can cannot could may not no never only see set"
    " reset rotated rotate changed change required optional missing invalid incorrect wrong expired stored"
    " saved updated same too ok none unchanged via from for to of in on and or with without by if when then"
    " it this that please use using enter entered type typed prompt prompted ask asked asks"
    # a keyword of code after `secret_key:` (`if not secret_key: raise ...`)
    " raise return await yield lambda del assert continue break pass import def class elif else try"
    " except finally while".split()
)
_HANGUL = re.compile(r"[\uac00-\ud7a3\u3131-\u318e]")
_NEAR_MISS_VALUE = re.compile(
    r"(?i)[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"  # UUID
    r"|[0-9a-f]{7,12}|[0-9a-f]{40}|[0-9a-f]{64}"  # git SHAs, sha256
    r"|(?:sha(?:1|256|384|512)|md5)[:-][0-9a-f=+/]+"
    r"|[v=^~<>]*\d+(?:\.\d+)+(?:[-+][0-9a-z.-]+)?"  # versions
    r"|\d{4}-\d{2}-\d{2}(?:[t ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:z|[+-]\d{2}:?\d{2})?)?"  # ISO dates
    r"|[+\d][\d -]*"  # numbers, phone-like ids
    r"|g[as]\d(?:\.\d+){2,}"  # a Google Analytics cookie (`_ga=GA1.2.<client id>.<time>`): no session
    r"|(?:\.{0,2}/|~/|[a-z]:\\)[^\s]*"  # paths
    r"|[a-z][a-z0-9+.-]*://[^\s]*"  # URLs (credentials in them are a rule of their own)
)


# a variable named after what it holds: `password = password`, `token=access_token` (letters only, so
# `monkey123` is still a password)
_IDENTIFIER_VALUE = re.compile(
    r"(?:[a-z]+_)*(?:password|passwd|pwd|passphrase|secret|token|key|api_key|credentials?|creds)(?:_[a-z]+)*"
)


# a header or flag name as the value (`The API key header is X-API-Key`)
_HEADER_NAME_VALUE = re.compile(
    r"(?i)(?:x-)?(?:[a-z]+-)*(?:api-?key|token|auth-token|access-token|secret|password|passphrase)[;.,]?"
)
_PUBLIC_VALUE = re.compile(
    r"pk_(?:live|test)_|pk\.eyJ|FLWPUBK|age1[02-9ac-hj-np-z]{20}|[xyz]pub[1-9A-HJ-NP-Za-km-z]{20}"
)
_LABEL_VALUE = re.compile(r"[A-Za-z][A-Za-z' ]{0,40}[.:]?")
_LABEL_WORD = re.compile(r"(?i)\b(?:password|passphrase|passcode|token|key|secret|pin|code)s?\b")


def _benign(value: str) -> bool:
    """A value after a secret name that is no secret: a placeholder, a flag word, a prose word."""
    if _PLACEHOLDER_VALUE.fullmatch(value):
        return True
    value = value.rstrip(")]}")
    if not value.strip() or _PLACEHOLDER_VALUE.fullmatch(value):
        return True
    if value.lower().rstrip(".,:;!?") in _STOPWORDS:
        return True
    if _PUBLIC_VALUE.match(value):
        return True  # a key its vendor documents as public (Stripe `pk_live_`, Mapbox `pk.`, age1, xpub)
    if _IDENTIFIER_VALUE.fullmatch(value) or _HEADER_NAME_VALUE.fullmatch(value):
        return True  # `self.password = password`, `token=access_token`: a variable, not a value
    if " " in value and _LABEL_VALUE.fullmatch(value) and _LABEL_WORD.search(value):
        return True  # "Access token", "Your API key": a label of words that names the field
    if _HANGUL.match(value):
        return True  # "비밀번호: 재설정 필요" is prose, not a password
    if _SECRET_FILE.fullmatch(value) or _SECRET_PATH.fullmatch(value):
        return True  # `--from-file=password=./db-password.txt`: where the secret is kept, not the secret
    # words of a script other than Latin and no digit or symbol (`パスワード`, `秘密の質問`, `Пароль`): a
    # label or prose in a translation file; passwords are written in ASCII
    return bool(_NON_LATIN_WORDS.fullmatch(value))


# a path to a file by its extension (a secret file's name, not its content)
_SECRET_FILE = re.compile(
    r"(?:\.{1,2}/|~/|/)(?:[\w.-]+/)*[\w.-]*\.(?:txt|key|pem|json|ya?ml|env|conf|cfg|ini|toml|secret|crt|p12|pfx"
    r"|jks|keystore|gpg|asc)"
)
# a path of lower-case words where a secret is kept, with the field it reads (`/etc/credstore/db-password`,
# Vault's `secret/data/app:password`, `kv/prod/db#password`): a location, not a value; a password with a `/`
# in it has capitals, digits or symbols among its letters
_SECRET_PATH = re.compile(
    r"/?[a-z][a-z0-9_.-]*(?:/[a-z][a-z0-9_.-]*){2,}(?:[:#][a-z][a-z0-9_.-]*)?|(?:/[a-z][a-z0-9_.-]*){2,}"
)
_NON_LATIN_WORDS = re.compile(r"[^\x00-\x7f\W\d_]+(?:[\s・·][^\x00-\x7f\W\d_]+)*[.!?。！？]?")


def _looks_random(value: str, hex_ok: bool = False) -> bool:
    """Whether a value under an ambiguous name (`token`, `key`, `session`) is random enough to be a key.

    `hex_ok`: 32 hex digits or more count even at a SHA's length (a name or a word beside the value said
    it is a key: `DD_APP_KEY=<40 hex>`)."""
    if len(value) < 12 or _benign(value):
        return False
    long_hex = hex_ok and len(value) >= 32 and re.fullmatch(r"[0-9a-fA-F]+", value) is not None
    if not long_hex and _NEAR_MISS_VALUE.fullmatch(value):
        return False
    if re.fullmatch(r"[0-9a-fA-F]+", value):
        return len(value) >= 16 and _HEX_ENTROPY.calculate_shannon_entropy(value) > 3.0
    has_digit = any(c.isdigit() for c in value)
    has_upper = any(c.isupper() for c in value[1:])
    has_lower = any(c.islower() for c in value)
    if not has_digit and not (has_upper and has_lower and len(value) >= 20):
        return False
    if not (has_upper and has_lower) and len(value) < 20:
        return False
    return _ENTROPY.calculate_shannon_entropy(value) > 3.2


def _password_like(value: str) -> bool:
    """Whether a word met in prose ("the password is X") looks like a password rather than a word."""
    if len(value) < 6 or _benign(value) or _NEAR_MISS_VALUE.fullmatch(value):
        return False
    has_letter = any(c.isalpha() for c in value)
    has_digit = any(c.isdigit() for c in value)
    has_symbol = any(not c.isalnum() for c in value)
    mixed_case = any(c.isupper() for c in value[1:]) and any(c.islower() for c in value)
    return has_letter and (has_digit or has_symbol or mixed_case)


def _strong_password_like(value: str) -> bool:
    """Stricter, for a word right after "password" with no "is" between: digits, and case or symbols."""
    return (
        len(value) >= 8
        and _password_like(value)
        and any(c.isdigit() for c in value)
        and any(c.islower() for c in value)
        and (any(c.isupper() for c in value) or any(not c.isalnum() for c in value))
    )


# ---------------------------------------------------------------------------------------------------------
# ciphertext: a value encrypted for a key the text does not hold is no secret to remove

# SOPS keeps each encrypted value as `ENC[AES256_GCM,data:…,iv:…,tag:…,type:str]`
_SOPS_VALUE = re.compile(
    r"ENC\[AES256_GCM,data:[A-Za-z0-9+/=]*,iv:[A-Za-z0-9+/=]+,tag:[A-Za-z0-9+/=]+,type:\w+\]"
)
# a Bitnami SealedSecret's `encryptedData:` block: every entry under it is sealed for the cluster's key
_SEALED_BLOCK = re.compile(
    r"(?m)^(?P<indent>[^\S\n]*)encryptedData:[^\S\n]*\n(?:(?P=indent)[^\S\n]+\S[^\n]*(?:\n|$))+"
)


def ciphertext_regions(text: str) -> list[tuple[int, int]]:
    """Where `text` holds values encrypted for a key it does not hold: SOPS `ENC[…]` values, and the
    `encryptedData:` entries of a SealedSecret manifest (the kind must be named: a plain `data:` block or an
    `encryptedData:` key elsewhere is judged as any other text)."""
    regions: list[tuple[int, int]] = []
    if "ENC[" in text:
        regions.extend(m.span() for m in _SOPS_VALUE.finditer(text))
    if "encryptedData:" in text and "SealedSecret" in text:
        regions.extend(m.span() for m in _SEALED_BLOCK.finditer(text))
    return regions
