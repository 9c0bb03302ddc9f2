"""The pure limit rules: token buckets (clock passed in), staging quota refusals, the fair gate's turns."""

from __future__ import annotations

import threading
import time

from governance.limits import (
    BucketRule,
    FairGate,
    Limiter,
    StagingQuota,
    StagingUsage,
    retry_after_header,
    seconds_to_utc_midnight,
    task_quota_refusal,
    tenant_quota_refusal,
)

RULE = BucketRule(rate=2.0, burst=3.0)


def test_bucket_admits_its_burst_then_says_how_long_to_wait() -> None:
    limiter = Limiter()
    admitted = [limiter.admit([("k", RULE)], now=10.0) for _ in range(3)]
    wait, refusing = limiter.admit([("k", RULE)], now=10.0)
    assert admitted == [(0.0, None)] * 3
    assert (wait, refusing) == (0.5, "k")  # one token at 2 a second
    assert limiter.admit([("k", RULE)], now=10.5) == (0.0, None)


def test_refusal_takes_from_no_bucket() -> None:
    limiter = Limiter()
    wide, narrow = BucketRule(1.0, 10.0), BucketRule(1.0, 1.0)
    assert limiter.admit([("wide", wide), ("narrow", narrow)], now=0.0) == (0.0, None)
    assert limiter.admit([("wide", wide), ("narrow", narrow)], now=0.0)[1] == "narrow"
    # the refusal left the wide bucket's 9 tokens alone
    assert [limiter.admit([("wide", wide)], now=0.0)[0] for _ in range(9)] == [0.0] * 9


def test_rate_zero_turns_a_bucket_off() -> None:
    limiter = Limiter()
    off = BucketRule(0.0, 1.0)
    assert all(limiter.admit([("k", off)], now=0.0) == (0.0, None) for _ in range(100))


def test_limiter_forgets_least_recently_used_buckets_past_its_bound() -> None:
    limiter = Limiter(max_buckets=2)
    for name in ("a", "b", "c"):
        limiter.admit([(name, RULE)], now=0.0)
    assert len(limiter) == 2


def test_retry_after_is_whole_seconds_at_least_one() -> None:
    assert [retry_after_header(w) for w in (0.01, 1.0, 1.2, 59.9)] == ["1", "1", "2", "60"]
    assert seconds_to_utc_midnight(86400.0 * 3 + 3600.0) == 82800.0


def test_task_quota_refuses_entries_then_bytes_naming_the_setting() -> None:
    quota = StagingQuota(task_entries=10, task_bytes=1000)
    assert task_quota_refusal(quota, "t", StagingUsage(8, 0), 2, 10) is None
    assert task_quota_refusal(quota, "t", StagingUsage(9, 0), 2, 10)[0] == "task_entries"  # type: ignore[index]
    refusal = task_quota_refusal(quota, "t", StagingUsage(1, 900), 1, 101)
    assert refusal is not None and "LOREGATE_STAGING_MAX_TASK_BYTES" in refusal[1]


def test_tenant_quota_zero_means_no_quota() -> None:
    quota = StagingQuota(tenant_entries_per_day=0, tenant_bytes_per_day=100)
    assert tenant_quota_refusal(quota, "o", StagingUsage(10**9, 0), 5, 100) is None
    assert tenant_quota_refusal(quota, "o", StagingUsage(0, 1), 1, 100) is not None


def test_fair_gate_lets_a_quiet_tenant_in_before_a_flood_queued_earlier() -> None:
    gate = FairGate(capacity=1)
    order: list[str] = []
    gate.acquire("holder")  # the engine is busy

    def waiter(tenant: str) -> None:
        gate.acquire(tenant)
        order.append(tenant)
        gate.release()

    flood = [threading.Thread(target=waiter, args=("flood",)) for _ in range(4)]
    for thread in flood:
        thread.start()
    time.sleep(0.1)  # the flood queued first
    quiet = threading.Thread(target=waiter, args=("quiet",))
    quiet.start()
    time.sleep(0.1)
    gate.release()
    for thread in [*flood, quiet]:
        thread.join(timeout=5)
    # one flood query may go first (never served yet, like quiet); quiet never waits for the whole flood
    assert order.index("quiet") <= 1 and len(order) == 5


def test_fair_gate_alone_until_another_tenant_was_served_lately() -> None:
    now = [100.0]
    gate = FairGate(capacity=1, clock=lambda: now[0])
    assert gate.alone("plan")
    gate.acquire("plan")
    gate.release()
    assert gate.alone("plan")  # its own turns do not count
    gate.acquire("small")
    gate.release()
    assert not gate.alone("plan")  # another promotion embedded a moment ago
    assert not gate.alone("small")
    now[0] += FairGate.RECENT_SECONDS + 0.1
    assert gate.alone("plan") and gate.alone("small")  # long enough ago: gone


def test_fair_gate_not_alone_while_another_tenant_waits() -> None:
    gate = FairGate(capacity=1)
    gate.acquire("plan")
    waiter = threading.Thread(target=lambda: (gate.acquire("small"), gate.release()))
    waiter.start()
    time.sleep(0.1)
    assert not gate.alone("plan")  # waiting, not yet served
    gate.release()
    waiter.join(timeout=5)
    assert not gate.alone("plan")  # and now served lately
