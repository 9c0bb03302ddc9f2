"""`loregate retention run [--dry-run]`: the nightly upkeep of published memory by hand, or a preview of it.

It does what the retention workflow's memory steps do (activities/retention.py), directly against the
database, without Temporal: decay trust, expire what passed `expires_at`, then prune what the retention
rules choose (governance/retention.py), at least `LOREGATE_RETENTION_KEEP_PER_GROUP` staying per (org,
project, scope, type). It lists each pruned memory (citation, type, scope, title, the rule that chose it:
never content) and a count by rule; `--json` prints the full report (uuids and reasons too). `--dry-run`
lists the same choice and changes nothing. Staging has its own command (`loregate staging archive`).
"""

from __future__ import annotations

from dataclasses import asdict
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from api.cli.commands._common import console, database, friendly_errors, load_settings, print_json

if TYPE_CHECKING:
    from governance.config import Settings

__all__ = ["register", "retention_app", "run"]

retention_app = typer.Typer(
    help="Retention of published memory: decay, expiry and pruning.", no_args_is_help=True
)


async def _run(settings: Settings, url: str, *, dry_run: bool, orgs: list[str] | None, as_json: bool) -> None:
    from activities.retention import PruneInput, RetentionActivities, RetentionStepInput
    from governance.storage.engine import make_engine

    engine = make_engine(settings.model_copy(update={"database_url": url, "db_pool_size": 2}))
    policy = settings.retention_policy()
    try:
        acts = RetentionActivities(engine)
        now = datetime.now(UTC)
        step = RetentionStepInput(now=now, dry_run=dry_run, orgs=orgs)
        decayed = await acts.decay(step)
        expired = await acts.expire(step)
        report = await acts.prune_report(PruneInput(now=now, dry_run=dry_run, policy=policy, orgs=orgs))
    finally:
        await engine.dispose()
    if as_json:
        print_json(
            {
                "dry_run": dry_run,
                "decayed": decayed,
                "expired": expired,
                "pruned": [asdict(item) for item in report.items],
                "by_rule": report.by_rule(),
                "spared": report.spared,
                "stale_marked": report.stale_marked,
            }
        )
        return
    if report.items:
        verb = "would prune" if dry_run else "pruned"
        table = Table(title=f"{verb} {len(report.items)} memories")
        for name in ("id", "type", "scope", "title", "rule"):
            table.add_column(name, overflow="fold", no_wrap=name in ("id", "rule"))
        for item in report.items:
            table.add_row(
                f"mem:{item.citation}",
                item.memory_type,
                escape(item.scope_key),
                escape(item.title),
                item.rule,
            )
        console.print(table)
    counts = ", ".join(f"{rule} {n}" for rule, n in report.by_rule().items()) or "nothing"
    verb = "would prune" if dry_run else "pruned"
    console.print(
        f"{verb} {len(report.items)} memories ({counts}); {report.spared} spared to keep at least "
        f"{policy.keep_per_group} per group",
        highlight=False,
    )
    decay_verb, expire_verb = ("would decay", "would expire") if dry_run else ("decayed", "expired")
    console.print(f"{decay_verb} {decayed}, {expire_verb} {expired}", highlight=False)
    if not dry_run and report.stale_marked:
        console.print(
            f"{report.stale_marked} memories built on pruned ones are now stale (`loregate review`)",
            highlight=False,
        )
    if dry_run:
        console.print("dry run: nothing was changed")


DryRun = Annotated[bool, typer.Option("--dry-run", help="List what would go; change nothing.")]
Orgs = Annotated[list[str] | None, typer.Option("--org", help="Only these orgs (repeatable).")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print the full report (uuids, reasons) as JSON.")]


@retention_app.command("run")
def run(dry_run: DryRun = False, org: Orgs = None, as_json: JsonOption = False) -> None:
    """Decay, expire and prune published memory now (or with --dry-run, list what would change)."""
    settings = load_settings()
    with database(settings, quiet=as_json) as url, friendly_errors():
        import asyncio

        asyncio.run(_run(settings, url, dry_run=dry_run, orgs=org or None, as_json=as_json))


def register(app: typer.Typer) -> None:
    app.add_typer(retention_app, name="retention")
