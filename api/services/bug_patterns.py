"""Matching an error against the bug patterns a task's reader may see.

The caller needs `read` on the task, and only the scopes the policy lets it read are searched (as for
search), so another tenant's patterns never match. Patterns with the error's signature come first, then the
nearest by embedding over `LOREGATE_BUG_MATCH_MIN_SIMILARITY`; each lists its solutions best first, each
with who stands behind it (governance/guidance.py `fix_standing`).
"""

from __future__ import annotations

import logging

from api.schemas.learning import BugMatchIn, BugMatchPublic, BugPatternPublic, SolutionPublic
from api.services.gateway import GatewayResources, admit, readable_scope_keys
from governance.adapters.embedders import EMBEDDING_TENANT, embed_query_async, make_embedder
from governance.bug_signature import error_signature, ranked_solutions
from governance.guidance import fix_standing, own_fixes
from governance.identity import Principal
from governance.storage.bug_patterns import BugPatternMatch, match_bug_patterns
from governance.storage.trust import standings_of
from governance.trust import Standing

__all__ = ["match"]

_log = logging.getLogger(__name__)
_DEFAULT_K = 5


async def match(resources: GatewayResources, principal: Principal, body: BugMatchIn) -> BugMatchPublic:
    """Bug patterns matching the error, the same signature first, best solutions first."""
    keys = await readable_scope_keys(resources, principal, body.task_id)
    admit(resources, principal, "search")  # it embeds the error text, as a search embeds its query
    EMBEDDING_TENANT.set(principal.org)
    signature = error_signature(body.error, body.stack)
    vector: list[float] | None = None
    try:
        vector = [float(x) for x in await embed_query_async(make_embedder(resources.settings), body.error)]
    except Exception:  # an unreachable embedding endpoint: the signature still matches
        _log.warning("error embedding failed; matching by signature only", exc_info=True)
    async with resources.engine.connect() as conn:
        found = await match_bug_patterns(
            conn,
            scope_keys=keys,
            signature=signature,
            embedding=vector,
            min_similarity=resources.settings.bug_match_min_similarity,
            k=body.k or _DEFAULT_K,
        )
        standings = await standings_of(conn, [m.id for m in found])
    unreviewed = Standing.UNREVIEWED
    patterns = [_public(m, standings[m.id].standing if m.id in standings else unreviewed) for m in found]
    return BugMatchPublic(error_type=signature.error_type, signature=signature.text, patterns=patterns)


def _public(m: BugPatternMatch, held: Standing) -> BugPatternPublic:
    """A matched pattern as the API shows it, each fix with who stands behind it (its text read once)."""
    named = own_fixes(m.content)
    return BugPatternPublic(
        **{name: getattr(m, name) for name in BugPatternPublic.model_fields if name != "solutions"},
        solutions=[
            SolutionPublic(
                solution=s.solution,
                successes=s.successes,
                attempts=s.attempts,
                success_rate=round(s.success_rate, 3),
                standing=fix_standing(s, named, held).standing.value,
            )
            for s in ranked_solutions(m.solutions)
        ],
    )
