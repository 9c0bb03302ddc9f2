"""Lifts of published memory to a wider scope: the memories a lift names, its items, and applying it.

A lift is a change request (`operation = 'lift'`, governance/storage/change_requests.py) whose memories are
its `change_request_items`, in order, each with its title at request time (the workflow shows titles only).
`apply_lift` runs in the caller's transaction, for the workflow once a lift is approved and for the gateway
when none is needed (one apply path):

1. lock the target scope (exclusive; the wider ones shared) and then the originals' scopes (exclusive),
   widest first like every publisher, so concurrent lifts, promotions and supersessions queue instead of
   racing, and two lifts of one memory never publish two heads for one fact;
2. re-check every original is still active (else nothing is applied: the request ends `conflict`);
3. publish each copy through `publish_candidate` (dedup, supersession of the target's head for the same
   canonical key); link a new copy to its original and to what the original builds on
   (`memory_derivations`), so it goes stale with them (a stale mark stays); a bug pattern's copy takes over
   its occurrences and fix statistics (one merged into a pattern already there counts as one more
   occurrence); move the links of what was derived from the original to what it became; mark the original
   lifted (deprecated, a note naming the copy) and write a LIFTED event at both memories.

Every write is keyed by the request (`lift:<request>:<position>`), so a retried activity changes nothing.
See governance/lifting.py for the rules (targets, trust, what the copy carries).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import insert, select, text, update
from sqlalchemy.ext.asyncio import AsyncConnection

from governance.changes import ChangeTrust
from governance.errors import NotFound
from governance.lifting import LiftOutcome, lifted_text, lifted_trust
from governance.scopes import SCOPE_LEVEL, Scope
from governance.storage.derivations import record_derivations
from governance.storage.events import EventType, record_event
from governance.storage.memory_changes import MemoryTenant, resolve_memory_id
from governance.storage.memory_rows import NewMemory, lock_scopes
from governance.storage.publish import lock_for_publication, publish_candidate
from governance.storage.tables import change_request_items, memories

__all__ = [
    "lift_source_tenants",
    "LiftRules",
    "LiftSource",
    "LiftItem",
    "LiftApplied",
    "lift_sources",
    "add_lift_items",
    "lift_items",
    "line_above",
    "apply_lift",
]


@dataclass(frozen=True)
class LiftRules:
    """The dedup thresholds a lift's publish uses (the promotion's, from settings)."""

    dup_threshold: float
    related_threshold: float


@dataclass(frozen=True)
class LiftSource:
    """A memory a caller asks to lift, with what the checks need (its place and whether it is active)."""

    id: str
    citation: str
    org: str
    project: str | None
    scope: str
    scope_key: str
    title: str
    active: bool
    worktree: str | None
    task_id: str | None


@dataclass(frozen=True)
class LiftItem:
    """One memory of a lift: its title at request time, and once applied its outcome and result."""

    position: int
    memory_id: str
    citation: str | None
    title: str
    outcome: str | None
    result_memory_id: str | None
    result_citation: str | None


@dataclass(frozen=True)
class LiftApplied:
    """`applied` with the items' outcomes, or `conflict` (nothing changed) with the reason."""

    state: str
    reason: str
    items: list[LiftItem]


async def lift_sources(conn: AsyncConnection, refs: Sequence[str]) -> list[LiftSource]:
    """The memories named by uuid or citation (`mem:` mark or not), in order; NotFound for the first unknown.

    A task memory's worktree is its task's; a worktree memory's is the last part of its scope key.
    """
    found: list[LiftSource] = []
    for ref in refs:
        memory_id = await resolve_memory_id(conn, ref.removeprefix("mem:"))
        row = (
            await conn.execute(
                text(
                    """
                    SELECT m.id::text AS id, m.citation, m.org, m.project, m.scope, m.scope_key, m.title,
                           (m.deprecated_at IS NULL AND (m.expires_at IS NULL OR m.expires_at > now()))
                               AS active,
                           t.id AS task_id, t.worktree AS task_worktree
                    FROM memories m LEFT JOIN tasks t ON m.scope = 'task' AND m.scope_key = 'task:' || t.id
                    WHERE m.id = CAST(:id AS uuid)
                    """
                ),
                {"id": memory_id},
            )
        ).first()
        if row is None:
            raise NotFound(f"memory {ref!r} does not exist")
        worktree: str | None = row.task_worktree
        if row.scope == Scope.WORKTREE:
            worktree = row.scope_key.removeprefix(f"worktree:{row.org}/{row.project}/")
        found.append(
            LiftSource(
                id=row.id,
                citation=row.citation,
                org=row.org,
                project=row.project,
                scope=row.scope,
                scope_key=row.scope_key,
                title=row.title,
                active=bool(row.active),
                worktree=worktree,
                task_id=row.task_id,
            )
        )
    return found


async def add_lift_items(conn: AsyncConnection, request_id: str, sources: Sequence[LiftSource]) -> None:
    """The lift's memories, in the order asked."""
    await conn.execute(
        insert(change_request_items),
        [
            {"request_id": request_id, "position": i, "memory_id": s.id, "title": s.title[:500]}
            for i, s in enumerate(sources)
        ],
    )


async def lift_items(conn: AsyncConnection, request_id: str) -> list[LiftItem]:
    """A lift's memories in order, with their citations and, once applied, outcomes."""
    rows = await conn.execute(
        text(
            """
            SELECT i.position, i.memory_id::text AS memory_id, o.citation, i.title, i.outcome,
                   i.result_memory_id::text AS result_memory_id, r.citation AS result_citation
            FROM change_request_items i
            LEFT JOIN memories o ON o.id = i.memory_id
            LEFT JOIN memories r ON r.id = i.result_memory_id
            WHERE i.request_id = CAST(:r AS uuid)
            ORDER BY i.position
            """
        ),
        {"r": request_id},
    )
    return [
        LiftItem(
            r.position, r.memory_id, r.citation, r.title, r.outcome, r.result_memory_id, r.result_citation
        )
        for r in rows
    ]


async def lift_source_tenants(
    conn: AsyncConnection, request_ids: Sequence[str]
) -> dict[str, list[MemoryTenant]]:
    """The tenant and scope of every source memory of each lift request (erased ones are gone: left out).

    What a lift's visibility and its approver are judged on (governance/lifting.py `lift_refusal`): a lift
    request shows its sources' content, so only a reader of every source may see it.
    """
    found: dict[str, list[MemoryTenant]] = {r: [] for r in request_ids}
    if not request_ids:
        return found
    rows = await conn.execute(
        text(
            """
            SELECT i.request_id::text AS request_id, m.id::text AS id, m.citation, m.org, m.project, m.scope
            FROM change_request_items i JOIN memories m ON m.id = i.memory_id
            WHERE i.request_id = ANY(CAST(:r AS uuid[]))
            ORDER BY i.request_id, i.position
            """
        ),
        {"r": list(request_ids)},
    )
    for r in rows:
        found[r.request_id].append(MemoryTenant(r.id, r.citation, r.org, r.project, r.scope))
    return found


def line_above(target_scope: str, org: str, project: str | None) -> list[str]:
    """The scope keys wider than a lift's target (what its dedup also looks at, and locks shared)."""
    level = SCOPE_LEVEL[Scope(target_scope)]
    keys = []
    if level < SCOPE_LEVEL[Scope.PROJECT] and project:
        keys.append(f"project:{org}/{project}")
    if level < SCOPE_LEVEL[Scope.ORG]:
        keys.append(f"org:{org}")
    return keys


_OUTCOME = {
    "promoted": LiftOutcome.LIFTED,
    "merged": LiftOutcome.DUPLICATE,
    "superseded": LiftOutcome.SUPERSEDED,
}


def _level(key: str) -> int:
    return SCOPE_LEVEL[Scope(key.split(":", 1)[0])]


async def apply_lift(
    conn: AsyncConnection,
    request_id: str,
    *,
    target_scope: str,
    target_scope_key: str,
    org: str,
    project: str | None,
    actor_id: str,
    actor_type: str,
    reason: str,
    approval: ChangeTrust | None,
    workflow_id: str | None,
    rules: LiftRules,
) -> LiftApplied:
    """Publish the lift's copies at the target scope and mark the originals lifted (module docstring).

    `project` is the target's (None at org scope); `approval` says whose word stands behind the copies
    (None: no approval was needed, the copies keep the originals' trust).
    """
    items = await lift_items(conn, request_id)
    wider = line_above(target_scope, org, project)
    await lock_for_publication(conn, target_scope, target_scope_key, [target_scope_key, *wider])
    originals = await _originals(conn, [i.memory_id for i in items])
    for key in sorted({o.scope_key for o in originals.values()}, key=lambda k: (-_level(k), k)):
        await lock_scopes(conn, key)
    originals = await _originals(conn, [i.memory_id for i in items], lock=True)
    gone = [i for i in items if i.memory_id not in originals or not originals[i.memory_id].active]
    if gone:
        first = gone[0]
        return LiftApplied(
            "conflict",
            f"memory {first.citation or first.memory_id} ({first.title}) is no longer active (lifted, "
            "superseded, retired or expired meanwhile): nothing was lifted",
            items,
        )
    done: list[LiftItem] = []
    for item in items:
        done.append(
            await _lift_one(
                conn,
                request_id,
                item,
                originals[item.memory_id],
                target_scope=target_scope,
                target_scope_key=target_scope_key,
                visible=[target_scope_key, *wider],
                project=project,
                actor_id=actor_id,
                actor_type=actor_type,
                reason=reason,
                approval=approval,
                workflow_id=workflow_id,
                rules=rules,
            )
        )
    return LiftApplied("applied", reason, done)


async def _carry_sources(conn: AsyncConnection, original_id: str, copy_id: str) -> None:
    """The copy builds on what its original built on (so it goes stale with them), and keeps a stale mark."""
    await conn.execute(
        text(
            """
            INSERT INTO memory_derivations (memory_id, derived_from_id, task_id)
            SELECT CAST(:copy AS uuid), derived_from_id, task_id FROM memory_derivations
            WHERE memory_id = CAST(:original AS uuid) AND derived_from_id <> CAST(:copy AS uuid)
            ON CONFLICT DO NOTHING
            """
        ),
        {"copy": copy_id, "original": original_id},
    )
    await conn.execute(
        text(
            """
            UPDATE memories c SET stale_at = o.stale_at, stale_reason = o.stale_reason
            FROM memories o
            WHERE c.id = CAST(:copy AS uuid) AND o.id = CAST(:original AS uuid) AND o.stale_at IS NOT NULL
            """
        ),
        {"copy": copy_id, "original": original_id},
    )


async def _carry_bug_statistics(conn: AsyncConnection, original_id: str, copy_id: str) -> None:
    """A lifted bug pattern keeps its history: occurrences, first and last seen, fixes with their stats.

    (The publish counted the lift as one new occurrence; the original's record replaces that count.)
    """
    await conn.execute(
        text(
            """
            UPDATE bug_patterns c SET occurrences = o.occurrences, first_seen = o.first_seen,
                   last_seen = o.last_seen, solutions = o.solutions
            FROM bug_patterns o
            WHERE c.memory_id = CAST(:copy AS uuid) AND o.memory_id = CAST(:original AS uuid)
            """
        ),
        {"copy": copy_id, "original": original_id},
    )


@dataclass(frozen=True)
class _Original:
    row: Any

    @property
    def active(self) -> bool:
        return bool(self.row.active)

    @property
    def scope_key(self) -> str:
        return str(self.row.scope_key)


async def _originals(
    conn: AsyncConnection, ids: Sequence[str], *, lock: bool = False
) -> dict[str, _Original]:
    active = (memories.c.deprecated_at.is_(None)) & (
        memories.c.expires_at.is_(None) | (memories.c.expires_at > text("now()"))
    )
    query = select(memories, active.label("active")).where(memories.c.id.in_(list(ids)))
    rows = await conn.execute(query.with_for_update(of=memories) if lock else query)
    return {str(r.id): _Original(r) for r in rows}


async def _lift_one(
    conn: AsyncConnection,
    request_id: str,
    item: LiftItem,
    original: _Original,
    *,
    target_scope: str,
    target_scope_key: str,
    visible: list[str],
    project: str | None,
    actor_id: str,
    actor_type: str,
    reason: str,
    approval: ChangeTrust | None,
    workflow_id: str | None,
    rules: LiftRules,
) -> LiftItem:
    row = original.row
    copy_text = lifted_text(row.title, row.content)
    confidence, source = lifted_trust(float(row.confidence), row.validation_source, approval)
    mem = NewMemory(
        memory_type=row.memory_type,
        scope=target_scope,
        scope_key=target_scope_key,
        org=row.org,
        project=project,
        title=copy_text.title,
        content=copy_text.content,
        confidence=confidence,
        canonical_key=row.canonical_key,
        # the same text (redaction of published text changes nothing unless its rules grew)
        embedding=list(row.embedding) if row.embedding is not None else None,
        validation_source=source,
        importance=float(row.importance),
        reward=row.reward,
        success=row.success,
        source_task_ids=list(row.source_task_ids or []),
        source_entry_ids=list(row.source_entry_ids or []),
        decay_policy=row.decay_policy,
        expires_at=row.expires_at,
        valid_from_commit=row.valid_from_commit,
    )
    key = f"lift:{request_id}:{item.position}"
    published = await publish_candidate(
        conn,
        mem,
        visible_scope_keys=visible,
        actor_id=actor_id,
        actor_type=actor_type,
        task_id=None,
        workflow_id=workflow_id,
        dedupe_key=key,
        dup_threshold=rules.dup_threshold,
        related_threshold=rules.related_threshold,
        locked=True,
    )
    outcome = _OUTCOME[published.action]
    original_id, result_id = str(row.id), published.memory_id
    if outcome is not LiftOutcome.DUPLICATE:  # a new memory: it comes from the original
        await record_derivations(conn, [(result_id, original_id)], task_id=None)
        await _carry_sources(conn, original_id, result_id)
        await _carry_bug_statistics(conn, original_id, result_id)
    # what built on the original builds on what it became (no stale mark: the knowledge did not change)
    await conn.execute(
        text(
            """
            INSERT INTO memory_derivations (memory_id, derived_from_id, task_id)
            SELECT memory_id, CAST(:result AS uuid), task_id FROM memory_derivations
            WHERE derived_from_id = CAST(:original AS uuid) AND memory_id <> CAST(:result AS uuid)
            ON CONFLICT DO NOTHING
            """
        ),
        {"original": original_id, "result": result_id},
    )
    note = f"lifted to {target_scope_key} as mem:{published.citation} ({outcome.value})"
    await conn.execute(
        update(memories)
        .where(memories.c.id == original_id, memories.c.deprecated_at.is_(None))
        .values(deprecated_at=text("now()"), contradiction_note=note, updated_at=text("now()"))
    )
    common: dict[str, Any] = {"actor_id": actor_id, "actor_type": actor_type, "workflow_id": workflow_id}
    payload = {
        "change_request": request_id,
        "outcome": outcome.value,
        "from": original_id,
        "from_citation": row.citation,
        "from_scope_key": row.scope_key,
        "to": result_id,
        "to_citation": published.citation,
        "to_scope_key": target_scope_key,
    }
    await record_event(
        conn,
        memory_id=original_id,
        event_type=EventType.LIFTED,
        reason=reason,
        payload=payload,
        dedupe_key=f"{key}:from",
        **common,
    )
    await record_event(
        conn,
        memory_id=result_id,
        event_type=EventType.LIFTED,
        reason=reason,
        payload=payload,
        dedupe_key=f"{key}:to",
        **common,
    )
    await conn.execute(
        update(change_request_items)
        .where(
            change_request_items.c.request_id == request_id,
            change_request_items.c.position == item.position,
        )
        .values(outcome=outcome.value, result_memory_id=result_id)
    )
    return LiftItem(
        item.position, item.memory_id, item.citation, item.title, outcome.value, result_id, published.citation
    )
