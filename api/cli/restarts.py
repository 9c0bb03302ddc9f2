"""When `loregate up` restarts a child that died: backoff between attempts, a cap per time window.

A worker or gateway that crashes is started again after 1 s, then 2 s, 4 s … (at most 30 s); more than
`max_restarts` restarts within `window_seconds` means something is wrong that restarting will not fix, and
the supervisor stops the platform with the child's log instead of looping.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

__all__ = ["RestartPolicy", "RestartBudget"]


@dataclass(frozen=True)
class RestartPolicy:
    """How often a child may be restarted, and how long to wait before each restart."""

    max_restarts: int = 5
    window_seconds: float = 300.0
    initial_backoff_seconds: float = 1.0
    max_backoff_seconds: float = 30.0


@dataclass
class RestartBudget:
    """The restarts of one child so far; `next_delay` says whether (and after how long) to restart."""

    policy: RestartPolicy
    _times: deque[float] = field(default_factory=deque)

    def next_delay(self, now: float) -> float | None:
        """Seconds to wait before the next restart, or None when the window's budget is spent."""
        while self._times and now - self._times[0] > self.policy.window_seconds:
            self._times.popleft()
        if len(self._times) >= self.policy.max_restarts:
            return None
        delay: float = self.policy.initial_backoff_seconds * 2.0 ** len(self._times)
        return min(delay, self.policy.max_backoff_seconds)

    def record(self, now: float) -> int:
        """Count a restart made at `now`; returns how many fall in the current window."""
        self._times.append(now)
        return len(self._times)
