"""Distil a promotion's staging snapshot into candidates, stored under the run's plan key.

The cognify activity heartbeats and maps its result; this is the use case, step by step: the snapshot's
entries read (after the last snapshot that published) and redacted, content and payload alike
(`_redacted`, off the event loop; staging keeps the raw text, so this is the entries' only redaction),
the task's description redacted too; the analysis (LLM if configured,
rule-based otherwise or on any LLM failure, `adapters/llm_cognifier.cognify`); the candidates redacted
again, with their expiry, the generated skill and the episode with its structured fields and the files and
symbols the task's working memory tracked (`_distilled`); then the candidates and the run's critique
written, replacing an earlier attempt's. Nothing of the content leaves: the caller gets counts.

A big task stages the same contents many times (10,000 entries of 1,000 texts), and each entry gives a
candidate quoting it: every distinct text and payload is redacted once per cognify (`SnapshotRedaction`),
not once per entry and twice more per candidate. Redaction is a function of the text and the rules, and
the memo lives for one call: the next cognify redacts with the rules of its day.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from governance.adapters.llm_cognifier import LLMCognifier, cognify
from governance.code_locations import MAX_LOCATIONS
from governance.cognify import Analysis, Candidate, StagedEntry, episode_candidate, skill_candidate
from governance.episodes import EntryView, episode_structure
from governance.operations import working_memory
from governance.redaction import Redaction, redact, redact_json
from governance.storage.plans import PlanKey, save_candidates
from governance.storage.promotions import promotion_by_workflow
from governance.storage.staging import get_task, snapshot_entries
from governance.validity import candidate_expiry, entry_expiry

__all__ = ["CRITIQUE_CHARS", "PREVIEW_CHARS", "Distillation", "SnapshotRedaction", "distil", "preview"]

# a text shortened where it is kept short (the run's critique, at most CRITIQUE_CHARS)
PREVIEW_CHARS = 200
CRITIQUE_CHARS = 2000


@dataclass(frozen=True)
class Distillation:
    """What cognify made of a snapshot: the analysis, why the LLM's was not used, what redaction removed,
    and how many candidates of each type it stored."""

    analysis: Analysis
    fallback_reason: str | None
    redaction_counts: dict[str, int]
    candidate_types: dict[str, int]

    @property
    def candidate_count(self) -> int:
        return sum(self.candidate_types.values())


class SnapshotRedaction:
    """One cognify's redaction: each distinct text, and each distinct payload, redacted once.

    `redact` and `redact_json` answer the same for the same input, so an entry gets what it would get
    alone; the payload is handed out as a fresh copy each time (no two entries share a dict). Nothing is
    kept past the call, so a change to the redaction rules applies to the next cognify.
    """

    def __init__(self) -> None:
        self._texts: dict[str, Redaction] = {}
        self._payloads: dict[str, tuple[str, dict[str, int]]] = {}

    def text(self, text: str) -> Redaction:
        """`redact(text)`, computed once per distinct text."""
        done = self._texts.get(text)
        if done is None:
            done = self._texts[text] = redact(text)
        return done

    def payload(self, payload: dict[str, Any]) -> tuple[dict[str, Any], dict[str, int]]:
        """`redact_json(payload)`, computed once per distinct payload (the same JSON, keys in the same
        order: a JSONB value's text)."""
        key = json.dumps(payload, ensure_ascii=False)
        done = self._payloads.get(key)
        if done is None:
            cleaned, counts = redact_json(payload)
            done = self._payloads[key] = (json.dumps(cleaned, ensure_ascii=False), counts)
        cleaned_json, counts = done
        return json.loads(cleaned_json), dict(counts)


def preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    """`text` shortened to `limit` characters (an ellipsis says it was)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


async def distil(
    engine: AsyncEngine,
    key: PlanKey,
    *,
    task_id: str,
    description: str,
    last_seq: int,
    success: bool,
    llm: LLMCognifier | None,
) -> Distillation:
    """Analyse the redacted snapshot `seq <= last_seq` of the task and store its candidates under `key`.

    `description` stands in only for a task the database no longer has (histories once carried it)."""
    async with engine.connect() as conn:
        promotion = await promotion_by_workflow(conn, key.workflow_id)
        after_seq = promotion.after_seq if promotion is not None else 0
        rows = await snapshot_entries(conn, task_id, up_to_seq=last_seq, after_seq=after_seq)
        # redaction is CPU work (a big task's snapshot takes seconds): off the event loop
        redaction = SnapshotRedaction()
        entries, counts = await asyncio.to_thread(_redacted, rows, redaction)
        task = await get_task(conn, task_id)
    # the episode and a generated skill quote the description (title included): it is redacted too
    description = redact(task.description if task is not None else description).text
    outcome = await cognify(description, entries, success=success, llm=llm)
    analysis = outcome.analysis
    # working memory feeds the episode: the files and symbols the agent tracked
    tracked = await working_memory.tracked(engine, task_id, MAX_LOCATIONS)
    candidates = await asyncio.to_thread(
        _distilled, task_id, description, analysis, entries, tracked, redaction
    )
    critique = preview(redact(analysis.critique).text, CRITIQUE_CHARS)
    async with engine.begin() as conn:
        await save_candidates(conn, key, task_id, candidates, critique=critique)
    return Distillation(
        analysis=analysis,
        fallback_reason=outcome.fallback_reason,
        redaction_counts=counts,
        candidate_types=dict(Counter(c.memory_type for c in candidates)),
    )


def _redacted(
    rows: Sequence[Any], redaction: SnapshotRedaction | None = None
) -> tuple[list[StagedEntry], dict[str, int]]:
    """The snapshot's entries as cognify sees them, redacted, and what redaction removed, by kind (each
    entry counted, whether its text was redacted for it or for an earlier entry of the same text)."""
    redaction = redaction if redaction is not None else SnapshotRedaction()
    entries: list[StagedEntry] = []
    counts: dict[str, int] = {}
    for row in rows:
        cleaned = redaction.text(row.content)
        for kind, n in cleaned.counts.items():
            counts[kind] = counts.get(kind, 0) + n
        payload = row.payload if isinstance(row.payload, dict) else None
        if payload is not None:
            # key-aware: {"password": "hunter2"} has no secret shape, only a secret name
            payload, payload_counts = redaction.payload(payload)
            for kind, n in payload_counts.items():
                counts[kind] = counts.get(kind, 0) + n
        entries.append(
            StagedEntry(
                id=row.id,
                seq=row.seq,
                kind=row.kind,
                content=cleaned.text,
                payload=payload,
                created_at=row.created_at,
                actor_type=row.actor_type,  # an agent's insight is a fact; its rule needs a human
            )
        )
    return entries, counts


def _structure(
    description: str,
    analysis: Analysis,
    entries: list[StagedEntry],
    tracked: tuple[list[str], list[str]],
    redaction: SnapshotRedaction,
) -> dict[str, Any]:
    """The episode's structured fields (governance/episodes.py) from the redacted entries and the files and
    symbols the task's working memory tracked (redacted too: an agent names them freely)."""
    views = [
        EntryView(
            seq=e.seq,
            kind=e.kind,
            content=e.content,
            payload=e.payload,
            created_at_ms=e.created_at.timestamp() * 1000 if e.created_at is not None else None,
        )
        for e in entries
    ]
    files, symbols = ([redaction.text(v).text for v in values] for values in tracked)
    return episode_structure(
        description, views, success=analysis.success, tracked_files=files, tracked_symbols=symbols
    ).to_json()


def _distilled(
    task_id: str,
    description: str,
    analysis: Analysis,
    entries: list[StagedEntry],
    tracked: tuple[list[str], list[str]] = ([], []),
    redaction: SnapshotRedaction | None = None,
) -> list[Candidate]:
    """The analysis's candidates redacted again, with their expiry, the skill and the episode with its
    structured fields (CPU work)."""
    redaction = redaction if redaction is not None else SnapshotRedaction()
    entry_ids = [e.id for e in entries]
    # an entry's expires_at / ttl_seconds travels to what is distilled from it (not to the episode or a
    # generated skill, which quote the whole task)
    expiries = {e.id: t for e in entries if (t := entry_expiry(e.payload, e.created_at)) is not None}
    # the model could echo a secret it was never shown in full; candidates are redacted again
    candidates = [
        Candidate(
            **{
                **c.__dict__,
                "title": redaction.text(c.title).text,
                "content": redaction.text(c.content).text,
                "expires_at": candidate_expiry(c.source_entry_ids, expiries),
            }
        )
        for c in analysis.candidates
        if redaction.text(c.content).text.strip()
    ]
    skill = skill_candidate(description, analysis, entry_ids)
    if skill is not None:
        candidates.append(skill)
    structure = _structure(description, analysis, entries, tracked, redaction)
    episode = episode_candidate(task_id, description, analysis, entry_ids, structure)
    candidates.append(Candidate(**{**episode.__dict__, "content": redact(episode.content).text}))
    return candidates
