"""`loregate up` tells a port clash it can cure (a port it picked for the dev server) from one it cannot."""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.console import Console

from api.cli.restarts import bind_failure, pick_free_port
from api.cli.supervisor import StartupFailed, Supervisor
from governance.config import Settings

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


def _supervisor(
    tmp_path: Path, pick_port: Callable[[], int], ui_port: int | None = None
) -> tuple[Supervisor, Console]:
    settings = Settings(
        data_dir=tmp_path, temporal_port=pick_free_port(), temporal_ui_port=ui_port or pick_free_port()
    )
    console = Console(record=True, width=200)
    supervisor = Supervisor(settings, console, startup_timeout=60.0, pick_port=pick_port)
    supervisor.log_dir.mkdir(parents=True, exist_ok=True)
    return supervisor, console


def test_a_taken_port_picked_for_the_dev_server_is_picked_again(tmp_path: Path) -> None:
    """The real dev server meets a port taken between the pick and its bind, and starts on a new pick."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        taken = holder.getsockname()[1]
        picks = iter([taken, pick_free_port()])
        supervisor, console = _supervisor(tmp_path, lambda: next(picks, None) or pick_free_port())
        try:
            address = supervisor._start_temporal()
            assert supervisor._temporal is not None and supervisor._temporal.process.poll() is None
        finally:
            supervisor._shutdown()
    log = (tmp_path / "logs" / "temporal.log").read_text()
    assert f"127.0.0.1:{taken}: bind: address already in use" in log
    output = console.export_text()
    assert "a port picked for it was taken; starting it again (1)" in output
    assert address in output


def test_a_taken_configured_port_is_named_and_not_retried(tmp_path: Path) -> None:
    """A clash on the UI port the user configured is the user's to fix: one start, the setting named."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        supervisor, console = _supervisor(tmp_path, pick_free_port, ui_port=holder.getsockname()[1])
        try:
            with pytest.raises(StartupFailed, match="LOREGATE_TEMPORAL_UI_PORT"):
                supervisor._start_temporal()
        finally:
            supervisor._shutdown()
    assert "starting it again" not in console.export_text()


@pytest.mark.parametrize("which", ["http", "grpc"])
def test_a_gateway_port_in_use_stops_up_before_anything_starts(tmp_path: Path, which: str) -> None:
    """Another process on the gateway's port answered `up`'s health check: it said the gateway was up."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        taken = holder.getsockname()[1]
        ports = {"http_port": pick_free_port(), "grpc_port": pick_free_port(), f"{which}_port": taken}
        settings = Settings(data_dir=tmp_path, http_host="127.0.0.1", **ports)
        console = Console(record=True, width=200)
        assert Supervisor(settings, console, startup_timeout=60.0).run() == 1
    said = console.export_text()
    assert f"port {taken} on 127.0.0.1 is already in use" in said
    assert f"choose another with --{which}-port (LOREGATE_{which.upper()}_PORT)" in said
    assert not (tmp_path / "postgres").exists()  # refused before the database started
