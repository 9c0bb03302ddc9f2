"""The embedded Postgres' buffer cache (sized for the HNSW index, never resized under live connections), and
as root the modes of the directories above its data."""

from __future__ import annotations

import os
import pwd
import stat
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from api.cli import embedded
from api.cli.embedded import (
    DATABASE_SYSTEM_USER,
    acl_keeping_mode,
    shared_buffers_mb,
    start_embedded_postgres,
    stop_embedded_postgres,
)


def _shared_buffers(url: str) -> str:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SHOW shared_buffers").fetchone()
    assert row is not None
    return str(row[0])


def _size(megabytes: int) -> str:
    return f"{megabytes // 1024}GB" if megabytes % 1024 == 0 else f"{megabytes}MB"


@pytest.mark.parametrize(
    ("total_gib", "expected_mb"),
    [(0.25, 128), (1, 256), (2, 512), (4, 1024), (24, 1024), (512, 1024)],
)
def test_shared_buffers_is_a_quarter_of_memory_within_bounds(total_gib: float, expected_mb: int) -> None:
    assert shared_buffers_mb(int(total_gib * 2**30)) == expected_mb


def test_a_new_embedded_server_starts_with_the_sized_buffer_cache(up_data_dir: Path) -> None:
    server, url = start_embedded_postgres(up_data_dir)
    try:
        assert _shared_buffers(url) == _size(shared_buffers_mb())
    finally:
        server.cleanup()


def test_a_running_server_is_not_restarted_to_resize_it(
    up_data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server someone else started keeps its connections: the new size waits for its next start."""
    server, url = start_embedded_postgres(up_data_dir)
    running = _size(shared_buffers_mb())
    try:
        with psycopg.connect(url, autocommit=True) as held:
            monkeypatch.setattr(embedded, "shared_buffers_mb", lambda: 256)
            _, again = start_embedded_postgres(up_data_dir)  # attaches to the running server
            assert held.execute("SELECT 1").fetchone() == (1,)
            assert _shared_buffers(again) == running
            pending = held.execute(
                "SELECT setting FROM pg_file_settings WHERE name = 'shared_buffers' AND NOT applied "
                "AND sourcefile LIKE '%auto.conf'"
            ).fetchall()
            assert pending == [("256MB",)]
        server.cleanup()  # the last handle: the server stops
        server, url = start_embedded_postgres(up_data_dir)
        assert _shared_buffers(url) == "256MB"
    finally:
        server.cleanup()


@pytest.mark.skipif(os.geteuid() != 0, reason="pgserver opens the directories above its data only as root")
def test_as_root_the_directories_above_the_data_keep_their_modes(up_data_dir: Path) -> None:
    """Started by root, pgserver adds read and search for everyone to every directory above its data (root's
    home included). They get their modes back, its system user alone passing through (an ACL), and it
    still reaches its data and binaries: a checkpoint, which opens `global/pg_control` by its full path."""
    top = up_data_dir.parent  # mkdtemp's: 0700
    home = top / "home"
    home.mkdir()
    home.chmod(0o750)
    data_dir = home / "data"
    server, url = start_embedded_postgres(data_dir, private=True)
    try:
        uid = pwd.getpwnam(DATABASE_SYSTEM_USER).pw_uid
        code = "import sys, pathlib; from api.cli.embedded import start_embedded_postgres as s; "
        code += "s(pathlib.Path(sys.argv[1]))"
        for attaching in (0, 1, 4):  # CLI commands attaching start pgserver again, some at once: no drift
            started = [
                subprocess.Popen([sys.executable, "-c", code, str(data_dir)]) for _ in range(attaching)
            ]
            assert [p.wait(timeout=120) for p in started] == [0] * attaching
            for path, mode in ((top, 0o700), (home, 0o750)):
                now = stat.S_IMODE(path.stat().st_mode)
                assert now & 0o047 == mode & 0o047, f"{path}: {oct(now)}, was {oct(mode)}"
                assert os.getxattr(path, "system.posix_acl_access") == acl_keeping_mode(mode, uid)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CHECKPOINT")
            vector = conn.execute("SELECT count(*) FROM pg_extension WHERE extname = 'vector'").fetchone()
            assert vector == (1,)
    finally:
        stop_embedded_postgres(server, data_dir)
