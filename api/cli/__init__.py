"""The `loregate` command: assembles the command groups of `api/cli/commands/` into one typer app."""

from __future__ import annotations

import warnings

import typer
from platformdirs.api import RuntimeDirWarning

from api.cli.commands import (
    approval_token,
    backup,
    change_requests,
    code,
    erase,
    hook,
    keys,
    learning,
    lifting,
    mcp,
    migrate,
    patterns,
    policy,
    promotions,
    read,
    retention,
    run,
    schedules,
    staging,
    transfer,
    truth,
    up,
    webhooks,
)

__all__ = ["app", "main"]

app = typer.Typer(
    name="loregate",
    help="Governed shared memory for parallel AI agents.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,  # locals can hold database URLs and keys
)

for group in (
    up,
    run,
    migrate,
    keys,
    policy,
    schedules,
    retention,
    staging,
    read,
    truth,
    promotions,
    approval_token,
    change_requests,
    lifting,
    erase,
    learning,
    patterns,
    transfer,
    backup,
    mcp,
    webhooks,
    hook,
    code,
):
    group.register(app)


def main() -> None:
    """Console-script entry point (`loregate`)."""
    # pgserver asks platformdirs for a runtime dir; without XDG_RUNTIME_DIR that warns on every command
    warnings.filterwarnings("ignore", category=RuntimeDirWarning)
    app()


if __name__ == "__main__":
    main()
