"""`/metrics` of a real gateway: the platform's queues and totals (from Postgres), and what the process did.

Rows are written as the platform writes them (events through `record_event`); the figures are compared
before and after, since the session database is shared with other tests.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from governance.config import Settings
from governance.scopes import ActorType
from governance.storage.events import EventType, record_event
from tests.utils.factories import make_actor, new_tenant
from tests.utils.gateway import running_gateway
from tests.utils.memory_factories import new_task


@pytest.fixture
def gateway(settings: Settings) -> Iterator[str]:
    """A gateway of its own: its platform snapshot is fresh at the first scrape."""
    limited = settings.model_copy(
        update={"search_rate_principal_burst": 2, "search_rate_principal_per_second": 0.001}
    )
    with running_gateway(limited) as url:
        yield url


def _samples(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    exposition = httpx.get(f"{url}/metrics", timeout=30).text
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(exposition)
        for s in family.samples
    }


def _value(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


async def _change_request(engine: AsyncEngine, org: str, *, waited: str, decided_after: str | None) -> None:
    async with engine.begin() as conn:
        await conn.execute(
            text(
                "INSERT INTO change_requests (id, memory_id, org, scope, operation, reason, requested_by, "
                "actor_type, state, created_at, decided_at, redaction_counts) VALUES (:id, :mid, :org, "
                "'org', 'retire', 'metrics test', 'p', 'agent', :state, now() - CAST(:waited AS interval), "
                "now() - CAST(:waited AS interval) + CAST(:after AS interval), "
                "CAST('{\"email\": 3}' AS jsonb))"
            ),
            {
                "id": str(uuid.uuid4()),
                "mid": str(uuid.uuid4()),
                "org": org,
                "state": "awaiting_approval" if decided_after is None else "approved",
                "waited": waited,
                "after": decided_after,
            },
        )


async def test_metrics_count_pending_change_requests_and_their_age(
    engine: AsyncEngine, settings: Settings
) -> None:
    org, _ = new_tenant()
    await _change_request(engine, org, waited="3 hours", decided_after=None)
    # a gateway keeps its snapshot 15 s: one started now shows the row at its first scrape
    with running_gateway(settings) as url:
        samples = _samples(url)
    assert _value(samples, "loregate_change_requests_pending") >= 1
    assert _value(samples, "loregate_change_requests_oldest_pending_seconds") >= 3 * 3600


async def test_metrics_read_outcomes_prunes_redactions_and_latency(
    engine: AsyncEngine, settings: Settings
) -> None:
    org, project = new_tenant()
    async with engine.begin() as conn:
        task = await new_task(conn, org=org, project=project)
        await conn.execute(text("UPDATE tasks SET status = 'rejected' WHERE id = :t"), {"t": task.task_id})
        await record_event(
            conn, event_type=EventType.PRUNED, actor_id=None, actor_type=None, reason="metrics test"
        )
        await record_event(
            conn,
            event_type=EventType.PROMOTION,
            actor_id=None,
            actor_type=None,
            task_id=task.task_id,
            reason="metrics test",
            payload={"redaction": {"metrics_test_rule": 2}},
        )
    await _change_request(engine, org, waited="1 hour", decided_after="10 minutes")
    with running_gateway(settings) as url:
        before = _samples(url)
    # a plan of three items, one held for carrying instructions aimed at agents
    workflow_id = f"promote-metrics-{uuid.uuid4().hex[:8]}"
    async with engine.begin() as conn:
        await conn.execute(
            text(
                "INSERT INTO promotion_plans (workflow_id, run_id, task_id, candidate_count) "
                "VALUES (:w, 'r', :t, 3)"
            ),
            {"w": workflow_id, "t": task.task_id},
        )
        for idx, held in enumerate((None, "a download piped into a shell", None)):
            await conn.execute(
                text(
                    "INSERT INTO promotion_plan_items (workflow_id, run_id, idx, candidate_idx, decision, "
                    "reason, content_hash, quarantine) VALUES (:w, 'r', :i, :i, 'new', 'metrics test', "
                    "repeat('0', 64), :q)"
                ),
                {"w": workflow_id, "i": idx, "q": held},
            )
    with running_gateway(settings) as url:
        samples = _samples(url)
    # each gateway reads its snapshot at its first scrape; the session's other workflows may add to both
    held = "loregate_plan_items_quarantined_total"
    assert _value(samples, held) - _value(before, held) >= 1
    new = "loregate_plan_decisions_total"
    assert _value(samples, new, decision="new") - _value(before, new, decision="new") >= 3
    assert _value(samples, "loregate_promotions_total", outcome="rejected") >= 1
    assert _value(samples, "loregate_retention_prunes_total") >= 1
    assert _value(samples, "loregate_redactions_total", rule="metrics_test_rule") >= 2
    assert _value(samples, "loregate_redactions_total", rule="email") >= 3
    within = _value(samples, "loregate_approval_latency_seconds_bucket", kind="change_request", le="900.0")
    below = _value(samples, "loregate_approval_latency_seconds_bucket", kind="change_request", le="300.0")
    assert within - below >= 1  # the 10-minute wait fell between 5 and 15 minutes


async def test_metrics_count_429s_searches_and_query_cache_hits(engine: AsyncEngine, gateway: str) -> None:
    org, project = new_tenant()
    agent = await make_actor(engine, ActorType.AGENT, org, project)
    async with engine.begin() as conn:
        task = await new_task(conn, org=org, project=project)
    before = _samples(gateway)
    body = {"task_id": task.task_id, "query": f"metrics cache {uuid.uuid4().hex}"}
    with httpx.Client(base_url=gateway, headers=agent.headers, timeout=60) as http:
        assert [http.post("/v1/search", json=body).status_code for _ in range(3)] == [200, 200, 429]
    after = _samples(gateway)

    def grew(name: str, **labels: str) -> float:
        return _value(after, name, **labels) - _value(before, name, **labels)

    assert grew("loregate_rate_limited_total", scope="principal", budget="search") == 1
    assert grew("loregate_search_seconds_count", endpoint="search") == 2
    assert grew("loregate_query_embedding_cache_hits_total") >= 1
    assert grew("loregate_http_requests_total", method="POST", route="/v1/search", status="429") == 1
