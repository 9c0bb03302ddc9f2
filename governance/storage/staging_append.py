"""Appending to the staging log: a batch all or nothing, retry-safe, in one round trip when it can be.

Idempotency keys live in `staging_idempotency` (one row per principal and key, written in the same
statement as the entry): staging_entries is partitioned by month of `created_at` (migration 0005), and a
partitioned table's unique indexes must contain that column, so the key's uniqueness has a table of its own.

Sequence numbers are gapless per task under any number of concurrent writers because the counter lives
on the task row: `UPDATE tasks SET next_seq = next_seq + n` both reserves the numbers and locks the row
until commit, and a rolled-back append rolls its reservation back with it. The common path is a single
statement (reserve, count the task's bytes against its quotas, insert entries and keys in one CTE), run in
autocommit when no daily quota is set, so an append costs one round trip.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import time
from dataclasses import dataclass
from operator import itemgetter
from typing import Any, NamedTuple

import psycopg
from sqlalchemy import select, text
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from governance.errors import (
    Conflict,
    DailyQuotaExceeded,
    GovernanceError,
    NotFound,
    TaskQuotaExceeded,
    Unauthenticated,
)
from governance.identity import Principal
from governance.limits import (
    StagingQuota,
    seconds_to_utc_midnight,
    task_quota_refusal,
    tenant_quota_refusal,
)
from governance.promotions import PromotionRecord, closed_refusal
from governance.staging import EntryDraft, PreparedBatch, prepare_batch, public_task_id
from governance.storage import quotas
from governance.storage.append_group import GroupCommit, group_for
from governance.storage.connections import unpinged_checkout
from governance.storage.staging import TaskInfo, get_task, key_is_live
from governance.storage.tables import staging_idempotency

__all__ = [
    "AppendedEntry",
    "Appended",
    "append_batch",
    "append_entries",
    "group_counts",
    "latest_promotion",
]


class AppendedEntry(NamedTuple):
    """The answer for one appended entry; `replayed` when an idempotency key returned an earlier write.
    (A tuple: a batch makes one per entry, and a frozen dataclass cost four times as much to make.)"""

    id: int
    seq: int
    replayed: bool


@dataclass(frozen=True)
class Appended:
    """An appended batch: each entry's answer in order, and the task's latest promotion (None: none yet)."""

    entries: list[AppendedEntry]
    promotion: PromotionRecord | None


# The task's row is locked by the sequence reservation anyway: refusing a closed task there costs the
# hot path nothing, and reads it fresh (the gateways cache tasks, status and all). The task's quotas are
# checked there too (`:max_entries`, `:max_bytes`; 0: none), against the row as locked, and its bytes counted
# (`:size`): a batch one would refuse reserves, counts and inserts nothing. New entries clear `ended_at`: the
# staging archive leaves a task alone while it holds entries its next promotion will take. Reservation,
# count, entries and idempotency keys are one statement, so an append is one round trip, atomic on its own.
# `:key_hash` (optional): the caller's API key must still be unrevoked, read in the same statement, so a key
# revoked a moment ago appends nothing even where a gateway's cache still knows it (api/services/gateway.py).
_APPEND_SQL = """
    WITH reserved AS (
        UPDATE tasks SET next_seq = next_seq + :n, staged_bytes = staged_bytes + :size, ended_at = NULL
        WHERE id = :task_id AND closed_at IS NULL
          AND (:max_entries = 0 OR next_seq + :n <= :max_entries)
          AND (:max_bytes = 0 OR staged_bytes + :size <= :max_bytes)
          AND (CAST(:key_hash AS text) IS NULL OR EXISTS (
              SELECT 1 FROM api_keys WHERE key_hash = :key_hash AND revoked_at IS NULL))
        RETURNING next_seq
    ), appended AS (
        INSERT INTO staging_entries
            (task_id, seq, actor_id, actor_type, kind, content, payload, idempotency_key, request_hash)
        SELECT :task_id, reserved.next_seq - :n + v.ord, :actor_id, :actor_type, v.e->>0, v.e->>1,
               (v.e->>2)::json, v.e->>3, v.e->>4
        FROM reserved, jsonb_array_elements(CAST(:rows AS jsonb)) WITH ORDINALITY AS v(e, ord)
        RETURNING id, seq, idempotency_key, request_hash, created_at
    ), keyed AS (
        INSERT INTO staging_idempotency
            (actor_id, idempotency_key, task_id, entry_id, seq, request_hash, created_at)
        SELECT :actor_id, idempotency_key, :task_id, id, seq, request_hash, created_at
        FROM appended WHERE idempotency_key IS NOT NULL
    )
    SELECT id, seq FROM appended
"""
# With a daily quota (`:max_day_entries`, `:max_day_bytes`; 0: none of that kind), the same statement first
# locks the task's shard of the tenant's UTC day (storage/quotas.py), checks the day's total (that shard as
# locked, the others as this statement's snapshot sees them) with the task's quotas, and adds the batch to
# the shard only when the task's row took it: a refused batch is neither written nor counted, in one round
# trip. Every append that counts a day takes the shard's lock before the task's row (never the other way
# round, so two appends never wait on each other's locks).
_APPEND_DAY_SQL = (
    _APPEND_SQL.replace(
        """
    WITH reserved AS (""",
        """
    WITH mine AS (
        SELECT entries, bytes FROM staging_daily_usage
        WHERE org = :org AND day = CAST(now() AT TIME ZONE 'UTC' AS date) AND shard = :shard
        FOR UPDATE
    ), today AS (
        SELECT coalesce((SELECT entries FROM mine), 0) + coalesce(sum(entries), 0) AS entries,
               coalesce((SELECT bytes FROM mine), 0) + coalesce(sum(bytes), 0) AS bytes
        FROM staging_daily_usage
        WHERE org = :org AND day = CAST(now() AT TIME ZONE 'UTC' AS date) AND shard <> :shard
    ), reserved AS (""",
    )
    .replace(
        """
          AND (CAST(:key_hash AS text) IS NULL""",
        """
          AND (:max_day_entries = 0 OR (SELECT entries FROM today) + :n <= :max_day_entries)
          AND (:max_day_bytes = 0 OR (SELECT bytes FROM today) + :size <= :max_day_bytes)
          AND (CAST(:key_hash AS text) IS NULL""",
    )
    .replace(
        """
    ), appended AS (""",
        """
    ), counted AS (
        INSERT INTO staging_daily_usage AS u (org, day, shard, entries, bytes)
        SELECT :org, CAST(now() AT TIME ZONE 'UTC' AS date), :shard, :n, :size FROM reserved
        ON CONFLICT (org, day, shard)
        DO UPDATE SET entries = u.entries + EXCLUDED.entries, bytes = u.bytes + EXCLUDED.bytes
    ), appended AS (""",
    )
)
assert _APPEND_DAY_SQL.count("counted AS") == 1 and _APPEND_DAY_SQL.count(":max_day_bytes") == 2
_APPEND = text(_APPEND_SQL)
_APPEND_DAY = text(_APPEND_DAY_SQL)
# the same statements in psycopg's parameter style, for the pipelined path (`::json` casts left alone)
_APPEND_PG = re.sub(r"(?<!:):(\w+)", r"%(\1)s", _APPEND_SQL)
_APPEND_DAY_PG = re.sub(r"(?<!:):(\w+)", r"%(\1)s", _APPEND_DAY_SQL)
# which promotion takes the entries (governance/promotions.promotion_of_append reads the latest only)
_LATEST_PROMOTION_PG = (
    "SELECT task_id, number, workflow_id, target_scope, after_seq, last_seq, outcome, requested_by, "
    "started_at, snapshot_at, ended_at FROM promotions WHERE task_id = %(task_id)s "
    "ORDER BY number DESC LIMIT 1"
)
# The group commit's statement (storage/append_group.py): the unkeyed appends of several requests, one per
# task, each judged on its own as `_APPEND_SQL` judges one: a request whose task is gone or closed, over a
# quota, or whose key was revoked since its gateway cached it reserves nothing and writes nothing, and the
# others are written. `%(reqs)s` is a JSON array of requests (`i`, the task, its counts and quotas, the
# caller, `rows` as `_APPEND_SQL` reads them). Locks are taken in one order, whatever the plan: the tasks'
# rows by id (`locked`) before the UPDATE meets them, so two flushes of different gateways never wait on
# each other in a cycle. The answer is one row per request written: its task, the first sequence number
# and the entries' ids in sequence order.
_GROUP_SQL = """
    WITH req AS MATERIALIZED (
        SELECT * FROM jsonb_to_recordset(CAST(%(reqs)s AS jsonb)) AS r(
            i int, task_id text, n int, size bigint, max_entries bigint, max_bytes bigint, key_hash text,
            actor_id text, actor_type text, rows jsonb)
    ), locked AS MATERIALIZED (
        SELECT id FROM tasks WHERE id IN (SELECT task_id FROM req) ORDER BY id FOR UPDATE
    ), reserved AS (
        UPDATE tasks t
        SET next_seq = t.next_seq + r.n, staged_bytes = t.staged_bytes + r.size, ended_at = NULL
        FROM req r
        WHERE t.id = r.task_id AND t.id IN (SELECT id FROM locked) AND t.closed_at IS NULL
          AND (r.max_entries = 0 OR t.next_seq + r.n <= r.max_entries)
          AND (r.max_bytes = 0 OR t.staged_bytes + r.size <= r.max_bytes)
          AND (r.key_hash IS NULL OR EXISTS (
              SELECT 1 FROM api_keys WHERE key_hash = r.key_hash AND revoked_at IS NULL))
        RETURNING r.i, t.next_seq - r.n AS first_seq
    ), appended AS (
        INSERT INTO staging_entries
            (task_id, seq, actor_id, actor_type, kind, content, payload, idempotency_key, request_hash)
        SELECT r.task_id, s.first_seq + v.ord, r.actor_id, r.actor_type, v.e->>0, v.e->>1,
               (v.e->>2)::json, v.e->>3, v.e->>4
        FROM reserved s JOIN req r ON r.i = s.i,
             jsonb_array_elements(r.rows) WITH ORDINALITY AS v(e, ord)
        RETURNING task_id, id, seq
    )
    SELECT task_id, min(seq), array_agg(id ORDER BY seq) FROM appended GROUP BY task_id
"""
# With a daily quota, a flush counts all its requests on one shard of each tenant's day (`%(shard)s`, which
# the group turns from flush to flush, so the flushes of two gateways rarely want the same row): that row is
# locked first, for each tenant in org order (`locked` waits for it: its one-time filter reads `today`), then
# the tasks' rows. A request's day is its tenant's shard as locked, plus the other shards as the statement's
# snapshot sees them, plus the requests of the same tenant before it in the flush (`n_through`: counted
# whether or not the task's row then took them, so a flush never passes a quota; a request refused only
# because an earlier one of its flush was refused finds no reason when `_refused` looks, and runs again).
# The requests the tasks' rows took are added to the shard, one row per tenant.
_GROUP_DAY_SQL = (
    _GROUP_SQL.replace(
        """actor_id text, actor_type text, rows jsonb)
    ), locked AS MATERIALIZED (
        SELECT id FROM tasks WHERE id IN (SELECT task_id FROM req) ORDER BY id FOR UPDATE""",
        """actor_id text, actor_type text, rows jsonb,
            org text, max_day_entries bigint, max_day_bytes bigint)
    ), mine AS MATERIALIZED (
        SELECT org, entries, bytes FROM staging_daily_usage
        WHERE day = CAST(now() AT TIME ZONE 'UTC' AS date) AND shard = %(shard)s
          AND org IN (SELECT org FROM req)
        ORDER BY org FOR UPDATE
    ), today AS MATERIALIZED (
        SELECT t.org, coalesce(m.entries, 0) + coalesce(o.entries, 0) AS entries,
               coalesce(m.bytes, 0) + coalesce(o.bytes, 0) AS bytes
        FROM (SELECT DISTINCT org FROM req) t LEFT JOIN mine m ON m.org = t.org
        LEFT JOIN LATERAL (
            SELECT sum(u.entries) AS entries, sum(u.bytes) AS bytes FROM staging_daily_usage u
            WHERE u.org = t.org AND u.day = CAST(now() AT TIME ZONE 'UTC' AS date) AND u.shard <> %(shard)s
        ) o ON true
    ), through AS MATERIALIZED (
        SELECT i, sum(n) OVER (PARTITION BY org ORDER BY i) AS n_through,
               sum(size) OVER (PARTITION BY org ORDER BY i) AS size_through
        FROM req
    ), locked AS MATERIALIZED (
        SELECT id FROM tasks WHERE id IN (SELECT task_id FROM req) AND (SELECT count(*) FROM today) >= 0
        ORDER BY id FOR UPDATE""",
    )
    .replace(
        "        FROM req r\n        WHERE t.id = r.task_id AND t.id IN (SELECT id FROM locked)",
        """        FROM req r JOIN today d ON d.org = r.org JOIN through c ON c.i = r.i
        WHERE t.id = r.task_id AND t.id IN (SELECT id FROM locked)
          AND (r.max_day_entries = 0 OR d.entries + c.n_through <= r.max_day_entries)
          AND (r.max_day_bytes = 0 OR d.bytes + c.size_through <= r.max_day_bytes)
         """,
    )
    .replace(
        "    ), appended AS (",
        """    ), counted AS (
        INSERT INTO staging_daily_usage AS u (org, day, shard, entries, bytes)
        SELECT r.org, CAST(now() AT TIME ZONE 'UTC' AS date), %(shard)s, sum(r.n), sum(r.size)
        FROM reserved s JOIN req r ON r.i = s.i GROUP BY r.org
        ON CONFLICT (org, day, shard)
        DO UPDATE SET entries = u.entries + EXCLUDED.entries, bytes = u.bytes + EXCLUDED.bytes
    ), appended AS (""",
    )
)
assert _GROUP_DAY_SQL.count("counted AS") == 1 and _GROUP_DAY_SQL.count("FOR UPDATE") == 2
assert _GROUP_DAY_SQL.count("JOIN today d") == 1 and _GROUP_DAY_SQL.count("max_day_bytes") == 3
_GROUP_PG = _GROUP_SQL  # written in psycopg's parameter style already
_GROUP_DAY_PG = _GROUP_DAY_SQL
# the tasks' latest promotions, read in the flush's transaction after its statement locked their rows
_LATEST_PROMOTIONS_PG = (
    "SELECT DISTINCT ON (task_id) task_id, number, workflow_id, target_scope, after_seq, last_seq, outcome, "
    "requested_by, started_at, snapshot_at, ended_at FROM promotions WHERE task_id = ANY(%(task_ids)s) "
    "ORDER BY task_id, number DESC"
)
# psycopg prepares a statement only when asked (`prepare=True`) on connections of the pipelined path; no
# statement is prepared behind its caller's back (the engine turns automatic preparation off)
_PREPARE_ONLY_WHEN_ASKED = 2**31


async def _existing_by_key(conn: AsyncConnection, principal: Principal, keys: list[str]) -> dict[str, Any]:
    rows = (
        await conn.execute(
            select(
                staging_idempotency.c.entry_id.label("id"),
                staging_idempotency.c.seq,
                staging_idempotency.c.task_id,
                staging_idempotency.c.idempotency_key,
                staging_idempotency.c.request_hash,
            ).where(
                staging_idempotency.c.actor_id == principal.id,
                staging_idempotency.c.idempotency_key.in_(keys),
            )
        )
    ).all()
    return {row.idempotency_key: row for row in rows}


def _batch_bytes(fresh: list[EntryDraft]) -> int:
    """What a batch adds to its task's and tenant's byte counts: content and payload JSON, UTF-8."""
    return sum(len(d.content.encode()) + len((d.payload_json or "").encode()) for d in fresh)


class _Raced(Conflict):
    """The task changed between the append statement and the look at why it took nothing: run again (a
    second time, the caller gets this Conflict)."""


async def _refused(
    conn: AsyncConnection,
    task_id: str,
    quota: StagingQuota,
    fresh: list[EntryDraft],
    key_hash: str | None = None,
    org: str = "",
) -> Exception:
    """Why the append statement took nothing: the caller's key was revoked, the task is gone or closed, or
    the batch passes a task quota or its tenant's daily quota (read only now, never on the hot path)."""
    if key_hash is not None and not await key_is_live(conn, key_hash):
        return Unauthenticated("unknown or revoked API key")
    task = await get_task(conn, task_id)
    if task is None or task.closed_reason is not None:
        return _refusal(task, task_id)
    used = await quotas.task_usage(conn, task_id)
    size = _batch_bytes(fresh)
    refusal = None if used is None else task_quota_refusal(quota, task_id, used, len(fresh), size)
    if refusal:
        return TaskQuotaExceeded(refusal[1], quota=refusal[0])
    if quota.counts_tenant:
        today = await quotas.day_usage(conn, org)
        refusal = tenant_quota_refusal(quota, org, today, len(fresh), size)
        if refusal:
            wait = seconds_to_utc_midnight(time.time())
            return DailyQuotaExceeded(refusal[1], quota=refusal[0], retry_after=wait)
    return _Raced(f"task {public_task_id(task_id)!r} changed while the batch was appended; retry it")


async def _append_pipelined(
    engine: AsyncEngine,
    statement: str,
    params: dict[str, Any],
    latest: str = _LATEST_PROMOTION_PG,
    latest_params: dict[str, Any] | None = None,
) -> tuple[list[Any], list[Any]] | None:
    """The common append (no idempotency key) in two round trips on the driver's connection: a ping, then
    the append `statement` and the read of the task's latest promotion, pipelined and prepared.

    The ping replaces the pool's own. When it fails, nothing was sent but the ping and the connection is
    dead (a restarted server's, typically): it is invalidated and None tells the caller to append again
    through the pinging path. A ping the server left unanswered past the bound is the database's
    unavailability (503), as the pool's own ping made it; trying the next pooled connection would wait as
    long again. The ping is not pipelined with the statement on purpose: a server frozen before the
    request would run a statement already in its socket once it thawed, after the caller was told 503.
    Errors of the append itself are SQLAlchemy's, as from `execute`. The two statements run in one implicit
    transaction: the latest promotion is read after the append took the task's row lock, before it commits.
    """
    with unpinged_checkout():
        async with engine.connect() as conn:
            raw = await conn.get_raw_connection()
            pg: psycopg.AsyncConnection[Any] = raw.driver_connection  # type: ignore[assignment]
            if pg.prepare_threshold is None:
                pg.prepare_threshold = _PREPARE_ONLY_WHEN_ASKED
            ping, append, latest_cur = _cursors(conn, pg)
            # autocommit on the driver's connection for these statements only (SQLAlchemy's own switch,
            # `execution_options`, cost more CPU than the append's SQL), restored before the pool has it
            was_autocommit = pg.autocommit
            try:
                await pg.set_autocommit(True)
                try:
                    await ping.execute("SELECT 1")
                except psycopg.Error as exc:
                    silent = bool(getattr(pg, "severed", False))  # no answer at all: the server stalls
                    await conn.invalidate()
                    if not silent:
                        return None
                    raise DBAPIError.instance(
                        "SELECT 1", None, exc, psycopg.Error, connection_invalidated=True
                    ) from exc
                async with pg.pipeline():
                    await append.execute(statement, params, prepare=True)
                    await latest_cur.execute(latest, latest_params, prepare=True)
                inserted = await append.fetchall()
                promotion = await latest_cur.fetchall()
            except psycopg.Error as exc:
                broken = pg.broken or bool(getattr(pg, "severed", False))
                if broken:
                    await conn.invalidate()
                raise DBAPIError.instance(
                    statement, params, exc, psycopg.Error, connection_invalidated=broken
                ) from exc
            finally:
                if not pg.closed and pg.autocommit != was_autocommit:
                    try:
                        await pg.set_autocommit(was_autocommit)
                    except psycopg.Error:  # left mid-command (a cancelled request): never pooled again
                        await conn.invalidate()
    return inserted, promotion


def _cursors(conn: AsyncConnection, pg: psycopg.AsyncConnection[Any]) -> tuple[Any, Any, Any]:
    """The pipelined path's three cursors, kept with the pooled connection (a cursor costs more to make
    than to reuse; each execute starts from no result, so a ping's old answer never stands in for a new
    one). Kept beside the driver's connection they belong to: a reconnected record makes new ones."""
    kept = conn.info.get("loregate_append_cursors")
    if kept is None or kept[0] is not pg:
        kept = conn.info["loregate_append_cursors"] = (pg, (pg.cursor(), pg.cursor(), pg.cursor()))
    return kept[1]


@dataclass(frozen=True)
class _Grouped:
    """One request's unkeyed append waiting for its group's flush: its task, what it locks (the task's row:
    one request a task per flush), its entry count and the statement's parameters."""

    task_id: str
    keys: tuple[str, ...]
    n: int
    request: str  # this request's element of the flush's `reqs` array, as JSON text


# what a request of a flush learns: (first seq, ids in seq order, latest promotion); `_REFUSED`: the
# statement took nothing of it (why is read afterwards); None: the flush's ping found a dead connection
_REFUSED = "refused"
_Outcome = tuple[int, list[int], PromotionRecord | None] | str | None
_DEADLOCK = "40P01"
# the shards a process's flushes count a day on, in turn, from a place of its own (its pid, read at each
# flush: a forked gateway worker does not share its parent's)
_FLUSHES = itertools.count()


def _request_json(params: dict[str, Any]) -> str:
    """A request's element of `reqs`: its parameters, `rows` spliced in as the JSON array it already is."""
    rows = params["rows"]
    rest = json.dumps({k: v for k, v in params.items() if k != "rows"}, ensure_ascii=False)
    return f'{rest[:-1]},"rows":{rows}}}'


async def _flush(engine: AsyncEngine, counts_day: bool, items: list[_Grouped]) -> list[_Outcome]:
    """One statement for the appends of a flush, then the tasks' latest promotions, in one transaction.

    A deadlock cannot come of the flushes' own locks (taken in one order); one with another writer of
    those rows rolled the statement back whole, so the flush runs again."""
    reqs = "[" + ",".join(f'{{"i":{i},{item.request[1:]}' for i, item in enumerate(items)) + "]"
    statement = _GROUP_DAY_PG if counts_day else _GROUP_PG
    params: dict[str, Any] = {"reqs": reqs}
    if counts_day:  # the day's shard this flush counts on: turned flush by flush (see _GROUP_DAY_SQL)
        params["shard"] = (os.getpid() + next(_FLUSHES)) % quotas.DAILY_SHARDS
    task_ids = [item.task_id for item in items]
    for attempt in range(3):
        try:
            done = await _append_pipelined(
                engine, statement, params, _LATEST_PROMOTIONS_PG, {"task_ids": task_ids}
            )
        except DBAPIError as exc:
            if attempt < 2 and getattr(exc.orig, "sqlstate", None) == _DEADLOCK:
                continue
            raise
        break
    if done is None:
        return [None] * len(items)
    written = {row[0]: row for row in done[0]}
    latest = {row[0]: row for row in done[1]}
    outcomes: list[_Outcome] = []
    for item in items:
        row = written.get(item.task_id)
        if row is None:
            outcomes.append(_REFUSED)
        else:
            outcomes.append((int(row[1]), list(row[2]), _promotion(latest.get(item.task_id))))
    return outcomes


def _group(engine: AsyncEngine, counts_day: bool) -> GroupCommit[_Grouped, _Outcome]:
    """The process's group commit of unkeyed appends on `engine` (one per statement: with or without a
    daily quota)."""

    def make() -> GroupCommit[_Grouped, _Outcome]:
        async def flush(items: list[_Grouped]) -> list[_Outcome]:
            return await _flush(engine, counts_day, items)

        # two flushes at once: the next forms and is sent while the database works on the previous one
        return GroupCommit(flush=flush, keys=lambda item: item.keys, weight=lambda item: item.n, runners=2)

    return group_for(engine.sync_engine, "day" if counts_day else "plain", make)


def group_counts(engine: AsyncEngine, *, daily: bool) -> tuple[int, int]:
    """The flushes the process's group commit on `engine` ran on this loop, and the requests they carried
    (with or without a daily quota): what a test or a bench reads to see appends share statements."""
    group = _group(engine, daily)
    return group.flushes, group.items


def _acks(drafts: list[EntryDraft], existing: dict[str, Any], inserted: list[Any]) -> list[AppendedEntry]:
    """Each draft's answer in order: its earlier write for a replayed key, else the next inserted row."""
    inserted = sorted(inserted, key=itemgetter(1))  # RETURNING order is not guaranteed; seqs are fixed
    if not existing:  # every draft is new: the rows in sequence order are the answers
        return [AppendedEntry(row[0], row[1], False) for row in inserted]
    new_iter = iter(inserted)
    results: list[AppendedEntry] = []
    for draft in drafts:
        old = existing.get(draft.idempotency_key) if draft.idempotency_key else None
        if old is not None:
            results.append(AppendedEntry(id=old.id, seq=old.seq, replayed=True))
        else:
            row = next(new_iter)
            results.append(AppendedEntry(id=int(row[0]), seq=int(row[1]), replayed=False))
    return results


async def _append_once(
    engine: AsyncEngine,
    task_id: str,
    principal: Principal,
    drafts: list[EntryDraft],
    prepared: PreparedBatch,
    quota: tuple[str, StagingQuota] | None = None,
    key_hash: str | None = None,
    group: bool = True,
) -> Appended:
    hashes = prepared.hashes
    org, limits = quota if quota is not None else ("", StagingQuota())
    # An append is one statement, atomic on its own (a daily quota counted in it too): autocommit spares the
    # BEGIN and COMMIT round trips
    counts_day = limits.counts_tenant
    if counts_day:
        await quotas.seed_days(engine, org)
    keys = [d.idempotency_key for d in drafts if d.idempotency_key is not None]

    def params_of(fresh: list[int] | None) -> dict[str, Any]:
        """The statement's parameters for the entries at `fresh` (None: all of them)."""
        sizes = prepared.sizes if fresh is None else [prepared.sizes[i] for i in fresh]
        size = sum(sizes)
        params = {
            "n": len(sizes),
            "size": size,
            "max_entries": limits.task_entries,
            "max_bytes": limits.task_bytes,
            "key_hash": key_hash,
            "task_id": task_id,
            "actor_id": principal.id,
            "actor_type": principal.actor_type.value,
            "rows": prepared.rows_json(fresh),
        }
        if counts_day:
            params |= {
                "org": org,
                "shard": quotas.shard_of(task_id),
                "max_day_entries": limits.tenant_entries_per_day,
                "max_day_bytes": limits.tenant_bytes_per_day,
            }
        return params

    if not keys and group:  # the common case: in the next flush of the process's group commit
        params = params_of(None)
        grouped = _Grouped(task_id, (task_id,), len(drafts), _request_json(params))
        outcome = await _group(engine, counts_day).submit(grouped)
        if isinstance(outcome, tuple):
            first, ids, promotion = outcome
            return Appended([AppendedEntry(i, first + k, False) for k, i in enumerate(ids)], promotion)
        if outcome == _REFUSED:
            async with engine.connect() as conn:  # gone, closed, over a quota or revoked: read which
                raise await _refused(conn, task_id, limits, drafts, key_hash, org)
    elif not keys:  # two round trips (the ping, the statement), alone
        statement = _APPEND_DAY_PG if counts_day else _APPEND_PG
        done = await _append_pipelined(engine, statement, params_of(None), latest_params={"task_id": task_id})
        if done is not None:
            if done[0]:
                promotion = _promotion(done[1][0] if done[1] else None)
                return Appended(_acks(drafts, {}, done[0]), promotion)
            async with engine.connect() as conn:  # gone, closed, over a quota or revoked: read which
                raise await _refused(conn, task_id, limits, drafts, key_hash, org)
    async with engine.connect() as conn:
        await conn.execution_options(isolation_level="AUTOCOMMIT")
        async with conn.begin():
            existing = await _existing_by_key(conn, principal, keys) if keys else {}
            for draft, rhash in zip(drafts, hashes, strict=True):
                old = existing.get(draft.idempotency_key) if draft.idempotency_key else None
                if old is None:
                    continue
                if old.task_id != task_id:
                    raise Conflict(
                        f"idempotency key {draft.idempotency_key!r} was already used for task "
                        f"{public_task_id(old.task_id)!r}"
                    )
                if old.request_hash != rhash:
                    raise Conflict(
                        f"idempotency key {draft.idempotency_key!r} was already used with a different entry "
                        f"(seq {old.seq}); retries must repeat the original kind, content and payload"
                    )
            fresh = [
                i
                for i, d in enumerate(drafts)
                if d.idempotency_key is None or d.idempotency_key not in existing
            ]
            inserted: list[Any] = []
            if fresh:
                batch = [drafts[i] for i in fresh]
                appending = _APPEND_DAY if counts_day else _APPEND
                inserted = list((await conn.execute(appending, params_of(fresh))).all())
                if not inserted:  # gone, closed, over a quota or revoked: read which
                    raise await _refused(conn, task_id, limits, batch, key_hash, org)
            latest = await latest_promotion(conn, task_id)
    return Appended(_acks(drafts, existing, inserted), latest)


def _promotion(row: Any) -> PromotionRecord | None:
    if row is None:
        return None
    return PromotionRecord(
        task_id=row[0],
        number=int(row[1]),
        workflow_id=row[2],
        target_scope=row[3],
        after_seq=int(row[4]),
        last_seq=None if row[5] is None else int(row[5]),
        outcome=row[6],
        requested_by=row[7],
        started_at=row[8],
        snapshot_at=row[9],
        ended_at=row[10],
    )


async def latest_promotion(conn: AsyncConnection, task_id: str) -> PromotionRecord | None:
    """The task's latest promotion (None: it has none yet)."""
    row = (
        await conn.execute(
            text(_LATEST_PROMOTION_PG.replace("%(task_id)s", ":task_id")), {"task_id": task_id}
        )
    ).first()
    return _promotion(row)


def _refusal(task: TaskInfo | None, task_id: str) -> GovernanceError:
    if task is None:
        return NotFound(f"task {public_task_id(task_id)!r} does not exist")
    return closed_refusal(task.public_id, task.closed_reason or "closed", doing="entries")


async def append_batch(
    engine: AsyncEngine,
    task_id: str,
    principal: Principal,
    drafts: list[EntryDraft],
    quota: tuple[str, StagingQuota] | None = None,
    *,
    key_hash: str | None = None,
    prepared: PreparedBatch | None = None,
    group: bool = True,
) -> Appended:
    """Append a batch, all or nothing; entries whose idempotency key was seen return the first result.

    With `quota` (the task's org and the quotas), a batch whose new entries would pass one is refused whole.
    A closed task (`tasks.closed_at`: closed explicitly or erased) takes nothing new: Conflict naming why.
    Replays of entries it took before still return their first result. With `key_hash` (the SHA-256 of
    the caller's API key), a key revoked since the caller authenticated appends nothing: Unauthenticated.
    The answer carries the task's latest promotion, read in the same round trip (which promotion takes the
    entries: governance/promotions.promotion_of_append).

    `prepared`: the batch's hashes, sizes and rows, as `governance.staging.validate_batch` returned them
    while checking its limits (default: worked out here, `prepare_batch`).

    `group` (default): a batch without idempotency keys goes in the next flush of the process's group
    commit (storage/append_group.py), one statement with the batches of other requests that arrived while
    the previous one ran; it is judged and answered on its own. False: its own statement, as before.

    Two concurrent requests carrying the same new key race on the unique index: the loser's transaction
    (and its sequence reservation) rolls back, and it runs again to find the winner's rows. A deadlock
    with another writer of the task's or the day's rows rolled the statement back whole: it runs again too.
    """
    if prepared is None:
        prepared = prepare_batch(drafts)
    for attempt in range(3):
        try:
            return await _append_once(engine, task_id, principal, drafts, prepared, quota, key_hash, group)
        except IntegrityError as exc:
            if "staging_idempotency_pkey" not in str(exc.orig) or attempt == 2:
                raise
        except _Raced:
            if attempt == 2:
                raise
        except DBAPIError as exc:  # the statement rolled back whole: nothing of it was written
            if getattr(exc.orig, "sqlstate", None) != _DEADLOCK or attempt == 2:
                raise
    raise AssertionError("unreachable: the third attempt returns or raises")


async def append_entries(
    engine: AsyncEngine,
    task_id: str,
    principal: Principal,
    drafts: list[EntryDraft],
    quota: tuple[str, StagingQuota] | None = None,
) -> list[AppendedEntry]:
    """`append_batch`'s entries (callers that need no promotion number: activities, imports)."""
    return (await append_batch(engine, task_id, principal, drafts, quota)).entries
