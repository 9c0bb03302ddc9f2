"""Every change to published memory, each with its `memory_events` row in the same transaction.

Why it looks like this (docs/architecture.md, "Governance rules"):
- Parallel promotions must not leave two copies of one fact or two heads of one canonical key. Publishers
  take a transaction-scoped advisory lock: EXCLUSIVE on the target scope key, SHARED on the wider scope
  keys they may reinforce. Publishers into one scope are serialised; the partial unique index
  `memories_one_active_head` (and the unique `supersedes_id` index, which keeps chains linear) stay the
  last line of defence.
- Trust and usefulness change through single SQL statements (`confidence = LEAST(1, confidence + b)`),
  never read-modify-write in Python, so concurrent boosts add up. A principal's validation counts once per
  (memory, source), and its feedback is one vote (its latest), so neither can be spammed.
- Every function takes the caller's `AsyncConnection` and runs inside its transaction: the promotion
  publishes a whole plan atomically. A `dedupe_key` makes a retried activity return the recorded outcome
  instead of writing twice; with a `request_hash`, the key is bound to one request (another is a Conflict).

This module is the public face; the code lives in memory_rows.py (types, locks, events), publish.py
(neighbours, merge) and memory_changes.py (boost, feedback, history); publishing a candidate is
governance/operations/publishing.py, superseding and retiring governance/operations/changes.py.
"""

from __future__ import annotations

from governance.storage.events import EventType, record_event
from governance.storage.memory_changes import (
    MemoryTenant,
    Validation,
    boost_memory,
    memory_history,
    memory_tenant,
    record_feedback,
)
from governance.storage.memory_rows import (
    MemoryVersion,
    NewMemory,
    PublishOutcome,
    lock_scopes,
    make_citation,
    resolve_memory_id,
)
from governance.storage.publish import expire_in_scope, find_neighbours
from governance.storage.tables import vector_literal

__all__ = [
    "MemoryTenant",
    "Validation",
    "memory_tenant",
    "EventType",
    "NewMemory",
    "PublishOutcome",
    "MemoryVersion",
    "make_citation",
    "vector_literal",
    "lock_scopes",
    "expire_in_scope",
    "find_neighbours",
    "resolve_memory_id",
    "boost_memory",
    "record_feedback",
    "memory_history",
    "record_event",
]
