"""The async engine: one pool per process, statement timeouts so a sick database answers 503, not a hang."""

from __future__ import annotations

from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker, create_async_engine

from governance.config import Settings, to_sqlalchemy_url

__all__ = ["make_engine", "make_sessionmaker", "describe_url"]


def make_engine(settings: Settings) -> AsyncEngine:
    """An engine for `settings.database_url`, with pool and connect timeouts from the settings."""
    timeout = settings.db_timeout_seconds
    return create_async_engine(
        settings.sqlalchemy_url(),
        pool_size=settings.db_pool_size,
        max_overflow=settings.db_pool_size,
        pool_timeout=timeout,
        pool_pre_ping=True,
        connect_args={
            "connect_timeout": max(1, int(timeout)),
            # prepared statements would cache plans across bulk loads; docs/architecture.md
            "prepare_threshold": None,
            "options": f"-c statement_timeout={int(timeout * 1000)}",
        },
    )


def make_sessionmaker(engine: AsyncEngine) -> async_sessionmaker:  # type: ignore[type-arg]
    """Sessions that keep loaded values after commit (handlers read them after the transaction)."""
    return async_sessionmaker(engine, expire_on_commit=False)


def describe_url(url: str) -> str:
    """The database URL without its password, fit to print."""
    try:
        return make_url(to_sqlalchemy_url(url)).render_as_string(hide_password=True)
    except Exception:  # an unparsable URL is reported by the driver later; never echo secrets
        return "<unparsable database URL>"
