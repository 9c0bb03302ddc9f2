"""The append body (`EntriesIn`) decoded and checked in one C pass, for the append path's common case.

`EntriesIn` (pydantic) stays the schema: what the API documents and what answers every refusal. This is
its mirror in msgspec, which parses and type-checks a batch of 100 entries in a tenth of pydantic's time
(docs/scaling.md). It takes only what `EntriesIn` takes: the same fields (no others), the same kinds, an
idempotency key of 1-200 characters, text and payloads that Postgres can store (`api/schemas/text.py`'s
checks, run here on what msgspec decoded). Whatever it refuses, or is not sure of, `decode_entries`
answers None for, and the caller hands the body to `EntriesIn` (and so to the route's own 422).
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from api.schemas.text import refuse_lone_surrogates, refuse_unstorable_json
from governance.scopes import EntryKind
from governance.staging import EntryDraft

__all__ = ["decode_entries", "convert_entries"]


class _Entry(msgspec.Struct, forbid_unknown_fields=True):
    kind: EntryKind
    content: str
    payload: Any = None
    idempotency_key: Annotated[str, msgspec.Meta(min_length=1, max_length=200)] | None = None


class _Entries(msgspec.Struct, forbid_unknown_fields=True):
    entries: Annotated[list[_Entry], msgspec.Meta(min_length=1)]


_DECODER = msgspec.json.Decoder(_Entries)


def decode_entries(raw: bytes) -> list[EntryDraft] | None:
    """The batch in `raw` as drafts, when `EntriesIn` would take it as it is; None otherwise (let pydantic
    say what is wrong). msgspec refuses lone surrogate escapes, NaN, Infinity and out-of-range numbers while
    parsing; the checks below are `EntriesIn`'s own validators, for what parsing lets through."""
    try:
        return _drafts(_DECODER.decode(raw))
    except Exception:  # noqa: BLE001 (whatever it is, EntriesIn says what it is)
        return None


def convert_entries(entries: list[dict[str, Any]]) -> list[EntryDraft] | None:
    """`decode_entries` for entries already parsed into Python objects (gRPC's messages, whose payload
    JSON was parsed on its own): the drafts when `EntriesIn.model_validate({"entries": entries})` would
    take them as they are, None otherwise."""
    try:
        return _drafts(msgspec.convert({"entries": entries}, _Entries, strict=True))
    except Exception:  # noqa: BLE001 (whatever it is, EntriesIn says what it is)
        return None


def _drafts(body: _Entries) -> list[EntryDraft]:
    """The entries as drafts, after `EntriesIn`'s own checks of what msgspec let through (ValueError)."""
    drafts = []
    for entry in body.entries:
        content, payload, key = entry.content, entry.payload, entry.idempotency_key
        if not content.isascii():
            refuse_lone_surrogates(content)
        if payload is not None:
            refuse_unstorable_json(payload)
        if key is not None and not key.isascii():
            refuse_lone_surrogates(key)
        drafts.append(EntryDraft(entry.kind, content, payload, key))
    return drafts
