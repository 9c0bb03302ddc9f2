"""Properties of governance/redaction over arbitrary text: it never raises, never lets a planted catalogue
token through wherever it sits, and redacting redacted text changes nothing more."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from governance.redaction import PLACEHOLDER, redact, redact_free_text

TOKEN = "glpat-" + "Xk3mQ9vR2tY7wB5nC8dF"
_TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",)),  # any code point a JSON body can carry
    max_size=300,
)


@settings(max_examples=300, deadline=None)
@given(_TEXT)
def test_redact_any_text_never_raises_and_is_stable(text: str) -> None:
    once = redact(text).text
    assert redact(once).text == once


@settings(max_examples=200, deadline=None)
@given(_TEXT, _TEXT)
def test_redact_removes_a_token_between_any_texts(before: str, after: str) -> None:
    text = f"{before} {TOKEN} {after}"
    out = redact_free_text(text)
    assert out is not None and TOKEN not in out and PLACEHOLDER in out
