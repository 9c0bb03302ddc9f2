"""Word order that changes what a statement says.

Two words exchanging roles ("A calls B" / "B calls A"), a qualifier moved to another word ("only admins
deploy on Friday" / "admins deploy only on Friday"), and long texts of nearly the same words in another
order (PAWS-shaped pairs; the thresholds are chosen on its tune part, docs/dedup-calibration.md).
Latin-script texts only: Korean marks roles with particles, so its order is free.
"""

from __future__ import annotations

import difflib

from rapidfuzz import fuzz

from governance.wording.canonical import HANGUL, canonical_aliases

__all__ = ["order_difference", "order_signals"]

# words that carry no role of their own: their moving about says nothing about who does what to whom
_FUNCTION_WORDS = frozenset(
    "the a an of in on at to for from by with and or as is are was were be been being it its this that "
    "these those which who whom whose he she they his her their them we our you your i my me also then "
    "there here has have had do does did will would can could should may might must into onto upon over "
    "under between through during after before while since until about against among within without".split()
)
# qualifiers whose place decides what they qualify: "only admins can deploy on Friday" / "admins can
# deploy only on Friday"
_SCOPE_WORDS = frozenset("only not never no except without".split())
# a moved qualifier counts between texts sharing at least this share of their words (Jaccard)
_QUALIFIER_SHARED_WORDS = 0.7
_ARTICLES = frozenset({"the", "a", "an"})
# an exchange needs one of the two words standing where the other stood (chosen on the PAWS tune part:
# requiring both let 0.058 of different-meaning pairs merge there, one 0.041, the labelled sets unchanged)
_EXCHANGE_SLOTS = 1
_PREPOSITIONS = frozenset("in on at by with for from to via through of into onto under over".split())
_COORDINATORS = frozenset({"and", "or", "nor", "plus", "&"})


# "the same words in another order": both texts of at least 12 words, their word sets nearly equal
# (rapidfuzz token_set_ratio >= 0.8), the in-order alignment (difflib ratio of the word sequences) at
# least 0.2 below that, and the shared words in three or more runs (a phrase moved whole makes two);
# chosen on the tune part of PAWS-Wiki dev (docs/dedup-calibration.md). Shorter
# texts are left to the exchange test: a short paraphrase often turns a sentence round ("We use psycopg 3
# as the PostgreSQL driver" / "The PostgreSQL driver we use is psycopg 3")
_REORDER_MIN_WORDS = 12
_REORDER_MIN_RUNS = 3
_REORDER_SAME_WORDS = 0.8
_REORDER_GAP = 0.2


def _order_tokens(text: str, *, join_names: bool = False) -> tuple[list[str], list[bool]]:
    """Case-folded words without punctuation, and which of them carry content (a role: a name, a noun,
    a number, a qualifier); a lone upper-case letter ("A calls B") is a name, not an article. With
    `join_names`, a name of several capitalised words is one token ("Emma Townshend" -> "emma_townshend"):
    it fills one role."""
    raw = [w.strip(".,;:!?()[]{}\"'`") for w in text.split()]
    raw = [w for w in raw if w]
    words: list[str] = []
    named: list[bool] = []
    for w in raw:
        capital = w[0].isupper() and w.casefold() not in _FUNCTION_WORDS and len(w) > 1
        if join_names and capital and named and named[-1]:
            words[-1] = f"{words[-1]}_{w}"
        else:
            words.append(w)
            named.append(capital)
    folded = [w.casefold() for w in words]
    content = [
        f not in _FUNCTION_WORDS or (len(w) == 1 and w.isupper()) for w, f in zip(words, folded, strict=True)
    ]
    return folded, content


def _shape(word: str) -> str:
    return "number" if any(c.isdigit() for c in word) else "word"


def order_difference(a: str, b: str) -> str | None:
    """Two texts of (nearly) the same words whose order says another thing, or None.

    Word order carries meaning where two words exchange places: swapped entities or roles ("A calls B" /
    "B calls A", "migrate from X to Y" / "from Y to X", "34 Nigerians, 28 Chadians" / "34 Chadians, 28
    Nigerians", "useless against X, effective against Y" / the other way), and where a qualifier moves
    ("only admins deploy on Friday" / "admins deploy only on Friday").

    An exchange: two content words x, y of one shape (two words or two numbers) that each text holds
    once, in opposite order, one standing where the other stood (the same non-article word before or
    after it), with a word between them in both texts (the middle that stays: "calls", "to"), and no
    preposition put before one of them that it lacked ("The CI runs the suite" / "the suite runs in
    CI"). A phrase moved as a whole ("In August, X left" / "X left in August"), two adjacent words turned
    round ("black southern" / "southern black") or a date moved past a place ("in Gloucester in 1923" /
    "in 1923 in Gloucester") has no such middle, or no such pair, and is no exchange. A moved qualifier:
    `only`, `not`, `never`, `all`, ... taken out in one place and put in at another (difflib alignment).
    Beyond these, texts of 12 words or more, of nearly the same words (word sets >= 0.8 alike), whose
    in-order alignment falls 0.2 or more below that and whose shared words fall in three or more runs
    (not one phrase moved) are taken as different statements: a paraphrase
    that only reorders is refused a merge too, so no fact is lost where the roles are not clear
    (PAWS-shaped pairs).
    Latin-script texts only: Korean marks roles with particles, so its order is free.
    """
    if HANGUL.search(a) or HANGUL.search(b):
        return None
    ca_text, cb_text = canonical_aliases(a), canonical_aliases(b)
    ta, content_a = _order_tokens(ca_text)
    tb, _ = _order_tokens(cb_text)
    if ta == tb:
        return None
    # names of several words are compared whole and word by word ("Sir Edward Hulton" fills one role,
    # but "Santa Cruz Sky Park" / "Santa Cruz County" differ in one word)
    na, named_a = _order_tokens(ca_text, join_names=True)
    nb, _ = _order_tokens(cb_text, join_names=True)
    return (
        _exchange(ta, content_a, tb)
        or _exchange(na, named_a, nb)
        or _moved_qualifier(ta, tb)
        or _reordered(ta, tb)
    )


def order_signals(a: str, b: str) -> tuple[bool, bool, bool]:
    """Which rules of `order_difference` speak for two Latin-script texts: (an exchange of two words, a
    moved qualifier, a long reordering); all False for Korean text."""
    if HANGUL.search(a) or HANGUL.search(b):
        return (False, False, False)
    ca_text, cb_text = canonical_aliases(a), canonical_aliases(b)
    ta, content_a = _order_tokens(ca_text)
    tb, _ = _order_tokens(cb_text)
    if ta == tb:
        return (False, False, False)
    na, named_a = _order_tokens(ca_text, join_names=True)
    nb, _ = _order_tokens(cb_text, join_names=True)
    exchange = _exchange(ta, content_a, tb) or _exchange(na, named_a, nb)
    return (exchange is not None, _moved_qualifier(ta, tb) is not None, _reordered(ta, tb) is not None)


def _once(tokens: list[str]) -> dict[str, int]:
    """Each word the text holds exactly once, and where."""
    return {w: i for i, w in enumerate(tokens) if tokens.count(w) == 1}


def _slot(tokens: list[str], i: int) -> set[tuple[str, str]]:
    """Where a word stands: the word before it and the word after it (an article, or the text's edge,
    marks no place: "The payments team ..." / "The batch pipeline's ..." is no exchange)."""
    found = set()
    if i > 0 and tokens[i - 1] not in _ARTICLES:
        found.add(("before", tokens[i - 1]))
    if i + 1 < len(tokens) and tokens[i + 1] not in _ARTICLES:
        found.add(("after", tokens[i + 1]))
    return found


def _preposition(tokens: list[str], i: int) -> str:
    """The preposition right before a word, or ""."""
    return tokens[i - 1] if i > 0 and tokens[i - 1] in _PREPOSITIONS else ""


def _exchange(ta: list[str], ca: list[bool], tb: list[str]) -> str | None:
    """Two content words of one shape in opposite order, one standing where the other stood, a word
    between them in both texts that is no mere "and" ("React and Webpack" / "Webpack and React" lists the
    same two); not where a preposition marks one of them anew ("The CI runs ..." / "... runs in CI")."""
    once_a, once_b = _once(ta), _once(tb)
    shared = sorted(once_a.keys() & once_b.keys(), key=lambda w: once_a[w])
    content = [w for w in shared if ca[once_a[w]]]
    for k, x in enumerate(content):
        for y in content[k + 1 :]:
            if _shape(x) != _shape(y) or once_b[y] > once_b[x]:
                continue
            slots = bool(_slot(ta, once_a[x]) & _slot(tb, once_b[y])) + bool(
                _slot(ta, once_a[y]) & _slot(tb, once_b[x])
            )
            if slots == 1 and (
                _preposition(ta, once_a[x]) != _preposition(tb, once_b[x])
                or _preposition(ta, once_a[y]) != _preposition(tb, once_b[y])
            ):
                # one word's role is marked anew ("The CI runs the suite" / "the suite runs in CI")
                continue
            between_a = set(ta[once_a[x] + 1 : once_a[y]])
            between_b = set(tb[once_b[y] + 1 : once_b[x]])
            if slots >= _EXCHANGE_SLOTS and (between_a & between_b) - _COORDINATORS:
                return f"{x!r} and {y!r} exchanged places"
    return None


def _moved_qualifier(ta: list[str], tb: list[str]) -> str | None:
    """`only`, `not`, `never` ... taken out in one place and put in at another, before another word
    ("only admins" / "only on Friday"), in texts of nearly the same words (else the sentence was said
    anew: "stored in the vault, never in the repository" / "never commit them to the repo"); moved with
    the word it qualifies, it says the same."""
    if len(set(ta) & set(tb)) < _QUALIFIER_SHARED_WORDS * len(set(ta) | set(tb)):
        return None
    for w in sorted(_SCOPE_WORDS & set(ta) & set(tb)):
        if ta.count(w) != 1 or tb.count(w) != 1:
            continue
        i, j = ta.index(w), tb.index(w)
        after_a = ta[i + 1] if i + 1 < len(ta) else ""
        after_b = tb[j + 1] if j + 1 < len(tb) else ""
        before_a = ta[i - 1] if i > 0 else ""
        before_b = tb[j - 1] if j > 0 else ""
        if after_a != after_b and before_a != before_b:
            return f"the qualifier {w!r} moved"
    return None


def _reordered(ta: list[str], tb: list[str]) -> str | None:
    """Long texts of nearly the same words whose order differs in three or more places."""
    if min(len(ta), len(tb)) < _REORDER_MIN_WORDS:
        return None
    same_words = fuzz.token_set_ratio(" ".join(ta), " ".join(tb)) / 100.0
    in_order = difflib.SequenceMatcher(a=ta, b=tb, autojunk=False).ratio()
    if same_words < _REORDER_SAME_WORDS or same_words - in_order < _REORDER_GAP:
        return None
    once_a, once_b = _once(ta), _once(tb)
    positions = [once_a[w] for w in sorted(once_a.keys() & once_b.keys(), key=lambda w: once_b[w])]
    runs = 1 + sum(1 for p, q in zip(positions, positions[1:], strict=False) if q < p)
    if runs < _REORDER_MIN_RUNS:
        return None
    return f"the same words in another order (word sets {same_words:.2f}, in order {in_order:.2f})"
