"""Provenance does not leak staging: source entries come back redacted to whoever may not read them.

An org-scope memory is readable by the org's other projects, whose principals may not read the source
task's staging. `GET /v1/memories/{id}` gives them the source entries redacted as promotion redacts them
(`<private>` spans and secrets removed, payloads too); a principal who may read the task's staging gets
them as written. Through the real gateway, the Temporal dev server and a worker.
"""

from __future__ import annotations

from typing import Any

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.scopes import ActorType
from tests.utils.factories import Actor, make_actor
from tests.utils.promotion_gateway import approve_and_publish, awaiting_approval

TOKEN = "ghp_" + "Zq8vN3xK7mW2pL9tR4yB6cD1fH5jS0aE3uGi"
PRIVATE = "the on-call phone is 010-5555-0199"
CONTENT = f"Deploys go through the bastion host; token {TOKEN} <private>{PRIVATE}</private> rotates weekly."


async def _published_org_fact(http: httpx.AsyncClient, team: dict[str, Actor]) -> dict[str, Any]:
    entry = {"kind": "fact", "content": CONTENT, "payload": {"note": f"token={TOKEN}"}}
    task_id, _ = await awaiting_approval(http, team, [entry], "document the deploy path", "org")
    done = await approve_and_publish(http, team["human"], task_id)
    facts = [p for p in done["published"] if p["memory_type"] == "fact"]
    assert len(facts) == 1, done["published"]
    return facts[0]


async def test_provenance_is_redacted_for_readers_outside_the_task(
    http: httpx.AsyncClient, team: dict[str, Actor], engine: AsyncEngine
) -> None:
    fact = await _published_org_fact(http, team)
    org = team["orchestrator"].principal.org
    # an agent of another project of the org: may read the org memory, not the task's staging
    neighbour = await make_actor(engine, ActorType.AGENT, org, "another-project")
    staging = await http.get(
        f"/v1/tasks/{(await _source_task(http, team, fact))}/entries", headers=neighbour.headers
    )
    assert staging.status_code in (403, 404)

    seen = await http.get(f"/v1/memories/{fact['memory_id']}", headers=neighbour.headers)
    assert seen.status_code == 200, seen.text
    body = seen.text
    assert TOKEN not in body and PRIVATE not in body
    [source] = seen.json()["provenance"]
    assert source["redacted"] is True and "bastion host" in source["content"]
    assert TOKEN not in str(source["payload"])


async def test_provenance_is_whole_for_readers_of_the_task(
    http: httpx.AsyncClient, team: dict[str, Actor]
) -> None:
    fact = await _published_org_fact(http, team)
    seen = await http.get(f"/v1/memories/{fact['memory_id']}", headers=team["agent"].headers)
    assert seen.status_code == 200, seen.text
    [source] = seen.json()["provenance"]
    assert source["redacted"] is False and source["content"] == CONTENT
    # what was published never held them either way
    assert TOKEN not in seen.json()["memory"]["content"] and PRIVATE not in seen.json()["memory"]["content"]


async def _source_task(http: httpx.AsyncClient, team: dict[str, Actor], fact: dict[str, Any]) -> str:
    seen = await http.get(f"/v1/memories/{fact['memory_id']}", headers=team["agent"].headers)
    task_id: str = seen.json()["provenance"][0]["task_id"]
    return task_id
