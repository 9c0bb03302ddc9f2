"""governance/redaction against the evaluation corpus (tests/data/redaction_eval): held-out targets.

The corpus was written from vendors' documentation before the rules were changed, and split by family into
a tune half and a held-out half; tests/bench/redaction.py prints the tables. Here the default run holds the
figures: on the held-out half recall >= 0.99 and near-misses unchanged >= 0.97; on the tune half 1.0 and
1.0. The second and third corpora, written blind, follow. Run with `-s` to see them.
"""

from __future__ import annotations

from governance.redaction import redact
from tests.governance import redaction_eval

CORPUS = redaction_eval.load()


def _clean(text: str) -> str:
    return redact(text).text


def _report(name: str, result: redaction_eval.Score) -> None:
    print(
        f"redaction eval {name}: recall={result.recall:.3f} ({result.removed}/{result.secrets}) "
        f"near-misses unchanged={result.near_miss_precision:.3f} ({result.kept}/{result.near_misses})"
    )


def test_redaction_eval_corpus_is_split_by_family() -> None:
    tune = {s.family for s in CORPUS.secrets + CORPUS.near_misses if s.split == "tune"}
    held = {s.family for s in CORPUS.secrets + CORPUS.near_misses if s.split == "heldout"}
    assert not tune & held
    secrets, near = CORPUS.part("heldout")
    assert len(secrets) >= 60 and len(near) >= 20 and len({s.family for s in secrets}) >= 25


def test_redaction_eval_heldout_meets_targets() -> None:
    secrets, near = CORPUS.part("heldout")
    result = redaction_eval.score(_clean, secrets, near)
    _report("held-out", result)
    assert result.recall >= 0.99, [m[:2] for m in result.misses]
    assert result.near_miss_precision >= 0.97, [a[:2] for a in result.altered]


def test_redaction_eval_tune_half() -> None:
    secrets, near = CORPUS.part("tune")
    result = redaction_eval.score(_clean, secrets, near)
    _report("tune", result)
    assert result.recall == 1.0, [m[:2] for m in result.misses]
    # AWS's documented example keys (AKIAIOSFODNN7EXAMPLE) are near-misses here, and kept: a vendor's
    # published example grants nothing (catalogue.py)
    assert result.near_miss_precision == 1.0, [a[:2] for a in result.altered]


# The second corpus (tests/data/redaction_fresh), written blind: its tune half was tuned on, its held-out
# half measured once afterwards (0.968 / 0.906, docs/redaction.md); its held-out misses were then tuned on
# too, so both halves are held at what they reach now, against regressions.
FRESH = redaction_eval.load_fresh()


def test_redaction_fresh_corpus_is_split_by_family() -> None:
    tune = {s.family for s in FRESH.secrets + FRESH.near_misses if s.split == "tune"}
    held = {s.family for s in FRESH.secrets + FRESH.near_misses if s.split == "heldout"}
    assert not tune & held
    assert len(FRESH.secrets) >= 120 and len(FRESH.near_misses) >= 50
    assert len({s.family for s in FRESH.secrets}) >= 40


def test_redaction_fresh_tune_half() -> None:
    secrets, near = FRESH.part("tune")
    result = redaction_eval.score(_clean, secrets, near)
    _report("fresh tune", result)
    assert result.recall == 1.0, [m[:2] for m in result.misses]
    assert result.near_miss_precision == 1.0, [a[:2] for a in result.altered]


def test_redaction_fresh_heldout_does_not_regress() -> None:
    secrets, near = FRESH.part("heldout")
    result = redaction_eval.score(_clean, secrets, near)
    _report("fresh held-out", result)
    assert result.recall == 1.0, [m[:2] for m in result.misses]
    assert result.near_miss_precision == 1.0, [a[:2] for a in result.altered]


# The third corpus (tests/data/redaction_third), written blind from vendors' documentation: tuned on its tune
# half first; its held-out half was printed three times as aggregate figures (0.976 / 0.977 at the last,
# docs/redaction.md), then burned and tuned on too once the fourth corpus was written. Both halves are held at
# what they reach now (127 of 127, 43 of 43), against regressions.
THIRD = redaction_eval.load_third()


def test_redaction_third_corpus_is_split_by_family() -> None:
    tune = {s.family for s in THIRD.secrets + THIRD.near_misses if s.split == "tune"}
    held = {s.family for s in THIRD.secrets + THIRD.near_misses if s.split == "heldout"}
    assert not tune & held
    assert len(THIRD.secrets) == 244 and len(THIRD.near_misses) == 81


def test_redaction_third_tune_half() -> None:
    secrets, near = THIRD.part("tune")
    result = redaction_eval.score(_clean, secrets, near)
    _report("third tune", result)
    assert result.recall == 1.0, [m[:2] for m in result.misses]
    assert result.near_miss_precision == 1.0, [a[:2] for a in result.altered]


def test_redaction_third_heldout_does_not_regress() -> None:
    secrets, near = THIRD.part("heldout")
    result = redaction_eval.score(_clean, secrets, near)
    _report("third held-out", result)
    # the held-out samples are not printed: a failure names counts only
    assert result.removed >= 127, (result.removed, result.secrets)
    assert result.kept >= 43, (result.kept, result.near_misses)


# The fourth corpus (tests/data/redaction_fourth), written blind from vendors' documentation and gitleaks'
# rule list: tuned on its tune half and on the three older corpora only; its held-out half was printed three
# times in all, as aggregate figures (0.882 / 1.000 before any rule change, 0.978 / 1.000 after the first
# round, 0.993 / 1.000 at the last, docs/redaction.md). The held-out floors are that last print, held against
# regressions: recall 135 of 136 and near-misses unchanged 36 of 36 both meet the targets.
FOURTH = redaction_eval.load_fourth()


def test_redaction_fourth_corpus_is_split_by_family() -> None:
    tune = {s.family for s in FOURTH.secrets + FOURTH.near_misses if s.split == "tune"}
    held = {s.family for s in FOURTH.secrets + FOURTH.near_misses if s.split == "heldout"}
    assert not tune & held
    assert len(FOURTH.secrets) == 273 and len(FOURTH.near_misses) == 71


def test_redaction_fourth_tune_half() -> None:
    secrets, near = FOURTH.part("tune")
    result = redaction_eval.score(_clean, secrets, near)
    _report("fourth tune", result)
    assert result.recall == 1.0, [m[:2] for m in result.misses]
    assert result.near_miss_precision == 1.0, [a[:2] for a in result.altered]


def test_redaction_fourth_heldout_does_not_regress() -> None:
    secrets, near = FOURTH.part("heldout")
    result = redaction_eval.score(_clean, secrets, near)
    # the held-out samples are neither printed nor reported: a failure names counts only
    assert result.removed >= 135, (result.removed, result.secrets)
    assert result.kept >= 36, (result.kept, result.near_misses)
