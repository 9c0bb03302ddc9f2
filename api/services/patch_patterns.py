"""Patterns from patches: a unified diff becomes code-rule proposals staged into a task, never memory.

`from_patch` checks the size (413 past `patch_max_bytes`), authorises the task it stages into before it
reads the diff (`write` on `task_id`; without one, `open` in the caller's project: orchestrators and humans),
parses and reads the diff (`governance/patch_patterns.py`: 422 when it is not a diff), then appends one
entry per pattern through the staging use case (limits, quotas, idempotency, all or nothing):

- outcome `success`: a `rule` entry whose content is the pattern's rule and whose payload carries its
  canonical key (`pattern.<category>.<languages>`), title, category, languages, files, example and the
  patch's message. The promotion makes it a `code_rule` candidate (governance/cognify.py): a rule a
  non-human proposed waits for a human above task scope, and the gate's dedup merges a pattern already
  published (same key and content) into its rule instead of adding another;
- outcome `failure`: an `approach` entry `{"outcome": "failed"}` per pattern (the critique reads it); a
  pattern of a failed change is no evidence for a rule.

A patch that shows no pattern stages nothing and opens no task. Without `task_id` the task opened is
`patch-<digest>` (the diff, outcome, message, project and worktree), so a retry finds the same task, and
the entries carry idempotency keys of that digest (or of the caller's `idempotency_key`), so a retry
stages nothing twice.
"""

from __future__ import annotations

import hashlib

from api.schemas.patterns import FromPatchIn, FromPatchPublic, PatternProposalPublic
from api.schemas.staging import EntriesIn, EntryIn, TaskCreate
from api.services import staging
from api.services.gateway import GatewayResources, authorized_task
from governance.errors import InvalidInput, LimitExceeded
from governance.identity import Principal
from governance.patch_patterns import Proposal, parse_diff, proposals_of
from governance.scopes import EntryKind, Scope
from governance.storage.staging import TaskInfo

__all__ = ["from_patch"]


def _digest(body: FromPatchIn, project: str) -> str:
    h = hashlib.sha256()
    for part in (body.diff, body.outcome, body.message or "", project, body.worktree):
        h.update(part.encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()[:24]


def _entry(proposal: Proposal, body: FromPatchIn, key: str) -> EntryIn:
    payload = {
        "key": proposal.canonical_key,
        "title": proposal.title,
        "category": proposal.category,
        "languages": list(proposal.languages),
        "files": list(proposal.files),
        "example": proposal.example,
        "source": "patch",
        "patch_outcome": body.outcome,
        "message": body.message,
    }
    if body.outcome == "success":
        return EntryIn(kind=EntryKind.RULE, content=proposal.rule, payload=payload, idempotency_key=key)
    reason = f": {body.message.strip()}" if body.message and body.message.strip() else ""
    return EntryIn(
        kind=EntryKind.APPROACH,
        content=f"{proposal.title} in {', '.join(proposal.files[:5])} failed{reason}",
        payload={**payload, "outcome": "failed"},
        idempotency_key=key,
    )


async def _task_for(
    resources: GatewayResources, principal: Principal, body: FromPatchIn, digest: str, files: list[str]
) -> tuple[TaskInfo, bool]:
    if body.task_id is not None:
        return await authorized_task(resources, principal, body.task_id, "write"), False
    project = body.project or principal.project
    if project is None:
        raise InvalidInput("name the task (`task_id`) or the project of the task to open for the patch")
    shown = ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
    opened, created = await staging.open_task(
        resources,
        principal,
        TaskCreate(
            org=principal.org,
            project=project,
            worktree=body.worktree,
            description=f"Patterns from a patch ({body.outcome}) to {shown}",
            task_id=f"patch-{digest}",
        ),
    )
    return await authorized_task(resources, principal, opened.task_id, "write"), created


async def from_patch(resources: GatewayResources, principal: Principal, body: FromPatchIn) -> FromPatchPublic:
    """Stage the patterns a unified diff shows into a task, as proposals for its promotion."""
    size = len(body.diff.encode("utf-8", "surrogatepass"))
    if size > resources.settings.patch_max_bytes:
        raise LimitExceeded(
            f"the diff is {size} bytes; at most {resources.settings.patch_max_bytes} (patch_max_bytes): "
            "send the patch a part at a time"
        )
    if body.task_id is not None:  # authorised before the diff is read: an outsider learns nothing from it
        await authorized_task(resources, principal, body.task_id, "write")
    else:
        project = body.project or principal.project
        if project is None:
            raise InvalidInput("name the task (`task_id`) or the project of the task to open for the patch")
        resources.authorizer.check(
            principal, org=principal.org, project=project, scope=Scope.TASK, action="open"
        )
    files = parse_diff(body.diff)
    proposals = proposals_of(files)
    languages = sorted({f.language for f in files if f.language is not None})
    if not proposals:
        return FromPatchPublic(
            task_id=body.task_id,
            opened=False,
            outcome=body.outcome,
            files=len(files),
            languages=languages,
            proposals=[],
        )
    digest = _digest(body, body.project or principal.project or "")
    task, opened = await _task_for(resources, principal, body, digest, [f.path for f in files])
    prefix = body.idempotency_key or f"patch:{digest}"
    entries = [_entry(p, body, f"{prefix}:{p.canonical_key}") for p in proposals]
    acks = await staging.append_entries(resources, principal, task, EntriesIn(entries=entries))
    return FromPatchPublic(
        task_id=task.public_id,
        opened=opened,
        outcome=body.outcome,
        files=len(files),
        languages=languages,
        proposals=[
            PatternProposalPublic(
                category=p.category,
                languages=list(p.languages),
                title=p.title,
                rule=p.rule,
                canonical_key=p.canonical_key,
                example=p.example,
                files=list(p.files),
                entry_id=ack.id,
                seq=ack.seq,
                kind=entry.kind.value,
                replayed=ack.replayed,
            )
            for p, entry, ack in zip(proposals, entries, acks.entries, strict=True)
        ],
    )
