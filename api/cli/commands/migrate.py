"""`loregate migrate`: bring a database to the newest schema, for setups where `loregate up` does not."""

from __future__ import annotations

import typer

from api.cli.commands._common import console, database, friendly_errors, load_settings

__all__ = ["register", "migrate"]


def migrate() -> None:
    """Apply every pending migration (idempotent) to LOREGATE_DATABASE_URL, or the embedded database."""
    from governance.storage.migrate import upgrade_head

    settings = load_settings()
    with database(settings) as url, friendly_errors():
        upgrade_head(url)
    console.print("[green]schema is up to date[/]")


def register(app: typer.Typer) -> None:
    app.command("migrate")(migrate)
