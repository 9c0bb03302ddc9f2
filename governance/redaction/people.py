"""Passwords in what people write to each other (approvers' notes, commit messages, tickets, e-mails, chat),
where no word names them or the word is far away: "Break-glass is .#O_~1y6o7m3#I if SSO is down", "set the
staging admin to Maple_falcon24# for the demo", "Log in as `qa@example.com` / `Maple.meadow48%`", "Sure,
it's Pepper-saffron18! (case matters)", "Logga in som admin med pwSNpsv42INx~", in any language.

A typed password has a shape ordinary words, names and code rarely have: letters and digits with a symbol
people add to satisfy a password policy (`# $ % & * ~ ^ !`), in one run with no space. What else has that
shape is excluded by its own marks: references and variables (`$HOME`, `%PATH%`, `&amp;`), versions and
decimals (`Python3.11!`), percent-encoding, paths and URLs (`/`, `:`), e-mail addresses, issue references
(`issue#1234`), Javadoc-style members (`String#valueOf2`), hashtags and colours (`#DevOps2024`, `#1a2b3c`),
globs and Markdown emphasis (`*_test2`, `**Step2**`), `user%password` (smbclient's rule keeps the user)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from governance.redaction.kinds import _PRIORITY, Span
from governance.redaction.names import _benign, _looks_random

__all__ = ["password_shapes", "POLICY_SYMBOLS"]

POLICY_SYMBOLS = ("#", "$", "%", "&", "*", "~", "^", "!")
# a run of printable characters holding one of the symbols, between spaces or the quotes and brackets that
# set a value apart in prose (`…`, (…), "…", «…»)
# (possessive: a word without a symbol is passed over once, never backtracked into)
_CANDIDATE = re.compile(r"(?<![^\s`'\"(«“\[])[^\s`'\"()«»“”\[\]#$%&*~^!]*+[#$%&*~^!][^\s`'\"()«»“”\[\]]*+")
_TRAILING = ".,;:?"
_REJECT_CHARS = frozenset("/\\@=<>{}|:;,+")
_VERSION = re.compile(r"\d\.\d")
_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
_ISSUE = re.compile(r"[A-Za-z][A-Za-z-]*#\d+")
_MEMBER = re.compile(r"[A-Z][A-Za-z0-9]*#[a-z][A-Za-z0-9]*")
# a label and an id (`Ticket#INC0012345`, `SKU#AB-1234`), a brand (`AT&T`), a currency (`US$100m`)
_LABEL_ID = re.compile(r"[A-Za-z]{2,12}#(?:[A-Z0-9-]*\d[A-Z0-9-]*|\d[\w.-]*)")
# a star argument, a regex's character class, a colour
_STAR_ARGS = re.compile(r"\*{1,2}[A-Za-z_][\w.]*")
_REGEXISH = re.compile(r"a-z|A-Z|0-9|\.\*|\\")
_COLOUR = re.compile(r"#[0-9A-Fa-f]{3,8}(?![0-9A-Za-z])")
# an anchor: a name, `#`, a lower-case slug (`RFC2616#section-14`, `foo_bar#baz2`)
_ANCHOR = re.compile(r"(?P<name>[^#]+)#[a-z][a-z0-9_-]*")
_BRAND = re.compile(r"[A-Z]&[A-Z]|(?<![A-Za-z])[A-Z]{1,3}\$\d")
# words joined by a separator, digits, then `!`: how people finish a memorable password ("Pepper-saffron18!"),
# not an exclamation ("Welcome2024!")
_BANG_END = re.compile(r"[A-Za-z]+[._-][A-Za-z]{3,}\d{1,4}!+")


def _typed_password(value: str) -> bool:
    """Whether `value` has the shape of a password someone typed (see the module's docstring)."""
    if not 8 <= len(value) <= 64 or not value.isascii() or _REJECT_CHARS.intersection(value):
        return False
    letters = sum(c.isalpha() for c in value)
    digits = sum(c.isdigit() for c in value)
    if letters < 3 or digits < 1 or value[0] in "$%&^" or _benign(value):
        return False
    if _VERSION.search(value) or _ESCAPE.search(value) or _BRAND.search(value):
        return False
    if _ISSUE.fullmatch(value) or _MEMBER.fullmatch(value) or _LABEL_ID.fullmatch(value):
        return False
    symbols = [c for c in value if c in POLICY_SYMBOLS]
    mixed = any(c.isupper() for c in value) and any(c.islower() for c in value)
    if value[0] == "*" and value[-1] == "*" or _STAR_ARGS.fullmatch(value) or value[0] == "~":
        return False  # Markdown emphasis, `*args`/`**kwargs`, Sphinx's `~module.Class`
    if _REGEXISH.search(value) or _COLOUR.match(value):
        return False
    anchor = _ANCHOR.fullmatch(value)
    if anchor is not None and not (
        any(c.isupper() for c in anchor.group("name")) and any(c.islower() for c in anchor.group("name"))
    ):
        return False
    if set(symbols) <= {"*", "!", "~", "^", "&"}:
        # a glob's, a negation's, an exclamation's, a shell's or a maths symbol: the rest must look typed too
        if set(symbols) == {"!"} and "!" not in value.rstrip("!"):
            return _BANG_END.fullmatch(value) is not None
        plain = "".join(c for c in value if c not in POLICY_SYMBOLS)
        if not mixed or not _looks_random(plain):
            return False
    if set(symbols) == {"%"} and "%" in value[:-1]:
        return False  # `user%password` (smbclient's), a format: the command rules read those
    if value[0] == "#" and len(symbols) == 1 and not _looks_random(value[1:]):
        return False  # a hashtag, a colour, an anchor
    return True


def password_shapes(text: str, depth: int) -> Iterator[Span]:
    priority = _PRIORITY["password"]
    for match in _CANDIDATE.finditer(text):
        value = match.group().rstrip(_TRAILING)
        if _typed_password(value):
            yield match.start(), match.start() + len(value), priority
