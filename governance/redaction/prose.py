"""Secrets named in prose, in several languages: "Das Passwort lautet X", "密码：X", "passphrase: w w w".

A word that names a secret (password, passphrase, token, key... in English, German, Spanish, French,
Japanese, Chinese and Korean), then at most a few words ("for the staging server"), then what introduces
a value (`:`, `=`, "is", "lautet", "es", "est", "是", "は"...), then the value. With such a separator the
value goes when it looks like a password; with none ("the api key X for staging") only when it looks
random. Prose about passwords ("La contraseña debe tener 12 caracteres") has no value that qualifies.
English and Korean passwords have their own, older rules in detectors.py; this one adds the rest.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from governance.redaction.generic import _random_token, plain_base64
from governance.redaction.kinds import _PRIORITY, Span
from governance.redaction.names import (
    _NEAR_MISS_VALUE,
    _STOPWORDS,
    _UUID,
    _benign,
    _looks_random,
    _password_like,
    _strong_password_like,
)

__all__ = ["CREDENTIAL_NEEDLES", "credential_prose", "multilingual_prose", "passphrases"]

# words that name a secret; Latin-script ones need word boundaries, CJK ones do not
_LATIN_WORDS = (
    r"passwords?|passwd|passphrase|passcode|pwd|pass|secret|token|api[ _-]?key|access[ _-]?key"
    r"|secret[ _-]?key|private[ _-]?key|pin"
    r"|passwort|kennwort|zugangsdaten|geheimnis|schlüssel|zugangsschlüssel|api-schlüssel"
    r"|zugriffstoken|zugangstoken|sitzungstoken|zugriffsschlüssel|datenbankpasswort|datenbank-passwort"
    r"|wlan-passwort|wlan-schlüssel|admin-passwort|root-passwort|api-token|accesstoken|authtoken"
    r"|contraseña|contrasena|clave(?:[ ]de[ ]acceso)?|secreto|frase[ ]de[ ]contraseña"
    r"|mot[ ]de[ ]passe|mdp|phrase[ ]secrète|phrase[ ]de[ ]passe|clé|clef|jeton"
    # Portuguese, Italian
    r"|senha|palavra-passe|chave(?:[ ]de[ ](?:acesso|api))?|parola[ ]d'ordine|chiave(?:[ ](?:api|segreta))?"
    # Turkish, Dutch, Polish, Nordic, Finnish, Czech, Hungarian, Romanian, Indonesian, Vietnamese
    r"|has[łl]o(?:[ ](?:do|dla)[ ][\w-]+)?[ ]to"
    r"|parola(?:sı|si|nız|niz)?|şifre(?:si|niz)?|sifre(?:si)?|wachtwoord|hasło|hasła|haslo|lösenord(?:et)?"
    r"|passord(?:et)?|adgangskode(?:n)?|salasana|heslo|jelszó|jelszava|parolă|kata[ ]sandi|sandi|mật[ ]khẩu"
    # Romanian "cheia API", Norwegian "API-nøkkelen"
    r"|cheia(?:[ ]api)?|cheie(?:[ ]api)?|(?:api-)?nøkkel(?:en)?"
)
# Russian: Cyrillic words need Cyrillic word boundaries
# (Bulgarian: "паролата", "ключът")
_CYRILLIC_WORDS = (
    r"пароль|пароля|паролем|паролата|парола|ключ(?:ът|а)?(?:[ ]api|[ ]доступа)?|токен|секрет|секретный[ ]ключ"
)
_CJK_WORDS = (
    # Arabic, Persian, Hindi, Thai, Hebrew, Greek: scripts whose words the boundaries above do not cover
    r"كلمة[ ](?:ال)?مرور|كلمة[ ](?:ال)?سر|رمز[ ]عبور|गुप्त[ ]शब्द|पासवर्ड|รหัสผ่าน|סיסמה|הסיסמה"
    r"|κωδικός|συνθηματικό|პაროლი(?:ა|ს)?|"
    r"パスワード|パスフレーズ|(?<![ァ-ヴー])パス(?![ァ-ヴー])|暗証番号|合言葉|トークン|秘密鍵|シークレット|APIキー|アクセスキー"
    r"|密码|密碼|口令|密钥|秘钥|金鑰|令牌|私钥"
    r"|비밀번호|비번|패스워드|암호|토큰|시크릿|비밀키|API\s?키|액세스\s?키"
)
# what introduces the value: Latin and Cyrillic verbs need word boundaries, CJK particles do not
# ("パスワードはyAoe…", "密码是Kx9…")
# (Indonesian says "is now" with `sekarang`/`kini`: "sandi wifi sekarang X")
_SEPARATORS = (
    r"is|was|ist|lautet|lauten|war|es|era|est|était|sont|é|è|são|sono|это|—|jest|là|adalah|sekarang|kini"
    r"|är|er|on|este|е"
)
_CJK_SEPARATORS = r"是|为|為|は|が|은|는|이|가|هي|है|คือ|היא|είναι"
_WORD = (
    rf"(?:(?<![A-Za-zÀ-ÿ])(?:{_LATIN_WORDS})(?![A-Za-zÀ-ÿ])"
    rf"|(?<![а-яёА-ЯЁ])(?:{_CYRILLIC_WORDS})(?![а-яёА-ЯЁ])|{_CJK_WORDS})"
)
_OPEN = r"(?:[「『“\"'`(（‹]|«[^\S\n]?)?"
# Spanish, Portuguese, French and Italian name what a password is for with a chain of prepositions and
# articles ("de la base de datos de producción", "do banco de dados de produção", "de la base de données
# de production"): these small words do not count among the few words allowed between the name and the verb
_GLUE = (
    r"(?:de|del|della|dello|dei|degli|delle|di|da|do|dos|das|du|des|la|le|les|el|los|las|il|lo|gli|al|au"
    r"|aux|en|nel|nella|no|na|nos|nas)"
)
# one word of that fill, after at most two of those small words; a small word is never the word itself, so
# each word of the text has one reading (the fill stays linear, whatever the text)
_FILL_WORD = rf"(?:[^\S\n]+{_GLUE}(?=[^\S\n])){{0,2}}[^\S\n]+(?!{_GLUE}[^\S\n])[^\s:=：]{{1,30}}"
_PROSE = re.compile(
    rf"(?i){_WORD}"
    # a few words between the name and the verb ("for the staging server", "de la base", "del servidor")
    rf"(?P<fill>(?:{_FILL_WORD}){{0,4}}?)"
    rf"[^\S\n]*(?:[:=：]|(?<![A-Za-zÀ-ÿа-яё])(?:{_SEPARATORS})(?![A-Za-zÀ-ÿа-яё])|{_CJK_SEPARATORS})"
    r"[^\S\n]*:?[^\S\n]*"
    rf"{_OPEN}(?P<value>[\x21-\x7e]{{6,}})"
)
# where a word naming a secret starts, found in the lower-cased text (a case-sensitive scan is ~3x faster)
_WORD_LOWER = re.compile(
    rf"(?:(?<![a-zà-ÿ])(?:{_LATIN_WORDS})(?![a-zà-ÿ])|(?<![а-яё])(?:{_CYRILLIC_WORDS})(?![а-яё])"
    rf"|{_CJK_WORDS.replace('API', 'api')})"
)
_WORD_ANY_CASE = re.compile(rf"(?i){_WORD}")
# no separator: "the api key X for staging", "토큰 X"
# ... or after what it is for ("пароль от стенда X", "Сбросил пароль на X", "password for staging X")
_PROSE_BARE = re.compile(
    rf"(?i){_WORD}(?P<prep>[^\S\n]+(?:от|для|на|for|für|pour|para|per)(?:[^\S\n]+[^\s:=：]{{1,30}}?(?=[^\S\n]))?)?"
    rf"[^\S\n]+{_OPEN}(?P<value>[\x21-\x7e]{{8,}})"
)
# words that name a password (not a key or a token): with no separator, a strong password shape is enough
# ("senha Qw7!rTz9#Lp2", "密码 Qw7!…")
_PASSWORD_WORD = re.compile(
    r"(?i)pass|pwd|mdp|senha|пароль|密码|密碼|口令|パスワード|暗証|비밀번호|비번"
    r"|kennwort|contrase|mot de passe|parola|şifre|sifre|wachtwoord|has[łl]o|lösenord|passord|adgangskode"
    r"|salasana|heslo|jelsz|parolă|kata sandi|sandi|mật khẩu|كلمة|رمز|पासवर्ड|गुप्त|รหัสผ่าน|סיסמה|הסיסמה|κωδικ"
    r"|συνθηματικ|პაროლ"
)
_NAME_THEN_VALUE = re.compile(r"[A-Za-z_][\w.-]*[=:]")
_LATIN_LETTER = re.compile("[À-ÖØ-öø-ÿ]")
_TRAILING = ".,;:)]}'\"`”’」』）»›"


def _mixed_password(words: str, value: str) -> bool:
    """A password word, and a value of upper- and lower-case letters and digits only ("1-dimensional" and
    `access"A\\n` are no password after "pass for", "key for")."""
    return (
        _PASSWORD_WORD.match(words) is not None
        and value.isalnum()
        and _strong_password_like(value)
        and any(c.isupper() for c in value)
    )


def multilingual_prose(text: str, depth: int) -> Iterator[Span]:
    priority = _PRIORITY["password"]
    lower = text.lower()
    words = _WORD_LOWER.finditer(lower) if len(lower) == len(text) else _WORD_ANY_CASE.finditer(text)
    for word in words:
        if word.start() > 0 and text[word.start() - 1] == ":":
            continue  # a segment of a colon path (`arn:aws:secretsmanager:…:secret:name`)
        for pattern in (_PROSE, _PROSE_BARE):
            match = pattern.match(text, word.start())
            if match is None:
                continue
            # an ASCII value stops at the first non-ASCII character ("X です", "X입니다")
            value = match.group("value").rstrip(_TRAILING)
            start = match.start("value")
            whole = match.group("value")
            quoted = whole.rstrip("'\"`”’」』,;")  # `'sk_live_...'`: the dots stay
            if not value or _benign(value) or _benign(whole) or _benign(quoted) or value[0] == "<":
                continue  # `<your-password>` opens a template
            if plain_base64(value):
                continue  # base64 of words: encoded text, no key
            if _NAME_THEN_VALUE.match(value):
                continue  # `password="…"`: another assignment, which the assignment rule judges
            if _LATIN_LETTER.match(text, match.end("value")):
                continue  # the word goes on past ASCII ("<tu-contraseña>"): not an ASCII password
            if pattern is _PROSE_BARE and match.group("prep") and not _mixed_password(match.group(), value):
                continue  # after what it is for, only a password word and letters of both cases and digits
            if pattern is _PROSE_BARE and len(value) < 12:
                if not (_PASSWORD_WORD.match(match.group()) and _strong_password_like(value)):
                    continue
            if (
                _looks_random(value)
                or (pattern is _PROSE and _password_like(value))
                or (
                    pattern is _PROSE_BARE
                    and _PASSWORD_WORD.match(match.group())
                    and _strong_password_like(value)
                )
            ):
                yield start, start + len(value), priority


# "passphrase: correct horse battery staple", "the passphrase is: ...", a wallet's recovery words (BIP-39:
# "seed phrase: w1 … w12"); with no colon ("the recovery phrase is w1 … w12") only a long run of words
_PHRASE_NAME = (
    r"passphrase|pass[ -]phrase|phrase[ ]secrète|phrase[ ]de[ ]passe|frase[ ]de[ ]contraseña|Passphrase"
    r"|(?:secret[ ])?(?:recovery|seed|mnemonic|backup|wallet)[ ](?:phrase|words|sentence)|mnemonic"
    r"|(?:\d{2}-word[ ])?seed"
    r"|frase[ ](?:semilla|de[ ]recuperación)|phrase[ ](?:de[ ]récupération|mnémonique)"
    r"|Wiederherstellungsphrase"
    r"|パスフレーズ|口令短语|助记词|助記詞|ニーモニック|シードフレーズ|복구[ ]?구문|시드[ ]?문구"
)
_PASSPHRASE = re.compile(
    rf"(?i)(?:{_PHRASE_NAME})"
    r"(?:[^\S\n]*\([^()\n]{1,40}\))?"  # "Recovery phrase (keep offline!): ..."
    r"(?:[^\S\n]+(?:for|of|de|du|für)[^\S\n]+(?:the[^\S\n]+|la[^\S\n]+|le[^\S\n]+)?[\w-]+(?:[^\S\n]+[\w-]+)?)?"
    r"(?:[^\S\n]+(?:is|was|ist|lautet|es|est))?[^\S\n]*(?P<colon>[:：]|(?<=[^\S\n]))[^\S\n]*[\"'“「]?"
    r"(?P<words>[A-Za-z]{2,}(?:[ -][A-Za-z]{2,}){2,23})"
)


def passphrases(text: str, depth: int) -> Iterator[Span]:
    priority = _PRIORITY["password"]
    for match in _PASSPHRASE.finditer(text):
        words = re.split(r"[ -]", match.group("words"))
        if any(word.lower() in _STOPWORDS for word in words):
            continue  # "passphrase: stored in the vault" is prose
        if match.group("colon") not in (":", "：") and len(words) < 4:
            continue
        yield match.start("words"), match.end("words"), priority


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
_EN_KO_TRAILING = ".,;:)]}'\"`”’」』"


def _english_prose(text: str, depth: int) -> Iterator[Span]:
    priority = _PRIORITY["password"]
    for match in _EN_PROSE.finditer(text):
        start = match.start("bare")
        value = match.group("bare").rstrip(_EN_KO_TRAILING)
        strict = not match.group("verb")  # "password hashing" is a topic; "password is x" gives a value
        if value and _password_like(value) and (not strict or _strong_password_like(value)):
            yield start, start + len(value), priority


def _korean_prose(text: str, depth: int) -> Iterator[Span]:
    priority = _PRIORITY["password"]
    for match in _KO_PROSE.finditer(text):
        start = match.start("bare")
        value = match.group("bare").rstrip(_EN_KO_TRAILING)
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


# ---------------------------------------------------------------------------------------------------------
# a sentence that says the value is a credential: "the airtable credential is X for prod"

# words that name a credential, found in the lower-cased text. Unlike the words above, a bare "key" (and
# "clé", "clave", "Schlüssel", "ключ", "キー", "키") does not count: a key is as often an id or a column;
# only a qualified one (`api key`, `clave de api`, `secret key`) does.
_CREDENTIAL_LATIN = (
    r"credentials?|secrets?|(?:api|access|auth|bearer|refresh|session)[ _-]?tokens?|tokens?|authtoken"
    r"|(?:api|access|secret|private|signing|master|license|licence)[ _-]?keys?|apikey|passwords?|passwd"
    r"|passphrase|passcode|pwd"
    r"|zugangsdaten|anmeldedaten|passwort|kennwort|geheimnis|api-schlüssel|zugangsschlüssel"
    r"|zugriffsschlüssel|geheimer[ ]schlüssel|privater[ ]schlüssel|zugriffstoken|zugangstoken"
    r"|credenciales|credencial|contraseña|contrasena|clave[ ](?:de[ ]api|de[ ]acceso|secreta|privada)|secreto"
    # Spanish `clave` alone is as often a key as a password; of an account, it is the password
    r"|clave[ ]del?[ ](?:la[ ])?(?:usuario|cuenta|wifi|root|admin|administrador|red|servidor)"
    r"|mot[ ]de[ ]passe|clé[ ](?:d'api|api|secrète|privée|d'accès)|jeton(?:[ ]d'accès)?"
    r"|credenciais|senha|chave[ ](?:de[ ]api|de[ ]acesso|secreta|privada)|segredo"
    r"|credenziali|chiave[ ](?:api|segreta|privata|di[ ]accesso)|segreto"
)
_CREDENTIAL_CYRILLIC = (
    r"учётные[ ]данные|учетные[ ]данные|пароль|токен|секрет|секретный[ ]ключ|ключ[ ]api|ключ[ ]доступа"
    r"|закрытый[ ]ключ"
)
_CREDENTIAL_CJK = (
    r"認証情報|パスワード|トークン|シークレット(?:キー)?|apiキー|アクセスキー|秘密鍵"
    r"|凭据|凭证|憑證|密码|密碼|令牌|(?:api[ ]?)?密钥|秘钥|私钥|访问密钥"
    r"|자격[ ]?증명|비밀번호|비번|패스워드|토큰|시크릿|api[ ]?키|액세스[ ]?키|비밀[ ]?키|암호"
)
_CREDENTIAL_WORD = re.compile(
    rf"(?<![a-zà-ÿ])(?:{_CREDENTIAL_LATIN})(?![a-zà-ÿ])|(?<![а-яё])(?:{_CREDENTIAL_CYRILLIC})(?![а-яё])"
    rf"|{_CREDENTIAL_CJK}"
)
# pieces of those words: the rule's gate, and where the word scan looks (a scan for these literals is ~10x
# faster than one for the words with their boundaries; the words are then read only around what it finds)
CREDENTIAL_NEEDLES = (
    "cred", "secret", "token", "key", "pass", "pwd", "zugang", "anmelde", "kennwort", "geheim", "schlüssel",
    "contrase", "clave", "clé", "jeton", "senha", "chave", "segredo", "chiave", "segreto", "данные",
    "пароль", "токен", "секрет", "ключ", "認証情報", "パスワード", "トークン", "シークレット", "キー",
    "秘密鍵", "凭据", "凭证", "憑證", "密码", "密碼", "令牌", "密钥", "秘钥", "私钥", "자격", "비밀",
    "패스워드", "토큰", "시크릿", "키", "암호", "비번",
)  # fmt: skip
_CREDENTIAL_NEEDLE = re.compile("|".join(map(re.escape, CREDENTIAL_NEEDLES)))
# a value may start here: six printable ASCII characters after a space, a CJK particle, a separator or a quote
_VALUE_AHEAD = re.compile(r"(?:(?<![\x21-\x7e])|(?<=[:=\"'`]))[\x21-\x7e]{6}")
# the pieces that may end a word of several (`api key`, `mot de passe`, `учётные данные`, `apiキー`)
_TRAILING_NEEDLES = frozenset({"key", "token", "pass", "schlüssel", "данные", "ключ", "キー", "密钥", "키"})


def _credential_words(lower: str) -> Iterator[re.Match[str]]:
    """The words naming a credential in the lower-cased text that a value may follow on their line, each
    once, in order: read in a window around each piece found. A word starts at its piece or, for a piece
    that ends a word (`private key`, `mot de passe`, `access token`), at most 12 characters before it, and
    ends at most 20 characters after."""
    done = 0
    size = len(lower)
    for hit in _CREDENTIAL_NEEDLE.finditer(lower):
        at = hit.start()
        if at < done:
            continue
        line_end = lower.find("\n", at)
        ahead = min(at + 160, size if line_end < 0 else line_end)
        if _VALUE_AHEAD.search(lower, hit.end(), ahead) is None:
            continue  # no value of six characters follows on the line (`max_tokens: 4096`): no word to read
        end = min(at + 20, size)
        while end < size and lower[end].isalpha():
            end += 1  # the scan must not cut a word: its end decides the boundary after it
        begin = max(at - 12, 0) if hit.group() in _TRAILING_NEEDLES else at
        for word in _CREDENTIAL_WORD.finditer(lower, begin, end):
            if word.start() >= done:
                done = word.end()
                yield word


# After the word: a name ("le jeton Snyk", "токен Heroku") or what it is for ("for prod", "de la base",
# "für den Server"), opened by a preposition, so "the token fix is …" (a compound whose head is "fix") is
# not read as the token's value; then what says the value follows ("is", ":", "lautet", "es", "est", "是",
# "は", "는"), then the value.
_CREDENTIAL_TAIL = re.compile(
    r"(?i)(?:[^\S\n]+(?-i:[A-ZА-ЯЁ][\w-]{1,30}))?"
    r"(?:[^\S\n]+(?:for|of|on|in|at|from|with|we|you|they|used|für|von|vom|zum|zur|des|der|de|del|da|do"
    r"|du|pour|para|en|di|della|dello|per|для|от)(?:[^\S\n]+[^\s:=：]{1,30}){1,3}?)?"
    r"[^\S\n]*(?:[:=：]|(?<=\s)(?:is|was|are|were|ist|lautet|lauten|war|sind|es|era|son|est|était|sont|é|são"
    r"|è|sono|это|—)(?=\s)|是|为|為|は|が|은|는|이|가)"
    rf"[^\S\n]*:?[^\S\n]*{_OPEN}(?P<value>[\x21-\x7e]{{6,}})"
)
# French, Spanish, Portuguese, Italian and Russian put a name after the noun ("le jeton heroku est X",
# "токен heroku это X"): one word of any case may stand there before one of their verbs
_CREDENTIAL_TAIL_AFTER_NOUN = re.compile(
    r"(?i)[^\S\n]+[^\W\d_][\w-]{1,29}[^\S\n]+(?:est|était|es|era|é|è|sono|son|sont|são|это)(?=\s)"
    rf"[^\S\n]*:?[^\S\n]*{_OPEN}(?P<value>[\x21-\x7e]{{6,}})"
)
# ... or before a colon ("Токен heroku: X", "le jeton heroku : X"); only after those languages' words, since
# an English word there heads a compound ("the token fix: …")
_CREDENTIAL_TAIL_AFTER_NOUN_COLON = re.compile(
    rf"(?i)[^\S\n]+[^\W\d_][\w-]{{1,29}}[^\S\n]*[:：][^\S\n]*{_OPEN}(?P<value>[\x21-\x7e]{{6,}})"
)
_AFTER_NOUN_WORD = re.compile(
    r"[а-яё]|jeton|clé|mot|contrase|clave|credencia|secreto|senha|chave|segred|credenz|chiave|segret"
)
# no verb and no colon ("the heroku token X", "deploy token X for staging", "Heroku 토큰 X"): a value of ten
# characters or more that ends where the clause or the line goes on with words
_CREDENTIAL_BARE = re.compile(
    rf"[^\S\n]+{_OPEN}(?P<value>[\x21-\x7e]{{10,}}?)[\"'`”’」』)]?(?=[.,;!?]?(?:[^\S\n]|$)|[^\x00-\x7f])",
    re.MULTILINE,
)
# words that say the value is an id, a name, metadata or published, not the credential: "the API key ID is",
# "the request id for the token call is", "the publishable key", "the credential's fingerprint". The words
# of the clause are looked up in a set (a regex of these words with their boundaries is ~10x slower).
_ID_WORDS = frozenset(
    """id ids uuid uuids guid guids identifier identifiers number numbers name names username usernames email
    fingerprint hash digest checksum version prefix suffix hint length count ttl expiry expiration type format
    scope url uri endpoint path file header field label public publishable idempotency idempotent csrf xsrf
    page next pagination continuation cursor primary foreign partition sort routing shard lookup cache dedup
    kid address serial commit sha revision rev tag branch example sample dummy fake placeholder limit max min
    usage rate lifetime duration timeout interval expires size bits rotation policy status state mode
    algorithm owner issuer audience scopes created updated amount balance supply price decimals contract
    symbol holders
    kennung fingerabdruck präfix identificador número nombre pública público huella idempotencia identifiant
    numéro nom publique empreinte idempotence nome idempotência identificativo numero pubblica pubblico
    página seite pagina имя""".split()
)
# German compounds end in one (`Bestellnummer`, `Anfrage-ID`); Russian words inflect after one
_ID_SUFFIXES = ("nummer",)
_ID_PREFIXES = ("öffentlich", "идентификатор", "номер", "открыт", "публичн")
# Japanese, Chinese and Korean words stand without spaces between them
_ID_CJK = (
    "番号", "識別子", "名前", "公開", "指紋", "フィンガープリント", "编号", "編號", "号码", "號碼", "标识",
    "標識", "名称", "公钥", "公开", "指纹", "번호", "식별자", "이름", "공개", "지문",
)  # fmt: skip
_LETTERS = re.compile(r"[^\W\d_]+")
_CAMEL_ID = re.compile(r"(?<=[a-z])Id(?![a-z])")


def _names_an_id(text: str, lower: str, start: int, end: int) -> bool:
    """Whether the words of `text[start:end]` say that what follows is an id, a name or public."""
    for word in _LETTERS.findall(lower, start, end):
        if word in _ID_WORDS or word.endswith(_ID_SUFFIXES) or word.startswith(_ID_PREFIXES):
            return True
        if not word.isascii() and any(term in word for term in _ID_CJK):
            return True
    return _CAMEL_ID.search(text, start, end) is not None


_CLAUSE_END = re.compile(r"[.;!?。！？][^\S\n]|[\n。；]")
_RUN = re.compile(r"[A-Za-z]+|\d+")
_TOKEN_CHARS = re.compile(r"[A-Za-z0-9_+/=~-]+")
_CAMEL_WORD = re.compile(r"[A-Z][a-z]{2,}")


def _credential_value(value: str) -> bool:
    """Whether a value the sentence calls a credential is one: a UUID, a long number, letters and digits
    interleaved (`yb1slrkk3imnwp8bi`) or a random-looking token; not a word, a name, a type or a version."""
    if len(value) < 10:
        return _short_credential(value)
    if _UUID.fullmatch(value):
        return len(set(value.lower())) > 5  # the nil UUID and `11111111-…` stand in for one
    # `grpc.ChannelCredentials`, `sk-[name]-[20`, `Ed25519PrivateKey`: code, a template, a type
    if not _TOKEN_CHARS.fullmatch(value) or _camel_words(value) * 2 >= len(value):
        return False
    if _random_token(value):
        return True  # random-looking, and no identifier, path, hash or base64 of words
    # `prod-db-2`, `v1-2-3`, `2024-01-15`: names, versions and dates have separators
    if not value.isalnum():
        return False
    if value.isdigit():
        return len(value) >= 12
    # `release2024` and `utf8mb4` are a word and a number; a generated value alternates more (and base64 of
    # words is encoded text, no key)
    return len(_RUN.findall(value)) >= 3 and not (_benign(value) or plain_base64(value))


_QUANTITY = re.compile(r"\d+[A-Za-z]{1,5}|[A-Za-z]{1,3}\d+|#[0-9A-Fa-f]{3,8}")  # `3600sec`, `v2`, a colour


def _short_credential(value: str) -> bool:
    """Whether a value of six to nine characters the sentence calls a credential is one (`k9X2m7q4`,
    `Tr0ub4!x`, `x7k2m9q4`): letters and digits alternating at least three times, and no number with a
    unit (`3600sec`), a short version (`v2`, `sha256`), a colour, a hash, a date or a path."""
    if len(value) < 6 or _benign(value) or _NEAR_MISS_VALUE.fullmatch(value) or _QUANTITY.fullmatch(value):
        return False
    if not any(c.isdigit() for c in value) or not any(c.isalpha() for c in value):
        return False
    if any(c in "./:\\@" for c in value):
        return False  # a version, a path, a time or an address
    # a generated value alternates letters and digits; a word and a number (`OAuth2`, `Win2019`) does not
    return len(_RUN.findall(value)) >= 3


def _camel_words(value: str) -> int:
    """How many letters of `value` are capitalised words (`Private`, `Key`): most, in a type's name."""
    return sum(len(word) for word in _CAMEL_WORD.findall(value))


def credential_prose(text: str, depth: int) -> Iterator[Span]:
    """A value the sentence itself calls a credential, a secret, a token, an API key or a password, whatever
    its shape (a UUID or a short lowercase value too), unless the words say it is an id or public."""
    priority = _PRIORITY["generic_secret"]
    lower = text.lower()
    if len(lower) != len(text):
        return  # a letter that grows when lowered would shift the indices; the rules above still run
    for word in _credential_words(lower):
        if word.start() > 0 and text[word.start() - 1] in ":./":
            continue  # a segment of a path (`arn:…:secret:name`, `vault/secret`, `config.secret`)
        bare = False
        match = _CREDENTIAL_TAIL.match(text, word.end())
        if match is None:
            match = _CREDENTIAL_TAIL_AFTER_NOUN.match(text, word.end())
        if match is None and _AFTER_NOUN_WORD.match(word.group()):
            match = _CREDENTIAL_TAIL_AFTER_NOUN_COLON.match(text, word.end())
        if match is None:
            match = _CREDENTIAL_BARE.match(text, word.end())
            bare = True
        if match is None:
            continue
        value = match.group("value").rstrip(_TRAILING)
        start = match.start("value")
        if _LATIN_LETTER.match(text, match.end("value")) or _NAME_THEN_VALUE.match(value):
            continue
        if not _credential_value(value):
            continue
        if len(value) < 10 and (bare or "=" in text[word.end() : start] or text[start - 1] in "\"'`"):
            continue  # a short value only in prose: `token = 1*tchar`, `Token: "#ddd0c0",` are code

        clause = max(word.start() - 60, 0)
        for end in _CLAUSE_END.finditer(text, clause, word.start()):
            clause = end.end()
        if not _names_an_id(text, lower, clause, start):
            yield start, start + len(value), priority
