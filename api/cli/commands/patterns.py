"""`loregate code-rules from-patch FILE` and `loregate correct TASK TEXT` (docs/patch-patterns.md).

`code-rules from-patch` sends a unified diff (a file, or `-` for standard input: `git diff | loregate
code-rules from-patch -`) with how the change fared; the patterns it shows are staged as rule proposals into
`--task`, or into a task opened for the patch, and reach memory only through that task's promotion.
`correct` stages a human's correction into a task; the same correction in several tasks of a project
proposes a preference the same way.
"""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from api.cli.commands._common import JsonOption, KeyOption, UrlOption, console, fail
from api.cli.commands._common import api_client as _client
from api.cli.commands._common import print_json as _print_json

__all__ = ["register", "from_patch", "correct"]

code_rules_app = typer.Typer(help="Code rules proposed from patches, through the gate.")


class Outcome(StrEnum):
    """How the patched change fared."""

    SUCCESS = "success"
    FAILURE = "failure"


@code_rules_app.command("from-patch")
def from_patch(
    file: Annotated[str, typer.Argument(help="A unified diff file; `-` reads standard input.")],
    outcome: Annotated[Outcome, typer.Option("--outcome", help="How the change fared.")] = Outcome.SUCCESS,
    task: Annotated[
        str | None, typer.Option("--task", "-t", help="Stage into this task (default: open one).")
    ] = None,
    message: Annotated[
        str | None, typer.Option("--message", "-m", help="The commit message or a note.")
    ] = None,
    project: Annotated[
        str | None, typer.Option("--project", help="Project of the task opened (default: your key's).")
    ] = None,
    url: UrlOption = None,
    api_key: KeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """Propose the code patterns a unified diff shows, as rule candidates of a task's promotion."""
    if file == "-":
        diff = sys.stdin.read()
    else:
        path = Path(file)
        if not path.is_file():
            fail(f"no such file: {file}")
        try:
            diff = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            fail(f"{file} is not UTF-8 text")
    if not diff.strip():
        fail("the diff is empty")
    with _client(url, api_key) as client:
        answer = client.code_rules_from_patch(
            diff, outcome.value, task_id=task, message=message, project=project
        )
    if as_json:
        _print_json(answer)
        return
    if not answer.proposals:
        console.print(f"no pattern found in {answer.files} file(s); nothing staged")
        return
    where = "a task opened for the patch" if answer.opened else "the task"
    table = Table(title=f"{len(answer.proposals)} proposals staged into {where} {answer.task_id}")
    for name in ("category", "languages", "staged as", "example"):
        table.add_column(name, overflow="fold", no_wrap=name in ("category", "staged as"))
    for p in answer.proposals:
        table.add_row(p.category, ", ".join(p.languages), f"{p.kind} #{p.seq}", escape(p.example))
    console.print(table)
    console.print(
        f"they reach memory through the promotion: loregate promote {answer.task_id} --scope project",
        highlight=False,
    )


def correct(
    task: Annotated[str, typer.Argument(help="The task whose work you correct.")],
    text: Annotated[str, typer.Argument(help="What should be done otherwise.")],
    key: Annotated[
        str | None,
        typer.Option("--key", help="A canonical key: differently worded corrections count as one."),
    ] = None,
    url: UrlOption = None,
    api_key: KeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """Correct an agent's work (humans): the same correction in N tasks proposes a preference."""
    with _client(url, api_key) as client:
        answer = client.correct(task, text, key=key)
    if as_json:
        _print_json(answer)
        return
    state = (
        "a preference is proposed (it waits in a task's promotion)"
        if answer.preference_proposed
        else f"{answer.threshold - answer.tasks_seen} more task(s) before a preference is proposed"
    )
    console.print(
        f"correction #{answer.seq} in {answer.task_id}: seen in {answer.tasks_seen} task(s); {state}",
        highlight=False,
    )


def register(app: typer.Typer) -> None:
    app.add_typer(code_rules_app, name="code-rules")
    app.command("correct")(correct)
