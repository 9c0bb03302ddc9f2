"""Export files and imports (pure): the file's shape, its digest, and what an import through the gate stages.

An export is JSON Lines, one typed record a line: a `header` (format, version, tenant, scope, time, who),
then `memory` records, `event` records (the audit trail of those memories), optional `staging` records,
and a closing `trailer` with the counts. A file whose trailer is missing or whose counts disagree was cut
short, and is refused as a whole. Embeddings are not in the file: they follow the embedder configured where
the file is imported, so they are recomputed there (from the embedding cache when it has them).

An import through the gate turns each active memory of the file into a staging entry of one import task and
promotes it like any task's work: the task id comes from the file's sha256 and the target scope, and each
entry's idempotency key from its line, so importing the same file again changes nothing.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from governance.bug_signature import FIX_MARKER
from governance.scopes import EntryKind, MemoryType

__all__ = [
    "EXPORT_FORMAT",
    "EXPORT_VERSION",
    "RecordKind",
    "file_digest",
    "import_task_id",
    "ImportEntry",
    "entries_for_gate",
]

EXPORT_FORMAT = "loregate-export"
EXPORT_VERSION = 1


class RecordKind:
    """The `kind` of each line of an export."""

    HEADER = "header"
    MEMORY = "memory"
    EVENT = "event"
    STAGING = "staging"
    TRAILER = "trailer"


def file_digest(data: bytes) -> str:
    """sha256 (hex) of the file's bytes: names its import task and its entries' idempotency keys."""
    return hashlib.sha256(data).hexdigest()


def import_task_id(digest: str, target_scope_key: str) -> str:
    """The import task of a file into a scope: the same file into the same scope is the same task."""
    scope_hash = hashlib.sha256(target_scope_key.encode("utf-8")).hexdigest()
    return f"import-{digest[:24]}-{scope_hash[:8]}"


# the staging kind each published type is distilled from again (governance/cognify.py reads them back)
_KIND_OF: dict[str, EntryKind] = {
    MemoryType.FACT: EntryKind.FACT,
    MemoryType.PREFERENCE: EntryKind.PREFERENCE,
    MemoryType.PROFILE: EntryKind.PROFILE,
    MemoryType.INSIGHT: EntryKind.INSIGHT,
    MemoryType.SKILL: EntryKind.SKILL,
    MemoryType.CODE_RULE: EntryKind.RULE,
}


@dataclass(frozen=True)
class ImportEntry:
    """A staging entry an import appends, with the file line it comes from."""

    line: int
    kind: str
    content: str
    payload: dict[str, Any]
    idempotency_key: str


def _payload(memory: dict[str, Any], now: datetime) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "title": memory["title"],
        "importance": memory["importance"],
        "imported_from": {"memory_id": memory["id"], "citation": memory["citation"]},
    }
    if memory.get("canonical_key"):
        payload["key"] = memory["canonical_key"]
    if memory.get("decay_policy") in ("recency_bias", "stable", "manual_only"):
        payload["decay_policy"] = memory["decay_policy"]  # published again only as the gate allows it
    expires_at = memory.get("expires_at")
    if isinstance(expires_at, datetime) and expires_at > now:
        payload["expires_at"] = expires_at.isoformat()
    return payload


def entries_for_gate(
    memories: list[tuple[int, dict[str, Any]]], digest: str, *, now: datetime
) -> tuple[list[ImportEntry], dict[str, int]]:
    """The staging entries that bring `memories` (line, record) through the gate, and what was left out.

    Only active memories are imported (superseded, retired and expired ones are history, and would fight
    their successors in dedup). Episodes are the record of their own task and are not carried over: the
    import's promotion records its own. A bug pattern becomes its error and the fix that resolved it, so the
    gate keys it by its signature again. Left-out counts are by reason.
    """
    entries: list[ImportEntry] = []
    skipped: dict[str, int] = {}

    def skip(reason: str) -> None:
        skipped[reason] = skipped.get(reason, 0) + 1

    for line, memory in memories:
        expires_at = memory.get("expires_at")
        if memory.get("deprecated_at") is not None or (
            isinstance(expires_at, datetime) and expires_at <= now
        ):
            skip("not_active")
            continue
        key = f"import:{digest[:24]}:{line}"
        payload = _payload(memory, now)
        memory_type = memory["memory_type"]
        if memory_type == MemoryType.BUG_PATTERN:
            error, marker, fix = str(memory["content"]).partition(FIX_MARKER)
            if not marker or not fix.strip():
                skip("bug_pattern_without_fix")
                continue
            # what did not work stays with the error; the pattern's canonical key is its signature again
            error_payload = {k: v for k, v in payload.items() if k != "key"}
            entries.append(ImportEntry(line, EntryKind.ERROR, error.strip(), error_payload, f"{key}:error"))
            entries.append(ImportEntry(line, EntryKind.RESULT, fix.strip(), {}, f"{key}:fix"))
            continue
        kind = _KIND_OF.get(memory_type)
        if kind is None:
            skip(memory_type)
            continue
        entries.append(ImportEntry(line, kind, str(memory["content"]), payload, key))
    return entries, skipped
