"""`api.client` against the real gateway on loopback: the calls users' orchestrators make, and its errors."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any, Literal

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from api.client import (
    AsyncLoregateClient,
    ConflictError,
    Entry,
    InvalidInputError,
    LoregateClient,
    LoregateError,
    NotFoundError,
    PolicyDeniedError,
    ServerError,
    UnauthenticatedError,
    UnavailableError,
)
from api.schemas.search import CompactResultPublic, SearchResultPublic
from governance import errors as ge
from governance.identity import key_id_of
from governance.scopes import ActorType, Scope
from governance.storage.identity import revoke_key
from tests.utils.factories import Actor, make_actor, new_tenant
from tests.utils.gateway import free_port
from tests.utils.memory_factories import add_entries, add_memory, new_task
from tests.utils.not_the_gateway import not_the_gateway as serving_not_the_gateway


@pytest.fixture
async def team(engine: AsyncEngine) -> dict[str, Actor]:
    org, project = new_tenant()
    return {
        "orchestrator": await make_actor(engine, ActorType.ORCHESTRATOR, org, project),
        "agent": await make_actor(engine, ActorType.AGENT, org, project),
    }


def _open(url: str, orchestrator: Actor) -> str:
    with LoregateClient(url, orchestrator.key) as client:
        task = client.open_task(
            org=orchestrator.principal.org,
            project=str(orchestrator.principal.project),
            worktree="main",
            description="client test",
        )
    return task.task_id


def test_client_appends_single_and_batch_in_sequence(gateway_url: str, team: dict[str, Actor]) -> None:
    task_id = _open(gateway_url, team["orchestrator"])
    with LoregateClient(gateway_url, team["agent"].key) as client:
        one = client.append(task_id, Entry("decision", "use psycopg 3", payload={"why": "async"}))
        batch = client.append(task_id, [Entry("log", "ran tests"), {"kind": "result", "content": "green"}])
    assert [e.seq for e in one.entries] == [1]
    assert [e.seq for e in batch.entries] == [2, 3]


def test_client_retry_with_idempotency_key_replays(gateway_url: str, team: dict[str, Actor]) -> None:
    task_id = _open(gateway_url, team["orchestrator"])
    entry = Entry("decision", "pin numpy", idempotency_key=f"k-{uuid.uuid4().hex}")
    with LoregateClient(gateway_url, team["agent"].key) as client:
        first = client.append(task_id, entry).entries[0]
        again = client.append(task_id, entry).entries[0]
    assert not first.replayed and again == first.model_copy(update={"replayed": True})


def test_client_entries_iterates_every_page_in_order(gateway_url: str, team: dict[str, Actor]) -> None:
    task_id = _open(gateway_url, team["orchestrator"])
    with LoregateClient(gateway_url, team["agent"].key) as client:
        client.append(task_id, [Entry("log", f"step {i}") for i in range(5)])
        read = list(client.entries(task_id, page_size=2))
        tail = [e.seq for e in client.entries(task_id, after_seq=3, page_size=2)]
    assert [(e.seq, e.content) for e in read] == [(i + 1, f"step {i}") for i in range(5)]
    assert read[0].actor == team["agent"].principal.id
    assert tail == [4, 5]


def test_client_reads_configuration_from_environment(
    gateway_url: str, team: dict[str, Actor], monkeypatch: pytest.MonkeyPatch
) -> None:
    task_id = _open(gateway_url, team["orchestrator"])
    monkeypatch.setenv("LOREGATE_URL", gateway_url)
    monkeypatch.setenv("LOREGATE_API_KEY", team["agent"].key)
    with LoregateClient() as client:
        assert client.task(task_id).task_id == task_id


def test_client_unknown_task_raises_typed_not_found(gateway_url: str, team: dict[str, Actor]) -> None:
    with LoregateClient(gateway_url, team["agent"].key) as client, pytest.raises(NotFoundError) as caught:
        client.append("no-such-task", Entry("log", "x"))
    error = caught.value
    assert isinstance(error, ge.NotFound) and isinstance(error, LoregateError)
    assert (error.error, error.status_code) == ("not_found", 404)
    assert "no-such-task" in error.detail


def test_client_bad_key_raises_unauthenticated(gateway_url: str) -> None:
    with LoregateClient(gateway_url, "lg_000000000000_nope") as client, pytest.raises(UnauthenticatedError):
        client.task("anything")


def test_client_key_read_from_a_file_with_its_newline_still_works(
    gateway_url: str, team: dict[str, Actor]
) -> None:
    task_id = _open(gateway_url, team["orchestrator"])
    with LoregateClient(gateway_url, f"  {team['agent'].key}\n") as client:
        assert client.task(task_id).task_id == task_id


@pytest.mark.parametrize("inside", ["\n", " ", "\nX-Evil: 1\n", "\x00"])
async def test_client_malformed_key_is_refused_without_repeating_it(
    gateway_url: str, team: dict[str, Actor], inside: str
) -> None:
    key = team["agent"].key
    malformed = key[:20] + inside + key[20:]
    with LoregateClient(gateway_url, malformed) as client, pytest.raises(UnauthenticatedError) as caught:
        client.task("anything")
    async with AsyncLoregateClient(gateway_url, malformed) as aclient:
        with pytest.raises(UnauthenticatedError) as acaught:
            await aclient.task("anything")
    for error in (caught.value, acaught.value):
        assert error.error == "unauthenticated" and "malformed API key" in error.detail
        assert key[:20] not in error.detail and key[20:] not in error.detail


def test_client_other_tenant_raises_policy_denied(gateway_url: str, team: dict[str, Actor]) -> None:
    org, project = new_tenant()
    with LoregateClient(gateway_url, team["orchestrator"].key) as client, pytest.raises(PolicyDeniedError):
        client.open_task(org=org, project=project, worktree="main", description="not mine")


def test_client_key_reuse_with_new_body_raises_conflict(gateway_url: str, team: dict[str, Actor]) -> None:
    task_id = _open(gateway_url, team["orchestrator"])
    key = f"k-{uuid.uuid4().hex}"
    with LoregateClient(gateway_url, team["agent"].key) as client:
        client.append(task_id, Entry("log", "one", idempotency_key=key))
        with pytest.raises(ConflictError) as caught:
            client.append(task_id, Entry("log", "two", idempotency_key=key))
    assert caught.value.error == "conflict"


def test_client_schema_violation_raises_invalid_input(gateway_url: str, team: dict[str, Actor]) -> None:
    task_id = _open(gateway_url, team["orchestrator"])
    with LoregateClient(gateway_url, team["agent"].key) as client, pytest.raises(InvalidInputError) as caught:
        client.append(task_id, Entry("gossip", "not a kind"))
    assert (caught.value.error, caught.value.status_code) == ("validation_error", 422)


def test_client_unreachable_gateway_raises_unavailable() -> None:
    with LoregateClient(f"http://127.0.0.1:{free_port()}", "lg_x_y", timeout=2) as client:
        with pytest.raises(UnavailableError) as caught:
            client.task("anything")
    assert isinstance(caught.value, ge.Unavailable)


async def test_async_client_search_context_and_memory(
    engine: AsyncEngine, gateway_url: str, team: dict[str, Actor]
) -> None:
    agent = team["agent"]
    async with engine.begin() as conn:
        task = await new_task(conn, org=agent.principal.org, project=str(agent.principal.project))
        sources = await add_entries(conn, task, ["retries hid the real 31 s timeout"])
        memory: dict[str, Any] = await add_memory(
            conn,
            task,
            title="Webhook timeouts",
            scope=Scope.PROJECT,
            embedding=None,
            memory_type="bug_pattern",
            content="The payments webhook times out after 30 s; acknowledge first, process in a queue",
            source_entry_ids=sources,
        )
    async with AsyncLoregateClient(gateway_url, agent.key) as client:
        found = await client.search("payments webhook times out", task_id=task.task_id, k=3)
        compact = await client.search("payments webhook times out", task_id=task.task_id, compact=True)
        block = await client.context("payments webhook timeout", task_id=task.task_id, max_tokens=300)
        opened = await client.memory(f"mem:{memory['citation']}")
    assert [r.citation for r in found.results] == [memory["citation"]]
    assert isinstance(found.results[0], SearchResultPublic)
    assert isinstance(compact.results[0], CompactResultPublic)
    assert set(compact.model_dump()["results"][0]) == {"citation", "title", "type", "score"}
    assert f"[mem:{memory['citation']}]" in block.context and block.citations == [memory["citation"]]
    assert opened.memory.title == "Webhook timeouts" and opened.memory.memory_type == "bug_pattern"
    assert [p.id for p in opened.provenance] == sources and not opened.provenance[0].redacted
    assert [link.is_this for link in opened.history] == [True]


async def test_async_client_unknown_memory_raises_not_found(gateway_url: str, team: dict[str, Actor]) -> None:
    async with AsyncLoregateClient(gateway_url, team["agent"].key) as client:
        with pytest.raises(NotFoundError):
            await client.memory("mem:doesnotexist")


async def test_async_client_appends_and_pages(gateway_url: str, team: dict[str, Actor]) -> None:
    task_id = _open(gateway_url, team["orchestrator"])
    async with AsyncLoregateClient(gateway_url, team["agent"].key) as client:
        await client.append(task_id, [Entry("thought", "a"), Entry("thought", "b"), Entry("thought", "c")])
        read = [e.content async for e in client.entries(task_id, page_size=2)]
    assert read == ["a", "b", "c"]


# ---- refusals: each a typed exception carrying the gateway's problem (code, message, status) --------------
Flavour = Literal["blocking", "asyncio"]


async def _refusal(
    flavour: Flavour, url: str, key: str, name: str, *args: Any, **kwargs: Any
) -> LoregateError:
    """The exception the client of `flavour` raises for `name(*args, **kwargs)`."""
    if flavour == "blocking":

        def run() -> None:
            with LoregateClient(url, key) as client:
                getattr(client, name)(*args, **kwargs)

        call: Any = asyncio.to_thread(run)
    else:

        async def call_async() -> None:
            async with AsyncLoregateClient(url, key) as client:
                await getattr(client, name)(*args, **kwargs)

        call = call_async()
    with pytest.raises(LoregateError) as caught:
        await call
    return caught.value


@pytest.mark.parametrize("flavour", ["blocking", "asyncio"])
async def test_client_unknown_memory_raises_not_found_with_its_detail(
    flavour: Flavour, gateway_url: str, team: dict[str, Actor]
) -> None:
    error = await _refusal(flavour, gateway_url, team["agent"].key, "memory", "mem:doesnotexist")
    assert isinstance(error, NotFoundError) and isinstance(error, ge.NotFound)
    assert (error.error, error.status_code) == ("not_found", 404) and "doesnotexist" in error.detail


@pytest.mark.parametrize("flavour", ["blocking", "asyncio"])
async def test_client_agent_where_an_orchestrator_is_needed_raises_policy_denied(
    flavour: Flavour, gateway_url: str, team: dict[str, Actor]
) -> None:
    agent = team["agent"]
    org, project = agent.principal.org, str(agent.principal.project)
    error = await _refusal(
        flavour, gateway_url, agent.key, "open_task", org=org, project=project, worktree="w", description="d"
    )
    assert isinstance(error, PolicyDeniedError) and isinstance(error, ge.PolicyDenied)
    assert (error.error, error.status_code) == ("forbidden", 403) and agent.principal.id in error.detail


@pytest.mark.parametrize("flavour", ["blocking", "asyncio"])
async def test_client_out_of_range_option_raises_invalid_input_naming_it(
    flavour: Flavour, gateway_url: str, team: dict[str, Actor]
) -> None:
    task_id = _open(gateway_url, team["orchestrator"])
    error = await _refusal(
        flavour, gateway_url, team["agent"].key, "search", "anything", task_id=task_id, k=0
    )
    assert isinstance(error, InvalidInputError) and isinstance(error, ge.InvalidInput)
    assert (error.error, error.status_code) == ("validation_error", 422) and "k" in error.detail
    assert [problem["loc"] for problem in error.body["errors"]] == [["body", "k"]]  # the whole body is kept


@pytest.mark.parametrize("flavour", ["blocking", "asyncio"])
async def test_client_revoked_key_raises_unauthenticated(
    flavour: Flavour, gateway_url: str, engine: AsyncEngine, team: dict[str, Actor]
) -> None:
    agent = team["agent"]
    async with engine.begin() as conn:
        assert await revoke_key(conn, str(key_id_of(agent.key)))
    error = await _refusal(flavour, gateway_url, agent.key, "review")
    assert isinstance(error, UnauthenticatedError) and error.status_code == 401


@pytest.fixture
def not_the_gateway() -> Iterator[str]:
    with serving_not_the_gateway() as url:
        yield url


@pytest.mark.parametrize("flavour", ["blocking", "asyncio"])
async def test_client_answer_that_is_not_the_model_raises_server_error(
    flavour: Flavour, not_the_gateway: str
) -> None:
    error = await _refusal(flavour, not_the_gateway, "lg_x_y", "task", "t-1")
    assert type(error) is ServerError and error.error == "invalid_response" and error.status_code == 200
    assert "TaskPublic" in error.detail and "/v1/tasks/t-1" in error.detail
    proxied = await _refusal(flavour, not_the_gateway, "lg_x_y", "promotion_plan", "t-1")
    assert isinstance(proxied, UnavailableError) and proxied.status_code == 502
    assert (proxied.error, proxied.detail) == (
        "error",
        f"GET {not_the_gateway}/v1/promotions/t-1/plan answered 502 Bad Gateway with text/html, not "
        f"loregate's JSON: is {not_the_gateway} a loregate gateway (LOREGATE_URL), and no proxy in the way?",
    )


@pytest.mark.parametrize("flavour", ["blocking", "asyncio"])
async def test_client_html_answer_is_one_line_naming_the_url(flavour: Flavour, not_the_gateway: str) -> None:
    """A web server's page where the gateway should be: one line naming the URL and what came back, not
    pydantic's "Invalid JSON" report (several lines, the page's text in it) nor the page itself."""
    page = await _refusal(flavour, not_the_gateway, "lg_x_y", "memory", "abc123")
    assert type(page) is ServerError and page.error == "invalid_response" and page.status_code == 200
    assert page.detail == (
        f"GET {not_the_gateway}/v1/memories/abc123 answered 200 OK with text/html, not loregate's JSON: "
        f"is {not_the_gateway} a loregate gateway (LOREGATE_URL), and no proxy in the way?"
    )
    missing = await _refusal(
        flavour, not_the_gateway, "lg_x_y", "open_task", org="a", project="b", worktree="c", description="d"
    )
    assert isinstance(missing, NotFoundError) and "\n" not in missing.detail and "<h1>" not in missing.detail
    assert missing.detail.startswith(f"POST {not_the_gateway}/v1/tasks answered 404 Not Found with text/html")
