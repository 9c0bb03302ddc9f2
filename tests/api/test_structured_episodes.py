"""A published episode carries structured fields beside its prose, filled from payloads and from text.

Over real HTTP with a Temporal dev server and a worker running the real activities: an agent's entries
(a failed approach and the next one, a diff, a traceback, a pytest summary, payload tokens and tools), the
working memory's tracked file and a firm hypothesis; after the promotion the memory answer shows every
field, the link tables hold them, and a file's history finds the episode through them.
"""

from __future__ import annotations

import uuid
from typing import Any

import httpx
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.utils.cli import cli_env, run_cli
from tests.utils.factories import Actor
from tests.utils.promotion_gateway import open_task, wait_promotion_state
from tests.utils.tenancy import task_key_of

DIFF = (
    "diff --git a/httpx/_client.py b/httpx/_client.py\n"
    "--- a/httpx/_client.py\n"
    "+++ b/httpx/_client.py\n"
    "@@ -10,3 +10,4 @@ def _redirect_url(\n"
    "     url = response.headers['location']\n"
    "-    return url\n"
    "+    if url == request.url:\n"
    "+        raise TooManyRedirects()\n"
)
TRACEBACK = (
    "Traceback (most recent call last):\n  File \"httpx/_models.py\", line 41, in read\nKeyError: 'location'"
)
ENTRIES: list[dict[str, Any]] = [
    {
        "kind": "approach",
        "content": "retry the redirect",
        "payload": {"outcome": "failed", "reason": "loops"},
    },
    {"kind": "approach", "content": "compare the target with the request url"},
    {"kind": "tool_output", "content": DIFF, "payload": {"tool": "Edit", "tokens": 120, "duration_ms": 800}},
    {"kind": "error", "content": TRACEBACK, "payload": {"tool": "Bash"}},
    {
        "kind": "tool_output",
        "content": "===== 1 failed, 7 passed in 0.42s =====",
        "payload": {"tool": "Bash"},
    },
    {
        "kind": "tool_output",
        "content": "all green",
        "payload": {"tool": "Bash", "tests": {"run": 8, "passed": 8, "failed": 0, "framework": "pytest"}},
    },
    {"kind": "result", "content": "Redirects to the same url stop with TooManyRedirects."},
]


async def _promoted_episode(http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine) -> str:
    o = team["orchestrator"]
    task_id = await open_task(http, o, "Fix the redirect loop in the client")
    agent = team["agent"]
    appended = await http.post(
        f"/v1/tasks/{task_id}/entries", headers=agent.headers, json={"entries": ENTRIES}
    )
    assert appended.status_code == 201, appended.text
    tracked = await http.post(
        f"/v1/tasks/{task_id}/working-memory",
        headers=agent.headers,
        json={
            "files": ["tests/test_redirects.py"],
            "symbols": ["Client._redirect_url"],
            "hypotheses": [{"text": "the loop comes from a self-redirect", "confidence": 0.95}],
        },
    )
    assert tracked.status_code == 200, tracked.text
    started = await http.post(
        f"/v1/tasks/{task_id}/promotion",
        headers=o.headers,
        json={"target_scope": "task", "verification": {"source": "tests_passed", "success": True}},
    )
    assert started.status_code == 202, started.text
    await wait_promotion_state(http, o.headers, task_id, "published")
    async with engine.connect() as conn:
        citation = (
            await conn.execute(
                text(
                    "SELECT citation FROM memories "
                    "WHERE :t = ANY(source_task_ids) AND memory_type = 'episode'"
                ),
                {"t": task_key_of(task_id)},
            )
        ).scalar_one()
    return str(citation)


async def test_episode_structure_is_shown_with_the_memory_and_linked_by_file(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    citation = await _promoted_episode(http, team, engine)
    answer = await http.get(f"/v1/memories/{citation}", headers=team["orchestrator"].headers)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    episode = body["episode"]
    assert body["memory"]["content"].startswith("Task ")  # the prose stays as it was
    assert episode["task_type"] == "bugfix" and episode["task_type_source"] == "words"
    assert episode["outcome"] == "success"
    files = {f["path"]: f for f in episode["files"]}
    assert files["httpx/_client.py"]["lines_added"] == 2 and files["httpx/_client.py"]["lines_removed"] == 1
    assert "httpx/_models.py" in files and files["tests/test_redirects.py"]["tracked"] is True
    assert {"_redirect_url", "read", "Client._redirect_url"} <= set(episode["symbols"])
    assert {t["tool"]: t["calls"] for t in episode["tools"]} == {"Bash": 3, "Edit": 1}
    assert episode["error_types"] == [{"error_type": "KeyError", "count": 1}]
    # the last run the task reported: the payload's, after the failing pytest summary
    assert episode["tests"] == {"framework": "pytest", "run": 8, "passed": 8, "failed": 0}
    assert episode["test_runs"] == 2
    assert episode["pivots"] == [
        {
            "from": "retry the redirect",
            "to": "compare the target with the request url",
            "why": "loops",
            "seq": 2,
        }
    ]
    assert episode["lines_added"] == 2 and episode["lines_removed"] == 1
    assert episode["tokens"] == 120 and episode["duration_ms"] == 800
    assert episode["decided_hypotheses"] and "self-redirect" in episode["decided_hypotheses"][0]

    # `loregate show` prints the same fields
    env = cli_env(LOREGATE_URL=str(http.base_url), LOREGATE_API_KEY=team["orchestrator"].key, COLUMNS="200")
    shown = run_cli("show", f"mem:{citation}", env=env)
    assert shown.returncode == 0, shown.stderr
    for text_shown in (
        "bugfix (words)",
        "8 passed, 0 failed of 8 (pytest)",
        "httpx/_client.py (+2 -1)",
        "KeyError x1",
    ):
        assert text_shown in shown.stdout, shown.stdout

    async with engine.connect() as conn:
        memory_id = (
            await conn.execute(text("SELECT id::text FROM memories WHERE citation = :c"), {"c": citation})
        ).scalar_one()
        linked = {
            table: sorted(
                r[0]
                for r in await conn.execute(
                    text(f"SELECT {column} FROM {table} WHERE memory_id::text = :m"), {"m": memory_id}
                )
            )
            for table, column in (
                ("episode_files", "path"),
                ("episode_error_types", "error_type"),
                ("episode_tools", "tool"),
            )
        }
        details = (
            await conn.execute(
                text(
                    "SELECT task_type, outcome, tests_passed FROM episode_details WHERE memory_id::text = :m"
                ),
                {"m": memory_id},
            )
        ).one()
    assert linked["episode_files"] == ["httpx/_client.py", "httpx/_models.py", "tests/test_redirects.py"]
    assert linked["episode_error_types"] == ["KeyError"] and linked["episode_tools"] == ["Bash", "Edit"]
    assert tuple(details) == ("bugfix", "success", 8)


async def test_memory_answer_of_a_non_episode_has_no_episode_fields(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    citation = await _promoted_episode(http, team, engine)
    async with engine.connect() as conn:
        other = (
            await conn.execute(
                text(
                    "SELECT m.citation FROM memories m JOIN memories e ON e.citation = :c "
                    "WHERE m.source_task_ids = e.source_task_ids AND m.memory_type <> 'episode' LIMIT 1"
                ),
                {"c": citation},
            )
        ).scalar_one_or_none()
    assert other is not None  # the traceback and the result that followed: a bug pattern
    answer = await http.get(f"/v1/memories/{other}", headers=team["orchestrator"].headers)
    assert answer.status_code == 200 and answer.json()["episode"] is None


async def test_erasing_a_subject_quoted_only_by_episode_fields_takes_them(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    """A tracked file's name reaches the episode's structure, not its prose: an erasure of that name still
    takes the episode, its link rows, and the project knowledge quoting it."""
    marker = "canaryzqx" + uuid.uuid4().hex[:8]
    o = team["orchestrator"]
    org, project = o.principal.org, o.principal.project
    opened = await http.post(
        "/v1/tasks",
        headers=o.headers,
        json={"org": org, "project": project, "worktree": "main", "description": "Add retries"},
    )
    task_id = opened.json()["task_id"]
    agent = team["agent"]
    await http.post(
        f"/v1/tasks/{task_id}/entries",
        headers=agent.headers,
        json={"entries": [{"kind": "result", "content": "Retries added."}]},
    )
    tracked = await http.post(
        f"/v1/tasks/{task_id}/working-memory", headers=agent.headers, json={"files": [f"src/{marker}.py"]}
    )
    assert tracked.status_code == 200, tracked.text
    started = await http.post(
        f"/v1/tasks/{task_id}/promotion",
        headers=o.headers,
        json={"target_scope": "task", "verification": {"source": "tests_passed", "success": True}},
    )
    assert started.status_code == 202, started.text
    await wait_promotion_state(http, o.headers, task_id, "published")

    async def holding() -> dict[str, int]:
        async with engine.connect() as conn:
            return {
                table: int(
                    (
                        await conn.execute(
                            text(
                                f"SELECT count(*) FROM {table} WHERE strpos(CAST({column} AS text), :m) > 0"
                            ),
                            {"m": marker},
                        )
                    ).scalar_one()
                )
                for table, column in (
                    ("episode_details", "structure"),
                    ("episode_files", "path"),
                    ("promotion_candidates", "structure"),
                    ("memories", "content"),
                )
            }

    before = await holding()
    assert before["episode_details"] == 1 and before["episode_files"] == 1 and before["memories"] == 0
    erased = await http.post(
        "/v1/erasures",
        headers=team["human"].headers,
        json={"subject": marker, "org": org, "project": project},
    )
    assert erased.status_code == 200, erased.text
    assert await holding() == {t: 0 for t in before}
