"""Fixtures for the CLI tests: `loregate up` launches that always clean up, and databases of their own; a
gateway on loopback over the session database (`gateway`), and one wired to the Temporal dev server with a
worker running the real activities on a task queue of their own (`promo_settings`, `promo_gateway`,
`worker`)."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from temporalio.client import Client

from governance.config import Settings
from tests.utils.cli import UpLauncher
from tests.utils.gateway import running_gateway
from tests.utils.promotion_gateway import running_worker, temporal_settings


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


@pytest.fixture
def unprivileged_user() -> Iterator[pwd.struct_passwd]:
    """A system user of its own for one test when the suite runs as root; removed afterwards.

    It has no home, no login shell and no group but its own. The test's interpreter and the checkout must be
    reachable by it (they are read, never written: bytecode is not written under PYTHONDONTWRITEBYTECODE,
    and a probe checks the import); where they are not, the test is skipped and says why. Request this
    fixture before `up_launcher`, so every process the user ran is gone before the user is.
    """
    if os.geteuid() != 0:
        pytest.skip("the suite runs as a non-root user already: the invoking user's run is this case")
    if shutil.which("useradd") is None or shutil.which("userdel") is None:
        pytest.skip("no useradd/userdel on this machine to make a temporary user")
    name = f"lgtest{uuid.uuid4().hex[:8]}"
    subprocess.run(
        ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", "--user-group", name],
        check=True,
        capture_output=True,
    )
    user = pwd.getpwnam(name)
    try:
        try:
            probe = subprocess.run(
                [sys.executable, "-c", "import api.cli"],
                user=name,
                group=name,
                extra_groups=[],
                cwd="/",
                env={"PATH": os.environ.get("PATH", ""), "PYTHONDONTWRITEBYTECODE": "1"},
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
        except PermissionError as exc:  # the interpreter lives where the user may not go (e.g. under /root)
            pytest.skip(f"{sys.executable} cannot run as an unprivileged user: {exc}")
        if probe.returncode != 0:
            pytest.skip(f"{sys.executable} cannot run as an unprivileged user: {probe.stderr[-300:]}")
        yield user
    finally:
        for proc in psutil.process_iter(["uids"]):
            try:
                if proc.info["uids"] is not None and proc.info["uids"].real == user.pw_uid:
                    proc.kill()
            except psutil.Error:
                continue
        subprocess.run(["userdel", name], check=False, capture_output=True)


@pytest.fixture(scope="module")
def gateway(settings: Settings) -> Iterator[str]:
    """A gateway on loopback over the session database (no Temporal)."""
    with running_gateway(settings) as url:
        yield url


@pytest.fixture(scope="module")
def promo_settings(settings: Settings, local_env: Any) -> Settings:
    """The session's settings pointing at the Temporal dev server, on a task queue of their own."""
    return temporal_settings(settings, local_env.client)


@pytest.fixture(scope="module")
def promo_gateway(promo_settings: Settings) -> Iterator[str]:
    with running_gateway(promo_settings) as url:
        yield url


@pytest.fixture(scope="module")
async def worker(local_env: Any, promo_settings: Settings) -> AsyncIterator[None]:
    """A worker running the real activities on `promo_settings`' task queue."""
    client: Client = local_env.client
    async with running_worker(client, promo_settings):
        yield
