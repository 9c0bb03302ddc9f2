"""When `loregate up` restarts a child that died: backoff between attempts, a cap per time window.

A worker or gateway that crashes is started again after 1 s, then 2 s, 4 s … (at most 30 s); more than
`max_restarts` restarts within `window_seconds` means something is wrong that restarting will not fix, and
the supervisor stops the platform with the child's log instead of looping.
"""

from __future__ import annotations

import re
import socket
from collections import deque
from dataclasses import dataclass, field

__all__ = ["RestartPolicy", "RestartBudget", "BIND_ATTEMPTS", "bind_failure", "pick_free_port"]

# how many times `loregate up` starts the Temporal dev server when a port it picked itself was taken
BIND_ATTEMPTS = 3
_IN_USE = re.compile(r"address already in use|EADDRINUSE", re.IGNORECASE)
_PORT = re.compile(r":(\d{2,5})\b")


def pick_free_port() -> int:
    """A loopback port free right now. Another process may take it before it is bound: `bind_failure`
    tells that clash apart, and `loregate up` picks again."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def bind_failure(log_tail: str, configured: dict[int, str]) -> tuple[bool, str | None]:
    """Whether a child's log ends on a port already in use, and the setting that names that port.

    `configured` maps the ports the user chose (settings) to their variables. A clash on one of them is the
    user's to fix (the setting is named); a clash on a port the child picked for itself (the dev server's
    internal ports, say) goes away when it starts again and picks anew.
    """
    for line in reversed(log_tail.splitlines()):
        if _IN_USE.search(line):
            for port in (int(p) for p in _PORT.findall(line)):
                if port in configured:
                    return True, configured[port]
            return True, None
    return False, None


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
