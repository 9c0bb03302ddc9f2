"""A real gateway on loopback for the API tests, sharing the session database."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from governance.config import Settings
from tests.utils.gateway import running_gateway


@pytest.fixture(scope="session")
def gateway_url(settings: Settings) -> Iterator[str]:
    with running_gateway(settings) as url:
        yield url
