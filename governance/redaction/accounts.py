"""Bank account numbers. An IBAN (ISO 13616), written whole or in groups of four, carries its own proof and is
redacted when its mod-97 check holds (an IBAN-shaped string whose check fails is left alone). A domestic
account number has none: it is redacted only after a word naming an account on a line that is about a bank
(routing number, sort code, checking, savings), so an AWS account id stays."""

from __future__ import annotations

import re
from collections.abc import Iterator

from governance.redaction.kinds import _PRIORITY, Span

__all__ = ["bank_accounts", "ibans"]

# the country code and check digits, then up to 30 letters and digits: whole, or in groups of four split by
# one space (`ES50 8256 5827 1272 9033 6693`, `FR76 3000 6000 0112 3456 7890 189`)
_IBAN = re.compile(
    r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}"
    r"(?:[A-Z0-9]{11,30}|(?: [A-Z0-9]{4}){2,7}(?: [A-Z0-9]{1,3})?)(?![A-Za-z0-9])"
)
# a group of four that ends the run too early: the run is tried shorter, group by group
_GROUP_END = re.compile(r" [A-Z0-9]{1,4}$")


def _valid(candidate: str) -> bool:
    compact = candidate.replace(" ", "")
    if not 15 <= len(compact) <= 34:
        return False
    moved = compact[4:] + compact[:4]
    digits = "".join(str(int(char, 36)) for char in moved)
    return int(digits) % 97 == 1


def ibans(text: str, depth: int) -> Iterator[Span]:
    priority = _PRIORITY["bank_account"]
    for match in _IBAN.finditer(text):
        candidate = match.group()
        while " " in candidate and not _valid(candidate):
            candidate = _GROUP_END.sub("", candidate)  # a word after the IBAN may look like a group
        if _valid(candidate):
            yield match.start(), match.start() + len(candidate), priority


_BANK_LINE = re.compile(
    r"(?i)routing|\baba\b|sort[ ]code|checking|savings|\bbank|\bbsb\b|transit|\bswift\b|\bbic\b|wire"
    r"|kontonummer|\bblz\b|numéro de compte|número de cuenta|número da conta"
)
_ACCOUNT = re.compile(
    r"(?i)(?:\baccount|\bacct|\ba/c|kontonummer|konto|numéro[ ]de[ ]compte|número[ ]de[ ]cuenta"
    r"|número[ ]da[ ]conta)(?:[^\S\n]+(?:number|no\.?|num|nr\.?|#))?[^\S\n]*[:#=]?[^\S\n]*"
    r"(?P<v>\d{6,17})(?![\d.,]\d|[A-Za-z])"
)


# a date written as digits (`20240101`): no account number
_DATE = re.compile(r"(?:19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])")


def bank_accounts(text: str, depth: int) -> Iterator[Span]:
    priority = _PRIORITY["bank_account"]
    for match in _ACCOUNT.finditer(text):
        begin = text.rfind("\n", 0, match.start()) + 1
        end = text.find("\n", match.end())
        line = text[begin : end if end >= 0 else len(text)]
        if _BANK_LINE.search(line) and not _DATE.fullmatch(match.group("v")):
            yield match.start("v"), match.end("v"), priority
