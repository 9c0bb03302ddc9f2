"""Every method of `api.client` answers with the response model it declares, the one its route declares.

Against a real gateway on loopback, the Temporal dev server and a worker running the real activities, each
method of the blocking and the asyncio client is called once in a user's order (open a task, write, promote,
approve, read, learn, change, keep true, erase) and its answer's type is checked. The declared models are
also checked against the routes' `response_model`, and the models' JSON against the gateway's own.
"""

from __future__ import annotations

import asyncio
import inspect
import re
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from typing import Any, Literal

import httpx
import pytest
from pydantic import BaseModel
from sqlalchemy.ext.asyncio import AsyncEngine

from api.client import AsyncLoregateClient, Entry, LoregateClient, _Api
from api.client.transport import Endpoint, Pages, Request
from api.http.app import create_app
from api.schemas.search import MemoryDetailPublic, MemoryPublic
from governance.config import Settings
from governance.scopes import ActorType, Scope
from governance.storage.knowledge import compute_snapshot, save_snapshot
from governance.storage.retrieval import get_memory
from tests.utils.factories import Actor, make_actor
from tests.utils.memory_factories import TaskRef, add_entries, add_memory, new_task

Flavour = Literal["blocking", "asyncio"]

DECLARED: dict[str, Endpoint[Any, Any] | Pages[Any, Any, Any]] = {
    name: attr for name, attr in vars(_Api).items() if isinstance(attr, Endpoint | Pages)
}


def _sample(build: Any) -> Request:
    """The request a method builds from plain sample values of its required parameters."""
    args: dict[str, Any] = {}
    for param in list(inspect.signature(build).parameters.values())[1:]:
        if param.default is inspect.Parameter.empty:
            kind = str(param.annotation)
            args[param.name] = [Entry("log", "x")] if "Entry" in kind else 1 if kind == "int" else "abc123"
    request: Request = build(None, **args)
    return request


def _answer_schema(spec: dict[str, Any], request: Request) -> str:
    """The name of the model the gateway's OpenAPI document gives for `request`'s success answer."""
    served = []
    for path, operations in spec["paths"].items():
        pattern = re.sub(r"\{[^}]+\}", "[^/]+", path)
        if re.fullmatch(pattern, request.path) and request.method.lower() in operations:
            served.append((path.count("{"), operations[request.method.lower()]))
    assert served, f"no route serves {request.method} {request.path}"
    operation = min(served, key=lambda found: found[0])[1]  # a literal path wins over a template
    status = next(code for code in operation["responses"] if code.startswith("2"))
    ref: str = operation["responses"][status]["content"]["application/json"]["schema"]["$ref"]
    return ref.rsplit("/", 1)[1]


def test_client_declares_the_response_model_of_each_route() -> None:
    spec = create_app(Settings()).openapi()
    for name, declared in DECLARED.items():
        assert _answer_schema(spec, _sample(declared.build)) == declared.model.__name__, name
    assert {"memory", "search", "entries", "promotion_plan_all", "erase"} <= set(DECLARED)


class Calls:
    """Calls client methods in one flavour as a given actor, checking and recording each answer's type."""

    def __init__(self, flavour: Flavour, url: str) -> None:
        self.flavour, self.url = flavour, url
        self.called: set[str] = set()

    async def __call__(self, actor: Actor, name: str, *args: Any, **kwargs: Any) -> Any:
        if self.flavour == "blocking":

            def run() -> Any:  # off the event loop the gateway's test server shares
                with LoregateClient(self.url, actor.key) as client:
                    answer = getattr(client, name)(*args, **kwargs)
                    return list(answer) if isinstance(answer, Iterator) else answer

            answer = await asyncio.to_thread(run)
        else:
            async with AsyncLoregateClient(self.url, actor.key) as client:
                called = getattr(client, name)(*args, **kwargs)
                answer = [i async for i in called] if isinstance(called, AsyncIterator) else await called
        declared = DECLARED[name]
        if isinstance(declared, Pages):
            assert answer and all(type(item) is declared.item for item in answer), (name, answer)
        else:
            assert type(answer) is declared.model, (name, type(answer))
        self.called.add(name)
        return answer

    async def until(self, actor: Actor, name: str, ref: str, state: str) -> Any:
        """Read `name(ref)` until its state is `state`."""
        for _ in range(450):
            answer = await self(actor, name, ref)
            if answer.state == state:
                return answer
            await asyncio.sleep(0.2)
        raise AssertionError(f"{name}({ref}) never reached {state}: {answer}")


async def _fact(engine: AsyncEngine, task: TaskRef, content: str, **columns: Any) -> dict[str, str]:
    """A published project memory of the task's tenant."""
    async with engine.begin() as conn:
        return await add_memory(conn, task, title=content[:40], content=content, embedding=None, **columns)


async def _propose(http: httpx.AsyncClient, actor: Actor, memory_id: str, operation: str) -> str:
    """A supersede or retire of a validated memory by a non-approver: a change request's id."""
    body = (
        {"content": "db.driver: asyncpg", "reason": "pool"} if operation == "supersede" else {"reason": "old"}
    )
    response = await http.post(f"/v1/memories/{memory_id}/{operation}", headers=actor.headers, json=body)
    assert response.status_code == 202, response.text
    request_id: str = response.json()["id"]
    return request_id


@pytest.mark.parametrize("flavour", ["blocking", "asyncio"])
async def test_each_client_method_returns_its_declared_model(
    flavour: Flavour, gateway: str, http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    call = Calls(flavour, gateway)
    orchestrator, agent, human = team["orchestrator"], team["agent"], team["human"]
    org, project = orchestrator.principal.org, str(orchestrator.principal.project)

    assert (await call(agent, "health")).database == "ok"

    # staging and circular-fix detection
    opened = await call(orchestrator, "open_task", org=org, project=project, worktree="main", description="x")
    task_id = opened.task_id
    assert (await call(agent, "task", task_id)).task_id == task_id
    decision = Entry("decision", "db.driver: psycopg 3 with the async API", payload={"key": "db.driver"})
    acked = await call(
        agent, "append", task_id, [decision, Entry("result", "Switched to psycopg; tests pass.")]
    )
    assert [e.seq for e in acked.entries] == [1, 2]
    assert [e.seq for e in await call(agent, "entries", task_id, page_size=1)] == [1, 2]
    tried = await call(agent, "record_approach", task_id, "pin psycopg2", "failed", reason="no wheels")
    assert tried.failures == 1
    checked = await call(agent, "check_approach", task_id, "pin psycopg2")
    assert not checked.valid and [h.approach for h in checked.history] == ["pin psycopg2"]

    # the promotion gate: verify and approve one task, reject another
    assert (await call(orchestrator, "start_promotion", task_id, "project")).created
    await call(orchestrator, "verify", task_id, "tests_passed")
    waiting = await call.until(human, "promotion", task_id, "awaiting_approval")
    assert waiting.plan_total >= 1
    assert (await call(human, "promotion_plan", task_id, 0, 1)).total == waiting.plan_total
    plan = await call(human, "promotion_plan_all", task_id, page_size=1)
    assert [e.index for e in plan] == list(range(waiting.plan_total))
    pending = await call(human, "promotions", state="awaiting_approval")
    assert task_id in [p.task_id for p in pending.promotions]
    token = await call(human, "approval_token", task_id)  # what a Temporal UI signal would carry
    assert token.principal == human.principal.id and token.token in token.signal_input
    assert (await call(human, "approve", task_id, "right")).accepted
    done = await call.until(human, "promotion", task_id, "published")
    fact_id = next(m.citation for m in done.published if m.memory_type == "fact")
    other = await call(orchestrator, "open_task", org=org, project=project, worktree="main", description="y")
    await call(agent, "append", other.task_id, Entry("decision", "cache.ttl: 30 s"))
    await call(orchestrator, "start_promotion", other.task_id, "project", {"source": "tests_passed"})
    await call.until(human, "promotion", other.task_id, "awaiting_approval")
    assert (await call(human, "reject", other.task_id, "no")).decision == "reject"
    listed = await call(human, "task_promotions", task_id)
    assert [(p.number, p.outcome) for p in listed.promotions] == [(1, "published")]
    assert (await call(orchestrator, "close_task", other.task_id)).closed == "closed"

    # the read path and trust
    found = await call(agent, "search", "which database driver", task_id=task_id, k=5)
    assert fact_id in [r.citation for r in found.results]
    block = await call(agent, "context", "which database driver", task_id=task_id, max_tokens=400)
    assert block.citations and f"[mem:{block.citations[0]}]" in block.context
    shown = await call(agent, "memory", f"mem:{fact_id}")
    assert shown.memory.citation == fact_id and [p.seq for p in shown.provenance] == [1]
    # a task's working memory and a file's history
    kept = await call(agent, "update_working_memory", task_id, files=["src/db.py"], symbols=["connect"])
    assert [f.value for f in kept.files if f.tracked] == ["src/db.py"]
    assert (await call(agent, "working_memory", task_id)).statistics.files >= 1
    assert (await call(agent, "file_history", "src/db.py", task_id=task_id)).path == "src/db.py"
    assert (await call(agent, "project_stats", task_id=task_id)).tasks >= 1
    async with engine.begin() as conn:  # what the scheduled ProjectKnowledgeWorkflow stores
        snapshot = await compute_snapshot(conn, org=org, project=project, limit=5)
        await save_snapshot(conn, org=org, project=project, snapshot=snapshot)
    assert (await call(agent, "project_knowledge", project)).project == project
    # the approver and the author are involved: trust comes from others (docs/trust.md)
    reviewer = await make_actor(engine, ActorType.HUMAN, org, project)
    reader = await make_actor(engine, ActorType.AGENT, org, project)
    assert (await call(reviewer, "validate", fact_id, "pr_merged")).counted
    assert (await call(reader, "feedback", fact_id, True)).usefulness > 0.5
    # which tasks used it (docs/retrieval.md): the reader's own task, independent of the fact
    cited = await call(reader, "cite", task_id, [f"mem:{fact_id}"])
    assert [(c.citation, c.independent) for c in cited.counted] == [(fact_id, True)]
    assert [t.task_id for t in (await call(reader, "used_by", fact_id)).tasks] == [task_id]
    assert fact_id in [m.citation for m in (await call(reader, "most_used", task_id, limit=5)).results]

    # memory that learns
    matched = await call(agent, "match_bug_pattern", "ImportError: no module named psycopg2", task_id=task_id)
    assert matched.error_type == "ImportError"
    task = TaskRef(task_id, org, project, "main")
    rule = await _fact(engine, task, "Use psycopg 3 for async I/O", memory_type="code_rule", confidence=0.25)
    observer = await make_actor(engine, ActorType.ORCHESTRATOR, org, project)
    assert (await call(observer, "observe_rule", rule["citation"], "violated")).retirement_candidate
    candidates = await call(orchestrator, "rule_candidates")
    assert rule["citation"] in [r.citation for r in candidates.rules]
    patch = "--- a/db.py\n+++ b/db.py\n@@ -1 +1,3 @@\n def connect(url):\n"
    patch += "+    if url is None:\n+        return None\n"
    proposed = await call(orchestrator, "code_rules_from_patch", patch)  # into a task opened for it
    assert proposed.opened and "guard-clause" in {p.category for p in proposed.proposals}
    assert (await call(human, "correct", proposed.task_id, "Prefer psycopg 3")).tasks_seen == 1

    # reflection: the project's episodes into insights, through the gate
    started = await call(human, "start_reflection")
    assert (started.org, started.project) == (org, project)
    for _ in range(100):  # the workflow's first activity records it
        listed_reflections = (await call(human, "reflections")).reflections
        if listed_reflections:
            break
        await asyncio.sleep(0.1)
    assert [r.workflow_id for r in listed_reflections] == [started.workflow_id]

    # change requests to validated memory
    validated = {"confidence": 1.0, "validation_source": "human_approved", "canonical_key": "db.pool"}
    fact = await _fact(engine, task, "db.pool: psycopg_pool", **validated)
    approved_id = await _propose(http, orchestrator, fact["id"], "supersede")
    rejected_id = await _propose(http, orchestrator, rule["id"], "retire")
    listed = await call(human, "change_requests", state="awaiting_approval")
    assert {approved_id, rejected_id} <= {r.id for r in listed.change_requests}
    assert (await call(human, "change_request", approved_id)).old.id == fact["id"]
    assert (await call(human, "change_approval_token", approved_id)).workflow_id.endswith(approved_id)
    assert (await call(human, "approve_change", approved_id)).accepted
    assert (await call(human, "reject_change", rejected_id, "keep it")).accepted
    batch = await call(human, "decide_batch", "reject", change_requests=[rejected_id], note="again")
    assert [(i.id, i.error) for i in batch.items] == [(rejected_id, "conflict")]  # decided already
    local = await _fact(engine, task, "worktree: run the linters before pushing", scope=Scope.WORKTREE)
    lifted = await call(human, "lift_memories", [f"mem:{local['citation']}"], "project", reason="everywhere")
    assert lifted.state == "applied" and [i.citation for i in lifted.items] == [local["citation"]]

    # keeping memory true, the audit trail, erasure
    stale = await _fact(
        engine, task, "db.driver docs", stale_at=datetime.now(UTC), stale_reason="source changed"
    )
    assert stale["citation"] in [m.citation for m in (await call(human, "review")).memories]
    assert (await call(human, "confirm", stale["citation"], note="holds")).was_stale == "source changed"
    trail = await call(human, "memory_events", fact_id)
    assert {"PROMOTED", "FEEDBACK"} <= {e.type for e in trail.events}
    assert (await call(human, "events", limit=5)).events
    erased = await call(human, "erase", memory=stale["citation"], dry_run=True)
    assert erased.dry_run and [m.citation for m in erased.memories] == [stale["citation"]]

    # webhooks (an admin's; a literal public address needs no name resolution)
    admin = await make_actor(engine, ActorType.HUMAN, "default", None, is_admin=True)
    hook = await call(admin, "add_webhook", org=org, url="https://93.184.216.34/loregate")
    assert hook.secret.startswith("whsec_")
    assert [w.id for w in (await call(admin, "webhooks", org=org)).webhooks] == [hook.id]
    assert (await call(admin, "webhook_deliveries", hook.id)).deliveries == []
    assert (await call(admin, "remove_webhook", hook.id)).id == hook.id

    assert call.called == set(DECLARED), "every client method is called above"


async def test_client_models_dump_to_the_gateways_json(
    gateway_url: str, engine: AsyncEngine, team: dict[str, Actor]
) -> None:
    """Nothing the gateway sends is lost or changed by reading it as a model."""
    agent = team["agent"]
    async with engine.begin() as conn:
        task = await new_task(conn, org=agent.principal.org, project=str(agent.principal.project))
        sources = await add_entries(conn, task, ["retries hid the real 31 s timeout"])
    memory = await _fact(engine, task, "Webhook timeouts", source_entry_ids=sources)
    reads: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
        ("task", (task.task_id,), {}),
        ("memory", (memory["citation"],), {}),
        ("memory_events", (memory["citation"],), {}),
        ("review", (), {}),
        ("health", (), {}),
    ]
    async with (
        AsyncLoregateClient(gateway_url, agent.key) as client,
        httpx.AsyncClient(base_url=gateway_url, headers=agent.headers) as raw,
    ):
        for name, args, kwargs in reads:
            request = DECLARED[name].build(client, *args, **kwargs)
            sent = (await raw.request(request.method, request.path, params=request.params)).json()
            answer: BaseModel = await getattr(client, name)(*args, **kwargs)
            assert answer.model_dump(mode="json") == sent, name


async def test_memory_schema_names_every_stored_field(engine: AsyncEngine) -> None:
    """`GET /v1/memories/{id}` used to send the stored row as it was: its model keeps every column of it."""
    async with engine.begin() as conn:
        task = await new_task(conn)
        sources = await add_entries(conn, task, ["a source entry"])
        made = await add_memory(conn, task, title="t", content="c", embedding=None, source_entry_ids=sources)
        detail = await get_memory(conn, made["id"])
    assert set(detail.memory) == set(MemoryDetailPublic.model_fields)
    provenance = [{**entry, "redacted": False} for entry in detail.provenance]
    parsed = MemoryPublic.model_validate(
        {"memory": detail.memory, "provenance": provenance, "history": detail.history}
    )
    assert set(detail.provenance[0]) | {"redacted"} == set(parsed.provenance[0].model_fields_set)
    assert set(detail.history[0]) == set(parsed.history[0].model_fields_set)
