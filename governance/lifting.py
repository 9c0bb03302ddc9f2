"""Lifting published memory to a wider scope (pure): where a memory may go, and what its copy carries.

A memory lifts only upward along its own line — task → its worktree → its project → its org
(`scopes.can_promote`) — never to a narrower or the same scope, and never into another project or tenant:
the target scope key is computed from the memory's own place, and a caller naming another one is refused.
One request may lift several memories; they must all land in the same target scope key (one approval, one
lock).

What the lift publishes is a **copy** at the target scope (a new memory id), with the original's type,
canonical key, title and content (redacted again by the same rules as everything derived from staging),
its provenance (source tasks and staging entries), importance, decay policy, validity and expiry; it is
linked to the original (`memory_derivations`). The original is then **marked lifted**: deprecated with a
note naming the copy and a LIFTED event, so readers of its scope, who see the wider scope too, find one
memory rather than two. The copy passes the same dedup and supersession as a promotion's publish
(governance/dedup.py, rule-based judge): identical or near-identical knowledge already at the target is a
`duplicate` (the existing memory is reinforced and the original is marked lifted into it); a fact whose
canonical key has a different head at the target supersedes that head (`superseded`).

Trust (`lifted_trust`): a lift approved by a human is a human validation (1.0, `human_approved`); one
approved by a non-human approver (the system principal at org scope) counts as verified work (0.6) unless the
original already stood higher; where the target scope needs no approval the copy keeps the original's
confidence and validation source — the same evidence, and no new word on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from governance.changes import ChangeTrust, change_trust
from governance.errors import InvalidInput
from governance.instructions import quarantine_reason
from governance.limits import MAX_LIFT_ITEMS
from governance.redaction import redact
from governance.scopes import SCOPE_LEVEL, Scope, can_promote, scope_key

__all__ = [
    "MAX_LIFT_ITEMS",
    "LiftOutcome",
    "Place",
    "LiftedText",
    "lift_target",
    "target_project",
    "lifted_text",
    "lifted_trust",
    "lift_refusal",
    "unreviewed_lift_refusal",
]


class LiftOutcome(StrEnum):
    """What lifting one memory did at the target scope."""

    LIFTED = "lifted"  # a new memory at the target scope
    DUPLICATE = "duplicate"  # already there: merged into the existing memory
    SUPERSEDED = "superseded"  # the copy replaced the target's head for the same canonical key


@dataclass(frozen=True)
class Place:
    """Where a memory lives: its scope and the coordinates of its line (worktree/task when known)."""

    scope: Scope
    org: str
    project: str | None
    worktree: str | None
    task_id: str | None


def lift_target(place: Place, target: Scope, *, ref: str) -> str:
    """The scope key a memory at `place` lifts to at scope `target`; InvalidInput when it may not.

    A task memory's worktree must be known (its task's row); an org memory cannot be lifted at all.
    """
    if not can_promote(place.scope, target):
        relation = "the same scope as" if place.scope is target else "narrower than"
        raise InvalidInput(
            f"memory {ref!r} is at {place.scope.value} scope; {target.value} is {relation} it: a lift goes "
            "only to a wider scope (task → worktree → project → org)"
        )
    if target in (Scope.WORKTREE, Scope.PROJECT) and not place.project:
        raise InvalidInput(f"memory {ref!r} belongs to no project, so it lifts only to org scope")
    if target is Scope.WORKTREE and not place.worktree:
        raise InvalidInput(
            f"memory {ref!r}: the worktree of its task is unknown, so it lifts to project or org scope"
        )
    return scope_key(
        target,
        org=place.org,
        project=place.project or "",
        worktree=place.worktree or "",
        task_id=place.task_id or "",
    )


def target_project(target: Scope, project: str | None) -> str | None:
    """The project a lift's target belongs to (none for org scope)."""
    return None if SCOPE_LEVEL[target] >= SCOPE_LEVEL[Scope.ORG] else project


@dataclass(frozen=True)
class LiftedText:
    """The copy's title and content, redacted again, and what redaction removed (counts only)."""

    title: str
    content: str
    redaction_counts: dict[str, int]


def lifted_text(title: str, content: str) -> LiftedText:
    """The original's title and content through redaction (published text was redacted once already)."""
    body, head = redact(content), redact(title)
    counts = dict(body.counts)
    for kind, n in head.counts.items():
        counts[kind] = counts.get(kind, 0) + n
    if not body.text.strip():
        raise InvalidInput("the memory's content is empty once secrets and <private> spans are removed")
    return LiftedText(head.text.strip() or body.text.strip().splitlines()[0][:200], body.text, counts)


def lifted_trust(
    confidence: float, validation_source: str | None, approval: ChangeTrust | None
) -> tuple[float, str | None]:
    """Confidence and validation source of a lifted copy (see the module docstring)."""
    if approval is None or approval is ChangeTrust.DRAFT:
        return confidence, validation_source
    granted, source = change_trust(approval)
    if approval is ChangeTrust.HUMAN_VALIDATED or granted >= confidence:
        return granted, source
    return confidence, validation_source


def lift_refusal(
    *, reads_every_source: bool, deciding: bool = False, human: bool = False, approves_target: bool = False
) -> str | None:
    """Why a principal may not see (or, `deciding`, decide) a lift request, or None.

    A lift request shows its source memories (titles, and the first one's content), so it is visible only
    to a principal who may read **every** source memory, whatever it may do at the target: a project's
    memory lifted to org scope stays out of other projects' sight until it is published there. Deciding it
    takes a **human** who may read every source and approve at the target scope: a human of another project
    approves only what it can see, and no agent or orchestrator approves a lift (visibility at the target
    alone let both through).
    """
    if not reads_every_source:
        return "may not read every memory this lift carries"
    if not deciding:
        return None
    if not human:
        return "only a human decides a lift"
    if not approves_target:
        return "may not approve at the lift's target scope"
    return None


def unreviewed_lift_refusal(
    ref: str, *, memory_type: str, content: str, validation_source: str | None, human: bool
) -> str | None:
    """Why a non-human may not lift this memory where no approval is due (a task memory into its worktree),
    or None. What a promotion would hold for a human must not reach a wider scope through a lift: a code rule
    nobody human approved (it binds every agent there) and a text carrying instructions aimed at agents."""
    if human:
        return None
    if memory_type == "code_rule" and validation_source != "human_approved":
        return (
            f"memory {ref!r} is a rule no human approved: a rule binds every agent where it lands, so it is "
            "lifted by a human, or promoted there (its plan waits for a human)"
        )
    reason = quarantine_reason(content)
    if reason is not None:
        return (
            f"memory {ref!r} carries instructions aimed at agents ({reason}): lifted by a human only, or "
            "promoted there (its plan waits for a human)"
        )
    return None
