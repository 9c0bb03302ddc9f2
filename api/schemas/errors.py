"""The body of every refusal, on every channel."""

from __future__ import annotations

from pydantic import BaseModel

__all__ = ["ErrorBody"]


class ErrorBody(BaseModel):
    """Every refusal: a machine-readable type and a message that says what is wrong."""

    error: str
    detail: str
