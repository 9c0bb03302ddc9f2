"""Connections that never wait on the database past a bound, even when it does not answer at all.

Postgres' `statement_timeout` is enforced by the server, so a server that is stopped (SIGSTOP, a hung VM, a
saturated host) never enforces it, and its socket stays open: a query, a commit or the pool's pre-ping then
waits for as long as the stall lasts. Here every wait on the server (psycopg's `wait`, which every statement,
fetch, commit and rollback goes through) arms a timer; when it fires, the socket is shut down, so the wait
ends at once with an `OperationalError` and the connection is broken. SQLAlchemy counts a broken connection
as a disconnect: it is invalidated (never returned to the pool), the pool's older connections are recycled
on their next checkout, and the engine recovers by itself once the database answers again.

Connecting is bounded the same way, with a fraction of a second precision (libpq's `connect_timeout` counts
whole seconds, and at least 2).
"""

from __future__ import annotations

import asyncio
import os
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

import psycopg
from psycopg import errors as pg_errors
from psycopg.abc import PQGen

__all__ = [
    "BoundedAsyncConnection",
    "BoundedConnection",
    "connect_async_bounded",
    "connect_bounded",
    "unpinged_checkout",
    "checkout_pinged",
]

RV = TypeVar("RV")


def _shut_down(pgconn: Any) -> None:
    """End a connection's socket under libpq's feet: its pending read sees end-of-file at once."""
    try:
        sock = socket.socket(fileno=os.dup(pgconn.socket))
    except (psycopg.Error, OSError):  # already closed
        return
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    finally:
        sock.close()  # closes the duplicate only; libpq closes its own descriptor


def _no_answer(bound: float, cause: BaseException) -> psycopg.OperationalError:
    error = psycopg.OperationalError(
        f"the database did not answer within {bound:g}s; the connection was closed"
    )
    error.__cause__ = cause
    return error


class BoundedAsyncConnection(psycopg.AsyncConnection[Any]):
    """An async connection whose every wait on the server ends within `answer_bound` seconds."""

    answer_bound: float | None = None
    _severed = False

    @property
    def severed(self) -> bool:
        """Whether a wait outlived the answer bound (the server did not answer; the socket was shut)."""
        return self._severed

    async def wait(self, gen: PQGen[RV], *args: Any, **kwargs: Any) -> RV:
        bound = self.answer_bound
        # a caller with a timeout of its own (LISTEN's notifies) knows how long the server may stay silent
        if bound is None or kwargs.get("timeout") is not None or len(args) > 1:
            return await super().wait(gen, *args, **kwargs)
        timer = asyncio.get_running_loop().call_later(bound, self._sever)
        try:
            return await super().wait(gen, *args, **kwargs)
        except psycopg.Error as exc:
            if self._severed:
                raise _no_answer(bound, exc) from exc
            raise
        finally:
            timer.cancel()

    def _sever(self) -> None:
        self._severed = True
        _shut_down(self.pgconn)


class BoundedConnection(psycopg.Connection[Any]):
    """The synchronous twin (Casbin's adapter and the policy watcher run on threads, not the event loop)."""

    answer_bound: float | None = None
    _severed = False

    def wait(self, gen: PQGen[RV], *args: Any, **kwargs: Any) -> RV:
        bound = self.answer_bound
        if bound is None or kwargs.get("timeout") is not None or len(args) > 1:
            return super().wait(gen, *args, **kwargs)
        timer = threading.Timer(bound, self._sever)
        timer.daemon = True
        timer.start()
        try:
            return super().wait(gen, *args, **kwargs)
        except psycopg.Error as exc:
            if self._severed:
                raise _no_answer(bound, exc) from exc
            raise
        finally:
            timer.cancel()

    def _sever(self) -> None:
        self._severed = True
        _shut_down(self.pgconn)


async def connect_async_bounded(
    *args: Any, connect_bound: float, answer_bound: float, **kwargs: Any
) -> BoundedAsyncConnection:
    """`psycopg.AsyncConnection.connect(*args, **kwargs)`, given up after `connect_bound` seconds."""
    try:
        async with asyncio.timeout(connect_bound):
            conn = await BoundedAsyncConnection.connect(*args, **kwargs)
    except TimeoutError as exc:
        raise pg_errors.ConnectionTimeout(
            f"could not connect to the database within {connect_bound:g}s"
        ) from exc
    conn.answer_bound = answer_bound
    return conn


def connect_bounded(*args: Any, answer_bound: float, **kwargs: Any) -> BoundedConnection:
    """`psycopg.connect` with the answer bound on every later wait (libpq's `connect_timeout` bounds this)."""
    conn = BoundedConnection.connect(*args, **kwargs)
    conn.answer_bound = answer_bound
    return conn


# set by a caller that pings the driver's connection itself (the staging append, governance/storage/
# staging.py, whose statements then go out pipelined): the checkout skips the ping of its own
_UNPINGED: ContextVar[bool] = ContextVar("loregate_unpinged_checkout", default=False)


@contextmanager
def unpinged_checkout() -> Iterator[None]:
    """Connections checked out inside this block are not pinged: the caller must ping before its first
    statement and treat a failed ping as a dead connection (invalidate it; nothing but the ping was sent).
    The flag reaches the pool's checkout through the context."""
    token = _UNPINGED.set(True)
    try:
        yield
    finally:
        _UNPINGED.reset(token)


def checkout_pinged() -> bool:
    """Whether the pool's checkout pings here (False inside `unpinged_checkout`)."""
    return not _UNPINGED.get()
