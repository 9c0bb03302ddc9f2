"""Schemathesis over the gateway's own OpenAPI, with a valid key of each actor type: never a 5xx, and every
answer (errors included) matches the documented schema. Bounded so it stays a normal part of the suite.

The hypothesis strategies of each operation are driven directly (schemathesis' pytest plugin does not yet
support pytest 9), against the real gateway on loopback.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.config import Settings
from governance.scopes import ActorType
from tests.utils.factories import Actor, make_actor, new_tenant
from tests.utils.gateway import running_gateway

MAX_EXAMPLES = 15


@schemathesis.serializer("application/x-ndjson")
def _ndjson(ctx: Any, value: Any) -> bytes:
    """An import's body (an export file) is raw bytes: whatever the strategy made, sent as it is."""
    return value if isinstance(value, bytes) else str(value).encode("utf-8")


_LINE = st.text(st.characters(codec="utf-8", exclude_categories=("Cc", "Cs", "Zl", "Zp")), max_size=40)


@st.composite
def _unified_diff(draw: st.DrawFn) -> str:
    """A well-formed unified diff of one file and one hunk: what no JSON schema can say a diff is."""
    name = draw(st.from_regex(r"[a-z][a-z0-9_/]{0,20}\.(py|ts|go|md)", fullmatch=True))
    context, removed, added = (draw(st.lists(_LINE, max_size=4)) for _ in range(3))
    old, new = len(context) + len(removed), len(context) + len(added)
    body = [f" {c}" for c in context] + [f"-{r}" for r in removed] + [f"+{a}" for a in added]
    return f"--- a/{name}\n+++ b/{name}\n@@ -1,{old} +1,{new} @@\n" + "".join(f"{line}\n" for line in body)


schemathesis.openapi.format("unified-diff", _unified_diff())


@pytest.fixture(scope="module")
def fuzz_gateway(settings: Settings, local_env: Any) -> Iterator[str]:
    """A gateway with a real Temporal behind it: the promotion routes answer instead of 503."""
    client = local_env.client
    with running_gateway(
        settings.model_copy(
            update={
                "temporal_address": client.service_client.config.target_host,
                "task_queue": "fuzz-no-worker",
            }
        )
    ) as url:
        yield url


@pytest.fixture(scope="module")
async def actors(engine: AsyncEngine) -> dict[ActorType, Actor]:
    org, project = new_tenant()
    return {actor: await make_actor(engine, actor, org, project) for actor in ActorType}


def _one_idempotency_key(case: Any) -> None:
    """An `Idempotency-Key` header and a differing body key are a documented 422 no schema can express:
    with the header, the body (and a batch's entries) carries none."""
    if not any(name.lower() == "idempotency-key" for name in case.headers or {}):
        return
    body = case.body if isinstance(case.body, dict) else {}
    if "idempotency_key" in body:
        body["idempotency_key"] = None
    for entry in body.get("entries") or []:
        if isinstance(entry, dict):
            entry.pop("idempotency_key", None)


def test_gateway_conforms_to_its_openapi(fuzz_gateway: str, actors: dict[ActorType, Actor]) -> None:
    schema = schemathesis.openapi.from_url(f"{fuzz_gateway}/openapi.json")
    failures: dict[str, str] = {}
    only = os.environ.get("LOREGATE_FUZZ_ONLY")
    operations = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        if only and only not in operation.label:
            continue
        operations += 1

        @given(case=operation.as_strategy())
        @settings(
            max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None
        )
        def check(case: Any) -> None:
            _one_idempotency_key(case)
            for actor in actors.values():  # the same generated request, as each kind of actor
                case.call_and_validate(headers=actor.headers)

        try:
            check()
        except Exception as exc:  # collect every operation's failure, report them together
            failures[operation.label] = str(exc)[:2000]
    assert operations >= (1 if only else 4)
    assert not failures, "\n\n".join(f"{label}:\n{text}" for label, text in failures.items())
