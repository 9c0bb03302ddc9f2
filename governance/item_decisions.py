"""Per-item decisions: an approval that rejects some plan items (each with a reason) or edits them.

An approver decides a plan at the granularity they review it: approve it whole, or approve it with some
items rejected (a reason is required, so the audit trail says why) and some edited (the approver's new
title and/or content). Every channel sends the same choices (`ItemChoice`: the item's plan index, the
decision, the reason or the new text) and meets the same rules, checked here:

- `check_choices`: the shape, without the plan's texts: a known decision, an index inside the plan, each
  item decided once, per-item decisions only with an approval; when the texts travel with the choices (the
  API's body, the Temporal UI's signal), a non-empty reason for a rejection, new text for an edit, and the
  size limits. The workflow's validator runs it on what it knows (the plan's size); the gateway and the
  approver check run it again with the texts.
- `check_against_plan`: with the plan items themselves: an edit of a quarantined item (instructions aimed
  at agents) is refused, since the edit would be published without the screening the quarantine asked
  for (reject it instead, or approve the plan as a human).
- `prepare`: what is stored for a choice: the reason cleaned as every free-text note is, the new text
  redacted as the gate redacts staging (secrets, `<private>` spans), and the word diff from the
  candidate's text to the approver's.

The texts live in Postgres (governance/storage/item_decisions.py) under a decision id; a workflow's
history carries indexes and decisions only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from governance.errors import Conflict, InvalidInput
from governance.word_diff import DiffOp, word_diff

__all__ = [
    "ItemDecisionKind",
    "ItemChoice",
    "PlanItemView",
    "PreparedChoice",
    "MAX_REASON_CHARS",
    "MAX_TITLE_CHARS",
    "check_choices",
    "check_against_plan",
    "prepare",
]

# a reason is a note, a title a title: both bounded as the API bounds notes; the content by the
# entry size limit the caller passes (what staging accepts is what an approver may write)
MAX_REASON_CHARS = 4000
MAX_TITLE_CHARS = 500
# what Postgres `text` cannot hold (NUL, lone surrogates): refused here, so no channel reaches the database
# with it (a Temporal UI signal's text is not validated by a request model)
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


class ItemDecisionKind(StrEnum):
    """What an approver does to one plan item (the others publish as planned)."""

    REJECT = "reject"
    EDIT = "edit"


@dataclass(frozen=True)
class ItemChoice:
    """One plan item's decision as a channel sends it: `{"index": 2, "decision": "reject", "reason": "…"}`
    or `{"index": 3, "decision": "edit", "title": "…", "content": "…"}` (either text may be left out).

    Through the API the texts stay in Postgres and the workflow gets the index and the decision only.
    """

    index: int
    decision: str
    reason: str = ""
    title: str | None = None
    content: str | None = None


@dataclass(frozen=True)
class PlanItemView:
    """What the checks and the diff need of one plan item."""

    index: int
    candidate_index: int
    title: str
    content: str
    quarantined: bool


@dataclass(frozen=True)
class PreparedChoice:
    """A checked choice as it is stored: cleaned reason, redacted new text, the original and the diffs."""

    index: int
    decision: ItemDecisionKind
    reason: str
    original_title: str
    original_content: str
    title: str | None
    content: str | None
    title_diff: list[DiffOp]
    content_diff: list[DiffOp]


def check_choices(
    choices: Sequence[ItemChoice],
    plan_total: int,
    *,
    approving: bool,
    texts_given: bool,
    max_content_bytes: int | None,
    quarantined: frozenset[int] = frozenset(),
) -> None:
    """Refuse choices that cannot apply to a plan of `plan_total` items (InvalidInput, Conflict).

    `texts_given`: the reasons and new texts travel with the choices (checked here); otherwise they were
    stored by the gateway, which checked them. `quarantined`: the quarantined indexes known to the caller.
    `max_content_bytes` None: the caller does not know the limit (a workflow reads no settings): the
    approver check, which does, checks it.
    """
    if not choices:
        return
    if not approving:
        raise InvalidInput("per-item decisions come with an approval; a rejection rejects the whole plan")
    seen: set[int] = set()
    for choice in choices:
        where = f"plan item {choice.index}"
        if choice.decision not in ItemDecisionKind.__members__.values():
            raise InvalidInput(f"{where}: decision must be 'reject' or 'edit', not {choice.decision!r}")
        if choice.index < 0 or choice.index >= plan_total:
            raise InvalidInput(
                f"{where} does not exist: the plan has {plan_total} items (indexes 0 to {plan_total - 1})"
                if plan_total
                else f"{where} does not exist: the plan has no items"
            )
        if choice.index in seen:
            raise InvalidInput(f"{where} is decided twice")
        seen.add(choice.index)
        if choice.decision == ItemDecisionKind.EDIT and choice.index in quarantined:
            raise _quarantined(choice.index)
        if texts_given:
            _check_texts(choice, where, max_content_bytes)


def _check_texts(choice: ItemChoice, where: str, max_content_bytes: int | None) -> None:
    for name, text in (("reason", choice.reason), ("title", choice.title), ("content", choice.content)):
        if text is not None and _UNSTORABLE.search(text):
            raise InvalidInput(f"{where}: the {name} holds a NUL or a lone surrogate, which cannot be stored")
    if len(choice.reason) > MAX_REASON_CHARS:
        raise InvalidInput(f"{where}: the reason is over {MAX_REASON_CHARS} characters")
    if choice.decision == ItemDecisionKind.REJECT:
        if not choice.reason.strip():
            raise InvalidInput(f"{where}: a rejected item needs a reason")
        if choice.title is not None or choice.content is not None:
            raise InvalidInput(f"{where}: a rejected item takes a reason, not new text")
        return
    if choice.title is None and choice.content is None:
        raise InvalidInput(f"{where}: an edit needs a new title or content")
    if choice.title is not None:
        if not choice.title.strip():
            raise InvalidInput(f"{where}: the edited title is empty")
        if len(choice.title) > MAX_TITLE_CHARS:
            raise InvalidInput(f"{where}: the edited title is over {MAX_TITLE_CHARS} characters")
    if choice.content is not None:
        if not choice.content.strip():
            raise InvalidInput(f"{where}: the edited content is empty")
        size = len(choice.content.encode("utf-8"))
        if max_content_bytes is not None and size > max_content_bytes:
            raise InvalidInput(
                f"{where}: the edited content is {size} bytes, over the limit of {max_content_bytes}"
            )


def _quarantined(index: int) -> Conflict:
    return Conflict(
        f"plan item {index} is quarantined (instructions aimed at agents): it cannot be edited; reject it, "
        "or approve the plan as it stands"
    )


def check_against_plan(choices: Sequence[ItemChoice], items: Mapping[int, PlanItemView]) -> None:
    """Refuse choices naming items the plan lacks (InvalidInput) or editing a quarantined one (Conflict)."""
    for choice in choices:
        item = items.get(choice.index)
        if item is None:
            raise InvalidInput(f"plan item {choice.index} does not exist")
        if choice.decision == ItemDecisionKind.EDIT and item.quarantined:
            raise _quarantined(choice.index)


def prepare(choice: ItemChoice, item: PlanItemView) -> PreparedChoice:
    """The stored form of a checked choice: reason cleaned, new text redacted, the approver's diff.

    The redaction is the gate's own (`redact`, as collect applies it to staging): an approver's edit is
    published like a candidate, so it may carry no secret and no `<private>` span either. It is imported
    here, not at the top: the workflow's contract imports this module, and clients (`loregate search`)
    import that contract's types without the detectors' start-up cost.
    """
    from governance.redaction import redact, redact_free_text

    kind = ItemDecisionKind(choice.decision)
    reason = redact_free_text(choice.reason.strip()) or ""
    title = redact(choice.title.strip()).text if choice.title is not None else None
    content = redact(choice.content).text if choice.content is not None else None
    return PreparedChoice(
        index=choice.index,
        decision=kind,
        reason=reason,
        original_title=item.title,
        original_content=item.content,
        title=title,
        content=content,
        title_diff=word_diff(item.title, title) if title is not None else [],
        content_diff=word_diff(item.content, content) if content is not None else [],
    )
