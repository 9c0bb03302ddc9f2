"""Whether two statements say the same of two different subjects: another fact, not a new version of one.

"Server web-4 runs Ubuntu 22.04" beside "Server web-3 runs Ubuntu 22.04", or "observation 18: service kappa-18
answered in 18 ms" beside "observation 17: service kappa-17 answered in 17 ms", say something of two
things: both are true at once, so neither may supersede (retire) or absorb the other. "Server web-3 runs
Ubuntu 24.04" after "Server web-3 runs Ubuntu 22.04" changes a value about the same thing: an update.

The subject is what a statement says before its main verb. In English: the words before the first
auxiliary or copula (is, was, has, can ...), the first word that opens a predicate (never, always, not,
now ...), or the first word inflected as a verb (-s, -ed, or a common irregular form: left, ran, use) that
follows no determiner or preposition; a leading clause closed by a comma ("In 2004, ...") is skipped, and
an instruction ("Always use UTC", "Do not run ...") names no subject. A statement with no such verb whose
first few words end in a colon and name something ("Service web-3: retry budget 3, lease 30 s",
"Redis: TTL 60 s") is about what that label names. In Korean: the words up to the last
one carrying the topic particle 은/는 (else the first carrying the subject particle 이/가).

Two statements are about two subjects when each subject names a word the other text never writes anywhere
(one entity swapped for another; a rewording or a reordering keeps the words somewhere, and a subject one
side only narrows, "the DB" / "the staging DB", is no swap) and their predicates are one statement: the
same verb and at least `PREDICATE_ALIGNMENT` of their words in the same order, whatever value differs.
Pure and cached.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Sequence
from functools import lru_cache

from governance.wording.canonical import HANGUL, canonical_aliases

__all__ = ["PREDICATE_ALIGNMENT", "subject_of", "subject_difference"]

# how much of two predicates must be the same words in the same order for them to say the same thing
PREDICATE_ALIGNMENT = 0.5

_TOKEN = re.compile(r"[\w][\w'./+#-]*", re.UNICODE)
_PIECE = re.compile(r"[\w][\w'./+#-]*|,", re.UNICODE)
_ASIDE = re.compile(r"\([^()]*\)")
_QUANTITY = re.compile(r"[\d.,]+")
_AUXILIARIES = frozenset(
    "is are was were be been being am has have had will would can could should must may might shall does do "
    "did isn't aren't wasn't weren't hasn't haven't hadn't won't wouldn't can't cannot couldn't shouldn't "
    "mustn't doesn't don't didn't 's".split()
)
# words that open a predicate before its verb ("web-3 never restarts", "the cache now expires")
_PREDICATE_OPENERS = frozenset(
    "never always not no only now also still usually often sometimes rarely currently already "
    "automatically".split()
)
# verbs whose past or present form carries no -s/-ed ("McCall left the group", "web-3 ran out of disk")
_IRREGULAR_VERBS = frozenset(
    "left won became began took made went got gave came ran wrote sang found held led met saw sold told "
    "built brought bought kept lost paid sent spent stood taught thought fell grew knew rose drove broke "
    "chose spoke struck sat hung wore drew flew threw shook forgot beat fought caught dealt split shut "
    "run use need take keep hold point depend require support own handle serve send store return".split()
)
# after one of these a word ending in -s/-ed is a noun or an adjective ("the requests", "of used disks")
_BEFORE_NOUNS = frozenset(
    "the a an of in on at for to with by from and or our their its his her my your this that these those "
    "all each every some any no both many several which whose per into over under".split()
)
# a leading clause before the subject ("In 2004, ...", "After the migration, ...")
_CLAUSE_OPENERS = frozenset(
    "in on at after before during from for with when while since by until once if as although because "
    "unlike like".split()
)
# words in a subject that name nothing (articles, possessives, quantifiers)
_EMPTY = frozenset(
    "the a an our their its his her my your this that these those all each every some any of for in on at "
    "to and or with by from new old current he she they you we i it one there here".split()
)
_NOT_VERBS_S = ("ss", "us", "is", "ous", "ics")
# how far into a statement its main verb is looked for
_MAX_SUBJECT_WORDS = 12
# a label that names what a verbless statement is about ("Service web-3: retry budget 3"): a few words
# before a colon
_LABEL = re.compile(r"\s*([^:\n]{1,60}?):\s+(\S.*)", re.DOTALL)
_MAX_LABEL_WORDS = 6
_OWNER, _OWNER_KO = "team", "팀"
_KOREAN_TOPIC = ("은", "는")
_KOREAN_SUBJECT = ("이", "가")
# one Korean spelling for words written two ways ("애플리케이션 로그" is "앱 로그")
_KOREAN_SPELLINGS = (("애플리케이션", "앱"), ("어플리케이션", "앱"))


def _verb_like(word: str, previous: str) -> bool:
    """A lower-case word inflected as a verb (runs, answered) that follows no determiner or preposition."""
    if not word.isascii() or not word.isalpha() or not word.islower() or previous in _BEFORE_NOUNS:
        return False
    if _QUANTITY.fullmatch(previous):
        # a word after a bare number is what it counts ("60 seconds", "3 replicas"), not a verb
        return False
    if word in _IRREGULAR_VERBS:
        return True
    if len(word) < 4:
        return False
    if word.endswith("ed"):
        return True
    return word.endswith("s") and not word.endswith(_NOT_VERBS_S)


def _english_split(text: str) -> tuple[list[str], list[str]] | None:
    """(subject, predicate) words of an English statement (casefolded), or None.

    Parenthesised asides are left out; a stretch closed by a comma before the verb ("In 2004,", "Thus,",
    "Alongside A and B,") is not the subject, which starts after the last such comma."""
    pieces = _PIECE.findall(_ASIDE.sub(" ", text))
    words = [p if p == "," else (p.rstrip("./-") or p) for p in pieces]
    lowered = [w.casefold() for w in words]
    start, clause = 0, False
    for i, word in enumerate(lowered):
        if word == ",":
            start, clause = i + 1, False
            continue
        if i == start:
            if start == 0 and word in _AUXILIARIES | _PREDICATE_OPENERS | {"please", "let's"}:
                # an instruction or a question ("Never commit secrets", "Do not run ..."): no subject
                return None
            # a leading clause ("In 2004, ...") runs to its comma; without one there is no telling
            clause = word in _CLAUSE_OPENERS
            continue
        if clause:
            continue
        if i - start > _MAX_SUBJECT_WORDS:
            return None
        if (
            word in _AUXILIARIES
            or word in _PREDICATE_OPENERS
            or word.endswith("n't")
            or _verb_like(words[i], lowered[i - 1])
        ):
            return lowered[start:i], [w for w in lowered[i:] if w != ","]
    return None


def _labelled_split(text: str) -> tuple[list[str], list[str]] | None:
    """(label, rest) words of a verbless statement that opens with a short label and a colon, or None.

    Only a label that can name something counts: one carrying a capitalised word or a digit."""
    found = _LABEL.fullmatch(text)
    if found is None:
        return None
    label = [w.rstrip("./-") or w for w in _TOKEN.findall(_ASIDE.sub(" ", found.group(1)))]
    if not label or len(label) > _MAX_LABEL_WORDS:
        return None
    if not any(w[0].isupper() or any(c.isdigit() for c in w) for w in label):
        return None
    rest = [w.rstrip("./-") or w for w in _TOKEN.findall(_ASIDE.sub(" ", found.group(2)))]
    return [w.casefold() for w in label], [w.casefold() for w in rest]


def _korean_subject(text: str) -> list[str] | None:
    """The words up to the last one carrying the topic particle (은/는: "돌아가는 버전은" is one subject),
    else up to the first carrying 이/가; the statement's last word (its verb) never counts."""
    words = text.split()[: min(_MAX_SUBJECT_WORDS, len(text.split()) - 1)]
    marked = [
        i
        for i, w in enumerate(words)
        if len(w.rstrip(".,;:!?")) >= 2 and w.rstrip(".,;:!?").endswith(_KOREAN_TOPIC)
    ]
    if not marked:
        marked = [
            i
            for i, w in enumerate(words)
            if len(w.rstrip(".,;:!?")) >= 2 and w.rstrip(".,;:!?").endswith(_KOREAN_SUBJECT)
        ][:1]
    if not marked:
        return None
    last = marked[-1]
    return [w.casefold() for w in words[:last]] + [words[last].rstrip(".,;:!?")[:-1].casefold()]


def _spelt(text: str) -> str:
    for long, short in _KOREAN_SPELLINGS:
        text = text.replace(long, short)
    return text


# a text meets every candidate near it: each is split once
@lru_cache(maxsize=1 << 14)
def _split(text: str) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """(subject, predicate) words of `text` (casefolded, aliases spelt one way), or None."""
    text = canonical_aliases(text)
    if HANGUL.search(text):
        text = _spelt(text)
        subject = _korean_subject(text)
        if not subject:
            return None
        words = text.casefold().split()
        split = (subject, [w.rstrip(".,;:!?") for w in words[len(subject) :]])
    else:
        found = _english_split(text)
        if found is None:
            found = _labelled_split(text)
        if found is None:
            return None
        split = found
    subject, predicate = split
    return (tuple(subject), tuple(predicate)) if subject and predicate else None


def subject_of(text: str) -> tuple[str, ...] | None:
    """The words of `text` before its main verb (casefolded, aliases spelt one way), or None when no verb
    or subject particle is found near its start."""
    split = _split(text)
    return split[0] if split else None


def _named(subject: Sequence[str]) -> set[str]:
    """The subject's words that can name it; a bare number counts what follows ("3 similar tasks" and
    "6 similar tasks" are one subject restated with a new count), it names nothing."""
    return {
        w
        for w in subject
        if w not in _EMPTY and w not in _PREDICATE_OPENERS and not _BARE_NUMBER.fullmatch(w)
    }


_BARE_NUMBER = re.compile(r"[\d.,%]+")


def _plain(word: str) -> str:
    """The word without accents ("İşman" and "Isman" are one name spelt two ways)."""
    return "".join(c for c in unicodedata.normalize("NFKD", word) if not unicodedata.combining(c))


def _written(word: str, present: set[str]) -> bool:
    """Whether a text writing the words `present` writes `word`, or the same word inflected or spelt
    otherwise (transport/transportation, Groves/Grove, İşman/Isman, O'Brien/Brien, Fallbeil/Fall Beil);
    never so for an identifier with digits (web-3 is not web-30)."""
    if word in present:
        return True
    if any(c.isdigit() for c in word):
        return False
    plain = _plain(word)
    for other in present:
        if any(c.isdigit() for c in other):
            continue
        if _plain(other) == plain:
            return True
        shorter, longer = sorted((plain, _plain(other)), key=len)
        if len(shorter) >= 4 and shorter in longer:
            return True
    return False


def _absent(words: set[str], other: str, korean: bool) -> set[str]:
    """The words of `words` that `other` (casefolded, aliases spelt one way) never writes."""
    if korean:
        # particles glue onto Korean words: a word is present when it occurs inside the other text
        return {w for w in words if w not in other}
    present = {w.rstrip("./-") or w for w in _TOKEN.findall(other)}
    return {w for w in words if not _written(w, present)}


# each text meets every candidate near it: its names are read once
@lru_cache(maxsize=1 << 14)
def _names(text: str) -> frozenset[str]:
    """The words a text writes as names: capitalised or carrying a digit (casefolded)."""
    return frozenset(
        w.rstrip("./-").casefold()
        for w in _TOKEN.findall(text)
        if w[0].isupper() or any(c.isdigit() for c in w)
    )


def subject_difference(a: str, b: str, *, names_only: bool = False) -> str | None:
    """Why `a` and `b` are about two different subjects, or None (same subject, or no telling).

    Both texts must be of one script and each must have a subject; they say the same of two subjects when
    each subject names a word the other text never writes anywhere, and their predicates are the same
    statement: the same verb (English: the predicate's first word; Korean: its last) and at least
    `PREDICATE_ALIGNMENT` of their words in order (numbers and values may differ). `names_only`: the
    words swapped must include a name on each side (capitalised or carrying a digit), not only common
    words, which a paraphrase swaps for synonyms (the highway / the motorway); deduplication asks so.
    """
    reason, named = _swap(a, b)
    return None if reason is None or (names_only and not named) else reason


# deduplication and the judge ask about the same pairs: each pair is worked out once per process
@lru_cache(maxsize=1 << 16)
def _swap(a: str, b: str) -> tuple[str | None, bool]:
    """`subject_difference`'s reason, and whether the swapped words include a name on each side."""
    korean = bool(HANGUL.search(a))
    if korean != bool(HANGUL.search(b)):
        return None, False
    split_a, split_b = _split(a), _split(b)
    if split_a is None or split_b is None:
        return None, False
    (subject_a, predicate_a), (subject_b, predicate_b) = split_a, split_b
    named_a, named_b = _named(subject_a), _named(subject_b)
    if not named_a or not named_b or named_a == named_b:
        return None, False
    if _OWNER in named_a & named_b or any(_OWNER_KO in w for w in named_a | named_b):
        # a team named before its verb ("The billing team owns the orders database") is the owner of what
        # follows: a value the statement gives, which another team's name revises (governance.wording's
        # "different owners")
        return None, False
    verb = -1 if korean else 0
    if predicate_a[verb] != predicate_b[verb]:
        return None, False
    aligned = difflib.SequenceMatcher(a=predicate_a, b=predicate_b, autojunk=False).ratio()
    if aligned < PREDICATE_ALIGNMENT:
        return None, False
    spelt_a, spelt_b = (_spelt(canonical_aliases(t)) for t in (a, b))
    only_a = _absent(named_a - named_b, spelt_b.casefold(), korean)
    only_b = _absent(named_b - named_a, spelt_a.casefold(), korean)
    if not (only_a and only_b):
        return None, False
    reason = f"about another subject: {' '.join(subject_a)!r} vs {' '.join(subject_b)!r}"
    return reason, bool(only_a & _names(spelt_a) and only_b & _names(spelt_b))
