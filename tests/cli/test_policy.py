"""`loregate policy`: rows added and removed at run time are stored and listed."""

from __future__ import annotations

from tests.utils.cli import cli_env, run_cli


def test_policy_add_list_remove_round_trip(migrated_database_url: str) -> None:
    env = cli_env(LOREGATE_DATABASE_URL=migrated_database_url)
    listed = run_cli("policy", "list", env=env)
    assert listed.returncode == 0, listed.stderr
    assert "orchestrator" in listed.stdout and "deny" not in listed.stdout

    added = run_cli("policy", "add", "agent", "project", "write", "--effect", "deny", env=env)
    assert added.returncode == 0, added.stderr
    assert "deny" in run_cli("policy", "list", env=env).stdout
    duplicate = run_cli("policy", "add", "agent", "project", "write", "--effect", "deny", env=env)
    assert duplicate.returncode == 1 and "already present" in duplicate.stderr

    removed = run_cli("policy", "remove", "agent", "project", "write", "--effect", "deny", env=env)
    assert removed.returncode == 0, removed.stderr
    assert "deny" not in run_cli("policy", "list", env=env).stdout
    missing = run_cli("policy", "remove", "agent", "project", "write", "--effect", "deny", env=env)
    assert missing.returncode == 1 and "no such policy row" in missing.stderr


def test_policy_add_unknown_scope_refused_as_over_http(migrated_database_url: str) -> None:
    env = cli_env(LOREGATE_DATABASE_URL=migrated_database_url)
    refused = run_cli("policy", "add", "agent", "projcet", "approve", env=env)
    assert refused.returncode == 1
    assert "scope: Input should be 'task', 'worktree', 'project', 'org', 'policy' or '*'" in refused.stderr
    assert "nothing added" in refused.stderr and "Traceback" not in refused.stderr
    assert "projcet" not in run_cli("policy", "list", env=env).stdout


def test_policy_add_unknown_action_refused_as_over_http(migrated_database_url: str) -> None:
    env = cli_env(LOREGATE_DATABASE_URL=migrated_database_url)
    refused = run_cli("policy", "add", "agent", "project", "aprove", "--effect", "deny", env=env)
    assert refused.returncode == 1
    assert "unknown action 'aprove': a policy row's action is one of 'read'" in refused.stderr
    assert "nothing added" in refused.stderr and "Traceback" not in refused.stderr
    assert "aprove" not in run_cli("policy", "list", env=env).stdout
