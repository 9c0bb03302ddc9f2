"""`loregate promote|verify|approve|reject|promotion|promotions|close`: the promotion gate for people.

A task is promoted as often as it learns something new (docs/promotions.md): `promotions --task T`
lists its promotions, `promotion T --number n` shows an older one, `close T` ends the task.

Like `loregate search`, they talk to a running gateway (`LOREGATE_URL`) with `LOREGATE_API_KEY`: the
approver of `approve`/`reject` is whoever owns that key. `--json` prints the gateway's answer unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from api.cli.commands._common import JsonOption, KeyOption, UrlOption, console, facts_table, fail
from api.cli.commands._common import api_client as _client
from api.cli.commands._common import print_json as _print_json
from api.cli.commands.batch import decide_batch
from api.cli.safe_console import visible_controls

if TYPE_CHECKING:
    from api.schemas.promotions import DiffOpPublic, PlanEntryPublic, TaskPromotions

__all__ = ["register", "promote", "verify", "approve", "reject", "promotion", "promotions", "close"]

TaskArgument = Annotated[str, typer.Argument(help="The task whose promotion this is.")]
TasksArgument = Annotated[
    list[str], typer.Argument(help="The task whose promotion this is; several decide each on its own.")
]
NoteOption = Annotated[str | None, typer.Option("--note", "-n", help="Why; kept with the decision.")]
RejectItemOption = Annotated[
    list[str] | None,
    typer.Option(
        "--reject-item",
        metavar="N:REASON",
        help="Approve without plan item N (its # in `loregate promotion`), saying why; repeatable.",
    ),
]
EditItemOption = Annotated[
    list[str] | None,
    typer.Option(
        "--edit-item",
        metavar="N=TEXT|@FILE",
        help="Publish plan item N with this content (@FILE: a file's), redacted, planned again; repeatable.",
    ),
]
EditTitleOption = Annotated[
    list[str] | None,
    typer.Option("--edit-title", metavar="N=TITLE", help="Publish plan item N under this title; repeatable."),
]
SOURCES = "tests_passed, pr_merged, human_approved or repeated_success"


def promote(
    task: TaskArgument,
    scope: Annotated[str, typer.Option("--scope", "-s", help="Target: task, worktree, project or org.")],
    verified: Annotated[
        str | None, typer.Option("--verified", metavar="SOURCE", help=f"Evidence it worked: {SOURCES}.")
    ] = None,
    failed: Annotated[
        str | None, typer.Option("--failed", metavar="SOURCE", help="Evidence it failed (e.g. tests_passed).")
    ] = None,
    url: UrlOption = None,
    api_key: KeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """Start a task's promotion into a scope (a second start shows the running one)."""
    if verified and failed:
        fail("give --verified or --failed, not both")
    evidence = {"source": verified or failed, "success": failed is None} if (verified or failed) else None
    with _client(url, api_key) as client:
        answer = client.start_promotion(task, scope, evidence)
    if as_json:
        _print_json(answer)
        return
    how = "started" if answer.created else "already running"
    console.print(
        f"promotion {answer.number} [bold]{escape(answer.workflow_id)}[/] {how}: task {escape(task)} → "
        f"{answer.target_scope} scope",
        highlight=False,
    )
    if evidence is None and answer.created:
        console.print(
            f"it waits for evidence: [bold]loregate verify {escape(task)} --source tests_passed[/]",
            style="dim",
        )
    console.print(f"follow it with [bold]loregate promotion {escape(task)}[/]", style="dim")


def verify(
    task: TaskArgument,
    source: Annotated[str, typer.Option("--source", help=f"The evidence: {SOURCES}.")],
    failed: Annotated[bool, typer.Option("--failed", help="The evidence says the work failed.")] = False,
    url: UrlOption = None,
    api_key: KeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """Give the verification evidence a promotion waits for (once)."""
    with _client(url, api_key) as client:
        answer = client.verify(task, source, success=not failed)
    if as_json:
        _print_json(answer)
        return
    outcome = "failure" if failed else "success"
    console.print(
        f"verification recorded for task {escape(task)}: {escape(source)} ({outcome})", highlight=False
    )


def _decide(
    decision: str, tasks: list[str], note: str | None, url: str | None, api_key: str | None, as_json: bool
) -> None:
    if len(tasks) > 1:
        decide_batch(decision, promotions=tasks, note=note, url=url, api_key=api_key, as_json=as_json)
        return
    task = tasks[0]
    with _client(url, api_key) as client:
        answer = client.approve(task, note) if decision == "approve" else client.reject(task, note)
    if as_json:
        _print_json(answer)
        return
    verb = "approved" if decision == "approve" else "rejected"
    console.print(f"task {escape(task)}: {verb} by {escape(answer.approver)}", highlight=False)


def approve(
    tasks: TasksArgument,
    note: NoteOption = None,
    reject_item: RejectItemOption = None,
    edit_item: EditItemOption = None,
    edit_title: EditTitleOption = None,
    url: UrlOption = None,
    api_key: KeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """Approve promotions awaiting approval, as the owner of the API key; they then publish.

    Several tasks are decided in one action, each checked on its own (exit code 1 if any was refused).
    One task may be approved with some plan items rejected (`--reject-item 2:"wrong numbers"`) or edited
    (`--edit-item 3=@fixed.md`, `--edit-title 3="a better title"`); the rest publish as planned.
    """
    items = item_decisions(reject_item or [], edit_item or [], edit_title or [])
    if items and len(tasks) > 1:
        fail("per-item decisions name one task's plan items: approve one task at a time with them")
    if items:
        _approve_items(tasks[0], note, items, url, api_key, as_json)
        return
    _decide("approve", tasks, note, url, api_key, as_json)


def _item_number(text: str, option: str) -> int:
    """A plan item's index from the number `loregate promotion` shows (from 1)."""
    if not text.strip().isdigit() or int(text) < 1:
        fail(f"{option}: {text!r} is not a plan item number (the # column of `loregate promotion`, from 1)")
    return int(text) - 1


def numbered_from_one(detail: str) -> str:
    """The gateway's refusal of an item decision with its plan items numbered as `loregate promotion`
    numbers them (from 1), as the user typed them."""
    detail = re.sub(r"\bplan item (\d+)", lambda m: f"plan item {int(m[1]) + 1}", detail)
    return re.sub(r"\(indexes 0 to (-?\d+)\)", lambda m: f"(numbered 1 to {int(m[1]) + 1})", detail)


def item_decisions(rejects: list[str], edits: list[str], titles: list[str]) -> list[dict[str, Any]]:
    """The approval's `items` from the command line's options (an edit's content and title merge)."""
    items: list[dict[str, Any]] = []
    for given in rejects:
        number, sep, reason = given.partition(":")
        if not sep:
            fail(f"--reject-item takes N:REASON, not {given!r}")
        items.append({"index": _item_number(number, "--reject-item"), "decision": "reject", "reason": reason})
    edited: dict[int, dict[str, Any]] = {}
    for option, key, values in (("--edit-item", "content", edits), ("--edit-title", "title", titles)):
        for given in values:
            number, sep, text = given.partition("=")
            if not sep:
                fail(f"{option} takes N=TEXT, not {given!r}")
            if key == "content" and text.startswith("@"):
                try:
                    text = Path(text[1:]).read_text(encoding="utf-8")
                except OSError as err:
                    fail(f"{option}: cannot read {text[1:]!r}: {err.strerror}")
            index = _item_number(number, option)
            edited.setdefault(index, {"index": index, "decision": "edit"})[key] = text
    return items + [edited[i] for i in sorted(edited)]


def _approve_items(
    task: str,
    note: str | None,
    items: list[dict[str, Any]],
    url: str | None,
    api_key: str | None,
    as_json: bool,
) -> None:
    from api.client import LoregateError

    with _client(url, api_key) as client:
        try:
            answer = client.approve(task, note, items)
        except LoregateError as exc:  # the gateway counts plan items from 0, this command from 1
            fail(f"{exc.error}: {numbered_from_one(exc.detail)}")
    if as_json:
        _print_json(answer)
        return
    rejected = ", ".join(f"#{i + 1}" for i in answer.rejected_items) or "none"
    edited = ", ".join(f"#{i + 1}" for i in answer.edited_items) or "none"
    console.print(
        f"task {escape(task)}: approved by {escape(answer.approver)}; rejected items: {rejected}; "
        f"edited items: {edited}",
        highlight=False,
    )


def reject(
    tasks: TasksArgument,
    note: NoteOption = None,
    url: UrlOption = None,
    api_key: KeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """Reject promotions awaiting approval, as the owner of the API key; nothing of them is published.

    Several tasks are decided in one action, each checked on its own (exit code 1 if any was refused).
    """
    _decide("reject", tasks, note, url, api_key, as_json)


def _plan_table(plan: list[PlanEntryPublic]) -> Table:
    table = Table(title="plan", title_justify="left")
    for name, justify in (
        ("#", "right"),
        ("type", "left"),
        ("decision", "left"),
        ("title", "left"),
        ("key", "left"),
        ("sim", "right"),
        ("reason", "left"),
    ):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for entry in plan:
        similarity = entry.similarity
        title = escape(entry.title)
        if entry.target_title:
            # what the item merges into or replaces, as published now: the approver sees old beside new
            verb = "replaces" if entry.decision == "supersede" else "merges into"
            title += f"\n[dim]{verb}: {escape(entry.target_title)}[/dim]"
        decision = entry.decision
        if entry.fate in ("edited", "rejected_by_approver"):
            decision += f"\n[bold]{entry.fate.replace('_', ' ')}[/bold]"
            if entry.approver_reason:
                decision += f": {escape(entry.approver_reason)}"
        table.add_row(
            str(entry.index + 1),
            entry.memory_type,
            decision,
            title,
            escape(entry.canonical_key or ""),
            f"{similarity:.3f}" if similarity is not None else "–",
            escape(entry.reason),
        )
    return table


def _when(moment: datetime | None) -> str:
    """A time as the gateway's JSON gives it, to the second (`2026-01-02T03:04:05`)."""
    return moment.isoformat()[:19] if moment else ""


def _diff_line(ops: list[DiffOpPublic]) -> Text:
    """A word diff for a terminal: removed words struck through in red, added ones in green."""
    line = Text()
    for op in ops:
        words = visible_controls(op.text)  # an agent's text: its escape sequences shown, not obeyed
        if op.op == "delete":
            line.append(f"[-{words}-]", style="red strike")
        elif op.op == "insert":
            line.append(f"{{+{words}+}}", style="green")
        else:
            line.append(words)
    return line


def _changes(plan: list[PlanEntryPublic]) -> None:
    """Under the table, what each item changes: the memory it replaces or merges into (trust, approver and
    a word diff), or the nearest memories of a new one, so an approver never has to look an id up."""
    for entry in plan:
        number = entry.index + 1
        if entry.decision in ("supersede", "duplicate") and entry.target_id:
            verb = "replaces" if entry.decision == "supersede" else "merges into"
            if entry.target_withheld:
                console.print(f"#{number} {verb} a memory you may not read", style="yellow", highlight=False)
                continue
            trust = entry.target_trust
            approver = entry.target_approved_by
            facts = [
                f"trust {trust:.2f}" if trust is not None else None,
                f"approved by {approver}" if approver else "no approval recorded",
                f"published by {entry.target_published_by}" if entry.target_published_by else None,
            ]
            console.print(
                f"#{number} {verb} mem:{entry.target_citation or entry.target_id} "
                f"“{entry.target_title or ''}” ({', '.join(f for f in facts if f)})",
                highlight=False,
                markup=False,
            )
            if entry.diff is not None:
                console.print(Text("   ") + _diff_line(entry.diff), highlight=False)
        elif entry.decision == "new":
            listed = "; ".join(
                f"mem:{m.citation} “{m.title}” (similarity {m.similarity:.2f}, trust {m.trust:.2f})"
                for m in entry.nearest
            )
            console.print(
                f"#{number} new; nearest at the target scope: {listed or 'none'}",
                highlight=False,
                markup=False,
            )


def promotion(
    task: TaskArgument,
    show_all: Annotated[
        bool, typer.Option("--all", help="The whole plan, fetched page by page (default: its first page).")
    ] = False,
    number: Annotated[
        int | None, typer.Option("--number", min=1, help="Which of the task's promotions (default: latest).")
    ] = None,
    url: UrlOption = None,
    api_key: KeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """Where a task's promotion stands, and the plan an approver is asked to approve."""
    with _client(url, api_key) as client:
        answer = client.promotion(task, number)
        if show_all and answer.plan_total > len(answer.plan):
            answer = answer.model_copy(update={"plan": list(client.promotion_plan_all(task))})
    if as_json:
        _print_json(answer)
        return
    evidence = answer.verification
    facts = facts_table(
        (
            ("promotion", str(answer.number)),
            ("workflow", f"{answer.workflow_id} ({answer.workflow_status})"),
            ("state", answer.state if answer.live else f"{answer.state} (no worker answered)"),
            ("target scope", answer.target_scope),
            (
                "verification",
                f"{evidence.source} ({'success' if evidence.success else 'failure'})" if evidence else None,
            ),
            ("critique", answer.critique),
            ("decided by", answer.decided_by),
            ("note", answer.decision_note),
            ("error", answer.error),
        )
    )
    console.print(facts)
    plan = answer.plan
    if plan:
        console.print(_plan_table(plan))
        _changes(plan)
    total = answer.plan_total or len(plan)
    if total > len(plan):
        console.print(
            f"showing {len(plan)} of {total} plan entries: [bold]loregate promotion {escape(task)} --all[/] "
            "shows every one",
            style="dim",
            highlight=False,
        )
    for refusal in answer.refusals:
        console.print(
            f"refused {refusal.decision} by {escape(refusal.approver)} "
            f"({refusal.channel}): {escape(refusal.reason)}",
            style="yellow",
            highlight=False,
        )
    if answer.quarantined_total:
        console.print(
            f"quarantined {answer.quarantined_total}: instructions aimed at agents, published only with a "
            "human's approval",
            style="bold red",
            highlight=False,
        )
    for held in answer.quarantined:
        console.print(
            f"  item {held.index + 1}, {escape(held.title)}: {escape(held.reason)}",
            style="red",
            highlight=False,
        )
    published = answer.published
    if published:
        cited = ", ".join(f"mem:{m.citation}" for m in published)
        count = answer.published_total or len(published)
        more = f" (first {len(published)} shown)" if count > len(published) else ""
        console.print(f"published {count}{more}: {cited}", highlight=False)
    if answer.state == "awaiting_approval":
        console.print(
            f"decide with [bold]loregate approve {escape(task)}[/] or "
            f"[bold]loregate reject {escape(task)} --note …[/]",
            style="dim",
        )


def promotions(
    pending: Annotated[bool, typer.Option("--pending", help="Only those awaiting approval.")] = False,
    state: Annotated[str | None, typer.Option("--state", help="Only those in this state.")] = None,
    limit: Annotated[int | None, typer.Option("--limit", min=1, max=1000, help="At most this many.")] = None,
    ids: Annotated[
        bool, typer.Option("--ids", help="Only the task ids, one a line (e.g. for `approve $(…)`).")
    ] = False,
    task: Annotated[
        str | None, typer.Option("--task", "-t", help="Every promotion of this task, by number.")
    ] = None,
    url: UrlOption = None,
    api_key: KeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """Promotions of the tasks your key may read (`--pending`: those waiting for an approver)."""
    if task is not None:
        if pending or state or ids:
            fail("--task lists one task's promotions: without --pending, --state or --ids")
        _task_promotions(task, url, api_key, as_json)
        return
    if pending and state and state != "awaiting_approval":
        fail("--pending means --state awaiting_approval")
    with _client(url, api_key) as client:
        answer = client.promotions(state="awaiting_approval" if pending else state, limit=limit)
    if as_json:
        _print_json(answer)
        return
    if ids:
        for row in answer.promotions:
            print(row.task_id)
        return
    rows = answer.promotions
    if not rows:
        console.print("no promotions" + (" awaiting approval" if pending else ""), style="yellow")
        return
    table = Table()
    for name in ("task", "state", "scope", "tenant", "started", "description"):
        table.add_column(name)
    for row in rows:
        table.add_row(
            escape(row.task_id),
            row.state or row.workflow_status,
            row.target_scope or "",
            escape(f"{row.org}/{row.project}"),
            _when(row.started_at),
            escape(row.description),
        )
    console.print(table)


def _task_promotions(task: str, url: str | None, api_key: str | None, as_json: bool) -> None:
    with _client(url, api_key) as client:
        answer = client.task_promotions(task)
    if as_json:
        _print_json(answer)
        return
    _print_task_promotions(task, answer)


def _print_task_promotions(task: str, answer: TaskPromotions) -> None:
    if answer.closed:
        console.print(f"task {escape(task)} is closed ({answer.closed})", style="yellow", highlight=False)
    if not answer.promotions:
        console.print(f"task {escape(task)} has no promotion yet", style="yellow", highlight=False)
    else:
        table = Table()
        for name in ("#", "workflow", "scope", "entries", "outcome", "started", "ended"):
            table.add_column(name)
        for row in answer.promotions:
            last = "…" if row.last_seq is None else str(row.last_seq)
            table.add_row(
                str(row.number),
                escape(row.workflow_id),
                row.target_scope or "",
                f"{row.after_seq + 1}–{last}",
                row.outcome or "running",
                _when(row.started_at),
                _when(row.ended_at),
            )
        console.print(table)
    if not answer.closed:
        console.print(
            f"entries appended now belong to promotion {answer.next_entries_promotion}", style="dim"
        )


def close(
    task: TaskArgument,
    url: UrlOption = None,
    api_key: KeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """Close a task: it takes no more entries and no more promotions (orchestrators and humans)."""
    with _client(url, api_key) as client:
        answer = client.close_task(task)
    if as_json:
        _print_json(answer)
        return
    _print_task_promotions(task, answer)


_COMMANDS: tuple[tuple[str, Callable[..., None]], ...] = (
    ("promote", promote),
    ("verify", verify),
    ("approve", approve),
    ("reject", reject),
    ("promotion", promotion),
    ("promotions", promotions),
    ("close", close),
)


def register(app: typer.Typer) -> None:
    for name, command in _COMMANDS:
        app.command(name)(command)
