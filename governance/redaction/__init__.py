"""Redaction of what must never reach published memory: `<private>` spans and secret-shaped strings.

Staging keeps the raw text for audit; only the promoted copy is cleaned. The report says which kinds were
removed and how many times, never the removed text itself, so it can be stored in a `memory_events` row.
A false negative leaks a credential to every reader of the scope; a false positive costs a word in a
memory. Both are measured against labelled corpora in tests/governance/test_redaction.py and against the
evaluation corpus written from vendors' documentation (tests/data/redaction_eval, docs/redaction.md).
Free text written beside memory (notes, reasons, descriptions) goes through `redact_free_text`.

How a text is scanned:

* Zero-width characters (U+200B..U+200D, U+2060, U+FEFF) are dropped before matching, so a key broken by
  invisible characters is still one key. When nothing is found the text comes back untouched (with them);
  otherwise the cleaned text is the one without them. Characters NFKC turns into one ASCII character
  (full-width `ｇｈｐ＿`, `：`) are matched as that character.
* Every detector reports spans; overlapping spans are merged and each merged span counts once, under the
  kind of its most specific detector (the order of `_KINDS`).
* Shapes come from the maintained `detect-secrets` scanner: the compiled `denylist` regexes of its
  plugins (Stripe, Twilio, SendGrid, Discord, Telegram, GitLab, npm, PyPI, Mailchimp, Square, Azure
  storage keys, JWT, private keys...) are run directly on the text, without its baseline and file
  machinery; its keyword list widens the secret names; its Shannon entropy decides whether a value under
  an ambiguous name (`token`, `key`, `session`...) is random enough to be a credential.
* Own rules cover what it lacks or matches too narrowly: newer token prefixes (GitLab, npm, PyPI, Vault,
  Shopify, Google OAuth, Hugging Face...), Azure connection strings and SAS signatures, credentials in
  URLs, `key=value` assignments, CLI flags (`--password x`, `mysql -p x`, `curl -u user:x`), passwords in
  English and Korean prose, Luhn-valid card numbers and Korean resident registration numbers; a secret
  named in German, Spanish, French, Japanese or Chinese prose, passphrases, XML elements, `docker login
  -p`, `configure set <name> <value>` (prose.py, detectors.py).
* 93 vendor token formats are data (catalogue.toml): each runs when its keyword is in the text, and once
  more on the reversed text when a reversed keyword is there (`ks_evil_...`).
* Rules that need no vendor format (generic.py): a random-looking token beside a word naming a secret in
  any of ten languages, credentials passed by position, credential files and connect strings, password
  hashes, PIN/CVV, WIF keys, Wi-Fi QR payloads, the value before the word ("use X as the password"), and
  a value the sentence calls a credential, whatever its shape (a UUID too), unless its words say it is an
  id or public ("the airtable credential is X", but "the API key ID is X"; prose.py).
* Secrets no word names (transcripts.py: commands and what terminals and protocols print; people.py: a
  typed password's shape in notes, tickets, e-mails and chat) and secrets hidden by percent-encoding
  (disguised.py: decoded and scanned again, cut as written).
* What agents' tools print and write: Oracle's `IDENTIFIED BY`, a setter named after a secret
  (`.password("x")`), a password-manager export's password and TOTP columns, a Windows answer file's
  `<Value>`, MinIO's `mc alias set`, the value a GitHub Actions log masks (generic.py, assignments.py,
  commands.py).
* A vendor's documented example (`AKIAIOSFODNN7EXAMPLE`), a processor's test card, a key its vendor
  publishes (`pk_live_…`), and a placeholder or reference where a value would be (`user:password@`,
  `${VAR}`, `op://…`, Terraform's `(sensitive value)`) are kept, and so is ciphertext for a key the text
  does not hold (SOPS `ENC[…]` values, a SealedSecret's `encryptedData:`).
* A secret wrapped over several lines is found in a second pass over the text with its line breaks
  removed (only where the next line starts with something that does not look like a word), or with the
  quotes and operator between two string literals removed (`"ghp_…" +` / `"…"`), or a shell line
  continuation (`\\` at a line's end) removed, and a base64
  run is decoded and scanned again: when the decoded text holds a secret, the whole run goes.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from governance.redaction.catalogue import _PLACEHOLDER_BODY, reversed_spans
from governance.redaction.detectors import _spans
from governance.redaction.kinds import _KEEP_EXACT, _KINDS, PLACEHOLDER, Span
from governance.redaction.names import _benign, _looks_random, _name_class, ciphertext_regions, is_secret_name

__all__ = ["Redaction", "redact", "redact_json", "redact_free_text", "is_secret_name", "PLACEHOLDER"]

# kinds found by what a name or a word says, whose value may still be a placeholder
_NAMED_KINDS = frozenset({"url_credentials", "password", "generic_secret"})
_ZERO_WIDTH = re.compile("[\u200b\u200c\u200d\u2060\ufeff]")
_LEFT_SET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_+/-")
_EXTEND_RIGHT = re.compile(r"[A-Za-z0-9_+/=-]+")


# a character that may have an ASCII compatibility form: not ASCII, and not one of the letters of Korean,
# Japanese or Chinese text (Hangul syllables, kana, CJK ideographs), which NFKC leaves as they are
_FOLDABLE = re.compile("[^\x00-\x7f\uac00-\ud7a3\u3040-\u30ff\u4e00-\u9fff]")


@cache
def _ascii_form(char: str) -> str | None:
    """The ASCII character NFKC makes of `char` (`ｇ`, `２`, `：`, `𝐠`, `ⓖ`), if it makes exactly one."""
    folded = unicodedata.normalize("NFKC", char)
    return folded if len(folded) == 1 and folded.isascii() and folded != char else None


def _fold(text: str) -> str:
    """`text` with every character NFKC turns into one ASCII character replaced by it: indices are kept,
    so spans found in the folded text cut the text as written."""
    if text.isascii() or _FOLDABLE.search(text) is None:
        return text
    table = {ord(c): f for c in set(text) if not c.isascii() and (f := _ascii_form(c)) is not None}
    return text.translate(table) if table else text


# ---------------------------------------------------------------------------------------------------------
# secrets wrapped over lines

# (a quoted e-mail's `> ` markers, one per level, open the next line of the same paragraph)
_BREAK = re.compile(r"(?<=[A-Za-z0-9+/=_-])[^\S\n]*\r?\n[^\S\n]*(?:>[^\S\n]*)*(?=[A-Za-z0-9+/=_-])")
_TOKEN_AFTER = re.compile(r"[A-Za-z0-9+/=_-]+")
_TOKEN_SET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-")


def _token_before(text: str, index: int, limit: int) -> int:
    """How many token characters end at `index` (counting stops at `limit`)."""
    count = 0
    while count < limit and index - count > 0 and text[index - count - 1] in _TOKEN_SET:
        count += 1
    return count


# what a line usually starts with: a word, a number, a date; a wrapped secret goes on with none of these
_WORDISH = re.compile(r"[A-Za-z][a-z]*|[A-Z]{1,7}|\d{1,6}(?:[./:-]\d+)*|\d{4}-\d{2}-\d{2}T[\d:.]*|-+|=+")


# a string literal continued in the next one: `"ghp_abc" +\n "def"`, `'x' . 'y'`, `"a" "b"`, `'a' || 'b'`
_CONCAT = re.compile(
    r"(?<=[A-Za-z0-9+/=_-])(?P<q>[\"'])[^\S\n]*(?:\+|\.{1,2}|\|\||&)?[^\S\n]*\\?\r?\n?[^\S\n]*"
    r"(?:\+|\.{1,2}|\|\||&)?[^\S\n]*(?P=q)(?=[A-Za-z0-9+/=_-])"
)


def _line_joints(text: str) -> list[tuple[int, int]]:
    """Line breaks inside what may be one token: the next line starts with no word, number or date."""
    out: list[tuple[int, int]] = []
    for match in _BREAK.finditer(text):
        after = _TOKEN_AFTER.match(text, match.end())
        if after is None or _token_before(text, match.start(), 6) < 6 or _WORDISH.fullmatch(after.group()):
            continue
        last = text[match.start() - _token_before(text, match.start(), 40) : match.start()]
        if last.isalpha() and _benign(last):
            continue  # a word standing for a value (`secretKey: password`) does not run on into the next line
        out.append(match.span())
    return out


# a shell line continuation (`\` at the end of a line) joins the next line to this one
_CONTINUATION = re.compile(r"\\\r?\n[^\S\n]*")


def _concat_joints(text: str) -> list[tuple[int, int]]:
    """The quotes and operator between two string literals that continue one another."""
    return [m.span() for m in _CONCAT.finditer(text) if _token_before(text, m.start(), 6) >= 6]


def _wrapped(text: str) -> list[Span]:
    """Spans of secrets that run across a line break or a string concatenation, found in the text with
    those joints removed."""
    cuts = _line_joints(text) if "\n" in text else []
    if "\\\n" in text or "\\\r\n" in text:
        cuts = sorted(set(cuts) | {m.span() for m in _CONTINUATION.finditer(text)})
    if '"' in text or "'" in text:
        cuts = sorted(set(cuts) | set(_concat_joints(text)))
    pieces: list[str] = []
    starts_c: list[int] = []  # where each piece starts in the collapsed text
    starts_n: list[int] = []  # and in the original
    joints: list[int] = []
    last, length = 0, 0
    for cut_start, cut_end in cuts:
        if cut_start < last:
            continue
        pieces.append(text[last:cut_start])
        starts_c.append(length)
        starts_n.append(last)
        length += cut_start - last
        joints.append(length)
        last = cut_end
    if not joints:
        return []
    pieces.append(text[last:])
    starts_c.append(length)
    starts_n.append(last)
    collapsed = "".join(pieces)

    def to_original(index: int) -> int:
        piece = bisect.bisect_right(starts_c, index) - 1
        return starts_n[piece] + index - starts_c[piece]

    out: list[Span] = []
    for start, end, priority in _spans(collapsed):
        joint = bisect.bisect_right(joints, start)
        if joint < len(joints) and joints[joint] < end:
            out.append((to_original(start), to_original(end - 1) + 1, priority))
    return out


# ---------------------------------------------------------------------------------------------------------
# the public API


@dataclass(frozen=True)
class Redaction:
    """Cleaned text and a count per kind of what was removed (never the removed text)."""

    text: str
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def redacted(self) -> bool:
        """Whether anything was removed."""
        return bool(self.counts)


def _widen(text: str, start: int, end: int, priority: int) -> tuple[int, int]:
    """A shape found inside a longer token takes the whole token, so no piece of it is left behind."""
    if _KINDS[priority] in _KEEP_EXACT:
        return start, end
    while start > 0 and text[start - 1] in _LEFT_SET:
        start -= 1
    right = _EXTEND_RIGHT.match(text, end)
    if right is not None:
        end = right.end()
    return start, end


def redact(text: str) -> Redaction:
    """Remove `<private>…</private>` spans (an unclosed one runs to the end) and secret-shaped strings."""
    normal = _ZERO_WIDTH.sub("", text) if _ZERO_WIDTH.search(text) else text
    # full-width and other compatibility forms (`ｇｈｐ＿…`, `パスワード：x`, `𝐠𝐡𝐩_…`) are scanned as the
    # ASCII they stand for (NFKC, character by character)
    scanned = _fold(normal)
    spans = _spans(scanned)
    if "\n" in scanned or '"' in scanned or "'" in scanned:
        spans.extend(_wrapped(scanned))
    spans.extend(reversed_spans(scanned))
    if spans and PLACEHOLDER in normal:  # redacting redacted text again finds nothing new
        done = [(m.start(), m.end()) for m in re.finditer(re.escape(PLACEHOLDER), normal)]
        spans = [(s, e, p) for s, e, p in spans if not any(a <= s and e <= b for a, b in done)]
    # a documented example (`AKIAIOSFODNN7EXAMPLE`), a template (`sk_live_xxxxxxxx`) or a placeholder
    # (`postgres://user:password@…`, `redis://:${REDIS_PASSWORD}@…`) is no credential
    spans = [
        (s, e, p)
        for s, e, p in spans
        if _KINDS[p] in ("private", "private_key")
        or not (
            _PLACEHOLDER_BODY.search(scanned, s, e) or (_KINDS[p] in _NAMED_KINDS and _benign(scanned[s:e]))
        )
    ]
    # a value encrypted for a key the text does not hold (SOPS `ENC[…]`, a SealedSecret) is no secret
    sealed = ciphertext_regions(scanned) if spans else []
    if sealed:
        spans = [(s, e, p) for s, e, p in spans if not any(a <= s and e <= b for a, b in sealed)]
    if not spans:
        return Redaction(text=text, counts={})

    widened = sorted((*_widen(scanned, s, e, p), p) for s, e, p in spans)
    counts: Counter[str] = Counter()
    out: list[str] = []
    cursor = 0
    index = 0
    while index < len(widened):
        start, end, priority = widened[index]
        index += 1
        while index < len(widened) and widened[index][0] < end:
            end = max(end, widened[index][1])
            priority = min(priority, widened[index][2])
            index += 1
        kind = _KINDS[priority]
        counts[kind] += 1
        out.append(normal[cursor:start])
        out.append("" if kind == "private" else PLACEHOLDER)
        cursor = end
    out.append(normal[cursor:])
    return Redaction(text="".join(out).strip(), counts=dict(counts))


def redact_json(value: Any) -> tuple[Any, dict[str, int]]:
    """Redact a JSON value: every string as `redact` does, and the whole value of a secret-named key.

    `{"password": "hunter2"}` has no secret *shape* in its value; only the key says what it is. Under an
    ambiguous key (`"key"`, `"session"`) a string goes when it looks random; a boolean is never a secret.
    A `"value"` goes when its sibling `"name"` or `"key"` names a secret (`{"name": "DB_PASSWORD", ...}`).
    """
    counts: Counter[str] = Counter()

    def walk(node: Any) -> Any:
        if isinstance(node, str):
            cleaned = redact(node)
            counts.update(cleaned.counts)
            return cleaned.text
        if isinstance(node, dict):
            out: dict[Any, Any] = {}
            label = node.get("name", node.get("key"))
            named = isinstance(label, str) and is_secret_name(label)
            for key, item in node.items():
                if isinstance(item, bool) or item in (None, "", PLACEHOLDER) or not isinstance(key, str):
                    out[key] = walk(item)
                elif is_secret_name(key) or (
                    named and key == "value" and not (isinstance(item, str) and _benign(item))
                ):
                    counts["password"] += 1
                    out[key] = PLACEHOLDER
                elif isinstance(item, str) and _name_class(key) == 1 and _looks_random(item):
                    counts["generic_secret"] += 1
                    out[key] = PLACEHOLDER
                else:
                    out[key] = walk(item)
            return out
        if isinstance(node, list):
            return [walk(item) for item in node]
        return node

    return walk(value), dict(counts)


def redact_free_text(text: str | None) -> str | None:
    """The one rule for free text written beside memory: notes, reasons, descriptions, approaches, titles.

    Observation notes, validation reasons, approval and decision notes, change-request and lift reasons,
    task descriptions and approach records are shown to readers who may not read the task's staging (events,
    exports, promotion and change-request answers), so they are cleaned as promoted content is, before they
    are stored: the same detectors, `<private>` spans removed. `None` stays `None`.
    """
    if text is None:
        return None
    return redact(text).text
