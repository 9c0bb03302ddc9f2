"""The tree stays as the house style asks: ruff-clean, ruff-formatted and mypy-strict (pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import repo_root


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=repo_root(), capture_output=True, text=True, timeout=600
    )


def test_quality_ruff_finds_nothing() -> None:
    result = _run("ruff", "check", "--output-format", "concise", ".")
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


def test_quality_ruff_format_changes_nothing() -> None:
    result = _run("ruff", "format", "--check", ".")
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


def test_quality_mypy_strict_is_clean() -> None:
    result = _run("mypy")
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
