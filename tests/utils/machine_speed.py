"""A same-run yardstick for CPU budgets: what a fixed piece of Python costs on this machine, now.

A budget written in seconds holds on the machine it was set on and fails on a slower one (the suite runs on
shared 2-core VMs whose speed differs threefold from one to the next). A test that guards a cost writes its
budget as a multiple of this yardstick instead, measured in the same run, as the benches' ratios are.

The yardstick is a fresh interpreter that imports a fixed set of standard-library modules and runs a short
loop: start-up, imports (reading and unmarshalling code) and bytecode, what a command-line start costs.
Its CPU is the child's own (user + system). Each measured run is paired with a yardstick run just before it,
and the pair with the smallest ratio counts: a shared machine only slows a run down.
"""

from __future__ import annotations

import resource
import subprocess
import sys
from collections.abc import Callable
from typing import TypeVar

R = TypeVar("R")

__all__ = ["child_cpu", "best_of_three_with_yardstick", "yardstick_cpu"]

_YARDSTICK = (
    "import argparse, asyncio, decimal, email.message, http.client, json, logging, typing\n"
    "n = 0\n"
    "for i in range(300_000):\n"
    "    n += i % 7\n"
)


def child_cpu(args: list[str], **kwargs: object) -> tuple[subprocess.CompletedProcess[str], float]:
    """Run `args` to completion: its result and the CPU seconds it used (user + system)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = subprocess.run(args, capture_output=True, text=True, timeout=120, check=False, **kwargs)  # type: ignore[call-overload]
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return result, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def yardstick_cpu() -> float:
    """CPU seconds of one run of the yardstick."""
    return child_cpu([sys.executable, "-c", _YARDSTICK])[1]


def best_of_three_with_yardstick(
    run: Callable[[], tuple[R, float]],
) -> tuple[R, float, float]:
    """`run` (answering its result and CPU seconds) three times, each right after a run of the yardstick, so
    both meet the machine's load of the same moment: the pair whose ratio is the smallest (a shared machine
    only slows a run down), as the run's result, its CPU and that yardstick."""
    pairs = []
    for _ in range(3):
        stick = yardstick_cpu()
        result, cpu = run()
        pairs.append((cpu / stick, result, cpu, stick))
    _, result, cpu, stick = min(pairs, key=lambda pair: pair[0])
    return result, cpu, stick
