"""Group commit for appends: requests that arrive while a statement runs share the next one.

An append costs Postgres and the gateway about as much per request (the pool's checkout and ping, a
statement, the latest promotion's read, a commit, the wake-ups of each round trip) as it costs per row for a
batch of a hundred entries. `GroupCommit` lets one process send the appends of concurrent requests as one
statement: the first request of an idle group is flushed at once (no waiting for company), and whatever
arrives meanwhile waits for that flush to end and goes in the next, up to `max_items` requests and
`max_weight` entries a flush. Two items with a key in common (the same task, the same shard of a tenant's
day) never share a flush: the later one waits for the next, so the statement never meets the same row
twice and a task's requests keep their order.

Each item gets its own result (the flush returns one per item, in order), so a flush's statement decides
every request on its own: one refused request (a revoked key, a closed task, a quota) refuses only itself.
A flush that fails outright (the database gone) fails each of its requests with that error, none of which
was acknowledged. A request cancelled before its flush starts is dropped (nothing of it is sent); one
cancelled while its flush runs is written or not with the rest, as a cancelled single append was.

The group is per process and event loop (`group_for`); it holds no connection between flushes.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

__all__ = ["GroupCommit", "group_for"]

T = TypeVar("T")
R = TypeVar("R")


@dataclass
class GroupCommit(Generic[T, R]):
    """A queue of items flushed together: `submit` waits for the flush that carried its item.

    `flush` takes a flush's items and returns one result per item, in order; `keys` names what an item
    locks (items sharing a key go in different flushes, never in two at once); `weight` is what an item
    counts against `max_weight` (entries), a lone item passing it still flushes alone. Up to `runners`
    flushes run at once (the next one forms while the database works on the previous).
    """

    flush: Callable[[list[T]], Awaitable[list[R]]]
    keys: Callable[[T], Iterable[Hashable]]
    weight: Callable[[T], int]
    max_items: int = 32
    max_weight: int = 2_000
    flushes: int = 0  # flushes run (what a test or a bench reads to see the group at work)
    items: int = 0  # items those flushes carried
    runners: int = 1
    _queue: list[tuple[T, asyncio.Future[R]]] = field(default_factory=list)
    _running: set[asyncio.Task[None]] = field(default_factory=set)
    _inflight: list[set[Hashable]] = field(default_factory=list)  # the keys of each flush running

    async def submit(self, item: T) -> R:
        """The item's result, once the flush carrying it has ended (its error, if that flush failed)."""
        future: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._queue.append((item, future))
        if len(self._running) < self.runners:
            runner = asyncio.get_running_loop().create_task(self._run())
            self._running.add(runner)
            runner.add_done_callback(self._running.discard)
        return await future

    def _take(self) -> list[tuple[T, asyncio.Future[R]]]:
        """The next flush's items, in arrival order; the rest stay queued in theirs."""
        taken: list[tuple[T, asyncio.Future[R]]] = []
        rest: list[tuple[T, asyncio.Future[R]]] = []
        held: set[Hashable] = set().union(*self._inflight)
        weight = 0
        for pending in self._queue:
            item, future = pending
            if future.done():  # cancelled while queued: nothing of it is sent
                continue
            keys = set(self.keys(item))
            w = self.weight(item)
            if (
                len(taken) >= self.max_items
                or (taken and weight + w > self.max_weight)
                or not held.isdisjoint(keys)
            ):
                rest.append(pending)
                held |= keys  # a later item of the same task never overtakes this one
                continue
            taken.append(pending)
            held |= keys
            weight += w
        self._queue = rest
        return taken

    async def _run(self) -> None:
        try:
            while self._queue:
                taken = self._take()
                if not taken:  # what is queued waits for a running flush's keys: that runner takes it
                    return
                self.flushes += 1
                self.items += len(taken)
                keys: set[Hashable] = set()
                for item, _ in taken:
                    keys.update(self.keys(item))
                self._inflight.append(keys)
                try:
                    results = await self.flush([item for item, _ in taken])
                except asyncio.CancelledError as exc:
                    for _, future in taken:
                        if not future.done():
                            future.set_exception(exc)
                    raise
                except Exception as exc:  # noqa: BLE001 (each request of the flush answers with it)
                    for _, future in taken:
                        if not future.done():
                            future.set_exception(exc)
                    continue
                finally:
                    self._inflight.remove(keys)
                for (_, future), result in zip(taken, results, strict=True):
                    if not future.done():
                        future.set_result(result)
        except asyncio.CancelledError:
            # the loop shutting down: what is still queued is cancelled with it
            for _, future in self._queue:
                future.cancel()
            self._queue = []
            raise
        finally:
            # at once, not in a done callback: a submit right after this must start a runner
            self._running.discard(asyncio.current_task())


# one group per engine and event loop: a group's runner task belongs to the loop it started on
_GROUPS: weakref.WeakKeyDictionary[Any, dict[tuple[asyncio.AbstractEventLoop, str], Any]] = (
    weakref.WeakKeyDictionary()
)


def group_for(owner: Any, name: str, make: Callable[[], GroupCommit[T, R]]) -> GroupCommit[T, R]:
    """`owner`'s group called `name` on the running loop, made by `make` the first time."""
    loop = asyncio.get_running_loop()
    groups = _GROUPS.setdefault(owner, {})
    for stale in [k for k in groups if k[0].is_closed()]:
        del groups[stale]
    group: GroupCommit[T, R] | None = groups.get((loop, name))
    if group is None:
        group = groups[(loop, name)] = make()
    return group
