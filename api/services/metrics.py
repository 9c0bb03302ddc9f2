"""Counters the use cases raise (the HTTP gateway exports every metric at `/metrics`)."""

from __future__ import annotations

from prometheus_client import Counter

__all__ = ["ENTRIES_APPENDED", "ENTRIES_REPLAYED"]

ENTRIES_APPENDED = Counter("loregate_staging_entries_appended_total", "Staging entries stored")
ENTRIES_REPLAYED = Counter(
    "loregate_staging_entries_replayed_total", "Entries answered from idempotency keys"
)
