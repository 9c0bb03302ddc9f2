"""Metrics the use cases raise (the HTTP gateway exports every metric at `/metrics`).

Counters and histograms here count what this gateway process did (sum them over processes). What the whole
platform holds (pending change requests, promotions by outcome, prunes …) is read from Postgres at scrape
time by `api/http/metrics.py`.
"""

from __future__ import annotations

from prometheus_client import Counter, Histogram

__all__ = [
    "ENTRIES_APPENDED",
    "ENTRIES_REPLAYED",
    "RATE_LIMITED",
    "QUOTA_REFUSED",
    "SEARCH_SECONDS",
    "LIVE_WARNINGS",
    "CITATIONS_COUNTED",
]

ENTRIES_APPENDED = Counter("loregate_staging_entries_appended_total", "Staging entries stored")
LIVE_WARNINGS = Counter(
    "loregate_live_warnings_total", "Unreviewed warnings from other tasks given to agents", ["kind"]
)
CITATIONS_COUNTED = Counter("loregate_citations_counted_total", "Uses of memories recorded", ["independent"])
ENTRIES_REPLAYED = Counter(
    "loregate_staging_entries_replayed_total", "Entries answered from idempotency keys"
)
RATE_LIMITED = Counter(
    "loregate_rate_limited_total",
    "Calls refused by a rate limit (429 / RESOURCE_EXHAUSTED), by the bucket that was empty",
    ["scope", "budget"],  # scope: principal | tenant; budget: requests | search
)
QUOTA_REFUSED = Counter(
    "loregate_staging_quota_refused_total",
    "Appends refused by a staging quota, by quota",
    ["quota"],  # task_entries | task_bytes | tenant_entries_per_day | tenant_bytes_per_day
)
SEARCH_SECONDS = Histogram(
    "loregate_search_seconds",
    "Time to answer a search or a context block (embedding, retrieval, ranking)",
    ["endpoint"],  # search | context
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)

# every label set is exported from the start (at 0): a rate() over a series that appears only with its
# first event misses that event, and a dashboard's panel would show "no data" instead of 0
for _scope in ("principal", "tenant"):
    for _budget in ("requests", "search"):
        RATE_LIMITED.labels(_scope, _budget)
for _quota in ("task_entries", "task_bytes", "tenant_entries_per_day", "tenant_bytes_per_day"):
    QUOTA_REFUSED.labels(_quota)
for _endpoint in ("search", "context"):
    SEARCH_SECONDS.labels(_endpoint)
