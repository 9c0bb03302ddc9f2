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

from governance.redaction.kinds import _PRIORITY, Span
from governance.redaction.names import _STOPWORDS, _benign, _looks_random, _password_like

__all__ = ["multilingual_prose", "passphrases"]

# words that name a secret; Latin-script ones need word boundaries, CJK ones do not
_LATIN_WORDS = (
    r"passwords?|passwd|passphrase|passcode|pwd|secret|token|api[ _-]?key|access[ _-]?key|secret[ _-]?key"
    r"|private[ _-]?key|pin"
    r"|passwort|kennwort|zugangsdaten|geheimnis|schlüssel|zugangsschlüssel|api-schlüssel"
    r"|contraseña|contrasena|clave(?:[ ]de[ ]acceso)?|secreto|frase[ ]de[ ]contraseña"
    r"|mot[ ]de[ ]passe|mdp|phrase[ ]secrète|phrase[ ]de[ ]passe|clé|clef|jeton"
)
_CJK_WORDS = (
    r"パスワード|パスフレーズ|暗証番号|合言葉|トークン|秘密鍵|シークレット|APIキー|アクセスキー"
    r"|密码|密碼|口令|密钥|秘钥|金鑰|令牌|私钥"
    r"|비밀번호|비번|패스워드|암호|토큰|시크릿|비밀키|API\s?키|액세스\s?키"
)
# what introduces the value
_SEPARATORS = r"is|was|ist|lautet|lauten|war|es|era|est|était|sont|是|为|為|は|が|은|는|이|가"
_WORD = rf"(?:(?<![A-Za-zÀ-ÿ])(?:{_LATIN_WORDS})(?![A-Za-zÀ-ÿ])|{_CJK_WORDS})"
_OPEN = r"[「『“\"'`(（]?"
_PROSE = re.compile(
    rf"(?i){_WORD}"
    # a few words between the name and the verb ("for the staging server", "de la base", "del servidor")
    r"(?P<fill>(?:[^\S\n]+[^\s:=：]{1,30}){0,4}?)"
    rf"[^\S\n]*(?:[:=：]|(?<![A-Za-zÀ-ÿ])(?:{_SEPARATORS})(?![A-Za-zÀ-ÿ]))[^\S\n]*:?[^\S\n]*"
    rf"{_OPEN}(?P<value>[\x21-\x7e]{{6,}})"
)
# where a word naming a secret starts, found in the lower-cased text (a case-sensitive scan is ~3x faster)
_WORD_LOWER = re.compile(
    rf"(?:(?<![a-zà-ÿ])(?:{_LATIN_WORDS})(?![a-zà-ÿ])|{_CJK_WORDS.replace('API', 'api')})"
)
_WORD_ANY_CASE = re.compile(rf"(?i){_WORD}")
# no separator: "the api key X for staging", "토큰 X"
_PROSE_BARE = re.compile(rf"(?i){_WORD}[^\S\n]+{_OPEN}(?P<value>[\x21-\x7e]{{12,}})")
_LATIN_LETTER = re.compile("[À-ÖØ-öø-ÿ]")
_TRAILING = ".,;:)]}'\"`”’」』）"


def multilingual_prose(text: str, depth: int) -> Iterator[Span]:
    priority = _PRIORITY["password"]
    lower = text.lower()
    words = _WORD_LOWER.finditer(lower) if len(lower) == len(text) else _WORD_ANY_CASE.finditer(text)
    for word in words:
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
            if _LATIN_LETTER.match(text, match.end("value")):
                continue  # the word goes on past ASCII ("<tu-contraseña>"): not an ASCII password
            if _looks_random(value) or (pattern is _PROSE and _password_like(value)):
                yield start, start + len(value), priority


# "passphrase: correct horse battery staple", "the passphrase is: ..." (words, with an explicit colon)
_PASSPHRASE = re.compile(
    r"(?i)\b(?:passphrase|pass[ -]phrase|phrase[ ]secrète|phrase[ ]de[ ]passe|frase[ ]de[ ]contraseña"
    r"|Passphrase|パスフレーズ|口令短语)"
    r"(?:[^\S\n]+(?:is|was|ist|lautet|es|est))?[^\S\n]*[:：][^\S\n]*[\"'“「]?"
    r"(?P<words>[A-Za-z]{2,}(?:[ -][A-Za-z]{2,}){2,9})"
)


def passphrases(text: str, depth: int) -> Iterator[Span]:
    priority = _PRIORITY["password"]
    for match in _PASSPHRASE.finditer(text):
        words = re.split(r"[ -]", match.group("words"))
        if any(word.lower() in _STOPWORDS for word in words):
            continue  # "passphrase: stored in the vault" is prose
        yield match.start("words"), match.end("words"), priority
