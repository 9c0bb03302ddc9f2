"""Cognify and trust: insights come from reflection only, and an agent's rule is a proposal for a human."""

from __future__ import annotations

from governance.cognify import StagedEntry, needs_human_approval, rule_based_analysis


def _entries(actor_type: str | None) -> list[StagedEntry]:
    return [
        StagedEntry(
            1,
            1,
            "insight",
            "KeyError recurred in 5 tasks: guard lookups",
            {"title": "Reflection insight (5 tasks, 5 succeeded)"},
            actor_type=actor_type,
        ),
        StagedEntry(2, 2, "rule", "Never log request bodies.", actor_type=actor_type),
        StagedEntry(3, 3, "result", "done", actor_type=actor_type),
    ]


def test_an_agents_insight_is_a_fact_candidate_and_its_rule_a_proposal() -> None:
    analysis = rule_based_analysis("t", _entries("agent"), success=True)
    kinds = {c.memory_type: c for c in analysis.candidates}
    assert set(kinds) == {"fact", "code_rule"}  # no insight: it did not come from reflection
    assert kinds["code_rule"].needs_human_approval and not kinds["fact"].needs_human_approval
    # at every scope above task the plan waits for a human; a task-scope plan binds nobody else
    for scope in ("worktree", "project", "org"):
        assert needs_human_approval(analysis.candidates, scope)
    assert not needs_human_approval(analysis.candidates, "task")


def test_reflections_insight_stays_an_insight_and_a_humans_rule_needs_no_second_human() -> None:
    reflected = rule_based_analysis("t", _entries("system"), success=True)
    assert "insight" in {c.memory_type for c in reflected.candidates}
    assert any(c.needs_human_approval for c in reflected.candidates)  # the system's rule: a proposal too
    human = rule_based_analysis("t", _entries("human"), success=True)
    assert {c.memory_type for c in human.candidates} == {"fact", "code_rule"}
    assert not needs_human_approval(human.candidates, "org")


def test_an_entry_of_unknown_author_keeps_its_kind_and_its_rule_needs_a_human() -> None:
    unknown = rule_based_analysis("t", _entries(None), success=True)
    assert {c.memory_type for c in unknown.candidates} == {"insight", "code_rule"}
    assert needs_human_approval(unknown.candidates, "worktree")
