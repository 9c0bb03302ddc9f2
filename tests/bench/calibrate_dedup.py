"""Calibrate the duplicate threshold of the configured embedder on tests/data/dedup_pairs.jsonl.

    python -m tests.bench.calibrate_dedup [--margin 0.01]

Each labelled pair (paraphrase = duplicate; near-miss with a changed number, version, negation or
choice = not; unrelated = not; English, Korean and mixed) is decided twice at every threshold:
`embedding` is cosine >= threshold alone, `classify` is loregate's full duplicate decision
(`governance.dedup.classify`: cosine >= threshold and no material difference). The chosen threshold
is the one with the best F1 of `classify` among thresholds above the highest cosine of any unrelated
pair plus a margin (unrelated facts must never merge, whatever the wording; near-misses are the rules'
job, since their cosine overlaps the paraphrases'). A false merge loses knowledge, a missed merge only
leaves a related pair. Passage embeddings, as stored.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from governance.dedup import DecisionKind, Neighbour, classify, content_hash

__all__ = ["PAIRS_FILE", "Pair", "Metrics", "load_pairs", "similarities", "evaluate", "choose", "main"]

PAIRS_FILE = Path(__file__).resolve().parent.parent / "data" / "dedup_pairs.jsonl"
THRESHOLDS = [round(0.85 + 0.01 * i, 2) for i in range(14)]


@dataclass(frozen=True)
class Pair:
    """One labelled pair."""

    a: str
    b: str
    label: str
    duplicate: bool
    lang: str


@dataclass(frozen=True)
class Metrics:
    """Precision/recall/F1 of the duplicate decision at one threshold."""

    threshold: float
    precision: float
    recall: float
    f1: float
    false_merges: int
    unrelated_merges: int = 0


def load_pairs(path: Path = PAIRS_FILE) -> list[Pair]:
    """The labelled pairs."""
    with path.open(encoding="utf-8") as handle:
        return [Pair(**json.loads(line)) for line in handle if line.strip()]


def similarities(pairs: list[Pair], embedder: object) -> np.ndarray:
    """Cosine of each pair's passage embeddings (texts embedded once)."""
    texts = sorted({t for p in pairs for t in (p.a, p.b)})
    vectors = embedder.embed_passages(texts)  # type: ignore[attr-defined]
    index = {t: i for i, t in enumerate(texts)}
    return np.array([float(vectors[index[p.a]] @ vectors[index[p.b]]) for p in pairs])


def _is_duplicate(pair: Pair, sim: float, threshold: float, full: bool) -> bool:
    if not full:
        return sim >= threshold
    decision = classify(
        content=pair.a,
        content_hash=content_hash(pair.a),
        canonical_key=None,
        neighbours=[Neighbour("b", "s", None, content_hash(pair.b), sim, "", pair.b)],
        dup_threshold=threshold,
        related_threshold=threshold,
    )
    return decision.kind is DecisionKind.DUPLICATE


def evaluate(pairs: list[Pair], sims: np.ndarray, threshold: float, *, full: bool = True) -> Metrics:
    """Metrics of the decision at `threshold` (`full`: classify; else the bare cosine)."""
    predicted = [_is_duplicate(p, float(s), threshold, full) for p, s in zip(pairs, sims, strict=True)]
    tp = sum(1 for p, d in zip(pairs, predicted, strict=True) if d and p.duplicate)
    fp = sum(1 for p, d in zip(pairs, predicted, strict=True) if d and not p.duplicate)
    fn = sum(1 for p, d in zip(pairs, predicted, strict=True) if not d and p.duplicate)
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    unrelated = sum(1 for p, d in zip(pairs, predicted, strict=True) if d and p.label == "unrelated")
    return Metrics(threshold, precision, recall, f1, fp, unrelated)


def choose(table: list[Metrics], floor: float) -> Metrics:
    """Best F1 among thresholds >= `floor` that merge no unrelated pair (ties: the higher threshold)."""
    eligible = [m for m in table if m.threshold >= floor - 1e-9 and m.unrelated_merges == 0] or table
    return max(eligible, key=lambda m: (round(m.f1, 6), m.threshold))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--margin", type=float, default=0.01, help="above the highest unrelated cosine")
    args = parser.parse_args()

    from governance.adapters.embedders import make_embedder
    from governance.config import Settings

    embedder = make_embedder(Settings())
    pairs = load_pairs()
    sims = similarities(pairs, embedder)
    by_label = {
        label: sims[[p.label == label for p in pairs]] for label in ("paraphrase", "near_miss", "unrelated")
    }
    print(f"embedder: {embedder.name}; {len(pairs)} pairs")
    for label, values in by_label.items():
        print(
            f"  cosine {label:10s} n={len(values):3d} min={values.min():.3f} median={np.median(values):.3f} "
            f"max={values.max():.3f}"
        )
    print("\n| threshold | cosine only P | R | F1 | classify P | R | F1 | false merges (of them unrelated) |")
    print("|---|---|---|---|---|---|---|---|")
    table = []
    for t in THRESHOLDS:
        bare = evaluate(pairs, sims, t, full=False)
        full = evaluate(pairs, sims, t)
        table.append(full)
        print(
            f"| {t:.2f} | {bare.precision:.3f} | {bare.recall:.3f} | {bare.f1:.3f} | {full.precision:.3f} | "
            f"{full.recall:.3f} | {full.f1:.3f} | {full.false_merges} ({full.unrelated_merges}) |"
        )
    best = choose(table, float(by_label["unrelated"].max()) + args.margin)
    print(
        f"\nchosen threshold: {best.threshold:.2f} (classify precision {best.precision:.3f}, "
        f"recall {best.recall:.3f}, F1 {best.f1:.3f})"
    )
    for lang in ("en", "ko", "mixed"):
        sub = [i for i, p in enumerate(pairs) if p.lang == lang]
        m = evaluate([pairs[i] for i in sub], sims[sub], best.threshold)
        print(f"  {lang:5s} n={len(sub):3d} precision {m.precision:.3f} recall {m.recall:.3f} F1 {m.f1:.3f}")


if __name__ == "__main__":
    main()
