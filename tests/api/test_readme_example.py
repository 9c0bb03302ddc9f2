"""The README's Python example runs as written against a real gateway (only the tenant is made unique)."""

from __future__ import annotations

import asyncio
import contextlib
import io
import re
import uuid
from typing import Any

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.scopes import ActorType
from tests.utils.factories import make_actor
from tests.utils.settings_table import README


def _python_example() -> str:
    section = README.read_text().split("## Using it from agents and orchestrators", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)\n```", section, flags=re.S)
    assert len(blocks) == 1, "the README's agents section should hold exactly one Python example"
    return blocks[0]


async def test_readme_python_example_opens_a_task_writes_and_reads_context(
    engine: AsyncEngine, gateway_url: str
) -> None:
    org, project = f"acme-{uuid.uuid4().hex[:8]}", "shop"
    orchestrator = await make_actor(engine, ActorType.ORCHESTRATOR, org, project)
    code = _python_example().replace('"http://127.0.0.1:8080"', repr(gateway_url))
    code = code.replace('"acme"', repr(org))
    out = io.StringIO()
    namespace: dict[str, Any] = {"api_key": orchestrator.key}

    def run() -> None:  # the sync client, off the event loop the gateway's test server shares
        with contextlib.redirect_stdout(out):
            exec(compile(code, "README.md", "exec"), namespace)  # noqa: S102

    await asyncio.to_thread(run)
    task_id = namespace["task"]["task_id"]
    async with httpx.AsyncClient(base_url=gateway_url, headers=orchestrator.headers) as client:
        entries = (await client.get(f"/v1/tasks/{task_id}/entries")).json()["entries"]
    assert [(e["kind"], e["content"]) for e in entries] == [("decision", "auth.session: cookies, not JWT")]
    assert out.getvalue() == "\n"  # a fresh tenant has no published memory yet: an empty context block
