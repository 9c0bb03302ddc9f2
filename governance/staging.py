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
    "TASK_ID_PATTERN",
    "canonical_payload",
    "request_hash",
    "validate_batch",
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


def validate_batch(drafts: list[EntryDraft], *, max_entry_bytes: int, max_batch_entries: int) -> None:
    """Refuse the whole batch (nothing written) if any entry breaks a limit or cannot be stored."""
    if not drafts:
        raise InvalidInput("entries must hold at least one entry")
    if len(drafts) > max_batch_entries:
        raise LimitExceeded(f"batch of {len(drafts)} entries exceeds the limit of {max_batch_entries}")
    keys: set[str] = set()
    for index, draft in enumerate(drafts):
        size = entry_size(draft)
        if size > max_entry_bytes:
            raise LimitExceeded(
                f"entries[{index}] is {size} bytes (content + payload), over the limit of {max_entry_bytes}"
            )
        if "\x00" in draft.content or _payload_has_nul(draft) or _has_nul(draft.idempotency_key):
            # Postgres text and jsonb cannot hold U+0000; refusing beats storing something else
            raise InvalidInput(f"entries[{index}] contains a NUL character (U+0000), which cannot be stored")
        if draft.idempotency_key is not None:
            if draft.idempotency_key in keys:
                raise InvalidInput(
                    f"entries[{index}] repeats idempotency key {draft.idempotency_key!r} in one batch"
                )
            keys.add(draft.idempotency_key)
