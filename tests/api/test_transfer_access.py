"""Export and import through the real gateway: who may take what, bad files, and erased content.

Memories and staging are inserted with the factories (no Temporal needed); the promotion-driven round trips
live in test_transfer_roundtrip.py.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.scopes import ActorType, Scope
from governance.storage.identity import revoke_key
from governance.transfer import file_digest, import_task_id
from tests.utils.factories import Actor, make_actor, new_tenant
from tests.utils.memory_factories import add_entries, add_memory, new_task

NDJSON = {"Content-Type": "application/x-ndjson"}


@pytest.fixture(scope="module")
async def world(engine: AsyncEngine) -> dict[str, Any]:
    """One org with projects p1 and p2: a p1 task whose staging produced a project and an org memory."""
    org, p1 = new_tenant()
    p2 = f"p2-{uuid.uuid4().hex[:6]}"
    actors = {
        "human": await make_actor(engine, ActorType.HUMAN, org, p1),
        "orchestrator": await make_actor(engine, ActorType.ORCHESTRATOR, org, p1),
        "agent": await make_actor(engine, ActorType.AGENT, org, p1),
        "other_agent": await make_actor(engine, ActorType.AGENT, org, p2),
        "outsider": await make_actor(engine, ActorType.HUMAN, *new_tenant()),
        "admin": await make_actor(engine, ActorType.HUMAN, "default", None, is_admin=True),
    }
    async with engine.begin() as conn:
        task = await new_task(conn, org=org, project=p1)
        sources = await add_entries(conn, task, ["db.driver: psycopg 3, <private>pw hunter2</private>"])
        project_memory = await add_memory(
            conn,
            task,
            title="Database driver",
            content="db.driver: psycopg 3",
            canonical_key="db.driver",
            embedding=None,
            source_entry_ids=sources,
        )
        org_memory = await add_memory(
            conn,
            task,
            title="Release train",
            content="Releases leave every Tuesday",
            scope=Scope.ORG,
            embedding=None,
            source_entry_ids=sources,
        )
    return {
        "org": org,
        "p1": p1,
        "p2": p2,
        "task": task,
        "actors": actors,
        "project_memory": project_memory,
        "org_memory": org_memory,
        "project_key": f"project:{org}/{p1}",
        "org_key": f"org:{org}",
    }


def _records(response: httpx.Response) -> list[dict[str, Any]]:
    return [json.loads(line) for line in response.text.splitlines() if line.strip()]


async def _export(
    client: httpx.AsyncClient, actor: Actor, scope_key: str, *, staging: bool = False
) -> httpx.Response:
    params: dict[str, Any] = {"scope_key": scope_key}
    if staging:
        params["include"] = "staging"
    return await client.get("/v1/exports", headers=actor.headers, params=params)


@pytest.fixture
async def client(gateway_url: str) -> Any:
    async with httpx.AsyncClient(base_url=gateway_url, timeout=60) as http:
        yield http


async def test_export_is_typed_json_lines_with_header_and_trailer(
    client: httpx.AsyncClient, world: dict[str, Any]
) -> None:
    answer = await _export(client, world["actors"]["human"], world["project_key"], staging=True)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("application/x-ndjson")
    records = _records(answer)
    header, trailer = records[0], records[-1]
    assert header["kind"] == "header" and header["version"] == 1 and header["format"] == "loregate-export"
    assert header["org"] == world["org"] and header["scope_key"] == world["project_key"]
    [memory] = [r for r in records if r["kind"] == "memory"]
    assert memory["id"] == world["project_memory"]["id"] and memory["canonical_key"] == "db.driver"
    assert "embedding" not in memory
    # the human may read the task's staging: provenance as written, and the staging itself
    assert memory["provenance"][0]["redacted"] is False and "hunter2" in memory["provenance"][0]["content"]
    staging = [r for r in records if r["kind"] == "staging"]
    assert [s["task_id"] for s in staging] == [world["task"].task_id]
    assert trailer == {"kind": "trailer", "counts": {"memory": 1, "event": 0, "staging": 1}}


async def test_export_staging_refused_to_who_may_not_read_it(
    client: httpx.AsyncClient, world: dict[str, Any]
) -> None:
    # an agent of p2 may read the org's memories, not the staging of p1's task they came from
    reader = world["actors"]["other_agent"]
    refused = await _export(client, reader, world["org_key"], staging=True)
    assert refused.status_code == 403, refused.text
    assert "may not read the staging of 1 of the 1 tasks" in refused.json()["detail"]
    assert "hunter2" not in refused.text
    allowed = await _export(client, reader, world["org_key"])
    assert allowed.status_code == 200, allowed.text
    [memory] = [r for r in _records(allowed) if r["kind"] == "memory"]
    [source] = memory["provenance"]
    assert (
        source["redacted"] is True
        and "hunter2" not in allowed.text
        and "staging" not in {r["kind"] for r in _records(allowed)}
    )


async def test_export_of_another_tenant_or_bad_scope_or_revoked_key(
    client: httpx.AsyncClient, world: dict[str, Any], engine: AsyncEngine
) -> None:
    outsider = world["actors"]["outsider"]
    hidden = await _export(client, outsider, world["project_key"])
    assert hidden.status_code == 404 and hidden.json()["error"] == "not_found"
    other_project = await _export(client, world["actors"]["other_agent"], world["project_key"])
    assert other_project.status_code == 404
    bad = await _export(client, world["actors"]["human"], "planet:earth")
    assert bad.status_code == 422 and "scope_key" in bad.text
    revoked = await make_actor(engine, ActorType.HUMAN, world["org"], world["p1"])
    async with engine.begin() as conn:
        await revoke_key(conn, revoked.key.split("_")[1])
    gone = await _export(client, revoked, world["project_key"])
    assert gone.status_code == 401


async def _export_file(client: httpx.AsyncClient, world: dict[str, Any]) -> bytes:
    answer = await _export(client, world["actors"]["human"], world["project_key"])
    assert answer.status_code == 200, answer.text
    return answer.content


async def test_restore_is_for_admins_only(client: httpx.AsyncClient, world: dict[str, Any]) -> None:
    data = await _export_file(client, world)
    for who in ("agent", "human", "orchestrator"):
        refused = await client.post(
            "/v1/restores",
            content=data,
            headers={**world["actors"][who].headers, **NDJSON},
        )
        assert refused.status_code == 403, (who, refused.text)
    # the admin's restore of what is already there changes nothing and says so
    admin = world["actors"]["admin"]
    again = await client.post("/v1/restores", content=data, headers={**admin.headers, **NDJSON})
    assert again.status_code == 200, again.text
    body = again.json()
    assert body["created"] == {"memory": 0, "event": 0} and body["unchanged"] == {"memory": 1, "event": 0}
    assert body["receipt_event_id"] is not None
    # the receipt is in the audit trail of the scope's readers, with the file's hash and no content
    events = await client.get(
        "/v1/events", headers=world["actors"]["human"].headers, params={"type": "RESTORED", "limit": 200}
    )
    [receipt] = [e for e in events.json()["events"] if e["id"] == body["receipt_event_id"]]
    assert receipt["payload"]["file_sha256"] == file_digest(data) and "psycopg" not in json.dumps(receipt)
    outsider = await client.get(
        "/v1/events", headers=world["actors"]["outsider"].headers, params={"type": "RESTORED", "limit": 200}
    )
    assert body["receipt_event_id"] not in [e["id"] for e in outsider.json()["events"]]


async def test_restore_of_a_conflicting_row_changes_nothing(
    client: httpx.AsyncClient, world: dict[str, Any]
) -> None:
    lines = (await _export_file(client, world)).decode().splitlines()
    memory = json.loads(lines[1])
    memory["title"] = "Database driver (edited elsewhere)"
    lines[1] = json.dumps(memory)
    admin = world["actors"]["admin"]
    answer = await client.post(
        "/v1/restores",
        content="\n".join(lines).encode(),
        headers={**admin.headers, **NDJSON},
    )
    assert answer.status_code == 409, answer.text
    assert answer.json()["detail"].startswith(f"line 2: memory {memory['id']}") and "title" in answer.text
    shown = await client.get(f"/v1/memories/{memory['id']}", headers=world["actors"]["human"].headers)
    assert shown.json()["memory"]["title"] == "Database driver"


async def test_gate_import_refused_to_agents_and_outsiders(
    client: httpx.AsyncClient, world: dict[str, Any]
) -> None:
    data = await _export_file(client, world)
    target = {"scope_key": world["project_key"], "verified": "tests_passed"}
    agent = await client.post(
        "/v1/imports", params=target, content=data, headers={**world["actors"]["agent"].headers, **NDJSON}
    )
    assert agent.status_code == 403, agent.text
    outsider = await client.post(
        "/v1/imports", params=target, content=data, headers={**world["actors"]["outsider"].headers, **NDJSON}
    )
    assert outsider.status_code == 404, outsider.text
    # neither left an import task behind
    task_id = import_task_id(file_digest(data), world["project_key"])
    task = await client.get(f"/v1/tasks/{task_id}", headers=world["actors"]["human"].headers)
    assert task.status_code == 404


def _bad_files(good: bytes, world: dict[str, Any]) -> list[tuple[str, bytes, str]]:
    lines = good.decode().splitlines()
    header, memory = json.loads(lines[0]), json.loads(lines[1])
    newer = {**header, "version": 99}
    no_content = {k: v for k, v in memory.items() if k != "content"}
    return [
        ("not json", "\n".join([lines[0], "{not json"] + lines[1:]).encode(), "line 2: not JSON"),
        ("too deep", ("[" * 5000 + "]" * 5000).encode(), "line 1: JSON nested too deeply"),
        ("binary", b"\x89PNG\r\n\x1a\n\x00\x00", "line 1:"),
        ("version", "\n".join([json.dumps(newer)] + lines[1:]).encode(), "line 1: export version 99"),
        (
            "malformed",
            "\n".join([lines[0], json.dumps(no_content)] + lines[2:]).encode(),
            "line 2: malformed memory",
        ),
        (
            "unknown kind",
            "\n".join([lines[0], '{"kind": "secret"}'] + lines[1:]).encode(),
            "line 2: unknown record",
        ),
        ("cut short", "\n".join(lines[:-1]).encode(), "without its trailer line"),
        ("empty", b"", "the file is empty"),
    ]


@pytest.mark.parametrize("path", ["/v1/imports", "/v1/restores"])
async def test_bad_files_are_refused_naming_the_line(
    client: httpx.AsyncClient, world: dict[str, Any], path: str
) -> None:
    good = await _export_file(client, world)
    restore = path == "/v1/restores"
    who = world["actors"]["admin" if restore else "human"]
    params = {} if restore else {"scope_key": world["project_key"]}
    for name, data, expected in _bad_files(good, world):
        answer = await client.post(path, params=params, content=data, headers={**who.headers, **NDJSON})
        assert answer.status_code == 422, (name, answer.text)
        assert expected in answer.json()["detail"], (name, answer.text)
        # nothing was written: no import task, and the scope's memories are as they were
        task = await client.get(
            f"/v1/tasks/{import_task_id(file_digest(data), world['project_key'])}",
            headers=world["actors"]["human"].headers,
        )
        assert task.status_code == 404, name
    assert (await _export_file(client, world)).count(b'"kind":"memory"') == good.count(b'"kind":"memory"')


async def test_gate_import_of_another_orgs_file_is_refused(
    client: httpx.AsyncClient, world: dict[str, Any], engine: AsyncEngine
) -> None:
    outsider = world["actors"]["outsider"]
    async with engine.begin() as conn:
        task = await new_task(conn, org=outsider.principal.org, project=outsider.principal.project)
        await add_memory(conn, task, title="Theirs", content="their fact", embedding=None)
    theirs = await _export(client, outsider, task.key(Scope.PROJECT))
    assert theirs.status_code == 200
    answer = await client.post(
        "/v1/imports",
        params={"scope_key": world["project_key"]},
        content=theirs.content,
        headers={**world["actors"]["human"].headers, **NDJSON},
    )
    assert answer.status_code == 422 and f"export of org {outsider.principal.org!r}" in answer.text


async def test_erased_subject_is_absent_from_exports(
    client: httpx.AsyncClient, world: dict[str, Any], engine: AsyncEngine
) -> None:
    human = world["actors"]["human"]
    marker = f"zx-{uuid.uuid4().hex[:12]}"
    async with engine.begin() as conn:
        task = await new_task(conn, org=world["org"], project=world["p1"])
        sources = await add_entries(conn, task, [f"The bastion host is {marker}"])
        await add_memory(
            conn,
            task,
            title="Bastion",
            content=f"Deploys go through {marker}",
            embedding=None,
            source_entry_ids=sources,
        )
    before = await _export(client, human, world["project_key"], staging=True)
    assert marker in before.text
    erased = await client.post(
        "/v1/erasures",
        headers=human.headers,
        json={"subject": marker, "org": world["org"], "project": world["p1"]},
    )
    assert erased.status_code == 200, erased.text
    after = await _export(client, human, world["project_key"], staging=True)
    assert after.status_code == 200 and marker not in after.text
    # what was not erased is still exported
    assert world["project_memory"]["id"] in after.text


async def test_export_files_may_exceed_the_request_limit(
    client: httpx.AsyncClient, world: dict[str, Any]
) -> None:
    # an export file is checked whole, so its limit is LOREGATE_MAX_IMPORT_BYTES, not the 8 MiB of a request
    big = b'{"kind": "header", "format": "not-loregate"}\n' + b" " * (9 * 1024 * 1024)
    admin = world["actors"]["admin"]
    answer = await client.post("/v1/restores", content=big, headers={**admin.headers, **NDJSON})
    assert answer.status_code == 422 and "not a loregate export" in answer.json()["detail"]
    entries = await client.post(
        f"/v1/tasks/{world['task'].task_id}/entries", content=big, headers={**admin.headers, **NDJSON}
    )
    assert entries.status_code == 413


async def test_restore_of_a_second_head_for_a_canonical_key_is_a_conflict(
    client: httpx.AsyncClient, world: dict[str, Any]
) -> None:
    # the same fact under another id: it would be a second active memory about `db.driver` in the scope
    lines = (await _export_file(client, world)).decode().splitlines()
    header = json.loads(lines[0])
    [memory] = [json.loads(line) for line in lines if '"canonical_key":"db.driver"' in line]
    twin = {**memory, "id": str(uuid.uuid4()), "citation": uuid.uuid4().hex[:10], "provenance": []}
    trailer = {"kind": "trailer", "counts": {"memory": 1, "event": 0, "staging": 0}}
    data = "\n".join(json.dumps(r) for r in (header, twin, trailer)).encode()
    admin = world["actors"]["admin"]
    answer = await client.post("/v1/restores", content=data, headers={**admin.headers, **NDJSON})
    assert answer.status_code == 409, answer.text
    detail = answer.json()["detail"]
    assert detail.startswith("line 2: ") and "second active memory about 'db.driver'" in detail, detail
    gone = await client.get(f"/v1/memories/{twin['id']}", headers=world["actors"]["human"].headers)
    assert gone.status_code == 404


async def test_restore_with_a_revoked_admin_key_is_401(
    client: httpx.AsyncClient, world: dict[str, Any], engine: AsyncEngine
) -> None:
    data = await _export_file(client, world)
    admin = await make_actor(engine, ActorType.HUMAN, "default", None, is_admin=True)
    async with engine.begin() as conn:
        await revoke_key(conn, admin.key.split("_")[1])
    answer = await client.post("/v1/restores", content=data, headers={**admin.headers, **NDJSON})
    assert answer.status_code == 401
