"""The README stays true: its settings table lists every setting, its test command is what CI runs."""

from __future__ import annotations

import re
from pathlib import Path

from tests.utils.settings_table import README, readme_table, settings_table

ROOT = Path(__file__).resolve().parent.parent
INSTALL_AND_UP = "python3 -m venv .venv && . .venv/bin/activate && pip install -e . && loregate up"
TEST_COMMAND = "pip install -e '.[test]' && pytest"


def test_readme_settings_table_is_current() -> None:
    table = readme_table(README.read_text())
    assert table is not None, "settings table markers missing from README.md"
    assert table == settings_table(), (
        "README settings table is stale: run python tests/utils/settings_table.py --write"
    )


def test_readme_quick_start_is_two_commands_and_ci_runs_the_second() -> None:
    readme = README.read_text()
    quick_start = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)\n```", quick_start, flags=re.S)
    assert blocks[:2] == [INSTALL_AND_UP, TEST_COMMAND]
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert [line for line in ci if line and not line.startswith("#")][-1] == TEST_COMMAND
