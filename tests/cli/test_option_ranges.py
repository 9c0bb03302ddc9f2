"""Ports, grace periods and days out of range are a usage error naming the option (or one line naming the
variable), before anything starts: no traceback, and nothing written to the data dir.

A port past 65535 reached `loregate up`'s check of the port (`OverflowError` from bind, after the data dir
was made), and days past what a date can take away (`--after-days 99999999`) overflowed date arithmetic
once the database was attached: tracebacks both.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.utils.cli import cli_env, run_cli


@pytest.mark.parametrize(
    ("args", "refusal"),
    [
        (
            ["up", "--http-port", "70000"],
            "Invalid value for '--http-port': Input should be less than or equal to 65535",
        ),
        (
            ["up", "--ui-port", "0"],
            "Invalid value for '--ui-port': Input should be greater than or equal to 1",
        ),
        (["up", "--grace", "-1"], "Invalid value for '--grace': Input should be greater than or equal to 0"),
        (
            ["down", "--timeout", "inf"],
            "Invalid value for '--timeout': Input should be less than or equal to 86400",
        ),
        (
            ["serve", "--grpc-port", "65536"],
            "Invalid value for '--grpc-port': Input should be less than or equal",
        ),
        (
            ["staging", "archive", "--dry-run", "--after-days", "36501"],
            "Invalid value for '--after-days': Input should be less than or equal to 36500",
        ),
    ],
)
def test_option_out_of_range_is_a_usage_error(args: list[str], refusal: str, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    result = run_cli(*args, env=cli_env(LOREGATE_DATA_DIR=str(data_dir), COLUMNS="300"), timeout=60)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert refusal in result.stderr and "Traceback" not in result.stderr
    assert not data_dir.exists()


@pytest.mark.parametrize(
    ("variable", "value", "args", "refusal"),
    [
        (
            "LOREGATE_HTTP_PORT",
            "70000",
            ["up"],
            "LOREGATE_HTTP_PORT: Input should be less than or equal to 65535",
        ),
        (
            "LOREGATE_STAGING_ARCHIVE_AFTER_DAYS",
            "99999999",
            ["staging", "archive", "--dry-run"],
            "LOREGATE_STAGING_ARCHIVE_AFTER_DAYS: Input should be less than or equal to 36500",
        ),
    ],
)
def test_setting_out_of_range_is_one_line_naming_the_variable(
    variable: str, value: str, args: list[str], refusal: str, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    env = cli_env(LOREGATE_DATA_DIR=str(data_dir), COLUMNS="300", **{variable: value})
    result = run_cli(*args, env=env, timeout=60)
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert result.stderr.strip() == f"error: invalid settings: {refusal}"
    assert not data_dir.exists()
