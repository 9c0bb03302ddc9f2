"""`loregate export -o PATH` into what PATH names: a file, a directory, a symlink, a FIFO, a device, `-`.

A rename over the target keeps a failed export from leaving a file behind, but renaming over a symlink, a FIFO
or a device replaced the node itself (as root, `/dev/full` became a regular file), and a directory ended in a
traceback. Each case runs the real command against a real gateway on loopback.
"""

from __future__ import annotations

import json
import os
import resource
import stat
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.scopes import ActorType
from tests.utils.cli import LOREGATE, cli_env, run_cli
from tests.utils.factories import make_actor, new_tenant
from tests.utils.memory_factories import add_entries, add_memory, new_task

DEV_FULL = Path("/dev/full")


@pytest.fixture(scope="module")
async def world(engine: AsyncEngine, gateway: str) -> dict[str, Any]:
    """A project scope holding one memory, and the environment of a human who may read it."""
    org, project = new_tenant()
    human = await make_actor(engine, ActorType.HUMAN, org, project)
    async with engine.begin() as conn:
        task = await new_task(conn, org=org, project=project)
        sources = await add_entries(conn, task, ["queue.backend: redis streams"])
        await add_memory(
            conn,
            task,
            title="Queue",
            content="queue.backend: redis streams",
            embedding=None,
            source_entry_ids=sources,
        )
    return {
        "scope_key": f"project:{org}/{project}",
        "env": cli_env(LOREGATE_URL=gateway, LOREGATE_API_KEY=human.key),
    }


def _is_export(text: str) -> bool:
    lines = [json.loads(line) for line in text.splitlines()]
    return bool(lines) and lines[0]["kind"] == "header" and lines[-1]["kind"] == "trailer"


def _one_line_error(result: subprocess.CompletedProcess[str], message: str) -> None:
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr and "exported" not in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and message in result.stderr, result.stderr


def test_export_into_a_directory_is_one_line_and_writes_nothing(
    world: dict[str, Any], tmp_path: Path
) -> None:
    outdir = tmp_path / "outdir"
    outdir.mkdir()
    result = run_cli("export", world["scope_key"], "-o", str(outdir), env=world["env"])
    _one_line_error(result, f"cannot write {outdir}: Is a directory; nothing was written")
    assert list(tmp_path.iterdir()) == [outdir] and list(outdir.iterdir()) == []


def test_export_through_a_symlink_writes_the_file_it_points_to(world: dict[str, Any], tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "links").mkdir()
    real = tmp_path / "real" / "shop.jsonl"
    real.touch()
    link = tmp_path / "links" / "shop.jsonl"
    link.symlink_to(real)
    result = run_cli("export", world["scope_key"], "-o", str(link), env=world["env"])
    assert result.returncode == 0 and f"to {link}" in result.stderr, result.stderr
    assert link.is_symlink() and link.readlink() == real
    assert _is_export(real.read_text())
    # the temporary file was beside the file, and is gone
    assert list(real.parent.iterdir()) == [real] and list(link.parent.iterdir()) == [link]


def test_export_into_a_fifo_streams_into_it_and_keeps_it(world: dict[str, Any], tmp_path: Path) -> None:
    fifo = tmp_path / "export.fifo"
    os.mkfifo(fifo)
    received: list[bytes] = []

    def read() -> None:
        with fifo.open("rb") as pipe:
            received.append(pipe.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        result = run_cli("export", world["scope_key"], "-o", str(fifo), env=world["env"])
    finally:
        if reader.is_alive():  # the export never opened the FIFO: a writer of our own releases the reader
            reader.join(timeout=5)
            if reader.is_alive():
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        reader.join(timeout=30)
    assert result.returncode == 0, result.stderr
    assert stat.S_ISFIFO(fifo.lstat().st_mode) and list(tmp_path.iterdir()) == [fifo]
    assert received and _is_export(received[0].decode())


def test_export_into_dev_null_keeps_the_device(world: dict[str, Any]) -> None:
    before = os.stat("/dev/null")
    result = run_cli("export", world["scope_key"], "-o", "/dev/null", env=world["env"])
    assert result.returncode == 0 and "exported 1 memory" in result.stderr, result.stderr
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev and after.st_ino == before.st_ino


@pytest.fixture
def dev_full() -> Iterator[Path]:
    """`/dev/full` when this machine has it; put back as it was should an export ever replace it (root)."""
    if not DEV_FULL.exists() or not stat.S_ISCHR(DEV_FULL.stat().st_mode):
        pytest.skip("no /dev/full character device on this machine")
    before = DEV_FULL.stat()
    try:
        yield DEV_FULL
    finally:
        now = DEV_FULL.lstat() if DEV_FULL.exists() or DEV_FULL.is_symlink() else None
        if now is None or not stat.S_ISCHR(now.st_mode) or now.st_rdev != before.st_rdev:
            DEV_FULL.unlink(missing_ok=True)
            os.mknod(DEV_FULL, stat.S_IFCHR | stat.S_IMODE(before.st_mode), before.st_rdev)
            pytest.fail("the export replaced /dev/full (put back)")


def test_export_into_dev_full_is_one_line_and_keeps_the_device(world: dict[str, Any], dev_full: Path) -> None:
    result = run_cli("export", world["scope_key"], "-o", str(dev_full), env=world["env"])
    _one_line_error(result, f"cannot write {dev_full}: No space left on device")
    assert stat.S_ISCHR(dev_full.lstat().st_mode)


def test_export_to_dash_writes_standard_output(world: dict[str, Any], tmp_path: Path) -> None:
    result = subprocess.run(
        [LOREGATE, "export", world["scope_key"], "-o", "-"],
        env=world["env"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert _is_export(result.stdout) and "exported 1 memory" in result.stderr
    assert list(tmp_path.iterdir()) == []  # no file named `-`


def test_export_failing_midway_keeps_the_old_file_and_no_partial(
    world: dict[str, Any], tmp_path: Path
) -> None:
    target = tmp_path / "shop.jsonl"
    target.write_text("the previous export\n")

    def small_files() -> None:  # EFBIG on the first write past 16 bytes (Python ignores SIGXFSZ)
        resource.setrlimit(resource.RLIMIT_FSIZE, (16, 16))

    result = subprocess.run(
        [LOREGATE, "export", world["scope_key"], "-o", str(target)],
        env=world["env"],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        preexec_fn=small_files,
    )
    _one_line_error(result, f"cannot write {target}: File too large; nothing was written")
    assert target.read_text() == "the previous export\n" and list(tmp_path.iterdir()) == [target]


def test_export_to_a_full_standard_output_is_one_line(world: dict[str, Any], dev_full: Path) -> None:
    with dev_full.open("wb") as full:
        result = subprocess.run(
            [LOREGATE, "export", world["scope_key"]],
            env=world["env"],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=180,
            check=False,
        )
    _one_line_error(result, "cannot write standard output: No space left on device")
