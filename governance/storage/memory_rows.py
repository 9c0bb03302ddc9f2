"""Rows of published memory: the types, citations, advisory locks and the insert every change uses.

Why changes to published memory look the way they do (docs/architecture.md, "Governance rules"):
- Parallel promotions must not leave two copies of one fact or two heads of one canonical key. Publishers
  take a transaction-scoped advisory lock: EXCLUSIVE on the target scope key, SHARED on the wider scope
  keys they may reinforce. Publishers into one scope are serialised; the partial unique index
  `memories_one_active_head` (and the unique `supersedes_id` index, which keeps chains linear) stay the
  last line of defence.
- Trust and usefulness change through single SQL statements (`confidence = LEAST(1, confidence + b)`),
  never read-modify-write in Python, so concurrent boosts add up. A principal's validation counts once per
  (memory, source), and its feedback is one vote (its latest), so neither can be spammed.
- Every function takes the caller's `AsyncConnection` and runs inside its transaction: the promotion
  publishes a whole plan atomically, and every change writes its `memory_events` row in the same
  transaction. An idempotency key makes a retried activity return the recorded outcome instead of writing
  twice; with a `request_hash`, the key is bound to one request (another is a Conflict).

The statements of publishing are in publish.py, of later changes in memory_changes.py; what composes them
is governance/operations/ (publishing, changes).
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import func, insert, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from governance.errors import Conflict, NotFound
from governance.scopes import SCOPE_LEVEL, Scope
from governance.storage.tables import memories
from governance.trust import MAX_CONFIDENCE, MIN_CONFIDENCE, UNREVIEWED_CEILING

__all__ = [
    "MemoryTenant",
    "merge_into",
    "MemoryInsert",
    "HeadDeprecation",
    "deprecate_heads",
    "insert_memories",
    "MergeInto",
    "merge_many",
    "deprecate_head",
    "resolve_memory_id",
    "NEIGHBOURS_K",
    "NewMemory",
    "PublishOutcome",
    "MemoryVersion",
    "make_citation",
    "wider_scope_keys",
    "lock_scopes",
    "replay_outcome",
    "insert_memory",
    "outcome_dict",
    "not_found_or_conflict",
    "scope_key_of",
]


@dataclass(frozen=True)
class MemoryTenant:
    """Who a memory belongs to: what an authorisation check needs."""

    id: str
    citation: str
    org: str
    project: str | None
    scope: str


NEIGHBOURS_K = 10


@dataclass
class NewMemory:
    """A candidate memory as the promotion planned it (embedding already computed)."""

    memory_type: str
    scope: str
    scope_key: str
    org: str
    title: str
    content: str
    confidence: float
    project: str | None = None
    canonical_key: str | None = None
    embedding: list[float] | None = None
    validation_source: str | None = None
    importance: float = 0.5
    reward: float | None = None
    success: bool | None = None
    source_task_ids: list[str] = field(default_factory=list)
    source_entry_ids: list[int] = field(default_factory=list)
    decay_policy: str = "stable"
    expires_at: datetime | None = None
    valid_from_commit: str | None = None


@dataclass
class PublishOutcome:
    """What publishing one candidate did; `replayed` when a previous attempt had already done it."""

    memory_id: str
    citation: str
    action: str  # "promoted" | "merged" | "superseded"
    superseded_id: str | None = None
    replayed: bool = False


@dataclass(frozen=True)
class MemoryVersion:
    """One link of a supersession chain."""

    id: str
    citation: str
    version: int
    title: str
    content: str
    canonical_key: str | None
    scope_key: str
    confidence: float
    supersedes_id: str | None
    deprecated_at: datetime | None
    valid_from_commit: str | None
    valid_to_commit: str | None
    contradiction_note: str | None
    created_at: datetime


def make_citation(memory_id: str) -> str:
    """A short citation: the first 10 base32 characters of the uuid (50 bits; unique index backs it)."""
    return base64.b32encode(uuid.UUID(memory_id).bytes).decode("ascii")[:10].lower()


def _scope_of(key: str) -> Scope | None:
    try:
        return Scope(key.split(":", 1)[0])
    except ValueError:
        return None


def wider_scope_keys(target_scope: str, visible_scope_keys: Sequence[str], target_key: str) -> list[str]:
    level = SCOPE_LEVEL[Scope(target_scope)]
    wider = []
    for key in visible_scope_keys:
        scope = _scope_of(key)
        if key != target_key and scope is not None and SCOPE_LEVEL[scope] > level:
            wider.append(key)
    return wider


async def lock_scopes(conn: AsyncConnection, exclusive: str, shared: Sequence[str] = ()) -> None:
    """Transaction-scoped advisory locks: shared on wider scopes (widest first), then the exclusive one."""
    for key in sorted(
        set(shared) - {exclusive}, key=lambda k: -SCOPE_LEVEL.get(_scope_of(k) or Scope.TASK, 0)
    ):
        await conn.execute(text("SELECT pg_advisory_xact_lock_shared(hashtextextended(:k, 0))"), {"k": key})
    await conn.execute(text("SELECT pg_advisory_xact_lock(hashtextextended(:k, 0))"), {"k": exclusive})


def replay_outcome(payload: dict[str, Any]) -> PublishOutcome:
    outcome = payload.get("outcome")
    if not isinstance(outcome, dict):
        raise Conflict("the idempotency key was used by a different kind of change")
    return PublishOutcome(
        memory_id=outcome["memory_id"],
        citation=outcome["citation"],
        action=outcome["action"],
        superseded_id=outcome.get("superseded_id"),
        replayed=True,
    )


async def insert_memory(
    conn: AsyncConnection,
    mem: NewMemory,
    *,
    memory_id: str,
    chash: str,
    supersedes_id: str | None,
    canonical_key: str | None,
    version: int,
    related_ids: Sequence[str],
) -> str:
    citation = make_citation(memory_id)
    confidence = min(MAX_CONFIDENCE, max(MIN_CONFIDENCE, mem.confidence))
    try:
        async with conn.begin_nested():
            await conn.execute(
                insert(memories).values(
                    id=memory_id,
                    citation=citation,
                    memory_type=mem.memory_type,
                    scope=mem.scope,
                    scope_key=mem.scope_key,
                    org=mem.org,
                    project=mem.project,
                    canonical_key=canonical_key,
                    title=mem.title,
                    content=mem.content,
                    embedding=mem.embedding,
                    content_hash=chash,
                    confidence=confidence,
                    base_confidence=confidence,
                    validation_source=mem.validation_source,
                    validation_count=1 if mem.validation_source else 0,
                    last_validated_at=func.now(),
                    decay_policy=mem.decay_policy,
                    importance=mem.importance,
                    reward=mem.reward,
                    success=mem.success,
                    source_task_ids=list(mem.source_task_ids),
                    source_entry_ids=list(mem.source_entry_ids),
                    related_ids=list(related_ids),
                    supersedes_id=supersedes_id,
                    valid_from_commit=mem.valid_from_commit,
                    expires_at=mem.expires_at,
                    version=version,
                )
            )
    except IntegrityError as exc:
        raise Conflict(f"an active memory with canonical key {canonical_key!r} already exists") from exc
    return citation


@dataclass(frozen=True)
class MemoryInsert:
    """One row of `insert_memories`: what `insert_memory` takes for one memory."""

    mem: NewMemory
    memory_id: str
    chash: str
    supersedes_id: str | None
    canonical_key: str | None
    version: int
    related_ids: Sequence[str]
    # written deprecated already: superseded later in the same chunk (why, and the commit it ended at)
    deprecated_note: str | None = None
    valid_to_commit: str | None = None


async def insert_memories(conn: AsyncConnection, rows: Sequence[MemoryInsert]) -> list[str]:
    """Insert many memories in one statement (the full-text lexicon's triggers run once for all of them);
    their citations, in order. A canonical-key head that exists already is a Conflict, as for one."""
    if not rows:
        return []
    values = []
    for r in rows:
        mem = r.mem
        confidence = min(MAX_CONFIDENCE, max(MIN_CONFIDENCE, mem.confidence))
        values.append(
            {
                "id": r.memory_id,
                "citation": make_citation(r.memory_id),
                "memory_type": mem.memory_type,
                "scope": mem.scope,
                "scope_key": mem.scope_key,
                "org": mem.org,
                "project": mem.project,
                "canonical_key": r.canonical_key,
                "title": mem.title,
                "content": mem.content,
                "embedding": mem.embedding,
                "content_hash": r.chash,
                "confidence": confidence,
                "base_confidence": confidence,
                "validation_source": mem.validation_source,
                "validation_count": 1 if mem.validation_source else 0,
                "last_validated_at": func.now(),
                "decay_policy": mem.decay_policy,
                "importance": mem.importance,
                "reward": mem.reward,
                "success": mem.success,
                "source_task_ids": list(mem.source_task_ids),
                "source_entry_ids": list(mem.source_entry_ids),
                "related_ids": list(r.related_ids),
                "supersedes_id": r.supersedes_id,
                "valid_from_commit": mem.valid_from_commit,
                "expires_at": mem.expires_at,
                "version": r.version,
                "deprecated_at": func.now() if r.deprecated_note is not None else None,
                "contradiction_note": r.deprecated_note,
                "valid_to_commit": r.valid_to_commit,
            }
        )
    try:
        async with conn.begin_nested():
            await conn.execute(insert(memories).values(values))
    except IntegrityError as exc:
        raise Conflict("an active memory with one of these canonical keys already exists") from exc
    return [str(v["citation"]) for v in values]


@dataclass(frozen=True)
class MergeInto:
    """`times` duplicates merged into one active memory at once (`merge_many`)."""

    target_id: str
    times: int
    source_task_ids: Sequence[str]
    source_entry_ids: Sequence[int]
    approved: bool = False


async def merge_many(
    conn: AsyncConnection, merges: Sequence[MergeInto], *, boost: float
) -> dict[str, tuple[str, float]]:
    """`merge_into` for many targets in one statement, each `times` over: the boost applied `times` times
    (which, within the same bounds, is the boost times `times` up to the same ceiling), the sources united.
    Answers target id -> (citation, new confidence) for the targets still active."""
    if not merges:
        return {}
    rows = await conn.execute(
        text(
            """
            WITH m AS (
                SELECT * FROM jsonb_to_recordset(CAST(:merges AS jsonb))
                    AS m(id uuid, times int, tasks text[], entries bigint[], approved boolean)
            )
            UPDATE memories SET
                confidence = LEAST(:max, GREATEST(:min, memories.confidence + :boost * m.times),
                                   CASE WHEN m.approved OR memories.validation_source = 'human_approved'
                                        THEN :max ELSE GREATEST(memories.confidence, :ceiling) END),
                base_confidence = LEAST(:max, GREATEST(:min, memories.confidence + :boost * m.times),
                                        CASE WHEN m.approved OR memories.validation_source = 'human_approved'
                                             THEN :max ELSE GREATEST(memories.confidence, :ceiling) END),
                validation_source = CASE WHEN memories.validation_source = 'human_approved'
                                         THEN memories.validation_source ELSE 'repeated_success' END,
                validation_count = memories.validation_count + m.times,
                last_validated_at = now(),
                source_task_ids = ARRAY(SELECT DISTINCT unnest(memories.source_task_ids || m.tasks)
                                        ORDER BY 1),
                source_entry_ids = ARRAY(SELECT DISTINCT unnest(memories.source_entry_ids || m.entries)
                                         ORDER BY 1),
                updated_at = now()
            FROM m
            WHERE memories.id = m.id AND memories.deprecated_at IS NULL
            RETURNING memories.id::text AS id, memories.citation, memories.confidence
            """
        ),
        {
            "merges": json.dumps(
                [
                    {
                        "id": m.target_id,
                        "times": m.times,
                        "tasks": sorted(set(m.source_task_ids)),
                        "entries": sorted(set(m.source_entry_ids)),
                        "approved": m.approved,
                    }
                    for m in merges
                ]
            ),
            "boost": boost,
            "max": MAX_CONFIDENCE,
            "min": MIN_CONFIDENCE,
            "ceiling": UNREVIEWED_CEILING,
        },
    )
    return {r.id: (r.citation, float(r.confidence)) for r in rows}


def outcome_dict(outcome: PublishOutcome) -> dict[str, Any]:
    return {
        "memory_id": outcome.memory_id,
        "citation": outcome.citation,
        "action": outcome.action,
        "superseded_id": outcome.superseded_id,
    }


async def not_found_or_conflict(conn: AsyncConnection, memory_id: str, what: str) -> Exception:
    row = (
        await conn.execute(
            text("SELECT deprecated_at FROM memories WHERE id = CAST(:id AS uuid)"), {"id": memory_id}
        )
    ).first()
    if row is None:
        return NotFound(f"memory {memory_id} not found")
    return Conflict(f"memory {memory_id} is deprecated; {what} applies to the head of its chain")


async def scope_key_of(conn: AsyncConnection, memory_id: str) -> str:
    row = (
        await conn.execute(
            text("SELECT scope_key FROM memories WHERE id = CAST(:id AS uuid)"), {"id": memory_id}
        )
    ).first()
    if row is None:
        raise NotFound(f"memory {memory_id} not found")
    return str(row.scope_key)


async def resolve_memory_id(conn: AsyncConnection, ref: str) -> str:
    """The uuid of a memory named by uuid or citation (`abc123`, `mem:abc123` or `[mem:abc123]`, as a context
    block cites it, the forms `GET /v1/memories/{ref}` reads); NotFound otherwise."""
    value = ref.strip()
    if value.startswith("[") and value.endswith("]"):
        value = value[1:-1]
    if value.lower().startswith("mem:"):
        value = value[4:]
    try:
        as_uuid: str | None = str(uuid.UUID(value))
    except ValueError:
        as_uuid = None
    row = (
        await conn.execute(
            text("SELECT id::text AS id FROM memories WHERE id = CAST(:u AS uuid) OR citation = :c"),
            {"u": as_uuid, "c": value.lower()},
        )
    ).first()
    if row is None:
        raise NotFound(f"memory {ref!r} does not exist")
    return str(row.id)


async def merge_into(
    conn: AsyncConnection,
    target_id: str,
    *,
    boost: float,
    source_task_ids: Sequence[str],
    source_entry_ids: Sequence[int],
    approved: bool = False,
) -> Any:
    """Merge a duplicate into its active target: boost its trust (within bounds), union the sources.

    A recurrence is the gate's own evidence: past the unreviewed ceiling only with a human's approval (of
    this plan: `approved`, or of the memory before: `human_approved` is kept). Answers the target's citation
    and new confidence, or None where it was deprecated meanwhile.
    """
    row = (
        await conn.execute(
            text(
                """
                UPDATE memories SET
                    confidence = LEAST(:max, GREATEST(:min, confidence + :boost),
                                       CASE WHEN :approved OR validation_source = 'human_approved'
                                            THEN :max ELSE GREATEST(confidence, :ceiling) END),
                    base_confidence = LEAST(:max, GREATEST(:min, confidence + :boost),
                                            CASE WHEN :approved OR validation_source = 'human_approved'
                                                 THEN :max ELSE GREATEST(confidence, :ceiling) END),
                    validation_source = CASE WHEN validation_source = 'human_approved'
                                             THEN validation_source ELSE 'repeated_success' END,
                    validation_count = validation_count + 1,
                    last_validated_at = now(),
                    source_task_ids = ARRAY(SELECT DISTINCT unnest(source_task_ids || CAST(:tasks AS text[]))
                                            ORDER BY 1),
                    source_entry_ids = ARRAY(SELECT DISTINCT unnest(source_entry_ids || CAST(:entries AS
                        bigint[]))
                                             ORDER BY 1),
                    updated_at = now()
                WHERE id = CAST(:id AS uuid) AND deprecated_at IS NULL
                RETURNING citation, confidence
                """
            ),
            {
                "id": target_id,
                "boost": boost,
                "max": MAX_CONFIDENCE,
                "min": MIN_CONFIDENCE,
                "tasks": list(source_task_ids),
                "entries": list(source_entry_ids),
                "approved": approved,
                "ceiling": UNREVIEWED_CEILING,
            },
        )
    ).first()
    return row


@dataclass(frozen=True)
class HeadDeprecation:
    """One head `deprecate_heads` deprecates: why, and the commit it ends at."""

    memory_id: str
    note: str
    valid_to_commit: str | None


async def deprecate_heads(conn: AsyncConnection, heads: Sequence[HeadDeprecation]) -> dict[str, Any]:
    """`deprecate_head` for many in one statement: the rows (as they were) of those still active, by id."""
    if not heads:
        return {}
    rows = await conn.execute(
        text(
            """
            WITH h AS (
                SELECT * FROM jsonb_to_recordset(CAST(:heads AS jsonb)) AS h(id uuid, note text, commit text)
            )
            UPDATE memories SET deprecated_at = now(), valid_to_commit = h.commit,
                   contradiction_note = h.note, updated_at = now()
            FROM h
            WHERE memories.id = h.id AND memories.deprecated_at IS NULL
            RETURNING memories.id::text AS id, memories.version, memories.canonical_key, memories.citation
            """
        ),
        {
            "heads": json.dumps(
                [{"id": h.memory_id, "note": h.note, "commit": h.valid_to_commit} for h in heads]
            )
        },
    )
    return {r.id: r for r in rows}


async def deprecate_head(
    conn: AsyncConnection, old_id: str, *, note: str, valid_to_commit: str | None
) -> Any:
    """Deprecate an active head, noting why (None where it is no longer one): its row as it was."""
    return (
        await conn.execute(
            text(
                """
                UPDATE memories SET deprecated_at = now(), valid_to_commit = :commit,
                       contradiction_note = :note, updated_at = now()
                WHERE id = CAST(:id AS uuid) AND deprecated_at IS NULL
                RETURNING *
                """
            ),
            {"id": old_id, "commit": valid_to_commit, "note": note},
        )
    ).first()
