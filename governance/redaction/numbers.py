"""Numbers that identify a payment card or a person: Luhn-valid card numbers (not a processor's published
test numbers) and Korean resident registration numbers."""

from __future__ import annotations

import re
from collections.abc import Iterator

from governance.redaction.kinds import _PRIORITY, Span

# separators: a space, a dash, or a dash between spaces ("6011 - 6239 - ...")
_CARD = re.compile(r"(?<![0-9A-Za-z.,/:_-])[2-6]\d{3}(?:(?: - |[ -])?\d){9,15}(?![0-9A-Za-z_-]|\.\d)")
_CARD_SEPARATOR = re.compile(r" - |[ -]")


def _luhn(digits: str) -> bool:
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = int(char)
        if index % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


# the test numbers payment processors publish for their sandboxes (Stripe, Braintree, Adyen, PayPal docs):
# public, and no bank issues them, so they are kept like any documented example
_TEST_CARDS = frozenset(
    """4242424242424242 4000056655665556 5555555555554444 2223003122003222 5200828282828210
    5105105105105100 378282246310005 371449635398431 6011111111111117 6011000990139424 6011981111111113
    3056930009020004 36227206271667 3566002020360505 6200000000000005 4000002500003155 4000000000003220
    4000000000009995 4000000000000002 4000000000000077 4000000000000341 4111111111111111 4012888888881881
    4222222222222 5431111111111111 378734493671000 6011601160116611 3530111333300000 30569309025904
    38520000023237 4005519200000004 4009348888881881 5500000000000004 340000000000009 30000000000004
    4000000000000010 4000000000000028 4000000000000036 4000000000000101 4000000000000119""".split()
)


def _cards(text: str, depth: int) -> Iterator[Span]:
    """13 to 19 digits, grouped by fours (or 4-6-5) with one kind of separator or none, Luhn-valid; not a
    processor's published test number."""
    priority = _PRIORITY["card_number"]
    for match in _CARD.finditer(text):
        found = match.group()
        separators = set(_CARD_SEPARATOR.findall(found))
        if len(separators) > 1:
            continue
        digits = _CARD_SEPARATOR.sub("", found)
        if not 13 <= len(digits) <= 19 or not _luhn(digits) or digits in _TEST_CARDS:
            continue
        if separators:
            groups = [len(g) for g in _CARD_SEPARATOR.split(found)]
            if groups[:-1] != [4] * (len(groups) - 1) and groups[:2] != [4, 6]:
                continue
        yield match.start(), match.end(), priority


# birth date, a dash, a 1-8 and six digits; without the dash only right after the word naming it
_RRN = re.compile(
    r"(?<![0-9A-Za-z-])\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])[^\S\n]?[-–][^\S\n]?[1-8]\d{6}(?![\d-])"
    r"|(?:주민(?:등록)?번호)[^\S\n]*[:은는]?[^\S\n]*(?P<bare>\d{6}[1-8]\d{6})(?!\d)"
)


def _rrn(text: str, depth: int) -> Iterator[Span]:
    priority = _PRIORITY["resident_number"]
    for match in _RRN.finditer(text):
        start, end = match.span("bare") if match.group("bare") else match.span()
        yield start, end, priority
