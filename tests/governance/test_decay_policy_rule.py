"""The decay policy a published memory gets from its source entries' payloads (governance/trust.py)."""

from __future__ import annotations

from typing import Any

import pytest

from governance.errors import InvalidInput
from governance.trust import DecayPolicy, check_entry_decay_policy, published_decay_policy


@pytest.mark.parametrize("payload", [None, {}, {"other": 1}, {"decay_policy": "stable"}, "text", [1]])
def test_check_entry_decay_policy_accepts_known_or_absent(payload: Any) -> None:
    check_entry_decay_policy(payload)


@pytest.mark.parametrize("value", ["forever", "", "STABLE", 1, None, ["stable"]])
def test_check_entry_decay_policy_refuses_others_naming_the_field(value: Any) -> None:
    with pytest.raises(InvalidInput, match=r"entries\[2\]\.payload\.decay_policy must be one of"):
        check_entry_decay_policy({"decay_policy": value}, where="entries[2].payload")


@pytest.mark.parametrize(
    "memory_type, asked, human, expected",
    [
        ("fact", [], False, DecayPolicy.STABLE),
        ("episode", [], False, DecayPolicy.RECENCY_BIAS),
        ("fact", [None], True, DecayPolicy.STABLE),
        ("fact", ["recency_bias"], False, DecayPolicy.RECENCY_BIAS),
        ("episode", ["stable", "stable"], False, DecayPolicy.STABLE),
        ("episode", ["stable", None], False, DecayPolicy.RECENCY_BIAS),  # not every source asked
        ("fact", ["stable", "recency_bias"], True, DecayPolicy.STABLE),  # sources disagree: default
        ("fact", ["manual_only"], True, DecayPolicy.MANUAL_ONLY),
        ("fact", ["manual_only"], False, DecayPolicy.STABLE),  # never fading is a human's call
        ("fact", ["forever"], True, DecayPolicy.STABLE),  # stored before the append check
    ],
)
def test_published_decay_policy(
    memory_type: str, asked: list[str | None], human: bool, expected: DecayPolicy
) -> None:
    assert published_decay_policy(memory_type, asked, human_approved=human) is expected
