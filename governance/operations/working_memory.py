"""A task's working memory: fold its staging into files and symbols, record what the agent says, read it all.

`catch_up` folds the entries appended since the last fold into `task_code_locations` (their payload's files
and symbols, and what their text names: governance/code_locations.py), in one transaction that holds the
task's state row, so two folds never count an entry twice. Every reader folds first (`catch_up_project` for a
project's tasks), so what is read never lags the log; the append path does not fold (scanning each entry's
text there was about a third of a batch's gateway CPU, docs/scaling.md), so a task's first read pays it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncEngine

from governance.code_locations import locations_of_entry
from governance.errors import InvalidInput
from governance.storage import working_memory as statements
from governance.storage.working_memory import BufferedEntry, Hypothesis, LocationRow, WorkingStats
from governance.working_memory import (
    MAX_HYPOTHESES,
    MAX_LOCATIONS_SHOWN,
    RECENT_DECISIONS,
    RECENT_ERRORS,
    RECENT_TOOL_CALLS,
    hypothesis_sha256,
)

__all__ = [
    "tracked",
    "FOLD_BATCH",
    "WorkingMemory",
    "HypothesisDraft",
    "catch_up",
    "catch_up_project",
    "record",
    "set_decision",
    "read",
]

FOLD_BATCH = 500
# a reader folds at most this many lagging tasks of a project before answering (the rest next time)
CATCH_UP_TASKS = 500


@dataclass(frozen=True)
class HypothesisDraft:
    """A hypothesis as an agent states it."""

    text: str
    confidence: float
    evidence_ids: tuple[int, ...] = ()


@dataclass(frozen=True)
class WorkingMemory:
    """Everything a task keeps in mind, read in one call."""

    hypotheses: list[Hypothesis]
    files: list[LocationRow]
    symbols: list[LocationRow]
    errors: list[BufferedEntry]
    decisions: list[BufferedEntry]
    tool_calls: list[BufferedEntry]
    stats: WorkingStats


async def catch_up(engine: AsyncEngine, task_id: str) -> int:
    """Fold the task's entries appended since the last fold; how many were folded."""
    folded = 0
    async with engine.begin() as conn:
        stored, indexed = await statements.lock_state(conn, task_id)
        while True:
            entries = await statements.entries_after(conn, task_id, indexed, FOLD_BATCH)
            if not entries:
                break
            counts: dict[tuple[str, str], list[int]] = {}
            for entry in entries:
                found = locations_of_entry(
                    entry.content, entry.payload if isinstance(entry.payload, dict) else None
                )
                failed = entry.kind == "error"
                for kind, values in (("file", found.files), ("symbol", found.symbols)):
                    for value in values:
                        seen = counts.setdefault((kind, value), [0, 0, entry.seq, entry.seq])
                        seen[0] += 1
                        seen[1] += int(failed)
                        seen[3] = entry.seq
            await statements.add_touches(
                conn, task_id, [(k, v, n, e, f, last) for (k, v), (n, e, f, last) in counts.items()]
            )
            indexed = entries[-1].seq
            folded += len(entries)
        if indexed != stored:
            await statements.set_indexed_seq(conn, task_id, indexed)
    return folded


async def catch_up_project(engine: AsyncEngine, *, org: str, project: str) -> int:
    """Fold every task of the project whose staging ran ahead of its working memory; tasks folded."""
    async with engine.connect() as conn:
        behind = await statements.tasks_behind(conn, org=org, project=project, limit=CATCH_UP_TASKS)
    for task_id in behind:
        await catch_up(engine, task_id)
    return len(behind)


async def record(
    engine: AsyncEngine,
    task_id: str,
    actor_id: str,
    *,
    hypotheses: Sequence[HypothesisDraft],
    files: Sequence[str],
    symbols: Sequence[str],
    task_name: str | None = None,
) -> list[Hypothesis]:
    """Track files and symbols and set hypotheses, all or nothing; the hypotheses as stored.

    Evidence must be staging entries of this task: InvalidInput names the first hypothesis citing others,
    and them, and the task as `task_name` (its id in its tenant; default: its key).
    """
    async with engine.begin() as conn:
        wanted = sorted({i for h in hypotheses for i in h.evidence_ids})
        known = await statements.entry_ids_of_task(conn, task_id, wanted)
        for index, hypothesis in enumerate(hypotheses):
            unknown = sorted({i for i in hypothesis.evidence_ids if i not in known})
            if unknown:
                what = "is not a staging entry" if len(unknown) == 1 else "are not staging entries"
                raise InvalidInput(
                    f"hypotheses.{index}.evidence_ids: {', '.join(map(str, unknown))} {what} of task "
                    f"{task_name or task_id!r}"
                )
        await statements.track(conn, task_id, "file", files)
        await statements.track(conn, task_id, "symbol", symbols)
        return [
            await statements.upsert_hypothesis(
                conn,
                task_id,
                text_=h.text,
                text_sha256=hypothesis_sha256(h.text),
                confidence=h.confidence,
                evidence_ids=h.evidence_ids,
                actor_id=actor_id,
            )
            for h in hypotheses
        ]


async def set_decision(engine: AsyncEngine, hypothesis_id: int, entry_id: int) -> None:
    """Record the decision entry a hypothesis became."""
    async with engine.begin() as conn:
        await statements.set_decision_entry(conn, hypothesis_id, entry_id)


async def tracked(engine: AsyncEngine, task_id: str, limit: int) -> tuple[list[str], list[str]]:
    """The files and symbols the agent tracked (at most `limit` of each), without folding staging: what
    cognify adds to an episode (governance/episodes.py) beside what the entries name."""
    async with engine.connect() as conn:
        files, symbols = [
            [r.value for r in await statements.locations_of(conn, task_id, kind, limit) if r.tracked]
            for kind in ("file", "symbol")
        ]
    return files, symbols


async def read(engine: AsyncEngine, task_id: str) -> WorkingMemory:
    """The task's working memory after folding its latest entries."""
    await catch_up(engine, task_id)
    async with engine.connect() as conn:
        return WorkingMemory(
            hypotheses=await statements.hypotheses_of(conn, task_id, MAX_HYPOTHESES),
            files=await statements.locations_of(conn, task_id, "file", MAX_LOCATIONS_SHOWN),
            symbols=await statements.locations_of(conn, task_id, "symbol", MAX_LOCATIONS_SHOWN),
            errors=await statements.recent_entries(conn, task_id, kinds=("error",), limit=RECENT_ERRORS),
            decisions=await statements.recent_entries(
                conn, task_id, kinds=("decision",), limit=RECENT_DECISIONS
            ),
            tool_calls=await statements.recent_entries(
                conn, task_id, tool_calls=True, limit=RECENT_TOOL_CALLS
            ),
            stats=await statements.working_stats(conn, task_id),
        )
