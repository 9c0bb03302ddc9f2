"""Fixtures for the CLI tests: `loregate up` launches that always clean up, and databases of their own."""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.utils.cli import UpLauncher


@pytest.fixture
def up_launcher(up_data_dir: Path) -> Iterator[UpLauncher]:
    """Launch `loregate up`; every process it started is gone after the test (before its data dir goes)."""
    launcher = UpLauncher()
    try:
        yield launcher
    finally:
        launcher.cleanup()


@pytest.fixture
def up_data_dir() -> Iterator[Path]:
    """An empty data dir outside pytest's basetemp.

    Every pytest session chmods `/tmp/pytest-of-<user>` back to 0700, which locks out the `pgserver` user
    the embedded Postgres runs as (when tests run as root) while other sessions run in parallel.
    """
    parent = Path(tempfile.mkdtemp(prefix="loregate-up-"))
    try:
        yield parent / "data"
    finally:
        shutil.rmtree(parent, ignore_errors=True)


@pytest.fixture
def empty_database_url(pg_server: Any) -> Iterator[str]:
    """A database of its own on the session Postgres, without any schema, dropped afterwards."""
    name = f"cli_{uuid.uuid4().hex[:12]}"
    pg_server.psql(f"CREATE DATABASE {name};")
    try:
        yield str(pg_server.get_uri(name))
    finally:
        pg_server.psql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE);")


@pytest.fixture
def migrated_database_url(empty_database_url: str) -> str:
    """A database of its own with the full schema and the default policy."""
    from governance.storage.migrate import upgrade_head

    upgrade_head(empty_database_url)
    return empty_database_url
