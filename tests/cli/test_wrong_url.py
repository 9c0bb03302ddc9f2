"""Pointed at a server that is not loregate's gateway (`LOREGATE_URL` naming a web server), a command ends
with one line naming the URL and what answered, exit code 1: `loregate export` and `import` ended in a
JSONDecodeError traceback, `show` in pydantic's several-line report with the page's text in it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.utils.cli import cli_env, run_cli
from tests.utils.not_the_gateway import not_the_gateway


@pytest.fixture(scope="module")
def wrong_url() -> Iterator[str]:
    with not_the_gateway() as url:
        yield url


@pytest.mark.parametrize(
    ("args", "answered"),
    [
        (["show", "mem:abc123"], "GET {url}/v1/memories/mem:abc123 answered 200 OK with text/html"),
        (["export", "project:acme/shop"], "GET {url}/v1/exports answered 200 OK with text/html"),
        (
            ["import", "{file}", "--scope", "project:acme/shop"],
            "POST {url}/v1/imports answered 404 Not Found",
        ),
    ],
)
def test_command_against_a_server_that_is_not_the_gateway_is_one_line(
    args: list[str], answered: str, wrong_url: str, tmp_path: Path
) -> None:
    export = tmp_path / "export.jsonl"
    export.write_text('{"kind": "header"}\n')
    argv = [a.format(file=export) for a in args]
    result = run_cli(*argv, env=cli_env(LOREGATE_URL=wrong_url, LOREGATE_API_KEY="lg_x_y", COLUMNS="400"))
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr and "<html" not in result.stderr + result.stdout
    [line] = result.stderr.splitlines()
    assert line.startswith("error: ") and answered.format(url=wrong_url) in line, line
    assert f"is {wrong_url} a loregate gateway (LOREGATE_URL)" in line
