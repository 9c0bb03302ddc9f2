"""`loregate staging archive`: the nightly staging archive by hand, or a preview of it (`--dry-run`).

It does what the retention workflow's staging steps do (activities/retention.py), directly against the
database, without Temporal: creates the staging partitions of this month and the next two, then archives
the staging of tasks whose promotion ended more than `--after-days` (LOREGATE_STAGING_ARCHIVE_AFTER_DAYS)
days ago to the archive directory, each chunk with its STAGING_ARCHIVED event.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from api.cli.commands._common import console, database, friendly_errors, load_settings
from governance.bounds import MAX_DAYS

if TYPE_CHECKING:
    from governance.config import Settings

__all__ = ["register", "staging_app", "archive"]

staging_app = typer.Typer(
    help="Staging upkeep: partitions and the archive of ended promotions.", no_args_is_help=True
)


async def _archive(
    settings: Settings, url: str, *, dry_run: bool, after_days: int, orgs: list[str] | None
) -> None:
    from activities.retention import ArchiveInput, RetentionActivities, RetentionStepInput
    from governance.storage.engine import make_engine

    engine = make_engine(settings.model_copy(update={"database_url": url, "db_pool_size": 2}))
    try:
        acts = RetentionActivities(engine, archive_dir=settings.archive_dir())
        now = datetime.now(UTC)
        partitions = await acts.staging_partitions(RetentionStepInput(now=now, dry_run=dry_run))
        for name in partitions.created:
            console.print(f"created partition {name}", highlight=False)
        for name in partitions.dropped:
            console.print(f"dropped empty partition {name}", highlight=False)
        step = ArchiveInput(now=now, dry_run=dry_run, after_days=after_days, orgs=orgs)
        tasks = entries = 0
        while True:
            batch = await acts.archive_staging(step)
            tasks, entries = tasks + batch.tasks, entries + batch.entries
            for path in batch.files:
                console.print(f"wrote {path}", highlight=False)
            if not batch.more or dry_run:
                break
    finally:
        await engine.dispose()
    verb = "would archive" if dry_run else "archived"
    console.print(
        f"{verb} {entries} staging entries of {tasks} tasks whose promotion ended more than {after_days} "
        f"days ago{'' if dry_run else f' (under {settings.archive_dir()})'}",
        highlight=False,
    )


DryRun = Annotated[bool, typer.Option("--dry-run", help="Only count what would be archived.")]
AfterDays = Annotated[
    int | None,
    typer.Option(
        "--after-days",
        min=1,
        max=MAX_DAYS,
        help="Days since the promotion ended (LOREGATE_STAGING_ARCHIVE_AFTER_DAYS).",
    ),
]
Orgs = Annotated[list[str] | None, typer.Option("--org", help="Only these orgs (repeatable).")]
ArchiveDir = Annotated[
    Path | None, typer.Option("--archive-dir", help="Where to write (LOREGATE_STAGING_ARCHIVE_DIR).")
]


@staging_app.command("archive")
def archive(
    dry_run: DryRun = False, after_days: AfterDays = None, org: Orgs = None, archive_dir: ArchiveDir = None
) -> None:
    """Archive (or with --dry-run, count) the staging of tasks whose promotion ended long enough ago."""
    settings = load_settings(staging_archive_dir=archive_dir)
    days = after_days or settings.staging_archive_after_days
    with database(settings) as url, friendly_errors():
        import asyncio

        asyncio.run(_archive(settings, url, dry_run=dry_run, after_days=days, orgs=org or None))


def register(app: typer.Typer) -> None:
    app.add_typer(staging_app, name="staging")
