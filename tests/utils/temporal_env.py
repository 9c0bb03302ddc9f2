"""The real servers a test session or a bench runs on: the Temporal dev server with loregate's search
attributes, and a fresh, migrated `bench` database on an embedded Postgres.

Imported lazily by the benches (the workflow sandbox re-imports a bench's module, which must stay light).
"""

from __future__ import annotations

from typing import Any

from temporalio.common import SearchAttributeKey
from temporalio.testing import WorkflowEnvironment

from api.cli.embedded import temporal_cli_path
from governance.storage.migrate import upgrade_head

__all__ = ["SEARCH_ATTRIBUTES", "start_dev_server", "fresh_bench_database"]

# what `loregate up` registers on its dev server
SEARCH_ATTRIBUTES = {"LoregateState": "Keyword"}


async def start_dev_server() -> WorkflowEnvironment:
    """A real Temporal dev server (the one `loregate up` runs), with loregate's search attributes."""
    return await WorkflowEnvironment.start_local(
        dev_server_existing_path=temporal_cli_path(),
        search_attributes=[SearchAttributeKey.for_keyword(name) for name in SEARCH_ATTRIBUTES],
        dev_server_log_level="error",
    )


def fresh_bench_database(pg: Any) -> str:
    """The `bench` database of the embedded server `pg`, dropped, created again and migrated: its URL."""
    pg.psql("DROP DATABASE IF EXISTS bench; CREATE DATABASE bench;")
    url: str = pg.get_uri("bench")
    upgrade_head(url)
    return url
