"""Webhooks through the real gateway, the Temporal dev server, a worker and a real HTTP receiver on loopback.

Before, loregate was pull only: a promotion waiting for a human waited until someone looked. An admin now
registers a webhook per tenant; the notification sweep (the workflow the schedule starts every minute, run
here by hand) delivers each event once, HMAC-signed, with ids and states only, retries a failing receiver
and records every attempt.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio.client import Client

from governance.config import Settings
from governance.scopes import ActorType
from governance.webhooks import SIGNATURE_HEADER, TIMESTAMP_HEADER, verify
from tests.utils.cli import cli_env, run_cli
from tests.utils.factories import Actor, make_actor, new_tenant
from tests.utils.promotion_gateway import start_promotion, temporal_settings, wait_promotion_state
from tests.utils.tenancy import task_key_of
from workflows.notifications import NotificationInput, NotificationResult, NotificationWorkflow


@pytest.fixture(scope="module")
def promo_settings(settings: Settings, temporal: Client) -> Settings:
    """The module's gateway and worker may deliver to loopback (the receiver runs here)."""
    return temporal_settings(settings, temporal, webhook_allow_private=True)


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    """An HTTP server on loopback recording every POST; paths under /fail/ answer 500."""

    url: str
    received: list[Received] = field(default_factory=list)

    def on(self, path: str) -> list[Received]:
        return [r for r in self.received if r.path == path]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    found = Receiver(f"http://127.0.0.1:{server.server_address[1]}")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            found.received.append(Received(self.path, dict(self.headers), body))
            self.send_response(500 if self.path.startswith("/fail/") else 204)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server.RequestHandlerClass = Handler
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield found
    finally:
        server.shutdown()
        server.server_close()


async def _sweep(temporal: Client, settings: Settings, **overrides: Any) -> NotificationResult:
    data = NotificationInput(max_attempts=2, attempt_timeout_seconds=5.0, first_retry_seconds=0.2)
    for name, value in overrides.items():
        setattr(data, name, value)
    result: NotificationResult = await temporal.execute_workflow(
        NotificationWorkflow.run, data, id=f"notify-{uuid.uuid4().hex[:8]}", task_queue=settings.task_queue
    )
    return result


async def _awaiting_promotion(
    http: httpx.AsyncClient, engine: AsyncEngine, marker: str
) -> tuple[str, str, str]:
    """A fresh tenant whose task's promotion waits for a human: (org, project, task id)."""
    org, project = new_tenant()
    orchestrator = await make_actor(engine, ActorType.ORCHESTRATOR, org, project)
    human = await make_actor(engine, ActorType.HUMAN, org, project)
    opened = await http.post(
        "/v1/tasks",
        headers=orchestrator.headers,
        json={"org": org, "project": project, "worktree": "main", "description": f"secret plan {marker}"},
    )
    task_id: str = opened.json()["task_id"]
    staged = await http.post(
        f"/v1/tasks/{task_id}/entries",
        headers=orchestrator.headers,
        json={"entries": [{"kind": "fact", "content": f"The deploy key rotates weekly {marker}."}]},
    )
    assert staged.status_code == 201, staged.text
    await start_promotion(http, orchestrator, task_id, "project")
    await wait_promotion_state(http, human.headers, task_id, "awaiting_approval")
    return org, project, task_id


async def _wait_visible(temporal: Client, task_id: str, timeout: float = 30.0) -> None:
    """Temporal's visibility lists the promotion as awaiting approval (it lags the workflow a little)."""
    query = f'WorkflowId = "promote-{task_key_of(task_id)}" AND LoregateState = "awaiting_approval"'
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if [w async for w in temporal.list_workflows(query)]:
            return
        time.sleep(0.2)
    raise AssertionError(f"promote-{task_key_of(task_id)} never listed as awaiting approval")


async def _admin(engine: AsyncEngine) -> Actor:
    return await make_actor(engine, ActorType.HUMAN, "default", None, is_admin=True)


async def test_webhook_hears_once_of_a_promotion_awaiting_approval_signed_and_without_content(
    http: httpx.AsyncClient,
    engine: AsyncEngine,
    temporal: Client,
    promo_settings: Settings,
    receiver: Receiver,
) -> None:
    marker = f"zq-{uuid.uuid4().hex[:10]}"
    admin = await _admin(engine)
    org, project, task_id = await _awaiting_promotion(http, engine, marker)
    path = f"/ok/{uuid.uuid4().hex[:8]}"
    registered = await http.post(
        "/v1/webhooks",
        headers=admin.headers,
        json={
            "org": org,
            "project": project,
            "url": receiver.url + path,
            "events": ["promotion.awaiting_approval"],
        },
    )
    assert registered.status_code == 201, registered.text
    hook = registered.json()
    assert hook["secret"].startswith("whsec_")
    listed = await http.get("/v1/webhooks", headers=admin.headers, params={"org": org})
    assert [w["id"] for w in listed.json()["webhooks"]] == [hook["id"]] and "secret" not in listed.text
    await _wait_visible(temporal, task_id)

    await _sweep(temporal, promo_settings)
    await _sweep(temporal, promo_settings)  # found again: not delivered again

    [delivered] = receiver.on(path)
    timestamp = int(delivered.headers[TIMESTAMP_HEADER])
    signature = delivered.headers[SIGNATURE_HEADER]
    assert verify(hook["secret"], timestamp, delivered.body, signature, now=int(time.time()))
    assert not verify("whsec_other", timestamp, delivered.body, signature, now=int(time.time()))
    body = json.loads(delivered.body)
    assert body["event"] == "promotion.awaiting_approval" and body["task_id"] == task_id
    assert body["workflow_id"] == f"promote-{task_key_of(task_id)}" and body["org"] == org
    assert marker not in delivered.body.decode()  # ids and states, never content or descriptions
    deliveries = await http.get(f"/v1/webhooks/{hook['id']}/deliveries", headers=admin.headers)
    [record] = deliveries.json()["deliveries"]
    assert record["state"] == "delivered" and record["attempts"] == 1 and record["last_status"] == 204


async def test_webhook_failing_receiver_is_retried_then_recorded_failed(
    http: httpx.AsyncClient,
    engine: AsyncEngine,
    temporal: Client,
    promo_settings: Settings,
    receiver: Receiver,
) -> None:
    admin = await _admin(engine)
    org, project, task_id = await _awaiting_promotion(http, engine, "m")
    path = f"/fail/{uuid.uuid4().hex[:8]}"
    registered = await http.post(
        "/v1/webhooks", headers=admin.headers, json={"org": org, "url": receiver.url + path}
    )
    assert registered.status_code == 201, registered.text
    await _wait_visible(temporal, task_id)

    result = await _sweep(temporal, promo_settings, max_attempts=3)

    assert result.failed >= 1
    assert len(receiver.on(path)) == 3  # every attempt reached the receiver
    deliveries = await http.get(f"/v1/webhooks/{registered.json()['id']}/deliveries", headers=admin.headers)
    [record] = deliveries.json()["deliveries"]
    assert record["state"] == "failed" and record["attempts"] == 3 and record["last_status"] == 500
    await _sweep(temporal, promo_settings)  # a failed delivery is not tried again
    assert len(receiver.on(path)) == 3


async def test_webhooks_are_for_admins_only(http: httpx.AsyncClient, engine: AsyncEngine) -> None:
    org, project = new_tenant()
    human = await make_actor(engine, ActorType.HUMAN, org, project)
    body = {"org": org, "url": "https://hooks.example.com/x"}
    assert (await http.post("/v1/webhooks", headers=human.headers, json=body)).status_code == 403
    assert (await http.get("/v1/webhooks", headers=human.headers)).status_code == 403
    admin = await _admin(engine)
    missing = await http.delete(f"/v1/webhooks/{uuid.uuid4()}", headers=admin.headers)
    assert missing.status_code == 404
    for bad in (
        {"org": org, "url": "ftp://hooks.example.com/x"},
        {"org": org, "url": "https://user:pw@hooks.example.com/x"},
        {"org": org, "url": "https://hooks.example.com/x", "events": ["promotion.exploded"]},
        {"org": org, "url": "https://hooks.example.com/x", "events": []},
    ):
        answer = await http.post("/v1/webhooks", headers=admin.headers, json=bad)
        assert answer.status_code == 422, (bad, answer.text)
    listed = await http.get("/v1/webhooks", headers=admin.headers, params={"org": org})
    assert listed.json()["webhooks"] == []


async def test_webhook_to_a_private_address_is_refused_by_default(
    gateway_url: str, engine: AsyncEngine
) -> None:
    """The default gateway (no LOREGATE_WEBHOOK_ALLOW_PRIVATE): loopback, private and metadata addresses."""
    admin = await _admin(engine)
    org, _ = new_tenant()
    async with httpx.AsyncClient(base_url=gateway_url, timeout=30) as http:
        for url in ("http://127.0.0.1:9/x", "http://169.254.169.254/latest/meta-data", "http://10.0.0.7/x"):
            answer = await http.post("/v1/webhooks", headers=admin.headers, json={"org": org, "url": url})
            assert answer.status_code == 422 and "non-public" in answer.json()["detail"], (url, answer.text)
        listed = await http.get("/v1/webhooks", headers=admin.headers, params={"org": org})
        assert listed.json()["webhooks"] == []


async def test_webhooks_cli_adds_lists_shows_deliveries_and_removes(
    gateway: str, engine: AsyncEngine, receiver: Receiver
) -> None:
    admin = await _admin(engine)
    org, _ = new_tenant()
    env = cli_env(LOREGATE_URL=gateway, LOREGATE_API_KEY=admin.key)
    added = run_cli(
        "webhooks", "add", receiver.url + "/cli", "--org", org, "--event", "subtask.stuck", env=env
    )
    assert added.returncode == 0, added.stderr
    assert "signing secret (shown once): whsec_" in added.stdout
    listed = run_cli("webhooks", "list", "--org", org, "--json", env=env)
    [hook] = json.loads(listed.stdout)["webhooks"]
    assert hook["events"] == ["subtask.stuck"] and "secret" not in listed.stdout
    shown = run_cli("webhooks", "deliveries", hook["id"], "--json", env=env)
    assert shown.returncode == 0 and json.loads(shown.stdout) == {"deliveries": []}
    removed = run_cli("webhooks", "remove", hook["id"], env=env)
    assert removed.returncode == 0 and hook["id"] in removed.stdout
    again = run_cli("webhooks", "remove", hook["id"], env=env)
    assert again.returncode != 0 and "does not exist" in again.stdout + again.stderr
