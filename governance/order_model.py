"""Whether two texts of nearly the same words still say one thing, judged by their word order (pure, learned).

A merge keeps one text and reinforces it; if the two texts said different things, a fact is lost. The rules
of `governance.wording.order.order_difference` catch an exchange of two words, a moved qualifier and long
reorderings, but pairs of nearly the same words with another meaning come in more shapes than rules
enumerate (PAWS-Wiki is made of them: "July is the hottest month and January the coldest" / "July is the
coldest month, the hottest in January"). This module is a second, learned veto on a merge: boosted
decision trees over cheap signals of how the shared words moved, fitted on external pairs (the tune part of
PAWS-Wiki dev, `tests/bench/fit_order_model.py`, which writes `order_model.json` beside this file
deterministically).

Its signals, per pair of texts (case-folded words without punctuation, aliases spelt one way):

- `jaccard`: shared words over all words; `lcs`: longest common subsequence of the words, 2·LCS / (|a|+|b|);
- `crossings`, `content_crossings`, `name_crossings`: the share of pairs of shared words (each held once by
  both texts) whose order the two texts disagree on (Kendall's distance): all words, content words only,
  capitalised names only;
- `context_changed`: the share of shared content words whose preceding word differs ("born in X, moved to
  Y" / "born in Y, moved to X": the preposition marking each role changed);
- `shift`: the mean move of shared content words, in shares of the text's length;
- `negation_mismatch`, `qualifier_mismatch`, `number_mismatch`: how many negations / qualifiers
  (only, never, not ...) each text holds differ, the numbers differ;
- `length_ratio`: the shorter text's word count over the longer's;
- the verdicts of the wording and order rules (`rule_*`);
- signals read off a greedy string tiling of the two word sequences (`_tiles`: a phrase moved whole stays
  one tile, two words that exchanged places are two one-word tiles that cross): tiles per word, their
  crossings, moved one-word and short tiles, words said anew, slot takeovers (a shared word standing where
  another stood), tile pairs that exchanged places (`_tile_features`).

Between texts of 14 words or more the model decides alone (a value difference aside); between shorter
asked texts (from 8 words) the rules refuse first and the model may only refuse more (`order_veto`).

The embedding cosine is not one of them: on the pairs this kind of veto is for (nearly the same words)
the embedder gives ≥ 0.92 whatever the meaning, so it carries no signal here (docs/dedup-calibration.md).
Only texts of Latin script are judged: Korean marks roles with particles, its word order is free.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, cast

from rapidfuzz.distance import LCSseq

from governance.wording.canonical import canonical_aliases
from governance.wording.differences import material_difference, value_difference, wording_difference
from governance.wording.order import order_difference, order_signals

__all__ = [
    "ORDER_FEATURES",
    "OrderModel",
    "order_features",
    "order_model",
    "same_meaning_probability",
    "asked",
    "long_enough",
    "order_veto",
]

ORDER_FEATURES: tuple[str, ...] = (
    "jaccard",
    "lcs",
    "crossings",
    "content_crossings",
    "name_crossings",
    "context_changed",
    "shift",
    "negation_mismatch",
    "qualifier_mismatch",
    "number_mismatch",
    "length_ratio",
    "bigram_jaccard",
    "isolated_moves",
    "isolated_name_moves",
    "isolated_moves_capped",
    "max_shift",
    "rule_named",
    "rule_contrast_order",
    "rule_substitution",
    "rule_exchange",
    "rule_qualifier",
    "rule_reorder",
    "tiles",
    "tile_crossings",
    "moved_single_words",
    "moved_single_names",
    "moved_share",
    "moved_short_tiles",
    "novel_words",
    "takeover_before",
    "takeover_after",
    "takeover_both",
    "first_word_swap",
    "first_name_swap",
    "moved_replacements",
    "novel_replacements",
    "words",
    "tile_discordant",
    "exchanged_tiles",
    "exchanged_short_tiles",
    "exchanged_content_tiles",
)

MODEL_FILE = Path(__file__).with_name("order_model.json")

_HANGUL = re.compile(r"[\uac00-\ud7a3]")
_STRIP = ".,;:!?()[]{}\"'`“”‘’"
_FUNCTION_WORDS = frozenset(
    "the a an of in on at to for from by with and or as is are was were be been being it its this that "
    "these those which who whom whose he she they his her their them we our you your i my me also then "
    "there here has have had do does did will would can could should may might must into onto upon over "
    "under between through during after before while since until about against among within without".split()
)
_NEGATIONS = frozenset("not no never none nothing neither nor cannot without".split())
_QUALIFIERS = frozenset("only not never no except without all every each also even still just".split())
_NUMBER = re.compile(r"\d")
# how many signals come before the rules' verdicts in ORDER_FEATURES
_POSITIONAL = ORDER_FEATURES.index("rule_named")


# a tree: a leaf value, or [feature index, threshold, the tree for values <= threshold, the tree for the rest]
Tree = float | list["Tree"]


@dataclass(frozen=True)
class OrderModel:
    """Boosted decision trees: P(same meaning) = sigmoid(base + rate * sum of the trees' leaves), and the
    cut below which a merge is refused. It is asked about texts of at least `min_words` words each whose
    word sets are at least `min_jaccard` alike (see `asked`)."""

    features: tuple[str, ...]
    base: float
    rate: float
    trees: tuple[Tree, ...]
    cut: float
    min_words: int
    min_jaccard: float
    short_cut: float = 0.0
    long_words: int = 14

    def probability(self, values: tuple[float, ...]) -> float:
        """P(the two texts say one thing) for one pair's signals (in `features` order)."""
        z = 0.0
        for tree in self.trees:
            node = tree
            while isinstance(node, list):
                feature, threshold = cast(float, node[0]), cast(float, node[1])
                node = node[2] if values[int(feature)] <= threshold else node[3]
            z += node
        z = self.base + self.rate * z
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))

    def as_json(self) -> dict[str, object]:
        """The model as `order_model.json` holds it."""
        return {
            "features": list(self.features),
            "base": self.base,
            "rate": self.rate,
            "cut": self.cut,
            "min_words": self.min_words,
            "min_jaccard": self.min_jaccard,
            "short_cut": self.short_cut,
            "long_words": self.long_words,
            "trees": list(self.trees),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> OrderModel:
        """A model from `as_json`'s form; its features must be this module's, in this order."""
        features = tuple(str(f) for f in data["features"])
        if features != ORDER_FEATURES:
            raise ValueError(f"order model features {features} are not {ORDER_FEATURES}")
        return cls(
            features,
            float(data["base"]),
            float(data["rate"]),
            tuple(data["trees"]),
            float(data["cut"]),
            int(data["min_words"]),
            float(data["min_jaccard"]),
            float(data.get("short_cut", 0.0)),
            int(data.get("long_words", data["min_words"])),
        )


@cache
def order_model() -> OrderModel:
    """The shipped model (`order_model.json`, written by tests/bench/fit_order_model.py)."""
    return OrderModel.from_json(json.loads(MODEL_FILE.read_text(encoding="utf-8")))


def _tokens(text: str) -> tuple[list[str], list[bool]]:
    """Case-folded words without punctuation, and which of them are written as names (capitalised, not
    the first word)."""
    words = [w.strip(_STRIP) for w in canonical_aliases(text).split()]
    words = [w for w in words if w]
    folded = [w.casefold() for w in words]
    named = [
        i > 0 and w[0].isupper() and f not in _FUNCTION_WORDS
        for i, (w, f) in enumerate(zip(words, folded, strict=True))
    ]
    return folded, named


def _once(tokens: list[str]) -> dict[str, int]:
    seen: dict[str, int] = {}
    twice: set[str] = set()
    for i, w in enumerate(tokens):
        if w in seen:
            twice.add(w)
        else:
            seen[w] = i
    return {w: i for w, i in seen.items() if w not in twice}


def _crossings(words: list[str], pos_a: dict[str, int], pos_b: dict[str, int]) -> float:
    """Kendall's distance: the share of pairs of `words` the two texts order differently."""
    n = len(words)
    if n < 2:
        return 0.0
    order = sorted(words, key=lambda w: pos_a[w])
    seq = [pos_b[w] for w in order]
    discordant = sum(1 for i in range(n) for j in range(i + 1, n) if seq[i] > seq[j])
    return discordant / (n * (n - 1) / 2)


def _neighbours(tokens: list[str], i: int) -> tuple[str, str]:
    return (tokens[i - 1] if i else "^", tokens[i + 1] if i + 1 < len(tokens) else "$")


def _tiles(ta: list[str], tb: list[str]) -> tuple[list[tuple[int, int, int]], list[bool], list[bool]]:
    """Greedy string tiling: the longest run of words both texts hold (not yet covered) becomes a tile,
    again and again; (start in a, start in b, length) per tile, and which words of each text are covered.
    A phrase moved whole stays one tile; two words that exchanged places are two tiles of one word that
    cross."""
    covered_a, covered_b = [False] * len(ta), [False] * len(tb)
    found: list[tuple[int, int, int]] = []
    while True:
        best = (0, 0, 0)
        for i in range(len(ta)):
            if covered_a[i]:
                continue
            for j in range(len(tb)):
                if covered_b[j] or ta[i] != tb[j]:
                    continue
                k = 0
                while (
                    i + k < len(ta)
                    and j + k < len(tb)
                    and not covered_a[i + k]
                    and not covered_b[j + k]
                    and ta[i + k] == tb[j + k]
                ):
                    k += 1
                if k > best[2]:
                    best = (i, j, k)
        if best[2] == 0:
            return found, covered_a, covered_b
        i, j, k = best
        for d in range(k):
            covered_a[i + d] = covered_b[j + d] = True
        found.append(best)


def _tile_features(
    ta: list[str], named_a: list[bool], tb: list[str], named_b: list[bool]
) -> tuple[float, ...]:
    """How the shared words moved, read from the tiles (`_tiles`): tiles per word, the tiles' Kendall
    distance, moved tiles of one word (content words, names), the share of words in moved tiles, moved
    tiles of one or two words carrying content, content words of each text the other lacks; shared content
    words standing where another shared word stood (the same word before, after, or both: a slot taken
    over), the first word or first name exchanged; the words of the other text in difflib's changed
    stretches that occur elsewhere (moved) or nowhere (new); the shorter text's length, the number of
    crossing tile pairs, and tile pairs that exchanged places (each where the other stood, within 0.12 of
    the length): all, of at most three words, carrying content on both sides."""
    found, covered_a, covered_b = _tiles(ta, tb)
    found.sort()
    n = len(found)
    crossing = [0] * n
    discordant = 0
    for x in range(n):
        for y in range(x + 1, n):
            if found[x][1] > found[y][1]:
                discordant += 1
                crossing[x] += 1
                crossing[y] += 1
    half = (len(ta) + len(tb)) / 2
    moved = [t for t, c in zip(found, crossing, strict=True) if c > 0]
    single = sum(1 for i, _, k in moved if k == 1 and ta[i] not in _FUNCTION_WORDS)
    single_names = sum(1 for i, j, k in moved if k == 1 and (named_a[i] or named_b[j]))
    short = sum(1 for i, _, k in moved if k <= 2 and any(w not in _FUNCTION_WORDS for w in ta[i : i + k]))
    novel = sum(1 for w, c in zip(ta, covered_a, strict=True) if not c and w not in _FUNCTION_WORDS) + sum(
        1 for w, c in zip(tb, covered_b, strict=True) if not c and w not in _FUNCTION_WORDS
    )
    once_a, once_b = _once(ta), _once(tb)
    shared = [w for w in once_a if w in once_b and w not in _FUNCTION_WORDS]
    context_a = {w: _neighbours(ta, once_a[w]) for w in shared}
    take_before = take_after = take_both = 0
    for w in shared:
        before, after = _neighbours(tb, once_b[w])
        if context_a[w] == (before, after):
            continue
        others = [context_a[v] for v in shared if v != w]
        if (
            context_a[w][0] != before
            and before not in ("the", "a", "an")
            and any(o[0] == before for o in others)
        ):
            take_before += 1
        if context_a[w][1] != after and any(o[1] == after for o in others):
            take_after += 1
        take_both += any(o == (before, after) for o in others)
    names_a = [w for w, f in zip(ta, named_a, strict=True) if f]
    names_b = [w for w, f in zip(tb, named_b, strict=True) if f]
    first_word = bool(
        names_a
        and names_b
        and ta[0] != tb[0]
        and ta[0] in tb
        and tb[0] in ta
        and ta[0] not in _FUNCTION_WORDS
    )
    first_name = bool(names_a and names_b and names_a[0] != names_b[0] and names_a[0] in names_b)
    moved_words = new_words = 0
    opcodes = difflib.SequenceMatcher(a=ta, b=tb, autojunk=False).get_opcodes()
    for op, _, _, j1, j2 in opcodes:
        if op == "equal":
            continue
        for w in tb[j1:j2]:
            if w not in _FUNCTION_WORDS:
                moved_words += w in ta
                new_words += w not in ta
    exchanged = exchanged_short = exchanged_content = 0
    for ix, jx, kx in found:
        for iy, jy, ky in found:
            if not (ix < iy and jx > jy):
                continue
            if abs(jx / len(tb) - iy / len(ta)) < 0.12 and abs(jy / len(tb) - ix / len(ta)) < 0.12:
                exchanged += 1
                exchanged_short += kx <= 3 and ky <= 3
                exchanged_content += any(w not in _FUNCTION_WORDS for w in ta[ix : ix + kx]) and any(
                    w not in _FUNCTION_WORDS for w in ta[iy : iy + ky]
                )
    return (
        n / half,
        discordant / (n * (n - 1) / 2) if n > 1 else 0.0,
        float(single),
        float(single_names),
        sum(k for _, _, k in moved) / half,
        float(short),
        float(novel),
        float(take_before),
        float(take_after),
        float(take_both),
        float(first_word),
        float(first_name),
        float(moved_words),
        float(new_words),
        float(min(len(ta), len(tb))),
        float(discordant),
        float(exchanged),
        float(exchanged_short),
        float(exchanged_content),
    )


def order_features(a: str, b: str) -> tuple[float, ...]:
    """The model's signals for one pair, in `ORDER_FEATURES` order."""
    ta, named_a = _tokens(a)
    tb, named_b = _tokens(b)
    rules = (*wording_difference(a, b), *order_signals(a, b))
    flags = tuple(float(r) for r in rules)
    if not ta or not tb:
        return (0.0,) * _POSITIONAL + flags + (0.0,) * (len(ORDER_FEATURES) - _POSITIONAL - len(flags))
    set_a, set_b = set(ta), set(tb)
    jaccard = len(set_a & set_b) / len(set_a | set_b)
    lcs = 2 * LCSseq.similarity(ta, tb) / (len(ta) + len(tb))
    bigrams_a, bigrams_b = set(zip(ta, ta[1:], strict=False)), set(zip(tb, tb[1:], strict=False))
    bigram_jaccard = len(bigrams_a & bigrams_b) / max(1, len(bigrams_a | bigrams_b))
    once_a, once_b = _once(ta), _once(tb)
    shared = [w for w in once_a if w in once_b]
    content = [w for w in shared if w not in _FUNCTION_WORDS]
    names = [w for w in content if named_a[once_a[w]] or named_b[once_b[w]]]
    changed = isolated = isolated_names = 0
    shift_sum = max_shift = 0.0
    for w in content:
        i, j = once_a[w], once_b[w]
        (before_a, after_a), (before_b, after_b) = _neighbours(ta, i), _neighbours(tb, j)
        shift = abs(i / len(ta) - j / len(tb))
        shift_sum += shift
        max_shift = max(max_shift, shift)
        changed += before_a != before_b
        # a word moved alone: neither neighbour kept, and it went somewhere else in the sentence
        if before_a != before_b and after_a != after_b and shift > 0.1:
            isolated += 1
            isolated_names += named_a[i] or named_b[j]
    negation = abs(sum(w in _NEGATIONS for w in ta) - sum(w in _NEGATIONS for w in tb))
    qualifier = abs(sum(w in _QUALIFIERS for w in ta) - sum(w in _QUALIFIERS for w in tb))
    numbers_a = {w for w in ta if _NUMBER.search(w)}
    numbers_b = {w for w in tb if _NUMBER.search(w)}
    return (
        jaccard,
        lcs,
        _crossings(shared, once_a, once_b),
        _crossings(content, once_a, once_b),
        _crossings(names, once_a, once_b),
        changed / len(content) if content else 0.0,
        shift_sum / len(content) if content else 0.0,
        float(negation),
        float(qualifier),
        float(numbers_a != numbers_b),
        min(len(ta), len(tb)) / max(len(ta), len(tb)),
        bigram_jaccard,
        float(isolated),
        float(isolated_names),
        float(min(isolated, 2)),
        max_shift,
        *flags,
        *_tile_features(ta, named_a, tb, named_b),
    )


def same_meaning_probability(a: str, b: str, model: OrderModel | None = None) -> float:
    """P(two texts of nearly the same words say one thing), by the shipped model unless another is given."""
    return (model or order_model()).probability(order_features(a, b))


def _jaccard(a: str, b: str) -> float:
    words_a, words_b = set(_tokens(a)[0]), set(_tokens(b)[0])
    return len(words_a & words_b) / len(words_a | words_b) if words_a | words_b else 1.0


def asked(a: str, b: str, model: OrderModel | None = None) -> bool:
    """Whether the model judges the pair: both texts of at least `min_words` words, their word sets at
    least `min_jaccard` alike (the shape of the pairs it was fitted on)."""
    active = model or order_model()
    return min(len(a.split()), len(b.split())) >= active.min_words and _jaccard(a, b) >= active.min_jaccard


def long_enough(a: str, b: str, model: OrderModel | None = None) -> bool:
    """Whether the model alone decides an asked pair (both texts of at least `long_words` words); between
    shorter asked texts the rules refuse first and the model may only refuse more (`order_veto`)."""
    active = model or order_model()
    return asked(a, b, active) and min(len(a.split()), len(b.split())) >= active.long_words


def order_veto(a: str, b: str, model: OrderModel | None = None) -> str | None:
    """Why a merge of two Latin-script texts is refused, or None (Korean text: see `material_difference`
    and `order_difference`).

    The model is asked about sentences of nearly the same words (`asked`: at least `min_words` words each,
    word sets at least `min_jaccard` alike, the kind of pair it was fitted on); other pairs, and the
    shortest statements, are judged by the rules alone (`governance.wording.differences.material_difference`
    and `order_difference`). Between asked texts of fewer than `long_words` words the rules refuse first,
    and the model refuses besides below its `short_cut` (kept low enough that no reordering paraphrase of
    the labelled sets is refused). Between longer texts a value difference (`value_difference`: number,
    unit, negation, opposite, choice, owner) refuses; otherwise the model decides, the verdicts of the
    wording and order rules among its signals: a probability below its cut refuses.
    """
    active = model or order_model()
    if not asked(a, b, active):
        return material_difference(a, b) or order_difference(a, b)
    if not long_enough(a, b, active):
        ruled = material_difference(a, b) or order_difference(a, b)
        if ruled is not None:
            return ruled
        probability = active.probability(order_features(a, b))
        if probability < active.short_cut:
            return f"the word order says another thing (same-meaning probability {probability:.2f})"
        return None
    value = value_difference(a, b)
    if value is not None:
        return value
    probability = active.probability(order_features(a, b))
    if probability < active.cut:
        return f"the word order says another thing (same-meaning probability {probability:.2f})"
    return None
