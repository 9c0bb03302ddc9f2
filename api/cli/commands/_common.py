"""What every command shares: one console, settings with flag overrides, the database to use, clean errors.

Commands run against `LOREGATE_DATABASE_URL` when it is set, else against the embedded Postgres under the
data dir (attaching to the one `loregate up` runs, or starting it for the duration of the command). Errors a
user can act on end the command with one line on stderr and exit code 1 — never a traceback.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar

import typer
from rich.highlighter import JSONHighlighter
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from api.cli.safe_console import SafeConsole, json_controls

if TYPE_CHECKING:
    from pydantic import BaseModel
    from sqlalchemy.ext.asyncio import AsyncConnection

    from api.client import LoregateClient
    from governance.config import Settings

__all__ = [
    "UrlOption",
    "KeyOption",
    "JsonOption",
    "console",
    "err_console",
    "fail",
    "api_client",
    "print_json",
    "facts_table",
    "load_settings",
    "describe_url",
    "database",
    "in_transaction",
    "friendly_errors",
]

# the options every command that talks to a gateway takes
UrlOption = Annotated[str | None, typer.Option("--url", help="Gateway URL (LOREGATE_URL).")]
KeyOption = Annotated[
    str | None, typer.Option("--api-key", help="API key (LOREGATE_API_KEY).", envvar="LOREGATE_API_KEY")
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print the gateway's JSON answer.")]

T = TypeVar("T")

# what they print comes from agents: its control characters are shown, never sent (api/cli/safe_console.py)
console = SafeConsole()
err_console = SafeConsole(stderr=True)


def fail(message: str) -> NoReturn:
    """One line on stderr, exit code 1."""
    err_console.print(f"[bold red]error:[/] {message}", soft_wrap=True, highlight=False)
    raise typer.Exit(code=1)


@contextmanager
def api_client(url: str | None, api_key: str | None) -> Iterator[LoregateClient]:
    """A gateway client (LOREGATE_URL, LOREGATE_API_KEY) whose refusals end the command with one line."""
    from api.client import LoregateClient, LoregateError

    try:
        with LoregateClient(url, api_key) as client:
            yield client
    except LoregateError as exc:
        fail(f"{exc.error}: {exc.detail}{_setup_hint(exc.error, url, api_key)}")


def _setup_hint(error: str, url: str | None, api_key: str | None) -> str:
    """What to set when a refusal comes from a missing key or the default URL (a new user's first error)."""
    import os

    if error == "unauthenticated" and not (api_key or os.environ.get("LOREGATE_API_KEY")):
        return " (no API key given: set LOREGATE_API_KEY or pass --api-key)"
    if error == "unavailable" and not (url or os.environ.get("LOREGATE_URL")):
        return " (no gateway URL given: set LOREGATE_URL or pass --url)"
    return ""


def print_json(answer: BaseModel | Mapping[str, Any]) -> None:
    """An API answer as indented JSON (`--json`), as the gateway sent it (or a report built here)."""
    data = answer if isinstance(answer, Mapping) else answer.model_dump(mode="json")
    # as `console.print_json` prints it, but from this text: rich would parse the JSON and write the
    # control characters `json_controls` escaped back out raw
    text = Text(json_controls(json.dumps(data, indent=2, ensure_ascii=False, default=str)))
    shown = JSONHighlighter()(text)
    shown.no_wrap, shown.overflow = True, None
    console.print(shown, soft_wrap=True)


def facts_table(rows: Iterable[tuple[str, object]]) -> Table:
    """A two-column grid of label and value, dim labels, for the rows whose value is set (non-empty)."""
    facts = Table.grid(padding=(0, 2))
    facts.add_column(style="dim")
    facts.add_column()
    for label, value in rows:
        if value:
            facts.add_row(label, escape(str(value)))
    return facts


def load_settings(**overrides: Any) -> Settings:
    """The settings of this process with command-line flags (those not None) taking precedence."""
    from pydantic import ValidationError

    from governance.config import Settings

    updates = {key: value for key, value in overrides.items() if value is not None}
    try:
        # the flags validated with the environment (a copy with them set would check nothing)
        return Settings(**updates)
    except ValidationError as exc:  # a LOREGATE_* variable or a flag is malformed: name it, in one line
        problems = "; ".join(_setting_problem(error, updates) for error in exc.errors())
        fail(f"invalid settings: {problems}")


def _setting_problem(error: Any, updates: Mapping[str, Any]) -> str:
    """One refused setting, named as the user gave it: a flag of this command, or its variable."""
    name = "_".join(str(part) for part in error["loc"])
    given = bool(error["loc"]) and error["loc"][0] in updates
    return f"{f'{name} (from the command line)' if given else 'LOREGATE_' + name.upper()}: {error['msg']}"


def describe_url(url: str) -> str:
    """The database URL with its password hidden (storage's own rule, imported when a command needs it)."""
    from governance.storage.engine import describe_url as describe

    return describe(url)


def _first_line(exc: BaseException) -> str:
    """The driver's own message, which names host and cause, without SQLAlchemy's background link."""
    orig = getattr(exc, "orig", None) or exc
    text = str(orig).strip() or type(orig).__name__
    return text.splitlines()[0]


@contextmanager
def friendly_errors() -> Iterator[None]:
    """Turn the failures a user can fix (database down, wrong URL, missing piece) into one-line errors."""
    import psycopg
    from sqlalchemy.exc import DBAPIError, OperationalError

    try:
        yield
    except (OperationalError, psycopg.OperationalError) as exc:
        fail(f"database unreachable: {_first_line(exc)}")
    except (DBAPIError, psycopg.Error) as exc:
        if isinstance(getattr(exc, "orig", exc), psycopg.errors.UndefinedTable):
            fail(f"the database has no loregate schema ({_first_line(exc)}); run `loregate migrate` first")
        fail(f"database error: {_first_line(exc)}")
    except ConnectionError as exc:
        fail(f"connection failed: {_first_line(exc)}")


@contextmanager
def database(settings: Settings, *, quiet: bool = False) -> Iterator[str]:
    """The database URL to use, saying which: `LOREGATE_DATABASE_URL`, or the embedded one under the data dir.

    The embedded server is shared with a running `loregate up` (pgserver counts handles per process) and is
    stopped on exit only if this command started it.
    """
    if settings.database_url:
        if not quiet:
            err_console.print(f"database: {describe_url(settings.database_url)} (LOREGATE_DATABASE_URL)")
        yield settings.database_url
        return
    from api.cli.embedded import start_embedded_postgres, stop_embedded_postgres

    pgdata = settings.data_dir / "postgres"
    if not quiet:
        err_console.print(f"database: embedded Postgres in {pgdata}")
    try:
        server, url = start_embedded_postgres(settings.data_dir, private=True)
    except Exception as exc:  # pgserver raises CalledProcessError/TimeoutExpired with the log on stderr
        fail(f"could not start the embedded Postgres in {pgdata}: {_first_line(exc)}")
    try:
        yield url
    finally:
        stop_embedded_postgres(server, settings.data_dir)


def in_transaction(settings: Settings, url: str, work: Callable[[AsyncConnection], Awaitable[T]]) -> T:
    """Run `work` in one transaction on `url` and return its result (the CLI is sync, storage is async)."""
    from governance.storage.engine import make_engine

    async def _run() -> T:
        engine = make_engine(settings.model_copy(update={"database_url": url, "db_pool_size": 1}))
        try:
            async with engine.begin() as conn:
                return await work(conn)
        finally:
            await engine.dispose()

    with friendly_errors():
        import asyncio

        return asyncio.run(_run())
