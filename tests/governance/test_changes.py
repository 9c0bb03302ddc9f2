"""The pure rules of change requests: a superseding memory's trust, redacted content and own title."""

from __future__ import annotations

import pytest

from governance.changes import ChangeTrust, change_trust, proposed_content
from governance.errors import InvalidInput


@pytest.mark.parametrize(
    ("trust", "expected"),
    [
        (ChangeTrust.HUMAN_VALIDATED, (1.0, "human_approved")),
        (ChangeTrust.APPROVED, (0.6, None)),
        (ChangeTrust.DRAFT, (0.3, None)),
    ],
)
def test_change_trust_follows_whose_word_stands_behind_it(
    trust: ChangeTrust, expected: tuple[float, str | None]
) -> None:
    confidence, source = change_trust(trust)
    assert (confidence, source) == (pytest.approx(expected[0]), expected[1])


def test_proposed_content_redacts_secrets_and_titles_from_its_own_first_line() -> None:
    proposed = proposed_content("ci.token: rotate monthly\nset password=hunter2hunter2 in the vault")
    assert "hunter2hunter2" not in proposed.content and proposed.redaction_counts
    assert proposed.title == "ci.token: rotate monthly"


def test_proposed_content_redacts_a_given_title() -> None:
    proposed = proposed_content("the bucket key rotated", title="key AKIAQ7R3ZT5XW2MNB4KD rotated")
    assert "AKIAQ7R3ZT5XW2MNB4KD" not in proposed.title and proposed.title


def test_proposed_content_nothing_left_is_invalid_input() -> None:
    with pytest.raises(InvalidInput, match="empty"):
        proposed_content("<private>the whole thing</private>")
