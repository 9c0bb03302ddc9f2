"""Rate limits: token buckets per principal and per tenant, pure (the caller passes the clock).

A bucket holds up to `burst` tokens and refills at `rate` tokens a second; a request takes `cost` tokens or
is refused with the seconds after which it would be admitted (the `Retry-After` a gateway sends). A request
is admitted only if every bucket it draws on (its principal's and its tenant's) has the tokens, and then it
takes from all of them; a refusal takes nothing, so a client that waits as told is admitted next time.

Staging quotas (`StagingQuota`) are counted in Postgres instead (governance/storage/quotas.py), in the
append's own transaction: a refused batch writes nothing.

The buckets live in the gateway process (`Limiter`): with N gateway processes behind a balancer, a key can
use up to N times the configured rates. That is the price of never touching the database to admit a request.

Sizes of one request that the schemas check too live here, so a schema needs no rule module to know them.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "BucketRule",
    "TokenBucket",
    "Limiter",
    "retry_after_header",
    "StagingQuota",
    "StagingUsage",
    "task_quota_refusal",
    "tenant_quota_refusal",
    "seconds_to_utc_midnight",
    "FairGate",
    "MAX_LIFT_ITEMS",
]

# how many memories one lift request may carry (governance/lifting.py, api/schemas/change_requests.py)
MAX_LIFT_ITEMS = 100


@dataclass(frozen=True)
class BucketRule:
    """`rate` tokens a second, at most `burst` saved up; a rate of 0 turns the bucket off (no limit)."""

    rate: float
    burst: float

    @property
    def enabled(self) -> bool:
        return self.rate > 0


class TokenBucket:
    """One bucket: full at creation, refilled lazily on each look."""

    __slots__ = ("rule", "tokens", "stamp")

    def __init__(self, rule: BucketRule, now: float) -> None:
        self.rule = rule
        self.tokens = rule.burst
        self.stamp = now

    def _refill(self, now: float) -> None:
        if now > self.stamp:
            self.tokens = min(self.rule.burst, self.tokens + (now - self.stamp) * self.rule.rate)
            self.stamp = now

    def wait_for(self, cost: float, now: float) -> float:
        """Seconds until `cost` tokens are there (0: now); a cost above the burst waits for a full bucket."""
        self._refill(now)
        needed = min(cost, self.rule.burst) - self.tokens
        return 0.0 if needed <= 0 else needed / self.rule.rate

    def take(self, cost: float, now: float) -> None:
        self._refill(now)
        self.tokens -= min(cost, self.rule.burst)


class Limiter:
    """Named buckets (`principal:<id>:search`, `tenant:<org>:requests` …), bounded in number, thread-safe.

    Past `max_buckets`, the least recently used bucket is dropped: it was idle longest, so it had refilled
    (or nearly) and dropping it forgives little.
    """

    def __init__(self, max_buckets: int = 100_000) -> None:
        self._buckets: OrderedDict[str, TokenBucket] = OrderedDict()
        self._max = max_buckets
        self._lock = threading.Lock()

    def _bucket(self, name: str, rule: BucketRule, now: float) -> TokenBucket:
        bucket = self._buckets.get(name)
        if bucket is None or bucket.rule != rule:
            bucket = TokenBucket(rule, now)
            self._buckets[name] = bucket
            while len(self._buckets) > self._max:
                self._buckets.popitem(last=False)
        self._buckets.move_to_end(name)
        return bucket

    def admit(
        self, draws: list[tuple[str, BucketRule]], now: float, cost: float = 1.0
    ) -> tuple[float, str | None]:
        """Take `cost` from every named bucket, or from none.

        (0.0, None) when admitted, else (seconds to wait, the name of the bucket that waits longest).
        """
        with self._lock:
            buckets = [(name, self._bucket(name, rule, now)) for name, rule in draws if rule.enabled]
            wait, refusing = 0.0, None
            for name, bucket in buckets:
                needed = bucket.wait_for(cost, now)
                if needed > wait:
                    wait, refusing = needed, name
            if refusing is not None:
                return wait, refusing
            for _, bucket in buckets:
                bucket.take(cost, now)
            return 0.0, None

    def __len__(self) -> int:
        return len(self._buckets)


def retry_after_header(wait_seconds: float) -> str:
    """A `Retry-After` value (whole seconds, at least 1) for a wait."""
    return str(max(1, math.ceil(wait_seconds)))


@dataclass(frozen=True)
class StagingQuota:
    """How much staging one task may hold, and one tenant (org) may append in a UTC day; 0: no quota."""

    task_entries: int = 0
    task_bytes: int = 0
    tenant_entries_per_day: int = 0
    tenant_bytes_per_day: int = 0

    @property
    def counts_task(self) -> bool:
        return self.task_entries > 0 or self.task_bytes > 0

    @property
    def counts_tenant(self) -> bool:
        return self.tenant_entries_per_day > 0 or self.tenant_bytes_per_day > 0


@dataclass(frozen=True)
class StagingUsage:
    """What is stored already (entries, bytes of content and payload)."""

    entries: int
    bytes: int


def task_quota_refusal(
    quota: StagingQuota, task_id: str, used: StagingUsage, entries: int, size: int
) -> tuple[str, str] | None:
    """(quota name, message) when appending `entries` of `size` bytes would pass the task's quota."""
    if quota.task_entries and used.entries + entries > quota.task_entries:
        return "task_entries", (
            f"task {task_id!r} holds {used.entries} staging entries; {entries} more would pass its quota of "
            f"{quota.task_entries} (LOREGATE_STAGING_MAX_TASK_ENTRIES); nothing was written"
        )
    if quota.task_bytes and used.bytes + size > quota.task_bytes:
        return "task_bytes", (
            f"task {task_id!r} holds {used.bytes} bytes of staging; {size} more would pass its quota of "
            f"{quota.task_bytes} (LOREGATE_STAGING_MAX_TASK_BYTES); nothing was written"
        )
    return None


def tenant_quota_refusal(
    quota: StagingQuota, org: str, used: StagingUsage, entries: int, size: int
) -> tuple[str, str] | None:
    """(quota name, message) when appending would pass the tenant's quota for the UTC day."""
    if quota.tenant_entries_per_day and used.entries + entries > quota.tenant_entries_per_day:
        return "tenant_entries_per_day", (
            f"tenant {org!r} appended {used.entries} staging entries today (UTC); {entries} more would pass "
            f"its daily quota of {quota.tenant_entries_per_day} "
            "(LOREGATE_STAGING_MAX_TENANT_ENTRIES_PER_DAY); nothing was written"
        )
    if quota.tenant_bytes_per_day and used.bytes + size > quota.tenant_bytes_per_day:
        return "tenant_bytes_per_day", (
            f"tenant {org!r} appended {used.bytes} bytes of staging today (UTC); {size} more would pass its "
            f"daily quota of {quota.tenant_bytes_per_day} (LOREGATE_STAGING_MAX_TENANT_BYTES_PER_DAY); "
            "nothing was written"
        )
    return None


def seconds_to_utc_midnight(now_epoch: float) -> float:
    """Seconds until the next UTC day starts (when a daily quota refills)."""
    return 86400.0 - (now_epoch % 86400.0)


class FairGate:
    """At most `capacity` holders at once; waiters are let in tenant by tenant, least recently served first.

    The embedding engine is one thread working through a queue: in arrival order, one tenant's six clients
    sending long queries put six queries ahead of every other tenant's. Behind this gate, a tenant that
    was not served lately goes next whatever another tenant has queued, so a flood waits behind itself.
    Blocking (threads): the embedders are called from worker threads.
    """

    # how long a tenant let in counts as present (`alone`): longer than a small promotion takes from one
    # embedding to the next on a loaded machine (its plan, then the next promotion's), so that a stream of
    # small promotions keeps a big plan's slices small (at 2 s, tests/bench/fairness.py's loaded p50 was 1.97x
    # the unloaded one at load 20: the slices grew between two small promotions)
    RECENT_SECONDS = 15.0

    def __init__(self, capacity: int = 1, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._cond = threading.Condition()
        self._free = capacity
        self._waiting: dict[str, deque[object]] = {}
        self._served: dict[str, int] = {}  # tenant -> turn it was last let in
        self._turn = 0
        self._clock = clock
        # tenant -> when it was last let in, oldest first; only those of the last RECENT_SECONDS
        self._recent: OrderedDict[str, float] = OrderedDict()

    def _forget_old(self, now: float) -> None:
        while self._recent and next(iter(self._recent.values())) < now - self.RECENT_SECONDS:
            self._recent.popitem(last=False)

    def alone(self, tenant: str) -> bool:
        """No other tenant waits at the gate or was let in during the last `RECENT_SECONDS`: `tenant` may
        take bigger turns (a big plan's embedding slices grow) without keeping anyone waiting."""
        with self._cond:
            self._forget_old(self._clock())
            return all(t == tenant for t in self._waiting) and all(t == tenant for t in self._recent)

    def _chosen(self) -> object | None:
        if not self._waiting:
            return None
        tenant = min(self._waiting, key=lambda t: self._served.get(t, -1))
        return self._waiting[tenant][0]

    def acquire(self, tenant: str) -> None:
        ticket = object()
        with self._cond:
            self._waiting.setdefault(tenant, deque()).append(ticket)
            while not (self._free > 0 and self._chosen() is ticket):
                self._cond.wait()
            self._free -= 1
            queue = self._waiting[tenant]
            queue.popleft()
            if not queue:
                del self._waiting[tenant]
            self._turn += 1
            self._served[tenant] = self._turn
            now = self._clock()
            self._recent[tenant] = now
            self._recent.move_to_end(tenant)
            self._forget_old(now)
            if len(self._served) > 10_000:  # forget tenants not waiting now: they count as never served
                self._served = {t: n for t, n in self._served.items() if t in self._waiting}
            self._cond.notify_all()

    def release(self) -> None:
        with self._cond:
            self._free += 1
            self._cond.notify_all()
