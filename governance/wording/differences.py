"""Why two near-identical statements still say different things.

`material_difference` is asked by deduplication (two texts that differ in a number or a negation are never
merged, however close their embeddings are: embedders place "timeout 30 s" next to "timeout 60 s") and by
the contradiction judges (governance/supersession.py). It checks named choices one side names and the
other never mentions, the same names in swapped order around a contrast, numbers and units, a negation on
one side only, opposite terms (English and Korean, and across the two), choice groups, owners and a
substituted word. `value_difference` and `wording_difference` split it for governance/order_model.py.
"""

from __future__ import annotations

import difflib
import re

from governance.wording.canonical import (
    CLOCK,
    HANGUL,
    NUMBER,
    UNIT_WORDS,
    WEEKDAYS_KO,
    WORD,
    canonical_aliases,
    latin_words,
    name_order,
    named_choices,
    normalise,
    number_values,
    quantities,
)

__all__ = ["material_difference", "value_difference", "wording_difference", "skeleton"]

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
        ("enable enabled enables", "disable disabled disables off"),
        ("true", "false"),
        ("on", "off"),
        ("allow allowed allows", "deny denied denies forbid forbidden forbids"),
        ("always", "never"),
        ("sync synchronous", "async asynchronous"),
        ("required mandatory must", "optional"),
        ("increase increased", "decrease decreased"),
        ("include included", "exclude excluded"),
        ("before", "after"),
        ("deprecated", "recommended"),
        ("safe", "unsafe"),
        ("supported", "unsupported"),
        ("resolve resolved", "unresolved"),
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
    ("반드시", "선택"),
    ("불가능", "가능"),
    ("불필요", "필요"),
    ("비공개", "공개"),
    ("미지원", "지원"),
    ("꺼져", "켜져"),
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
_NEVER = re.compile(r"\b(?:never|only)\b|만\b")
_CONTRAST = re.compile(r"\b(?:not|instead|rather|over|than|vs)\b|대신|아니라|아닌|말고")


# Korean terms of polarity, glossed in English so that an English text and a Korean one can be compared
_KOREAN_GLOSSES: tuple[tuple[str, str], ...] = (
    ("비활성화", "disabled"),
    ("활성화", "enabled"),
    ("필수", "required"),
    ("반드시", "must"),
    ("선택", "optional"),
    ("금지", "forbidden"),
    ("허용", "allowed"),
    ("증가", "increase"),
    ("감소", "decrease"),
    ("포함", "include"),
    ("제외", "exclude"),
    ("전에", "before"),
    ("후에", "after"),
    ("항상", "always"),
    ("꺼져", "off"),
    ("끈다", "off"),
    ("켜져", "enabled"),
    ("켠다", "enabled"),
)


def _gloss(korean: str) -> str:
    """The English glosses of the polarity terms in a Korean text ("비활성화" is not also "활성화")."""
    words = []
    for term, gloss in _KOREAN_GLOSSES:
        if term in korean:
            words.append(gloss)
            korean = korean.replace(term, " ")
    return " ".join(words)


def _unit_difference(a: str, b: str) -> str | None:
    qa, qb = quantities(a), quantities(b)
    for value in sorted(qa.keys() & qb.keys()):
        if not qa[value] & qb[value]:
            return f"different units: {value} {sorted(qa[value])} vs {sorted(qb[value])}"
    return None


# "once it has ..." is "when", not a count
_ONCE_WHEN = re.compile(r"\bonce (?:it|its|the|a|an|we|they|you|this|that|there|all|every)\b")


def _article_one(a: str, b: str, nums_a: set[str], nums_b: set[str]) -> bool:
    """The values differ only by a spelt-out "one" ("for one hour" / "for the first hour", "한 페이지에
    50개" / "페이지당 50개"), read as an article, not a value, when that side has no digit 1; or by "once"
    meaning "when" ("once it has 5 failures")."""
    if nums_a ^ nums_b != {"1"}:
        return False
    side = a if "1" in nums_a else b
    if _ONCE_WHEN.search(side):
        return True
    return not re.search(r"(?<![\d.,])0*1(?![\d.,])", CLOCK.sub(r"\1", side)) and bool(
        re.search(r"(?<!\w)(?:one|한)(?!\w)", side)
    )


def _negated(text: str) -> bool:
    """Odd number of negations: a double negation reads as an affirmation."""
    words = WORD.findall(text)
    count = sum(1 for w in words if w in _NEGATION_WORDS or w.endswith("n't"))
    count += sum(text.count(marker) for marker in _KOREAN_NEGATIONS)
    count += sum(1 for w in text.split() if w in _KOREAN_NEGATION_WORDS)
    return count % 2 == 1


def skeleton(text: str) -> str:
    """The text without numbers and negation markers: what both sides say if they say the same thing."""
    text = NUMBER.sub(" ", text)
    for marker in _KOREAN_NEGATIONS:
        text = text.replace(marker, " ")
    words = [w for w in WORD.findall(text) if w not in _NEGATION_WORDS and not w.endswith("n't")]
    return "".join(words)


# "optional" on one side only: "every administrator uses MFA" / "MFA is optional for administrators"
_OPTIONAL = re.compile(r"\boptional(?:ly)?\b|선택\s*사항|선택이다|선택적")


def _stems(text: str) -> set[str]:
    return {w[:5] for w in WORD.findall(text) if len(w) > 2}


def _converse(a: str, b: str) -> bool:
    """ "X before Y" and "Y after X" (either way round): one order of events said twice, no opposite."""
    for first, second in ((a, b), (b, a)):
        if " before " in first and " after " in second:
            f1, f2 = (_stems(part) for part in first.split(" before ", 1))
            s1, s2 = (_stems(part) for part in second.split(" after ", 1))
            return len(f1 & s2) + len(f2 & s1) > len(f1 & s1) + len(f2 & s2)
    return False


def _opposite(a: str, b: str) -> str | None:
    words_a, words_b = set(WORD.findall(a)), set(WORD.findall(b))
    for left, right in _OPPOSITES:
        a_left, a_right = bool(words_a & left), bool(words_a & right)
        b_left, b_right = bool(words_b & left), bool(words_b & right)
        if (a_left and not a_right and b_right and not b_left) or (
            a_right and not a_left and b_left and not b_right
        ):
            if "before" in left and _converse(a, b):
                continue
            return f"{sorted(left)[0]}/{sorted(right)[0]}"
    optional_a, optional_b = bool(_OPTIONAL.search(a)), bool(_OPTIONAL.search(b))
    if optional_a != optional_b:
        return "optional on one side only"
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


def _raw_tokens(text: str) -> list[str]:
    return [w.strip(".,;:!?()\"'") for w in text.split() if w.strip(".,;:!?()\"'")]


def _looks_named(word: str) -> bool:
    """A word written as a name: capitalised, upper-case or carrying a digit (not a Korean word)."""
    if not word or not word.isascii() or word.casefold() in _OPENING_WORDS:
        return False
    return word[0].isupper() or any(c.isdigit() for c in word)


# words a sentence opens with, capitalised only for being first
_OPENING_WORDS = frozenset(
    "the a an our we they you this that these those every each all some any it its their my no "
    "in on at after before for when if by with from to".split()
)


def _substitution(a: str, b: str) -> str | None:
    """Words swapped for others in the same place, the rest identical: another value, not a paraphrase.

    "owned by the billing team" / "owned by the platform team", "pattern feature/<ticket>" / "pattern
    fix/<ticket>": both neighbours of the swapped words are shared, and the texts align otherwise (at
    least 3/4 of their words in order). Synonym swaps in paraphrases rarely keep every other word.
    """
    teams_a, teams_b = set(_TEAM.findall(a.casefold())), set(_TEAM.findall(b.casefold()))
    if teams_a and teams_b and not teams_a & teams_b:
        return f"different owners: {sorted(teams_a)} vs {sorted(teams_b)}"
    raw_a, raw_b = _raw_tokens(a), _raw_tokens(b)
    ta, tb = [w.casefold() for w in raw_a], [w.casefold() for w in raw_b]
    matcher = difflib.SequenceMatcher(a=ta, b=tb, autojunk=False)
    if matcher.ratio() < 0.75:
        return None
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op != "replace" or max(i2 - i1, j2 - j1) > 2:
            continue
        left, right = ta[i1:i2], tb[j1:j2]
        # an inflection of the same word (owns/owned, 담당한다/담당했다) is no new value
        if len(left) == len(right) == 1 and left[0][:3] == right[0][:3]:
            continue
        if i1 == 0 or j1 == 0 or i2 >= len(ta) or j2 >= len(tb):
            # at an edge only one neighbour is shared: count a single word swapped for a single word, and
            # at the start only a name for a name ("Kafka carries ..." / "NATS carries ...")
            if len(left) != 1 or len(right) != 1 or min(len(left[0]), len(right[0])) < 3:
                continue
            if (i1 == 0 or j1 == 0) and not (_looks_named(raw_a[i1]) and _looks_named(raw_b[j1])):
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
    if normalise(a) == normalise(b):
        return None
    a, b = canonical_aliases(a), canonical_aliases(b)
    if bool(HANGUL.search(a)) == bool(HANGUL.search(b)):
        named = _named_difference(a, b)
        if named:
            return named
        return _value_difference(a, b) or _substitution(a, b)
    return _value_difference(a, b)


def value_difference(a: str, b: str) -> str | None:
    """The part of `material_difference` no rewording explains, or None: another number, unit or version, a
    negation on one side, opposite terms, another member of a choice group (gzip/brotli) or another owner;
    between an English and a Korean text, also a name swapped across them.

    Left out (see `wording_difference`): a name one side writes and the other does not, the same names or
    words in another order around a contrast, and a substituted word — what a paraphrase of a long
    sentence also does ("the Royal Navy" / "the navy"), and what `governance.order_model` weighs instead.
    """
    if normalise(a) == normalise(b):
        return None
    a, b = canonical_aliases(a), canonical_aliases(b)
    if bool(HANGUL.search(a)) == bool(HANGUL.search(b)):
        teams_a, teams_b = set(_TEAM.findall(a.casefold())), set(_TEAM.findall(b.casefold()))
        if teams_a and teams_b and not teams_a & teams_b:
            return f"different owners: {sorted(teams_a)} vs {sorted(teams_b)}"
    return _value_difference(a, b)


def wording_difference(a: str, b: str) -> tuple[bool, bool, bool]:
    """Which of the wording checks of `material_difference` speak for two texts of one script: (a name on
    one side only, the same names or words in another order around a contrast, a substituted word)."""
    if normalise(a) == normalise(b):
        return (False, False, False)
    a, b = canonical_aliases(a), canonical_aliases(b)
    if bool(HANGUL.search(a)) != bool(HANGUL.search(b)):
        return (False, False, False)
    named = _named_difference(a, b) or ""
    return (
        named.startswith("different named choices"),
        "another order" in named,
        _substitution(a, b) is not None,
    )


def _named_difference(a: str, b: str) -> str | None:
    """Named choices one side writes and the other does not; the same names, or words, in another order next
    to a contrast. Same-script texts, aliases spelt one way."""
    names_a, names_b = named_choices(a), named_choices(b)
    words_a = latin_words(a) | {d for d in WEEKDAYS_KO if d in a}
    words_b = latin_words(b) | {d for d in WEEKDAYS_KO if d in b}
    only_a, only_b = names_a - words_b, names_b - words_a
    if only_a or only_b:
        return f"different named choices: {sorted(only_a)} vs {sorted(only_b)}"
    shared = names_a & names_b
    contrast = bool(_CONTRAST.search(a.casefold())) or bool(_CONTRAST.search(b.casefold()))
    if contrast and len(shared) >= 2 and name_order(a, shared) != name_order(b, shared):
        return f"the same names in another order: {name_order(a, shared)} vs {name_order(b, shared)}"
    tokens_a, tokens_b = _raw_tokens(a.casefold()), _raw_tokens(b.casefold())
    polar = contrast or bool(_NEVER.search(a.casefold()))
    if polar and tokens_a != tokens_b and sorted(tokens_a) == sorted(tokens_b):
        # "on the server, never in the browser" / "in the browser, never on the server"
        return "the same words in another order around a contrast"
    return None


def _value_difference(a: str, b: str) -> str | None:
    """Numbers, units, a negation, opposite terms, choice groups (aliases spelt one way); between an English
    and a Korean text also a name swapped across them and the Korean polarity terms glossed."""
    same_script = bool(HANGUL.search(a)) == bool(HANGUL.search(b))
    if not same_script:
        # an English text and a Korean one: a name on each side that the other does not write is a swap
        # ("managed in Crowdin" / "Lokalise에서 관리한다"); a name on one side only is a translation's freedom
        english, korean = (a, b) if HANGUL.search(b) else (b, a)
        latin_ko = {n for n in named_choices(korean) if n.isascii()} - UNIT_WORDS
        only_en = named_choices(english) - latin_words(korean)
        only_ko = latin_ko - latin_words(english)
        if only_en and only_ko:
            return f"different named choices: {sorted(only_en)} vs {sorted(only_ko)}"
    na, nb = normalise(a), normalise(b)
    for spoken, plain in _KOREAN_SWITCHES:
        na, nb = na.replace(spoken, plain), nb.replace(spoken, plain)
    nums_a, nums_b = number_values(na), number_values(nb)
    if nums_a != nums_b and (nums_a or nums_b) and not _article_one(na, nb, nums_a, nums_b):
        return f"different values: {sorted(nums_a - nums_b)} vs {sorted(nums_b - nums_a)}"
    units = _unit_difference(na, nb)
    if units:
        return units
    if _negated(na) != _negated(nb):
        return "one states the negation of the other"
    pair = _opposite(na, nb)
    if pair:
        return f"opposite terms ({pair})"
    chosen = _choices(na, nb)
    if chosen:
        return chosen
    if same_script:
        return None
    # an English text and a Korean one: their polarity terms, the Korean ones glossed
    english, korean = (na, nb) if HANGUL.search(nb) else (nb, na)
    pair = _opposite(english, _gloss(korean))
    return f"opposite terms ({pair})" if pair else None
