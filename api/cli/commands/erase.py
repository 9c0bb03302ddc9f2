"""`loregate erase memory ID | task ID | subject TEXT --org O [--project P] [--dry-run]`: erasure;
`loregate erase compact`: afterwards, end the window in which erased bytes survive on disk.

`loregate forget` is the same command under its first name, kept as an alias for those who already type it
(hidden from the help; docs/architecture.md, "One name per concept").

Each prints what goes (ids, citations, titles, content hashes: never contents) and, unless `--dry-run`, the
id of the ERASED receipt event (`loregate events --type ERASED`). Humans and system may erase; agents and
orchestrators may not (api/services/erasure.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from api.cli.commands._common import JsonOption, KeyOption, UrlOption, console
from api.cli.commands._common import api_client as _client
from api.cli.commands._common import print_json as _print_json

if TYPE_CHECKING:
    from api.schemas.erasure import ErasurePublic

__all__ = ["register", "erase_memory", "erase_task", "erase_subject", "erase_compact"]

# `loregate erase compact` did what the role may; the steps printed as `not done:` are the operator's
PARTLY_DONE = 3

DryRun = Annotated[bool, typer.Option("--dry-run", help="List what would go; erase nothing.")]

erase = typer.Typer(help="Erase a memory, a task or a subject, leaving a receipt (no content).")


def _show(answer: ErasurePublic, as_json: bool) -> None:
    if as_json:
        _print_json(answer)
        return
    memories, entries = answer.memories, answer.staging_entries
    if memories:
        table = Table("citation", "scope", "title", "sha256", title=f"{len(memories)} memories")
        for m in memories:
            table.add_row(f"mem:{m.citation}", m.scope, escape(m.title), m.content_sha256[:12])
        console.print(table)
    console.print(
        f"{len(entries)} staging entries, {len(answer.candidates)} candidates, "
        f"{answer.plans} plans, {len(answer.archive_files)} archive files",
        highlight=False,
    )
    if answer.dry_run:
        console.print("dry run: nothing was erased")
    else:
        counts = ", ".join(f"{k} {v}" for k, v in sorted(answer.counts.items()) if v)
        console.print(f"erased ({counts}); receipt: event {answer.receipt_event_id}", highlight=False)
    if answer.temporal_workflows and not answer.dry_run:
        console.print(
            "Temporal histories deleted: " + ", ".join(answer.temporal_workflows) + ". Erased bytes stay "
            "in dead tuples and WAL until `loregate erase compact` (docs/privacy.md)",
            style="dim",
            highlight=False,
        )


@erase.command("memory")
def erase_memory(
    memory: Annotated[str, typer.Argument(help="A memory's uuid or citation.")],
    dry_run: DryRun = False,
    url: UrlOption = None,
    api_key: KeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """Erase one memory and the memories derived only from it."""
    with _client(url, api_key) as client:
        _show(client.erase(memory=memory.removeprefix("mem:"), dry_run=dry_run), as_json)


@erase.command("task")
def erase_task(
    task: Annotated[str, typer.Argument(help="A task id.")],
    dry_run: DryRun = False,
    url: UrlOption = None,
    api_key: KeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """Erase a task's staging, its promotion plans, and the memories derived only from it."""
    with _client(url, api_key) as client:
        _show(client.erase(task=task, dry_run=dry_run), as_json)


@erase.command("subject")
def erase_subject(
    subject: Annotated[str, typer.Argument(help="Erase every text that contains this string.")],
    org: Annotated[str, typer.Option("--org", help="The tenant's org.")],
    project: Annotated[str | None, typer.Option("--project", help="Only this project.")] = None,
    dry_run: DryRun = False,
    url: UrlOption = None,
    api_key: KeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """Erase every staging entry, candidate and memory of a tenant that contains SUBJECT."""
    with _client(url, api_key) as client:
        _show(client.erase(subject=subject, org=org, project=project, dry_run=dry_run), as_json)


@erase.command("compact")
def erase_compact() -> None:
    """After an erasure: rewrite every table, drop old WAL and Temporal's free pages (docs/privacy.md).

    Until this runs, erased bytes survive in Postgres' dead tuples and WAL and in Temporal's sqlite file's
    free pages (see the docs for how long). It takes an exclusive lock on each table while it rewrites it.
    All of it needs a superuser (the embedded database's role is one); a role that is not does what it may
    and prints each step it could not do as `not done:` with the SQL to run as a superuser. Exit code 0
    when everything was done, 3 when some steps were left to the operator, 1 when it could not run.
    """
    from api.cli.commands._common import database, friendly_errors, load_settings
    from governance.storage.compaction import compact, compact_sqlite

    settings = load_settings()
    with database(settings) as url, friendly_errors():
        result = compact(url)
    for step in result.done:
        console.print(f"done: {step}", highlight=False)
    temporal_db = settings.data_dir / "temporal.db"
    if settings.temporal_address is None and temporal_db.exists():
        refused = compact_sqlite(temporal_db)
        if refused is None:
            console.print(f"done: VACUUM of {temporal_db}", highlight=False)
        else:
            result.skipped.append(refused)
    for why in result.skipped:
        console.print(f"[yellow]not done:[/] {escape(why)}", highlight=False, soft_wrap=True)
    if result.skipped:
        raise typer.Exit(PARTLY_DONE)


def register(app: typer.Typer) -> None:
    app.add_typer(erase, name="erase")
    app.add_typer(erase, name="forget", hidden=True)
