"""Reflection: distil a project's episodes into insights — what tends to work, what tends to fail, and when.

Pure rules (no I/O). The input is a window of a project's published episodes, each with its task's redacted
staging entries, its outcome and its embedding; some of them are *new* (not yet reflected). Episodes are
grouped by what they share, and every group of at least `min_support` episodes that holds a new one becomes
an insight naming the group's outcome rate:

- **error** — the same error signature (governance/bug_signature.py) met in several tasks: which fixes held
  (the error did not come back after them, and the task succeeded) and which did not;
- **decision** — the same decision (normalised text) taken in several tasks, and how often they succeeded
  (a decision that answered an error counts with that error instead, as a fix that held or not);
- **approach** — the same approach recorded as failed in several tasks: avoid it, with the reasons given;
- **tool** — tasks using the same tool (`tool_output` entries with a payload `tool`), and their success rate;
- **similar** — tasks whose episodes are close in embedding space (cosine ≥ `similarity`), their success
  rate, the decisions the successful ones took and the errors the failed ones met. Episodes are templated
  text, so they sit close: with the default e5 embedder, episodes of unrelated tasks of one project measured
  0.86-0.93 and two of the same kind of task 0.97, hence the default 0.95.

Each insight carries a canonical key (`insight.<kind>.<slug of its subject>`), so a later reflection over
the same group updates it (supersession by key) instead of adding a second one, and the ids of every episode
it was distilled from: the reflection writes them as `memory_derivations` links once the insight is published.
Order is deterministic (support, then key), so a retried reflection stages the same insights.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from governance.bug_signature import error_signature
from governance.cognify import StagedEntry, title_of
from governance.dedup import normalise_text
from governance.scopes import EntryKind

__all__ = [
    "KINDS",
    "MAX_INSIGHTS",
    "MAX_EPISODES_PER_INSIGHT",
    "EpisodeEvidence",
    "Insight",
    "ReflectionParams",
    "distil",
    "insight_key",
]

KINDS = ("error", "decision", "approach", "tool", "similar")
MAX_INSIGHTS = 20
# provenance kept per insight (the newest episodes): a staging payload stays well under the entry limit
MAX_EPISODES_PER_INSIGHT = 200
_TEXT_CHARS = 160
_SLUG = re.compile(r"[^a-z0-9]+")
_SLUG_CHARS = 60
_LIST_ITEMS = 3
WORKS_RATE = 0.7
FAILS_RATE = 0.3


@dataclass(frozen=True)
class EpisodeEvidence:
    """One published episode as reflection reads it: its outcome, its task's entries and its vector."""

    id: str
    task_id: str
    title: str
    success: bool
    importance: float
    entries: tuple[StagedEntry, ...] = ()
    embedding: tuple[float, ...] | None = None


@dataclass(frozen=True)
class Insight:
    """What a group of episodes teaches; `episode_ids` is its provenance."""

    kind: str
    key: str
    title: str
    content: str
    importance: float
    episode_ids: tuple[str, ...]
    support: int
    successes: int


@dataclass(frozen=True)
class ReflectionParams:
    """How much evidence makes an insight, and how close episodes must be to count as similar."""

    min_support: int = 2
    similarity: float = 0.95
    max_insights: int = MAX_INSIGHTS


@dataclass
class _Fix:
    text: str
    held: bool


@dataclass
class _Facts:
    """What one episode's staging says, reduced to the signatures reflection groups by."""

    errors: dict[str, str] = field(default_factory=dict)  # signature key -> signature text
    fixes: dict[str, list[_Fix]] = field(default_factory=dict)  # signature key -> fixes in order
    decisions: dict[str, str] = field(default_factory=dict)  # normalised -> as written
    failed: dict[str, list[str]] = field(default_factory=dict)  # normalised approach -> reasons
    failed_written: dict[str, str] = field(default_factory=dict)  # normalised approach -> as written
    tools: set[str] = field(default_factory=set)


def insight_key(kind: str, subject: str) -> str:
    """`insight.<kind>.<slug of the subject>`: what an insight is about, stable across reflections.

    Words, not a digest: a random-looking payload `key` is what secret redaction removes. A subject with no
    ASCII letters or digits falls back to a short digest.
    """
    slug = _SLUG.sub("-", subject.lower()).strip("-")[:_SLUG_CHARS].strip("-")
    if not slug:
        slug = "h" + hashlib.sha256(subject.encode("utf-8")).hexdigest()[:12]
    return f"insight.{kind}.{slug}"


def _short(text: str, limit: int = _TEXT_CHARS) -> str:
    one_line = " ".join(text.split())
    return one_line if len(one_line) <= limit else one_line[: limit - 1] + "…"


def _facts(entries: Sequence[StagedEntry]) -> _Facts:
    facts = _Facts()
    ordered = [e for e in entries if e.content.strip()]
    error_at: list[tuple[int, str]] = []
    for index, entry in enumerate(ordered):
        payload: dict[str, Any] = entry.payload or {}
        if entry.kind == EntryKind.ERROR:
            stack = payload.get("stack")
            signature = error_signature(entry.content, stack if isinstance(stack, str) else None)
            facts.errors.setdefault(signature.key, signature.text)
            error_at.append((index, signature.key))
        elif entry.kind == EntryKind.DECISION:
            written = title_of(entry.content, entry.payload)
            facts.decisions.setdefault(normalise_text(written), written)
        elif entry.kind == EntryKind.APPROACH and payload.get("outcome") == "failed":
            written = title_of(entry.content, entry.payload)
            reason = payload.get("reason")
            reasons = facts.failed.setdefault(normalise_text(written), [])
            facts.failed_written.setdefault(normalise_text(written), written)
            if isinstance(reason, str) and reason.strip():
                reasons.append(_short(reason, 80))
        if entry.kind == EntryKind.TOOL_OUTPUT and isinstance(payload.get("tool"), str):
            facts.tools.add(str(payload["tool"]).strip()[:60])
    # each error's fix is the first later result or decision; it held unless the same error came back
    for position, (index, key) in enumerate(error_at):
        fix_at = next(
            (
                i
                for i in range(index + 1, len(ordered))
                if ordered[i].kind in (EntryKind.RESULT, EntryKind.DECISION)
            ),
            None,
        )
        if fix_at is None:
            continue
        came_back = any(k == key and i > fix_at for i, k in error_at[position + 1 :])
        fixes = facts.fixes.setdefault(key, [])
        text = _short(ordered[fix_at].content)
        if all(f.text != text for f in fixes):
            fixes.append(_Fix(text, held=not came_back))
        # a decision that answered an error is judged with that error (did it hold?), not as a decision
        facts.decisions.pop(normalise_text(title_of(ordered[fix_at].content, ordered[fix_at].payload)), None)
    return facts


def _rate_words(successes: int, support: int) -> str:
    rate = successes / support if support else 0.0
    if rate >= WORKS_RATE:
        return "tends to work"
    if rate <= FAILS_RATE:
        return "tends to fail"
    return "works about half the time"


def _importance(support: int) -> float:
    return round(min(0.9, 0.55 + 0.05 * support), 3)


def _provenance(episodes: Sequence[EpisodeEvidence]) -> tuple[str, ...]:
    return tuple(e.id for e in episodes[-MAX_EPISODES_PER_INSIGHT:])


def _error_insight(key: str, signature: str, group: list[tuple[EpisodeEvidence, _Facts]]) -> Insight:
    episodes = [e for e, _ in group]
    successes = sum(e.success for e in episodes)
    stats: dict[str, list[int]] = {}  # fix -> [held and the task succeeded, attempts]
    for episode, facts in group:
        for fix in facts.fixes.get(key, []):
            counted = stats.setdefault(fix.text, [0, 0])
            counted[1] += 1
            counted[0] += int(fix.held and episode.success)
    ranked = sorted(stats.items(), key=lambda kv: (-kv[1][0] / kv[1][1], -kv[1][1], kv[0]))
    worked = [f"{fix} ({ok}/{n})" for fix, (ok, n) in ranked if ok / n >= WORKS_RATE][:_LIST_ITEMS]
    failed = [f"{fix} ({ok}/{n})" for fix, (ok, n) in ranked if ok / n <= FAILS_RATE][:_LIST_ITEMS]
    lines = [f"{signature} recurred in {len(episodes)} tasks ({successes} succeeded)."]
    if worked:
        lines.append("What worked: " + "; ".join(worked) + ".")
    if failed:
        lines.append("What did not: " + "; ".join(failed) + ".")
    return Insight(
        kind="error",
        key=insight_key("error", signature),
        title=_short(f"Recurring {signature}: " + (worked[0] if worked else "no fix held yet"), 80),
        content="\n".join(lines),
        importance=_importance(len(episodes)),
        episode_ids=_provenance(episodes),
        support=len(episodes),
        successes=successes,
    )


def _decision_insight(written: str, normalised: str, episodes: list[EpisodeEvidence]) -> Insight:
    successes = sum(e.success for e in episodes)
    words = _rate_words(successes, len(episodes))
    return Insight(
        kind="decision",
        key=insight_key("decision", normalised),
        title=_short(f"Decision {written!r} {words}", 80),
        content=(
            f"The decision {_short(written)!r} was taken in {len(episodes)} tasks: {successes} succeeded "
            f"({successes / len(episodes):.0%}); it {words}."
        ),
        importance=_importance(len(episodes)),
        episode_ids=_provenance(episodes),
        support=len(episodes),
        successes=successes,
    )


def _approach_insight(
    written: str, normalised: str, group: list[tuple[EpisodeEvidence, list[str]]]
) -> Insight:
    episodes = [e for e, _ in group]
    reasons = sorted({r for _, rs in group for r in rs})[:_LIST_ITEMS]
    content = f"The approach {_short(written)!r} failed in {len(episodes)} tasks: avoid it."
    if reasons:
        content += " Reasons given: " + "; ".join(reasons) + "."
    return Insight(
        kind="approach",
        key=insight_key("approach", normalised),
        title=_short(f"Avoid: {written}", 80),
        content=content,
        importance=_importance(len(episodes)),
        episode_ids=_provenance(episodes),
        support=len(episodes),
        successes=sum(e.success for e in episodes),
    )


def _tool_insight(tool: str, episodes: list[EpisodeEvidence]) -> Insight:
    successes = sum(e.success for e in episodes)
    words = _rate_words(successes, len(episodes))
    return Insight(
        kind="tool",
        key=insight_key("tool", tool.lower()),
        title=_short(f"Tasks using {tool} {words}", 80),
        content=(
            f"Tasks using the tool {tool!r}: {len(episodes)}, of which {successes} succeeded "
            f"({successes / len(episodes):.0%}); using it {words}."
        ),
        importance=_importance(len(episodes)),
        episode_ids=_provenance(episodes),
        support=len(episodes),
        successes=successes,
    )


def _similar_groups(episodes: Sequence[EpisodeEvidence], threshold: float) -> list[list[int]]:
    """Greedy single-pass clustering in episode order: each episode joins the first cluster whose seed it
    is close to (cosine ≥ threshold), else seeds its own. Deterministic for a given order."""
    indexed = [(i, e.embedding) for i, e in enumerate(episodes) if e.embedding is not None]
    if len(indexed) < 2:
        return []
    raw = np.asarray([v for _, v in indexed], dtype=np.float64)
    norms = np.linalg.norm(raw, axis=1, keepdims=True)
    matrix = raw / np.where(norms == 0, 1.0, norms)
    seeds: list[int] = []  # rows of `matrix`
    clusters: list[list[int]] = []
    for row in range(len(indexed)):
        if seeds:
            sims = matrix[seeds] @ matrix[row]
            best = int(np.argmax(sims))
            if float(sims[best]) >= threshold:
                clusters[best].append(indexed[row][0])
                continue
        seeds.append(row)
        clusters.append([indexed[row][0]])
    return clusters


def _similar_insight(group: list[tuple[EpisodeEvidence, _Facts]]) -> Insight:
    episodes = [e for e, _ in group]
    successes = sum(e.success for e in episodes)
    seed = episodes[0]
    label = seed.title.removeprefix("Episode: ")
    decided: dict[str, int] = {}
    met: dict[str, int] = {}
    for episode, facts in group:
        if episode.success:
            for written in facts.decisions.values():
                decided[written] = decided.get(written, 0) + 1
        else:
            for text in facts.errors.values():
                met[text] = met.get(text, 0) + 1
    lines = [
        f"{len(episodes)} similar tasks (like {_short(label, 80)!r}): {successes} succeeded; "
        f"such work {_rate_words(successes, len(episodes))}."
    ]
    if decided:
        top = sorted(decided.items(), key=lambda kv: (-kv[1], kv[0]))[:_LIST_ITEMS]
        lines.append("The successful ones decided: " + "; ".join(f"{d} ({n})" for d, n in top) + ".")
    if met:
        top = sorted(met.items(), key=lambda kv: (-kv[1], kv[0]))[:_LIST_ITEMS]
        lines.append("The failed ones met: " + "; ".join(f"{t} ({n})" for t, n in top) + ".")
    return Insight(
        kind="similar",
        # keyed by the cluster's first (oldest) episode's task: the cluster keeps it as it grows
        key=insight_key("similar", label),
        title=_short(f"Similar tasks ({label}) {_rate_words(successes, len(episodes))}", 80),
        content="\n".join(lines),
        importance=_importance(len(episodes)),
        episode_ids=_provenance(episodes),
        support=len(episodes),
        successes=successes,
    )


def distil(
    episodes: Sequence[EpisodeEvidence], new_ids: set[str], params: ReflectionParams = ReflectionParams()
) -> list[Insight]:
    """The insights a window of episodes (oldest first) supports, for groups holding a new episode."""
    if params.min_support < 2:
        raise ValueError("an insight needs at least two episodes")
    read = [(e, _facts(e.entries)) for e in episodes]
    insights: list[Insight] = []

    def holds_new(group: Sequence[EpisodeEvidence]) -> bool:
        return len(group) >= params.min_support and any(e.id in new_ids for e in group)

    signatures = {k: t for _, f in read for k, t in f.errors.items()}
    for key in sorted(signatures):
        group = [(e, f) for e, f in read if key in f.errors]
        if holds_new([e for e, _ in group]):
            insights.append(_error_insight(key, signatures[key], group))
    decisions: dict[str, str] = {}  # normalised -> as first written
    for _, f in read:
        for n, w in f.decisions.items():
            decisions.setdefault(n, w)
    for normalised in sorted(decisions):
        members = [e for e, f in read if normalised in f.decisions]
        if holds_new(members):
            insights.append(_decision_insight(decisions[normalised], normalised, members))
    approaches: dict[str, str] = {}
    for _, f in read:
        for n, w in f.failed_written.items():
            approaches.setdefault(n, w)
    for normalised in sorted(approaches):
        failed_group = [(e, f.failed[normalised]) for e, f in read if normalised in f.failed]
        if holds_new([e for e, _ in failed_group]):
            insights.append(_approach_insight(approaches[normalised], normalised, failed_group))
    tools = sorted({t for _, f in read for t in f.tools})
    for tool in tools:
        members = [e for e, f in read if tool in f.tools]
        if holds_new(members):
            insights.append(_tool_insight(tool, members))
    for cluster in _similar_groups(episodes, params.similarity):
        members = [episodes[i] for i in cluster]
        if holds_new(members):
            insights.append(_similar_insight([read[i] for i in cluster]))
    insights.sort(key=lambda i: (-i.support, KINDS.index(i.kind), i.key))
    return insights[: params.max_insights]
