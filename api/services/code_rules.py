"""Code rules that learn: observations move their confidence (EMA, governance/trust.py); weak ones are offered
for retirement.

An observation needs a caller who may read the rule (else NotFound, as for any memory) and is an
orchestrator or a human; only a human reports `rejected_by_human` (`trust.rule_observer_refusal`). The
candidates list holds the code rules of the caller's tenant below 0.3 that the policy lets it read; a human
retires one with `POST /v1/memories/{id}/retire`.
"""

from __future__ import annotations

from api.schemas.learning import CodeRulePublic, ObservationIn, ObservationPublic, RuleCandidatesPublic
from api.services.gateway import GatewayResources, authorize_memory, judged_project
from governance.errors import PolicyDenied
from governance.identity import Principal
from governance.storage.code_rules import observe_rule, retirement_candidates
from governance.storage.memory_changes import memory_tenant
from governance.trust import is_established_rule, is_retirement_candidate, rule_observer_refusal

__all__ = ["observe", "candidates"]


async def observe(
    state: GatewayResources, principal: Principal, ref: str, body: ObservationIn
) -> ObservationPublic:
    """One observation of a code rule: its confidence moves one EMA step (α 0.2) towards the outcome."""
    async with state.engine.connect() as conn:
        memory = await memory_tenant(conn, ref)
    authorize_memory(
        state, principal, ref, org=memory.org, project=memory.project, scope=memory.scope, action="read"
    )
    refusal = rule_observer_refusal(principal.actor_type, body.outcome, admin=principal.is_admin)
    if refusal is not None:
        raise PolicyDenied(refusal)
    async with state.engine.begin() as conn:
        before, after = await observe_rule(
            conn,
            memory.id,
            body.outcome,
            actor_id=principal.id,
            actor_type=principal.actor_type.value,
            note=body.note,
        )
    return ObservationPublic(
        id=memory.id,
        citation=memory.citation,
        outcome=body.outcome,
        confidence_before=before,
        confidence=after,
        established=is_established_rule(after),
        retirement_candidate=is_retirement_candidate(after),
    )


async def candidates(state: GatewayResources, principal: Principal) -> RuleCandidatesPublic:
    """Code rules below 0.3 of the caller's tenant that it may read, weakest first."""
    async with state.engine.connect() as conn:
        rows = await retirement_candidates(conn, org=principal.org, project=principal.project)
    return RuleCandidatesPublic(
        rules=[
            CodeRulePublic(
                id=r.id,
                citation=r.citation,
                scope=r.scope,
                scope_key=r.scope_key,
                title=r.title,
                content=r.content,
                confidence=r.confidence,
                updated_at=r.updated_at,
            )
            for r in rows
            if state.authorizer.allowed(
                principal,
                org=r.org,
                project=judged_project(principal, r.org, r.project),
                scope=r.scope,
                action="read",
            )
        ]
    )
