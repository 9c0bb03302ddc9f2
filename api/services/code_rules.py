"""Code rules that learn: observations move their confidence (EMA, governance/trust.py); weak ones are offered
for retirement.

An observation needs a caller who may write where the rule binds (at its scope; a human, who writes from
project scope up, also in the project of a task or worktree rule; else 403; NotFound, as for any memory,
when it may not even read it) and is an orchestrator or a human; only a human reports `rejected_by_human`
(`trust.rule_observer_refusal`). A principal involved in the rule (it wrote, published or superseded it) is
refused (403 `self_endorsement`). One observation counts per principal, rule and task (`task_id`, a task
of the rule's tenant the caller may read; none is one more task): a repeat answers `counted: false`. An
orchestrator reports on work it took part in (it opened the task, wrote in it or asked for its promotion;
else 403): naming other tasks does not multiply one principal's word. A human may name any task it may
read. The candidates list holds the code rules of the caller's tenant below 0.3 that the policy lets it
read; a human retires one with `POST /v1/memories/{id}/retire`.
"""

from __future__ import annotations

from api.schemas.learning import CodeRulePublic, ObservationIn, ObservationPublic, RuleCandidatesPublic
from api.services.gateway import (
    GatewayResources,
    authorize_memory,
    authorized_task,
    judged_project,
    readable,
)
from governance.errors import InvalidInput, PolicyDenied
from governance.identity import Principal
from governance.operations import trust
from governance.operations.trust import Endorser
from governance.scopes import ActorType, Scope
from governance.storage.code_rules import retirement_candidates
from governance.storage.memory_changes import MemoryTenant, memory_tenant
from governance.storage.trust import took_part_in
from governance.trust import is_established_rule, is_retirement_candidate, rule_observer_refusal
from policy.enforcer import Authorizer

__all__ = ["observe", "may_observe", "candidates"]


async def observe(
    resources: GatewayResources, principal: Principal, ref: str, body: ObservationIn
) -> ObservationPublic:
    """One observation of a code rule: its confidence moves one EMA step (α 0.2) towards the outcome.

    Counted once per (principal, rule, task); refused to principals involved in the rule (403
    `self_endorsement`) and to those who may not write at its scope (403).
    """
    async with resources.engine.connect() as conn:
        memory = await memory_tenant(conn, ref)
    authorize_memory(
        resources, principal, ref, org=memory.org, project=memory.project, scope=memory.scope, action="read"
    )
    if not may_observe(resources.authorizer, principal, memory):
        raise PolicyDenied(
            f"{principal.actor_type.value} {principal.id} may not write at the rule's {memory.scope} scope: "
            "observations of a rule come from those who work where it binds"
        )
    refusal = rule_observer_refusal(principal.actor_type, body.outcome, admin=principal.is_admin)
    if refusal is not None:
        raise PolicyDenied(refusal)
    task_id = body.task_id
    if task_id is not None:
        task = await authorized_task(resources, principal, task_id, "read")
        if task.org != memory.org or (memory.project is not None and task.project != memory.project):
            raise InvalidInput(
                f"task {task_id!r} is not a task of the rule's tenant: observe a rule in its own work"
            )
        if principal.actor_type is not ActorType.HUMAN and not principal.is_admin:
            async with resources.engine.connect() as conn:
                took_part = await took_part_in(conn, task.id, principal.id)
            if not took_part:
                raise PolicyDenied(
                    f"{principal.actor_type.value} {principal.id} took no part in task {task_id!r}: an "
                    "observation reports on work the observer opened, wrote in or promoted"
                )
        task_id = task.public_id  # one spelling per task of the rule's org, whichever the caller used
    seen = await trust.observe(
        resources.engine,
        memory.id,
        body.outcome,
        Endorser(principal.id, principal.actor_type.value),
        note=body.note,
        task_id=task_id,
    )
    return ObservationPublic(
        id=memory.id,
        citation=memory.citation,
        outcome=body.outcome,
        confidence_before=seen.before,
        confidence=seen.after,
        established=is_established_rule(seen.after),
        retirement_candidate=is_retirement_candidate(seen.after),
        counted=seen.counted,
    )


def may_observe(authorizer: Authorizer, principal: Principal, memory: MemoryTenant) -> bool:
    """Whether the caller may write where the rule binds: at its scope, or (a human, who writes from project
    scope up) in the project a task or worktree rule belongs to."""
    if authorizer.allowed(
        principal,
        org=memory.org,
        project=judged_project(principal, memory.org, memory.project),
        scope=memory.scope,
        action="write",
    ):
        return True
    return (
        principal.actor_type is ActorType.HUMAN
        and memory.project is not None
        and memory.scope in (Scope.TASK.value, Scope.WORKTREE.value)
        and authorizer.allowed(
            principal, org=memory.org, project=memory.project, scope=Scope.PROJECT, action="write"
        )
    )


async def candidates(resources: GatewayResources, principal: Principal) -> RuleCandidatesPublic:
    """Code rules below 0.3 of the caller's tenant that it may read, weakest first."""
    async with resources.engine.connect() as conn:
        rows = await retirement_candidates(conn, org=principal.org, project=principal.project)
    return RuleCandidatesPublic(
        rules=[
            CodeRulePublic.model_validate(r, from_attributes=True)
            for r in readable(resources, principal, rows)
        ]
    )
