"""The async engine: one pool per process, and a database that does not answer costs a 503, never a hang.

Every wait on the database is bounded on the client side, from `LOREGATE_DB_TIMEOUT_SECONDS` (T):

- a statement running on the server: T, by the server (`statement_timeout`); the connection stays usable;
- any answer at all (statement, fetch, commit, rollback, the pool's pre-ping): 1.1 T, by the client
  (governance/storage/connections.py): the socket is shut down and the connection invalidated;
- a free connection from the pool: T (`pool_timeout`);
- a new connection: 0.5 T, by an asyncio timeout (libpq's `connect_timeout` counts whole seconds, at least 2).

A request's worst case against a stalled server is a pooled connection whose pre-ping gets no answer
(1.1 T), then a reconnection that gets none either (0.5 T): 1.6 T, inside the 2 T the gateways promise.
Every pooled connection is pinged when it is checked out (`PING_IDLE_SECONDS` is 0): skipping the ping
for one that answered less than a second ago saved a round trip per request, but a Postgres restarted within
that second handed the dead connection to a caller, who got the server's shutdown error.
TCP keepalives find a peer that vanished (host down, cable cut) under idle pooled connections; they cannot
find a stopped process, whose kernel still acknowledges, which is why the client-side bounds exist.
"""

from __future__ import annotations

import math
import time
from functools import partial
from typing import Any

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker, create_async_engine

from governance.config import Settings, to_sqlalchemy_url
from governance.storage.connections import checkout_pinged, connect_async_bounded, connect_bounded

__all__ = [
    "make_engine",
    "make_sync_engine",
    "make_sessionmaker",
    "describe_url",
    "answer_bound",
    "connect_bound",
    "libpq_timeouts",
]


def answer_bound(timeout: float) -> float:
    """How long the client waits for any answer: a little past the server's own statement timeout."""
    return 1.1 * timeout


def connect_bound(timeout: float) -> float:
    """How long the client waits for a new connection."""
    return 0.5 * timeout


def libpq_timeouts(timeout: float) -> dict[str, Any]:
    """Connection parameters bounding what libpq itself can bound (TCP only; ignored over Unix sockets)."""
    idle = max(1, math.ceil(timeout))
    return {
        # libpq counts whole seconds and raises anything below 2 to 2; the asyncio bound is the precise one
        "connect_timeout": max(2, math.ceil(connect_bound(timeout))),
        "keepalives": 1,
        "keepalives_idle": idle,
        "keepalives_interval": max(1, math.ceil(timeout / 3)),
        "keepalives_count": 3,
        # data sent and not acknowledged for this long: the peer is gone (Linux)
        "tcp_user_timeout": math.ceil(answer_bound(timeout) * 1000),
        "options": f"-c statement_timeout={int(timeout * 1000)}",
    }


# a pooled connection idle for this long or longer is pinged before use (a dead one is replaced, not used);
# 0: every checkout of a pooled connection (see the module's docstring)
PING_IDLE_SECONDS = 0.0


def _ping_when_idle(engine: Engine) -> None:
    """SQLAlchemy's pre-ping, for connections idle `PING_IDLE_SECONDS` or more (its recipe for a custom
    pessimistic ping: a DisconnectionError in `checkout` makes the pool replace the connection and retry)."""

    @event.listens_for(engine, "checkin")
    def _checkin(dbapi_connection: Any, record: Any) -> None:
        record.info["idle_since"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _checkout(dbapi_connection: Any, record: Any, proxy: Any) -> None:
        since = record.info.pop("idle_since", None)
        if not checkout_pinged():
            return  # the caller pings the driver's connection itself (connections.unpinged_checkout)
        if since is None or time.monotonic() - since < PING_IDLE_SECONDS:
            return  # connected just now, or answering a moment ago
        dialect = engine.dialect
        try:
            dialect.do_ping(dbapi_connection)
        except dialect.loaded_dbapi.Error as exc:  # as SQLAlchemy's own pre-ping judges it, and more:
            # a server that shut down or restarted answers the ping with its FATAL (57P01 admin shutdown,
            # 57P02 crash shutdown, 57P03 cannot connect now, 08xxx connection exceptions) before libpq has
            # marked the connection bad, where SQLAlchemy's test would still call it alive
            sqlstate = str(getattr(exc, "sqlstate", None) or "")
            if dialect.is_disconnect(exc, dbapi_connection, None) or sqlstate.startswith(("08", "57P")):
                raise DisconnectionError(str(exc)) from exc
            raise


def make_engine(settings: Settings) -> AsyncEngine:
    """An engine for `settings.database_url`, every wait on the database bounded (see the module's table)."""
    timeout = settings.db_timeout_seconds
    engine = create_async_engine(
        settings.sqlalchemy_url(),
        pool_size=settings.db_pool_size,
        max_overflow=settings.db_pool_size,
        pool_timeout=timeout,
        connect_args={
            **libpq_timeouts(timeout),
            # prepared statements would cache plans across bulk loads; docs/architecture.md
            "prepare_threshold": None,
            "async_creator_fn": partial(
                connect_async_bounded,
                connect_bound=connect_bound(timeout),
                answer_bound=answer_bound(timeout),
            ),
        },
    )
    _ping_when_idle(engine.sync_engine)
    return engine


def make_sync_engine(database_url: str, timeout: float) -> Engine:
    """A synchronous engine (Casbin's adapter) with the same bounds: a reload never hangs its caller."""
    engine = create_engine(to_sqlalchemy_url(database_url), pool_pre_ping=True, pool_timeout=timeout)

    @event.listens_for(engine, "do_connect")
    def _connect(dialect: Any, record: Any, cargs: Any, cparams: dict[str, Any]) -> Any:
        params = {**cparams, **libpq_timeouts(timeout)}
        return connect_bounded(*cargs, answer_bound=answer_bound(timeout), **params)

    return engine


def make_sessionmaker(engine: AsyncEngine) -> async_sessionmaker:  # type: ignore[type-arg]
    """Sessions that keep loaded values after commit (handlers read them after the transaction)."""
    return async_sessionmaker(engine, expire_on_commit=False)


def describe_url(url: str) -> str:
    """The database URL without its password, fit to print."""
    try:
        return make_url(to_sqlalchemy_url(url)).render_as_string(hide_password=True)
    except Exception:  # an unparsable URL is reported by the driver later; never echo secrets
        return "<unparsable database URL>"
