"""Truth tables of the default policy over the real model and the rows migration 0002 stores."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.errors import PolicyDenied
from governance.identity import Principal
from governance.scopes import ActorType, Scope
from governance.storage.identity import create_principal
from policy.enforcer import Authorizer, make_authorizer


@pytest.fixture(scope="module")
def authorizer(database_url: str) -> Authorizer:
    auth = make_authorizer(database_url)
    yield auth
    auth.close()


async def _principal(engine: AsyncEngine, actor: ActorType, org: str, project: str | None) -> Principal:
    async with engine.begin() as conn:
        return await create_principal(conn, name=f"{actor}-test", actor_type=actor, org=org, project=project)


WRITE_TABLE = {
    ActorType.AGENT: {Scope.TASK, Scope.WORKTREE},
    ActorType.ORCHESTRATOR: {Scope.TASK, Scope.WORKTREE, Scope.PROJECT},
    ActorType.HUMAN: {Scope.PROJECT, Scope.ORG},
    ActorType.SYSTEM: {Scope.ORG},
}


@pytest.mark.parametrize("actor", list(ActorType))
async def test_enforcer_write_permissions_follow_seed_003(
    engine: AsyncEngine, authorizer: Authorizer, actor: ActorType
) -> None:
    org = f"org-{uuid.uuid4().hex[:8]}"
    principal = await _principal(engine, actor, org, "api")
    authorizer.reload()
    for scope in Scope:
        allowed = authorizer.allowed(principal, org=org, project="api", scope=scope, action="write")
        assert allowed == (scope in WRITE_TABLE[actor]), (actor, scope)


async def test_enforcer_denies_other_tenant(engine: AsyncEngine, authorizer: Authorizer) -> None:
    org = f"org-{uuid.uuid4().hex[:8]}"
    human = await _principal(engine, ActorType.HUMAN, org, "api")
    authorizer.reload()
    assert authorizer.allowed(human, org=org, project="api", scope=Scope.PROJECT, action="approve")
    assert not authorizer.allowed(human, org=org, project="web", scope=Scope.PROJECT, action="approve")
    assert not authorizer.allowed(human, org="other", project="api", scope=Scope.PROJECT, action="read")
    with pytest.raises(PolicyDenied, match="may not read"):
        authorizer.check(human, org=org, project="web", scope=Scope.TASK, action="read")


async def test_enforcer_org_wide_principal_covers_every_project(
    engine: AsyncEngine, authorizer: Authorizer
) -> None:
    org = f"org-{uuid.uuid4().hex[:8]}"
    system = await _principal(engine, ActorType.SYSTEM, org, None)
    authorizer.reload()
    assert authorizer.allowed(system, org=org, project="any", scope=Scope.ORG, action="approve")
    assert not authorizer.allowed(system, org="elsewhere", project="any", scope=Scope.ORG, action="approve")


async def test_enforcer_validation_required_for_project_and_org(authorizer: Authorizer) -> None:
    assert [s for s in Scope if authorizer.requires_validation(s)] == [Scope.PROJECT, Scope.ORG]


async def test_enforcer_reloads_on_change_in_another_process_authorizer(
    engine: AsyncEngine, database_url: str
) -> None:
    org = f"org-{uuid.uuid4().hex[:8]}"
    first, second = make_authorizer(database_url), make_authorizer(database_url)
    try:
        agent = await _principal(engine, ActorType.AGENT, org, "api")
        for _ in range(50):  # the grant reaches both through NOTIFY
            if second.allowed(agent, org=org, project="api", scope=Scope.WORKTREE, action="write"):
                break
            await asyncio.sleep(0.1)
        assert second.allowed(agent, org=org, project="api", scope=Scope.WORKTREE, action="write")
        first.add_policy("agent", "worktree", "write", "deny")
        try:
            for _ in range(50):
                if not second.allowed(agent, org=org, project="api", scope=Scope.WORKTREE, action="write"):
                    break
                await asyncio.sleep(0.1)
            assert not second.allowed(agent, org=org, project="api", scope=Scope.WORKTREE, action="write")
        finally:
            first.remove_policy("agent", "worktree", "write", "deny")
    finally:
        first.close()
        second.close()


async def test_enforcer_cached_decisions_follow_policy_changes(
    engine: AsyncEngine, database_url: str
) -> None:
    auth = make_authorizer(database_url, watch=False)  # its own enforcer: the rule change stays local
    try:
        org = f"org-{uuid.uuid4().hex[:8]}"
        agent = await _principal(engine, ActorType.AGENT, org, "api")
        auth.reload()
        ask = {"org": org, "project": "api", "scope": Scope.TASK, "action": "write"}
        assert auth.allowed(agent, **ask) and auth.allowed(agent, **ask)  # the second answer is cached
        auth.add_policy("agent", "task", "write", "deny")
        try:
            assert not auth.allowed(agent, **ask)
        finally:
            auth.remove_policy("agent", "task", "write", "deny")
        assert auth.allowed(agent, **ask)
    finally:
        auth.close()


async def test_enforcer_allows_concurrent_first_requests_of_a_new_principal(
    engine: AsyncEngine, database_url: str
) -> None:
    """Sixteen requests of a principal created after the enforcer loaded, at once: none is a wrong 403.

    Before, the first one reloaded the policy and the others, rate-limited, said no without waiting for
    that reload (an orchestrator starting its agents saw intermittent 403s and 404s).
    """
    auth = make_authorizer(database_url, watch=False)  # no NOTIFY: only the forced reload can find it
    try:
        org = f"org-{uuid.uuid4().hex[:8]}"
        orchestrator = await _principal(engine, ActorType.ORCHESTRATOR, org, "api")

        def ask() -> bool:
            return auth.allowed(orchestrator, org=org, project="api", scope=Scope.TASK, action="open")

        answers = await asyncio.gather(*(asyncio.to_thread(ask) for _ in range(16)))
        assert answers == [True] * 16
        assert not auth.allowed(orchestrator, org=org, project="api", scope=Scope.ORG, action="write")
    finally:
        auth.close()


async def test_decisions_from_many_threads_at_once_never_crash_the_parser(
    engine: AsyncEngine, authorizer: Authorizer
) -> None:
    """CPython 3.11's parser is not safe across threads, and Casbin parses its matcher on every evaluation:
    the console's threadpool and the event loop deciding at once raised "AST constructor recursion depth
    mismatch" and dropped the connection. Distinct requests, so none is answered from the cache."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    principal = await _principal(engine, ActorType.ORCHESTRATOR, f"org-{uuid.uuid4().hex[:8]}", "p")
    start = threading.Barrier(8)

    def decide(n: int) -> int:
        start.wait()
        allowed = 0
        for i in range(150):
            allowed += authorizer.allowed(
                principal, org=principal.org, project=f"p{n}-{i}", scope=Scope.TASK, action="write"
            )
        return allowed

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(decide, range(8)))
    assert answers == [0] * 8  # another project's tasks: every one refused, none raised
