"""The answer of the liveness check (`GET /healthz`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

__all__ = ["HealthPublic"]


class HealthPublic(BaseModel):
    """The gateway is up and reaches its database (otherwise the answer is a 503 refusal)."""

    status: Literal["ok"] = "ok"
    database: Literal["ok"] = "ok"
