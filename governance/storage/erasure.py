"""Erasure: find what an erasure takes (one memory, a task, a subject) and delete it in one transaction.

`*_erasure_set` reads what would go (ids, titles, sha256 of each content, never the content itself into the
answer); `erase` deletes it in the caller's transaction, which also records the ERASED receipt
(api/services/erasure.py). What goes:

- memories (their embeddings are columns of the row; derivations, validations and votes cascade), and
  every memory derived (memory_derivations) only from erased memories; survivors drop erased ids from
  `related_ids`, `supersedes_id`, `source_entry_ids` and `source_task_ids`;
- what was built from what goes, to a fixed point (`_add_what_builds_on`): a reflection's insight entries
  naming an erased episode (they quote it), every candidate holding an erased entry or published or merged
  into an erased memory (its plan item goes with it: the plan API showed an erased memory's text), and every
  memory an erased candidate created, though later tasks merged into it (its text is the erased one's);
- a bug pattern's fixes an erased text holds or that hold the subject (`bug_patterns.solutions`: the
  context block's `try:` lines, `/v1/bug-patterns/match` and exports read them), in the tenants involved;
- staging entries and their idempotency keys, live signals and cited uses; a task's approaches and subtasks;
  its description; its working memory (hypotheses, files and symbols; a subject's wherever they hold it);
- promotion plans (candidates, plan items and the run's critique go with them) of the task, candidates
  holding the subject, and critiques quoting it;
- change requests about an erased memory or holding the subject in any text, its reason and decision note
  included (a lift: any of its memories or titles);
- a subject's subtasks (a task erasure takes all of the task's);
- `embedding_cache` rows keyed by the sha256 of an erased text;
- events about erased memories, of the erased task, or holding an erased text are scrubbed (reason and
  payload replaced), not deleted: the trail keeps that something happened, not what it said.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from sqlalchemy import insert, text
from sqlalchemy.ext.asyncio import AsyncConnection

from governance.storage.events import Event
from governance.storage.knowledge import erase_snapshots
from governance.storage.tables import memory_events
from governance.storage.working_memory import erase_working_memory

__all__ = [
    "ErasedMemory",
    "ErasedEntry",
    "ErasedCandidate",
    "ErasureSet",
    "content_sha256",
    "memory_erasure_set",
    "task_erasure_set",
    "subject_erasure_set",
    "tenant_archive_files",
    "erase",
    "record_receipt",
]

# what a scrubbed event's payload becomes
SCRUBBED = {"scrubbed": "erased"}


def content_sha256(content: str) -> str:
    """sha256 (hex) of a text: what a receipt keeps instead of the text (and the embedding cache's key)."""
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ErasedMemory:
    """A memory an erasure takes: its id, citation, scope, title and content hash."""

    id: str
    citation: str
    scope: str
    title: str
    content_sha256: str


@dataclass(frozen=True)
class ErasedEntry:
    """A staging entry an erasure takes."""

    id: int
    task_id: str
    seq: int
    kind: str
    content_sha256: str


@dataclass(frozen=True)
class ErasedCandidate:
    """A promotion candidate an erasure takes (its plan item goes with it)."""

    workflow_id: str
    run_id: str
    idx: int
    title: str
    content_sha256: str


@dataclass
class ErasureSet:
    """Everything one erasure takes; `texts` (the erased contents) never leave this process."""

    memories: list[ErasedMemory] = field(default_factory=list)
    entries: list[ErasedEntry] = field(default_factory=list)
    candidates: list[ErasedCandidate] = field(default_factory=list)
    plans: list[tuple[str, str]] = field(default_factory=list)  # (workflow id, run id), taken whole
    task_id: str | None = None  # a task erasure: its approaches, subtasks, description and events too
    subject: str | None = None
    org: str | None = None  # a subject erasure's tenant
    project: str | None = None
    workflows: list[str] = field(default_factory=list)  # Temporal workflows whose histories are involved
    archive_files: list[str] = field(default_factory=list)  # staging archive files (relative paths)
    texts: list[str] = field(default_factory=list)

    @property
    def memory_ids(self) -> list[str]:
        return [m.id for m in self.memories]

    @property
    def entry_ids(self) -> list[int]:
        return [e.id for e in self.entries]


_MEMORY_COLUMNS = "id::text AS id, citation, scope, title, content"


def _memory(row: Any) -> ErasedMemory:
    return ErasedMemory(row.id, row.citation, row.scope, row.title, content_sha256(row.content))


async def _add_memories(conn: AsyncConnection, found: ErasureSet, rows: Sequence[Any]) -> None:
    """Add `rows`, then every memory derived only from memories in the set (to a fixed point)."""
    seen = set(found.memory_ids)
    for row in rows:
        if row.id not in seen:
            seen.add(row.id)
            found.memories.append(_memory(row))
            found.texts.extend([row.content, row.title])
    while True:
        derived = (
            await conn.execute(
                text(
                    f"""
                    SELECT {_MEMORY_COLUMNS} FROM memories m WHERE m.id IN (
                        SELECT d.memory_id FROM memory_derivations d
                        GROUP BY d.memory_id
                        HAVING bool_and(d.derived_from_id::text = ANY(CAST(:ids AS text[])))
                    ) AND NOT (m.id::text = ANY(CAST(:ids AS text[])))
                    """
                ),
                {"ids": sorted(seen)},
            )
        ).all()
        if not derived:
            return
        for row in derived:
            seen.add(row.id)
            found.memories.append(_memory(row))
            found.texts.extend([row.content, row.title])


def _tasks(task_id: str | None) -> set[str]:
    return {task_id} if task_id is not None else set()


async def _add_workflows(conn: AsyncConnection, found: ErasureSet) -> None:
    """The promotion and change request workflows whose plans, outputs or requests involve what goes
    (their histories hold titles)."""
    rows = await conn.execute(
        text(
            # a plan that published it, or merged into or superseded it (its preview holds the target's title)
            "SELECT DISTINCT workflow_id FROM promotion_plan_items WHERE memory_id = ANY(CAST(:m AS text[])) "
            "OR target_id = ANY(CAST(:m AS text[])) "
            "UNION SELECT DISTINCT t.promotion_workflow_id FROM tasks t "
            "WHERE t.id = ANY(CAST(:t AS text[])) AND t.promotion_workflow_id IS NOT NULL "
            # every promotion of those tasks, the follow-ups too (promote-<key>-<n>)
            "UNION SELECT p.workflow_id FROM promotions p WHERE p.task_id = ANY(CAST(:t AS text[])) "
            # change requests (a lift's history holds its memories' titles), and those quoting the subject
            "UNION SELECT DISTINCT c.workflow_id FROM change_requests c "
            "LEFT JOIN change_request_items i ON i.request_id = c.id "
            "WHERE c.workflow_id IS NOT NULL AND (c.memory_id::text = ANY(CAST(:m AS text[])) "
            "OR i.memory_id::text = ANY(CAST(:m AS text[])) OR (CAST(:s AS text) IS NOT NULL AND ("
            "strpos(coalesce(c.content, ''), :s) > 0 OR strpos(coalesce(c.title, ''), :s) > 0 "
            "OR strpos(c.reason, :s) > 0 OR strpos(coalesce(c.decision_note, ''), :s) > 0 "
            "OR strpos(coalesce(i.title, ''), :s) > 0)))"
        ),
        {
            "m": found.memory_ids,
            "t": sorted({e.task_id for e in found.entries} | _tasks(found.task_id)),
            "s": found.subject,
        },
    )
    found.workflows = sorted(
        {*found.workflows, *(r[0] for r in rows)} | {c.workflow_id for c in found.candidates}
    )


def _add_candidates(found: ErasureSet, rows: Iterable[Any]) -> None:
    """Add the candidate rows not in the set yet, with their texts."""
    known = {(c.workflow_id, c.run_id, c.idx) for c in found.candidates}
    for row in rows:
        if (row.workflow_id, row.run_id, row.idx) not in known:
            known.add((row.workflow_id, row.run_id, row.idx))
            found.candidates.append(
                ErasedCandidate(row.workflow_id, row.run_id, row.idx, row.title, content_sha256(row.content))
            )
            found.texts.extend([row.content, row.title])


async def _add_what_builds_on(conn: AsyncConnection, found: ErasureSet) -> None:
    """Reflection entries naming an erased episode, candidates holding an erased entry or published into an
    erased memory, and the memories erased candidates created: added until nothing more is."""
    while True:
        size = (len(found.memories), len(found.entries), len(found.candidates))
        if not (found.memory_ids or found.entry_ids or found.candidates):
            return
        # a reflection's insight entry names the episodes it was distilled from, and quotes them
        rows = await conn.execute(
            text(
                "SELECT id, task_id, seq, kind, content FROM staging_entries "
                "WHERE kind = 'insight' "
                "AND jsonb_typeof(CAST(payload AS jsonb)->'reflection'->'episodes') = 'array' "
                "AND CAST(payload AS jsonb)->'reflection'->'episodes' ?| CAST(:m AS text[]) "
                "AND NOT (id = ANY(CAST(:e AS bigint[]))) ORDER BY task_id, seq"
            ),
            {"m": found.memory_ids, "e": found.entry_ids},
        )
        for row in rows:
            found.entries.append(
                ErasedEntry(row.id, row.task_id, row.seq, row.kind, content_sha256(row.content))
            )
            found.texts.append(row.content)
        rows = await conn.execute(
            text(
                "SELECT c.workflow_id, c.run_id, c.idx, c.title, c.content FROM promotion_candidates c "
                "WHERE c.source_entry_ids && CAST(:e AS bigint[]) OR EXISTS (SELECT 1 FROM "
                "promotion_plan_items i WHERE i.workflow_id = c.workflow_id AND i.run_id = c.run_id "
                "AND i.candidate_idx = c.idx AND i.memory_id = ANY(CAST(:m AS text[]))) "
                "ORDER BY c.workflow_id, c.run_id, c.idx"
            ),
            {"e": found.entry_ids, "m": found.memory_ids},
        )
        _add_candidates(found, rows)
        # a memory an erased candidate created holds its text, whoever merged into it since
        created = await conn.execute(
            text(
                f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE id::text IN (SELECT i.memory_id "
                "FROM promotion_plan_items i JOIN unnest(CAST(:w AS text[]), CAST(:r AS text[]), "
                "CAST(:i AS int[])) AS c(w, r, i) ON i.workflow_id = c.w AND i.run_id = c.r "
                "AND i.candidate_idx = c.i WHERE i.action IN ('promoted', 'superseded')) "
                "AND NOT (id::text = ANY(CAST(:m AS text[]))) ORDER BY created_at"
            ),
            {
                "w": [c.workflow_id for c in found.candidates],
                "r": [c.run_id for c in found.candidates],
                "i": [c.idx for c in found.candidates],
                "m": found.memory_ids,
            },
        )
        await _add_memories(conn, found, created.all())
        if (len(found.memories), len(found.entries), len(found.candidates)) == size:
            return


async def memory_erasure_set(conn: AsyncConnection, memory_id: str) -> ErasureSet:
    """One memory (by uuid) and the memories derived only from it."""
    found = ErasureSet()
    rows = (
        await conn.execute(
            text(f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE id = CAST(:i AS uuid)"), {"i": memory_id}
        )
    ).all()
    await _add_memories(conn, found, rows)
    await _add_what_builds_on(conn, found)
    await _add_workflows(conn, found)
    return found


async def task_erasure_set(conn: AsyncConnection, task_id: str) -> ErasureSet:
    """A task's staging, its promotion plans, and the memories derived only from it."""
    found = ErasureSet(task_id=task_id)
    entries = await conn.execute(
        text("SELECT id, task_id, seq, kind, content FROM staging_entries WHERE task_id = :t ORDER BY seq"),
        {"t": task_id},
    )
    for row in entries:
        found.entries.append(ErasedEntry(row.id, row.task_id, row.seq, row.kind, content_sha256(row.content)))
        found.texts.append(row.content)
    plans = await conn.execute(
        text("SELECT workflow_id, run_id FROM promotion_plans WHERE task_id = :t ORDER BY created_at"),
        {"t": task_id},
    )
    found.plans = [(r.workflow_id, r.run_id) for r in plans]
    await _add_plan_candidates(conn, found, "p.task_id = :t", {"t": task_id})
    memories = await conn.execute(
        text(
            f"SELECT {_MEMORY_COLUMNS} FROM memories "
            "WHERE source_task_ids = ARRAY[CAST(:t AS text)] ORDER BY created_at"
        ),
        {"t": task_id},
    )
    await _add_memories(conn, found, memories.all())
    archived = await conn.execute(
        text(
            "SELECT payload->>'relative_path' FROM memory_events "
            "WHERE event_type = 'STAGING_ARCHIVED' AND task_id = :t AND payload ? 'relative_path'"
        ),
        {"t": task_id},
    )
    found.archive_files = sorted(r[0] for r in archived)
    await _add_what_builds_on(conn, found)
    await _add_workflows(conn, found)
    return found


async def _add_plan_candidates(
    conn: AsyncConnection, found: ErasureSet, where: str, params: dict[str, Any]
) -> None:
    rows = await conn.execute(
        text(
            "SELECT c.workflow_id, c.run_id, c.idx, c.title, c.content FROM promotion_candidates c "
            "JOIN promotion_plans p ON p.workflow_id = c.workflow_id AND p.run_id = c.run_id "
            "JOIN tasks t ON t.id = p.task_id "
            f"WHERE {where} ORDER BY c.workflow_id, c.run_id, c.idx"
        ),
        params,
    )
    _add_candidates(found, rows)


def _json_fragment(needle: str) -> str:
    """How `needle` appears inside a JSON string (what `payload::text` holds)."""
    return json.dumps(needle, ensure_ascii=False)[1:-1]


async def subject_erasure_set(
    conn: AsyncConnection, subject: str, *, org: str, project: str | None
) -> ErasureSet:
    """Every staging entry, candidate and memory of a tenant whose text contains `subject` (exactly).

    `project` None: the whole org; else that project's rows (org-scope memories have no project: only an
    org-wide erasure takes them).
    """
    found = ErasureSet(subject=subject, org=org, project=project)
    tenant = {"o": org, "p": project, "s": subject, "j": _json_fragment(subject)}
    in_tenant = "t.org = :o AND (CAST(:p AS text) IS NULL OR t.project = :p)"
    entries = await conn.execute(
        text(
            "SELECT s.id, s.task_id, s.seq, s.kind, s.content FROM staging_entries s JOIN tasks t "
            f"ON t.id = s.task_id WHERE {in_tenant} AND (strpos(s.content, :s) > 0 "
            "OR strpos(coalesce(CAST(s.payload AS text), ''), :j) > 0) ORDER BY s.task_id, s.seq"
        ),
        tenant,
    )
    for row in entries:
        found.entries.append(ErasedEntry(row.id, row.task_id, row.seq, row.kind, content_sha256(row.content)))
        found.texts.append(row.content)
    await _add_plan_candidates(
        conn,
        found,
        f"{in_tenant} AND (strpos(c.content, :s) > 0 OR strpos(c.title, :s) > 0 "
        "OR strpos(coalesce(CAST(c.structure AS text), ''), :j) > 0)",
        tenant,
    )
    memories = await conn.execute(
        text(
            f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE org = :o "
            "AND (CAST(:p AS text) IS NULL OR project = :p) "
            "AND (strpos(content, :s) > 0 OR strpos(title, :s) > 0 "
            # an episode whose structured fields (a path, a pivot's why) quote the subject
            "OR EXISTS (SELECT 1 FROM episode_details x WHERE x.memory_id = memories.id "
            "AND strpos(CAST(x.structure AS text), :j) > 0)) ORDER BY created_at"
        ),
        tenant,
    )
    await _add_memories(conn, found, memories.all())
    await _add_what_builds_on(conn, found)
    await _add_workflows(conn, found)
    return found


async def tenant_archive_files(conn: AsyncConnection, *, org: str, project: str | None) -> list[str]:
    """The staging archive files (relative paths) of a tenant's tasks, named by STAGING_ARCHIVED events."""
    rows = await conn.execute(
        text(
            "SELECT DISTINCT e.payload->>'relative_path' FROM memory_events e "
            "JOIN tasks t ON t.id = e.task_id "
            "WHERE e.event_type = 'STAGING_ARCHIVED' AND e.payload ? 'relative_path' "
            "AND t.org = :o AND (CAST(:p AS text) IS NULL OR t.project = :p) ORDER BY 1"
        ),
        {"o": org, "p": project},
    )
    return [r[0] for r in rows]


async def erase(conn: AsyncConnection, found: ErasureSet) -> dict[str, int]:
    """Delete and scrub everything in `found`, in the caller's transaction; the counts of each kind."""
    ids, entry_ids, task = found.memory_ids, found.entry_ids, found.task_id
    needles = sorted({t for t in found.texts if t} | ({found.subject} if found.subject else set()))
    fragments = [_json_fragment(n) for n in needles]
    counts: dict[str, int] = {}

    async def run(name: str, sql: str, params: dict[str, Any]) -> None:
        result = await conn.execute(text(sql), params)
        counts[name] = counts.get(name, 0) + max(result.rowcount or 0, 0)

    # scrub the trail first: an event's reason or payload may quote what goes
    await run(
        "events_scrubbed",
        "UPDATE memory_events SET reason = NULL, payload = CAST(:scrubbed AS jsonb) "
        "WHERE event_type <> 'ERASED' AND (memory_id::text = ANY(CAST(:ids AS text[])) "
        "OR (CAST(:task AS text) IS NOT NULL AND task_id = :task) "
        "OR EXISTS (SELECT 1 FROM unnest(CAST(:needles AS text[])) n "
        "WHERE strpos(coalesce(reason, ''), n) > 0) "
        "OR EXISTS (SELECT 1 FROM unnest(CAST(:fragments AS text[])) f "
        "WHERE strpos(coalesce(CAST(payload AS text), ''), f) > 0))",
        {
            "ids": ids,
            "task": task,
            "needles": needles,
            "fragments": fragments,
            "scrubbed": json.dumps(SCRUBBED),
        },
    )
    await run(
        "change_requests",
        "DELETE FROM change_requests WHERE memory_id::text = ANY(CAST(:ids AS text[])) "
        "OR result_memory_id::text = ANY(CAST(:ids AS text[])) "
        "OR EXISTS (SELECT 1 FROM unnest(CAST(:needles AS text[])) n "
        "WHERE strpos(coalesce(content, ''), n) > 0 OR strpos(coalesce(title, ''), n) > 0 "
        "OR strpos(reason, n) > 0 OR strpos(coalesce(decision_note, ''), n) > 0) "
        # a lift's other memories and their titles (its items go with it)
        "OR EXISTS (SELECT 1 FROM change_request_items i WHERE i.request_id = change_requests.id "
        "AND (i.memory_id::text = ANY(CAST(:ids AS text[])) "
        "OR i.result_memory_id::text = ANY(CAST(:ids AS text[])) "
        "OR EXISTS (SELECT 1 FROM unnest(CAST(:needles AS text[])) n WHERE strpos(i.title, n) > 0)))",
        {"ids": ids, "needles": needles},
    )
    for wf, run_id in found.plans:
        await run(
            "plans",
            "DELETE FROM promotion_plans WHERE workflow_id = :w AND run_id = :r",
            {"w": wf, "r": run_id},
        )
    # an approver's per-item decisions keep the planned text beside the edit, and the reasons: they go
    # with their plan items, and wherever they quote what goes
    await run(
        "item_decisions",
        "DELETE FROM promotion_item_decisions WHERE EXISTS (SELECT 1 FROM unnest(CAST(:needles AS text[])) n "
        "WHERE strpos(original_title, n) > 0 OR strpos(original_content, n) > 0 OR strpos(reason, n) > 0 "
        "OR strpos(COALESCE(title, ''), n) > 0 OR strpos(COALESCE(content, ''), n) > 0)",
        {"needles": needles},
    )
    for c in found.candidates:
        params = {"w": c.workflow_id, "r": c.run_id, "i": c.idx}
        await run(
            "item_decisions",
            "DELETE FROM promotion_item_decisions WHERE workflow_id = :w AND run_id = :r AND idx IN "
            "(SELECT idx FROM promotion_plan_items "
            "WHERE workflow_id = :w AND run_id = :r AND candidate_idx = :i)",
            params,
        )
        await run(
            "plan_items",
            "DELETE FROM promotion_plan_items WHERE workflow_id = :w AND run_id = :r AND candidate_idx = :i",
            params,
        )
        await run(
            "candidates",
            "DELETE FROM promotion_candidates WHERE workflow_id = :w AND run_id = :r AND idx = :i",
            params,
        )
    await run(
        "embedding_cache",
        "DELETE FROM embedding_cache WHERE text_sha256 = ANY(CAST(:h AS text[]))",
        {"h": sorted({content_sha256(t) for t in found.texts})},
    )
    await run(
        "memories_relinked",
        "UPDATE memories SET related_ids = ARRAY(SELECT r FROM unnest(related_ids) r "
        "WHERE NOT (r::text = ANY(CAST(:ids AS text[])))), "
        "supersedes_id = CASE WHEN supersedes_id::text = ANY(CAST(:ids AS text[])) THEN NULL "
        "ELSE supersedes_id END, "
        "source_entry_ids = ARRAY(SELECT s FROM unnest(source_entry_ids) s "
        "WHERE NOT (s = ANY(CAST(:entries AS bigint[])))), "
        "source_task_ids = ARRAY(SELECT t FROM unnest(source_task_ids) t WHERE t IS DISTINCT FROM :task) "
        "WHERE NOT (id::text = ANY(CAST(:ids AS text[]))) AND (related_ids && CAST(:ids AS uuid[]) "
        "OR supersedes_id::text = ANY(CAST(:ids AS text[])) "
        "OR source_entry_ids && CAST(:entries AS bigint[]) "
        "OR (CAST(:task AS text) IS NOT NULL AND :task = ANY(source_task_ids)))",
        {"ids": ids, "entries": entry_ids, "task": task},
    )
    # a bug pattern's fixes an erased text held (a merged task's fix) or that name the subject, in the
    # tenants involved (another tenant's pattern with the same words keeps them)
    await run(
        "bug_pattern_fixes",
        """
        WITH orgs AS (
            SELECT org FROM tasks WHERE id = ANY(CAST(:tasks AS text[]))
            UNION SELECT org FROM memories WHERE id::text = ANY(CAST(:ids AS text[]))
            UNION SELECT CAST(:org AS text) WHERE CAST(:org AS text) IS NOT NULL
        ),
        touched AS (
            SELECT b.memory_id, COALESCE(jsonb_agg(x.s ORDER BY x.n) FILTER (WHERE NOT x.gone), '[]') AS kept
            FROM bug_patterns b JOIN memories m ON m.id = b.memory_id
            CROSS JOIN LATERAL (
                SELECT s, n, (CAST(:subject AS text) IS NOT NULL
                              AND strpos(s->>'solution', CAST(:subject AS text)) > 0)
                             OR length(s->>'solution') > 0 AND EXISTS (
                                SELECT 1 FROM unnest(CAST(:needles AS text[])) t
                                WHERE strpos(t, s->>'solution') > 0) AS gone
                FROM jsonb_array_elements(b.solutions) WITH ORDINALITY AS e(s, n)
            ) x
            WHERE m.org IN (SELECT org FROM orgs) AND NOT (b.memory_id::text = ANY(CAST(:ids AS text[])))
            GROUP BY b.memory_id HAVING bool_or(x.gone)
        )
        UPDATE bug_patterns b SET solutions = touched.kept FROM touched WHERE b.memory_id = touched.memory_id
        """,
        {
            "tasks": sorted({e.task_id for e in found.entries} | _tasks(task)),
            "ids": ids,
            "org": found.org,
            "needles": needles,
            "subject": found.subject,
        },
    )
    # project knowledge computed from what goes (its episodes' structured rows go with their memories)
    counts["project_knowledge"] = await erase_snapshots(
        conn,
        task_id=task,
        org=found.org if found.subject is not None else None,
        project=found.project,
        fragments=[*fragments, *(_json_fragment(m.citation) for m in found.memories)],
    )
    await run("memories", "DELETE FROM memories WHERE id::text = ANY(CAST(:ids AS text[]))", {"ids": ids})
    await run(
        "staging_idempotency",
        "DELETE FROM staging_idempotency WHERE entry_id = ANY(CAST(:e AS bigint[]))",
        {"e": entry_ids},
    )
    # what other tasks learnt from these entries (live signals) and the uses they cited go with them
    await run(
        "staging_signals",
        "DELETE FROM staging_signals WHERE entry_id = ANY(CAST(:e AS bigint[])) "
        "OR (CAST(:task AS text) IS NOT NULL AND task_id = :task)",
        {"e": entry_ids, "task": task},
    )
    await run(
        "memory_uses",
        "DELETE FROM memory_uses WHERE entry_id = ANY(CAST(:e AS bigint[])) "
        "OR (CAST(:task AS text) IS NOT NULL AND task_id = :task)",
        {"e": entry_ids, "task": task},
    )
    await run(
        "staging_entries",
        "DELETE FROM staging_entries WHERE id = ANY(CAST(:e AS bigint[]))",
        {"e": entry_ids},
    )
    if task is not None:
        await run("approaches", "DELETE FROM approaches WHERE task_id = :t", {"t": task})
        await run("subtasks", "DELETE FROM subtasks WHERE task_id = :t", {"t": task})
        # an erased task is closed: nothing more is staged or promoted under it
        await run(
            "tasks_scrubbed",
            "UPDATE tasks SET description = '[erased]', closed_at = coalesce(closed_at, now()), "
            "closed_reason = 'erased' WHERE id = :t",
            {"t": task},
        )
    wm = {"task_id": task, "subject": found.subject, "org": found.org, "project": found.project}
    counts.update(await erase_working_memory(conn, **wm, entry_ids=entry_ids))  # hypotheses, files, symbols
    if found.subject is not None:
        tenant = {"s": found.subject, "o": found.org, "p": found.project}
        in_tenant = "SELECT id FROM tasks WHERE org = :o AND (CAST(:p AS text) IS NULL OR project = :p)"
        await run(
            "approaches",
            "DELETE FROM approaches WHERE (strpos(text, :s) > 0 OR strpos(subtask, :s) > 0 "
            f"OR strpos(CAST(failure_reasons AS text), :j) > 0) AND task_id IN ({in_tenant})",
            {**tenant, "j": _json_fragment(found.subject)},
        )
        # a promotion run's critique (the API's `critique`) quoting the subject
        await run(
            "promotion_critiques",
            "UPDATE promotion_plans SET critique = NULL "
            f"WHERE strpos(critique, :s) > 0 AND task_id IN ({in_tenant})",
            tenant,
        )
        await run(
            "subtasks",
            f"DELETE FROM subtasks WHERE strpos(subtask, :s) > 0 AND task_id IN ({in_tenant})",
            tenant,
        )
        await run(
            "tasks_scrubbed",
            "UPDATE tasks SET description = '[erased]' "
            f"WHERE strpos(description, :s) > 0 AND id IN ({in_tenant})",
            tenant,
        )
    return counts


async def record_receipt(conn: AsyncConnection, receipt: Event) -> int:
    """Record an erasure's ERASED event (ids, counts, hashes) in the caller's transaction; its id."""
    row = {**asdict(receipt), "event_type": receipt.event_type.value}
    return int(
        (await conn.execute(insert(memory_events).values(row).returning(memory_events.c.id))).scalar_one()
    )
