"""Read an export file back: every line checked before anything is written, each refusal naming its line.

A file is refused whole (InvalidInput, 422) when it is not UTF-8 JSON Lines, does not open with a loregate
header of a version this release reads, holds a record that is not one of the export's record kinds (or one
with a field missing, extra or of the wrong type), mixes tenants or scopes, names a memory twice, carries
an event of a memory it does not hold, or lacks the trailer whose counts match what came before it (a file
cut short).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from pydantic import ValidationError

from api.schemas.transfer import (
    RECORD_MODELS,
    EventRecord,
    HeaderRecord,
    MemoryRecord,
    StagingRecord,
    TrailerRecord,
    WorkingMemoryRecord,
)
from governance.errors import InvalidInput
from governance.transfer import EXPORT_FORMAT, EXPORT_VERSION, file_digest

__all__ = ["ParsedExport", "parse_export"]


@dataclass
class ParsedExport:
    """A file that passed every check: its records with their line numbers, and its sha256."""

    digest: str
    header: HeaderRecord
    memories: list[tuple[int, MemoryRecord]] = field(default_factory=list)
    events: list[tuple[int, EventRecord]] = field(default_factory=list)
    staging: list[tuple[int, StagingRecord]] = field(default_factory=list)
    working_memory: list[tuple[int, WorkingMemoryRecord]] = field(default_factory=list)


def _problem(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "record"
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{where}: {first['msg']}{more}"


def _object(number: int, raw: bytes) -> dict[str, object]:
    try:
        value = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"line {number}: not UTF-8 ({exc.reason} at byte {exc.start})") from exc
    except RecursionError as exc:  # the parser recurses per level: an export's records are shallow
        raise InvalidInput(f"line {number}: JSON nested too deeply to parse") from exc
    except ValueError as exc:
        raise InvalidInput(f"line {number}: not JSON ({exc}); an export is JSON Lines") from exc
    if not isinstance(value, dict) or not isinstance(value.get("kind"), str):
        raise InvalidInput(f"line {number}: a record is a JSON object with a string `kind`")
    return value


def _header(value: dict[str, object]) -> HeaderRecord:
    if value.get("kind") != "header" or value.get("format") != EXPORT_FORMAT:
        raise InvalidInput(
            f"line 1: not a loregate export (the first line must be its {EXPORT_FORMAT} header)"
        )
    if value.get("version") != EXPORT_VERSION:
        raise InvalidInput(
            f"line 1: export version {value.get('version')!r} is not supported "
            f"(this release reads version {EXPORT_VERSION})"
        )
    try:
        return HeaderRecord.model_validate(value)
    except ValidationError as exc:
        raise InvalidInput(f"line 1: malformed header: {_problem(exc)}") from exc


def parse_export(data: bytes) -> ParsedExport:
    """The checked records of an export file, or InvalidInput naming the first bad line."""
    lines = data.split(b"\n")
    numbered = [(n, raw) for n, raw in enumerate(lines, start=1) if raw.strip()]
    if not numbered:
        raise InvalidInput("the file is empty; an export opens with its header line")
    first_number, first_raw = numbered[0]
    if first_number != 1:
        raise InvalidInput("line 1: blank; an export opens with its header line")
    parsed = ParsedExport(digest=file_digest(data), header=_header(_object(1, first_raw)))
    header = parsed.header
    trailer: TrailerRecord | None = None
    memory_ids: set[str] = set()
    for number, raw in numbered[1:]:
        value = _object(number, raw)
        if trailer is not None:
            raise InvalidInput(f"line {number}: a record after the trailer")
        kind = str(value["kind"])
        model = RECORD_MODELS.get(kind)
        if model is None or model is HeaderRecord:
            known = ", ".join(k for k in RECORD_MODELS if k != "header")
            raise InvalidInput(f"line {number}: unknown record kind {kind!r} (known: {known})")
        try:
            record = model.model_validate(value)
        except ValidationError as exc:
            raise InvalidInput(f"line {number}: malformed {kind} record: {_problem(exc)}") from exc
        if isinstance(record, MemoryRecord):
            if record.org != header.org or record.scope_key != header.scope_key:
                raise InvalidInput(
                    f"line {number}: a memory of {record.scope_key} (org {record.org}) in an export of "
                    f"{header.scope_key} (org {header.org})"
                )
            if record.id in memory_ids:
                raise InvalidInput(f"line {number}: memory {record.id} appears twice")
            memory_ids.add(record.id)
            parsed.memories.append((number, record))
        elif isinstance(record, EventRecord):
            if record.memory_id not in memory_ids:
                raise InvalidInput(
                    f"line {number}: an event of memory {record.memory_id}, which no earlier line holds"
                )
            parsed.events.append((number, record))
        elif isinstance(record, StagingRecord):
            parsed.staging.append((number, record))
        elif isinstance(record, WorkingMemoryRecord):
            parsed.working_memory.append((number, record))
        elif isinstance(record, TrailerRecord):
            trailer = record
            found = {
                "memory": len(parsed.memories),
                "event": len(parsed.events),
                "staging": len(parsed.staging),
                "working_memory": len(parsed.working_memory),
            }
            expected = {k: trailer.counts.get(k, 0) for k in found}
            if expected != found:
                raise InvalidInput(
                    f"line {number}: the trailer counts {expected} but the file holds {found}; "
                    "it was cut short or edited"
                )
    if trailer is None:
        raise InvalidInput(
            f"the file ends at line {numbered[-1][0]} without its trailer line: it was cut short"
        )
    return parsed
