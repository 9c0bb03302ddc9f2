"""Alembic environment: the URL comes from the Alembic config (set by `loregate migrate`) or the settings."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine, pool

from governance.config import Settings, to_sqlalchemy_url

config = context.config
url = config.get_main_option("sqlalchemy.url") or Settings().sqlalchemy_url()
url = to_sqlalchemy_url(url)


def run_migrations_offline() -> None:
    context.configure(url=url, literal_binds=True, dialect_opts={"paramstyle": "named"})
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    engine = create_engine(url, poolclass=pool.NullPool)
    with engine.connect() as connection:
        context.configure(connection=connection)
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
