"""`loregate patterns match`, `loregate rules observe|candidates`, `loregate reflections list|start`.

`patterns match` asks which published bug patterns an error matches (same signature first), with each
pattern's solutions best first: what a person or a script does when a task meets an error. The error is an
argument, or `-` to read it (a whole traceback) from standard input. `rules observe` reports how a code rule
fared (its confidence moves by EMA); `rules candidates` lists the rules below 0.3, for a human to retire.
`reflections list` shows a project's reflections; `reflections start` (a human who may approve the project)
starts one now, instead of waiting for the importance threshold or the nightly sweep.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from api.cli.commands._common import JsonOption, KeyOption, UrlOption, console, fail
from api.cli.commands._common import api_client as _client
from api.cli.commands._common import print_json as _print_json
from governance.trust import RuleOutcome

if TYPE_CHECKING:
    from api.schemas.learning import BugPatternPublic

__all__ = ["register", "match", "observe", "candidates", "list_reflections", "start_reflection"]


patterns_app = typer.Typer(help="Bug patterns: what an error matches, and the fixes that worked.")
rules_app = typer.Typer(help="Code rules: observations that move their confidence, retirement candidates.")
reflections_app = typer.Typer(help="Reflection: episodes distilled into insights, through the gate.")
OrgOption = Annotated[str | None, typer.Option("--org", help="Default: your key's org.")]
ProjectOption = Annotated[str | None, typer.Option("--project", help="Default: your key's project.")]


def _solutions(pattern: BugPatternPublic) -> str:
    """One line per fix: rate, tally, text, and `(unreviewed)` where nobody but its task stands behind it."""
    return "\n".join(
        f"{s.success_rate:.0%} ({s.successes}/{s.attempts}) {escape(s.solution)}"
        + (" (unreviewed)" if s.standing == "unreviewed" else "")
        for s in pattern.solutions
    )


@patterns_app.command("match")
def match(
    error: Annotated[str, typer.Argument(help="The error message or traceback; `-` reads standard input.")],
    task: Annotated[str, typer.Option("--task", "-t", help="Your task (it fixes the tenant).")],
    k: Annotated[
        int | None, typer.Option("--k", min=1, max=50, help="How many patterns (default 5).")
    ] = None,
    url: UrlOption = None,
    api_key: KeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """Bug patterns an error matches, same signature first, each with its solutions best first."""
    text = sys.stdin.read() if error == "-" else error
    if not text.strip():
        fail("the error text is empty")
    with _client(url, api_key) as client:
        answer = client.match_bug_pattern(text, task_id=task, k=k)
    if as_json:
        _print_json(answer)
        return
    console.print(f"signature: {escape(answer.error_type)}: {escape(answer.signature)}", highlight=False)
    if not answer.patterns:
        console.print("no published bug pattern matches this error")
        return
    table = Table(title=f"{len(answer.patterns)} matching bug patterns")
    for name in ("citation", "same", "seen", "title", "solutions (success rate)"):
        table.add_column(name, overflow="fold", no_wrap=name in ("citation", "same", "seen"))
    for p in answer.patterns:
        same = "yes" if p.same_signature else f"{p.similarity:.2f}"
        table.add_row(f"mem:{p.citation}", same, str(p.occurrences), escape(p.title), _solutions(p))
    console.print(table)


@rules_app.command("observe")
def observe(
    memory: Annotated[str, typer.Argument(help="The code rule's citation or id.")],
    outcome: Annotated[RuleOutcome, typer.Argument(help="What happened when the rule met the work.")],
    note: Annotated[str | None, typer.Option("--note", help="Why, for the audit trail.")] = None,
    url: UrlOption = None,
    api_key: KeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """Report how a code rule fared: its confidence moves by EMA (α 0.2)."""
    with _client(url, api_key) as client:
        answer = client.observe_rule(memory, outcome.value, note=note)
    if as_json:
        _print_json(answer)
        return
    state = (
        "established" if answer.established else "retirement candidate" if answer.retirement_candidate else ""
    )
    console.print(
        f"mem:{answer.citation}: confidence {answer.confidence_before:.2f} → {answer.confidence:.2f} {state}",
        highlight=False,
    )


@rules_app.command("candidates")
def candidates(url: UrlOption = None, api_key: KeyOption = None, as_json: JsonOption = False) -> None:
    """Code rules below 0.3 you may read, weakest first: candidates to retire."""
    with _client(url, api_key) as client:
        answer = client.rule_candidates()
    if as_json:
        _print_json(answer)
        return
    if not answer.rules:
        console.print("no code rule is below 0.3")
        return
    table = Table(title=f"{len(answer.rules)} code rules to reconsider")
    for name in ("citation", "confidence", "scope", "title"):
        table.add_column(name, overflow="fold", no_wrap=name != "title")
    for r in answer.rules:
        table.add_row(f"mem:{r.citation}", f"{r.confidence:.2f}", escape(r.scope_key), escape(r.title))
    console.print(table)


@reflections_app.command("list")
def list_reflections(
    org: OrgOption = None,
    project: ProjectOption = None,
    url: UrlOption = None,
    api_key: KeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """The project's newest reflections: what started each, its state, episodes read, insights staged."""
    with _client(url, api_key) as client:
        answer = client.reflections(org=org, project=project)
    if as_json:
        _print_json(answer)
        return
    if not answer.reflections:
        console.print("no reflection yet")
        return
    table = Table(title=f"{len(answer.reflections)} reflections")
    for name in ("started", "trigger", "state", "episodes", "insights", "reflection task"):
        table.add_column(name, overflow="fold", no_wrap=name != "reflection task")
    for r in answer.reflections:
        table.add_row(
            r.created_at.isoformat()[:19],
            r.trigger,
            r.state,
            str(r.episode_count),
            str(r.insight_count),
            escape(r.task_id or ""),
        )
    console.print(table)


@reflections_app.command("start")
def start_reflection(
    org: OrgOption = None,
    project: ProjectOption = None,
    url: UrlOption = None,
    api_key: KeyOption = None,
    as_json: JsonOption = False,
) -> None:
    """Reflect on the project's pending episodes now (a human allowed to approve the project)."""
    with _client(url, api_key) as client:
        answer = client.start_reflection(org=org, project=project)
    if as_json:
        _print_json(answer)
        return
    verb = "started" if answer.started else "already running"
    console.print(
        f"reflection of {escape(answer.org)}/{escape(answer.project)} {verb}: workflow {answer.workflow_id} "
        "(its insights wait for approval: loregate promotions --pending)",
        highlight=False,
    )


def register(app: typer.Typer) -> None:
    app.add_typer(patterns_app, name="patterns")
    app.add_typer(rules_app, name="rules")
    app.add_typer(reflections_app, name="reflections")
