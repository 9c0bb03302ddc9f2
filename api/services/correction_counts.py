"""Preferences from repeated corrections, counted: a human's `correction` entries per project, and a
`preference` proposed once the same one was seen in `preference_corrections` tasks
(governance/corrections.py).

Runs after an append committed (`services/staging.append_entries`, so every channel that appends: HTTP,
gRPC, MCP, the client, the CLI), like live signals: in transactions of its own, and a failure is logged and
never fails the append, whose entries are already durable (a replay of the batch records what is missing).

The proposal is a `preference` entry staged into the task whose correction reached the threshold, written
by the org's system principal (the reflector, `storage/reflections.ensure_reflector`: an operator who
disables it stops these proposals too) with an idempotency key of (project, signature), so two gateways
reaching the threshold at once stage one entry. It is a candidate like any other: the task's promotion
carries it through the gate, its approval and trust rules.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence

from api.schemas.staging import EntryAck
from api.services.gateway import GatewayResources
from governance.corrections import (
    CORRECTION_SIGNAL,
    PREFERENCE_SIGNAL,
    correction_signature,
    preference_proposal,
    should_propose,
)
from governance.identity import Principal
from governance.scopes import ActorType, EntryKind
from governance.staging import EntryDraft, public_task_id
from governance.storage import corrections, staging_append
from governance.storage.reflections import ensure_reflector, reflector_id
from governance.storage.staging import TaskInfo

__all__ = ["after_append"]

_log = logging.getLogger("loregate.corrections")


async def after_append(
    resources: GatewayResources,
    principal: Principal,
    task: TaskInfo,
    drafts: Sequence[EntryDraft],
    acks: Sequence[EntryAck],
) -> list[int]:
    """Record a human's corrections of this batch and propose the preferences they complete; the ids of the
    preference entries staged (none when nothing reached the threshold)."""
    if principal.actor_type is not ActorType.HUMAN:
        return []
    found = [
        (draft, ack, correction_signature(draft.content, draft.payload))
        for draft, ack in zip(drafts, acks, strict=True)
        if draft.kind is EntryKind.CORRECTION and draft.content.strip()
    ]
    if not found:
        return []
    try:
        return await _record_and_propose(resources, principal, task, found)
    except Exception:  # the corrections are durable; a replay of the batch records and proposes again
        _log.warning("could not count the corrections of task %s", task.id, exc_info=True)
        return []


async def _record_and_propose(
    resources: GatewayResources,
    principal: Principal,
    task: TaskInfo,
    found: list[tuple[EntryDraft, EntryAck, str]],
) -> list[int]:
    async with resources.engine.begin() as conn:
        await corrections.record_signatures(
            conn,
            [
                corrections.SignatureRow(ack.id, task.id, ack.seq, CORRECTION_SIGNAL, signature, principal.id)
                for _, ack, signature in found
            ],
        )
    proposed: list[int] = []
    latest = {signature: draft for draft, _, signature in found}  # the last wording of each signature
    for signature, draft in latest.items():
        async with resources.engine.connect() as conn:
            seen = await corrections.corrections_seen(
                conn, org=task.org, project=task.project, signature=signature
            )
            already = await corrections.preference_proposed(
                conn, org=task.org, project=task.project, signature=signature
            )
        tasks = list(dict.fromkeys(s.task_id for s in seen))
        if not should_propose(
            len(tasks), resources.settings.preference_corrections, already_proposed=already
        ):
            continue
        entry_id = await _propose(resources, task, draft, signature, tasks, [s.entry_id for s in seen])
        if entry_id is not None:
            proposed.append(entry_id)
    return proposed


async def _propose(
    resources: GatewayResources,
    task: TaskInfo,
    draft: EntryDraft,
    signature: str,
    tasks: list[str],
    entry_ids: list[int],
) -> int | None:
    async with resources.engine.begin() as conn:
        writer = await ensure_reflector(conn, task.org)
    if writer is None:
        _log.info("the reflector of %s is disabled: no preference proposed for %s", task.org, signature)
        return None
    proposal = preference_proposal(
        draft.content, draft.payload, signature, tasks=[public_task_id(t) for t in tasks], entry_ids=entry_ids
    )
    once = hashlib.sha256(f"{task.org}/{task.project}/{signature}".encode()).hexdigest()[:40]
    system = Principal(
        id=reflector_id(task.org),
        name=f"reflection of {task.org}",
        actor_type=ActorType.SYSTEM,
        org=task.org,
        project=None,
    )
    [appended] = await staging_append.append_entries(
        resources.engine,
        task.id,
        system,
        [
            EntryDraft(
                kind=EntryKind.PREFERENCE,
                content=proposal.content,
                payload=proposal.payload,
                idempotency_key=f"preference:{once}",
            )
        ],
    )
    if appended.replayed:  # another gateway proposed it first, and recorded it
        return None
    async with resources.engine.begin() as conn:
        await corrections.record_signatures(
            conn,
            [
                corrections.SignatureRow(
                    appended.id, task.id, appended.seq, PREFERENCE_SIGNAL, signature, system.id
                )
            ],
        )
    return int(appended.id)
