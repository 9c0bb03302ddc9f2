"""Change requests to published memory (pure): what a supersede, retire or lift becomes, and with what trust.

At a scope whose policy requires validation (project and org by default), a supersede or retire by anyone
but a human allowed to approve that scope is a **change request**: nothing changes until a principal allowed
to approve decides it (workflows/change_requests.py). A human approver's own call applies at once and is
recorded as the approval it is.

A superseding memory never inherits the old one's trust: a change a human validated (a human approver's
own supersede, or a change request a human approved) is a human validation (`published_trust(True, None,
human_approved=True)`: 1.0, `human_approved`); one approved by a non-human approver (the system principal at
org scope) counts as verified work (0.6); a non-human's direct supersede, where no approval is needed, is a
draft (0.3). Its content is redacted as promotion redacts staging, and its title is its own (given and
redacted, or the first line of the redacted content), never the old memory's.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from governance.cognify import title_of
from governance.errors import InvalidInput
from governance.redaction import redact
from governance.trust import INITIAL_DRAFT, STANDING_LABELS, Standing, is_earned, published_trust

__all__ = [
    "ChangeOperation",
    "ChangeTrust",
    "ProposedContent",
    "change_trust",
    "proposed_content",
    "direct_change_refusal",
]


class ChangeOperation(StrEnum):
    """What a change request asks for."""

    SUPERSEDE = "supersede"
    RETIRE = "retire"
    LIFT = "lift"  # publish copies of memories at a wider scope (governance/lifting.py)


class ChangeTrust(StrEnum):
    """Whose word stands behind a superseding memory."""

    HUMAN_VALIDATED = "human_validated"  # a human allowed to approve the scope wrote or approved it
    APPROVED = "approved"  # a non-human principal allowed to approve the scope approved it
    DRAFT = "draft"  # nobody approved it (a scope without validation)


def change_trust(trust: ChangeTrust | str) -> tuple[float, str | None]:
    """Confidence and validation source a superseding memory starts with."""
    match ChangeTrust(trust):
        case ChangeTrust.HUMAN_VALIDATED:
            return published_trust(True, None, human_approved=True)
        case ChangeTrust.APPROVED:
            return published_trust(True, None, human_approved=False)
        case _:
            return INITIAL_DRAFT, None


@dataclass(frozen=True)
class ProposedContent:
    """Redacted content and title of a superseding memory, and what redaction removed (counts only)."""

    content: str
    title: str
    redaction_counts: dict[str, int]


def proposed_content(content: str, title: str | None = None) -> ProposedContent:
    """The content and title a supersede may write: redacted, the title its own.

    InvalidInput when nothing is left of the content once secrets and `<private>` spans are removed.
    """
    cleaned = redact(content)
    if not cleaned.text.strip():
        raise InvalidInput("the superseding content is empty once secrets and <private> spans are removed")
    counts = dict(cleaned.counts)
    chosen = ""
    if title is not None and title.strip():
        given = redact(title)
        for kind, n in given.counts.items():
            counts[kind] = counts.get(kind, 0) + n
        chosen = given.text.strip()
    return ProposedContent(cleaned.text, chosen or title_of(cleaned.text), counts)


def direct_change_refusal(ref: str, *, standing: Standing, carries: str | None = None) -> str | None:
    """Why a non-approver may not supersede or retire this memory at once (where no change request is due),
    or None. Its own word does not replace what a human approved or others verified, and a superseding text
    carrying instructions aimed at agents (`carries`: `instructions.quarantine_reason`) would reach every
    reader unreviewed where a promotion holds it for a human."""
    if is_earned(standing):
        return (
            f"memory {ref!r} is {STANDING_LABELS[standing]}: a non-approver's own word does not replace or "
            "retire it; stage the correction in a task and promote it, or ask a human who may approve there"
        )
    if carries is not None:
        return (
            f"the new content carries instructions aimed at agents ({carries}): it reaches shared memory "
            "only through a promotion, whose plan waits for a human"
        )
    return None
