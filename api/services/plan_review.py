"""A promotion's plan as an approver reads it: what each item changes, without looking up an id.

Every plan page the API, the CLI and the console show goes through `reviewed_entries`: a `supersede` or a
`duplicate` comes with the published memory it replaces or merges into (content, citation, trust, who
published it and who approved it then) and a word diff from that content to the new one
(governance/word_diff.py); a `new` item comes with the nearest active memories at the target scope.

What is shown of a published memory is what `GET /v1/memories/{id}` would show this caller: its published
content (redacted when it was promoted: `<private>` spans and secrets never reach published memory), and
nothing at all of a memory the caller may not read (`target_withheld`, nearest memories left out), the same
Casbin verdict `authorize_memory` gives.
"""

from __future__ import annotations

from collections.abc import Sequence

from api.schemas.promotions import DiffOpPublic, NearestPublic, PlanEntryPublic
from api.services.gateway import GatewayResources
from governance.identity import Principal, judged_project
from governance.scopes import Scope, scope_key
from governance.storage.plan_review import nearest_memories, published_targets
from governance.storage.plans import PlanItemForReview, PlanKey
from governance.storage.staging import TaskInfo
from governance.word_diff import word_diff, word_diff_text

__all__ = ["reviewed_entries", "target_scope_key"]

_CHANGES = ("supersede", "duplicate")


def target_scope_key(task: TaskInfo, target_scope: str | None) -> str | None:
    """The scope key the task's promotion publishes into (None when the target scope is unknown)."""
    if target_scope not in {s.value for s in Scope}:
        return None
    return scope_key(
        Scope(target_scope), org=task.org, project=task.project, worktree=task.worktree, task_id=task.id
    )


def _may_read(
    resources: GatewayResources, principal: Principal, org: str, project: str | None, scope: str
) -> bool:
    return resources.authorizer.allowed(
        principal, org=org, project=judged_project(principal, org, project), scope=scope, action="read"
    )


def _plain(row: PlanItemForReview) -> PlanEntryPublic:
    return PlanEntryPublic(
        index=row.idx,
        memory_type=row.memory_type,
        title=row.title,
        content=row.content,
        canonical_key=row.canonical_key,
        decision=row.decision,
        target_id=row.target_id,
        similarity=row.similarity,
        reason=row.reason,
        target_title=row.target_title,
        target_content=row.target_content,
        quarantine=row.quarantine,
    )


async def reviewed_entries(
    resources: GatewayResources,
    principal: Principal,
    key: PlanKey,
    rows: Sequence[PlanItemForReview],
    scope_key_: str | None,
) -> list[PlanEntryPublic]:
    """`rows` as public plan entries with targets, diffs and nearest memories, as `principal` may see."""
    targets_wanted = [r.target_id for r in rows if r.decision in _CHANGES and r.target_id]
    new_items = [r.idx for r in rows if r.decision == "new"]
    async with resources.engine.connect() as conn:
        targets = await published_targets(conn, targets_wanted)
        nearest = await nearest_memories(conn, key, new_items, scope_key_) if scope_key_ is not None else {}
    entries: list[PlanEntryPublic] = []
    for row in rows:
        entry = _plain(row)
        target = targets.get(row.target_id or "") if row.decision in _CHANGES else None
        if target is not None and not _may_read(
            resources, principal, target.org, target.project, target.scope
        ):
            entry.target_title = entry.target_content = None
            entry.target_withheld = True
        elif target is not None:
            ops = word_diff(target.content, row.content)
            entry.target_title, entry.target_content = target.title, target.content
            entry.target_citation = target.citation
            entry.target_trust = target.confidence
            entry.target_validation_count = target.validation_count
            entry.target_published_by = target.published_by
            entry.target_approved_by = target.approved_by
            entry.target_approved_at = target.approved_at
            entry.diff = [DiffOpPublic(op=o.op.value, text=o.text) for o in ops]
            entry.diff_text = word_diff_text(ops)
        entry.nearest = [
            NearestPublic(
                id=n.id, citation=n.citation, title=n.title, similarity=n.similarity, trust=n.confidence
            )
            for n in nearest.get(row.idx, [])
            if _may_read(resources, principal, n.org, n.project, n.scope)
        ]
        entries.append(entry)
    return entries
