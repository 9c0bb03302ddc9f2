"""`loregate retention run`: a dry run lists what would go and changes nothing; the run prunes the same."""

from __future__ import annotations

import json
import uuid

import psycopg

from tests.utils.cli import cli_env, run_cli


def _seed(url: str) -> dict[str, str]:
    """Seven worktree-scope episodes of seven tasks of acme/shop, the two oldest 200 days old."""
    titles: dict[str, str] = {}
    with psycopg.connect(url, autocommit=True) as conn:
        for n in range(7):
            memory_id = str(uuid.uuid4())
            title = f"Episode: task number {n}"
            conn.execute(
                "INSERT INTO memories (id, citation, memory_type, scope, scope_key, org, project, title, "
                "content, content_hash, confidence, reward, source_task_ids, decay_policy, created_at) "
                "VALUES (%s, %s, 'episode', 'worktree', 'worktree:acme/shop/main', 'acme', 'shop', %s, %s, "
                "%s, 0.6, 0.9, ARRAY[%s], 'manual_only', now() - make_interval(days => %s))",
                (
                    memory_id,
                    f"c{n}{memory_id[:8]}",
                    title,
                    f"{title} in full",
                    f"h{n}",
                    f"t-{n}",
                    200 - n * 30,
                ),
            )
            titles[memory_id] = title
    return titles


def _left(url: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT count(*) FROM memories WHERE org = 'acme'").fetchone()
    assert row is not None
    return int(row[0])


def test_retention_run_dry_run_lists_then_prunes_the_same(migrated_database_url: str) -> None:
    titles = _seed(migrated_database_url)
    env = cli_env(LOREGATE_DATABASE_URL=migrated_database_url, COLUMNS="200")
    preview = run_cli("retention", "run", "--dry-run", "--org", "acme", env=env)
    assert preview.returncode == 0, preview.stderr
    # four are older than 90 days, but 5 stay (LOREGATE_RETENTION_KEEP_PER_GROUP's default): the two
    # oldest go, the two newer old ones are spared
    assert "would prune 2 memories (episode_age 2); 2 spared to keep at least 5 per group" in preview.stdout
    assert "Episode: task number 0" in preview.stdout and "Episode: task number 1" in preview.stdout
    assert "in full" not in preview.stdout and "dry run: nothing was changed" in preview.stdout
    assert _left(migrated_database_url) == 7

    as_json = run_cli("retention", "run", "--dry-run", "--org", "acme", "--json", env=env)
    assert as_json.returncode == 0, as_json.stderr
    planned = json.loads(as_json.stdout)["pruned"]
    assert {p["title"] for p in planned} == {"Episode: task number 0", "Episode: task number 1"}
    assert {p["rule"] for p in planned} == {"episode_age"} and set(titles) >= {p["id"] for p in planned}

    # the old variable name still counts: keep 6 leaves one to prune
    old_name = {**env, "LOREGATE_RETENTION_KEEP_PER_TASK": "6"}
    assert "would prune 1 memories" in run_cli("retention", "run", "--dry-run", env=old_name).stdout

    done = run_cli("retention", "run", "--org", "acme", "--json", env=env)
    assert done.returncode == 0, done.stderr
    assert {p["id"] for p in json.loads(done.stdout)["pruned"]} == {p["id"] for p in planned}
    assert _left(migrated_database_url) == 5


def test_retention_run_refuses_a_bad_setting(migrated_database_url: str) -> None:
    env = cli_env(LOREGATE_DATABASE_URL=migrated_database_url, LOREGATE_RETENTION_KEEP_PER_GROUP="-1")
    result = run_cli("retention", "run", "--dry-run", env=env)
    assert result.returncode == 1 and "LOREGATE_RETENTION_KEEP_PER_GROUP" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout
