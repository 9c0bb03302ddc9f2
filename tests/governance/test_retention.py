"""Pruning rules: judged per (org, project, scope, type) group, at least N active staying in each."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from governance.retention import (
    PruneChoice,
    PruneRule,
    RetentionPolicy,
    RetentionRow,
    recheck,
    select_for_pruning,
    skill_success_rate,
)

NOW = datetime(2026, 6, 1, tzinfo=UTC)
POLICY = RetentionPolicy()


def row(id: str, memory_type: str = "episode", days_old: int = 1, **fields: Any) -> RetentionRow:
    base = RetentionRow(
        id, memory_type, "acme", "api", "worktree", NOW - timedelta(days=days_old), reward=0.9
    )
    return replace(base, **fields)


def fresh(n: int, memory_type: str = "episode") -> list[RetentionRow]:
    return [row(f"fresh{i}", memory_type, i) for i in range(n)]


def rules(rows: list[RetentionRow], policy: RetentionPolicy = POLICY) -> dict[str, str]:
    return {c.id: c.rule for c in select_for_pruning(rows, policy, NOW).chosen}


def test_episodes_of_many_tasks_share_one_group() -> None:
    # one episode per task (what promotions create): the old per-task grouping never pruned any of them
    rows = [row(f"e{i}", days_old=100 + i, source_tasks=1) for i in range(8)]
    assert rules(rows) == {"e5": "episode_age", "e6": "episode_age", "e7": "episode_age"}


def test_groups_differ_by_scope_project_and_type() -> None:
    old = [row(f"w{i}", days_old=200) for i in range(3)]
    other_scope = [replace(r, id=f"t{i}", scope="task") for i, r in enumerate(old)]
    other_project = [replace(r, id=f"p{i}", project="web") for i, r in enumerate(old)]
    assert rules(old + other_scope + other_project, RetentionPolicy(keep_per_group=2)) == {
        "w0": "episode_age",
        "t0": "episode_age",
        "p0": "episode_age",
    }


def test_low_reward_episode_pruned_even_when_newest() -> None:
    rows = [*fresh(5), row("weak", days_old=0, reward=0.1)]
    chosen = select_for_pruning(rows, POLICY, NOW).chosen
    assert [(c.id, c.rule) for c in chosen] == [("weak", "episode_reward")]
    assert "reward 0.10 below 0.30" in chosen[0].reason


def test_keep_at_least_n_spares_the_newest_candidates() -> None:
    rows = [row(f"old{i}", days_old=100 + i) for i in range(4)] + fresh(2)
    selection = select_for_pruning(rows, POLICY, NOW)
    # 6 active, 5 must stay: only the oldest candidate goes, three are spared
    assert [c.id for c in selection.chosen] == ["old3"] and selection.spared == 3


def test_distilled_episode_is_a_candidate_before_max_age() -> None:
    distilled = row("d", days_old=2, derived_types=frozenset({"insight"}))
    assert rules([distilled, *fresh(5)]) == {"d": "distilled_episode"}


def test_episode_other_memories_build_on_is_kept() -> None:
    source = row("s", days_old=400, reward=0.0, derived_types=frozenset({"insight", "skill"}))
    assert rules([source, *fresh(5)]) == {}


def test_skill_success_rate_counts_votes_and_successful_tasks() -> None:
    skill = row("s", "skill", votes=2, helpful_votes=0, success=True, source_tasks=1)
    assert skill_success_rate(skill) == 1 / 3
    assert skill_success_rate(replace(skill, votes=0)) is None  # no feedback: not judged
    assert skill_success_rate(replace(skill, success=None)) == 0.0
    # merged from four successful tasks: two bad votes are outweighed
    assert skill_success_rate(replace(skill, source_tasks=4)) == 4 / 6


def test_failing_skill_pruned_and_unvoted_one_kept() -> None:
    bad = row("bad", "skill", 30, votes=3, helpful_votes=0, usefulness=0.18, success=True)
    unvoted = row("unvoted", "skill", 300, usefulness=0.5, success=True)
    chosen = select_for_pruning([bad, unvoted, *fresh(5, "skill")], POLICY, NOW).chosen
    assert [(c.id, c.rule) for c in chosen] == [("bad", "skill_success_rate")]
    assert "0 of 3 votes helpful" in chosen[0].reason


def test_retrieved_and_judged_useless_goes_even_as_a_source() -> None:
    fact = row("f", "fact", retrieval_count=7, votes=2, usefulness=0.27, derived_types=frozenset({"skill"}))
    assert rules([fact, *fresh(5, "fact")]) == {"f": "useless"}
    # retrieved too rarely, or only one vote against it (usefulness 0.35): kept
    assert rules([replace(fact, retrieval_count=4), *fresh(5, "fact")]) == {}
    assert rules([replace(fact, usefulness=0.35, votes=1), *fresh(5, "fact")]) == {}


def test_votes_never_prune_a_human_approved_memory() -> None:
    approved = row(
        "h", "fact", retrieval_count=6, votes=2, usefulness=0.27, human_approved=True
    )  # two agents' helpful: false on a human-approved fact
    assert rules([approved, *fresh(5, "fact")]) == {}
    assert rules([replace(approved, human_approved=False), *fresh(5, "fact")]) == {"h": "useless"}
    skill = row("s", "skill", votes=4, helpful_votes=0, success=False, human_approved=True)
    assert rules([skill, *fresh(5, "skill")]) == {}
    assert rules([replace(skill, human_approved=False), *fresh(5, "skill")]) == {"s": "skill_success_rate"}


def test_retrieved_and_judged_useful_is_protected_from_every_rule() -> None:
    useful = dict(retrieval_count=1, usefulness=0.65, votes=1, helpful_votes=1)
    old = row("old", days_old=400, reward=0.0, **useful)
    distilled = row("d", derived_types=frozenset({"insight"}), **useful)
    assert rules([old, distilled, *fresh(5)]) == {}
    # judged useful but never retrieved: the rules apply
    assert rules([replace(old, retrieval_count=0), *fresh(5)]) == {"old": "episode_age"}


def test_open_change_request_protects() -> None:
    assert rules([row("cr", days_old=400, open_change_request=True), *fresh(5)]) == {}


def test_inactive_rows_go_after_their_age_and_do_not_count_towards_n() -> None:
    gone = row("gone", "fact", inactive_since=NOW - timedelta(days=400), derived_types=frozenset({"skill"}))
    recent = row("recent", "fact", inactive_since=NOW - timedelta(days=100))
    active = row("active", "fact")
    assert rules([gone, recent, active]) == {"gone": "inactive_age"}
    assert rules([gone, recent, active], RetentionPolicy(max_inactive_age_days=0)) == {}


def test_keep_per_task_is_read_as_keep_per_group() -> None:
    policy = RetentionPolicy(keep_per_task=2)
    assert policy.keep_per_group == 2 and policy.keep_per_task is None
    rows = [row(f"e{i}", days_old=100 + i) for i in range(4)]
    assert set(rules(rows, policy)) == {"e2", "e3"}


def test_small_group_keeps_everything() -> None:
    rows = [row(f"e{i}", days_old=400, reward=0.0) for i in range(5)]
    assert rules(rows) == {}


def test_every_chosen_rule_is_a_known_rule() -> None:
    assert {r.value for r in PruneRule} >= set(
        rules([row("a", days_old=400), row("b", reward=0.0), *fresh(5)]).values()
    )


rows_strategy = st.lists(
    st.builds(
        RetentionRow,
        id=st.uuids().map(str),
        memory_type=st.sampled_from(["episode", "skill", "fact"]),
        org=st.just("acme"),
        project=st.sampled_from(["api", "web"]),
        scope=st.sampled_from(["task", "worktree", "project"]),
        created_at=st.integers(0, 200).map(lambda d: NOW - timedelta(days=d)),
        reward=st.none() | st.floats(0, 1),
        success=st.none() | st.booleans(),
        inactive_since=st.none() | st.integers(0, 500).map(lambda d: NOW - timedelta(days=d)),
        retrieval_count=st.integers(0, 10),
        usefulness=st.floats(0, 1),
        votes=st.integers(0, 3),
        helpful_votes=st.integers(0, 3),
        derived_types=st.sampled_from([frozenset(), frozenset({"insight"}), frozenset({"skill"})]),
    ),
    max_size=40,
    unique_by=lambda r: r.id,
)


@given(rows_strategy, st.integers(0, 8))
def test_always_keeps_at_least_n_active_per_group(rows: list[RetentionRow], keep: int) -> None:
    policy = RetentionPolicy(keep_per_group=keep)
    pruned = {c.id for c in select_for_pruning(rows, policy, NOW).chosen}
    groups = {r.group for r in rows}
    for group in groups:
        active = [r for r in rows if r.group == group and r.inactive_since is None]
        kept = [r for r in active if r.id not in pruned]
        assert len(kept) >= min(keep, len(active))
    for r in rows:
        if r.id in pruned and r.inactive_since is None:
            assert not (r.retrieval_count >= 1 and r.usefulness >= policy.useful_from)


def _active_counts(rows: list[RetentionRow]) -> dict[tuple[str, str, str, str], int]:
    counts: dict[tuple[str, str, str, str], int] = {}
    for r in rows:
        if r.inactive_since is None:
            counts[r.group] = counts.get(r.group, 0) + 1
    return counts


@given(rows_strategy, st.integers(0, 8), st.integers(1, 7))
def test_run_in_batches_deletes_what_the_dry_run_chose(
    rows: list[RetentionRow], keep: int, size: int
) -> None:
    policy = RetentionPolicy(keep_per_group=keep)
    planned = select_for_pruning(rows, policy, NOW).chosen
    group_of = {r.id: r.group for r in rows}
    ordered = sorted(planned, key=lambda c: (group_of[c.id], c.id))
    left = list(rows)
    deleted: list[PruneChoice] = []
    for start in range(0, len(ordered), size):
        batch = ordered[start : start + size]
        ids = {c.id for c in batch}
        done = recheck(batch, [r for r in left if r.id in ids], _active_counts(left), policy, NOW)
        gone = {c.id for c in done}
        left = [r for r in left if r.id not in gone]
        deleted += done
    assert sorted(deleted, key=lambda c: c.id) == planned


def test_recheck_spares_what_changed_since_the_dry_run() -> None:
    rows = [row(f"old{i}", days_old=100 + i) for i in range(3)] + fresh(2)
    policy = RetentionPolicy(keep_per_group=2)
    planned = select_for_pruning(rows, policy, NOW).chosen
    assert {c.id for c in planned} == {"old0", "old1", "old2"}
    # meanwhile old2 was found useful, and two others of the group were retired (3 active): one may go,
    # the oldest of those still chosen
    now_rows = [replace(r, retrieval_count=1, usefulness=0.65) if r.id == "old2" else r for r in rows]
    active = _active_counts(rows)
    active[rows[0].group] -= 2
    assert [c.id for c in recheck(planned, now_rows, active, policy, NOW)] == ["old1"]
    # gone meanwhile (erased): nothing to do
    assert recheck(planned, [], active, policy, NOW) == []
