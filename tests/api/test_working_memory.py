"""A task's working memory, recall by code location and the short-term context, through the real gateway.

Entries are appended over HTTP as an agent would; published memories of earlier tasks are inserted as the
gate would have left them (tests/utils/memory_factories.py), each pointing at the task it came from.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from api.services.export_file import parse_export
from governance.scopes import ActorType, Scope
from tests.utils.factories import Actor, make_actor, new_tenant
from tests.utils.memory_factories import TaskRef, add_memory
from tests.utils.promotion_gateway import open_task
from tests.utils.tenancy import task_key_of

TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "/home/dev/repo/src/app/db.py", line 12, in connect\n'
    "    import psycopg2\n"
    "ModuleNotFoundError: No module named 'psycopg2'"
)


@pytest.fixture
async def crew(engine: AsyncEngine) -> dict[str, Actor]:
    org, project = new_tenant()
    return {
        "orchestrator": await make_actor(engine, ActorType.ORCHESTRATOR, org, project),
        "agent": await make_actor(engine, ActorType.AGENT, org, project),
        "outsider": await make_actor(engine, ActorType.AGENT, *new_tenant()),
    }


async def _task(
    http: httpx.AsyncClient, crew: dict[str, Actor], description: str = "fix the db login"
) -> str:
    return await open_task(http, crew["orchestrator"], description)


async def _append(http: httpx.AsyncClient, actor: Actor, task_id: str, *entries: dict[str, Any]) -> list[int]:
    done = await http.post(
        f"/v1/tasks/{task_id}/entries", headers=actor.headers, json={"entries": list(entries)}
    )
    assert done.status_code == 201, done.text
    return [e["id"] for e in done.json()["entries"]]


async def test_working_memory_reads_back_files_buffers_and_counts_in_one_call(
    gateway_url: str, crew: dict[str, Actor]
) -> None:
    async with httpx.AsyncClient(base_url=gateway_url, timeout=60) as http:
        task_id = await _task(http, crew)
        agent = crew["agent"]
        errors = [
            {"kind": "error", "content": f"AssertionError: case {i} failed at tests/test_db.py:{i}"}
            for i in range(12)
        ]
        await _append(http, agent, task_id, *errors)
        await _append(
            http,
            agent,
            task_id,
            {"kind": "error", "content": TRACEBACK},
            {
                "kind": "tool_output",
                "content": "Edit src/app/db.py",
                "payload": {"tool": "Edit", "files": ["src/app/db.py"]},
            },
            {
                "kind": "decision",
                "content": "Use psycopg 3 in `Pool.connect()`",
                "payload": {"symbols": ["Pool.connect"]},
            },
        )
        got = await http.get(f"/v1/tasks/{task_id}/working-memory", headers=agent.headers)
        assert got.status_code == 200, got.text
        memory = got.json()
    assert len(memory["recent_errors"]) == 10  # bounded: 13 errors staged
    assert memory["recent_errors"][0]["content"] == TRACEBACK  # newest first
    assert [d["content"] for d in memory["recent_decisions"]] == ["Use psycopg 3 in `Pool.connect()`"]
    assert [t["content"] for t in memory["recent_tool_calls"]] == ["Edit src/app/db.py"]
    files = {f["value"]: f for f in memory["files"]}
    # the stack frame's absolute path and the payload's relative one are both kept as written
    assert files["src/app/db.py"]["touches"] == 1 and files["src/app/db.py"]["error_touches"] == 0
    assert files["/home/dev/repo/src/app/db.py"]["error_touches"] == 1
    assert files["tests/test_db.py"]["touches"] == 12
    assert {"connect", "Pool.connect"} <= {s["value"] for s in memory["symbols"]}
    stats = memory["statistics"]
    assert stats["entries"] == 15 and stats["by_kind"] == {"decision": 1, "error": 13, "tool_output": 1}
    assert stats["tool_calls"] == 1 and stats["files"] == 3


async def test_working_memory_hypothesis_at_090_becomes_one_decision_entry(
    gateway_url: str, crew: dict[str, Actor]
) -> None:
    async with httpx.AsyncClient(base_url=gateway_url, timeout=60) as http:
        task_id = await _task(http, crew)
        agent = crew["agent"]
        [evidence] = await _append(http, agent, task_id, {"kind": "error", "content": TRACEBACK})
        body = {
            "hypotheses": [
                {"text": "psycopg2 is missing from the image", "confidence": 0.6, "evidence_ids": [evidence]},
                {"text": "the pool size is too small", "confidence": 0.2},
            ],
            "files": ["./src/app/db.py", "src/app/db.py"],
            "symbols": ["connect"],
        }
        first = await http.post(f"/v1/tasks/{task_id}/working-memory", headers=agent.headers, json=body)
        assert first.status_code == 200, first.text
        assert all(h["decision_entry_id"] is None for h in first.json()["hypotheses"])
        assert [f["value"] for f in first.json()["files"] if f["tracked"]] == ["src/app/db.py"]
        firm = {"hypotheses": [{"text": "psycopg2  is missing from the image", "confidence": 0.95}]}
        for _ in range(2):  # the same call again decides nothing more
            answer = await http.post(f"/v1/tasks/{task_id}/working-memory", headers=agent.headers, json=firm)
            assert answer.status_code == 200, answer.text
        entries = (await http.get(f"/v1/tasks/{task_id}/entries", headers=agent.headers)).json()["entries"]
    decisions = [e for e in entries if e["kind"] == "decision"]
    assert len(decisions) == 1
    assert decisions[0]["content"].startswith(
        "psycopg2 is missing from the image (hypothesis held at confidence 0.95"
    )
    assert decisions[0]["payload"]["evidence_ids"] == [evidence]
    top = answer.json()["hypotheses"][0]
    assert top["confidence"] == 0.95 and top["decision_entry_id"] == decisions[0]["id"]
    assert top["evidence_ids"] == [evidence]  # the evidence stays with the same hypothesis
    assert answer.json()["statistics"]["decided_hypotheses"] == 1


async def test_working_memory_refuses_bad_input_and_other_tenants(
    gateway_url: str, crew: dict[str, Actor]
) -> None:
    async with httpx.AsyncClient(base_url=gateway_url, timeout=60) as http:
        task_id = await _task(http, crew)
        other_task = await _task(http, crew, "another task")
        agent = crew["agent"]
        [foreign] = await _append(http, agent, other_task, {"kind": "log", "content": "elsewhere"})
        url = f"/v1/tasks/{task_id}/working-memory"
        bad_evidence = {"hypotheses": [{"text": "x", "confidence": 0.95, "evidence_ids": [foreign]}]}
        refused = await http.post(url, headers=agent.headers, json=bad_evidence)
        assert refused.status_code == 422 and str(foreign) in refused.json()["detail"]
        for body in (
            {"files": ["src/\x00.py"]},
            {"files": [" \t"]},
            {"hypotheses": [{"text": "x", "confidence": 1.5}]},
            {"symbols": ["   "]},
            {"hypotheses": [{"text": "x", "confidence": 0.5, "evidence_ids": [2**63]}]},
        ):
            answer = await http.post(url, headers=agent.headers, json=body)
            assert answer.status_code == 422, (body, answer.text)
        after = await http.get(url, headers=agent.headers)
        assert after.json()["hypotheses"] == [] and after.json()["files"] == []  # nothing half-written
        outsider = crew["outsider"]
        assert (await http.get(url, headers=outsider.headers)).status_code == 404
        assert (await http.post(url, headers=outsider.headers, json={"files": ["a.py"]})).status_code == 404
        history = await http.get(
            "/v1/files/history", headers=outsider.headers, params={"path": "a.py", "task_id": task_id}
        )
        assert history.status_code == 404


async def _earlier_work(
    http: httpx.AsyncClient, engine: AsyncEngine, crew: dict[str, Actor]
) -> dict[str, dict[str, str]]:
    """Two earlier tasks with a published episode each: one touched httpx/_client.py and failed, the other
    worked on the docs; plus a bug pattern naming the file in its text."""
    agent, o = crew["agent"], crew["orchestrator"]
    ref = {"org": o.principal.org, "project": o.principal.project, "worktree": "main"}
    touched = await _task(http, crew, "retry on connection reset")
    await _append(
        http,
        agent,
        touched,
        {
            "kind": "tool_output",
            "content": "Edit",
            "payload": {"tool": "Edit", "files": ["httpx/_client.py"]},
        },
        {"kind": "error", "content": "ConnectionResetError raised in httpx/_client.py:812"},
    )
    docs = await _task(http, crew, "document timeouts")
    await _append(
        http,
        agent,
        docs,
        {"kind": "tool_output", "content": "Edit docs/timeouts.md", "payload": {"tool": "Edit"}},
    )
    published: dict[str, tuple[str, str, str, str, bool | None]] = {
        "failed": (
            touched,
            "Retry on reset",
            "Tried retrying the request on a reset connection; the suite kept failing.",
            "episode",
            False,
        ),
        "documented": (
            docs,
            "Timeout docs",
            "Documented connection timeouts and the reset behaviour of the pool.",
            "episode",
            True,
        ),
        "pattern": (
            docs,
            "Pool closed early",
            "PoolTimeout in httpx/_client.py when the pool closed early; fix: keep the client open.",
            "bug_pattern",
            None,
        ),
    }
    async with engine.begin() as conn:
        return {
            name: await add_memory(
                conn,
                TaskRef(task_id=task_key_of(task_id), **ref),
                title=title,
                content=content,
                embedding=None,
                memory_type=memory_type,
                scope=Scope.PROJECT,
                success=success,
            )
            for name, (task_id, title, content, memory_type, success) in published.items()
        }


async def test_file_history_answers_what_happened_around_a_file_newest_first(
    gateway_url: str, engine: AsyncEngine, crew: dict[str, Actor]
) -> None:
    async with httpx.AsyncClient(base_url=gateway_url, timeout=60) as http:
        known = await _earlier_work(http, engine, crew)
        reader = await _task(http, crew, "touch the client again")
        answer = await http.get(
            "/v1/files/history",
            headers=crew["agent"].headers,
            params={"path": "/work/checkout/httpx/_client.py", "task_id": reader},
        )
        assert answer.status_code == 200, answer.text
        items = answer.json()["items"]
        bad = await http.get(
            "/v1/files/history",
            headers=crew["agent"].headers,
            params={"path": "  ", "task_id": reader},
        )
    assert bad.status_code == 422
    assert [i["citation"] for i in items] == [known["pattern"]["citation"], known["failed"]["citation"]]
    assert [i["via"] for i in items] == ["text", "task"]
    assert items[1]["success"] is False and items[1]["touches"] == 2


async def test_search_files_boost_and_filter_by_the_tasks_that_touched_them(
    gateway_url: str, engine: AsyncEngine, crew: dict[str, Actor]
) -> None:
    async with httpx.AsyncClient(base_url=gateway_url, timeout=60) as http:
        known = await _earlier_work(http, engine, crew)
        reader = await _task(http, crew, "touch the client again")
        headers = crew["agent"].headers
        query = {"query": "connection reset timeouts pool", "task_id": reader, "types": ["episode"]}
        plain = (await http.post("/v1/search", headers=headers, json=query)).json()["results"]
        boosted = (
            await http.post("/v1/search", headers=headers, json={**query, "files": ["httpx/_client.py"]})
        ).json()
        only = await http.post(
            "/v1/search", headers=headers, json={**query, "files": ["httpx/_client.py"], "code_filter": True}
        )
        lonely = await http.post("/v1/search", headers=headers, json={**query, "code_filter": True})
    assert plain[0]["citation"] == known["documented"]["citation"]  # the words match the docs episode best
    assert boosted["results"][0]["citation"] == known["failed"]["citation"]
    assert [r["citation"] for r in only.json()["results"]] == [known["failed"]["citation"]]
    assert lonely.status_code == 422


async def test_context_ends_with_the_tasks_own_short_term_section_within_budget(
    gateway_url: str, crew: dict[str, Actor]
) -> None:
    async with httpx.AsyncClient(base_url=gateway_url, timeout=60) as http:
        task_id = await _task(http, crew)
        agent = crew["agent"]
        await _append(
            http,
            agent,
            task_id,
            {"kind": "error", "content": TRACEBACK},
            {"kind": "approach", "content": "pin psycopg2-binary in requirements.txt"},
            {
                "kind": "tool_output",
                "content": "ran pip",
                "payload": {"tool": "Bash", "command": "pip install psycopg2"},
            },
            {"kind": "decision", "content": "move the login service to psycopg 3"},
            {"kind": "error", "content": TRACEBACK.replace("line 12", "line 14")},
        )
        asked = {"query": "database driver", "task_id": task_id, "max_tokens": 400}
        answer = await http.post("/v1/context", headers=agent.headers, json=asked)
        assert answer.status_code == 200, answer.text
        without = await http.post("/v1/context", headers=agent.headers, json={**asked, "short_term": False})
        tiny = await http.post("/v1/context", headers=agent.headers, json={**asked, "max_tokens": 60})
    block = answer.json()
    text = block["context"]
    assert block["tokens"] <= 400 and text.endswith("[/MEMORY CONTEXT]")
    section = text[text.index("### This task so far") :]
    assert "error again (seq 5): ModuleNotFoundError: No module named 'psycopg2'" in section
    assert "happened earlier in this task at seq 1" in section
    assert (
        "approach (seq 2) pin psycopg2-binary" in section and "tool (seq 3) pip install psycopg2" in section
    )
    assert "decision (seq 4): move the login service to psycopg 3" in section
    assert "This task so far" not in without.json()["context"]
    assert tiny.json()["tokens"] <= 60


async def test_export_with_staging_carries_each_tasks_working_memory(
    gateway_url: str, engine: AsyncEngine, crew: dict[str, Actor]
) -> None:
    async with httpx.AsyncClient(base_url=gateway_url, timeout=60) as http:
        known = await _earlier_work(http, engine, crew)
        o = crew["orchestrator"]
        scope = f"project:{o.principal.org}/{o.principal.project}"
        answer = await http.get(
            "/v1/exports", headers=o.headers, params={"scope_key": scope, "include": "staging"}
        )
        assert answer.status_code == 200, answer.text
    records = [json.loads(line) for line in answer.text.splitlines()]
    kept = [r for r in records if r["kind"] == "working_memory"]
    assert len(kept) == 2 and records[-1]["counts"]["working_memory"] == 2
    files = {f["value"] for r in kept for f in r["files"]}
    assert {"httpx/_client.py", "docs/timeouts.md"} <= files
    parsed = parse_export(answer.content)  # the import's own reader accepts it
    assert len(parsed.working_memory) == 2 and known["failed"]["citation"]


async def test_project_stats_counts_tasks_success_and_hotspots(
    gateway_url: str, engine: AsyncEngine, crew: dict[str, Actor]
) -> None:
    async with httpx.AsyncClient(base_url=gateway_url, timeout=60) as http:
        await _earlier_work(http, engine, crew)
        reader = await _task(http, crew, "look around")
        answer = await http.get(
            "/v1/projects/stats", headers=crew["agent"].headers, params={"task_id": reader}
        )
        assert answer.status_code == 200, answer.text
        hidden = await http.get(
            "/v1/projects/stats", headers=crew["outsider"].headers, params={"task_id": reader}
        )
    stats = answer.json()
    assert stats["tasks"] == 3 and stats["episodes"] == 2 and stats["success_rate"] == 0.5
    assert stats["hotspots"][0] == {
        "path": "httpx/_client.py",
        "tasks": 1,
        "failed_tasks": 1,
        "touches": 2,
        "error_touches": 1,
    }
    assert {f["path"] for f in stats["most_touched"]} == {"httpx/_client.py", "docs/timeouts.md"}
    assert hidden.status_code == 404


async def test_search_by_symbol_meets_its_methods_and_takes_any_name_literally(
    gateway_url: str, engine: AsyncEngine, crew: dict[str, Actor]
) -> None:
    o = crew["orchestrator"]
    async with httpx.AsyncClient(base_url=gateway_url, timeout=60) as http:
        task_id = await _task(http, crew, "pool work")
        decision = {"kind": "decision", "content": "open lazily", "payload": {"symbols": ["Pool.connect"]}}
        await _append(http, crew["agent"], task_id, decision)
        async with engine.begin() as conn:
            ref = TaskRef(
                task_id=task_key_of(task_id),
                org=o.principal.org,
                project=o.principal.project,
                worktree="main",
            )
            memory = await add_memory(
                conn,
                ref,
                title="Lazy pool",
                content="Open the pool lazily.",
                embedding=None,
                scope=Scope.PROJECT,
            )
        query = {"query": "pool", "task_id": task_id, "code_filter": True}
        found = await http.post("/v1/search", headers=o.headers, json={**query, "symbols": ["connect"]})
        odd = await http.post(
            "/v1/search", headers=o.headers, json={**query, "symbols": ["x\\", "50%_", "a_b"]}
        )
    assert [r["citation"] for r in found.json()["results"]] == [memory["citation"]]
    assert odd.status_code == 200 and odd.json()["results"] == []


async def test_project_stats_redact_a_secret_written_into_a_file_path(
    gateway_url: str, crew: dict[str, Actor]
) -> None:
    """A path is folded from one task's staging and tracked files; the project's readers see it redacted."""
    secret = "ghp_Xk3q9RmT7vLw2NpZ8sYb4HcJ6dFa1GeQ0uVi"
    async with httpx.AsyncClient(base_url=gateway_url, timeout=60) as http:
        writer = await _task(http, crew, "deploy the service")
        tracked = await http.post(
            f"/v1/tasks/{writer}/working-memory",
            headers=crew["agent"].headers,
            json={"files": [f"deploy/{secret}.env"]},
        )
        assert tracked.status_code == 200, tracked.text
        await _append(
            http, crew["agent"], writer, {"kind": "error", "content": f"FileNotFoundError: keys/{secret}.pem"}
        )
        reader = await _task(http, crew, "look around")
        answer = await http.get(
            "/v1/projects/stats", headers=crew["agent"].headers, params={"task_id": reader}
        )
    assert answer.status_code == 200, answer.text
    assert secret not in answer.text
    paths = {f["path"] for f in answer.json()["most_touched"]}
    assert any(p.endswith("[REDACTED].env") for p in paths), paths


async def test_working_memory_refusals_name_the_item_and_say_what_to_send(
    gateway_url: str, crew: dict[str, Actor]
) -> None:
    """Each refusal names the field and item it is about and says what is wanted, in words: a blank file
    was "files and symbols must not be blank" (which?), a NUL the regex `^[^\\x00]*$`, a blank path the
    whole white-space class spelt out, and foreign evidence named the task by its internal key."""
    async with httpx.AsyncClient(base_url=gateway_url, timeout=60) as http:
        task_id = await _task(http, crew)
        other_task = await _task(http, crew, "another task")
        agent = crew["agent"]
        [foreign] = await _append(http, agent, other_task, {"kind": "log", "content": "elsewhere"})
        [mine] = await _append(http, agent, task_id, {"kind": "log", "content": "here"})
        url = f"/v1/tasks/{task_id}/working-memory"
        cases = [
            ({"files": ["a.py", " \t"]}, "files.1: give a file path, not white space"),
            ({"symbols": ["   "]}, "symbols.0: give a name, not white space"),
            (
                {"files": ["src/\x00.py"]},
                "files.0: should not contain a NUL character (U+0000 cannot be stored)",
            ),
            (
                {
                    "hypotheses": [
                        {"text": "a", "confidence": 0.5, "evidence_ids": [mine]},
                        {"text": "b", "confidence": 0.5, "evidence_ids": [mine, foreign]},
                    ]
                },
                f"hypotheses.1.evidence_ids: {foreign} is not a staging entry of task '{task_id}'",
            ),
        ]
        for body, detail in cases:
            answer = await http.post(url, headers=agent.headers, json=body)
            assert (answer.status_code, answer.json()["detail"]) == (422, detail), body
        blank = await http.get(
            "/v1/files/history", headers=agent.headers, params={"path": " ", "task_id": task_id}
        )
        after = await http.get(url, headers=agent.headers)
    assert (blank.status_code, blank.json()["detail"]) == (
        422,
        "query.path: should hold something besides white space, and no NUL character",
    )
    assert after.json()["hypotheses"] == [] and after.json()["files"] == [] and after.json()["symbols"] == []
