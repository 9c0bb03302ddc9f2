"""Entry kinds that name a memory type (governance/cognify.py), and gate imports that keep the type
(governance/transfer.py): a memory exported and imported through the gate is distilled into its own type."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from governance.cognify import StagedEntry, rule_based_analysis
from governance.scopes import EntryKind, MemoryType
from governance.transfer import entries_for_gate

NOW = datetime(2026, 11, 1, tzinfo=UTC)


def _memory(memory_type: str, content: str, key: str | None = None) -> dict[str, Any]:
    return {
        "id": 7,
        "citation": "abc123",
        "memory_type": memory_type,
        "title": content[:40],
        "content": content,
        "canonical_key": key,
        "importance": 0.8,
        "deprecated_at": None,
        "expires_at": None,
    }


def test_cognify_profile_entry_becomes_a_profile_candidate() -> None:
    entry = StagedEntry(
        id=11,
        seq=1,
        kind=EntryKind.PROFILE,
        content="team.reviewer: Dana reviews every migration and prefers small PRs",
        payload={"title": "Dana reviews migrations"},
    )
    analysis = rule_based_analysis("onboard the team", [entry], success=True)
    [candidate] = analysis.candidates
    assert candidate.memory_type == MemoryType.PROFILE
    assert (candidate.title, candidate.canonical_key) == ("Dana reviews migrations", "team.reviewer")
    assert candidate.source_entry_ids == [11]


def test_cognify_profile_entry_of_a_failed_task_becomes_nothing_like_every_kind() -> None:
    entries = [
        StagedEntry(id=12, seq=1, kind="profile", content="Sam works in UTC+9 and reviews in the morning"),
        StagedEntry(id=13, seq=2, kind="fact", content="The staging cluster runs Postgres 16"),
    ]
    assert rule_based_analysis("a task that failed", entries, success=False).candidates == []


@pytest.mark.parametrize(
    "memory_type",
    [MemoryType.FACT, MemoryType.PREFERENCE, MemoryType.PROFILE, MemoryType.INSIGHT, MemoryType.CODE_RULE],
)
def test_gate_import_distils_each_memory_into_its_own_type(memory_type: MemoryType) -> None:
    memory = _memory(memory_type.value, f"area.{memory_type.value}: what this {memory_type.value} says")
    [imported], skipped = entries_for_gate([(3, memory)], "d" * 64, now=NOW)
    assert skipped == {}
    staged = StagedEntry(id=1, seq=1, kind=imported.kind, content=imported.content, payload=imported.payload)
    [candidate] = rule_based_analysis("import", [staged], success=True).candidates
    assert candidate.memory_type == memory_type
    assert candidate.content == memory["content"]


def test_gate_import_keeps_a_profile_a_profile() -> None:
    memory = _memory(
        "profile", "Ari owns the billing service and is on call on Tuesdays", key="owner.billing"
    )
    [imported], _ = entries_for_gate([(5, memory)], "e" * 64, now=NOW)
    assert imported.kind == EntryKind.PROFILE
    assert imported.payload["key"] == "owner.billing"
