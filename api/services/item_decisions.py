"""Per-item decisions on a promotion's plan, the gateway's side (the rules: governance/item_decisions.py).

- `checked_items`: an approval's `items` checked against the promotion's current plan before anything is
  written (unknown items, an edit of a quarantined item, a rejection without a reason, an edit over the
  size limit: a 422 or 409 naming the item) and prepared for storage (reason cleaned, new text redacted,
  word diffs); `send_decision` stores them under its grant, in the grant's transaction;
- `with_fates`: plan entries with what became of each item (published, edited, rejected by the approver)
  for `GET /v1/promotions/{task_id}` and its plan pages.

HTTP, gRPC (the same JSON body), the CLI (over the client) and the console call these through
`api/services/promotions.decide_promotion`; a Temporal UI signal meets the same rules in the workflow's
validator and the approver check (activities/gate_checks.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from api.schemas.promotions import DiffOpPublic, ItemDecisionIn, PlanEntryPublic
from api.services.approvals import ItemDecisions
from api.services.gateway import GatewayResources
from governance.errors import Conflict
from governance.item_decisions import ItemChoice, check_against_plan, check_choices, prepare
from governance.storage.item_decisions import item_fates, plan_item_views
from governance.storage.plans import PlanKey, latest_plan

__all__ = ["checked_items", "with_fates"]


async def checked_items(
    resources: GatewayResources,
    workflow_id: str,
    task_public_id: str,
    decision: str,
    items: Sequence[ItemDecisionIn],
) -> ItemDecisions | None:
    """The approval's per-item decisions checked against the current plan and prepared; None without any."""
    if not items:
        return None
    choices = [ItemChoice(i.index, i.decision, i.reason, i.title, i.content) for i in items]
    async with resources.engine.connect() as conn:
        header = await latest_plan(conn, workflow_id)
        if header is None or header.plan_total is None:
            raise Conflict(f"the promotion of task {task_public_id!r} has no complete plan yet")
        check_choices(
            choices,
            header.plan_total,
            approving=decision == "approve",
            texts_given=True,
            max_content_bytes=resources.settings.max_entry_bytes,
        )
        key = PlanKey(header.workflow_id, header.run_id)
        views = await plan_item_views(conn, key, [c.index for c in choices])
    check_against_plan(choices, views)
    return ItemDecisions(key, [prepare(c, views[c.index]) for c in choices])


def _diff(ops: Any) -> list[DiffOpPublic] | None:
    if not ops:
        return None
    return [DiffOpPublic(op=str(o.get("op", "")), text=str(o.get("text", ""))) for o in ops]


async def with_fates(
    resources: GatewayResources, key: PlanKey, entries: list[PlanEntryPublic]
) -> list[PlanEntryPublic]:
    """`entries` with each item's fate: published, edited (with the diff) or rejected by the approver."""
    if not entries:
        return entries
    async with resources.engine.connect() as conn:
        fates = await item_fates(conn, key, [e.index for e in entries])
    shown: list[PlanEntryPublic] = []
    for entry in entries:
        fate = fates.get(entry.index)
        if fate is None:
            shown.append(entry)
            continue
        update: dict[str, Any] = {"published_memory_id": fate.memory_id}
        if fate.decision == "reject":
            update |= {"fate": "rejected_by_approver", "approver_reason": fate.reason}
        elif fate.decision == "edit":
            diff = fate.diff or {}
            update |= {
                "fate": "edited",
                "approver_reason": fate.reason or None,
                "original_title": fate.original_title,
                "original_content": fate.original_content,
                "edit_diff": _diff(diff.get("content")),
                "edit_title_diff": _diff(diff.get("title")),
            }
        elif fate.memory_id is not None:
            update["fate"] = "published"
        shown.append(entry.model_copy(update=update))
    return shown
