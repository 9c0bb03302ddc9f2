"""The value before the word naming it: "X is the Heroku API key", "use X as the token", "X — that's the prod
password", "X ist das Heroku-Passwort", "X est le jeton Heroku", "X가 Heroku API 키입니다",
"XがHerokuのAPIキーです", "X是Heroku的API密钥", "使用X作为令牌".

A word naming a credential (the words of `credential_prose`), the noun ending there (not "the password hash",
"the token store", "the API key ID": a compound whose head is another noun; in the languages that put the
noun first, one name may follow it), and before it, on its line, a value joined to it by a link: "use … as",
"is/was/will be the", "— that's the", `ist das`, `es la`, `est le`, `это`, a CJK particle (`が`, `は`,
`を…として`, `是`, `作为`, `가`, `는`, `을…으로`). The words between may name what it is for ("the Heroku",
"our prod") but not an id, a name or metadata ("the request id for the API key call"). The value goes when
`credential_prose` would take it after the word (a UUID, a long number, letters and digits interleaved, a
random token), or when it has a password or random shape; never a flag, a template or lower-case words
joined by `-` or `_` (`oauth2-proxy`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from governance.redaction.kinds import _PRIORITY, Span
from governance.redaction.names import _UUID, _benign, _looks_random, _password_like
from governance.redaction.prose import (
    _CREDENTIAL_NEEDLE,
    _CREDENTIAL_WORD,
    _TRAILING_NEEDLES,
    _credential_value,
    _names_an_id,
)

__all__ = ["VALUE_FIRST_NEEDLES", "value_first"]

VALUE_FIRST_NEEDLES = (
    "cred", "secret", "token", "key", "pass", "pwd", "kennwort", "schlüssel", "zugang", "contrase", "clave",
    "clé", "jeton", "senha", "chave", "segredo", "chiave", "segreto", "пароль", "токен", "ключ", "секрет",
    "данные", "トークン", "キー", "パスワード", "令牌", "密钥", "密码", "密碼", "토큰", "키", "비밀번호",
    "패스워드", "비번",
)  # fmt: skip

_VALUE = r"(?P<v>[\x21-\x7e]{6,}?)"
_Q = r"[\"'`“‘]?"
_QE = r"[\"'`”’]?"
# what may stand between the link and the word: an article, then at most three words ("the Heroku", "our
# prod"), in the English links; any twenty characters of a line in the CJK ones (the id check reads them)
_FILL = r"(?:(?:the|a|an|our|my|your|their|its|this)[^\S\n]+)?(?:[\w-]+[^\S\n]+){0,3}?$"
_CJK_FILL = r"[^\n。．.!?！？]{0,20}?$"
_LINKS = (
    # "use X as the token", "with X as the password"
    re.compile(
        rf"(?i)\b(?:use|using|with|try|enter|type|set|paste)[^\S\n]+{_Q}{_VALUE}{_QE}[^\S\n]+as[^\S\n]+{_FILL}"
    ),
    # "X is the Heroku API key", "X was our staging password"
    re.compile(
        rf"(?i)(?<![\x21-\x7e]){_Q}{_VALUE}{_QE}[^\S\n]+(?:is|was|will[^\S\n]+be|should[^\S\n]+be)"
        rf"[^\S\n]+(?=(?:the|a|an|our|my|your|their|its)[^\S\n]){_FILL}"
    ),
    # "X — that's the prod password", "X, which is the token"
    re.compile(
        rf"(?i)(?<![\x21-\x7e]){_Q}{_VALUE}{_QE}[^\S\n]*(?:—|–|--?|,|\()[^\S\n]*"
        rf"(?:that's|that[^\S\n]+is|that[^\S\n]+was|this[^\S\n]+is|it's|it[^\S\n]+is|which[^\S\n]+is)[^\S\n]+"
        rf"{_FILL}"
    ),
    # German: "X ist das Heroku-Passwort", "X ist der API-Schlüssel für Heroku"
    re.compile(
        rf"(?i)(?<![\x21-\x7e]){_Q}{_VALUE}{_QE}[^\S\n]+(?:ist|war)[^\S\n]+"
        r"(?:(?:der|die|das|unser|unsere)[^\S\n]+)?(?:[\w-]+[^\S\n]+){0,2}?(?:\w+-)?$"
    ),
    # Japanese "XがHerokuのAPIキーです", "Xをトークンとして"; Chinese "X是Heroku的API密钥"; Korean
    # "X가 … 키입니다", "X를 토큰으로"
    re.compile(
        rf"(?<![\x21-\x7e]){_Q}{_VALUE}{_QE}[^\S\n]*(?:が|は|を|是|为|為|가|이|는|은|을|를)[^\S\n]*{_CJK_FILL}"
    ),
    # Chinese: "使用X作为令牌", "用X当作API密钥"
    re.compile(
        rf"(?:使用|用|把|以)[^\S\n]*{_Q}{_VALUE}{_QE}[^\S\n]*(?:作为|作為|当作|當作|做为)[^\S\n]*{_CJK_FILL}"
    ),
)
# no link at all: the value opens the line and at most two names stand before the word ("<uuid> heroku api
# key (from heroku auth:token)"); only a value `credential_prose` would take, ten characters or more
_LINE_OPENS = re.compile(
    rf"(?m)^[^\S\n]*(?:[-*•][^\S\n]+)?{_Q}(?P<v>[\x21-\x7e]{{10,}}?){_QE}[^\S\n]+(?:[^\W\d_][\w-]*[^\S\n]+){{0,2}}?$"
)
_OPENS_HINT = re.compile(r"[^\S\n]*(?:[-*•][^\S\n]+)?[\x21-\x7e]{10,}[^\S\n]")
_OPEN_PAREN = re.compile(r"[^\S\n]*\(")
# Spanish, French, Portuguese, Italian, Russian put the noun first and a name after it ("X es la clave de API
# de Heroku", "X est le jeton Heroku", "X — это токен Heroku"): the word follows the article at once
_NOUN_FIRST_LINK = re.compile(
    rf"(?i)(?<![\x21-\x7e]){_Q}{_VALUE}{_QE}[^\S\n]+(?:es|era|est|était|é|è|это|—[^\S\n]+это)[^\S\n]+"
    r"(?:(?:el|la|le|notre|nuestra|nuestro|o|a|il|lo|nostro|nostra|un|una|une|um|uma)[^\S\n]+|l')?$"
)
_PASSWORD_WORD = re.compile(r"pass|pwd|kennwort|contrase|senha|пароль|パスワード|密码|密碼|비밀번호|패스워드")
_NAME_THEN_END = re.compile(r"[^\S\n]+[^\W\d_][\w-]{1,29}")
# where the noun ends after the word: the clause or the line, a preposition or another clause, or a CJK
# copula or case ending; not another noun ("password hash", "token store", "API key ID", "令牌库")
# lower-case words joined by `-` or `_`: a name, unless random enough to be a credential whatever its words
_JOINED_NAME = re.compile(r"[a-z0-9]+(?:[-_][a-z0-9]+)+")
_NOUN_ENDS = re.compile(
    r"(?i)[\"'`”’)]?(?:[^\S\n]*(?:$|[\n.,;:!?)\]」』。，、！？—–]|-[^\S\n])"
    r"|[^\S\n]+(?:for|of|on|in|at|from|to|with|we|you|they|i|here|there|and|but|so|that|which|now|again"
    r"|please|then|when|if|until|since|too|as|used|by|-|für|von|vom|de|du|del|da|do|di|per|pour|para|para|для"
    r"|от|und|y|et|e)(?![\w-])"
    r"|です|だ|でした|として|なので|なの|なん|で(?![\w])|입니다|이다|이에요|예요|였|이고|으로|로(?![\uac00-\ud7a3])|야|이야)",
    re.MULTILINE,
)


# what any link holds, looked for before the words are read: most lines that name a key or a token
# (`token_ttl: 3600`, `api_key = os.environ[...]`) have none
_LINK_HINT = re.compile(
    r"[^\S\n](?:as|is|was|be|ist|war|es|era|est|était|é|è|это)[^\S\n]|[—–,(]|-[^\S\n]|[がはを是为為作가이는은을를]"
)


_HEX = re.compile(r"[0-9A-Fa-f]+")
_ARTICLE = re.compile(r"(?i)\b(?:the|a|an|this|that|our|my|your)\b")


def _opening_credential(value: str, between: str) -> bool:
    """A value opening its line before a name and a credential word, with no link: a UUID or a credential
    shape, never hex alone (a git log line: `3f9a2c1d4e fix the token`) nor words with an article between."""
    if _ARTICLE.search(between):
        return False
    if _UUID.fullmatch(value):
        return _credential_value(value)
    return _HEX.fullmatch(value) is None and _credential_value(value)


def _words(lower: str) -> Iterator[re.Match[str]]:
    """The words naming a credential in the lower-cased text that a link may precede on their line, each
    once, read around the literal pieces."""
    done = 0
    size = len(lower)
    for hit in _CREDENTIAL_NEEDLE.finditer(lower):
        at = hit.start()
        if at < done:
            continue
        line_start = lower.rfind("\n", 0, at) + 1
        if _LINK_HINT.search(lower, max(line_start, at - 120), at) is None and (
            at - line_start > 100 or _OPENS_HINT.match(lower, line_start, at) is None
        ):
            continue
        end = min(at + 20, size)
        while end < size and lower[end].isalpha():
            end += 1
        begin = max(at - 12, 0) if hit.group() in _TRAILING_NEEDLES else at
        for word in _CREDENTIAL_WORD.finditer(lower, begin, end):
            if word.start() >= done:
                done = word.end()
                yield word


def value_first(text: str, depth: int) -> Iterator[Span]:
    """A value the sentence names as a credential after it ("use X as the token", "X is the API key")."""
    priority = _PRIORITY["password"]
    lower = text.lower()
    if len(lower) != len(text):
        return  # a letter that grows when lowered would shift the indices
    for word in _words(lower):
        if word.start() > 0 and text[word.start() - 1] in ":./_":
            continue  # a segment of a path or a name (`arn:…:secret`, `vault/secret`, `OPENAI_API_KEY`)
        line_start = text.rfind("\n", 0, word.start()) + 1
        begin = max(line_start, word.start() - 120)
        match = None
        ends = _NOUN_ENDS.match(text, word.end()) is not None
        if ends:
            for link in _LINKS:
                match = link.search(text, begin, word.start())
                if match is not None:
                    break
        if match is None and (ends or _OPEN_PAREN.match(text, word.end())):
            match = _LINE_OPENS.search(text, begin, word.start())
            if match is not None and not _opening_credential(
                match.group("v"), text[match.end("v") : word.start()]
            ):
                match = None
        if match is None:
            # "le jeton Heroku": one name may follow the noun in the languages that put it first
            name = _NAME_THEN_END.match(text, word.end())
            if not ends and (name is None or _NOUN_ENDS.match(text, name.end()) is None):
                continue  # "the password hash", "the token store": the word qualifies another noun
            match = _NOUN_FIRST_LINK.search(text, begin, word.start())
            if match is None:
                continue
        value = match.group("v")
        if _benign(value) or value[0] in "-{<[$%" or value[-1] in "}>]":
            continue  # a flag (`--token`), a placeholder or a template (`{value}`, `<token>`, `${TOKEN}`)
        if _names_an_id(text, lower, match.end("v"), word.end()):
            continue  # the words between say id or name
        if _JOINED_NAME.fullmatch(value) and not _credential_value(value):
            continue  # `oauth2-proxy`, `node_modules`, `k8s-secret-v2`: a package's or a resource's name
        if match.re is _NOUN_FIRST_LINK and not _PASSWORD_WORD.search(word.group()):
            ok = _credential_value(value) or _looks_random(value)  # "OAuth2 est le jeton standard"
        else:
            ok = _credential_value(value) or _password_like(value) or _looks_random(value)
        if ok:
            yield match.start("v"), match.end("v"), priority
