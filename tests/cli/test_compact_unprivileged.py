"""`loregate erase compact` against an external Postgres as a role that is not a superuser.

An operator's loregate often connects as the owner of its database, not as a superuser. The command then
rewrites what that role may rewrite (every table of its database but the shared catalogs), leaves the WAL
steps (they need a superuser), and says each step it could not do as `not done:` with the SQL to run,
exit code 3 (docs/privacy.md). A table owned by someone else is named, not silently passed over.
"""

from __future__ import annotations

import random
import string
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from api.cli.commands.erase import PARTLY_DONE
from governance.storage.migrate import upgrade_head
from tests.utils.cli import cli_env, run_cli


def _as_role(url: str, role: str) -> str:
    """`url` with `role` as its user (the embedded server trusts local connections)."""
    scheme, rest = url.split("://", 1)
    return f"{scheme}://{role}@{rest.split('@', 1)[1]}"


@pytest.fixture(params=["database_owner", "table_owner"])
def owner_database(request: pytest.FixtureRequest, pg_server: Any) -> Iterator[dict[str, str]]:
    """A role of its own (LOGIN, not a superuser) that migrated loregate's schema, so owns its tables; it
    owns the database too (`database_owner`), or the database is the superuser's and the role was granted
    CREATE on its public schema (`table_owner`, as some hosted Postgres set it up)."""
    tag = uuid.uuid4().hex[:10]
    role, name = f"owner_{tag}", f"owned_{tag}"
    owner = f" OWNER {role}" if request.param == "database_owner" else ""
    pg_server.psql(f"CREATE ROLE {role} LOGIN NOSUPERUSER; CREATE DATABASE {name}{owner};")
    admin_url = str(pg_server.get_uri(name))
    with psycopg.connect(admin_url, autocommit=True) as conn:
        # pgvector is not a trusted extension: a superuser creates it, as a hosted Postgres' admin does
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute(f"GRANT CREATE, USAGE ON SCHEMA public TO {role}")
    role_url = _as_role(admin_url, role)
    upgrade_head(role_url)
    try:
        yield {"kind": request.param, "admin_url": admin_url, "role_url": role_url}
    finally:
        pg_server.psql(
            f"DROP DATABASE IF EXISTS {name} WITH (FORCE); DROP OWNED BY {role}; DROP ROLE {role};"
        )


def _files(conn: psycopg.Connection[Any], table: str) -> tuple[str, int]:
    row = conn.execute(
        "SELECT current_setting('data_directory') || '/' || pg_relation_filepath(%s::regclass),"
        " pg_relation_filenode(%s::regclass)",
        (table, table),
    ).fetchone()
    assert row is not None
    return str(row[0]), int(row[1])


def _holds(path: str, needle: bytes) -> bool:
    file = Path(path)
    return file.exists() and needle in file.read_bytes()


def test_compact_as_database_owner_rewrites_its_tables_and_names_the_rest(
    owner_database: dict[str, str], tmp_path: Path
) -> None:
    canary = ("canary" + "".join(random.choice(string.ascii_lowercase) for _ in range(12))).encode()
    with psycopg.connect(owner_database["role_url"], autocommit=True) as conn:
        # an erased row: deleted, its bytes still in the table's file as a dead tuple
        conn.execute("CREATE TABLE erased_notes (note text)")  # the role's, as every loregate table is
        conn.execute("INSERT INTO erased_notes SELECT %s", (canary.decode() * 8,))
        conn.execute("DELETE FROM erased_notes")
    with psycopg.connect(owner_database["admin_url"], autocommit=True) as admin:
        admin.execute("CREATE TABLE public.admin_notes (note text)")  # owned by the superuser
        admin.execute("CHECKPOINT")  # the dead tuple reaches the file on disk
        owned_path, owned_node = _files(admin, "erased_notes")
        _, foreign_node = _files(admin, "admin_notes")
    assert _holds(owned_path, canary)

    env = cli_env(LOREGATE_DATABASE_URL=owner_database["role_url"], LOREGATE_DATA_DIR=str(tmp_path / "data"))
    compacted = run_cli("erase", "compact", env=env, timeout=600)
    said = compacted.stdout + compacted.stderr
    assert compacted.returncode == PARTLY_DONE, said
    assert "Traceback" not in said
    if owner_database["kind"] == "database_owner":
        # a database's owner may rewrite every table of it, the catalogs included
        assert "done: VACUUM (FULL, ANALYZE) of the database" in said
        assert "done: VACUUM (FULL) pg_catalog.pg_statistic" in said
        assert said.count("not done:") == 1
    else:
        # only the tables it owns: the others are named, with what to run
        assert "done: VACUUM (FULL, ANALYZE) of every table this role may rewrite" in said
        assert "public.admin_notes" in said and "VACUUM (FULL, ANALYZE) " in said
        assert "not done: pg_statistic not rewritten" in said
    # the WAL steps are the operator's, with the SQL to run
    assert "not done: WAL not switched or checkpointed" in said
    assert "ALTER SYSTEM SET wal_recycle = off" in said and "SELECT pg_switch_wal()" in said

    with psycopg.connect(owner_database["admin_url"], autocommit=True) as admin:
        new_path, new_node = _files(admin, "erased_notes")
        _, foreign_after = _files(admin, "admin_notes")
        admin.execute("CHECKPOINT")  # the old file, emptied at commit, is unlinked
        assert admin.execute("SELECT count(*) FROM erased_notes").fetchone() == (0,)
        settings = admin.execute("SELECT current_setting('wal_recycle')").fetchone()
    assert new_node != owned_node  # rewritten into a new file
    if owner_database["kind"] == "table_owner":
        assert foreign_after == foreign_node  # not the role's: left as it was, and said so
    assert not _holds(owned_path, canary) and not _holds(new_path, canary)
    assert settings is not None  # the role changed no server setting (it may not)


def test_compact_unreachable_database_is_one_line(tmp_path: Path) -> None:
    env = cli_env(
        LOREGATE_DATABASE_URL="postgresql://nobody@127.0.0.1:9/none", LOREGATE_DATA_DIR=str(tmp_path)
    )
    compacted = run_cli("erase", "compact", env=env, timeout=120)
    assert compacted.returncode == 1
    assert "database unreachable" in compacted.stderr and "Traceback" not in compacted.stderr


def test_compact_says_when_an_open_transaction_may_keep_erased_rows(empty_database_url: str) -> None:
    from governance.storage.compaction import compact

    url = empty_database_url.replace("postgresql+psycopg://", "postgresql://", 1)
    with psycopg.connect(url) as holder:  # a transaction begun before the compaction, still open
        holder.execute("CREATE TABLE held (n int)")
        result = compact(empty_database_url, wait=1.0)
    assert any(line.startswith("sessions kept a transaction open") for line in result.skipped), result
    # once it has ended, nothing is left for that reason
    again = compact(empty_database_url, wait=1.0)
    assert not any(line.startswith("sessions kept") for line in again.skipped), again


def test_compact_drops_statistics_an_emptied_table_kept(empty_database_url: str) -> None:
    """ANALYZE leaves an emptied table's statistics as they were: the erased values, until compaction."""
    from governance.storage.compaction import compact

    url = empty_database_url.replace("postgresql+psycopg://", "postgresql://", 1)
    canary = "canary" + "".join(random.choice(string.ascii_lowercase) for _ in range(12))
    sampled = "SELECT count(*) FROM pg_stats WHERE tablename = 'notes' AND most_common_vals::text LIKE %s"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE notes (word text)")
        conn.execute("INSERT INTO notes SELECT %s FROM generate_series(1, 50)", (canary,))
        conn.execute("ANALYZE notes")
        conn.execute("DELETE FROM notes")
        conn.execute("ANALYZE notes")
        assert conn.execute(sampled, (f"%{canary}%",)).fetchone() == (1,)  # still there
    result = compact(empty_database_url, wait=1.0)
    assert any(step.startswith("statistics of empty tables deleted") for step in result.done), result
    with psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute(sampled, (f"%{canary}%",)).fetchone() == (0,)
