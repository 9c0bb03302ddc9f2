"""Cognify's redaction of a snapshot (governance/operations/promotion_cognify.py): each distinct text and
payload redacted once, every entry and candidate getting what it would get redacted alone."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from governance.cognify import rule_based_analysis
from governance.operations import promotion_cognify
from governance.operations.promotion_cognify import SnapshotRedaction, _distilled, _redacted
from governance.redaction import redact, redact_json
from governance.storage.staging import StoredEntry
from tests.governance.redaction_corpus import near_miss_samples, secret_samples

NOW = datetime(2026, 1, 5, tzinfo=UTC)


def _rows(texts: list[str], payloads: list[dict[str, Any] | None], repeat: int) -> list[StoredEntry]:
    """A big task's snapshot: the texts staged `repeat` times over, kinds and payloads cycling."""
    kinds = ("fact", "decision", "preference", "insight")
    rows = []
    for n in range(len(texts) * repeat):
        rows.append(
            StoredEntry(
                id=n + 1,
                seq=n,
                kind=kinds[n % len(kinds)],
                content=texts[n % len(texts)],
                payload=payloads[n % len(payloads)],
                actor="agent-1",
                actor_type="agent",
                idempotency_key=None,
                created_at=NOW,
            )
        )
    return rows


def _corpus() -> tuple[list[str], list[dict[str, Any] | None]]:
    secrets = secret_samples()[:120]
    texts = [s.text for s in secrets] + [s.text for s in near_miss_samples()[:40]]
    payloads: list[dict[str, Any] | None] = [
        None,
        {"key": "db.password", "password": "hunter2-correct-horse"},
        {"key": "svc.url", "value": secrets[0].text, "nested": {"token": secrets[1].secrets[0]}},
        {"name": "DB_PASSWORD", "value": "s3cr3t-value-9f8e7d"},
    ]
    return texts, payloads


def test_redacted_snapshot_entries_are_what_each_entry_redacted_alone_gives() -> None:
    texts, payloads = _corpus()
    rows = _rows(texts, payloads, repeat=5)
    entries, counts = _redacted(rows)
    expected_counts: dict[str, int] = {}
    for row, entry in zip(rows, entries, strict=True):
        alone = redact(row.content)
        assert entry.content == alone.text
        for kind, n in alone.counts.items():
            expected_counts[kind] = expected_counts.get(kind, 0) + n
        if row.payload is None:
            assert entry.payload is None
            continue
        payload, payload_counts = redact_json(row.payload)
        assert entry.payload == payload
        for kind, n in payload_counts.items():
            expected_counts[kind] = expected_counts.get(kind, 0) + n
    # every secret of the corpus is gone from every copy, and each copy is counted
    assert counts == expected_counts
    planted = {sample.text: sample.secrets for sample in secret_samples()[:120]}
    for row, entry in zip(rows, entries, strict=True):
        assert not any(secret in entry.content for secret in planted.get(row.content, ()))
    # no two entries share a payload object (one entry's consumer may not change another's)
    shared = [e.payload for e in entries if e.payload is not None]
    assert len({id(p) for p in shared}) == len(shared)


def test_distilled_candidates_are_redacted_as_each_alone_with_one_redaction_per_distinct_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    texts, payloads = _corpus()
    rows = _rows(texts, payloads, repeat=4)
    calls: list[str] = []

    def counted(text: str) -> Any:
        calls.append(text)
        return redact(text)

    monkeypatch.setattr(promotion_cognify, "redact", counted)
    redaction = SnapshotRedaction()
    entries, _ = _redacted(rows, redaction)
    analysis = rule_based_analysis("a task of repeated texts", entries, success=True)
    candidates = _distilled("t-1", "a task of repeated texts", analysis, entries, ([], []), redaction)
    by_id = {c.source_entry_ids[0]: c for c in analysis.candidates if len(c.source_entry_ids) == 1}
    checked = 0
    for candidate in candidates:
        if candidate.memory_type in ("episode", "skill") or len(candidate.source_entry_ids) != 1:
            continue
        source = by_id[candidate.source_entry_ids[0]]
        assert candidate.content == redact(source.content).text
        assert candidate.title == redact(source.title).text
        checked += 1
    assert checked >= len(rows) // 2
    # the snapshot's texts, the candidates' titles and contents and the episode: each redacted once
    assert len(calls) == len(set(calls))
    assert len(calls) < len(rows)


def test_a_redaction_rule_changed_since_an_earlier_cognify_applies_to_the_next(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # nothing is kept past a call: what the rules say at the next cognify is what its entries get
    rows = _rows(["the deploy codename is bluebird", "retry budget is 3"], [None], repeat=3)
    before, _ = _redacted(rows)
    assert before[0].content == "the deploy codename is bluebird"

    def stricter(text: str) -> Any:
        done = redact(text)
        if "bluebird" not in done.text:
            return done
        return type(done)(done.text.replace("bluebird", "[REDACTED]"), {**done.counts, "codename": 1})

    monkeypatch.setattr(promotion_cognify, "redact", stricter)
    after, counts = _redacted(rows)
    assert [e.content for e in after] == ["the deploy codename is [REDACTED]", "retry budget is 3"] * 3
    assert counts["codename"] == 3
