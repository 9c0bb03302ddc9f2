"""The console's paged lists cap their offset: an absurd one is a 422 naming the cap, not a scan or a 500.

`/console/memories?offset=` took any integer: past Postgres' bigint it reached the database as a value it
refused, and a large one made it skip that many rows of the scope's memories to show an empty page.
"""

from __future__ import annotations

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.scopes import ActorType
from tests.api.test_console import sign_in
from tests.utils.factories import make_actor, new_tenant


async def test_console_list_offset_past_the_cap_is_refused(gateway_url: str, engine: AsyncEngine) -> None:
    human = await make_actor(engine, ActorType.HUMAN, *new_tenant())
    async with httpx.AsyncClient(base_url=gateway_url, timeout=60) as console:
        await sign_in(console, human)
        answers = {
            (path, offset): await console.get(path, params={"offset": offset})
            for path in ("/console/memories", "/console/promotions/t-1")
            for offset in ("10001", str(10**20))
        }
        last_page = await console.get("/console/memories", params={"offset": "10000"})
    for (path, offset), answer in answers.items():
        assert answer.status_code == 422, (path, offset, answer.status_code, answer.text[:300])
        assert "offset: Input should be less than or equal to 10000" in answer.text, answer.text
    assert last_page.status_code == 200, last_page.text[:300]
