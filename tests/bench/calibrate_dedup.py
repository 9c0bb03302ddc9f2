"""Fit and measure loregate's duplicate decision on tests/data/dedup_pairs.jsonl (outside the pytest run).

    python -m tests.bench.calibrate_dedup            # fit on the train split, print the tables
    python -m tests.bench.calibrate_dedup --write    # ... and write the fitted DEDUP_MODEL constant

The decision (`governance.dedup.classify`, step 4): cosine >= floor, no material difference (a veto), and
the logistic model of `governance.dedup_model` at or above its cut. For every floor on a grid, the model is
fitted (numpy, Newton's method with a small L2 penalty, standardised features) on the *train* pairs that
reach the model (cosine >= floor, no veto); the floor and the cut are then chosen on the train split as the
best F1 that merges no hard negative and no unrelated pair there. Figures are printed on the held-out split
(families never seen while fitting) and on all pairs, overall, per category and per language, next to the
baselines measured in the same run: the bare cosine at 0.92 and cosine >= 0.92 with the veto.

Cosines are passage embeddings (as stored) of the configured embedder, cached in
tests/data/dedup_cosines.json.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from governance.dedup import DecisionKind, Neighbour, classify, content_hash
from governance.dedup_model import DEDUP_MODEL, FEATURES, DedupModel, pair_features
from governance.wording.differences import material_difference
from tests.bench.dedup_pairs import UNSEEN_COSINES_FILE, UNSEEN_FILE, Pair, cosines, load_pairs

__all__ = ["Metrics", "measure", "decide", "fit", "main", "NEVER_MERGE"]

MODEL_FILE = Path(__file__).resolve().parents[2] / "governance" / "dedup_model.py"
FLOORS = [round(0.76 + 0.01 * i, 2) for i in range(17)]
CUTS = [round(0.05 * i, 2) for i in range(1, 20)]
# categories whose pairs are different facts: a merge of any of them loses knowledge
NEVER_MERGE = frozenset(
    {
        "number",
        "unit",
        "version",
        "tool",
        "owner",
        "negation",
        "related_topic",
        "unrelated",
        "curated_near_miss",
    }
)
L2 = 1.0


@dataclass(frozen=True)
class Metrics:
    """Precision/recall/F1 of one decision over some pairs, and its false merges."""

    n: int
    precision: float
    recall: float
    f1: float
    false_merges: int
    never_merge_merged: int


def measure(pairs: Sequence[Pair], predicted: Sequence[bool]) -> Metrics:
    """Metrics of `predicted` (True: merged) against the labels."""
    tp = sum(1 for p, d in zip(pairs, predicted, strict=True) if d and p.duplicate)
    fp = sum(1 for p, d in zip(pairs, predicted, strict=True) if d and not p.duplicate)
    fn = sum(1 for p, d in zip(pairs, predicted, strict=True) if not d and p.duplicate)
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    bad = sum(1 for p, d in zip(pairs, predicted, strict=True) if d and p.category in NEVER_MERGE)
    return Metrics(len(pairs), precision, recall, f1, fp, bad)


def decide(pair: Pair, cosine: float, floor: float, model: DedupModel | None = None) -> bool:
    """loregate's decision for one pair: `classify` with the pair's b as the only neighbour."""
    decision = classify(
        content=pair.a,
        content_hash=content_hash(pair.a),
        canonical_key=None,
        neighbours=[Neighbour("b", "s", None, content_hash(pair.b), cosine, "", pair.b)],
        dup_threshold=floor,
        related_threshold=1.01,  # no judge: this measures the duplicate decision alone
        dedup_model=model,
    )
    return decision.kind is DecisionKind.DUPLICATE


def fit(x: np.ndarray, y: np.ndarray, l2: float = L2) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Logistic regression (Newton's method, standardised features): mean, scale, coefficients, intercept."""
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale = np.where(scale < 1e-9, 1.0, scale)
    z = np.hstack([np.ones((len(x), 1)), (x - mean) / scale])
    w = np.zeros(z.shape[1])
    penalty = np.eye(z.shape[1]) * l2
    penalty[0, 0] = 1e-6  # the intercept is (all but) not shrunk
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-(z @ w)))
        gradient = z.T @ (p - y) + penalty @ w
        hessian = (z * (p * (1 - p))[:, None]).T @ z + penalty
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.abs(step).max() < 1e-10:
            break
    return mean, scale, w[1:], float(w[0])


def as_model(
    mean: np.ndarray, scale: np.ndarray, coef: np.ndarray, intercept: float, cut: float
) -> DedupModel:
    r = lambda values: tuple(round(float(v), 6) for v in values)  # noqa: E731
    return DedupModel(DEDUP_MODEL.embedder, FEATURES, r(mean), r(scale), r(coef), round(intercept, 6), cut)


def model_source(model: DedupModel) -> str:
    """The module constant for `model`, as governance/dedup_model.py holds it."""

    def t(values: tuple[float, ...]) -> str:
        return "(" + ", ".join(f"{v!r}" for v in values) + ")"

    return (
        "DEDUP_MODEL = DedupModel(\n"
        f"    embedder={model.embedder!r},\n"
        "    features=FEATURES,\n"
        f"    mean={t(model.mean)},\n"
        f"    scale={t(model.scale)},\n"
        f"    coefficients={t(model.coefficients)},\n"
        f"    intercept={model.intercept!r},\n"
        f"    cut={model.cut!r},\n"
        ")\n"
    )


def table(title: str, rows: list[tuple[str, Sequence[Pair], Callable[[Sequence[Pair]], list[bool]]]]) -> None:
    """Print one Markdown table of metrics."""
    print(f"\n{title}\n")
    print("| pairs | n | precision | recall | F1 | false merges |")
    print("|---|---|---|---|---|---|")
    for name, pairs, predict in rows:
        if not pairs:
            continue
        m = measure(pairs, predict(pairs))
        print(f"| {name} | {m.n} | {m.precision:.3f} | {m.recall:.3f} | {m.f1:.3f} | {m.false_merges} |")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--write", action="store_true", help="write the fitted DEDUP_MODEL constant")
    args = parser.parse_args()

    from governance.adapters.embedders import make_embedder
    from governance.config import Settings

    embedder = make_embedder(Settings())
    pairs = load_pairs()
    sims = cosines(pairs, embedder)
    cos = {id(p): float(s) for p, s in zip(pairs, sims, strict=True)}
    feats = {id(p): pair_features(p.a, p.b, cos[id(p)]) for p in pairs}
    vetoed = {id(p): material_difference(p.a, p.b) is not None for p in pairs}
    train = [p for p in pairs if p.split == "train"]
    test = [p for p in pairs if p.split == "test"]
    print(f"embedder: {embedder.model_id}; {len(pairs)} pairs ({len(train)} train, {len(test)} held out)")

    best: tuple[tuple[int, float, float, float], DedupModel] | None = None
    for floor in FLOORS:
        reach = [p for p in train if cos[id(p)] >= floor and not vetoed[id(p)]]
        x = np.array([feats[id(p)] for p in reach])
        y = np.array([1.0 if p.duplicate else 0.0 for p in reach])
        mean, scale, coef, intercept = fit(x, y)
        for cut in CUTS:
            model = as_model(mean, scale, coef, intercept, cut)
            predicted = [
                cos[id(p)] >= floor and not vetoed[id(p)] and model.probability(feats[id(p)]) >= cut
                for p in train
            ]
            m = measure(train, predicted)
            # fewest merged different facts first, then F1; ties: the higher floor and cut
            key = (-m.never_merge_merged, round(m.f1, 4), floor, cut)
            if best is None or key > best[0]:
                best = (key, as_model(mean, scale, coef, intercept, cut))
    assert best is not None
    (bad, train_f1, floor, cut), model = best
    print(
        f"chosen on the train split: floor {floor:.2f}, cut {cut:.2f} "
        f"(train F1 {train_f1:.3f}, {-bad} different facts merged)"
    )
    print("\n" + model_source(model))

    def shipped(ps: Sequence[Pair]) -> list[bool]:
        return [decide(p, cos[id(p)], floor, model) for p in ps]

    def bare(ps: Sequence[Pair]) -> list[bool]:
        return [cos[id(p)] >= 0.92 for p in ps]

    def vetoed_only(ps: Sequence[Pair]) -> list[bool]:
        return [cos[id(p)] >= 0.92 and not vetoed[id(p)] for p in ps]

    for name, subset in (("held-out split", test), ("all pairs", pairs)):
        table(
            f"### {name}: decisions compared",
            [
                ("cosine >= 0.92 alone", subset, bare),
                ("cosine >= 0.92 + material-difference veto", subset, vetoed_only),
                (f"shipped: floor {floor:.2f} + veto + model (cut {cut:.2f})", subset, shipped),
            ],
        )
        langs = sorted({p.lang for p in subset})
        cats = sorted({p.category for p in subset})
        table(
            f"### {name}: shipped decision per language and category",
            [(f"lang {lang}", [p for p in subset if p.lang == lang], shipped) for lang in langs]
            + [(f"category {c}", [p for p in subset if p.category == c], shipped) for c in cats],
        )
    unseen = load_pairs(UNSEEN_FILE)
    unseen_cos = {
        id(p): float(s)
        for p, s in zip(unseen, cosines(unseen, embedder, path=UNSEEN_COSINES_FILE), strict=True)
    }
    cos.update(unseen_cos)
    table(
        "### unseen pairs (written after the fit, tests/data/dedup_pairs_unseen.jsonl)",
        [("cosine >= 0.92 alone", unseen, bare), ("shipped", unseen, shipped)]
        + [
            (f"shipped, lang {lang}", [p for p in unseen if p.lang == lang], shipped)
            for lang in ("en", "ko", "mixed")
        ],
    )
    misses = [p for p in pairs if p.duplicate and not decide(p, cos[id(p)], floor, model)]
    merged = [p for p in pairs if not p.duplicate and decide(p, cos[id(p)], floor, model)]
    print(f"\nfalse merges ({len(merged)}):")
    for p in merged:
        print(f"  [{p.category}/{p.lang}] {cos[id(p)]:.3f} {p.a} | {p.b}")
    print(f"missed duplicates ({len(misses)}), first 40:")
    for p in misses[:40]:
        why = material_difference(p.a, p.b) or f"p={model.probability(feats[id(p)]):.2f}"
        print(f"  [{p.category}/{p.lang}] {cos[id(p)]:.3f} {why}: {p.a} | {p.b}")
    if args.write:
        source = MODEL_FILE.read_text(encoding="utf-8")
        source = re.sub(r"DEDUP_MODEL = DedupModel\(\n.*?\n\)\n", model_source(model), source, flags=re.S)
        MODEL_FILE.write_text(source, encoding="utf-8")
        print(f"\nwrote {MODEL_FILE}; set dedup_similarity_threshold = {floor:.2f} in governance/config.py")


if __name__ == "__main__":
    main()
