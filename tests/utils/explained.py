"""What a statement touched, from Postgres' own account: `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)`.

`capture_statements` records what the code under test sends (SQLAlchemy's `before_cursor_execute`), and
`explain` runs one of them again under EXPLAIN ANALYZE: rows read per table (actual rows x loops of every
scan node), rows discarded by filters and join filters, shared buffers hit or read, and the time Postgres
reports.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

__all__ = ["Explained", "capture_statements", "explain"]


@dataclass
class Explained:
    """One statement's plan as it ran."""

    touched: dict[str, int] = field(default_factory=dict)  # rows read per table
    removed: int = 0  # rows discarded by a filter or a join filter
    buffers: int = 0  # shared buffers hit or read
    milliseconds: float = 0.0  # Postgres' execution time
    nodes: list[str] = field(default_factory=list)  # node types, outermost first


@contextmanager
def capture_statements(engine: AsyncEngine) -> Iterator[list[tuple[str, Any]]]:
    """The statements (and parameters) sent through `engine` inside the block."""
    sent: list[tuple[str, Any]] = []

    def capture(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        sent.append((statement, parameters))

    event.listen(engine.sync_engine, "before_cursor_execute", capture)
    try:
        yield sent
    finally:
        event.remove(engine.sync_engine, "before_cursor_execute", capture)


async def explain(conn: AsyncConnection, statement: str, parameters: Any) -> Explained:
    """Run `statement` again under EXPLAIN (ANALYZE, BUFFERS) and sum what each node did."""
    raw = (
        await conn.exec_driver_sql("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + statement, parameters)
    ).scalar_one()
    top = (raw if isinstance(raw, list) else json.loads(raw))[0]
    found = Explained(milliseconds=float(top.get("Execution Time", 0.0)))

    def walk(node: dict[str, Any]) -> None:
        found.nodes.append(node["Node Type"])
        if "Relation Name" in node:
            rows = int(node["Actual Rows"]) * int(node["Actual Loops"])
            found.touched[node["Relation Name"]] = found.touched.get(node["Relation Name"], 0) + rows
        found.removed += int(node.get("Rows Removed by Filter", 0))
        found.removed += int(node.get("Rows Removed by Join Filter", 0))
        for child in node.get("Plans", []):
            walk(child)

    walk(top["Plan"])
    found.buffers = int(top["Plan"].get("Shared Hit Blocks", 0)) + int(
        top["Plan"].get("Shared Read Blocks", 0)
    )
    return found
