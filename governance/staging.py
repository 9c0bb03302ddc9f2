"""Staging rules (pure): what an entry may look like, and the fingerprint that makes retries safe."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from json.encoder import c_make_encoder  # type: ignore[attr-defined]
from json.encoder import encode_basestring as _string
from typing import Any

from governance.errors import InvalidInput, LimitExceeded
from governance.scopes import EntryKind

__all__ = [
    "EntryDraft",
    "PreparedBatch",
    "TASK_ID_PATTERN",
    "canonical_payload",
    "request_hash",
    "validate_batch",
    "prepare_batch",
    "validate_task_id",
    "entry_size",
    "task_key",
    "public_task_id",
]

# Task ids appear in workflow ids (`promote-<id>`) and URLs: keep them to a safe alphabet.
TASK_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$"
_TASK_ID_RE = re.compile(TASK_ID_PATTERN)


# A task id belongs to its tenant (the org): two orgs may both have a task `t-1`. Inside loregate a task is
# named by its key, `<org>/<task id>`, which is what staging, approaches, events, plans, task scope keys
# (`task:<key>`) and workflow ids (`promote-<key>`) carry. A task id never holds a `/`, so the id is the
# key's last part whatever the org holds. Tasks opened before migration 0018, and reflection's own tasks
# (`reflect-<uuid>`, unique by construction), keep their id as their key (docs/architecture.md, "Tenants").
def task_key(org: str, task_id: str) -> str:
    """The key of task `task_id` of `org`: unique across tenants."""
    return f"{org}/{task_id}"


def public_task_id(key: str) -> str:
    """The id its tenant gave the task whose key is `key` (the key itself for tasks before 0018)."""
    return key.rpartition("/")[2]


_UNSET: Any = object()


@dataclass(frozen=True)
class EntryDraft:
    """One entry as a client sent it; the actor is added by the gateway, never taken from the client."""

    kind: EntryKind
    content: str
    payload: Any = None
    idempotency_key: str | None = None

    @property
    def payload_json(self) -> str | None:
        """The canonical payload text, computed once: size limits, the retry hash and storage all use it."""
        # kept by hand: functools.cached_property takes a lock on every first read (Python 3.11), which
        # cost more than encoding a small payload
        known = self.__dict__.get("_payload_json", _UNSET)
        if known is _UNSET:
            known = self.__dict__["_payload_json"] = canonical_payload(self.payload)
        return known  # type: ignore[no-any-return]


# Built once: `json.dumps` with options builds an encoder per call, a third of the cost of a small payload.
_CANONICAL = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
# ... and so does `JSONEncoder.encode` itself: half of what remained. This is the C encoder it builds, with
# its arguments, once: the same bytes. No circular-reference markers: a payload comes from parsed JSON, and
# a marker left behind by a failed encoding would refuse the next payload.
_CANONICAL_C = (
    None
    if c_make_encoder is None
    else c_make_encoder(
        None,
        _CANONICAL.default,
        _string,
        None,
        _CANONICAL.key_separator,
        _CANONICAL.item_separator,
        True,
        False,
        False,
    )
)


def canonical_payload(payload: Any) -> str | None:
    """Stable JSON text of a payload (None stays None); what is stored and what idempotency compares."""
    if payload is None:
        return None
    if _CANONICAL_C is None or isinstance(payload, str):
        return _CANONICAL.encode(payload)
    return "".join(_CANONICAL_C(payload, 0))


def request_hash(draft: EntryDraft) -> str:
    """What a retry must repeat exactly for its idempotency key to be honoured.

    The SHA-256 of `json.dumps([kind, content, payload JSON text or None], ensure_ascii=False)`, written
    out by hand (the same bytes, a fifth of the time): stored hashes must stay comparable across versions.
    """
    payload = draft.payload_json
    parts = (
        _string(draft.kind.value),
        _string(draft.content),
        "null" if payload is None else _string(payload),
    )
    return hashlib.sha256(f"[{parts[0]}, {parts[1]}, {parts[2]}]".encode()).hexdigest()


def entry_size(draft: EntryDraft) -> int:
    """Bytes an entry occupies: content plus its payload as JSON."""
    payload = draft.payload_json
    return len(draft.content.encode("utf-8")) + (len(payload.encode("utf-8")) if payload else 0)


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_nul(v) for v in value)
    return False


def _payload_has_nul(draft: EntryDraft) -> bool:
    # the canonical text writes every U+0000 as the escape `\u0000`: without that text, there is none (the
    # exact walk runs only when it is there, which an escaped backslash before `u0000` can also make)
    text = draft.payload_json
    return text is not None and "\\u0000" in text and _has_nul(draft.payload)


def validate_task_id(task_id: str) -> None:
    if not _TASK_ID_RE.match(task_id):
        raise InvalidInput(
            f"task id {task_id!r} is invalid: 1-128 characters of letters, digits, '.', '_', ':', '-', "
            "starting with a letter or digit"
        )


@dataclass(frozen=True, slots=True)
class PreparedBatch:
    """A batch as it is stored, worked out in one pass over its entries: per entry its retry hash
    (`request_hash`), its bytes (`entry_size`) and its row as JSON text, `[kind, content, payload text,
    idempotency key, request hash]` (the append statement reads one JSON array of them)."""

    hashes: list[str]
    sizes: list[int]
    rows: list[str]

    def rows_json(self, indexes: list[int] | None = None) -> str:
        """The rows (those at `indexes`, in that order; default all) as one JSON array."""
        rows = self.rows if indexes is None else [self.rows[i] for i in indexes]
        return f"[{','.join(rows)}]"


# the kinds' JSON text, written once
_KIND_JSON = {kind: _string(kind.value) for kind in EntryKind}


def validate_batch(
    drafts: list[EntryDraft], *, max_entry_bytes: int, max_batch_entries: int
) -> PreparedBatch:
    """Refuse the whole batch (nothing written) if any entry breaks a limit or cannot be stored; otherwise
    the batch prepared for storage (`prepare_batch`), worked out in the same pass."""
    if not drafts:
        raise InvalidInput("entries must hold at least one entry")
    if len(drafts) > max_batch_entries:
        raise LimitExceeded(f"batch of {len(drafts)} entries exceeds the limit of {max_batch_entries}")
    return _prepare(drafts, max_entry_bytes)


def prepare_batch(drafts: list[EntryDraft]) -> PreparedBatch:
    """Hashes, sizes and rows of a batch whose limits were checked elsewhere (or that has none: entries
    the platform stages itself). Entries that cannot be stored (U+0000, a repeated key) are refused."""
    return _prepare(drafts, None)


def _prepare(drafts: list[EntryDraft], max_entry_bytes: int | None) -> PreparedBatch:
    # One loop doing what `entry_size`, the checks, `request_hash` and the rows' JSON did in four: the JSON
    # text of kind, content and payload is written once and serves both the hash and the row. Same bytes
    # (tests/governance/test_staging_rules.py compares them with the functions one by one).
    keys: set[str] = set()
    hashes: list[str] = []
    sizes: list[int] = []
    rows: list[str] = []
    sha256 = hashlib.sha256
    for index, draft in enumerate(drafts):
        content = draft.content
        payload = draft.payload_json
        size = len(content) if content.isascii() else len(content.encode())
        if payload is not None:
            size += len(payload) if payload.isascii() else len(payload.encode())
        if max_entry_bytes is not None and size > max_entry_bytes:
            raise LimitExceeded(
                f"entries[{index}] is {size} bytes (content + payload), over the limit of {max_entry_bytes}"
            )
        key = draft.idempotency_key
        if "\x00" in content or _payload_has_nul(draft) or (key is not None and "\x00" in key):
            # Postgres text and jsonb cannot hold U+0000; refusing beats storing something else
            raise InvalidInput(f"entries[{index}] contains a NUL character (U+0000), which cannot be stored")
        if key is not None:
            if key in keys:
                raise InvalidInput(f"entries[{index}] repeats idempotency key {key!r} in one batch")
            keys.add(key)
        kind = draft.kind
        kind_json = _KIND_JSON[kind] if kind in _KIND_JSON else _string(EntryKind(kind).value)
        content_json = _string(content)
        payload_json = "null" if payload is None else _string(payload)
        digest = sha256(f"[{kind_json}, {content_json}, {payload_json}]".encode()).hexdigest()
        key_json = "null" if key is None else _string(key)
        hashes.append(digest)
        sizes.append(size)
        rows.append(f'[{kind_json},{content_json},{payload_json},{key_json},"{digest}"]')
    return PreparedBatch(hashes, sizes, rows)
