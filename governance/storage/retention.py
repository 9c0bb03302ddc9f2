"""The nightly retention's writes: decay trust, expire, prune — set-based statements, each row with its event.

Decay recomputes `confidence` from `base_confidence` (the value at the last validation) and the whole days
since `last_validated_at`, so a second run on the same day changes nothing and writes no event. Every
statement can be limited to some orgs (a tenant's own run, and tests that share one database).

Pruning: `load_retention_rows` reads what the rules of governance/retention.py need (votes, retrievals,
usefulness, what derives from each memory, open change requests; never content), a page of rows per
statement; `active_group_counts` says how many active memories a group holds now (migration 0010's
index); `lock_prune_scopes` takes the scopes a batch deletes from, as a publication would (so a promotion
cannot merge into a memory being deleted); `lock_for_pruning`, `derivation_sources_among` and
`delete_pruned` are a batch's statements, composed by governance/operations/retention.py (which first
marks stale what survives but builds on a pruned memory, when the rule says so): survivors'
`supersedes_id` skips to the nearest kept ancestor and `related_ids` drop the pruned ids, the embeddings
go with their rows (and the `embedding_cache` rows of their texts; plan items keep no vector of them), and
each gets a PRUNED event: id, citation, type, org, project, scope, title, sha256 hashes and the rule —
never content.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from governance.retention import PruneChoice, RetentionRow
from governance.scopes import SCOPE_LEVEL, Scope
from governance.storage.events import Event, EventType, expired_event, record_events
from governance.trust import DAYS_PER_MONTH, DECAY_RATES_PER_MONTH, MIN_CONFIDENCE, DecayPolicy

__all__ = [
    "decay_confidences",
    "expire_due",
    "MemoryLabel",
    "PrunedMemory",
    "PruneOutcome",
    "load_retention_rows",
    "active_group_counts",
    "lock_prune_scopes",
    "lock_for_pruning",
    "derivation_sources_among",
    "delete_pruned",
]

_ACTOR_ID, _ACTOR_TYPE = "system:retention", "system"

# the SQL twin of governance.trust.decayed (tested against it)
_DECAYED = """
    GREATEST(:min_conf, LEAST(COALESCE(base_confidence, confidence),
        COALESCE(base_confidence, confidence) * power(1 - CASE decay_policy
                WHEN 'recency_bias' THEN CAST(:rate_recency AS float8)
                WHEN 'stable' THEN CAST(:rate_stable AS float8) ELSE 0 END,
            floor(GREATEST(0, extract(epoch FROM (CAST(:now AS timestamptz)
                - COALESCE(last_validated_at, created_at))) / 86400)) / CAST(:dpm AS float8))))
"""

_ORG_FILTER = "(CAST(:orgs AS text[]) IS NULL OR org = ANY(CAST(:orgs AS text[])))"


def _decay_params(now: datetime, orgs: Sequence[str] | None) -> dict[str, object]:
    return {
        "now": now,
        "orgs": list(orgs) if orgs is not None else None,
        "min_conf": MIN_CONFIDENCE,
        "rate_recency": DECAY_RATES_PER_MONTH[DecayPolicy.RECENCY_BIAS],
        "rate_stable": DECAY_RATES_PER_MONTH[DecayPolicy.STABLE],
        "dpm": DAYS_PER_MONTH,
    }


async def decay_confidences(
    conn: AsyncConnection, *, now: datetime, dry_run: bool, orgs: Sequence[str] | None = None
) -> int:
    """Decay active memories by their policy; one DECAYED event per changed memory. Returns the count."""
    candidates = f"""
        SELECT id, confidence AS old, {_DECAYED} AS new FROM memories
        WHERE deprecated_at IS NULL AND decay_policy <> 'manual_only' AND {_ORG_FILTER}
    """
    params = _decay_params(now, orgs)
    if dry_run:
        sql = f"SELECT count(*) FROM ({candidates}) c WHERE abs(c.new - c.old) > 1e-9"
        return int((await conn.execute(text(sql), params)).scalar_one())
    sql = f"""
        WITH c AS ({candidates} FOR UPDATE),
        changed AS (
            UPDATE memories m SET confidence = c.new, base_confidence = COALESCE(m.base_confidence, c.old),
                   updated_at = CAST(:now AS timestamptz)
            FROM c WHERE m.id = c.id AND abs(c.new - c.old) > 1e-9
            RETURNING m.id::text AS id, c.old, c.new, m.decay_policy
        )
        SELECT * FROM changed
    """
    changed = (await conn.execute(text(sql), params)).all()
    await record_events(
        conn,
        [
            Event(
                event_type=EventType.DECAYED,
                memory_id=r.id,
                reason=f"decay policy {r.decay_policy}",
                payload={"from": r.old, "to": r.new, "policy": r.decay_policy},
                actor_id=_ACTOR_ID,
                actor_type=_ACTOR_TYPE,
            )
            for r in changed
        ],
    )
    return len(changed)


async def expire_due(
    conn: AsyncConnection, *, now: datetime, dry_run: bool, orgs: Sequence[str] | None = None
) -> int:
    """Deprecate active memories whose `expires_at` has passed; one EXPIRED event each. Returns the count."""
    where = f"deprecated_at IS NULL AND expires_at <= CAST(:now AS timestamptz) AND {_ORG_FILTER}"
    params: dict[str, object] = {"now": now, "orgs": list(orgs) if orgs is not None else None}
    if dry_run:
        return int(
            (await conn.execute(text(f"SELECT count(*) FROM memories WHERE {where}"), params)).scalar_one()
        )
    sql = f"""
        UPDATE memories SET deprecated_at = CAST(:now AS timestamptz), updated_at = CAST(:now AS timestamptz)
        WHERE {where}
        RETURNING id::text AS id, expires_at
    """
    expired = (await conn.execute(text(sql), params)).all()
    await record_events(
        conn,
        [
            replace(expired_event(r.id, r.expires_at), actor_id=_ACTOR_ID, actor_type=_ACTOR_TYPE)
            for r in expired
        ],
    )
    return len(expired)


@dataclass(frozen=True)
class MemoryLabel:
    """How a report names a memory: citation, type, scope and title (no content)."""

    id: str
    citation: str
    memory_type: str
    scope: str
    scope_key: str
    title: str


@dataclass(frozen=True)
class PrunedMemory:
    """A memory a batch deleted, as its PRUNED event keeps it."""

    label: MemoryLabel
    rule: str
    reason: str
    content_hash: str
    content_sha256: str


@dataclass
class PruneOutcome:
    """What one batch deleted and which survivors it marked stale."""

    pruned: list[PrunedMemory] = field(default_factory=list)
    stale_marked: list[str] = field(default_factory=list)


_LOAD = """
    SELECT m.id::text AS id, m.memory_type, m.org, COALESCE(m.project, '') AS project, m.scope,
           m.scope_key, m.citation, m.title, m.created_at, m.reward, m.success,
           CASE WHEN m.deprecated_at IS NOT NULL THEN m.deprecated_at
                WHEN m.expires_at <= CAST(:now AS timestamptz) THEN m.expires_at END AS inactive_since,
           m.retrieval_count, m.usefulness, cardinality(m.source_task_ids) AS source_tasks,
           m.validation_source = 'human_approved' AS human_approved,
           v.votes, v.helpful, d.types AS derived_types,
           EXISTS (SELECT 1 FROM change_requests c WHERE c.memory_id = m.id
                   AND c.state IN ('awaiting_approval', 'applying')) AS open_change
    FROM memories m
    CROSS JOIN LATERAL (
        SELECT count(*) AS votes, count(*) FILTER (WHERE helpful) AS helpful
        FROM memory_votes WHERE memory_id = m.id
    ) v
    CROSS JOIN LATERAL (
        SELECT COALESCE(array_agg(DISTINCT x.memory_type), CAST('{}' AS text[])) AS types
        FROM memory_derivations dd JOIN memories x ON x.id = dd.memory_id
        WHERE dd.derived_from_id = m.id AND x.deprecated_at IS NULL
          AND (x.expires_at IS NULL OR x.expires_at > CAST(:now AS timestamptz))
    ) d
"""
_PAGE = f"""{_LOAD}
    WHERE (CAST(:orgs AS text[]) IS NULL OR m.org = ANY(CAST(:orgs AS text[])))
      AND (CAST(:after AS uuid) IS NULL OR m.id > CAST(:after AS uuid))
    ORDER BY m.id LIMIT :page
"""
_BY_IDS = f"{_LOAD} WHERE m.id = ANY(CAST(:ids AS uuid[]))"
# rows per statement of the first reading: each stays well inside the worker's statement timeout
LOAD_PAGE = 5000


def _row(r: Any) -> tuple[RetentionRow, MemoryLabel]:
    row = RetentionRow(
        id=r.id,
        memory_type=r.memory_type,
        org=r.org,
        project=r.project,
        scope=r.scope,
        created_at=r.created_at,
        reward=r.reward,
        success=r.success,
        inactive_since=r.inactive_since,
        retrieval_count=int(r.retrieval_count),
        usefulness=float(r.usefulness),
        votes=int(r.votes),
        human_approved=bool(r.human_approved),
        helpful_votes=int(r.helpful),
        source_tasks=int(r.source_tasks or 0),
        derived_types=frozenset(r.derived_types or ()),
        open_change_request=bool(r.open_change),
    )
    return row, MemoryLabel(r.id, r.citation, r.memory_type, r.scope, r.scope_key, r.title)


async def load_retention_rows(
    conn: AsyncConnection,
    *,
    now: datetime,
    orgs: Sequence[str] | None = None,
    ids: Sequence[str] | None = None,
    page: int = LOAD_PAGE,
) -> tuple[list[RetentionRow], dict[str, MemoryLabel]]:
    """Every memory of `orgs` (or just these `ids`) as the pruning rules see it, with the labels a report
    prints; read `page` rows per statement, in id order."""
    rows: list[RetentionRow] = []
    labels: dict[str, MemoryLabel] = {}
    if ids is not None:
        for r in await conn.execute(text(_BY_IDS), {"now": now, "ids": list(ids)}):
            row, label = _row(r)
            rows.append(row)
            labels[row.id] = label
        return rows, labels
    after: str | None = None
    while True:
        params = {"now": now, "orgs": list(orgs) if orgs is not None else None, "after": after, "page": page}
        found = (await conn.execute(text(_PAGE), params)).all()
        for r in found:
            row, label = _row(r)
            rows.append(row)
            labels[row.id] = label
        if len(found) < page:
            return rows, labels
        after = found[-1].id


async def active_group_counts(
    conn: AsyncConnection, *, now: datetime, groups: Sequence[tuple[str, str, str, str]]
) -> dict[tuple[str, str, str, str], int]:
    """How many active memories each (org, project, scope, type) group holds now."""
    if not groups:
        return {}
    rows = await conn.execute(
        text(
            """
            SELECT g.org, g.project, g.scope, g.memory_type, (
                SELECT count(*) FROM memories m
                WHERE m.org = g.org AND COALESCE(m.project, '') = g.project AND m.scope = g.scope
                  AND m.memory_type = g.memory_type AND m.deprecated_at IS NULL
                  AND (m.expires_at IS NULL OR m.expires_at > CAST(:now AS timestamptz))
            ) AS active
            FROM unnest(CAST(:o AS text[]), CAST(:p AS text[]), CAST(:s AS text[]), CAST(:t AS text[]))
                 AS g(org, project, scope, memory_type)
            """
        ),
        {
            "now": now,
            "o": [g[0] for g in groups],
            "p": [g[1] for g in groups],
            "s": [g[2] for g in groups],
            "t": [g[3] for g in groups],
        },
    )
    return {(r.org, r.project, r.scope, r.memory_type): int(r.active) for r in rows}


def _level(key: str) -> int:
    try:
        return SCOPE_LEVEL[Scope(key.split(":", 1)[0])]
    except ValueError:
        return 0


async def lock_prune_scopes(conn: AsyncConnection, scope_keys: Sequence[str]) -> None:
    """Lock the scopes a batch deletes from (exclusive, widest first, as publications order theirs)."""
    for key in sorted(set(scope_keys), key=lambda k: (-_level(k), k)):
        await conn.execute(text("SELECT pg_advisory_xact_lock(hashtextextended(:k, 0))"), {"k": key})


async def lock_for_pruning(conn: AsyncConnection, ids: Sequence[str]) -> list[Any]:
    """The chosen memories still there, locked for update, with what their PRUNED events carry."""
    rows = (
        await conn.execute(
            text(
                """
                SELECT id::text AS id, citation, memory_type, org, project, scope, scope_key, title,
                       content_hash,
                       encode(sha256(convert_to(content, 'UTF8')), 'hex') AS content_sha256,
                       supersedes_id::text AS supersedes_id, source_task_ids
                FROM memories WHERE id = ANY(CAST(:ids AS uuid[])) ORDER BY id FOR UPDATE
                """
            ),
            {"ids": list(ids)},
        )
    ).all()
    return list(rows)


async def derivation_sources_among(conn: AsyncConnection, ids: Sequence[str]) -> set[str]:
    """Which of these memories something else is derived from."""
    gone = list(ids)
    return {
        row[0]
        for row in await conn.execute(
            text(
                "SELECT DISTINCT derived_from_id::text FROM memory_derivations "
                "WHERE derived_from_id = ANY(CAST(:gone AS uuid[]))"
            ),
            {"gone": gone},
        )
    }


async def delete_pruned(
    conn: AsyncConnection, found: Sequence[Any], by_id: dict[str, PruneChoice]
) -> list[PrunedMemory]:
    """Delete the locked memories (their embeddings and cached vectors too), relinking their chains, each
    with a PRUNED event carrying no content."""
    gone = [r.id for r in found]
    pruned: list[PrunedMemory] = []
    # a survivor's history skips the pruned versions: its predecessor becomes the nearest one kept (the
    # pruned rows let go of theirs first: a memory has one successor, supersedes_id is unique)
    await conn.execute(
        text(
            "UPDATE memories SET supersedes_id = NULL "
            "WHERE id = ANY(CAST(:gone AS uuid[])) AND supersedes_id IS NOT NULL"
        ),
        {"gone": gone},
    )
    older = {r.id: r.supersedes_id for r in found}
    relinks: dict[str, str | None] = {}
    for pruned_id in gone:
        ancestor = older[pruned_id]
        while ancestor is not None and ancestor in older:
            ancestor = older[ancestor]
        relinks[pruned_id] = ancestor
    await conn.execute(
        text(
            """
            UPDATE memories m SET supersedes_id = CAST(l.keep AS uuid)
            FROM unnest(CAST(:gone AS text[]), CAST(:keep AS text[])) AS l(gone, keep)
            WHERE m.supersedes_id = CAST(l.gone AS uuid) AND NOT (m.id::text = ANY(CAST(:gone AS text[])))
            """
        ),
        {"gone": list(relinks), "keep": list(relinks.values())},
    )
    await conn.execute(text("DELETE FROM memories WHERE id = ANY(CAST(:gone AS uuid[]))"), {"gone": gone})
    await conn.execute(
        text(
            """
            UPDATE memories SET related_ids = ARRAY(SELECT r FROM unnest(related_ids) r
                                                    WHERE NOT (r = ANY(CAST(:gone AS uuid[]))))
            WHERE related_ids && CAST(:gone AS uuid[]) AND NOT (id = ANY(CAST(:gone AS uuid[])))
            """
        ),
        {"gone": gone},
    )
    # their embeddings: the row's column went with it; the cache's vector of the same text goes too (a later
    # promotion of that text embeds it again); plan items that published them keep no vector
    await conn.execute(
        text("DELETE FROM embedding_cache WHERE text_sha256 = ANY(CAST(:digests AS text[]))"),
        {"digests": [r.content_sha256 for r in found]},
    )
    await conn.execute(
        text(
            "UPDATE promotion_plan_items SET embedding = NULL "
            "WHERE memory_id = ANY(CAST(:gone AS text[])) AND embedding IS NOT NULL"
        ),
        {"gone": gone},
    )
    events: list[Event] = []
    for r in found:
        choice = by_id[r.id]
        label = MemoryLabel(r.id, r.citation, r.memory_type, r.scope, r.scope_key, r.title)
        pruned.append(PrunedMemory(label, choice.rule, choice.reason, r.content_hash, r.content_sha256))
        events.append(
            Event(
                event_type=EventType.PRUNED,
                memory_id=r.id,
                reason=choice.reason,
                payload={
                    "rule": choice.rule,
                    "citation": r.citation,
                    "memory_type": r.memory_type,
                    "org": r.org,
                    "project": r.project,
                    "scope": r.scope,
                    "scope_key": r.scope_key,
                    "title": r.title,
                    "content_hash": r.content_hash,
                    "content_sha256": r.content_sha256,
                    "source_task_ids": list(r.source_task_ids or []),
                },
                actor_id=_ACTOR_ID,
                actor_type=_ACTOR_TYPE,
            )
        )
    await record_events(conn, events)
    return pruned
