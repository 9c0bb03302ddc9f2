"""A human's correction of an agent's work, staged into the task (`POST /v1/tasks/{task_id}/corrections`).

The same correction in `preference_corrections` tasks of a project proposes a `preference` through the gate
(api/services/correction_counts.py, governance/corrections.py, docs/patch-patterns.md).
"""

from __future__ import annotations

from api.schemas.patterns import CorrectionIn, CorrectionPublic
from api.schemas.staging import EntriesIn, EntryIn
from api.services import staging
from api.services.gateway import GatewayResources
from governance.corrections import correction_signature
from governance.errors import PolicyDenied
from governance.identity import Principal
from governance.scopes import ActorType, EntryKind
from governance.storage import corrections
from governance.storage.staging import TaskInfo

__all__ = ["correct"]


async def correct(
    resources: GatewayResources, principal: Principal, task: TaskInfo, body: CorrectionIn
) -> CorrectionPublic:
    """Stage a human's `correction` entry into a task authorised for `read`; counted towards a preference.

    Corrections come from humans (403 for anyone else) who may read the task (404 otherwise, as for an
    unknown id): a reviewer writes what it wants done otherwise where the work happened, without the write
    access to task scope that agents and orchestrators have.
    """
    if principal.actor_type is not ActorType.HUMAN:
        raise PolicyDenied(
            f"corrections come from humans; this caller is {principal.actor_type.value}: "
            "an agent's notes are entries of its task (POST /v1/tasks/{task_id}/entries)"
        )
    entry = EntryIn(
        kind=EntryKind.CORRECTION,
        content=body.content,
        payload=body.payload,
        idempotency_key=body.idempotency_key,
    )
    acks = await staging.append_entries(resources, principal, task, EntriesIn(entries=[entry]))
    [ack] = acks.entries
    signature = correction_signature(body.content, body.payload)
    async with resources.engine.connect() as conn:
        seen = await corrections.corrections_seen(
            conn, org=task.org, project=task.project, signature=signature
        )
        proposed = await corrections.preference_proposed(
            conn, org=task.org, project=task.project, signature=signature
        )
    return CorrectionPublic(
        task_id=task.public_id,
        entry_id=ack.id,
        seq=ack.seq,
        replayed=ack.replayed,
        tasks_seen=len({s.task_id for s in seen}),
        threshold=resources.settings.preference_corrections,
        preference_proposed=proposed,
    )
