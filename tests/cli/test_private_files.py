"""The data dir is the owner's alone: 0700, its files (workflow histories, keys, logs) 0600.

Before, `temporal.db` (every workflow history, in plain sqlite) was created 0644 in a 0755 data dir.
"""

from __future__ import annotations

import logging
import os
import stat
import sys
from pathlib import Path

import pytest
from rich.console import Console

from api.cli.embedded import data_dir_mode, secure_data_dir, start_embedded_postgres, stop_embedded_postgres
from api.cli.supervisor import Supervisor
from governance.config import Settings
from tests.utils.cli import alive


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_secure_data_dir_makes_dirs_0700_and_files_0600(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / "logs").mkdir(parents=True)
    (data / "postgres").mkdir()
    outside = tmp_path / "outside.txt"
    files = {
        "temporal.db": data / "temporal.db",
        "temporal.db-wal": data / "temporal.db-wal",
        "key": data / "bootstrap-admin.key",
        "lock": data / "up.lock",
        "log": data / "logs" / "temporal.log",
    }
    for path in [*files.values(), outside, data / "postgres" / "PG_VERSION"]:
        path.write_text("secret")
        path.chmod(0o644)
    (data / "link").symlink_to(outside)
    for directory in (data, data / "logs", data / "postgres"):
        directory.chmod(0o755)

    secure_data_dir(data)

    assert {name: _mode(path) for name, path in files.items()} == dict.fromkeys(files, 0o600)
    assert [_mode(d) for d in (data, data / "logs", data / "postgres")] == [data_dir_mode(data), 0o700, 0o700]
    # Postgres keeps its own files; a symlink's target outside the data dir is not touched
    assert _mode(data / "postgres" / "PG_VERSION") == 0o644
    assert _mode(outside) == 0o644


def test_supervisor_children_create_owner_only_files(tmp_path: Path) -> None:
    """The Temporal dev server creates its sqlite files with the umask `loregate up` gives its children."""
    data = tmp_path / "data"
    supervisor = Supervisor(Settings(data_dir=data), Console(quiet=True))
    supervisor.log_dir.mkdir(parents=True)
    created = data / "made-by-child.db"
    child = supervisor._spawn(
        "probe", [sys.executable, "-c", "import sys; open(sys.argv[1], 'w').close()", str(created)], env={}
    )
    assert child.process.wait(timeout=60) == 0, child.tail()
    assert _mode(created) == 0o600
    assert _mode(child.log_path) == 0o600


def test_private_embedded_postgres_is_owner_only_and_stops_cleanly(
    up_data_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Also as root, where pgserver runs Postgres as its own user, who alone may pass through the data dir."""
    caplog.set_level(logging.WARNING, logger="pgserver")
    server, _ = start_embedded_postgres(up_data_dir, private=True)
    try:
        assert _mode(up_data_dir) == data_dir_mode(up_data_dir) == (0o710 if os.geteuid() == 0 else 0o700)
        assert _mode(up_data_dir / "postgres") == 0o700
        postmaster = server.get_postmaster_info().process
    finally:
        stop_embedded_postgres(server, up_data_dir)
    assert alive([postmaster]) == []
    assert _mode(up_data_dir) == data_dir_mode(up_data_dir)
    # pg_ctl stop succeeded: pgserver did not have to kill the server
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
