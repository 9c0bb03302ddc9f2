"""What every retriever of memories shares: which memories a reader sees, and how many one signal may visit.

Visibility is decided here, in SQL, and nowhere else: a reader passes the scope keys its task sees
(`governance.scopes.visible_scope_keys`) and only memories under those keys are ever read. Deprecated
(superseded or retired) and expired memories are left out unless history is asked for.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import bindparam
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.types import Text

__all__ = ["KEYS", "TYPES", "MATCH_BUDGET", "visible_filters"]

# memories the full-text retriever's plain words may bring in (`driving_terms`); a file linked to more
# visible episodes leads `file_neighbours` nowhere
MATCH_BUDGET = 1_000

KEYS = bindparam("keys", type_=ARRAY(Text))
TYPES = bindparam("types", type_=ARRAY(Text))


def visible_filters(types: Sequence[str] | None, include_history: bool) -> str:
    """The WHERE clause over `memories` of a reader's scope keys (`:keys`), and of `:types` when given."""
    clauses = ["scope_key = ANY(:keys)"]
    if not include_history:
        clauses += ["deprecated_at IS NULL", "(expires_at IS NULL OR expires_at > now())"]
    if types:
        clauses.append("memory_type = ANY(:types)")
    return " AND ".join(clauses)
