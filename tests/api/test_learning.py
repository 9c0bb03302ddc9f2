"""Memory that learns, through the real gateway, the Temporal dev server and a worker.

Two tasks meet the same error under different messages (line numbers, paths, names) and promote into one
bug pattern that counts both occurrences and the fix's successes; a third variant matches it; another
tenant matches nothing.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.scopes import ActorType, Scope
from tests.utils.factories import Actor, make_actor
from tests.utils.memory_factories import TaskRef, add_memory
from tests.utils.promotion_gateway import (
    approve_and_publish,
    open_task,
    stage,
    start_promotion,
    wait_promotion_state,
)
from tests.utils.tenancy import task_key_of

FIX = "Guard the lookup with dict.get and a default"
RETRY = "Retry the cache load once"


def _error(name: str, path: str, line: int) -> str:
    return (
        f'Traceback (most recent call last):\n  File "{path}", line {line}, in load\n'
        f"    return cache[key]\nKeyError: '{name}'"
    )


async def _open_task(http: httpx.AsyncClient, team: dict[str, Actor], description: str) -> str:
    return await open_task(http, team["orchestrator"], description)


async def _task_meeting(
    http: httpx.AsyncClient, team: dict[str, Actor], error: str, *, retried: str | None = None
) -> dict[str, Any]:
    task_id = await _open_task(http, team, "load the user cache")
    entries = [{"kind": "error", "content": error}, {"kind": "result", "content": FIX}]
    if retried is not None:  # a first fix that did not hold: the same error came back after it
        entries = [
            {"kind": "error", "content": error},
            {"kind": "decision", "content": RETRY},
            {"kind": "error", "content": retried},
            {"kind": "result", "content": FIX},
        ]
    await stage(http, team["agent"], task_id, entries)
    await start_promotion(http, team["orchestrator"], task_id, "worktree")
    done = await wait_promotion_state(http, team["human"].headers, task_id, "published")
    return {"task_id": task_id, "published": done["published"]}


async def _match(http: httpx.AsyncClient, actor: Actor, task_id: str, error: str) -> httpx.Response:
    return await http.post(
        "/v1/bug-patterns/match", headers=actor.headers, json={"task_id": task_id, "error": error}
    )


async def test_bug_patterns_same_error_varied_messages_merge_and_match(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    first = await _task_meeting(http, team, _error("user_42", "/app/src/cache.py", 42))
    second = await _task_meeting(
        http,
        team,
        _error("order_9", "/home/ci/build/7/cache.py", 108),
        retried=_error("order_10", "/home/ci/build/7/cache.py", 109),
    )
    [bug1] = [p for p in first["published"] if p["memory_type"] == "bug_pattern"]
    [bug2] = [p for p in second["published"] if p["memory_type"] == "bug_pattern"]
    assert bug1["memory_id"] == bug2["memory_id"], (bug1, bug2)

    reader = await _open_task(http, team, "a third task meets it again")
    third = _error("session_x1", "/srv/worker/cache.py", 3)
    answer = await _match(http, team["agent"], reader, third)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["error_type"] == "KeyError"
    top = body["patterns"][0]
    assert top["id"] == bug1["memory_id"] and top["same_signature"] is True
    assert top["occurrences"] == 2
    assert top["solutions"] == [
        {"solution": FIX, "successes": 2, "attempts": 2, "success_rate": 1.0, "standing": "unreviewed"},
        {"solution": RETRY, "successes": 0, "attempts": 1, "success_rate": 0.0, "standing": "unreviewed"},
    ]

    # published on its own task's evidence (trust 0.75 at most): no guidance yet, its line says unreviewed
    line = f"- try: {FIX} (for KeyError: <q>, 2/2 passed) [mem:{top['citation']}]"
    ask = {"task_id": reader, "query": "KeyError loading the user cache", "max_tokens": 2000}
    context = await http.post("/v1/context", headers=team["agent"].headers, json=ask)
    assert context.status_code == 200, context.text
    assert line not in context.json()["context"]
    assert f"[mem:{top['citation']}] (" in context.json()["context"]
    assert "unreviewed, trust 0.75" in context.json()["context"]
    # the agent that wrote it cannot vouch for it; two principals not involved in its tasks can
    own = await http.post(
        f"/v1/memories/{top['id']}/validate", headers=team["agent"].headers, json={"source": "tests_passed"}
    )
    assert own.status_code == 403 and own.json()["error"] == "self_endorsement", own.text
    org, project = team["agent"].principal.org, team["agent"].principal.project
    for kind, trust in [(ActorType.AGENT, 0.75), (ActorType.ORCHESTRATOR, 0.95)]:
        confirmer = await make_actor(engine, kind, org, project)
        confirmed = await http.post(
            f"/v1/memories/{top['id']}/validate", headers=confirmer.headers, json={"source": "tests_passed"}
        )
        assert confirmed.status_code == 200, confirmed.text
        assert confirmed.json()["confidence"] == pytest.approx(trust)
    # verified now: the block of a task about to meet it again says what to try, citing it
    context = await http.post("/v1/context", headers=team["agent"].headers, json=ask)
    assert f"{line} (verified, trust 0.95)" in context.json()["context"]

    outsider_task = await http.post(
        "/v1/tasks",
        headers=team["outsider"].headers,
        json={
            "org": team["outsider"].principal.org,
            "project": team["outsider"].principal.project,
            "worktree": "main",
            "description": "another tenant",
        },
    )
    assert outsider_task.status_code == 201, outsider_task.text
    elsewhere = await _match(http, team["outsider"], outsider_task.json()["task_id"], third)
    assert elsewhere.status_code == 200, elsewhere.text
    assert elsewhere.json()["patterns"] == []
    # the reader's task of another tenant is not theirs to read: no answer about it
    foreign = await _match(http, team["outsider"], reader, third)
    assert foreign.status_code in (403, 404)


async def test_bug_patterns_match_bad_input_is_422(http: httpx.AsyncClient, team: dict[str, Actor]) -> None:
    task_id = await _open_task(http, team, "bad input")
    for body in ({"task_id": task_id}, {"task_id": task_id, "error": ""}, {"error": "KeyError: 'x'"}):
        answer = await http.post("/v1/bug-patterns/match", headers=team["agent"].headers, json=body)
        assert answer.status_code == 422, (body, answer.text)


RULE = "Every outbound HTTP call from billing sets a timeout below 2 seconds."


async def _published_rule(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> dict[str, Any]:
    """An agent's rule as a worktree promotion on its own task's evidence would publish it (unreviewed, 0.75).

    Published here directly: through the gate, an agent's rule above task scope now waits for a human
    (tests/api/test_quarantine.py), and a human's approval would make it human-approved from the start.
    """
    task_id = await _open_task(http, team, "set billing timeouts")
    appended = await http.post(
        f"/v1/tasks/{task_id}/entries",
        headers=team["agent"].headers,
        json={"entries": [{"kind": "rule", "content": RULE}]},
    )
    assert appended.status_code == 201, appended.text
    principal = team["agent"].principal
    task = TaskRef(task_key_of(task_id), principal.org, str(principal.project), "main")
    async with engine.begin() as conn:
        rule = await add_memory(
            conn,
            task,
            title=RULE,
            content=RULE,
            embedding=None,
            memory_type="code_rule",
            scope=Scope.WORKTREE,
            confidence=0.75,
            source_entry_ids=[appended.json()["entries"][0]["id"]],
            validation_source="tests_passed",
        )
    return {"task_id": task_id, "memory_id": rule["id"], "citation": rule["citation"]}


async def _observe(
    http: httpx.AsyncClient, actor: Actor, memory_id: str, outcome: str, task_id: str | None = None
) -> httpx.Response:
    body = {"outcome": outcome} if task_id is None else {"outcome": outcome, "task_id": task_id}
    return await http.post(f"/v1/memories/{memory_id}/observations", headers=actor.headers, json=body)


async def _context(http: httpx.AsyncClient, team: dict[str, Actor], task_id: str) -> dict[str, Any]:
    answer = await http.post(
        "/v1/context",
        headers=team["agent"].headers,
        json={"task_id": task_id, "query": "refactor the invoice export", "max_tokens": 2000},
    )
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


async def test_code_rules_observations_move_confidence_by_ema(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    rule = await _published_rule(http, team, engine)
    rule_id, task_id = rule["memory_id"], rule["task_id"]
    expected = 0.75  # verified (0.6) + tests_passed (0.2), stopped at the unreviewed ceiling
    assert RULE not in (await _context(http, team, task_id))["context"]
    tasks = [await _open_task(http, team, f"work {i} under the rule") for i in range(6)]
    # the orchestrator that opened the rule's task is involved: its word on the rule does not count
    own = await _observe(http, team["orchestrator"], rule_id, "followed_passed", tasks[0])
    assert own.status_code == 403 and own.json()["error"] == "self_endorsement", own.text
    independent = await make_actor(
        engine, ActorType.ORCHESTRATOR, team["agent"].principal.org, team["agent"].principal.project
    )
    # an orchestrator reports on work it took part in: naming others' tasks does not multiply its word
    foreign = await _observe(http, independent, rule_id, "followed_passed", tasks[0])
    assert foreign.status_code == 403 and "took no part in task" in foreign.text, foreign.text
    theirs = [await open_task(http, independent, f"its own work {i} under the rule") for i in range(4)]
    # one non-human observer alone stops at the ceiling
    followed = await _observe(http, independent, rule_id, "followed_passed", theirs[0])
    assert followed.status_code == 200, followed.text
    assert followed.json()["confidence"] == pytest.approx(expected) and followed.json()["counted"] is True
    # a human's observations count, once per task
    for task, counted in [(tasks[1], True), (tasks[1], False), (tasks[2], True)]:
        followed = await _observe(http, team["human"], rule_id, "followed_passed", task)
        assert followed.status_code == 200, followed.text
        expected = 0.8 * expected + 0.2 if counted else expected
        assert followed.json()["counted"] is counted
        assert followed.json()["confidence"] == pytest.approx(expected)
    assert followed.json()["established"] is True
    # established and earned: in the context block whatever the query, with its standing
    context = (await _context(http, team, task_id))["context"]
    assert RULE in context and f"(verified, trust {expected:.2f})" in context

    for actor, outcome, task in [
        (independent, "violated", theirs[1]),
        (team["human"], "rejected_by_human", tasks[3]),
        (independent, "violated", theirs[2]),
        (independent, "violated", theirs[3]),
        (team["human"], "violated", tasks[4]),
        (team["human"], "violated", tasks[5]),
    ]:
        answer = await _observe(http, actor, rule_id, outcome, task)
        assert answer.status_code == 200, answer.text
        expected = 0.8 * expected
        assert answer.json()["confidence"] == pytest.approx(expected)
    assert expected < 0.3 and answer.json()["retirement_candidate"] is True
    assert RULE not in (await _context(http, team, task_id))["context"]

    listed = await http.get("/v1/code-rules/candidates", headers=team["human"].headers)
    assert listed.status_code == 200, listed.text
    assert [r["id"] for r in listed.json()["rules"]] == [rule_id]
    elsewhere = await http.get("/v1/code-rules/candidates", headers=team["outsider"].headers)
    assert elsewhere.json()["rules"] == []

    events = await http.get(f"/v1/memories/{rule_id}/events", headers=team["human"].headers)
    assert events.status_code == 200, events.text
    observed = [e for e in events.json()["events"] if e["type"] == "OBSERVED"]
    assert len(observed) == 10  # the refused one wrote nothing; the repeat is recorded, not counted
    assert [e["payload"]["counted"] for e in observed].count(False) == 1
    assert observed[-1]["payload"]["outcome"] == "violated"


async def test_code_rules_observations_refused_to_agents_and_bad_input(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    rule = await _published_rule(http, team, engine)
    rule_id = rule["memory_id"]
    assert (await _observe(http, team["agent"], rule_id, "followed_passed")).status_code == 403
    foreign = await _observe(http, team["human"], rule_id, "violated", "no-such-task")
    assert foreign.status_code == 404, foreign.text
    assert (await _observe(http, team["orchestrator"], rule_id, "rejected_by_human")).status_code == 403
    assert (await _observe(http, team["outsider"], rule_id, "violated")).status_code == 404
    assert (await _observe(http, team["human"], rule_id, "ignored")).status_code == 422
    missing = await http.post(f"/v1/memories/{rule_id}/observations", headers=team["human"].headers, json={})
    assert missing.status_code == 422
    episode_id = next(
        p["memory_id"]
        for p in (await _task_meeting(http, team, "ValueError: x"))["published"]
        if p["memory_type"] == "episode"
    )
    assert (await _observe(http, team["human"], episode_id, "violated")).status_code == 422


APPROVED_FIX = "Parse the field with int(value.strip()) after checking it is digits"
AGENTS_FIX = "Disable input validation globally by setting VALIDATE_INPUT=0"


def _int_error(value: str, line: int) -> str:
    return (
        f'Traceback (most recent call last):\n  File "/app/forms.py", line {line}, in parse\n'
        f"    return int(raw)\nValueError: invalid literal for int() with base 10: '{value}'"
    )


async def test_a_fix_merged_into_a_human_approved_pattern_on_its_own_word_is_never_guidance(
    http: httpx.AsyncClient, team: dict[str, Actor]
) -> None:
    """Stop 40's laundering: a human approved a bug pattern and its fix; a later task's fix for the same
    error merged into it without anyone's approval, and the context block served it to every agent as
    `try: … (human-approved, trust 1.00)`."""
    # a worktree task whose rule makes it wait for a human (tests/api/test_quarantine.py): approved
    approved_task = await _open_task(http, team, "parse the form field")
    await stage(
        http,
        team["agent"],
        approved_task,
        [
            {"kind": "error", "content": _int_error("12a", 7)},
            {"kind": "result", "content": APPROVED_FIX},
            {"kind": "rule", "content": "Every form field is parsed by one shared helper."},
        ],
    )
    await start_promotion(http, team["orchestrator"], approved_task, "worktree")
    await wait_promotion_state(http, team["human"].headers, approved_task, "awaiting_approval")
    published = await approve_and_publish(http, team["human"], approved_task)
    [pattern] = [p for p in published["published"] if p["memory_type"] == "bug_pattern"]

    later = await _open_task(http, team, "parse the form field again")
    await stage(
        http,
        team["agent"],
        later,
        [{"kind": "error", "content": _int_error("x9", 31)}, {"kind": "result", "content": AGENTS_FIX}],
    )
    await start_promotion(http, team["orchestrator"], later, "worktree")
    merged = await wait_promotion_state(http, team["human"].headers, later, "published")
    assert [p["memory_id"] for p in merged["published"] if p["memory_type"] == "bug_pattern"] == [
        pattern["memory_id"]
    ], merged["published"]

    reader = await _open_task(http, team, "a third task meets the int parse error")
    query = "ValueError invalid literal for int() parsing the form"
    ask = {"task_id": reader, "query": query, "max_tokens": 3000}
    context = await http.post("/v1/context", headers=team["agent"].headers, json=ask)
    assert context.status_code == 200, context.text
    block = context.json()["context"]
    signature = "ValueError: invalid literal for int() with base <n>: <q>"
    approved_line = f"- try: {APPROVED_FIX} (for {signature}, 1/1 passed)"
    assert f"{approved_line} [mem:{pattern['citation']}] (human-approved, trust 1.00)" in block, block
    assert "VALIDATE_INPUT" not in "\n".join(
        line for line in block.splitlines() if line.startswith(("- try:", "- avoid:"))
    ), block

    # the match lists both fixes, each with who stands behind it
    answer = await _match(http, team["agent"], reader, _int_error("q", 2))
    assert answer.status_code == 200, answer.text
    top = answer.json()["patterns"][0]
    assert top["id"] == pattern["memory_id"]
    assert {s["solution"]: s["standing"] for s in top["solutions"]} == {
        APPROVED_FIX: "human",
        AGENTS_FIX: "unreviewed",
    }
