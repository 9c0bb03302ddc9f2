"""A live warning's texts are redacted whole, then shortened: a secret across the cut never shows in part.

From outside: a fix padded so that the 300-character cut fell inside a database URL's password reached
another agent's append answer as `postgresql://app:L8MNaLN8YJbco…` (13 of 14 characters), a card as
`4539 4441 8882 2…` (13 of 16 digits): cut first, the rest had lost the shape the redactor knows.
"""

from __future__ import annotations

import pytest

from governance.live import WarningKind, screen
from tests.governance.test_live import warning

PASSWORD = "L8MNaLN8YJbcoQ"
CARD = "4539 4441 8882 2946"  # Luhn-valid


@pytest.mark.parametrize("secret", [f"postgresql://app:{PASSWORD}@db.internal:5432/prod", f"card {CARD}"])
@pytest.mark.parametrize("cut_after", range(-12, 12, 3))
def test_a_secret_across_the_cut_is_redacted_not_shortened(secret: str, cut_after: int) -> None:
    """The secret placed so that character 300 falls anywhere inside it (and just around it)."""
    pad = "x" * (300 - len("Fixed: ") - len(secret) // 2 + cut_after)
    screened = screen(warning(WarningKind.FIX, "OSError: boundary 1", detail=f"Fixed: {pad} {secret} end"))
    assert screened is not None
    shown = screened.detail or ""
    assert PASSWORD[:6] not in shown and "4539 4441" not in shown, shown


def test_a_long_text_is_still_shortened_and_a_secret_past_the_screened_part_never_shows() -> None:
    words = " ".join(f"word{n}" for n in range(2000))
    screened = screen(warning(detail=f"{words} ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"))
    shown = screened.detail if screened is not None else None
    assert shown is not None and len(shown) <= 300 and "ghp_" not in shown
