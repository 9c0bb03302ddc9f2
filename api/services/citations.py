"""Citation counts: which tasks used which memories, who used them, and which memories are used most.

A use is recorded when a task's staging entry cites `[mem:<citation>]` (counted after the append, like a
retrieval: a failure is logged, never fails the append) or when a caller declares it
(`POST /v1/tasks/{task_id}/citations`). A citation counts only for a memory the citing principal may read
from that task; others are ignored (in the explicit call, listed `unknown`, exactly as a citation nobody
holds). Each use records whether the citing principal is independent of the memory (not one of its
authors or publishers): only independent principals feed ranking, each once (`governance/ranking.py`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from api.schemas.citations import (
    CitationCounted,
    CitationsAck,
    CitationsIn,
    MostUsedItem,
    MostUsedPublic,
    TaskUsePublic,
    UsedByPublic,
)
from api.schemas.staging import EntryAck
from api.services.gateway import GatewayResources, authorize_memory, readable_scope_keys
from api.services.metrics import CITATIONS_COUNTED
from governance.identity import Principal
from governance.live import cited_citations
from governance.operations.trust import involved
from governance.scopes import Scope, scope_key
from governance.staging import EntryDraft, public_task_id
from governance.storage import citations
from governance.storage.memory_changes import memory_tenant
from governance.storage.retrieval import parse_memory_ref
from governance.storage.staging import TaskInfo

__all__ = ["count_entry_citations", "record_citations", "used_by", "most_used"]

_log = logging.getLogger("loregate.citations")
USED_BY_LIMIT = 100


def _citing_scope_keys(resources: GatewayResources, principal: Principal, task: TaskInfo) -> list[str]:
    """The scopes whose memories the principal may read from this task (what it could have cited)."""
    return [
        scope_key(s, org=task.org, project=task.project, worktree=task.worktree, task_id=task.id)
        for s in Scope
        if resources.authorizer.allowed(principal, org=task.org, project=task.project, scope=s, action="read")
    ]


async def _count(
    resources: GatewayResources,
    principal: Principal,
    task: TaskInfo,
    refs: Sequence[tuple[int | None, Sequence[str]]],
) -> tuple[list[CitationCounted], list[str]]:
    """Record the uses of (entry id or None, citations) pairs in one transaction; (counted, unknown)."""
    wanted = list(dict.fromkeys(c for _, cited in refs for c in cited))
    keys = _citing_scope_keys(resources, principal, task)
    counted: list[CitationCounted] = []
    async with resources.engine.begin() as conn:
        found = {m.citation: m for m in await citations.resolve_citations(conn, wanted, keys)}
        independent = {m.id: not await involved(conn, principal.id, m.id) for m in found.values()}
        for entry_id, cited in refs:
            for citation in cited:
                memory = found.get(citation)
                if memory is None:
                    continue
                new = await citations.record_uses(
                    conn,
                    [
                        citations.UseRow(
                            memory_id=memory.id,
                            task_id=task.id,
                            entry_id=entry_id,
                            actor_id=principal.id,
                            actor_type=principal.actor_type.value,
                            independent=independent[memory.id],
                        )
                    ],
                )
                CITATIONS_COUNTED.labels(str(independent[memory.id]).lower()).inc(new)
                counted.append(
                    CitationCounted(citation=citation, independent=independent[memory.id], new=new > 0)
                )
    return counted, [c for c in wanted if c not in found]


async def count_entry_citations(
    resources: GatewayResources,
    principal: Principal,
    task: TaskInfo,
    drafts: Sequence[EntryDraft],
    acks: Sequence[EntryAck],
) -> None:
    """Count the `[mem:…]` citations of an appended batch (idempotent per entry; never fails the append)."""
    refs = [
        (ack.id, cited)
        for draft, ack in zip(drafts, acks, strict=True)
        if "[mem:" in draft.content and (cited := cited_citations(draft.content))
    ]
    if not refs:
        return
    try:
        await _count(resources, principal, task, refs)
    except Exception:  # the entries are durable; a replay of the batch counts them again
        _log.warning("could not count the citations of task %s", task.id, exc_info=True)


async def record_citations(
    resources: GatewayResources, principal: Principal, task: TaskInfo, body: CitationsIn
) -> CitationsAck:
    """Declare that a task (authorised for `write`) used these memories; once per task, caller and memory."""
    wanted = list(dict.fromkeys(parse_memory_ref(c)[1].lower() for c in body.citations))
    counted, unknown = await _count(resources, principal, task, [(None, wanted)])
    return CitationsAck(task_id=task.public_id, counted=counted, unknown=unknown)


async def used_by(resources: GatewayResources, principal: Principal, ref: str) -> UsedByPublic:
    """The tasks that used a memory the caller may read; tasks the caller may not read are only counted."""
    async with resources.engine.connect() as conn:
        memory = await memory_tenant(conn, ref)
    authorize_memory(
        resources, principal, ref, org=memory.org, project=memory.project, scope=memory.scope, action="read"
    )
    async with resources.engine.connect() as conn:
        uses, total = await citations.used_by(conn, memory.id, limit=USED_BY_LIMIT)
    shown = [
        TaskUsePublic(
            task_id=public_task_id(u.task_id),
            uses=u.uses,
            agents=list(u.actors),
            independent=u.independent,
            first_at=u.first_at,
            last_at=u.last_at,
        )
        for u in uses
        if resources.authorizer.allowed(
            principal, org=u.org, project=u.project, scope=Scope.TASK, action="read"
        )
    ]
    return UsedByPublic(
        citation=memory.citation, tasks=shown, total_tasks=total, hidden_tasks=total - len(shown)
    )


async def most_used(
    resources: GatewayResources, principal: Principal, task_id: str, limit: int
) -> MostUsedPublic:
    """The memories a task sees, most used by independent principals first."""
    keys = await readable_scope_keys(resources, principal, task_id)
    async with resources.engine.connect() as conn:
        rows = await citations.most_used(conn, keys, limit=min(limit, resources.settings.max_page_size))
    return MostUsedPublic(
        task_id=task_id,
        results=[
            MostUsedItem(
                citation=r.citation,
                type=r.memory_type,
                title=r.title,
                scope=r.scope,
                tasks=r.tasks,
                independent_tasks=r.independent_tasks,
                independent_principals=r.independent_principals,
                uses=r.uses,
            )
            for r in rows
        ],
    )
