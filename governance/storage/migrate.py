"""Run Alembic programmatically, so `loregate migrate` works from an installed wheel without an ini file."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

__all__ = ["alembic_config", "upgrade_head", "downgrade_base"]


def alembic_config(database_url: str) -> Config:
    """An Alembic config pointing at the packaged `migrations/` and the given database."""
    import migrations

    cfg = Config()
    cfg.set_main_option("script_location", str(Path(migrations.__file__).parent))
    cfg.set_main_option("sqlalchemy.url", database_url.replace("%", "%%"))
    return cfg


def upgrade_head(database_url: str) -> None:
    """Bring the database to the newest schema (idempotent)."""
    command.upgrade(alembic_config(database_url), "head")


def downgrade_base(database_url: str) -> None:
    """Drop every loregate table (tests and `alembic downgrade base`)."""
    command.downgrade(alembic_config(database_url), "base")
