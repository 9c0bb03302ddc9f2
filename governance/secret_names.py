"""Names are stored and shown as sent: one that holds what looks like a secret is refused, never redacted.

A worktree name becomes part of scope keys (`worktree:<org>/<project>/<name>`), events and every memory
published there; a task id names its staging, events and workflow; a verification's branch and commit travel
in the promotion's Temporal input, which erasure reaches only by deleting the history. Redacting any of them
would change what they name, so a name the redactor would change is refused before anything is stored
(`feature/rotate my password is …`, `fix/db-ghp_…` reached scope keys, the audit trail and Temporal
histories as sent). The refusal names the field, never the value.
"""

from __future__ import annotations

from governance.errors import InvalidInput
from governance.redaction import redact_free_text

__all__ = ["refuse_secret_names"]


def refuse_secret_names(**names: str | None) -> None:
    """InvalidInput naming the first of `names` (field → value) whose value holds what looks like a secret."""
    for field, value in names.items():
        if value and redact_free_text(value) != value:
            raise InvalidInput(
                f"{field} holds what looks like a secret (names are stored and shown as sent, never "
                "redacted): choose another; nothing was done"
            )
