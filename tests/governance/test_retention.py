"""Pruning rules: stale episodes and failing skills go, the most recent per task always stay."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from governance.retention import RetentionPolicy, RetentionRow, select_for_pruning

NOW = datetime(2026, 6, 1, tzinfo=UTC)
POLICY = RetentionPolicy()


def ep(id: str, days_old: int, reward: float | None = 0.9, task: str = "t") -> RetentionRow:
    return RetentionRow(id, "episode", task, NOW - timedelta(days=days_old), reward, None)


def test_old_episodes_pruned_beyond_the_newest_five() -> None:
    rows = [ep(f"e{i}", 100 + i) for i in range(8)]
    chosen = select_for_pruning(rows, POLICY, NOW)
    assert {c.id for c in chosen} == {"e5", "e6", "e7"}
    assert all("older than 90 days" in c.reason for c in chosen)


def test_low_reward_episode_pruned_when_not_among_newest() -> None:
    rows = [ep(f"new{i}", i) for i in range(5)] + [ep("weak", 10, reward=0.1), ep("good", 11, reward=0.5)]
    chosen = select_for_pruning(rows, POLICY, NOW)
    assert [c.id for c in chosen] == ["weak"] and "reward 0.10 below 0.30" in chosen[0].reason


def test_failing_skill_pruned_and_episodes_counted_separately() -> None:
    skills = [RetentionRow(f"s{i}", "skill", "t", NOW - timedelta(days=i), None, 0.9) for i in range(5)]
    bad = RetentionRow("bad", "skill", "t", NOW - timedelta(days=30), None, 0.2)
    chosen = select_for_pruning([*skills, bad, ep("e", 1)], POLICY, NOW)
    assert [c.id for c in chosen] == ["bad"]


def test_small_task_keeps_everything() -> None:
    rows = [ep(f"e{i}", 400, reward=0.0) for i in range(5)]
    assert select_for_pruning(rows, POLICY, NOW) == []


rows_strategy = st.lists(
    st.builds(
        RetentionRow,
        id=st.uuids().map(str),
        memory_type=st.sampled_from(["episode", "skill"]),
        task_id=st.sampled_from(["a", "b", "c"]),
        created_at=st.integers(0, 200).map(lambda d: NOW - timedelta(days=d)),
        reward=st.none() | st.floats(0, 1),
        success_rate=st.none() | st.floats(0, 1),
    ),
    max_size=40,
    unique_by=lambda r: r.id,
)


@given(rows_strategy, st.integers(0, 8))
def test_always_keeps_the_most_recent_per_task_and_type(rows: list[RetentionRow], keep: int) -> None:
    policy = RetentionPolicy(keep_per_task=keep)
    pruned = {c.id for c in select_for_pruning(rows, policy, NOW)}
    for task in "abc":
        for kind in ("episode", "skill"):
            group = [r for r in rows if r.task_id == task and r.memory_type == kind]
            kept = [r for r in group if r.id not in pruned]
            assert len(kept) >= min(keep, len(group))
            newest = sorted(group, key=lambda r: (r.created_at, r.id), reverse=True)[:keep]
            assert not pruned & {r.id for r in newest}
