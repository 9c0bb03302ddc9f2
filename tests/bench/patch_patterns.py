"""Precision and recall of patch-pattern detection on real patches nobody here wrote (outside the pytest run).

    python tests/bench/patch_patterns.py

Data: tests/data/patch_patterns/httpx_patches.jsonl (built by tests/bench/patch_corpus.py): httpx commits
recovered as unified diffs, each with the categories its commit message names (`expected`, written before
the rules) and its split (`tune`, `heldout`). Per category and split: precision = detected and expected /
detected, recall = detected and expected / expected. A message leaves most of what a patch does unsaid, so
precision here is a lower bound; the baseline in the same run is a detector that proposes a category for
every patch (its precision is the category's share of patches, its recall 1).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from governance.patch_patterns import CATEGORIES, propose  # noqa: E402

CORPUS = ROOT / "tests" / "data" / "patch_patterns" / "httpx_patches.jsonl"


@dataclass(frozen=True)
class Score:
    """One category on one split: counts, precision and recall (None where nothing to divide by)."""

    category: str
    expected: int
    detected: int
    hits: int

    @property
    def precision(self) -> float | None:
        return self.hits / self.detected if self.detected else None

    @property
    def recall(self) -> float | None:
        return self.hits / self.expected if self.expected else None


def load() -> list[dict[str, object]]:
    """The corpus records."""
    return [json.loads(line) for line in CORPUS.read_text().splitlines() if line.strip()]


def scores(records: list[dict[str, object]], split: str) -> list[Score]:
    """Per category, the detections of `propose` against the messages' expectations on one split."""
    part = [r for r in records if r["split"] == split]
    found = [{p.category for p in propose(str(r["diff"]))} for r in part]
    out = []
    for category in CATEGORIES:
        expected = [category in r["expected"] for r in part]  # type: ignore[operator]
        detected = [category in f for f in found]
        out.append(
            Score(
                category,
                sum(expected),
                sum(detected),
                sum(e and d for e, d in zip(expected, detected, strict=True)),
            )
        )
    return out


def _fmt(value: float | None) -> str:
    return "  -  " if value is None else f"{value:.2f}"


def main() -> None:
    records = load()
    for split in ("tune", "heldout"):
        n = sum(1 for r in records if r["split"] == split)
        print(f"\n{split}: {n} patches")
        print(f"{'category':18} {'expected':>8} {'detected':>8} {'hits':>5} {'P':>5} {'R':>5} {'base P':>7}")
        for s in scores(records, split):
            base = s.expected / n if n else None
            print(
                f"{s.category:18} {s.expected:8} {s.detected:8} {s.hits:5} "
                f"{_fmt(s.precision):>5} {_fmt(s.recall):>5} {_fmt(base):>7}"
            )
        total = scores(records, split)
        hits = sum(s.hits for s in total)
        detected = sum(s.detected for s in total)
        expected = sum(s.expected for s in total)
        precision = _fmt(hits / detected if detected else None)
        recall = _fmt(hits / expected if expected else None)
        print(f"{'all (micro)':18} {expected:8} {detected:8} {hits:5} {precision:>5} {recall:>5}")


if __name__ == "__main__":
    main()
