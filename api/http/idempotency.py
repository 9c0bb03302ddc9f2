"""The `Idempotency-Key` request header: the same key as the body's `idempotency_key` field.

Every route whose body has an `idempotency_key` takes the header as that key. A single-entry append takes
it as its entry's key; a batch of N entries gives entry i the key `<header>:<i>`, so replaying the whole
batch by header returns the first answer. A body key that differs from the one the header gives is a 422
naming both (nothing is written), and so is the header given twice with different values.
"""

from __future__ import annotations

from typing import Annotated, TypeVar

from fastapi import Depends, Header, Request
from pydantic import BaseModel

from api.schemas.staging import EntriesIn
from governance.errors import InvalidInput

__all__ = ["IdempotencyKeyHeader", "entries_with_header_key", "with_header_key"]

ModelT = TypeVar("ModelT", bound=BaseModel)


def _idempotency_key(
    request: Request,
    key: Annotated[
        str | None,
        Header(
            alias="Idempotency-Key",
            min_length=1,
            max_length=160,  # the shortest body field's limit (a batch adds `:<i>`)
            description="Same as the body's `idempotency_key` (a batch's entry i gets `<key>:<i>`)",
        ),
    ] = None,
) -> str | None:
    """The header's key; InvalidInput when the request carries it twice with different values (which one
    a proxy or framework keeps is not for loregate to guess)."""
    given = request.headers.getlist("idempotency-key")
    if len(set(given)) > 1:
        raise InvalidInput(
            f"Idempotency-Key header given {len(given)} times with different values: send it once"
        )
    return key


IdempotencyKeyHeader = Annotated[str | None, Depends(_idempotency_key)]


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


def with_header_key(body: ModelT, header: str | None) -> ModelT:
    """The body with the header's key as its `idempotency_key`; InvalidInput when the body names another."""
    if header is None:
        return body
    given = getattr(body, "idempotency_key", None)
    if given is not None and given != header:
        raise InvalidInput(
            f"Idempotency-Key header gives '{header}' but the body's idempotency_key is '{given}': "
            "send one of them, or the same key in both"
        )
    return body.model_copy(update={"idempotency_key": header})
