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

from governance.redaction.generic import plain_base64
from governance.redaction.kinds import _PRIORITY, Span
from governance.redaction.names import (
    _NEAR_MISS_VALUE,
    _STOPWORDS,
    _benign,
    _looks_random,
    _password_like,
    _strong_password_like,
)

__all__ = ["multilingual_prose", "passphrases"]

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
    r"|passord(?:et)?|adgangskode(?:n)?|salasana|heslo|jelszó|jelszava|parolă|kata[ ]sandi|mật[ ]khẩu"
)
# Russian: Cyrillic words need Cyrillic word boundaries
_CYRILLIC_WORDS = r"пароль|пароля|паролем|ключ(?:[ ]api|[ ]доступа)?|токен|секрет|секретный[ ]ключ"
_CJK_WORDS = (
    # Arabic, Persian, Hindi, Thai, Hebrew, Greek: scripts whose words the boundaries above do not cover
    r"كلمة[ ](?:ال)?مرور|كلمة[ ](?:ال)?سر|رمز[ ]عبور|गुप्त[ ]शब्द|पासवर्ड|รหัสผ่าน|סיסמה|הסיסמה"
    r"|κωδικός|συνθηματικό|"
    r"パスワード|パスフレーズ|暗証番号|合言葉|トークン|秘密鍵|シークレット|APIキー|アクセスキー"
    r"|密码|密碼|口令|密钥|秘钥|金鑰|令牌|私钥"
    r"|비밀번호|비번|패스워드|암호|토큰|시크릿|비밀키|API\s?키|액세스\s?키"
)
# what introduces the value: Latin and Cyrillic verbs need word boundaries, CJK particles do not
# ("パスワードはyAoe…", "密码是Kx9…")
_SEPARATORS = r"is|was|ist|lautet|lauten|war|es|era|est|était|sont|é|è|são|sono|это|—|jest|là|adalah|är|er|on"
_CJK_SEPARATORS = r"是|为|為|は|が|은|는|이|가|هي|है|คือ|היא|είναι"
_WORD = (
    rf"(?:(?<![A-Za-zÀ-ÿ])(?:{_LATIN_WORDS})(?![A-Za-zÀ-ÿ])"
    rf"|(?<![а-яёА-ЯЁ])(?:{_CYRILLIC_WORDS})(?![а-яёА-ЯЁ])|{_CJK_WORDS})"
)
_OPEN = r"(?:[「『“\"'`(（‹]|«[^\S\n]?)?"
_PROSE = re.compile(
    rf"(?i){_WORD}"
    # a few words between the name and the verb ("for the staging server", "de la base", "del servidor")
    r"(?P<fill>(?:[^\S\n]+[^\s:=：]{1,30}){0,4}?)"
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
_PROSE_BARE = re.compile(rf"(?i){_WORD}[^\S\n]+{_OPEN}(?P<value>[\x21-\x7e]{{8,}})")
# words that name a password (not a key or a token): with no separator, a strong password shape is enough
# ("senha Qw7!rTz9#Lp2", "密码 Qw7!…")
_PASSWORD_WORD = re.compile(
    r"(?i)pass|pwd|mdp|senha|пароль|密码|密碼|口令|パスワード|暗証|비밀번호|비번"
    r"|kennwort|contrase|mot de passe|parola|şifre|sifre|wachtwoord|has[łl]o|lösenord|passord|adgangskode"
    r"|salasana|heslo|jelsz|parolă|kata sandi|mật khẩu|كلمة|رمز|पासवर्ड|गुप्त|รหัสผ่าน|סיסמה|הסיסמה|κωδικ"
    r"|συνθηματικ"
)
_NAME_THEN_VALUE = re.compile(r"[A-Za-z_][\w.-]*[=:]")
_LATIN_LETTER = re.compile("[À-ÖØ-öø-ÿ]")
_TRAILING = ".,;:)]}'\"`”’」』）»›"


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
