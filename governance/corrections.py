"""Preferences from repeated corrections (pure rules): when is a human's correction "the same" one, and what
preference several of them propose.

A human writes a `correction` entry (`EntryKind.CORRECTION`) when an agent got something wrong in a way the
human wants done otherwise ("use pathlib, not os.path"). A correction by anyone but a human is kept in
staging and counts for nothing: an agent cannot teach the others its own taste.

**The same correction**: the entry's payload `key` when it names one (`{"key": "style.paths"}`, a canonical
key as in governance/cognify.py: lower-case dotted parts) — so corrections worded differently count together
when the human says so; otherwise its wording, normalised (Unicode NFKC, case-folded, punctuation and
repeated spaces dropped). The signature is a hash of either, so it can be recorded beside staging
(`staging_signals`, signal `correction`) without a copy of the text.

**A preference is proposed** once the same correction was written in `threshold` distinct tasks of one
project (`Settings.preference_corrections`, default 3), and only once per project and signature: the
proposal is a `preference` entry staged into the task of the correction that reached the threshold, so its
promotion carries it through the gate like any other candidate (approval where the scope asks for one;
redaction; dedup against a published preference of the same key).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from governance.cognify import canonical_key_of, title_of

__all__ = [
    "CORRECTION_SIGNAL",
    "PREFERENCE_SIGNAL",
    "correction_signature",
    "preference_key",
    "should_propose",
    "PreferenceProposal",
    "preference_proposal",
]

CORRECTION_SIGNAL = "correction"  # a human's correction, under its signature
PREFERENCE_SIGNAL = "preference"  # the preference proposed for a signature (once per project)


def _normalised(text: str) -> str:
    folded = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(re.sub(r"[^\w\s]", " ", folded).split())


def correction_signature(content: str, payload: Any) -> str:
    """What makes two corrections the same: the payload's canonical key, else the normalised wording."""
    key = canonical_key_of(content, payload if isinstance(payload, dict) else None)
    basis = f"key:{key}" if key is not None else f"text:{_normalised(content)}"
    return hashlib.sha256(basis.encode("utf-8")).hexdigest()[:40]


def preference_key(content: str, payload: Any, signature: str) -> str:
    """The proposed preference's canonical key: the corrections' own, else `preference.correction.<sig>`."""
    key = canonical_key_of(content, payload if isinstance(payload, dict) else None)
    return key if key is not None else f"preference.correction.{signature[:16]}"


def should_propose(tasks_seen: int, threshold: int, *, already_proposed: bool) -> bool:
    """Propose when the correction was seen in at least `threshold` tasks, and not proposed before."""
    return not already_proposed and tasks_seen >= threshold


@dataclass(frozen=True)
class PreferenceProposal:
    """The `preference` entry a repeated correction stages: content, and a payload naming its evidence."""

    content: str
    payload: dict[str, Any]


def preference_proposal(
    content: str, payload: Any, signature: str, *, tasks: list[str], entry_ids: list[int]
) -> PreferenceProposal:
    """The preference the latest correction's wording states, with the tasks and entries it was seen in."""
    text = content.strip()
    return PreferenceProposal(
        content=text,
        payload={
            "key": preference_key(text, payload, signature),
            "title": f"Preference: {title_of(text)}"[:80],
            "source": "corrections",
            "correction_signature": signature,
            "corrections": len(entry_ids),
            "tasks": tasks,
            "correction_entry_ids": entry_ids,
        },
    )
