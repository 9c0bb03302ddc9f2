"""`loregate up` tells a port clash it can cure (a port the dev server picked itself) from one it cannot."""

from __future__ import annotations

import socket

import pytest

from api.cli.restarts import bind_failure

CONFIGURED = {7233: "LOREGATE_TEMPORAL_PORT", 8233: "LOREGATE_TEMPORAL_UI_PORT"}


def _listen_error(port: int) -> str:
    """The message a real bind on a taken port gives (Go's wording, as the dev server logs it)."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        taken = holder.getsockname()[1]
        with socket.socket() as second, pytest.raises(OSError) as refused:
            second.bind(("127.0.0.1", taken))
    return f"listen tcp 127.0.0.1:{port}: bind: {refused.value.strerror.lower()}"


def test_bind_failure_on_a_configured_port_names_its_setting() -> None:
    tail = f"starting\nError: failed starting UI server: {_listen_error(8233)}"
    assert bind_failure(tail, CONFIGURED) == (True, "LOREGATE_TEMPORAL_UI_PORT")


def test_bind_failure_on_a_port_the_server_picked_is_retried() -> None:
    tail = f"Error: unable to start server: {_listen_error(41877)}\n"
    assert bind_failure(tail, CONFIGURED) == (True, None)


def test_other_failures_are_not_bind_failures() -> None:
    assert bind_failure("Error: database is locked", CONFIGURED) == (False, None)
