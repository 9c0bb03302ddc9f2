"""Approach fingerprints and the refusal decision of circular-fix detection."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from governance.approaches import PastApproach, approach_fingerprint, check_approach, normalise_approach

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def past(text: str, *, similarity: float | None = None, failures: int = 1, at: int = 0) -> PastApproach:
    return PastApproach(
        text,
        approach_fingerprint(text),
        failures,
        failures,
        "failed",
        ("timeout",) * failures,
        T0 + timedelta(minutes=at),
        similarity,
    )


def test_fingerprint_ignores_case_punctuation_and_filler() -> None:
    assert approach_fingerprint("Let's try increasing the pool size again!") == approach_fingerprint(
        "increasing pool size"
    )


def test_fingerprint_keeps_word_order() -> None:
    assert approach_fingerprint("replace redis with memcached") != approach_fingerprint(
        "replace memcached with redis"
    )


def test_fingerprint_drops_korean_particles_and_filler() -> None:
    assert normalise_approach("캐시를 다시 비활성화") == normalise_approach("캐시 비활성화")


@given(st.text(alphabet=st.characters(categories=["Ll", "Lu", "Nd", "Zs", "Po"]), max_size=60))
def test_fingerprint_invariant_under_case_and_punctuation(text: str) -> None:
    assert (
        approach_fingerprint(text) == approach_fingerprint(text.upper() + "!!")
        or text.upper().lower() != text.lower()
    )


def test_same_fingerprint_refused_with_history() -> None:
    history = [past("increase pool size", at=1), past("add an index", at=0)]
    check = check_approach(
        fingerprint=approach_fingerprint("Increase the pool size."), failed=history, similarity_threshold=0.93
    )
    assert not check.valid and check.matched is not None and check.matched.approach == "increase pool size"
    assert [p.approach for p in check.history] == ["add an index", "increase pool size"]
    assert check.suggestion and "different approach" in check.suggestion


def test_near_duplicate_by_similarity_refused() -> None:
    check = check_approach(
        fingerprint=approach_fingerprint("bump the pool"),
        failed=[past("increase pool size", similarity=0.95)],
        similarity_threshold=0.93,
    )
    assert not check.valid and "near-duplicate" in check.reason


def test_different_approach_passes() -> None:
    check = check_approach(
        fingerprint=approach_fingerprint("add an index"),
        failed=[past("increase pool size", similarity=0.88)],
        similarity_threshold=0.93,
    )
    assert check.valid and check.suggestion is None and len(check.history) == 1


def test_stuck_suggests_human_help() -> None:
    check = check_approach(
        fingerprint=approach_fingerprint("increase pool size"),
        failed=[past("increase pool size")],
        similarity_threshold=0.93,
        stuck=True,
    )
    assert not check.valid and check.suggestion and "human" in check.suggestion
