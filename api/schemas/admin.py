"""Request and response models of run-time policy administration."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["PolicyRule", "PolicyList"]


class PolicyRule(BaseModel):
    """`role` may (or may not, with effect deny) do `action` at `scope`; `*` matches anything."""

    model_config = ConfigDict(extra="forbid")

    role: str = Field(min_length=1, max_length=64)
    # a rule for a scope that does not exist would silently match nothing, so it is refused (422)
    scope: Literal["task", "worktree", "project", "org", "policy", "*"]
    action: str = Field(min_length=1, max_length=32)
    effect: Literal["allow", "deny"] = "allow"


class PolicyList(BaseModel):
    rules: list[PolicyRule]
