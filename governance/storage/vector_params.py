"""Many vectors sent to Postgres as one `vector[]` parameter in binary form, for statements that write many.

SQLAlchemy's `Vector` column type sends a vector as text: 384 floats printed with 17 digits each and parsed
again by the server (~0.25 ms a vector in Python alone, most of a plan chunk's parameters by size).
`vector_array` packs a chunk's vectors into one `VectorArray`, which a dumper registered on the connection's
psycopg driver connection (once per connection, `_registered`) sends as a binary `vector[]`: per element
pgvector's own binary form (a 4-byte header and 4 bytes a float, as `pgvector.psycopg` sends one vector),
no printing or parsing. `unnest(:vectors) WITH ORDINALITY` turns it into rows. Only a `VectorArray` is sent
so; every other parameter and every result stays as it was (no loader is registered).

Reading many back, `vector_bytes(column)` selects a vector in the same binary form (pgvector's own
`vector_send`) and `from_vector_bytes` reads it without parsing text: the same float32 values the text
form names (pgvector prints each float32 by its shortest exact decimal).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

import numpy as np
from psycopg.abc import Buffer
from psycopg.adapt import Dumper
from psycopg.pq import Format
from psycopg.types import TypeInfo
from sqlalchemy import func
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import ColumnElement

__all__ = ["VectorArray", "vector_array", "vector_bytes", "from_vector_bytes"]


class VectorArray:
    """Vectors (None for a row without one) to be sent as one binary `vector[]` parameter."""

    def __init__(self, vectors: Sequence[Sequence[float] | np.ndarray | None]) -> None:
        self.vectors = [None if v is None else np.asarray(v, dtype=">f4") for v in vectors]


class _VectorArrayDumper(Dumper):
    """`VectorArray` in Postgres' binary array format, each element in pgvector's binary vector format."""

    format = Format.BINARY
    element_oid = 0

    def dump(self, obj: VectorArray) -> Buffer | None:
        vectors = obj.vectors
        has_null = any(v is None for v in vectors)
        # ndim, has-null flag, element type; the one dimension's length and lower bound
        parts: list[bytes] = [struct.pack(">iiiii", 1, int(has_null), self.element_oid, len(vectors), 1)]
        for v in vectors:
            if v is None:
                parts.append(struct.pack(">i", -1))
            else:
                parts.append(struct.pack(">iHH", 4 + 4 * len(v), len(v), 0))
                parts.append(v.tobytes())
        return b"".join(parts)


async def _registered(conn: AsyncConnection) -> None:
    """The `VectorArray` dumper on this connection's psycopg connection, with this database's type oids."""
    raw = await conn.get_raw_connection()
    driver: Any = raw.driver_connection
    if getattr(driver, "_loregate_vector_array", False):
        return
    info = await TypeInfo.fetch(driver, "vector")
    if info is None:  # the migrations create the extension: a database without it is not loregate's
        raise LookupError("the vector type is not in this database")
    dumper = type(
        "VectorArrayDumper", (_VectorArrayDumper,), {"oid": info.array_oid, "element_oid": info.oid}
    )
    driver.adapters.register_dumper(VectorArray, dumper)
    driver._loregate_vector_array = True


async def vector_array(
    conn: AsyncConnection, vectors: Sequence[Sequence[float] | np.ndarray | None]
) -> VectorArray:
    """`vectors` as one parameter that `conn` sends as a binary `vector[]` (a None is a NULL element)."""
    await _registered(conn)
    return VectorArray(vectors)


def vector_bytes(column: Any) -> ColumnElement[bytes]:
    """Select `column` (a vector) in pgvector's binary form, for `from_vector_bytes`."""
    return func.vector_send(column)


def from_vector_bytes(data: bytes | None) -> list[float] | None:
    """A vector selected by `vector_bytes` as floats (None stays None)."""
    if data is None:
        return None
    floats: list[float] = np.frombuffer(data, dtype=">f4", offset=4).tolist()
    return floats
