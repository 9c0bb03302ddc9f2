"""Vectors sent as one binary `vector[]` parameter and read back in binary are the float32 values the text
form names, NULLs kept in place (real Postgres with pgvector)."""

from __future__ import annotations

import numpy as np
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.storage.vector_params import from_vector_bytes, vector_array


async def test_vector_array_round_trips_float32_values_and_nulls(engine: AsyncEngine) -> None:
    rng = np.random.default_rng(3)
    vectors: list[list[float] | None] = [rng.standard_normal(384).tolist(), None, [0.1, -2.5, 3e-7]]
    async with engine.connect() as conn:
        rows = (
            await conn.execute(
                text(
                    "SELECT n, vector_send(v) AS raw, v::text AS shown "
                    "FROM unnest(CAST(:v AS vector[])) WITH ORDINALITY AS u(v, n) ORDER BY n"
                ),
                {"v": await vector_array(conn, vectors)},
            )
        ).all()
    assert [r.n for r in rows] == [1, 2, 3]
    for row, sent in zip(rows, vectors, strict=True):
        if sent is None:
            assert row.raw is None and row.shown is None
            continue
        expected = np.asarray(sent, dtype=np.float32)
        assert from_vector_bytes(row.raw) == expected.tolist()
        # the text form pgvector prints names the same float32 values
        assert np.array_equal(np.asarray(row.shown.strip("[]").split(","), dtype=np.float32), expected)
