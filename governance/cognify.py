"""Cognify: distil a task's (already redacted) staging entries into an analysis and candidate memories.

This is the deterministic, rule-based extractor — the default, and the fallback whenever an LLM is
configured but fails. It reads entry kinds:

- `fact`, `preference`, `profile`, `insight`, `skill` entries become candidates of that memory type,
  `rule` entries `code_rule` candidates (their confidence then follows observations, governance/trust.py);
- **insights come from reflection only**: an `insight` entry written by anyone but the system (the org's
  reflector, which stages what reflection distilled) is a `fact` candidate: an agent that calls its own
  note an insight does not make it one. An entry whose author is not known (`actor_type` None, callers that
  do not pass it yet) keeps its kind;
- **a rule is a proposal**: a `code_rule` candidate not written by a human carries
  `needs_human_approval`; `needs_human_approval(candidates, scope)` says a plan holding one must wait for a
  human's approval at every scope above task (an agent's rule binds others only once a human agrees);
- `decision` entries are the key decisions; a decision that names a canonical key also becomes a fact;
- `error` entries of a successful task become `bug_pattern` candidates, paired with the first later
  `result` or `decision` (what fixed it), keyed by the error's signature (`governance/bug_signature.py`;
  a payload `stack` is read too), so a later task meeting the same error merges into the same pattern;
  one pattern per signature per task: a fix after which the same error came back is recorded as tried
  without success (`Tried without success: …` lines), the last error's fix as what resolved it;
- `approach` entries whose payload says `{"outcome": "failed"}` feed the critique;
- `result` entries give the outcome summary; `{"repeatable": true}` in any payload marks the task repeatable.

**Canonical key convention** (what a memory is *about*; at most one active memory per scope and key):
the entry's payload field `"key"` (e.g. `{"key": "db.driver"}`) wins; otherwise a content of the form
`<dotted.key>: <value>` or `<dotted.key> = <value>` on its first line, where the key is lowercase letters,
digits, `_` and `-` in at least two dot-separated parts (`db.driver: psycopg 3`). Anything else has no key
and is deduplicated by content similarity only. Optional payload fields: `title`, `importance` (0–1).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from governance.bug_signature import FAILED_MARKER, FIX_MARKER, error_headline, error_signature
from governance.scopes import SCOPE_LEVEL, ActorType, EntryKind, MemoryType, Scope

__all__ = [
    "StagedEntry",
    "Candidate",
    "Analysis",
    "canonical_key_of",
    "title_of",
    "entry_memory_type",
    "needs_human_approval",
    "rule_proposal_reason",
    "RULE_PROPOSAL",
    "rule_based_analysis",
    "episode_candidate",
    "skill_candidate",
]

_KEY_FORM = re.compile(r"^\s*([a-z0-9_-]+(?:\.[a-z0-9_-]+)+)\s*[:=]\s*\S")
_KEY_VALUE = re.compile(r"^[a-z0-9_-]+(?:\.[a-z0-9_-]+)*$")
_TITLE_CHARS = 80

_DIRECT_TYPES: dict[str, MemoryType] = {
    EntryKind.FACT: MemoryType.FACT,
    EntryKind.PREFERENCE: MemoryType.PREFERENCE,
    EntryKind.PROFILE: MemoryType.PROFILE,
    EntryKind.INSIGHT: MemoryType.INSIGHT,
    EntryKind.SKILL: MemoryType.SKILL,
    EntryKind.RULE: MemoryType.CODE_RULE,
}
_DEFAULT_IMPORTANCE: dict[MemoryType, float] = {
    MemoryType.FACT: 0.6,
    MemoryType.PREFERENCE: 0.6,
    MemoryType.PROFILE: 0.6,
    MemoryType.INSIGHT: 0.6,
    MemoryType.SKILL: 0.7,
    MemoryType.BUG_PATTERN: 0.7,
    MemoryType.EPISODE: 0.5,
    MemoryType.CODE_RULE: 0.7,
}


@dataclass(frozen=True)
class StagedEntry:
    """One staging entry as cognify sees it (content already redacted)."""

    id: int
    seq: int
    kind: str
    content: str
    payload: dict[str, Any] | None = None
    created_at: datetime | None = None  # when it was appended: a `ttl_seconds` counts from here
    actor_type: str | None = None  # who wrote it (agent, orchestrator, human, system); None: not known


@dataclass(frozen=True)
class Candidate:
    """A memory the task suggests publishing; `source_entry_ids` is its provenance."""

    memory_type: str
    title: str
    content: str
    canonical_key: str | None = None
    importance: float = 0.5
    source_entry_ids: list[int] = field(default_factory=list)
    expires_at: datetime | None = None  # the earliest expiry of its source entries (governance/validity.py)
    # a rule nobody but a non-human wrote: published above task scope only with a human's approval
    needs_human_approval: bool = False
    # an episode's structured fields (governance/episodes.py `EpisodeStructure.to_json`); None otherwise
    structure: dict[str, Any] | None = None


@dataclass(frozen=True)
class Analysis:
    """What the task achieved and what it suggests remembering."""

    success: bool
    reward: float
    critique: str
    key_decisions: list[str]
    candidates: list[Candidate]
    repeatable: bool
    summary: str
    engine: str = "rule_based"


def canonical_key_of(content: str, payload: dict[str, Any] | None) -> str | None:
    """The canonical key by the convention in the module docstring, or None."""
    if payload and isinstance(payload.get("key"), str):
        key = payload["key"].strip().lower()
        return key if _KEY_VALUE.match(key) else None
    first_line = content.strip().splitlines()[0] if content.strip() else ""
    match = _KEY_FORM.match(first_line)
    return match.group(1) if match else None


def title_of(content: str, payload: dict[str, Any] | None = None) -> str:
    """Payload `title`, else the first line of the content, shortened."""
    if payload and isinstance(payload.get("title"), str) and payload["title"].strip():
        return str(payload["title"]).strip()[:_TITLE_CHARS]
    first_line = content.strip().splitlines()[0] if content.strip() else "(empty)"
    return first_line if len(first_line) <= _TITLE_CHARS else first_line[: _TITLE_CHARS - 1] + "…"


def _importance(memory_type: MemoryType, payload: dict[str, Any] | None) -> float:
    raw = payload.get("importance") if payload else None
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        return min(1.0, max(0.0, float(raw)))
    return _DEFAULT_IMPORTANCE.get(memory_type, 0.5)


def entry_memory_type(entry: StagedEntry) -> MemoryType | None:
    """The memory type an entry of a direct kind becomes (module docstring), or None for other kinds."""
    memory_type = _DIRECT_TYPES.get(entry.kind)
    if memory_type is MemoryType.INSIGHT and entry.actor_type not in (None, ActorType.SYSTEM.value):
        return MemoryType.FACT  # insights come from reflection only
    return memory_type


def needs_human_approval(candidates: Sequence[Candidate], scope: Scope | str) -> bool:
    """A plan of these candidates at `scope` waits for a human: it holds a rule a non-human proposed and the
    scope is above task."""
    return SCOPE_LEVEL[Scope(scope)] > SCOPE_LEVEL[Scope.TASK] and any(
        c.needs_human_approval for c in candidates
    )


RULE_PROPOSAL = "a rule proposed by a non-human: it binds others only once a human approves it"


def rule_proposal_reason(memory_type: str, scope: Scope | str, *, written_by_non_human: bool) -> str | None:
    """Why a plan item must wait for a human: a `code_rule` a non-human wrote, planned above task scope.

    The plan holds it back like an instruction aimed at agents (governance/instructions.py): the promotion
    waits for a human at any scope, and publishes it only with one's approval.
    """
    if memory_type != MemoryType.CODE_RULE.value or not written_by_non_human:
        return None
    return RULE_PROPOSAL if SCOPE_LEVEL[Scope(scope)] > SCOPE_LEVEL[Scope.TASK] else None


def _candidate(memory_type: MemoryType, entry: StagedEntry, content: str | None = None) -> Candidate:
    text = content if content is not None else entry.content
    return Candidate(
        memory_type=memory_type.value,
        title=title_of(entry.content, entry.payload),
        content=text,
        canonical_key=canonical_key_of(entry.content, entry.payload),
        importance=_importance(memory_type, entry.payload),
        source_entry_ids=[entry.id],
        needs_human_approval=memory_type is MemoryType.CODE_RULE
        and entry.actor_type != ActorType.HUMAN.value,
    )


def _stack_of(payload: dict[str, Any]) -> str | None:
    stack = payload.get("stack")
    return stack if isinstance(stack, str) else None


def _fix_after(entries: list[StagedEntry], index: int) -> int | None:
    return next(
        (
            i
            for i in range(index + 1, len(entries))
            if entries[i].kind in (EntryKind.RESULT, EntryKind.DECISION)
        ),
        None,
    )


def _bug_pattern(entries: list[StagedEntry], key: str, at: list[int]) -> Candidate | None:
    """One task's bug pattern for one error signature: the first error, the fixes that did not hold (the
    same error came back after them) and the fix that did (the last error's), or None without a fix."""
    fixes = [_fix_after(entries, i) for i in at]
    final = fixes[-1]
    if final is None:
        return None
    failed: list[int] = []
    for fix, later in zip(fixes, at[1:], strict=False):
        if fix is not None and fix < later and fix not in failed:
            failed.append(fix)
    first = entries[at[0]]
    content = first.content.strip()
    content += "".join(f"{FAILED_MARKER}{entries[f].content.strip()}" for f in failed)
    content += f"{FIX_MARKER}{entries[final].content.strip()}"
    bug = _candidate(MemoryType.BUG_PATTERN, first, content)
    ids = sorted({*(entries[i].id for i in at), *(entries[f].id for f in failed), entries[final].id})
    # named by the error's headline unless the entry names it (a traceback's first line names nothing)
    title = title_of(error_headline(first.content) or first.content, first.payload)
    return Candidate(**{**bug.__dict__, "title": title, "canonical_key": key, "source_entry_ids": ids})


def _reward(success: bool, errors: int, failed_approaches: int) -> float:
    # success earns most of the reward; every detour (error, failed approach) costs a little of it
    if success:
        return round(max(0.5, 1.0 - 0.1 * errors - 0.05 * failed_approaches), 3)
    return round(max(0.0, 0.3 - 0.05 * (errors + failed_approaches)), 3)


def rule_based_analysis(task_description: str, entries: list[StagedEntry], *, success: bool) -> Analysis:
    """Analyse entries (in sequence order) deterministically; `success` is the verification outcome."""
    candidates: list[Candidate] = []
    decisions: list[str] = []
    errors: list[StagedEntry] = []
    failed_approaches: list[str] = []
    results: list[str] = []
    bug_groups: dict[str, list[int]] = {}  # error signature key -> indexes of its error entries
    repeatable = False
    for index, entry in enumerate(entries):
        if not entry.content.strip():
            continue
        payload = entry.payload or {}
        repeatable = repeatable or payload.get("repeatable") is True
        if (memory_type := entry_memory_type(entry)) is not None:
            if memory_type is not MemoryType.SKILL or success:
                candidates.append(_candidate(memory_type, entry))
        elif entry.kind == EntryKind.DECISION:
            decisions.append(title_of(entry.content, entry.payload))
            if canonical_key_of(entry.content, entry.payload):
                candidates.append(_candidate(MemoryType.FACT, entry))
        elif entry.kind == EntryKind.ERROR:
            errors.append(entry)
            # the error's signature is its key: a later task meeting the same error merges into it
            key = error_signature(entry.content, _stack_of(payload)).key
            bug_groups.setdefault(key, []).append(index)
        elif entry.kind == EntryKind.APPROACH and payload.get("outcome") == "failed":
            failed_approaches.append(title_of(entry.content, entry.payload))
        elif entry.kind == EntryKind.RESULT:
            results.append(entry.content.strip())
    if success:
        candidates += [bug for key, at in bug_groups.items() if (bug := _bug_pattern(entries, key, at))]
    critique_parts: list[str] = []
    if errors:
        critique_parts.append(
            f"{len(errors)} error(s) on the way: " + "; ".join(title_of(e.content) for e in errors[:5])
        )
    if failed_approaches:
        critique_parts.append("failed approaches: " + "; ".join(failed_approaches[:5]))
    if not critique_parts:
        critique_parts.append("no errors or failed approaches recorded")
    summary = results[-1] if results else task_description
    return Analysis(
        success=success,
        reward=_reward(success, len(errors), len(failed_approaches)),
        critique=("Succeeded; " if success else "Failed; ") + "; ".join(critique_parts) + ".",
        key_decisions=decisions,
        candidates=candidates if success else [],
        repeatable=success and (repeatable or any(c.memory_type == MemoryType.SKILL for c in candidates)),
        summary=summary,
    )


def episode_candidate(
    task_id: str,
    task_description: str,
    analysis: Analysis,
    entry_ids: list[int],
    structure: dict[str, Any] | None = None,
) -> Candidate:
    """The Reflexion episode of a task: what was tried, how it went, what to do differently; `structure`
    (governance/episodes.py) travels beside the prose, which it leaves as it is."""
    lines = [
        f"Task {task_id}: {task_description}",
        f"Outcome: {'success' if analysis.success else 'failure'} (reward {analysis.reward:.2f})",
        f"Critique: {analysis.critique}",
    ]
    if analysis.key_decisions:
        lines.append("Key decisions: " + "; ".join(analysis.key_decisions))
    if analysis.summary and analysis.summary != task_description:
        lines.append(f"Result: {analysis.summary}")
    return Candidate(
        memory_type=MemoryType.EPISODE.value,
        title=title_of(f"Episode: {task_description}"),
        content="\n".join(lines),
        canonical_key=None,
        importance=round(0.4 + 0.4 * analysis.reward, 3),
        source_entry_ids=entry_ids,
        structure=structure,
    )


def skill_candidate(task_description: str, analysis: Analysis, entry_ids: list[int]) -> Candidate | None:
    """A skill for a repeatable success that named none itself: the task and its key decisions as steps."""
    if not (analysis.success and analysis.repeatable):
        return None
    if any(c.memory_type == MemoryType.SKILL for c in analysis.candidates):
        return None
    steps = analysis.key_decisions or [analysis.summary]
    body = "\n".join(f"{n}. {step}" for n, step in enumerate(steps, start=1))
    return Candidate(
        memory_type=MemoryType.SKILL.value,
        title=title_of(f"How to: {task_description}"),
        content=f"How to: {task_description}\n{body}",
        canonical_key=None,
        importance=_DEFAULT_IMPORTANCE[MemoryType.SKILL],
        source_entry_ids=entry_ids,
    )
