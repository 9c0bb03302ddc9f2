"""Contradiction judges: does a new statement contradict an old one about the same subject?

Seed 003's supersession needs a decision the canonical key cannot give (two memories about the same thing
without a shared key). Two judges share one protocol:

- `RuleBasedJudge` (default, deterministic, offline): only speaks when the texts are nearly the same
  statement and differ in polarity (a negation on one side), in an opposite pair (enabled/disabled,
  always/never, 허용/금지 ...) or in a number/version. It is deliberately conservative: a false
  "contradicts" would deprecate good knowledge, a false "no" only leaves two related memories.
- `LLMJudge` (governance/adapters/llm_judge.py): any OpenAI-compatible chat endpoint answering JSON; on any
  failure it falls back to the rule-based judge, so a flaky endpoint never blocks promotion.

`material_difference` is also used by deduplication: two texts that differ in a number or a negation are
never merged, however close their embeddings are (embedders place "timeout 30 s" next to "timeout 60 s").
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from dataclasses import dataclass
from typing import Protocol

__all__ = [
    "Verdict",
    "ContradictionJudge",
    "RuleBasedJudge",
    "material_difference",
]

_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_WORD = re.compile(r"[\w']+", re.UNICODE)

# English negation words, and Korean negation morphemes (they attach to verb stems, so we look inside tokens).
_NEGATION_WORDS = frozenset(
    {
        "not", "no", "never", "none", "nothing", "without", "cannot", "can't", "don't", "doesn't",
        "didn't", "isn't", "aren't", "wasn't", "weren't", "won't", "shouldn't", "mustn't", "avoid",
        "neither", "nor", "instead",
    }
)  # fmt: skip
_KOREAN_NEGATIONS = ("않", "못", "없", "말아", "말고", "말것", "금지", "아니", "아닌", "대신")
# standalone negating words ("안 한다"); as a substring "안" is everywhere ("동안", "보안")
_KOREAN_NEGATION_WORDS = frozenset({"안"})

# Opposite pairs: one side on each text (and not both on one side) reads as a contradiction.
_OPPOSITES: tuple[tuple[frozenset[str], frozenset[str]], ...] = tuple(
    (frozenset(a.split()), frozenset(b.split()))
    for a, b in (
        ("enable enabled enables", "disable disabled disables"),
        ("true", "false"),
        ("on", "off"),
        ("allow allowed allows", "deny denied denies forbid forbidden forbids"),
        ("always", "never"),
        ("sync synchronous", "async asynchronous"),
        ("required mandatory", "optional"),
        ("increase increased", "decrease decreased"),
        ("include included", "exclude excluded"),
        ("before", "after"),
        ("deprecated", "recommended"),
        ("safe", "unsafe"),
        ("supported", "unsupported"),
        ("resolved", "unresolved"),
        ("both", "only"),
    )
)
_KOREAN_OPPOSITES: tuple[tuple[str, str], ...] = (
    ("비활성화", "활성화"),
    ("금지", "허용"),
    ("미사용", "사용"),
    ("비동기", "동기"),
    ("선택", "필수"),
    ("감소", "증가"),
    ("제외", "포함"),
    ("후에", "전에"),
)
_WEEKDAYS_KO = ("월요일", "화요일", "수요일", "목요일", "금요일", "토요일", "일요일")
_NUMBER_WORDS = {
    "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7", "eight": "8",
    "nine": "9", "ten": "10", "twice": "2", "once": "1",
    # Korean native numerals before a counter ("두 명", "세 번")
    "한": "1", "두": "2", "세": "3", "네": "4", "다섯": "5", "여섯": "6",
    "일곱": "7", "여덟": "8", "아홉": "9",
    "열": "10",
}  # fmt: skip
# "03:00" is 3 o'clock, also when a Korean particle follows ("03:00에")
_CLOCK = re.compile(r"\b(\d{1,2}):00(?!\d)")
# durations and rates spelt out without a digit: "a week" is 7 days, "분당" (per minute) is "1분당"
_SPELT_VALUES: tuple[tuple[str, str], ...] = (
    ("a week", "7 days"),
    ("one week", "7 days"),
    ("일주일", "7일"),
    ("분당", "1분당"),
)
# Korean verbs of switching that carry no 활성화/비활성화: "끈다" (turns off), "켠다" (turns on)
_KOREAN_SWITCHES: tuple[tuple[str, str], ...] = (("끈다", "비활성화한다"), ("켠다", "활성화한다"))
# Choices that look like common words (no capital, digit or path character), grouped by what they choose
# between: naming two members of one group is two different facts ("gzip" / "brotli", "UTC" / "local time").
_CHOICE_GROUPS: tuple[frozenset[str], ...] = (
    frozenset({"gzip", "brotli", "zstd", "deflate", "lz4", "snappy"}),
    frozenset({"utc", "local time", "현지 시간", "kst", "gmt"}),
    frozenset({"json", "yaml", "toml", "xml", "protobuf", "csv"}),
    frozenset({"tabs", "spaces"}),
)
# an owner named before "team" / "팀" ("the billing team", "빌링 팀이")
_TEAM = re.compile(r"(\S+)\s+(?:team|팀)", re.UNICODE)
# words that only mark a contrast: the order of two names matters only next to one ("X, not Y", "Y 대신 X")
_CONTRAST = re.compile(r"\b(?:not|instead|rather|over|than|vs)\b|대신|아니라|아닌|말고")


@dataclass(frozen=True)
class Verdict:
    """A judge's answer: whether the new text contradicts the old one, and why (kept as the note)."""

    contradicts: bool
    reason: str


class ContradictionJudge(Protocol):
    """Decides whether `new` contradicts `old`; `similarity` is their embedding cosine (a hint).

    `blocking` says whether `judge` waits on the network (callers then run it in a thread).
    """

    blocking: bool

    def judge(self, *, new: str, old: str, similarity: float) -> Verdict: ...


def _normalise(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def _numbers(text: str) -> set[str]:
    """Numbers as values: spelt-out ones as digits, "03:00" as 3, leading zeros dropped."""
    text = _CLOCK.sub(r"\1", text)
    for spelt, value in _SPELT_VALUES:
        text = text.replace(spelt, value)
    found = {n.replace(",", ".") for n in _NUMBER.findall(text)}
    found |= {_NUMBER_WORDS[w] for w in text.split() if w in _NUMBER_WORDS}
    return {n.lstrip("0") or "0" for n in found}


def _negated(text: str) -> bool:
    """Odd number of negations: a double negation reads as an affirmation."""
    words = _WORD.findall(text)
    count = sum(1 for w in words if w in _NEGATION_WORDS or w.endswith("n't"))
    count += sum(text.count(marker) for marker in _KOREAN_NEGATIONS)
    count += sum(1 for w in text.split() if w in _KOREAN_NEGATION_WORDS)
    return count % 2 == 1


def _skeleton(text: str) -> str:
    """The text without numbers and negation markers: what both sides say if they say the same thing."""
    text = _NUMBER.sub(" ", text)
    for marker in _KOREAN_NEGATIONS:
        text = text.replace(marker, " ")
    words = [w for w in _WORD.findall(text) if w not in _NEGATION_WORDS and not w.endswith("n't")]
    return "".join(words)


def _overlap(a: str, b: str) -> float:
    """Jaccard overlap of character bigrams (works for Korean, where particles glue onto words)."""
    grams_a = {a[i : i + 2] for i in range(max(1, len(a) - 1))}
    grams_b = {b[i : i + 2] for i in range(max(1, len(b) - 1))}
    if not grams_a or not grams_b:
        return 0.0
    return len(grams_a & grams_b) / len(grams_a | grams_b)


def _opposite(a: str, b: str) -> str | None:
    words_a, words_b = set(_WORD.findall(a)), set(_WORD.findall(b))
    for left, right in _OPPOSITES:
        a_left, a_right = bool(words_a & left), bool(words_a & right)
        b_left, b_right = bool(words_b & left), bool(words_b & right)
        if (a_left and not a_right and b_right and not b_left) or (
            a_right and not a_left and b_left and not b_right
        ):
            return f"{sorted(left)[0]}/{sorted(right)[0]}"
    for longer, shorter in _KOREAN_OPPOSITES:
        # "비활성화" contains "활성화": count the short form only where it is not part of the long one
        a_long, b_long = longer in a, longer in b
        a_short = shorter in a.replace(longer, "")
        b_short = shorter in b.replace(longer, "")
        if (a_long and not a_short and b_short and not b_long) or (
            b_long and not b_short and a_short and not a_long
        ):
            return f"{shorter}/{longer}"
    return None


_HANGUL = re.compile(r"[\uac00-\ud7a3]")
_LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_+#./-]*")
# short upper-case abbreviations are spelt out in paraphrases ("DB" / "database"), so they are no signal
_ABBREVIATION = re.compile(r"^[A-Z]{1,4}s?$")


def _names(text: str) -> set[str]:
    """Named choices in a text (tools, products, identifiers), the things a near-miss swaps.

    In Korean text every Latin-script word is such a name; in English ones, words capitalised mid-sentence,
    camel-cased or carrying a digit or path character.
    """
    korean = bool(_HANGUL.search(text))
    names = {day for day in _WEEKDAYS_KO if day in text}
    for position, match in enumerate(_LATIN_WORD.finditer(text)):
        raw = match.group(0)
        word = raw.rstrip("./-")
        if not word or _ABBREVIATION.match(word):
            continue
        if korean:
            names.add(word.casefold())
        elif (
            raw.endswith("/")  # a path prefix: "feature/<ticket>"
            or (position > 0 and word[0].isupper())
            or any(c.isdigit() or c in "_/" for c in word)
            or (any(c.isupper() for c in word[1:]) and not word.isupper())
        ):
            names.add(word.casefold())
    return names


def _name_order(text: str, names: set[str]) -> list[str]:
    order = []
    for match in _LATIN_WORD.finditer(text):
        word = match.group(0).rstrip("./-").casefold()
        if word in names and word not in order:
            order.append(word)
    return order


def _latin_words(text: str) -> set[str]:
    return {w.rstrip("./-").casefold() for w in _LATIN_WORD.findall(text)}


def _tokens(text: str) -> list[str]:
    return [w.strip(".,;:!?()\"'").casefold() for w in text.split() if w.strip(".,;:!?()\"'")]


def _substitution(a: str, b: str) -> str | None:
    """Words swapped for others in the same place, the rest identical: another value, not a paraphrase.

    "owned by the billing team" / "owned by the platform team", "pattern feature/<ticket>" / "pattern
    fix/<ticket>": both neighbours of the swapped words are shared, and the texts align otherwise (at
    least 3/4 of their words in order). Synonym swaps in paraphrases rarely keep every other word.
    """
    teams_a, teams_b = set(_TEAM.findall(a.casefold())), set(_TEAM.findall(b.casefold()))
    if teams_a and teams_b and not teams_a & teams_b:
        return f"different owners: {sorted(teams_a)} vs {sorted(teams_b)}"
    ta, tb = _tokens(a), _tokens(b)
    matcher = difflib.SequenceMatcher(a=ta, b=tb, autojunk=False)
    if matcher.ratio() < 0.75:
        return None
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op != "replace" or i1 == 0 or j1 == 0 or i2 >= len(ta) or j2 >= len(tb):
            continue
        if max(i2 - i1, j2 - j1) > 2:
            continue
        left, right = ta[i1:i2], tb[j1:j2]
        # an inflection of the same word (owns/owned, 담당한다/담당했다) is no new value
        if len(left) == len(right) == 1 and left[0][:3] == right[0][:3]:
            continue
        return f"substituted {' '.join(left)!r} for {' '.join(right)!r}"
    return None


def _choices(a: str, b: str) -> str | None:
    """Two members of one choice group, one on each side only (texts normalised)."""
    for group in _CHOICE_GROUPS:
        in_a = {c for c in group if re.search(rf"(?<!\w){re.escape(c)}(?![A-Za-z0-9_])", a)}
        in_b = {c for c in group if re.search(rf"(?<!\w){re.escape(c)}(?![A-Za-z0-9_])", b)}
        if in_a and in_b and in_a != in_b and not (in_a & in_b):
            return f"different choices: {sorted(in_a)} vs {sorted(in_b)}"
    return None


def material_difference(a: str, b: str) -> str | None:
    """Why two near-identical texts still say different things, or None.

    Checked: named choices (tools, products, weekdays) one side names and the other never mentions, the
    same names in swapped order ("Postgres, not SQLite" / "SQLite, not Postgres"), numbers (spelt-out
    ones too), a negation on one side only, and opposite terms.
    """
    if _normalise(a) == _normalise(b):
        return None
    # names are compared only within one script: a translation legitimately drops or spells them out
    if bool(_HANGUL.search(a)) == bool(_HANGUL.search(b)):
        names_a, names_b = _names(a), _names(b)
        words_a = _latin_words(a) | {d for d in _WEEKDAYS_KO if d in a}
        words_b = _latin_words(b) | {d for d in _WEEKDAYS_KO if d in b}
        only_a, only_b = names_a - words_b, names_b - words_a
        if only_a or only_b:
            return f"different named choices: {sorted(only_a)} vs {sorted(only_b)}"
        shared = names_a & names_b
        contrast = bool(_CONTRAST.search(a.casefold())) or bool(_CONTRAST.search(b.casefold()))
        if contrast and len(shared) >= 2 and _name_order(a, shared) != _name_order(b, shared):
            return f"the same names in another order: {_name_order(a, shared)} vs {_name_order(b, shared)}"
    na, nb = _normalise(a), _normalise(b)
    for spoken, plain in _KOREAN_SWITCHES:
        na, nb = na.replace(spoken, plain), nb.replace(spoken, plain)
    nums_a, nums_b = _numbers(na), _numbers(nb)
    if nums_a != nums_b and (nums_a or nums_b):
        return f"different values: {sorted(nums_a - nums_b)} vs {sorted(nums_b - nums_a)}"
    if _negated(na) != _negated(nb):
        return "one states the negation of the other"
    pair = _opposite(na, nb)
    if pair:
        return f"opposite terms ({pair})"
    chosen = _choices(na, nb)
    if chosen:
        return chosen
    if bool(_HANGUL.search(a)) == bool(_HANGUL.search(b)):
        return _substitution(a, b)
    return None


class RuleBasedJudge:
    """Deterministic judge: a contradiction is the same statement with a different value or polarity."""

    blocking = False

    def __init__(self, *, min_similarity: float = 0.8, min_overlap: float = 0.55) -> None:
        self.min_similarity = min_similarity
        self.min_overlap = min_overlap

    def judge(self, *, new: str, old: str, similarity: float) -> Verdict:
        if similarity < self.min_similarity:
            return Verdict(False, "not about the same subject")
        na, nb = _normalise(new), _normalise(old)
        difference = material_difference(na, nb)
        if difference is None:
            return Verdict(False, "no contradicting value, negation or opposite")
        # the rest of the text must be (nearly) the same statement, else they are two different facts
        if _overlap(_skeleton(na), _skeleton(nb)) < self.min_overlap:
            return Verdict(False, f"{difference}, but the statements differ otherwise")
        return Verdict(True, difference)
