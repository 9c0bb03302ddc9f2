"""Fit the learned order veto (`governance/order_model.json`) on the PAWS-Wiki dev *tune* part only.

    python -m tests.bench.fit_order_model            # fit, choose the cut, print tune-part figures
    python -m tests.bench.fit_order_model --write    # ... and write governance/order_model.json

Deterministic: the same tune part gives the same file (numpy, no randomness: thresholds at fixed
quantiles, folds by `sha256("paws-fold:" + id)`). No embedder is needed: the model's signals are lexical
and positional (`governance.order_model.order_features`), and on PAWS pairs the embedding cosine is ≥ 0.92
whatever the label, so every pair is taken to reach the duplicate model at a cosine of 0.95.

**Population.** The model speaks on pairs the duplicate model (`governance.dedup_model`) would merge, with no
value difference (`governance.wording.differences.value_difference`), of at least 14 words each and word sets
at least 0.7 alike, from 8 words (`governance.order_model.asked`); the verdicts of the wording and order rules
are among its signals, and the other pairs are the rules' alone. Label 1 = paraphrase. **The model**:
gradient-boosted trees (logistic loss, depth 4, 200 rounds, rate 0.1, leaves of at least 20 pairs, L2 1 on
leaf values). **The cuts** are chosen on out-of-fold probabilities (5 folds), simulating the decision of
`governance.order_model.order_veto` over *all* tune pairs (the rules' merges included): from 14 words
(`LONG_WORDS`) the model alone decides at `cut`; between 8 and 13 words the rules refuse first and the model
refuses besides below `short_cut`. The pair of cuts with the most paraphrases merged whose different-meaning
pairs merged stay at or below `--target` (default 0.03, the target of the held-aside part) wins — unless that
merges fewer paraphrases than the rules alone did; then the fewest different-meaning merges among cuts merging
at least as many paraphrases as the rules alone. The held-aside part is never read here.

**The labelled sets bound `short_cut`**: agents write short reorderings a model fitted on encyclopedic
sentences reads as swaps ("The CI runs the test suite on Python 3.11." / "Our test suite runs on Python
3.11 in CI."), so `short_cut` is at most the model's lowest probability over the duplicates of
tests/data (dedup_pairs.jsonl and the unseen pairs, Latin script, asked, passing the rules): no labelled
paraphrase the rules merged is refused. The same constraint set `LONG_WORDS` (14) before: from 12 words
the model alone refused ten reordering paraphrases of three families there ("A canary release receives
3 percent of traffic for the first hour." / "For the first hour the canary release gets 3 percent of
traffic."; docs/dedup-calibration.md).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
from collections.abc import Sequence
from typing import cast

import numpy as np

from governance.dedup_model import DEDUP_MODEL, duplicate_probability
from governance.order_model import (
    MODEL_FILE,
    ORDER_FEATURES,
    OrderModel,
    Tree,
    asked,
    long_enough,
    order_features,
    order_veto,
)
from governance.wording.differences import material_difference, value_difference
from governance.wording.order import order_difference
from tests.bench.dedup_external import PawsPair, load_paws, part_of
from tests.bench.dedup_pairs import PAIRS_FILE, UNSEEN_FILE, load_pairs

__all__ = ["reaches", "fit_trees", "fit_order_model", "main"]

STAND_IN_COSINE = 0.95
FOLDS = 5
DEPTH = 4
ROUNDS = 200
RATE = 0.1
MIN_LEAF = 20
L2 = 1.0
MIN_WORDS = 8
LONG_WORDS = 14
MIN_JACCARD = 0.7
_HANGUL = re.compile(r"[\uac00-\ud7a3]")
CUTS = [round(0.01 * i, 2) for i in range(1, 100)]


def reaches(p: PawsPair) -> bool:
    """Whether the model is asked about the pair: no value difference, the duplicate model says merge."""
    return (
        value_difference(p.a, p.b) is None
        and duplicate_probability(p.a, p.b, STAND_IN_COSINE) >= DEDUP_MODEL.cut
    )


def _tree(x: np.ndarray, g: np.ndarray, h: np.ndarray, depth: int, thresholds: list[np.ndarray]) -> Tree:
    total_g, total_h = float(g.sum()), float(h.sum())
    leaf = round(-total_g / (total_h + L2), 6)
    if depth == 0 or len(g) < 2 * MIN_LEAF:
        return leaf
    parent = total_g * total_g / (total_h + L2)
    best: tuple[float, int, float] | None = None
    for f in range(x.shape[1]):
        column = x[:, f]
        for t in thresholds[f]:
            left = column <= t
            n_left = int(left.sum())
            if n_left < MIN_LEAF or len(g) - n_left < MIN_LEAF:
                continue
            gl, hl = float(g[left].sum()), float(h[left].sum())
            gain = gl * gl / (hl + L2) + (total_g - gl) ** 2 / (total_h - hl + L2) - parent
            if best is None or gain > best[0] + 1e-12:
                best = (gain, f, float(t))
    if best is None or best[0] <= 1e-9:
        return leaf
    _, f, t = best
    left = x[:, f] <= t
    return [
        f,
        round(t, 6),
        _tree(x[left], g[left], h[left], depth - 1, thresholds),
        _tree(x[~left], g[~left], h[~left], depth - 1, thresholds),
    ]


def _leaves(tree: Tree, x: np.ndarray) -> np.ndarray:
    """Each row's leaf value in one tree (the comparison `order_model.OrderModel.probability` makes)."""
    out = np.empty(len(x))

    def walk(node: Tree, rows: np.ndarray) -> None:
        if not isinstance(node, list):
            out[rows] = node
            return
        feature, threshold = int(cast(float, node[0])), cast(float, node[1])
        left = x[:, feature][rows] <= threshold
        walk(node[2], rows[left])
        walk(node[3], rows[~left])

    walk(tree, np.arange(len(x)))
    return out


def fit_trees(x: np.ndarray, y: np.ndarray, cut: float = 0.5, short_cut: float = 0.0) -> OrderModel:
    """Gradient-boosted trees on signals `x` and labels `y` (1 = same meaning)."""
    thresholds = [
        np.unique(np.round(np.quantile(x[:, f], np.linspace(0.02, 0.98, 33)), 6)) for f in range(x.shape[1])
    ]
    prior = float(np.clip(y.mean(), 1e-6, 1 - 1e-6))
    base = round(float(np.log(prior / (1 - prior))), 6)
    score = np.full(len(y), base)
    trees: list[Tree] = []
    for _ in range(ROUNDS):
        p = 1.0 / (1.0 + np.exp(-score))
        tree = _tree(x, p - y, p * (1 - p), DEPTH, thresholds)
        trees.append(tree)
        score += RATE * _leaves(tree, x)
    return OrderModel(
        ORDER_FEATURES, base, RATE, tuple(trees), cut, MIN_WORDS, MIN_JACCARD, short_cut, LONG_WORDS
    )


def _probabilities(model: OrderModel, x: np.ndarray) -> np.ndarray:
    return np.array([model.probability(tuple(float(v) for v in row)) for row in x])


def labelled_floor(model: OrderModel) -> float:
    """The model's lowest probability over the labelled duplicates of tests/data (Latin script) between
    8 and 13 words that it is asked about and the rules merge: `short_cut` may not exceed it."""
    lowest = 1.0
    for pair in [*load_pairs(PAIRS_FILE), *load_pairs(UNSEEN_FILE)]:
        a, b = pair.a, pair.b
        if not pair.duplicate or _HANGUL.search(a) or _HANGUL.search(b):
            continue
        if not asked(a, b, model) or long_enough(a, b, model):
            continue
        if material_difference(a, b) is None and order_difference(a, b) is None:
            lowest = min(lowest, model.probability(order_features(a, b)))
    return lowest


def _rules_pass(p: PawsPair) -> bool:
    return material_difference(p.a, p.b) is None and order_difference(p.a, p.b) is None


def _stand_in() -> OrderModel:
    """A model that never refuses: what the rules alone decide, for pairs the model is not asked about."""
    return OrderModel(ORDER_FEATURES, 60.0, 1.0, (), 0.5, MIN_WORDS, MIN_JACCARD, 0.0, LONG_WORDS)


def _fold(pair_id: str) -> int:
    return hashlib.sha256(f"paws-fold:{pair_id}".encode()).digest()[0] % FOLDS


def fit_order_model(
    tune: Sequence[PawsPair], target: float
) -> tuple[OrderModel, dict[str, float], list[tuple[float, float, float, float]]]:
    """The fitted model with its cuts, tune figures, and (cut, short cut, negatives merged, paraphrases
    merged) for the best short cut at every cut tried (out-of-fold)."""
    asked_pairs = [p for p in tune if reaches(p)]
    # pairs of other words, and the shortest texts, are the rules' alone
    stand_in = _stand_in()
    ruled = [p for p in asked_pairs if not asked(p.a, p.b, stand_in)]
    ruled_ids = {p.id for p in ruled}
    short_merged = [p for p in ruled if order_veto(p.a, p.b, stand_in) is None]
    reach = [p for p in asked_pairs if p.id not in ruled_ids]
    x = np.array([order_features(p.a, p.b) for p in reach])
    y = np.array([1.0 if p.paraphrase else 0.0 for p in reach])
    long = np.array([long_enough(p.a, p.b, stand_in) for p in reach])
    rules = np.array([_rules_pass(p) for p in reach])
    folds = np.array([_fold(p.id) for p in reach])
    oof = np.zeros(len(reach))
    for k in range(FOLDS):
        held = folds == k
        oof[held] = _probabilities(fit_trees(x[~held], y[~held]), x[held])
    final = fit_trees(x, y)
    ceiling = labelled_floor(final)
    negatives = sum(1 for p in tune if not p.paraphrase)
    paraphrases = len(tune) - negatives
    base_neg = sum(1 for p in short_merged if not p.paraphrase)
    base_para = sum(1 for p in short_merged if p.paraphrase)
    short_cuts = [0.0] + [c for c in CUTS if c <= ceiling]
    grid: list[tuple[float, float, float, float]] = []
    for cut in CUTS:
        for short_cut in short_cuts:
            kept = np.where(long, oof >= cut, rules & (oof >= short_cut))
            neg = (base_neg + float(((y == 0) & kept).sum())) / negatives
            para = (base_para + float(((y == 1) & kept).sum())) / paraphrases
            grid.append((cut, short_cut, neg, para))
    # what the rules alone merge (no learned model): the veto must not merge fewer paraphrases
    rules_merged = [p for p in asked_pairs if _rules_pass(p)]
    rules_para = sum(1 for p in rules_merged if p.paraphrase) / paraphrases
    rules_neg = sum(1 for p in rules_merged if not p.paraphrase) / negatives
    passing = [c for c in grid if c[2] <= target]
    if passing:
        cut, short_cut, neg, para = max(passing, key=lambda c: (c[3], -c[2], -c[0], -c[1]))
    if not passing or para < rules_para:
        # the target costs paraphrases: fewest different-meaning merges at no fewer paraphrases merged
        keeping = [c for c in grid if c[3] >= rules_para]
        cut, short_cut, neg, para = min(keeping, key=lambda c: (c[2], -c[3], -c[0], -c[1]))
    model = OrderModel(
        ORDER_FEATURES, final.base, RATE, final.trees, cut, MIN_WORDS, MIN_JACCARD, short_cut, LONG_WORDS
    )
    curve = []
    for tried in CUTS:
        within = [c for c in grid if c[0] == tried and c[2] <= target]
        if within:
            curve.append(max(within, key=lambda c: c[3]))
    figures = {
        "tune pairs": float(len(tune)),
        "rules alone: different-meaning merged": rules_neg,
        "rules alone: paraphrases merged": rules_para,
        "reach the order veto (no value difference, duplicate model merges)": float(len(asked_pairs)),
        "of which judged by the rules alone (shortest, or other words)": float(len(ruled)),
        "of which the model alone decides (from 14 words)": float(long.sum()),
        "lowest probability of a labelled duplicate of 8-13 words (short cut ceiling)": ceiling,
        "different-meaning merged, out of fold": neg,
        "paraphrases merged, out of fold": para,
    }
    return model, figures, curve


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", type=float, default=0.03)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args(argv)
    tune = [p for p in load_paws() if part_of(p.id) == "tune"]
    model, figures, curve = fit_order_model(tune, args.target)
    for key, value in figures.items():
        print(f"{key}: {value:.4f}")
    print(f"cut (best short cut, target {args.target}): different-meaning / paraphrases merged, out of fold")
    for cut, short_cut, neg, para in curve:
        print(f"  {cut:.2f} ({short_cut:.2f}): {neg:.4f} / {para:.4f}")
    print(f"chosen cut {model.cut}, short cut {model.short_cut}; {len(model.trees)} trees")
    if args.write:
        MODEL_FILE.write_text(json.dumps(model.as_json(), separators=(",", ":")) + "\n", encoding="utf-8")
        print(f"wrote {MODEL_FILE}")


if __name__ == "__main__":
    main()
