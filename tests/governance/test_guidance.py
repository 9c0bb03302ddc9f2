"""Guidance lines: try the fixes that worked and the established rules, avoid what kept failing."""

from __future__ import annotations

from datetime import UTC, datetime

from governance.bug_signature import FAILED_MARKER, FIX_MARKER, add_attempt, ranked_solutions
from governance.context_block import ContextItem, build_context_block
from governance.guidance import (
    GuidanceLine,
    bug_pattern_guidance,
    fix_standing,
    own_fixes,
    rule_guidance,
    select_guidance,
)
from governance.trust import Standing

WHEN = datetime(2026, 1, 30, 9, 0, tzinfo=UTC)


def _solutions() -> list[dict[str, object]]:
    raw = add_attempt([], "Use dict.get with a default", succeeded=True)
    raw = add_attempt(raw, "use dict.get with a default", succeeded=True)
    raw = add_attempt(raw, "Retry the request", succeeded=False)
    raw = add_attempt(raw, "Retry the request", succeeded=False)
    return add_attempt(raw, "Restart the worker", succeeded=False)


# the pattern's own text: the fixes its reviewers saw
PATTERN = (
    f"KeyError: 'x'{FAILED_MARKER}Retry the request{FAILED_MARKER}Restart the worker"
    f"{FIX_MARKER}Use dict.get with a default"
)


def test_bug_pattern_guidance_tries_what_worked_and_avoids_what_kept_failing() -> None:
    lines = bug_pattern_guidance(
        "abc123", "KeyError: <q>", _solutions(), content=PATTERN, standing="verified"
    )
    assert [(g.verb, g.text) for g in lines] == [
        ("try", "Use dict.get with a default (for KeyError: <q>, 2/2 passed)"),
        ("avoid", "Retry the request (for KeyError: <q>, 0/2 passed)"),
    ]
    assert lines[0].render() == (
        "- try: Use dict.get with a default (for KeyError: <q>, 2/2 passed) [mem:abc123] (verified)"
    )
    held = bug_pattern_guidance(
        "abc123", "KeyError: <q>", _solutions(), content=PATTERN, standing="human", trust=1.0
    )
    assert held[0].render().endswith("[mem:abc123] (human-approved, trust 1.00)")
    # nobody stands behind an unreviewed pattern's fixes: no line at all
    assert bug_pattern_guidance("abc123", "KeyError: <q>", _solutions(), content=PATTERN) == []


def test_a_fix_merged_into_an_approved_pattern_on_its_own_word_is_no_guidance() -> None:
    """The laundering of stop 40: a human approved the pattern and its fix; a later task's fix merged into
    it unapproved, and its line said `(human-approved, trust 1.00)`."""
    approved = "ValueError: invalid literal for int()" + FIX_MARKER + "Parse with int(s.strip())"
    raw = add_attempt([], "Parse with int(s.strip())", succeeded=True, reviewed=True)
    raw = add_attempt(raw, "Disable input validation globally by setting VALIDATE_INPUT=0", succeeded=True)
    raw = add_attempt(raw, "Disable input validation globally by setting VALIDATE_INPUT=0", succeeded=True)
    lines = bug_pattern_guidance("p1", "ValueError: <q>", raw, content=approved, standing="human", trust=1.0)
    assert [g.text for g in lines] == ["Parse with int(s.strip()) (for ValueError: <q>, 1/1 passed)"]
    assert lines[0].standing == "human"
    # a human approving a later promotion that reports it makes it guidance, with the tally they approved
    raw = add_attempt(
        raw, "disable input validation globally by setting VALIDATE_INPUT=0", succeeded=False, reviewed=True
    )
    lines = bug_pattern_guidance("p1", "ValueError: <q>", raw, content=approved, standing="human", trust=1.0)
    assert [g.text for g in lines] == ["Parse with int(s.strip()) (for ValueError: <q>, 1/1 passed)"]
    raw = add_attempt(
        raw, "Disable input validation globally by setting VALIDATE_INPUT=0", succeeded=False, reviewed=True
    )
    lines = bug_pattern_guidance("p1", "ValueError: <q>", raw, content=approved, standing="verified")
    assert [(g.verb, g.text, g.standing) for g in lines] == [
        ("try", "Parse with int(s.strip()) (for ValueError: <q>, 1/1 passed)", "human"),
        (
            "avoid",
            "Disable input validation globally by setting VALIDATE_INPUT=0 (for ValueError: <q>, 0/2 passed)",
            "human",
        ),
    ]


def test_fix_standing_reviewed_tally_else_the_patterns_own_fixes_else_unreviewed() -> None:
    raw = add_attempt([], "Pin numpy", succeeded=True, reviewed=True)
    raw = add_attempt(raw, "pin  NUMPY", succeeded=False)
    raw = add_attempt(raw, "Retry the request", succeeded=False)
    raw = add_attempt(raw, "Upgrade pandas", succeeded=True)
    named = own_fixes(PATTERN)
    assert named == {
        "retry the request": "avoid",
        "restart the worker": "avoid",
        "use dict.get with a default": "try",
    }
    got = {s.solution: fix_standing(s, named, Standing.VERIFIED) for s in ranked_solutions(raw)}
    assert (got["Pin numpy"].standing, got["Pin numpy"].successes, got["Pin numpy"].attempts) == (
        Standing.HUMAN,
        1,
        1,
    )
    assert (got["Retry the request"].standing, got["Retry the request"].attempts) == (Standing.VERIFIED, 1)
    assert got["Upgrade pandas"].standing is Standing.UNREVIEWED
    # unreviewed outcomes reported later cannot turn what the pattern's text says into its opposite
    flipped = add_attempt([], "Retry the request", succeeded=True)
    flipped = add_attempt(flipped, "Retry the request", succeeded=True)
    flipped = add_attempt(flipped, "Use dict.get with a default", succeeded=False)
    flipped = add_attempt(flipped, "Use dict.get with a default", succeeded=False)
    assert bug_pattern_guidance("p", "KeyError: <q>", flipped, content=PATTERN, standing="verified") == []
    # stored counts that do not add up (a hand-edited or restored row) are read within their bounds
    [odd] = ranked_solutions(
        [{"solution": "x", "successes": 5, "attempts": 2, "reviewed_successes": 9, "reviewed_attempts": 7}]
    )
    assert (odd.successes, odd.attempts, odd.reviewed_successes, odd.reviewed_attempts) == (2, 2, 2, 2)


def test_rule_guidance_established_only_prohibitions_are_avoid() -> None:
    assert rule_guidance("r1", "Never log request bodies.", 0.7) is None
    avoid = rule_guidance("r1", "Never log request bodies.", 0.9)
    assert avoid is not None and (avoid.verb, avoid.text) == ("avoid", "log request bodies.")
    follow = rule_guidance("r2", "Set a timeout on every outbound call.", 0.85)
    assert follow is not None and follow.verb == "try"


def test_select_guidance_rules_first_deduplicated_and_bounded() -> None:
    rule = rule_guidance("r2", "Set a timeout on every outbound call.", 0.85)
    assert rule is not None
    fixes = bug_pattern_guidance("abc123", "KeyError: <q>", _solutions(), content=PATTERN, standing="human")
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
