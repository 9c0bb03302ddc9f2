"""Policy changes reach every process: NOTIFY on a change, a LISTENing thread per process that reloads.

pycasbin's Watcher interface over Postgres LISTEN/NOTIFY with psycopg 3 (synchronous: casbin calls it from
its own threads). After a reconnect it calls back once, since notifications sent while disconnected are lost.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import psycopg

from governance.storage.connections import connect_bounded
from governance.storage.engine import answer_bound, libpq_timeouts
from governance.storage.identity import POLICY_CHANNEL

__all__ = ["PostgresWatcher"]

# the channel governance/storage/identity.py notifies when keys or principals change
_log = logging.getLogger(__name__)


def _libpq_url(url: str) -> str:
    for prefix in ("postgresql+psycopg://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql://" + url[len(prefix) :]
    return url


class PostgresWatcher:
    """pycasbin Watcher over Postgres LISTEN/NOTIFY (psycopg 3), with reconnect."""

    def __init__(self, database_url: str, *, timeout_seconds: float = 5.0) -> None:
        self._url = _libpq_url(database_url)
        self._timeout = timeout_seconds
        self._callbacks: list[Callable[[], None]] = []
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="loregate-policy-watcher", daemon=True)
        self._thread.start()
        self._ready.wait(timeout=5)

    def set_update_callback(self, func: Callable[..., None]) -> None:
        self._callbacks.append(func)

    def update(self, *args: Any) -> bool:
        """Tell every process (this one included) that the policy changed."""
        with self._connect() as conn:
            conn.execute("SELECT pg_notify(%s, '')", (POLICY_CHANNEL,))
        return True

    # pycasbin calls these on WatcherEx-style updates; one reload covers them all
    update_for_add_policy = update
    update_for_remove_policy = update
    update_for_remove_filtered_policy = update
    update_for_save_policy = update
    update_for_add_policies = update
    update_for_remove_policies = update

    def close(self) -> None:
        self._stop.set()

    def _connect(self) -> psycopg.Connection[Any]:
        """A connection whose every wait is bounded (a stalled database never holds a policy change)."""
        return connect_bounded(
            self._url,
            autocommit=True,
            answer_bound=answer_bound(self._timeout),
            **libpq_timeouts(self._timeout),
        )

    def _fire(self) -> None:
        for callback in self._callbacks:
            try:
                callback()
            except Exception:  # a failed reload keeps the last good policy; the next notify retries
                _log.exception("policy reload failed")

    def _run(self) -> None:
        first = True
        while not self._stop.is_set():
            try:
                with self._connect() as conn:
                    conn.execute(f"LISTEN {POLICY_CHANNEL}")
                    self._ready.set()
                    if not first:
                        self._fire()
                    first = False
                    while not self._stop.is_set():
                        if list(conn.notifies(timeout=0.5, stop_after=1)):
                            # drain the rest of a burst, then reload once
                            list(conn.notifies(timeout=0.05))
                            self._fire()
            except psycopg.Error:
                self._ready.set()
                self._stop.wait(1.0)
