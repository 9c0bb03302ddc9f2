"""Guidance lines: try the fixes that worked and the established rules, avoid what kept failing."""

from __future__ import annotations

from datetime import UTC, datetime

from governance.bug_signature import add_attempt
from governance.context_block import ContextItem, build_context_block
from governance.guidance import GuidanceLine, bug_pattern_guidance, rule_guidance, select_guidance

WHEN = datetime(2026, 1, 30, 9, 0, tzinfo=UTC)


def _solutions() -> list[dict[str, object]]:
    raw = add_attempt([], "Use dict.get with a default", succeeded=True)
    raw = add_attempt(raw, "use dict.get with a default", succeeded=True)
    raw = add_attempt(raw, "Retry the request", succeeded=False)
    raw = add_attempt(raw, "Retry the request", succeeded=False)
    return add_attempt(raw, "Restart the worker", succeeded=False)


def test_bug_pattern_guidance_tries_what_worked_and_avoids_what_kept_failing() -> None:
    lines = bug_pattern_guidance("abc123", "KeyError: <q>", _solutions())
    assert [(g.verb, g.text) for g in lines] == [
        ("try", "Use dict.get with a default (for KeyError: <q>, 2/2 passed)"),
        ("avoid", "Retry the request (for KeyError: <q>, 0/2 passed)"),
    ]
    assert lines[0].render() == (
        "- try: Use dict.get with a default (for KeyError: <q>, 2/2 passed) [mem:abc123] (unreviewed)"
    )
    held = bug_pattern_guidance("abc123", "KeyError: <q>", _solutions(), standing="human", trust=1.0)
    assert held[0].render().endswith("[mem:abc123] (human-approved, trust 1.00)")


def test_rule_guidance_established_only_prohibitions_are_avoid() -> None:
    assert rule_guidance("r1", "Never log request bodies.", 0.7) is None
    avoid = rule_guidance("r1", "Never log request bodies.", 0.9)
    assert avoid is not None and (avoid.verb, avoid.text) == ("avoid", "log request bodies.")
    follow = rule_guidance("r2", "Set a timeout on every outbound call.", 0.85)
    assert follow is not None and follow.verb == "try"


def test_select_guidance_rules_first_deduplicated_and_bounded() -> None:
    rule = rule_guidance("r2", "Set a timeout on every outbound call.", 0.85)
    assert rule is not None
    fixes = bug_pattern_guidance("abc123", "KeyError: <q>", _solutions())
    chosen = select_guidance([*fixes, rule, rule], max_lines=2)
    assert [g.citation for g in chosen] == ["r2", "abc123"]


def test_build_context_block_guidance_opens_the_block_within_budget() -> None:
    guidance = [
        GuidanceLine("try", "Use dict.get (for KeyError: <q>, 2/2 passed)", "abc123", 1.0, "verified", 0.8)
    ]
    item = ContextItem(
        "abc123", "bug_pattern", "KeyError", "KeyError: 'x' Resolved by: Use dict.get", WHEN, 0.8
    )
    block = build_context_block([item], max_tokens=500, guidance=guidance)
    assert block.text.index("### Guidance") < block.text.index("### Bug patterns")
    assert "- try: Use dict.get (for KeyError: <q>, 2/2 passed) [mem:abc123] (verified, trust 0.80)" in (
        block.text
    )
    assert block.citations == ["abc123"]
    tight = build_context_block([], max_tokens=60, guidance=guidance * 20)
    assert tight.tokens <= 60
