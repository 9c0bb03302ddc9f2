"""`loregate up` outlives Postgres' checkpoints, whoever runs it, while CLI commands attach to its database.

As root, pgserver runs Postgres as its own system user. Before, the data dir was 0700 and root's: the
server's first checkpoint (five minutes after start) could no longer open `global/pg_control`, Postgres
panicked and the supervisor stopped everything; every CLI command on the embedded database set 0700 again.
A checkpoint is forced here instead of waited for.

The same runs as the invoking user and, when the suite runs as root, as a temporary unprivileged user (who
owns the data dir's parent, and whose Postgres is its own process, with no pgserver user in between).
"""

from __future__ import annotations

import os
import pwd
import stat
import tempfile
from pathlib import Path

import httpx
import psycopg
import pytest

from api.cli.embedded import data_dir_mode
from tests.utils.cli import KEY_PATTERN, UpLauncher, cli_env, run_cli

pytestmark = pytest.mark.timeout(900)


def _checkpoint(data_dir: Path) -> None:
    """Force a checkpoint on the embedded server of `data_dir` (over its Unix socket)."""
    url = f"postgresql://postgres:@/postgres?host={data_dir / 'postgres'}"
    with psycopg.connect(url, autocommit=True, connect_timeout=30) as conn:
        conn.execute("CHECKPOINT")


def test_up_survives_checkpoints_and_cli_commands_on_its_database(
    up_launcher: UpLauncher, up_data_dir: Path
) -> None:
    expected_mode = 0o710 if os.geteuid() == 0 else 0o700
    _survives_checkpoints(up_launcher, up_data_dir, expected_mode, env=cli_env(), user=None)
    assert data_dir_mode(up_data_dir) == expected_mode


def test_up_as_an_unprivileged_user_survives_checkpoints_and_cli_commands(
    unprivileged_user: pwd.struct_passwd, up_launcher: UpLauncher, up_data_dir: Path
) -> None:
    """The suite runs as root: the same as a user of its own, whose data dir is 0700 and its own."""
    home = Path(tempfile.mkdtemp(prefix="loregate-home-", dir=up_data_dir.parent))
    for path in (up_data_dir.parent, home):
        os.chown(path, unprivileged_user.pw_uid, unprivileged_user.pw_gid)
    env = cli_env(HOME=str(home), XDG_RUNTIME_DIR=str(home), USER=unprivileged_user.pw_name)
    _survives_checkpoints(up_launcher, up_data_dir, 0o700, env=env, user=unprivileged_user.pw_name)
    assert up_data_dir.stat().st_uid == unprivileged_user.pw_uid
    assert (up_data_dir / "postgres").stat().st_uid == unprivileged_user.pw_uid


def _survives_checkpoints(
    up_launcher: UpLauncher, up_data_dir: Path, expected_mode: int, *, env: dict[str, str], user: str | None
) -> None:
    up = up_launcher.start(up_data_dir, env=env, user=user)
    admin_key = (up_data_dir / "bootstrap-admin.key").read_text().strip()
    assert stat.S_IMODE(up_data_dir.stat().st_mode) == expected_mode

    _checkpoint(up_data_dir)
    created = run_cli(
        "keys",
        "create",
        "--actor",
        "orchestrator",
        "--org",
        "acme",
        "--project",
        "demo",
        "--name",
        "orch",
        env={**env, "LOREGATE_DATA_DIR": str(up_data_dir)},
        user=user,
    )
    assert created.returncode == 0, created.stderr
    orchestrator_key = KEY_PATTERN.search(created.stdout)
    assert orchestrator_key is not None, created.stdout
    assert stat.S_IMODE(up_data_dir.stat().st_mode) == expected_mode
    _checkpoint(up_data_dir)

    with httpx.Client(base_url=up.base_url, timeout=30) as http:
        task = http.post(
            "/v1/tasks",
            json={"org": "acme", "project": "demo", "worktree": "main", "description": "after checkpoints"},
            headers={"Authorization": f"Bearer {orchestrator_key.group()}"},
        )
        assert task.status_code == 201, task.text
        written = http.post(
            f"/v1/tasks/{task.json()['task_id']}/entries",
            json={"entries": [{"kind": "log", "content": "still writing"}]},
            headers={"Authorization": f"Bearer {admin_key}"},
        )
        assert written.status_code == 201, written.text
        assert http.get("/healthz").status_code == 200
    assert up.process.poll() is None, up.output()
    assert "PANIC" not in up.output()
