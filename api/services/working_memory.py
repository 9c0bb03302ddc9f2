"""A task's working memory and what happened around a file: the use cases every transport calls.

The task comes authorised (`read` to look, `write` to add); a hypothesis held at 0.9 or more is appended to
the task's staging once as a `decision` (the same append, limits and quotas as any entry, with an idempotency
key naming the hypothesis), so a retried call never decides twice.
"""

from __future__ import annotations

from api.schemas.staging import EntriesIn, EntryIn
from api.schemas.working_memory import (
    BufferedEntryPublic,
    CommonErrorPublic,
    FileHistoryItemPublic,
    FileHistoryPublic,
    FileStatsPublic,
    HypothesisPublic,
    LocationPublic,
    ProjectStatsPublic,
    WorkingMemoryIn,
    WorkingMemoryPublic,
    WorkingStatsPublic,
)
from api.services import staging as staging_service
from api.services.gateway import GatewayResources, authorized_task
from governance.code_locations import normalise_path, text_key
from governance.errors import InvalidInput
from governance.identity import Principal
from governance.operations import working_memory as working
from governance.redaction import redact_free_text
from governance.scopes import EntryKind, Scope, scope_key
from governance.storage import working_memory as statements
from governance.storage.staging import TaskInfo
from governance.storage.working_memory import BufferedEntry, LocationRow
from governance.working_memory import becomes_decision, decision_content

__all__ = [
    "FILE_HISTORY_TYPES",
    "show",
    "update",
    "file_history",
    "touching_tasks",
    "project_stats",
]


# what a file's history shows: what happened (episodes), what broke (bug patterns), what binds (rules),
# and what was decided (facts and insights distilled from decisions)
FILE_HISTORY_TYPES = ("episode", "bug_pattern", "code_rule", "fact", "insight", "skill")
FILE_HISTORY_MAX = 100


def _location(row: LocationRow) -> LocationPublic:
    return LocationPublic(
        value=row.value,
        tracked=row.tracked,
        touches=row.touches,
        error_touches=row.error_touches,
        first_seq=row.first_seq,
        last_seq=row.last_seq,
    )


def _buffered(entry: BufferedEntry) -> BufferedEntryPublic:
    return BufferedEntryPublic.model_validate(entry, from_attributes=True)


async def show(resources: GatewayResources, task: TaskInfo) -> WorkingMemoryPublic:
    """The working memory of a task authorised for `read`, in one answer."""
    memory = await working.read(resources.engine, task.id)
    return WorkingMemoryPublic(
        task_id=task.public_id,
        hypotheses=[HypothesisPublic.model_validate(h, from_attributes=True) for h in memory.hypotheses],
        files=[_location(r) for r in memory.files],
        symbols=[_location(r) for r in memory.symbols],
        recent_errors=[_buffered(e) for e in memory.errors],
        recent_decisions=[_buffered(e) for e in memory.decisions],
        recent_tool_calls=[_buffered(e) for e in memory.tool_calls],
        statistics=WorkingStatsPublic.model_validate(memory.stats, from_attributes=True),
    )


async def update(
    resources: GatewayResources, principal: Principal, task: TaskInfo, body: WorkingMemoryIn
) -> WorkingMemoryPublic:
    """Track files and symbols and set hypotheses on a task authorised for `write`; the working memory after.

    A hypothesis at 0.9 or more becomes a decision entry in staging (once per hypothesis).
    """
    files = [normalise_path(f) or f.strip() for f in body.files]
    symbols = [" ".join(s.split()) for s in body.symbols]
    # worded as the schema's refusals are: the item, then what to send instead
    if "" in files:
        raise InvalidInput(f"files.{files.index('')}: give a file path, not white space")
    if "" in symbols:
        raise InvalidInput(f"symbols.{symbols.index('')}: give a name, not white space")
    stored = await working.record(
        resources.engine,
        task.id,
        principal.id,
        task_name=task.public_id,
        hypotheses=[
            working.HypothesisDraft(" ".join(h.text.split()), h.confidence, tuple(h.evidence_ids))
            for h in body.hypotheses
        ],
        files=files,
        symbols=symbols,
    )
    for hypothesis in stored:
        if becomes_decision(hypothesis.confidence) and hypothesis.decision_entry_id is None:
            seqs = await _seqs(resources, task, hypothesis.evidence_ids)
            entry = EntryIn(
                kind=EntryKind.DECISION,
                content=decision_content(hypothesis.text, hypothesis.confidence, seqs),
                payload={
                    "source": "working_memory",
                    "hypothesis_id": hypothesis.id,
                    "confidence": hypothesis.confidence,
                    "evidence_ids": hypothesis.evidence_ids,
                },
                idempotency_key=f"hypothesis-{hypothesis.id}-decision",
            )
            ack = await staging_service.append_entries(resources, principal, task, EntriesIn(entries=[entry]))
            await working.set_decision(resources.engine, hypothesis.id, ack.entries[0].id)
    return await show(resources, task)


async def _seqs(resources: GatewayResources, task: TaskInfo, entry_ids: list[int]) -> list[int]:
    async with resources.engine.connect() as conn:
        return sorted((await statements.entry_ids_of_task(conn, task.id, entry_ids)).values())


async def touching_tasks(
    resources: GatewayResources, task: TaskInfo, *, files: list[str], symbols: list[str]
) -> dict[str, int]:
    """Tasks of the reader's project whose entries named one of the files or symbols, with counts."""
    await working.catch_up_project(resources.engine, org=task.org, project=task.project)
    async with resources.engine.connect() as conn:
        return await statements.tasks_touching(
            conn, org=task.org, project=task.project, files=files, symbols=symbols
        )


async def file_history(
    resources: GatewayResources, principal: Principal, task_id: str, path: str, *, limit: int
) -> FileHistoryPublic:
    """What happened around a file, seen from a task authorised for `read`: the published memories (episodes,
    bug patterns, rules, decisions) of tasks that touched it or naming it, newest first."""
    task = await authorized_task(resources, principal, task_id, "read")
    cleaned = normalise_path(path) or path.strip()
    if not cleaned:
        raise InvalidInput("path: give a file path, not white space")
    limit = min(limit, FILE_HISTORY_MAX)
    keys = _readable_keys(resources, principal, task)
    touched = await touching_tasks(resources, task, files=[cleaned], symbols=[])
    async with resources.engine.connect() as conn:
        rows = await statements.file_rows(
            conn,
            scope_keys=keys,
            task_ids=sorted(touched),
            path=text_key(cleaned),
            types=FILE_HISTORY_TYPES,
            limit=limit,
            file=cleaned,
        )
    items = [
        FileHistoryItemPublic(
            citation=r.citation,
            type=r.memory_type,
            scope=r.scope,
            title=r.title,
            content=r.content,
            confidence=r.confidence,
            success=r.success,
            created_at=r.created_at,
            stale=r.stale,
            via="task" if r.by_task else "episode" if r.by_episode else "text",
            task_type=r.task_type,
            error_types=list(r.error_types or []),
            touches=sum(touched.get(t, 0) for t in r.source_task_ids),
        )
        for r in rows
    ]
    return FileHistoryPublic(path=cleaned, task_id=task.public_id, items=items)


async def project_stats(
    resources: GatewayResources, principal: Principal, task_id: str, *, limit: int
) -> ProjectStatsPublic:
    """The reader's project in numbers (the task authorised for `read` fixes it; memories the reader may
    see only)."""
    task = await authorized_task(resources, principal, task_id, "read")
    keys = _readable_keys(resources, principal, task)
    await working.catch_up_project(resources.engine, org=task.org, project=task.project)
    async with resources.engine.connect() as conn:
        counts = await statements.project_counts(conn, org=task.org, project=task.project, scope_keys=keys)
        touched, hot = [
            await statements.file_stats(
                conn, org=task.org, project=task.project, scope_keys=keys, hot=by_failures, limit=limit
            )
            for by_failures in (False, True)
        ]
        errors = await statements.common_errors(conn, scope_keys=keys, limit=limit)
    decided = counts.succeeded + counts.failed
    return ProjectStatsPublic(
        org=task.org,
        project=task.project,
        tasks=counts.tasks,
        episodes=counts.episodes,
        success_rate=round(counts.succeeded / decided, 4) if decided else None,
        most_touched=[_file_stats(f) for f in touched],
        hotspots=[_file_stats(f) for f in hot if f.failed_tasks or f.error_touches],
        common_errors=[
            CommonErrorPublic(citation=e.citation, signature=e.signature, occurrences=e.occurrences)
            for e in errors
        ],
    )


def _file_stats(row: object) -> FileStatsPublic:
    """A file row as project readers see it: its path redacted as free text is. Paths are folded from every
    task's staging and tracked files, which only that task's readers may read raw; a secret written into a
    path must not reach the whole project."""
    stats = FileStatsPublic.model_validate(row, from_attributes=True)
    return stats.model_copy(update={"path": redact_free_text(stats.path) or stats.path})


def _readable_keys(resources: GatewayResources, principal: Principal, task: TaskInfo) -> list[str]:
    return [
        scope_key(s, org=task.org, project=task.project, worktree=task.worktree, task_id=task.id)
        for s in Scope
        if resources.authorizer.allowed(principal, org=task.org, project=task.project, scope=s, action="read")
    ]
