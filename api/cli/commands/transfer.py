"""`loregate export SCOPE_KEY` and `loregate import FILE`: a scope's memory as JSON Lines, and back.

Both talk to a running gateway (`LOREGATE_URL`, `LOREGATE_API_KEY`), so they work from any machine that can
reach it and are authorised exactly as the API is: an export is a read of the scope (staging only for
readers of it), an import through the gate is a task's promotion, `--restore` is an admin operation
(api/services/exports.py, api/services/imports.py). An export into a file (or a symlink to one) is written
to a temporary file beside it and renamed over it only once its trailer arrived, so a failed export leaves no
file behind; into a FIFO or a device (`/dev/stdout`) it is streamed, since a rename would replace the node.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, BinaryIO

import typer

from api.cli.commands._common import KeyOption, UrlOption, console, err_console, fail
from api.cli.commands._common import print_json as _print_json

__all__ = ["register", "export", "import_"]

# an export streams as long as it takes; an import may embed every memory (restore) or wait for Temporal
TIMEOUT_SECONDS = 600.0


@contextmanager
def _http(url: str | None, api_key: str | None) -> Iterator[Any]:
    """An httpx client on the gateway whose refusals end the command with one line."""
    import httpx

    from api.client import DEFAULT_URL, LoregateError, error_from_response
    from api.client.errors import unreachable
    from api.client.transport import authorization

    base = (url or os.environ.get("LOREGATE_URL") or DEFAULT_URL).rstrip("/")
    headers, problem = authorization(api_key)
    if problem is not None:
        fail(f"unauthenticated: {problem}")
    try:
        with httpx.Client(base_url=base, headers=headers, timeout=httpx.Timeout(TIMEOUT_SECONDS)) as client:
            yield client
    except httpx.TransportError as exc:
        fail(f"unavailable: {unreachable(base, exc).detail}")
    except _Refused as refused:
        error: LoregateError = error_from_response(refused.response)
        fail(f"{error.error}: {error.detail}")


_PLURAL = {
    "memory": "memories",
    "event": "events",
    "entry": "entries",
    "staging": "staging entries",
    "episode": "episodes",
}


def _counts(values: dict[str, int]) -> str:
    """`{"memory": 2, "event": 1}` as `2 memories, 1 event`."""
    words = [f"{v} {k if v == 1 and k != 'staging' else _PLURAL.get(k, k)}" for k, v in values.items()]
    return ", ".join(words) or "nothing"


class _Refused(Exception):
    def __init__(self, response: Any) -> None:
        super().__init__(response.status_code)
        self.response = response


@dataclass(frozen=True)
class _Target:
    """Where an export goes: `shown` as the user named it, `path` with its symlinks resolved; `atomic` when
    that is a regular file (or nothing yet): written to a temporary file beside it, renamed over it."""

    shown: Path
    path: Path
    atomic: bool

    def open(self) -> tuple[BinaryIO, Path | None]:
        """The open sink and, for an atomic target, the temporary file that must go if the export fails."""
        if not self.atomic:
            # a FIFO or a device: written into, since a rename would replace the node with a regular file
            return self.path.open("wb"), None
        # a name of its own (O_EXCL, mode 0600): never a planted symlink, never another export's temp file
        fd, name = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".partial")
        return os.fdopen(fd, "wb"), Path(name)

    def lost(self) -> str:
        """What a failed export left at the target."""
        return "nothing was written" if self.atomic else f"what reached {self.shown} is incomplete"


def _target(output: Path | None) -> _Target | None:
    """Where `-o` points (None: standard output); ends the command when nothing can be written there."""
    if output is None or str(output) == "-":
        return None
    try:
        path = output.resolve()
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop
        fail(f"cannot write {output}: {getattr(exc, 'strerror', None) or exc}; nothing was written")
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:  # a new file (a missing directory is named when the temporary file is made)
        return _Target(output, path, atomic=True)
    except OSError as exc:
        fail(f"cannot write {output}: {exc.strerror or exc}; nothing was written")
    if stat.S_ISDIR(mode):
        fail(f"cannot write {output}: {os.strerror(errno.EISDIR)}; nothing was written")
    return _Target(output, path, atomic=stat.S_ISREG(mode))


def export(
    scope_key: Annotated[
        str, typer.Argument(help="project:<org>/<project>, org:<org>, worktree:… or task:<id>.")
    ],
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Write here, `-` for standard output (the default)."),
    ] = None,
    include_staging: Annotated[
        bool, typer.Option("--include-staging", help="Also the staging of the tasks the memories came from.")
    ] = False,
    url: UrlOption = None,
    api_key: KeyOption = None,
) -> None:
    """Export a scope's memories (every state), their events and optionally staging, as JSON Lines."""
    params: dict[str, Any] = {"scope_key": scope_key}
    if include_staging:
        params["include"] = "staging"
    target = _target(output)  # before anything is asked of the gateway
    shown = "standard output" if target is None else str(target.shown)
    lost = "what reached standard output is incomplete" if target is None else target.lost()
    started = time.monotonic()
    trailer: dict[str, Any] | None = None
    partial: Path | None = None
    try:
        with _http(url, api_key) as client, client.stream("GET", "/v1/exports", params=params) as response:
            if response.status_code >= 400:
                response.read()
                raise _Refused(response)
            sink: BinaryIO = sys.stdout.buffer
            if target is not None:
                try:
                    sink, partial = target.open()
                except OSError as exc:
                    fail(f"cannot write {shown}: {exc.strerror or exc}; nothing was written")
            try:
                for line in response.iter_lines():
                    if not line:
                        continue
                    try:
                        record = json.loads(line)
                    except ValueError:
                        record = None
                    if not isinstance(record, dict):  # an HTML page, say: what answered is not the gateway
                        from api.client.errors import foreign_answer

                        fail(f"invalid_response: {foreign_answer(response)}")
                    if record.get("kind") == "trailer":
                        trailer = record
                    sink.write((line + "\n").encode("utf-8"))
                sink.flush()
                if partial is not None:
                    os.fsync(sink.fileno())  # on disk before the rename makes it the target
                if target is not None:
                    sink.close()
            except OSError as exc:  # ENOSPC, EPIPE, EIO: one line, never "exported N memories"
                fail(f"cannot write {shown}: {exc.strerror or exc}; {lost}")
            finally:
                if target is not None:
                    with suppress(OSError):  # already reported; close releases the descriptor regardless
                        sink.close()
        if trailer is None:
            fail(f"the gateway's answer ended before the export's trailer line; {lost}")
        if partial is not None and target is not None:
            try:
                partial.replace(target.path)
            except OSError as exc:  # the target became a directory meanwhile, say
                fail(f"cannot write {shown}: {exc.strerror or exc}; nothing was written")
    finally:
        if partial is not None:
            partial.unlink(missing_ok=True)
    counts = _counts(trailer["counts"])
    where = f" to {shown}" if target is not None else ""
    err_console.print(
        f"exported {counts}{where} in {time.monotonic() - started:.1f} s", soft_wrap=True, highlight=False
    )


def import_(
    file: Annotated[Path, typer.Argument(help="An export file (loregate export).")],
    scope: Annotated[
        str | None,
        typer.Option("--scope", help="Through the gate into this scope key (worktree:, project: or org:)."),
    ] = None,
    project: Annotated[
        str | None, typer.Option("--project", help="Into org scope: the project the import task belongs to.")
    ] = None,
    verified: Annotated[
        str | None,
        typer.Option("--verified", help="Start the promotion with this evidence (tests_passed, …)."),
    ] = None,
    restore: Annotated[
        bool,
        typer.Option("--restore", help="Admin restore: keep ids, trust, states and events, all or nothing."),
    ] = False,
    url: UrlOption = None,
    api_key: KeyOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the gateway's JSON answer.")] = False,
) -> None:
    """Import an export: through the gate (a promotion into --scope) or, for admins, --restore it."""
    if restore and scope is not None:
        fail("--restore brings memories back into the scope they were exported from; drop --scope")
    if restore and (project is not None or verified is not None):
        fail("--restore keeps each memory's project and trust as exported; drop --project and --verified")
    if not restore and scope is None:
        fail("name the target scope with --scope (through the gate), or pass --restore (admins)")
    try:
        data = file.read_bytes()
    except OSError as exc:
        fail(f"cannot read {file}: {exc.strerror or exc}")
    params: dict[str, Any] = {}
    for name, value in (("scope_key", scope), ("project", project), ("verified", verified)):
        if value is not None:
            params[name] = value
    started = time.monotonic()
    with _http(url, api_key) as client:
        response = client.post(
            "/v1/restores" if restore else "/v1/imports",
            params=params,
            content=data,
            headers={"Content-Type": "application/x-ndjson"},
        )
        if response.status_code >= 400:
            raise _Refused(response)
    from api.client import LoregateError
    from api.client.transport import parse
    from api.schemas.transfer import ImportPublic

    try:
        answer = parse(response, ImportPublic)
    except LoregateError as exc:  # not the gateway's answer (an HTML page, say): one line naming the URL
        fail(f"{exc.error}: {exc.detail}")
    if as_json:
        _print_json(answer)
        return
    seconds = time.monotonic() - started
    console.print(
        f"{answer.mode} import of {answer.source_scope_key} (sha256 {answer.file_sha256[:12]}) "
        f"in {seconds:.1f} s: created {_counts(answer.created)}; unchanged {_counts(answer.unchanged)}"
        + (f"; left out {_counts(answer.skipped)}" if answer.skipped else ""),
        highlight=False,
    )
    if answer.mode == "gate":
        verb = "started" if answer.promotion_created else "already started"
        console.print(
            f"task {answer.task_id}: promotion into {answer.target_scope_key} {verb} "
            f"(loregate promotion {answer.task_id})",
            highlight=False,
        )
    else:
        console.print(
            f"receipt: event {answer.receipt_event_id} (RESTORED, in the audit trail of the scope)",
            highlight=False,
        )


def register(app: typer.Typer) -> None:
    app.command("export")(export)
    app.command("import")(import_)
