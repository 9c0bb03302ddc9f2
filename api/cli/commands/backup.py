"""`loregate backup FILE` and `loregate restore FILE [--force]`: the whole database, with Postgres tools.

They use the `pg_dump`, `pg_restore` and `psql` that ship inside the `pgserver` wheel (the embedded
Postgres 16), on the database the other commands use: `LOREGATE_DATABASE_URL`, else the embedded one under
the data dir. A backup is a `pg_dump` custom-format archive (compressed; schema, data, policy, keys,
staging, memories and events), written beside FILE and renamed when complete, owner-only.

A restore replays a backup in one transaction (`psql --single-transaction`): a failure changes nothing. It
refuses a database that holds any table unless `--force`, which drops the `public` schema first (in the
same transaction). With the embedded database it takes the data dir's `up.lock`, so it refuses while
`loregate up` runs there and `loregate up` cannot start during it; against an external database, stop every
gateway and worker first. The schema is then upgraded to this release (`loregate migrate`), so a backup of
an older release restores too. Temporal's workflow histories (`temporal.db`) are not in the backup.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Annotated

import typer

from api.cli.commands._common import console, database, err_console, fail, in_transaction, load_settings

if TYPE_CHECKING:
    from governance.config import Settings

__all__ = ["register", "backup", "restore", "postgres_tool"]

# pg_restore of a big backup can take long: bounded, but generously
TOOL_TIMEOUT_SECONDS = 3600


def postgres_tool(name: str) -> str:
    """A Postgres client binary of the `pgserver` wheel, else from PATH."""
    import pgserver

    bundled = Path(pgserver.__file__).parent / "pginstall" / "bin" / name
    if bundled.exists():
        return str(bundled)
    found = shutil.which(name)
    if found is None:
        fail(f"{name} not found: it ships with the pgserver wheel loregate depends on")
    return found


def _libpq(url: str) -> str:
    """The URL as libpq reads it (without SQLAlchemy's `+driver`)."""
    return re.sub(r"^postgres(?:ql)?\+\w+://", "postgresql://", url)


def _tool_error(exc: subprocess.CalledProcessError) -> str:
    text = (exc.stderr or b"").decode("utf-8", "replace").strip().splitlines()
    return text[0] if text else f"exit code {exc.returncode}"


def backup(
    file: Annotated[Path, typer.Argument(help="Where to write the backup (pg_dump custom format).")],
    force: Annotated[bool, typer.Option("--force", help="Overwrite FILE if it exists.")] = False,
) -> None:
    """Back up the whole database (embedded or LOREGATE_DATABASE_URL) into FILE."""
    if file.exists() and not force:
        fail(f"{file} exists; choose another name or pass --force to overwrite it")
    settings = load_settings()
    partial = file.with_name(f".{file.name}.partial")
    started = time.monotonic()
    with database(settings) as url:
        command = [
            postgres_tool("pg_dump"),
            "--format=custom",
            "--no-owner",
            "--no-privileges",
            f"--file={partial}",
            f"--dbname={_libpq(url)}",
        ]
        try:
            subprocess.run(command, check=True, capture_output=True, timeout=TOOL_TIMEOUT_SECONDS)
            partial.chmod(0o600)
            partial.replace(file)
        except subprocess.CalledProcessError as exc:
            fail(f"pg_dump failed: {_tool_error(exc)}")
        finally:
            partial.unlink(missing_ok=True)
    size = file.stat().st_size
    console.print(
        f"backed up the database to {file} ({size / 1e6:.1f} MB in {time.monotonic() - started:.1f} s)",
        highlight=False,
    )


@contextmanager
def _platform_stopped(settings: Settings) -> Iterator[None]:
    """Hold the data dir's `up.lock` (embedded database), refusing while `loregate up` runs there."""
    if settings.database_url:
        err_console.print(
            "restoring over LOREGATE_DATABASE_URL: stop every gateway and worker using it first",
            style="yellow",
        )
        yield
        return
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    lock: IO[str] = open(  # noqa: SIM115 - held for the restore
        settings.data_dir / "up.lock", "a+", opener=lambda path, flags: os.open(path, flags, 0o600)
    )
    try:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            owner = lock.read().strip() or "?"
            fail(
                f"loregate up is running on {settings.data_dir} (pid {owner}); stop it first: "
                "a restore replaces the database under it"
            )
        yield
    finally:
        lock.close()


def restore(
    file: Annotated[Path, typer.Argument(help="A backup written by `loregate backup`.")],
    force: Annotated[
        bool, typer.Option("--force", help="Replace a database that is not empty (everything in it goes).")
    ] = False,
) -> None:
    """Restore a backup into the database (embedded or LOREGATE_DATABASE_URL), in one transaction."""
    if not file.is_file():
        fail(f"{file} is not a file")
    settings = load_settings()
    started = time.monotonic()
    with _platform_stopped(settings):
        _check_archive(file)
        _restore(settings, file, force=force)
    console.print(
        f"restored {file} in {time.monotonic() - started:.1f} s; start the platform again (`loregate up`)",
        highlight=False,
    )


def _check_archive(file: Path) -> None:
    try:
        subprocess.run(
            [postgres_tool("pg_restore"), "--list", str(file)], check=True, capture_output=True, timeout=600
        )
    except subprocess.CalledProcessError as exc:
        fail(f"{file} is not a backup written by `loregate backup` (pg_restore: {_tool_error(exc)})")


def _restore(settings: Settings, file: Path, *, force: bool) -> None:
    """Replay the archive in one transaction (dropping what is there first with `force`), then migrate."""
    from governance.storage.migrate import upgrade_head
    from governance.storage.server_settings import EMPTY_DATABASE
    from governance.storage.transfer import database_contents

    with database(settings) as url:
        before = in_transaction(settings, url, database_contents)
        if before["tables"] and not force:
            held = ", ".join(f"{v} {k}" for k, v in before.items())
            fail(
                f"the database is not empty ({held}); restore into an empty database, or pass --force to "
                "replace everything in it (stop `loregate up`, gateways and workers first)"
            )
        script = [f"--dbname={_libpq(url)}", "--single-transaction", "--quiet", "-v", "ON_ERROR_STOP=1"]
        if force:
            script += ["-c", EMPTY_DATABASE]
        dump = subprocess.Popen(
            [postgres_tool("pg_restore"), "--no-owner", "--no-privileges", "--file=-", str(file)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            subprocess.run(
                [postgres_tool("psql"), *script, "-f", "-"],
                stdin=dump.stdout,
                check=True,
                capture_output=True,
                timeout=TOOL_TIMEOUT_SECONDS,
            )
        except subprocess.CalledProcessError as exc:
            dump.kill()
            fail(f"the restore failed and changed nothing: {_tool_error(exc)}")
        finally:
            if dump.stdout is not None:
                dump.stdout.close()
            dump.wait(timeout=60)
        upgrade_head(url)
        after = in_transaction(settings, url, database_contents)
    console.print(
        "the database now holds " + ", ".join(f"{v} {k}" for k, v in after.items()), highlight=False
    )


def register(app: typer.Typer) -> None:
    app.command("backup")(backup)
    app.command("restore")(restore)
