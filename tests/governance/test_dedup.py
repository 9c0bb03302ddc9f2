"""The dedup decision: hash, canonical key, similarity, judge, in that order."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from governance.dedup import DecisionKind, Neighbour, classify, content_hash

T = "task:t1"
P = "project:acme/api"


def n(id: str, content: str, sim: float, *, key: str | None = None, scope: str = T) -> Neighbour:
    return Neighbour(id, scope, key, content_hash(content), sim, content[:20], content)


def decide(content: str, neighbours: list[Neighbour], *, key: str | None = None, scope: str | None = T):
    return classify(
        content=content,
        content_hash=content_hash(content),
        canonical_key=key,
        neighbours=neighbours,
        dup_threshold=0.92,
        related_threshold=0.85,
        scope_key=scope,
    )


def test_content_hash_ignores_case_and_whitespace() -> None:
    assert content_hash("Use  Ruff\nfor linting") == content_hash("use ruff for linting")
    assert content_hash("use ruff") != content_hash("use black")


@given(st.text(), st.sampled_from(["upper", "spaces"]))
def test_content_hash_stable_under_normalisation(text: str, how: str) -> None:
    variant = text.upper() if how == "upper" else "  " + text.replace(" ", "   ") + " \n"
    if how == "upper" and text.upper().casefold() != text.casefold():
        return  # a few scripts change under upper-casing (e.g. ß); not the same text
    assert content_hash(variant) == content_hash(text)


def test_exact_hash_is_duplicate() -> None:
    d = decide("Use ruff for linting.", [n("a", "use ruff for linting.", 0.2)])
    assert d.kind is DecisionKind.DUPLICATE and d.target_id == "a"


def test_same_canonical_key_other_content_supersedes() -> None:
    d = decide("driver is asyncpg", [n("a", "driver is psycopg", 0.7, key="db.driver")], key="db.driver")
    assert d.kind is DecisionKind.SUPERSEDE and d.target_id == "a"


def test_canonical_head_in_wider_scope_is_not_superseded() -> None:
    d = decide(
        "driver is asyncpg", [n("a", "driver is psycopg", 0.7, key="db.driver", scope=P)], key="db.driver"
    )
    assert d.kind is DecisionKind.NEW


def test_same_scope_head_wins_over_wider_exact_copy() -> None:
    # org says psycopg; the project overrode it with asyncpg; the project now says psycopg again
    d = decide(
        "driver is psycopg",
        [
            n("org", "driver is psycopg", 1.0, key="db.driver", scope=P),
            n("head", "driver is asyncpg", 0.8, key="db.driver"),
        ],
        key="db.driver",
    )
    assert d.kind is DecisionKind.SUPERSEDE and d.target_id == "head"


def test_high_similarity_is_duplicate() -> None:
    d = decide("Run pytest before pushing", [n("a", "Always run pytest prior to a push", 0.95)])
    assert d.kind is DecisionKind.DUPLICATE and d.target_id == "a"


def test_high_similarity_with_changed_number_is_not_duplicate() -> None:
    d = decide("The API timeout is 60 seconds.", [n("a", "The API timeout is 30 seconds.", 0.97)])
    assert d.kind is DecisionKind.SUPERSEDE and d.target_id == "a"


def test_different_canonical_keys_never_merge() -> None:
    d = decide("pool size 10", [n("a", "pool size 10 connections", 0.99, key="db.pool")], key="cache.pool")
    assert d.kind is DecisionKind.NEW


def test_related_neighbours_linked_on_new() -> None:
    d = decide("Use ruff", [n("a", "Use black", 0.88), n("b", "Use mypy", 0.86), n("c", "Deploy", 0.3)])
    assert d.kind is DecisionKind.NEW and set(d.related_ids) == {"a", "b"}


class _AlwaysContradicts:
    def judge(self, *, new: str, old: str, similarity: float):
        from governance.supersession import Verdict

        return Verdict(True, "judge says so")


def test_judge_consulted_only_above_related_threshold() -> None:
    neighbours = [n("a", "x one", 0.80), n("b", "x two", 0.87)]
    d = classify(
        content="x three",
        content_hash=content_hash("x three"),
        canonical_key=None,
        neighbours=neighbours,
        dup_threshold=0.92,
        related_threshold=0.85,
        judge=_AlwaysContradicts(),
    )
    assert d.kind is DecisionKind.SUPERSEDE and d.target_id == "b" and d.reason == "judge says so"


@given(st.lists(st.floats(0, 1), max_size=8), st.floats(0.5, 1.0))
def test_similarity_duplicate_only_at_or_above_threshold(sims: list[float], threshold: float) -> None:
    neighbours = [n(f"id{i}", f"memory number {chr(97 + i)}", s) for i, s in enumerate(sims)]
    d = classify(
        content="something else entirely",
        content_hash=content_hash("something else entirely"),
        canonical_key=None,
        neighbours=neighbours,
        dup_threshold=threshold,
        related_threshold=threshold,
    )
    # the threshold is a floor: nothing below it merges; above it the duplicate model decides
    # (docs/dedup-calibration.md)
    if d.kind is DecisionKind.DUPLICATE:
        assert d.similarity is not None and d.similarity >= threshold
    elif d.kind is DecisionKind.NEW:
        assert set(d.related_ids) == {f"id{i}" for i, s in enumerate(sims) if s >= threshold}


def _decide_episode(content: str, neighbours: list[Neighbour]):
    return classify(
        content=content,
        content_hash=content_hash(content),
        canonical_key=None,
        neighbours=neighbours,
        dup_threshold=0.92,
        related_threshold=0.85,
        judge=_AlwaysContradicts(),
        scope_key=P,
        memory_type="episode",
    )


def _episode(id: str, content: str, sim: float) -> Neighbour:
    return Neighbour(id, P, None, content_hash(content), sim, content[:20], content, memory_type="episode")


def test_episode_of_another_task_is_new_never_superseding_or_merged() -> None:
    earlier = _episode("a", "Task t-1: pick the db driver. Outcome: success", 0.99)
    d = _decide_episode("Task t-2: pick the db driver. Outcome: success", [earlier])
    assert d.kind is DecisionKind.NEW and d.related_ids == ("a",)


def test_episode_replayed_with_identical_content_is_duplicate() -> None:
    text = "Task t-1: pick the db driver. Outcome: success"
    d = _decide_episode(text, [_episode("a", text, 1.0)])
    assert d.kind is DecisionKind.DUPLICATE and d.target_id == "a"


def test_redacted_statements_of_other_subjects_stay_apart() -> None:
    """Removed values cannot be compared and the placeholders read as shared words: an approver's edit
    "the admin password is [REDACTED] …" merged into "Stripe secret key for payments is [REDACTED]"."""
    pairs = [
        ("db password is [REDACTED]", "smtp password is [REDACTED]", 0.962),
        (
            "the admin password is [REDACTED] keep it out of logs; token [REDACTED]",
            "Stripe secret key for payments is [REDACTED]",
            0.95,
        ),
        ("db.password: [REDACTED]", "db.password: [REDACTED] (rotated)", 0.988),
        ("The api token is [REDACTED]", "The api token is sk-live-1", 0.97),
    ]
    for a, b, cosine in pairs:
        assert decide(a, [n("m1", b, cosine)]).kind is DecisionKind.NEW, (a, b)


def test_redacted_statements_in_the_same_words_still_merge() -> None:
    decision = decide("The DB password is [REDACTED].", [n("m1", "the db password is [REDACTED]", 0.987)])
    assert decision.kind is DecisionKind.DUPLICATE and decision.target_id == "m1"
