"""The labelled dedup set, and the default threshold's precision documented in docs/dedup-calibration.md."""

from __future__ import annotations

from collections import Counter

import pytest

from governance.adapters.embedders import make_embedder
from governance.config import Settings
from tests.bench.calibrate_dedup import evaluate, load_pairs, similarities


def test_labelled_set_has_200_pairs_across_languages_and_kinds() -> None:
    pairs = load_pairs()
    assert len(pairs) >= 200
    kinds = Counter((p.lang, p.label) for p in pairs)
    for lang in ("en", "ko", "mixed"):
        for label in ("paraphrase", "near_miss", "unrelated"):
            assert kinds[(lang, label)] > 0
    assert all(p.duplicate == (p.label == "paraphrase") for p in pairs)


def test_default_threshold_reaches_documented_precision() -> None:
    pairs = load_pairs()
    sims = similarities(pairs, make_embedder(Settings()))
    metrics = evaluate(pairs, sims, Settings().dedup_similarity_threshold)
    # docs/dedup-calibration.md: precision 1.000, recall 0.787 (F1 0.881) at 0.92; no unrelated pair merges
    assert metrics.precision >= 0.99 and metrics.recall >= 0.78 and metrics.f1 >= 0.85
    assert metrics.unrelated_merges == 0
    assert metrics.precision > evaluate(pairs, sims, 0.92, full=False).precision + 0.3
    assert pytest.approx(metrics.threshold) == 0.92
