"""A production worker that kills its own process right after one activity's body returns.

Run by tests/workflows/test_promotion_crash.py as `python -m tests.workflows.crash_worker <address>
<namespace> <task queue> <activity name>`, with `LOREGATE_DATABASE_URL` in the environment. With
`<activity name>@<n>` it dies instead in the middle of that activity, when it heartbeats a progress of at
least n (plan heartbeats the plan items it has committed). The
activity's work (for `publish`: its committed transaction) is done, but the process dies with SIGKILL
before the SDK can report the result — exactly the window a crash-safe gate has to survive. A kill,
not a graceful `Worker.shutdown()`: a shutting-down worker keeps the workflow task of a running local
activity until that activity's timeout, so nothing would be handed over for 30 s, and a real crash
does not say goodbye either.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from typing import Any

from temporalio import activity
from temporalio.client import Client
from temporalio.worker import (
    ActivityInboundInterceptor,
    ActivityOutboundInterceptor,
    ExecuteActivityInput,
    Interceptor,
)

from governance.config import Settings
from governance.storage.engine import make_engine
from policy.enforcer import make_authorizer
from workflows.worker import build_worker

__all__ = ["KillAfter", "main"]

REACHED = "crash-point-reached"


class KillAfter(Interceptor):
    """After the body of activity `name` returns, print `REACHED` and SIGKILL this process."""

    def __init__(self, name: str) -> None:
        self.name = name

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _Kill(next, self.name)


def _die() -> None:
    print(REACHED, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)


class _Kill(ActivityInboundInterceptor):
    def __init__(self, next: ActivityInboundInterceptor, name: str) -> None:
        super().__init__(next)
        self._name, _, at = name.partition("@")
        self._at = int(at) if at else None

    def init(self, outbound: ActivityOutboundInterceptor) -> None:
        super().init(_KillOnProgress(outbound, self._name, self._at) if self._at is not None else outbound)

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        result = await self.next.execute_activity(input)
        if activity.info().activity_type == self._name and self._at is None:
            _die()
        return result


class _KillOnProgress(ActivityOutboundInterceptor):
    """Dies when activity `name` heartbeats a progress of at least `at` (after what it committed)."""

    def __init__(self, next: ActivityOutboundInterceptor, name: str, at: int) -> None:
        super().__init__(next)
        self._name, self._at = name, at

    def heartbeat(self, *details: Any) -> None:
        progress = details[0] if details else None
        if self.info().activity_type == self._name and isinstance(progress, int) and progress >= self._at:
            _die()
        super().heartbeat(*details)


async def main(address: str, namespace: str, task_queue: str, crash_in: str) -> None:
    """Run the worker until the crash point kills it."""
    settings = Settings()
    assert settings.database_url, "LOREGATE_DATABASE_URL must name the test database"
    client = await Client.connect(address, namespace=namespace)
    engine = make_engine(settings)
    authorizer = make_authorizer(settings.database_url, watch=False)
    worker = build_worker(
        client,
        engine=engine,
        settings=settings,
        authorizer=authorizer,
        task_queue=task_queue,
        interceptors=[KillAfter(crash_in)],
    )
    async with worker:
        print("worker-running", flush=True)
        await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
