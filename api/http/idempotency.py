"""The `Idempotency-Key` request header: the same key as the body's `idempotency_key` field.

A single-entry append takes the header as its entry's key; a batch of N entries gives entry i the key
`<header>:<i>`, so replaying the whole batch by header returns the first answer. A body key that differs
from the one the header gives is a 422 naming both (nothing is written).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Header

from api.schemas.staging import EntriesIn
from governance.errors import InvalidInput

__all__ = ["IdempotencyKeyHeader", "entries_with_header_key"]

IdempotencyKeyHeader = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        min_length=1,
        max_length=190,
        description="Same as the body's `idempotency_key` (a batch's entry i gets `<key>:<i>`)",
    ),
]


def entries_with_header_key(body: EntriesIn, header: str | None) -> EntriesIn:
    """The batch with the header's key on each entry; InvalidInput when an entry names another key."""
    if header is None:
        return body
    single = len(body.entries) == 1
    entries = []
    for i, entry in enumerate(body.entries):
        key = header if single else f"{header}:{i}"
        if entry.idempotency_key is not None and entry.idempotency_key != key:
            where = "idempotency_key" if single else f"entries[{i}].idempotency_key"
            raise InvalidInput(
                f"Idempotency-Key header gives '{key}' but the body's {where} is "
                f"'{entry.idempotency_key}': send one of them, or the same key in both"
            )
        entries.append(entry.model_copy(update={"idempotency_key": key}))
    return body.model_copy(update={"entries": entries})
