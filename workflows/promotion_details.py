"""What a promotion shows of itself in the Temporal UI: its current details and its plan preview.

The workflow's current details (Markdown, refreshed at every step) hold states, counts and ids: the
verification, the plan's items by type, decision and target id, the quarantined items, how to decide and
who decided. Titles, contents and the critique stay in loregate's database, where the console, the CLI
and the API serve them (docs/privacy.md). Pure functions of the workflow's state, so deterministic.
"""

from __future__ import annotations

from dataclasses import replace

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from governance.staging import public_task_id
    from workflows.promotion_contract import NearbyMemory, PlanEntry, PromotionState, PromotionStatus

from workflows.approval import how_to_decide

__all__ = ["current_details", "preview_entry"]


def preview_entry(i: PlanEntry) -> PlanEntry:
    """A plan item of the preview as the workflow keeps it: ids, kinds and numbers only (an older history's
    preview texts are not shown again)."""
    return replace(
        i,
        title="",
        content="",
        canonical_key=None,
        reason="",
        target_title=None,
        nearest=[NearbyMemory(n.memory_id, n.citation, "", n.similarity) for n in i.nearest],
    )


def _what_it_changes(entry: PlanEntry) -> str:
    """What a plan item replaces or merges into, or its nearest memories: by id, never by title."""
    if entry.decision in ("supersede", "duplicate") and entry.target_id:
        verb = "replaces" if entry.decision == "supersede" else "merges into"
        similarity = f", similarity {entry.similarity:.2f}" if entry.similarity is not None else ""
        trust = f", trust {entry.target_trust:.2f}" if entry.target_trust is not None else ""
        approver = ", no approval recorded"
        if entry.target_approved_by:
            approver = f", approved by `{entry.target_approved_by}`"
        return f" — {verb} `{entry.target_id}`{similarity}{trust}{approver}"
    if entry.decision == "new" and entry.nearest:
        near = ", ".join(f"`mem:{n.citation}` {n.similarity:.2f}" for n in entry.nearest)
        return f" — nearest: {near}"
    return ""


def current_details(
    status: PromotionStatus, decisions: dict[str, int] | None = None, console: str = ""
) -> str:
    """The current details: states, counts and ids; the texts are read in loregate (the link says where)."""
    task = public_task_id(status.task_id)  # the id its tenant names it by (the workflow carries its key)
    lines = [
        f"**Promotion of task `{task}` into {status.target_scope} scope** — `{status.state}`",
        "",
    ]
    if status.verification is not None:
        outcome = "success" if status.verification.success else "failure"
        lines.append(f"Verification: {status.verification.source} ({outcome})")
    where = f"[the console]({console}/promotions/{task}), " if console else "the console, "
    if status.plan_total:
        counts = ", ".join(f"{n} {kind}" for kind, n in sorted((decisions or {}).items()))
        # a list, not a table: the Temporal UI renders Markdown tables without cell spacing
        lines += ["", f"**Plan** ({status.plan_total} memories{': ' + counts if counts else ''}):", ""]
        for n, entry in enumerate(status.plan, start=1):
            lines.append(f"{n}. {entry.memory_type}, {entry.decision}{_what_it_changes(entry)}")
        if status.plan_total > len(status.plan):
            lines += ["", f"… and {status.plan_total - len(status.plan)} more."]
    if status.quarantined_total:
        lines += [
            "",
            f"**Quarantined** ({status.quarantined_total}: instructions aimed at agents, a human decides):",
            "",
        ]
        lines += [f"- item {q.index + 1}: {q.reason}" for q in status.quarantined]
    if status.plan_total or status.state == PromotionState.AWAITING_APPROVAL:
        lines += [
            "",
            "Titles, contents, the critique and each change's word diff are in loregate, not in this "
            "history: "
            f"{where}`loregate promotion {task}`, or `GET /v1/promotions/{task}/plan`.",
        ]
    if status.state == PromotionState.AWAITING_APPROVAL:
        lines += [
            "",
            how_to_decide(f"loregate approval-token {task}", f"loregate approve {task}"),
            "",
            'Some items only: add `"items": [{"index": <n - 1>, "decision": "reject", "reason": "..."}, '
            '{"index": <n - 1>, "decision": "edit", "content": "..."}]` to an approval (item n above is '
            f"index n - 1), or `loregate approve {task} --reject-item N:REASON --edit-item N=TEXT`; the "
            "rest publish as planned.",
        ]
    if status.refusals:
        lines += ["", f"Refused approvals: {len(status.refusals)} (last: {status.refusals[-1].reason})"]
    if status.decided_by:
        lines += ["", f"Decided by: {status.decided_by}"]
    if status.published_total:
        lines += ["", f"Published: {status.published_total} memories"]
    return "\n".join(lines)
