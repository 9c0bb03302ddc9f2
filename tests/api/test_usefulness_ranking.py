"""Usefulness feeds ranking, end to end: a memory retrieved often and judged useless sinks.

The same fact is published twice, at worktree scope and (approved by a human) at project scope, so a reader
of the worktree finds two memories exactly as relevant as each other. The project copy first ranks higher
(more trusted); after many retrievals and readers' votes that it did not help, it ranks below the other.
"""

from __future__ import annotations

from typing import Any

import httpx

from governance.scopes import ActorType
from tests.utils.factories import Actor, make_actor
from tests.utils.promotion_gateway import staged_promotion, wait_promotion_state

FACT = "billing.export.format: the invoice export writes UTF-8 CSV with a header row"
QUERY = "what format does the invoice export write"


async def _publish(http: httpx.AsyncClient, team: dict[str, Actor], scope: str) -> str:
    fact = {"kind": "fact", "content": FACT}
    task_id = await staged_promotion(http, team, f"document the export ({scope})", [fact], scope)
    if scope == "project":
        await wait_promotion_state(http, team["human"].headers, task_id, "awaiting_approval")
        approved = await http.post(
            f"/v1/promotions/{task_id}/approve", headers=team["human"].headers, json={"note": "ok"}
        )
        assert approved.status_code == 200, approved.text
    done = await wait_promotion_state(http, team["human"].headers, task_id, "published")
    [fact] = [p for p in done["published"] if p["memory_type"] == "fact"]
    return str(fact["citation"])


async def _order(http: httpx.AsyncClient, team: dict[str, Actor], reader: str) -> list[dict[str, Any]]:
    answer = await http.post(
        "/v1/search", headers=team["agent"].headers, json={"task_id": reader, "query": QUERY, "k": 5}
    )
    assert answer.status_code == 200, answer.text
    return [r for r in answer.json()["results"] if r["type"] == "fact"]


async def test_search_often_retrieved_useless_memory_sinks(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: Any
) -> None:
    worktree_copy = await _publish(http, team, "worktree")
    project_copy = await _publish(http, team, "project")
    assert worktree_copy != project_copy
    orchestrator = team["orchestrator"].principal
    reader_task = await http.post(
        "/v1/tasks",
        headers=team["orchestrator"].headers,
        json={
            "org": orchestrator.org,
            "project": orchestrator.project,
            "worktree": "main",
            "description": "read",
        },
    )
    reader = reader_task.json()["task_id"]
    before = await _order(http, team, reader)
    assert [r["citation"] for r in before[:2]] == [project_copy, worktree_copy]
    assert before[0]["score_parts"]["similarity"] == before[1]["score_parts"]["similarity"]

    # readers keep meeting the project copy and say it did not help (one vote each; its author and its
    # approver are involved, so the voters are others)
    voters = [
        await make_actor(engine, ActorType.AGENT, orchestrator.org, orchestrator.project) for _ in range(4)
    ]
    for voter in voters:
        voted = await http.post(
            f"/v1/memories/{project_copy}/feedback", headers=voter.headers, json={"helpful": False}
        )
        assert voted.status_code == 200, voted.text
    for _ in range(20):
        await _order(http, team, reader)

    after = await _order(http, team, reader)
    assert [r["citation"] for r in after[:2]] == [worktree_copy, project_copy]
    assert after[1]["score_parts"]["usefulness"] < 0.5 == after[0]["score_parts"]["usefulness"]
    # within the bound: relevance is unchanged, only the small adjustment moved
    assert after[0]["score_parts"]["similarity"] == after[1]["score_parts"]["similarity"]
