"""Fixtures for the end-to-end tests: the platform as a user starts it, and the system's headless Chromium.

`loregate up` runs as a subprocess with a data dir of its own and free ports (about 5 s on two cores);
every process it started is gone after the test. The browser is Debian's `/usr/bin/chromium` driven by
Playwright: nothing is downloaded, and the test skips when that binary is missing.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.utils.cli import KEY_PATTERN, UpLauncher, UpProcess, cli_env, run_cli

CHROMIUM = Path("/usr/bin/chromium")
# Without the background-networking flags Chromium's own connections fail on a closed network.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
UI_TIMEOUT_MS = 20_000
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"


@dataclass(frozen=True)
class Principal:
    """A principal made by `loregate keys create`: its id and its API key."""

    id: str
    key: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}


@dataclass
class Platform:
    """A running `loregate up` and what a user reads off its banner."""

    up: UpProcess
    temporal_address: str
    namespace: str

    @property
    def base_url(self) -> str:
        return self.up.base_url

    @property
    def ui_url(self) -> str:
        return f"http://127.0.0.1:{self.up.ui_port}"

    def create_key(self, actor: str, org: str, project: str, name: str) -> Principal:
        """`loregate keys create`, attached to the platform's embedded database, as a user would run it."""
        done = run_cli(
            "keys",
            "create",
            "--actor",
            actor,
            "--org",
            org,
            "--project",
            project,
            "--name",
            name,
            env=cli_env(LOREGATE_DATA_DIR=str(self.up.data_dir)),
        )
        assert done.returncode == 0, done.stderr
        principal = re.search(r"^principal (\S+) ", done.stdout, flags=re.M)
        key = KEY_PATTERN.search(done.stdout)
        assert principal is not None and key is not None, done.stdout
        return Principal(principal.group(1), key.group())


@pytest.fixture
def chromium_path() -> Path:
    """The system Chromium, or a skip saying how to get it."""
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium)")
    return CHROMIUM


@pytest.fixture
def platform() -> Iterator[Platform]:
    """`loregate up` on free ports, its data dir outside pytest's basetemp (see tests/cli/conftest.py)."""
    parent = Path(tempfile.mkdtemp(prefix="loregate-e2e-"))
    launcher = UpLauncher()
    try:
        up = launcher.start(parent / "data")
        banner = re.search(r"Temporal\s+(\S+), namespace (\S+)", up.output())
        assert banner is not None, up.output()
        yield Platform(up, banner.group(1), banner.group(2))
    finally:
        launcher.cleanup()
        shutil.rmtree(parent, ignore_errors=True)


@pytest.fixture
async def browser_page(chromium_path: Path) -> AsyncIterator[Any]:
    """A fresh page in headless /usr/bin/chromium (a large viewport, so no action hides behind a menu)."""
    from playwright.async_api import async_playwright, expect

    # generous but bounded: two cores share the browser, the UI, Temporal and Postgres
    expect.set_options(timeout=UI_TIMEOUT_MS)
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=str(chromium_path), args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(UI_TIMEOUT_MS)
            yield page
        finally:
            await browser.close()
