"""Postgres' CPU per row of a batch append, by the shape of what the gateway sends, against a raw COPY.

    python tests/bench/append_statements.py [--batches N] [--rounds R]

Where `tests/bench/ingest.py` charges a whole gateway phase, this measures Postgres alone: one psycopg
connection in autocommit sends batches of 100 entries (the ingest bench's rows) straight to the database, and
the backend's own CPU (user + system, from /proc) is divided by the rows written. Shapes, interleaved over R
rounds (the machine's load moves; each round runs every shape once):

  - `statement`: the gateway's append statement (governance/storage/staging_append.py), prepared: the
    task's row reserved, the rows read from one JSON array (`jsonb_array_elements`), RETURNING id, seq
  - `unnest`: the same statement reading five text arrays (`unnest`) instead of the JSON array
  - `binary COPY`: in a transaction, the reservation as its own statement, ids drawn from the table's
    identity sequence, then the 100 rows by binary `COPY` (`cursor.copy()` with `set_types`), then COMMIT
  - `statement x1000`: the append statement with 1,000 entries per call (what one statement for ten
    requests' batches would cost per row)
  - `group statement, 8 x 100`: the group commit's statement (one flush of eight requests' batches of 100
    on eight tasks, answered one row per request), what a gateway sends when eight appends arrive together
  - `statement, no flush wait`: the append statement with `synchronous_commit = off` for this session:
    what the commit's WAL flush costs per row. For reference only: an acknowledged append must survive a
    crash, so the gateway never runs this

and the baseline, the ingest bench's raw COPY of 200,000 rows in one transaction (its `_copy`, charged its
own backend's CPU), run at the start and at the end. Each shape's line prints its µs/row and its ratio to
the baseline's mean.
Not collected by pytest (tests/bench is outside the default run).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from api.cli.embedded import start_embedded_postgres  # noqa: E402
from governance.scopes import EntryKind  # noqa: E402
from governance.staging import (  # noqa: E402
    EntryDraft,
    PreparedBatch,
    canonical_payload,
    prepare_batch,
    request_hash,
)
from governance.storage.migrate import upgrade_head  # noqa: E402
from governance.storage.staging_append import _APPEND_PG, _GROUP_PG, _request_json  # noqa: E402
from tests.bench import ingest  # noqa: E402

_UNNEST = _APPEND_PG.replace(
    "v.e->>0, v.e->>1,\n               (v.e->>2)::json, v.e->>3, v.e->>4",
    "v.k, v.c, v.p::json, v.i, v.h",
).replace(
    "jsonb_array_elements(CAST(%(rows)s AS jsonb)) WITH ORDINALITY AS v(e, ord)",
    "unnest(%(kinds)s::text[], %(contents)s::text[], %(payloads)s::text[], %(keys)s::text[], "
    "%(hashes)s::text[]) WITH ORDINALITY AS v(k, c, p, i, h, ord)",
)
assert _UNNEST != _APPEND_PG and "unnest(" in _UNNEST and "v.e->>" not in _UNNEST

_RESERVE = (
    "UPDATE tasks SET next_seq = next_seq + %s, staged_bytes = staged_bytes + %s, ended_at = NULL "
    "WHERE id = %s AND closed_at IS NULL RETURNING next_seq"
)
_IDS = "SELECT nextval(pg_get_serial_sequence('staging_entries', 'id')) FROM generate_series(1, %s)"
_COPY = (
    "COPY staging_entries (id, task_id, seq, actor_id, actor_type, kind, content, payload, "
    "idempotency_key, request_hash) FROM STDIN (FORMAT BINARY)"
)
_COPY_TYPES = ["int8", "text", "int8", "text", "text", "text", "text", "json", "text", "text"]


def _batch(size: int) -> tuple[list[EntryDraft], PreparedBatch]:
    drafts = [
        EntryDraft(kind=EntryKind.TOOL_OUTPUT, content=f"{ingest.CONTENT}{i}", payload=ingest.PAYLOAD)
        for i in range(size)
    ]
    return drafts, prepare_batch(drafts)


def _backend_cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _raw_copy(url: str, fx: ingest.Fixture, rows: int, first_seq: int) -> float:
    """The ingest bench's baseline (the same rows through one plain COPY, `ingest._copy`), charged its own
    backend's CPU: µs per row."""
    draft = EntryDraft(kind=EntryKind.TOOL_OUTPUT, content=ingest.CONTENT, payload=ingest.PAYLOAD)
    payload, rhash = canonical_payload(ingest.PAYLOAD), request_hash(draft)
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT pg_backend_pid()").fetchone()
        assert row is not None
        cpu = _backend_cpu(int(row[0]))
        with (
            conn.cursor() as cur,
            cur.copy(
                "COPY staging_entries (task_id, seq, actor_id, actor_type, kind, content, payload, "
                "request_hash) FROM STDIN"
            ) as copy,
        ):
            for seq in range(first_seq, first_seq + rows):
                copy.write_row(
                    (
                        fx.copy_task_id,
                        seq,
                        fx.agent_id,
                        "agent",
                        "tool_output",
                        ingest.CONTENT,
                        payload,
                        rhash,
                    )
                )
        conn.commit()
        return 1e6 * (_backend_cpu(int(row[0])) - cpu) / rows


def _shapes(conn: psycopg.Connection[Any], fx: ingest.Fixture) -> dict[str, tuple[Callable[[], None], int]]:
    """Each shape: one call appending its batch, and the rows a call writes."""
    small, small_prep = _batch(100)
    big, big_prep = _batch(1000)
    payloads = [json.loads(row)[2] for row in small_prep.rows]

    def params(task_id: str, prep: PreparedBatch) -> dict[str, Any]:
        return {
            "n": len(prep.sizes),
            "size": sum(prep.sizes),
            "max_entries": 0,
            "max_bytes": 0,
            "key_hash": None,
            "task_id": task_id,
            "actor_id": fx.agent_id,
            "actor_type": "agent",
        }

    def statement(task_id: str, prep: PreparedBatch) -> Callable[[], None]:
        def run() -> None:
            values = params(task_id, prep) | {"rows": prep.rows_json()}
            conn.execute(_APPEND_PG, values, prepare=True).fetchall()

        return run

    def unnest() -> None:
        arrays = {
            "kinds": [d.kind.value for d in small],
            "contents": [d.content for d in small],
            "payloads": payloads,
            "keys": [None] * len(small),
            "hashes": small_prep.hashes,
        }
        conn.execute(_UNNEST, params(fx.task_ids[1], small_prep) | arrays, prepare=True).fetchall()

    def binary_copy() -> None:
        task_id, n = fx.task_ids[2], len(small)
        with conn.transaction():
            reserved = conn.execute(_RESERVE, (n, sum(small_prep.sizes), task_id), prepare=True).fetchone()
            assert reserved is not None
            first = int(reserved[0]) - n
            ids = [int(r[0]) for r in conn.execute(_IDS, (n,), prepare=True)]
            with conn.cursor().copy(_COPY) as copy:
                copy.set_types(_COPY_TYPES)
                for i, draft in enumerate(small):
                    copy.write_row(
                        (ids[i], task_id, first + i + 1, fx.agent_id, "agent", draft.kind.value,
                         draft.content, payloads[i], None, small_prep.hashes[i])
                    )  # fmt: skip

    no_flush = statement(fx.task_ids[4], small_prep)

    def group() -> None:
        reqs = ",".join(
            f'{{"i":{i},{_request_json(params(task_id, small_prep) | {"rows": small_prep.rows_json()})[1:]}'
            for i, task_id in enumerate(fx.task_ids[5:13])
        )
        conn.execute(_GROUP_PG, {"reqs": f"[{reqs}]"}, prepare=True).fetchall()

    def unflushed() -> None:
        conn.execute("SET synchronous_commit = off")
        try:
            no_flush()
        finally:
            conn.execute("SET synchronous_commit = on")

    return {
        "statement": (statement(fx.task_ids[0], small_prep), 100),
        "unnest": (unnest, 100),
        "binary COPY": (binary_copy, 100),
        "statement x1000": (statement(fx.task_ids[3], big_prep), 1000),
        "group statement, 8 x 100": (group, 800),
        "statement, no flush wait": (unflushed, 100),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batches", type=int, default=500, help="calls of 100 entries per shape and round")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--copy-rows", type=int, default=200_000)
    args = parser.parse_args()
    per_row: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="loregate-bench-") as tmp:
        server, _ = start_embedded_postgres(Path(tmp))
        try:
            server.psql("CREATE DATABASE bench;")
            url = server.get_uri("bench")
            upgrade_head(url)
            fx = asyncio.run(ingest._prepare(url, 13, False))
            copies = [_raw_copy(url, fx, args.copy_rows, 1)]
            with psycopg.connect(url, autocommit=True) as conn:
                row = conn.execute("SELECT pg_backend_pid()").fetchone()
                assert row is not None
                backend = int(row[0])
                shapes = _shapes(conn, fx)
                for _ in range(args.rounds):
                    for name, (run, rows) in shapes.items():
                        calls = max(1, args.batches * 100 // rows)
                        for _ in range(max(1, calls // 10)):  # warm: prepared, cached, pages in memory
                            run()
                        cpu, start = _backend_cpu(backend), time.perf_counter()
                        for _ in range(calls):
                            run()
                        elapsed = time.perf_counter() - start
                        used = _backend_cpu(backend) - cpu
                        per_row.setdefault(name, []).append(1e6 * used / (calls * rows))
                        print(f"  {name:<26} {per_row[name][-1]:5.1f} µs/row ({elapsed:.1f} s)", flush=True)
            copies.append(_raw_copy(url, fx, args.copy_rows, args.copy_rows + 1))
        finally:
            server.cleanup()
    baseline = statistics.mean(copies)
    print(f"machine load average : {os.getloadavg()[0]:.1f}")
    print(
        "raw COPY of {:,} rows, Postgres CPU: {} µs/row (mean {:.1f}: the baseline)".format(
            args.copy_rows, " / ".join(f"{c:.1f}" for c in copies), baseline
        )
    )
    for name, values in per_row.items():
        shown = " · ".join(f"{v:.1f}" for v in values)
        print(f"{name:<26}: {shown} µs/row   ratio to the raw COPY {statistics.mean(values) / baseline:.2f}")


if __name__ == "__main__":
    main()
