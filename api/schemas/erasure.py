"""Request and response models of erasure (`DELETE /v1/memories/{id}`, `POST /v1/erasures`)."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Self

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints, model_validator

from api.schemas.text import SPACE, refuse_lone_surrogates
from governance.staging import TASK_ID_PATTERN

__all__ = [
    "ErasureKind",
    "ErasureIn",
    "EraseMemoryQuery",
    "ErasedMemoryPublic",
    "ErasedEntryPublic",
    "ErasedCandidatePublic",
    "ErasurePublic",
]

ErasureKind = Literal["memory", "task", "subject"]

# a memory (uuid, citation, `mem:` citation) and a task as their ids are spelt: anything else exists nowhere
MemoryRef = Annotated[str, StringConstraints(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9:-]+$")]
# ...optionally as its key, `<org>/<task id>`: an admin names one org's task where several orgs use the id
TASK_REF_PATTERN = r"^(?:[^/*\s][^/*]{0,199}/)?" + TASK_ID_PATTERN.removeprefix("^")
TaskRef = Annotated[str, StringConstraints(min_length=1, max_length=329, pattern=TASK_REF_PATTERN)]

# a subject: no NUL (no stored text holds one) and not blank; the constraints come before the validator, so
# the OpenAPI schema states them although the field is optional
Subject = Annotated[
    str,
    StringConstraints(min_length=3, max_length=500, pattern=f"^[^\\x00]*[^{SPACE}\\x00][^\\x00]*$"),
    BeforeValidator(refuse_lone_surrogates),
]


_TARGETS = ("memory", "task", "subject")
_TENANT = ("org", "project")  # a subject's tenant: a memory or a task names its own


def _only(target: str, *also: str) -> dict[str, Any]:
    """JSON schema: `target` (and `also`) as strings, no other target, and no tenant unless a subject."""
    strings = {name: {"type": "string"} for name in (target, *also)}
    others = [{"required": [o], "properties": {o: {"type": "string"}}} for o in _TARGETS if o != target]
    if target != "subject":
        others += [{"required": [t], "properties": {t: {"type": "string"}}} for t in _TENANT]
    return {"required": [target, *also], "properties": strings, "not": {"anyOf": others}}


class ErasureIn(BaseModel):
    """What to erase: exactly one of `memory`, `task` or `subject` (with its tenant)."""

    # the rule the validator below enforces, stated in the OpenAPI schema too (clients and fuzzers read it)
    # a misspelt field is refused by name: `dryrun` erased for real, as if the dry run had been asked for
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"oneOf": [_only("memory"), _only("task"), _only("subject", "org")]},
    )

    memory: MemoryRef | None = Field(default=None, description="uuid or citation")
    task: TaskRef | None = Field(
        default=None,
        description="The task's id, or its key `<org>/<task id>` (an admin, where orgs share the id)",
    )
    subject: Subject | None = Field(
        default=None, description="Erase every text containing this string (not blank, no NUL)"
    )
    org: str | None = Field(default=None, min_length=1, max_length=200, description="A subject's tenant")
    project: str | None = Field(
        default=None, min_length=1, max_length=200, description="A subject's project (omit: the whole org)"
    )
    dry_run: bool = False

    @model_validator(mode="after")
    def _one_target(self) -> Self:
        named = [n for n in ("memory", "task", "subject") if getattr(self, n) is not None]
        if len(named) != 1:
            raise ValueError("name exactly one of memory, task or subject")
        if self.subject is not None and self.org is None:
            raise ValueError("a subject erasure names its org (and optionally its project)")
        stray = [n for n in _TENANT if getattr(self, n) is not None]
        if self.subject is None and stray:
            target = named[0]
            raise ValueError(
                f"{' and '.join(stray)} only apply to a subject erasure: a {target} erasure acts on the "
                f"{target}'s own tenant (leave {' and '.join(stray)} out)"
            )
        return self


class EraseMemoryQuery(BaseModel):
    """The query of `DELETE /v1/memories/{id}`: only `dry_run` (`?dryrun=true` erased for real)."""

    model_config = ConfigDict(extra="forbid")

    dry_run: bool = Field(default=False, description="List what would go; erase nothing")


class ErasedMemoryPublic(BaseModel):
    """A memory that goes (or went): no content, only its hash."""

    id: str
    citation: str
    scope: str
    title: str
    content_sha256: str


class ErasedEntryPublic(BaseModel):
    """A staging entry that goes (or went)."""

    id: int
    task_id: str
    seq: int
    kind: str
    content_sha256: str


class ErasedCandidatePublic(BaseModel):
    """A promotion candidate that goes (or went), with its plan item."""

    workflow_id: str
    idx: int
    title: str
    content_sha256: str


class ErasurePublic(BaseModel):
    """What an erasure takes (dry run) or took (its receipt is the ERASED event `receipt_event_id`)."""

    kind: ErasureKind
    dry_run: bool
    memories: list[ErasedMemoryPublic]
    staging_entries: list[ErasedEntryPublic]
    candidates: list[ErasedCandidatePublic]
    plans: int
    archive_files: list[str]
    counts: dict[str, int] = Field(description="Rows deleted or scrubbed, per kind (empty in a dry run)")
    temporal_workflows: list[str] = Field(
        description="Workflows involved (promotions, change requests): erasure deletes their Temporal "
        "histories (a running one is terminated first); a dry run lists those it would delete"
    )
    receipt_event_id: int | None = None
