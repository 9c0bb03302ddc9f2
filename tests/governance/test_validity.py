"""Pure rules of keeping memory true: entry expiry, candidate expiry, derivation links."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from governance.errors import InvalidInput
from governance.validity import (
    PublishedItem,
    candidate_expiry,
    check_entry_expiry,
    derivation_links,
    entry_expiry,
)

NOW = datetime(2026, 6, 1, tzinfo=UTC)


def test_check_entry_expiry_accepts_future_time_and_ttl() -> None:
    check_entry_expiry({"expires_at": "2026-07-01T00:00:00Z"}, now=NOW)
    check_entry_expiry({"ttl_seconds": 3600}, now=NOW)
    check_entry_expiry({"other": 1}, now=NOW)
    check_entry_expiry(None, now=NOW)


@pytest.mark.parametrize(
    ("payload", "words"),
    [
        ({"expires_at": "tomorrow"}, "payload.expires_at"),
        ({"expires_at": "2026-07-01T00:00:00"}, "timezone"),
        ({"expires_at": "2026-01-01T00:00:00Z"}, "future"),
        ({"expires_at": 17}, "payload.expires_at"),
        ({"ttl_seconds": -5}, "payload.ttl_seconds"),
        ({"ttl_seconds": 1.5}, "whole number"),
        ({"ttl_seconds": True}, "payload.ttl_seconds"),
        ({"ttl_seconds": 10**12}, "ten years"),
        ({"expires_at": "2026-07-01T00:00:00Z", "ttl_seconds": 60}, "not both"),
        # the year 10000 in UTC: accepted once, it failed the promotion's plan for good
        ({"expires_at": "9999-12-31T23:59:59-12:00"}, "after the year 9998"),
        ({"expires_at": "9999-06-01T00:00:00Z"}, "payload.expires_at"),
    ],
)
def test_check_entry_expiry_refuses_bad_values_naming_the_field(
    payload: dict[str, object], words: str
) -> None:
    with pytest.raises(InvalidInput, match=words):
        check_entry_expiry(payload, now=NOW)


def test_entry_expiry_counts_ttl_from_the_entry() -> None:
    assert entry_expiry({"ttl_seconds": 60}, NOW) == NOW + timedelta(seconds=60)
    assert entry_expiry({"expires_at": "2026-07-01T00:00:00+00:00"}, NOW) == datetime(2026, 7, 1, tzinfo=UTC)
    assert entry_expiry({"expires_at": "junk"}, NOW) is None


def test_candidate_expiry_is_the_earliest_of_its_sources() -> None:
    early, late = NOW + timedelta(days=1), NOW + timedelta(days=9)
    assert candidate_expiry([1, 2, 3], {2: late, 3: early}) == early
    assert candidate_expiry([4], {2: late}) is None


def test_derivation_links_skill_and_bug_pattern_build_on_the_decision_fact() -> None:
    fact = PublishedItem("f", "fact", (10,), "db.driver")
    note = PublishedItem("n", "fact", (11,))
    skill = PublishedItem("s", "skill", (10, 11, 12, 13))
    bug = PublishedItem("b", "bug_pattern", (12, 13))
    episode = PublishedItem("e", "episode", (10, 11, 12, 13))
    links = set(derivation_links([fact, note, skill, bug, episode]))
    assert links == {("s", "f"), ("s", "n"), ("b", "f")}


def test_derivation_links_a_decision_after_the_fix_is_not_a_source() -> None:
    bug = PublishedItem("b", "bug_pattern", (1, 2))
    later = PublishedItem("f", "fact", (5,), "db.driver")
    assert derivation_links([bug, later]) == []


def test_event_kinds_of_the_api_schema_are_the_event_types() -> None:
    from typing import get_args

    from api.schemas.events import EventKind
    from governance.storage.events import EventType

    assert set(get_args(EventKind)) == {t.value for t in EventType}


def test_an_expiry_is_read_in_utc_and_a_stored_one_out_of_range_is_ignored() -> None:
    assert entry_expiry({"expires_at": "2027-01-01T09:00:00+09:00"}, None) == datetime(2027, 1, 1, tzinfo=UTC)
    assert entry_expiry({"expires_at": "9999-12-31T23:59:59-12:00"}, None) is None
