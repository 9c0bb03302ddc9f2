"""What the staging archive writes, as pure rules: file names, the JSON-lines format, its digest.

Staging of a task whose promotion ended long enough ago (`RetentionPolicy.staging_archive_after_days`) leaves
Postgres for a file: gzip-compressed JSON lines, one staging entry per line, exactly as stored (content
unredacted, the payload's JSON text as sent). The archive is the audit copy of what agents wrote, so it
keeps everything and is readable by the owner only (directories 0700, files 0600); redaction guards what is
*derived* from staging, not the audit log itself.

A chunk of a task's entries (`seq` from `first_seq` to `last_seq`) always becomes the same file with the
same bytes (gzip without a timestamp), so an archive step that is retried rewrites what it wrote before
instead of adding a second copy.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import PurePath

from governance.staging import public_task_id

__all__ = [
    "ArchivedEntry",
    "ArchiveChunk",
    "archive_path",
    "encode_chunk",
    "decode_chunk",
    "holds",
    "safe_part",
]

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


@dataclass(frozen=True)
class ArchivedEntry:
    """One staging entry as the archive keeps it (the row, with the payload's exact JSON text)."""

    id: int
    task_id: str
    seq: int
    actor_id: str
    actor_type: str
    kind: str
    content: str
    payload_json: str | None
    idempotency_key: str | None
    request_hash: str
    created_at: datetime


@dataclass(frozen=True)
class ArchiveChunk:
    """The bytes of one archive file, their sha256 and the range of entries they hold."""

    data: bytes
    sha256: str
    count: int
    first_seq: int
    last_seq: int


def safe_part(value: str) -> str:
    """`value` as one safe path component: other characters become `_`, with a hash suffix when changed."""
    cleaned = _UNSAFE.sub("_", value)[:80]
    if cleaned != value or cleaned in {"", ".", ".."}:
        cleaned = f"{cleaned}-{hashlib.sha256(value.encode()).hexdigest()[:12]}"
    return cleaned


def archive_path(org: str, task_id: str, first_seq: int, last_seq: int) -> PurePath:
    """Where a chunk goes, relative to the archive directory: `<org>/<task>/<first>-<last>.jsonl.gz` (the
    task by the id its org gave it: unique in the org, whatever its key)."""
    return PurePath(
        safe_part(org), safe_part(public_task_id(task_id)), f"{first_seq:012d}-{last_seq:012d}.jsonl.gz"
    )


def _line(entry: ArchivedEntry) -> str:
    return json.dumps(
        {
            "id": entry.id,
            "task_id": entry.task_id,
            "seq": entry.seq,
            "actor_id": entry.actor_id,
            "actor_type": entry.actor_type,
            "kind": entry.kind,
            "content": entry.content,
            "payload_json": entry.payload_json,
            "idempotency_key": entry.idempotency_key,
            "request_hash": entry.request_hash,
            "created_at": entry.created_at.isoformat(),
        },
        ensure_ascii=False,
        separators=(",", ":"),
    )


def encode_chunk(entries: Sequence[ArchivedEntry]) -> ArchiveChunk:
    """The archive file of `entries` (in sequence order, at least one): deterministic bytes and digest."""
    if not entries:
        raise ValueError("an archive chunk holds at least one entry")
    text = "".join(_line(e) + "\n" for e in entries)
    data = gzip.compress(text.encode("utf-8"), mtime=0)
    return ArchiveChunk(
        data=data,
        sha256=hashlib.sha256(data).hexdigest(),
        count=len(entries),
        first_seq=entries[0].seq,
        last_seq=entries[-1].seq,
    )


def decode_chunk(data: bytes) -> Iterable[ArchivedEntry]:
    """The entries of an archive file (what `loregate staging archive` and tests read back)."""
    for line in gzip.decompress(data).decode("utf-8").splitlines():
        raw = json.loads(line)
        yield ArchivedEntry(**{**raw, "created_at": datetime.fromisoformat(raw["created_at"])})


def holds(entry: ArchivedEntry, subject: str) -> bool:
    """Whether an archived entry's content or payload holds `subject` (as written, or JSON-escaped)."""
    if subject in entry.content:
        return True
    if entry.payload_json is None:
        return False
    escaped = json.dumps(subject)[1:-1]
    return subject in entry.payload_json or escaped in entry.payload_json
