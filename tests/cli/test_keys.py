"""`loregate keys`: a key is printed once, authenticates as the principal asked for, and can be revoked."""

from __future__ import annotations

import asyncio

from governance.config import Settings
from governance.identity import Principal
from governance.scopes import ActorType
from governance.storage.engine import make_engine
from governance.storage.identity import authenticate
from tests.utils.cli import KEY_PATTERN, cli_env, run_cli


def _authenticate(database_url: str, key: str) -> Principal | None:
    async def check() -> Principal | None:
        engine = make_engine(Settings(database_url=database_url))
        try:
            async with engine.connect() as conn:
                return await authenticate(conn, key)
        finally:
            await engine.dispose()

    return asyncio.run(check())


def test_keys_create_prints_a_key_that_authenticates(migrated_database_url: str) -> None:
    env = cli_env(LOREGATE_DATABASE_URL=migrated_database_url)
    result = run_cli(
        "keys",
        "create",
        "--actor",
        "orchestrator",
        "--org",
        "acme",
        "--project",
        "shop",
        "--name",
        "conductor",
        env=env,
    )
    assert result.returncode == 0, result.stderr
    match = KEY_PATTERN.search(result.stdout)
    assert match is not None, result.stdout
    principal = _authenticate(migrated_database_url, match.group())
    assert principal is not None
    assert (principal.name, principal.actor_type, principal.org, principal.project, principal.is_admin) == (
        "conductor",
        ActorType.ORCHESTRATOR,
        "acme",
        "shop",
        False,
    )
    assert "LOREGATE_DATABASE_URL" in result.stderr  # it says which database it used


def test_keys_create_refuses_a_tenant_name_the_gateway_refuses(migrated_database_url: str) -> None:
    """An org or project with `/` or `*` (or blank) names no tenant a task can be opened in: no key."""
    env = cli_env(LOREGATE_DATABASE_URL=migrated_database_url)
    listed_before = run_cli("keys", "list", env=env).stdout.count("key id")
    for option, value in (("--org", "../x"), ("--project", "a*"), ("--org", " ")):
        names = {"--org": "acme", "--project": "shop", option: value}
        args = [a for pair in names.items() for a in pair]
        result = run_cli("keys", "create", "--actor", "agent", "--name", "n", *args, env=env)
        assert result.returncode == 1, result.stdout
        assert f"{option} {value!r}: should be a name without `/` or `*`" in result.stderr, result.stderr
        assert "no key created" in result.stderr
        assert KEY_PATTERN.search(result.stdout) is None
    assert run_cli("keys", "list", env=env).stdout.count("key id") == listed_before


def test_keys_revoke_stops_the_key_authenticating(migrated_database_url: str) -> None:
    env = cli_env(LOREGATE_DATABASE_URL=migrated_database_url)
    created = run_cli(
        "keys", "create", "--actor", "agent", "--org", "acme", "--project", "shop", "--name", "a", env=env
    )
    key = KEY_PATTERN.search(created.stdout)
    assert key is not None, created.stdout
    key_id = key.group().split("_")[1]

    listed = run_cli("keys", "list", env=env)
    assert listed.returncode == 0 and key_id in listed.stdout
    assert key.group() not in listed.stdout  # never the secret

    revoked = run_cli("keys", "revoke", key_id, env=env)
    assert revoked.returncode == 0, revoked.stderr
    assert _authenticate(migrated_database_url, key.group()) is None
    again = run_cli("keys", "revoke", key_id, env=env)
    assert again.returncode == 1 and "no live key" in again.stderr


def test_keys_list_is_readable_at_80_columns(migrated_database_url: str) -> None:
    """A default terminal or a pipe (80 columns) cuts no actor, tenant or id: one key per block there."""
    env = cli_env(LOREGATE_DATABASE_URL=migrated_database_url)
    org, project = "northwind-logistics", "fleet-telemetry-ingest"
    created = run_cli(
        "keys", "create", "--actor", "orchestrator", "--org", org, "--project", project,
        "--name", "nightly-release-conductor", env=env,
    )  # fmt: skip
    key = KEY_PATTERN.search(created.stdout)
    assert key is not None, created.stdout
    key_id = key.group().split("_")[1]
    admin = run_cli("keys", "create", "--actor", "human", "--org", org, "--name", "ops", "--admin", env=env)
    assert admin.returncode == 0, admin.stderr

    narrow = run_cli("keys", "list", env={**env, "COLUMNS": "80"})
    assert narrow.returncode == 0, narrow.stderr
    assert "…" not in narrow.stdout
    assert all(len(line) <= 80 for line in narrow.stdout.splitlines()), narrow.stdout
    block = narrow.stdout.split(f"key id     {key_id}\n", 1)[1].split("\n\n", 1)[0]
    assert "actor      orchestrator" in block and f"tenant     {org}/{project}" in block, narrow.stdout
    assert "name       nightly-release-conductor" in block and "revoked" not in block
    assert "actor      human (admin)" in narrow.stdout

    wide = run_cli("keys", "list", env={**env, "COLUMNS": "240"})
    assert wide.returncode == 0, wide.stderr
    assert "…" not in wide.stdout and "│" in wide.stdout  # the table, every cell whole
    row = next(line for line in wide.stdout.splitlines() if key_id in line)
    assert f"{org}/{project}" in row and "orchestrator" in row
