"""`loregate export`, `import`, `backup` and `restore` as a person runs them.

Export and import talk to a real gateway on loopback; backup and restore run the bundled pg_dump, pg_restore
and psql against embedded databases in data dirs of their own.
"""

from __future__ import annotations

import fcntl
import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.scopes import ActorType
from tests.utils.cli import KEY_PATTERN, cli_env, run_cli
from tests.utils.factories import make_actor, new_tenant
from tests.utils.memory_factories import add_entries, add_memory, new_task


@pytest.fixture(scope="module")
async def world(engine: AsyncEngine, gateway: str) -> dict[str, Any]:
    org, project = new_tenant()
    human = await make_actor(engine, ActorType.HUMAN, org, project)
    agent = await make_actor(engine, ActorType.AGENT, org, project)
    admin = await make_actor(engine, ActorType.HUMAN, "default", None, is_admin=True)
    outsider = await make_actor(engine, ActorType.HUMAN, *new_tenant())
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
        "env": {
            name: cli_env(LOREGATE_URL=gateway, LOREGATE_API_KEY=actor.key)
            for name, actor in (("human", human), ("agent", agent), ("admin", admin), ("outsider", outsider))
        },
    }


def test_export_writes_the_file_and_import_restore_finds_it_there(
    world: dict[str, Any], tmp_path: Path
) -> None:
    target = tmp_path / "shop.jsonl"
    exported = run_cli("export", world["scope_key"], "-o", str(target), env=world["env"]["human"])
    assert exported.returncode == 0, exported.stderr
    assert "exported 1 memory, 0 events, 0 staging entries" in exported.stderr
    lines = [json.loads(line) for line in target.read_text().splitlines()]
    assert lines[0]["kind"] == "header" and lines[-1]["kind"] == "trailer"
    assert target.stat().st_mode & 0o077 == 0
    restored = run_cli("import", str(target), "--restore", env=world["env"]["admin"])
    assert restored.returncode == 0, restored.stderr
    assert "created 0 memories, 0 events; unchanged 1 memory, 0 events" in restored.stdout


def test_export_refused_leaves_no_file(world: dict[str, Any], tmp_path: Path) -> None:
    target = tmp_path / "theirs.jsonl"
    refused = run_cli("export", world["scope_key"], "-o", str(target), env=world["env"]["outsider"])
    assert refused.returncode == 1 and "not_found" in refused.stderr
    assert list(tmp_path.iterdir()) == []


def test_export_into_a_missing_directory_is_one_line(world: dict[str, Any], tmp_path: Path) -> None:
    target = tmp_path / "no-such-dir" / "shop.jsonl"
    refused = run_cli("export", world["scope_key"], "-o", str(target), env=world["env"]["human"])
    assert refused.returncode == 1, refused.stderr
    assert f"cannot write {target}: No such file or directory; nothing was written" in refused.stderr
    assert "Traceback" not in refused.stderr and list(tmp_path.iterdir()) == []


def test_show_of_an_empty_or_dot_reference_says_what_is_wrong(world: dict[str, Any]) -> None:
    """`loregate show ""` reached the listing's redirect and said the answer was no MemoryPublic."""
    empty = run_cli("show", "", env=world["env"]["human"])
    assert empty.returncode == 1 and "invalid_input: an id in the request path is empty" in empty.stderr
    dots = run_cli("show", "..", env=world["env"]["human"])
    assert dots.returncode == 1 and "not_found: memory '..' does not exist" in dots.stderr, dots.stderr


def test_import_refusals_are_one_line_and_exit_non_zero(world: dict[str, Any], tmp_path: Path) -> None:
    good = tmp_path / "good.jsonl"
    assert run_cli("export", world["scope_key"], "-o", str(good), env=world["env"]["human"]).returncode == 0
    agent = run_cli("import", str(good), "--restore", env=world["env"]["agent"])
    assert agent.returncode == 1 and "forbidden" in agent.stderr
    bad = tmp_path / "bad.jsonl"
    lines = good.read_text().splitlines()
    bad.write_text("\n".join([lines[0], "not json at all", *lines[1:]]))
    broken = run_cli("import", str(bad), "--restore", env=world["env"]["admin"])
    assert broken.returncode == 1 and "line 2: not JSON" in broken.stderr
    missing = run_cli("import", str(tmp_path / "nope.jsonl"), "--restore", env=world["env"]["admin"])
    assert missing.returncode == 1 and "cannot read" in missing.stderr
    neither = run_cli("import", str(good), env=world["env"]["human"])
    assert neither.returncode == 1 and "--scope" in neither.stderr
    # a flag a restore would ignore is refused before anything is sent
    ignored = run_cli(
        "import", str(good), "--restore", "--verified", "tests_passed", env=world["env"]["admin"]
    )
    assert ignored.returncode == 1 and "drop --project and --verified" in ignored.stderr


@pytest.fixture
def data_dirs() -> Iterator[tuple[Path, Path]]:
    """Two empty data dirs outside pytest's basetemp (the embedded Postgres runs as another user)."""
    parent = Path(tempfile.mkdtemp(prefix="loregate-backup-"))
    try:
        yield parent / "source", parent / "target"
    finally:
        shutil.rmtree(parent, ignore_errors=True)


def test_backup_and_restore_round_trip_the_embedded_database(data_dirs: tuple[Path, Path]) -> None:
    source, target = data_dirs
    source_env = cli_env(LOREGATE_DATA_DIR=str(source))
    target_env = cli_env(LOREGATE_DATA_DIR=str(target))
    assert run_cli("migrate", env=source_env).returncode == 0
    created = run_cli(
        "keys",
        "create",
        "--actor",
        "human",
        "--org",
        "acme",
        "--project",
        "shop",
        "--name",
        "alice",
        env=source_env,
    )
    assert created.returncode == 0, created.stderr
    key = KEY_PATTERN.search(created.stdout)
    assert key is not None
    key_id = key.group(0).split("_")[1]
    backup = source.parent / "loregate.dump"

    made = run_cli("backup", str(backup), env=source_env)
    assert made.returncode == 0, made.stderr
    assert backup.stat().st_mode & 0o077 == 0 and "backed up the database" in made.stdout
    again = run_cli("backup", str(backup), env=source_env)
    assert again.returncode == 1 and "--force" in again.stderr

    restored = run_cli("restore", str(backup), env=target_env)
    assert restored.returncode == 0, restored.stderr
    listed = run_cli("keys", "list", env={**target_env, "COLUMNS": "200"})
    assert listed.returncode == 0 and key_id in listed.stdout and "alice" in listed.stdout

    # the target now holds data: a second restore is refused unless forced, and changes nothing
    refused = run_cli("restore", str(backup), env=target_env)
    assert refused.returncode == 1 and "not empty" in refused.stderr and "--force" in refused.stderr
    assert run_cli("restore", str(backup), "--force", env=target_env).returncode == 0
    listed = run_cli("keys", "list", env={**target_env, "COLUMNS": "200"})
    assert listed.stdout.count(key_id) == 1


def test_restore_refuses_bad_files_and_a_running_platform(data_dirs: tuple[Path, Path]) -> None:
    source, _ = data_dirs
    env = cli_env(LOREGATE_DATA_DIR=str(source))
    not_a_backup = source.parent / "notes.txt"
    not_a_backup.write_text("hello")
    bad = run_cli("restore", str(not_a_backup), env=env)
    assert bad.returncode == 1 and "is not a backup" in bad.stderr
    assert not (source / "postgres").exists()  # refused before a database was started
    # what `loregate up` holds while it runs
    with (source / "up.lock").open("a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        lock.write("4242")
        lock.flush()
        # the lock is checked before the file or the database is touched
        running = run_cli("restore", str(not_a_backup), env=env)
    assert running.returncode == 1 and "loregate up is running" in running.stderr and "4242" in running.stderr
