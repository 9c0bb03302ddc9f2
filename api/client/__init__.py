"""The Python client of the HTTP gateway, blocking (`LoregateClient`) and asyncio (`AsyncLoregateClient`).

Orchestrators, the CLI, the MCP server and the tests all talk to loregate through this module. Every answer
is the gateway's own response model from `api.schemas` (`client.search(...)` returns a `SearchPublic`), and
every refusal is one typed exception (api/client/errors.py) carrying the API's error code, message and status.

The API is declared once, in `_Api`: each method only builds its request and names the model of its answer
(api/client/transport.py); the two clients differ only in how they send it. To add a call, add one method
to `_Api`:

    @endpoint(ThingPublic)
    def thing(self, thing_id: str, *, note: str | None = None) -> Request:
        return Request("POST", f"/v1/things/{_seg(thing_id)}", drop_none({"note": note}))

Configuration comes from the arguments or the environment: `LOREGATE_URL` (default
http://127.0.0.1:8080) and `LOREGATE_API_KEY`. Importing this module loads no server dependency.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from api.client.errors import (
    ApprovalRequiredError,
    ConflictError,
    InvalidInputError,
    LimitExceededError,
    LoregateError,
    NotFoundError,
    PolicyDeniedError,
    RateLimitedError,
    ServerError,
    UnauthenticatedError,
    UnavailableError,
    error_from_response,
)
from api.client.transport import (
    DEFAULT_TIMEOUT,
    DEFAULT_URL,
    AsyncTransport,
    Request,
    SyncTransport,
    drop_none,
    endpoint,
    pages,
)
from api.schemas.approaches import ApproachPublic, CheckPublic
from api.schemas.approvals import ApprovalTokenPublic
from api.schemas.change_requests import ChangeDecisionPublic, ChangeRequestList, ChangeRequestPublic
from api.schemas.citations import CitationsAck, MostUsedPublic, UsedByPublic
from api.schemas.decisions import BatchDecisionPublic
from api.schemas.episodes import ProjectKnowledgePublic
from api.schemas.erasure import ErasurePublic
from api.schemas.events import EventsPage
from api.schemas.health import HealthPublic
from api.schemas.learning import BugMatchPublic, ObservationPublic, RuleCandidatesPublic
from api.schemas.memories import FeedbackPublic, ValidatePublic
from api.schemas.patterns import CorrectionPublic, FromPatchPublic
from api.schemas.promotions import (
    DecisionPublic,
    PlanEntryPublic,
    PromotionList,
    PromotionPlanPage,
    PromotionPublic,
    PromotionStarted,
    TaskPromotions,
)
from api.schemas.reflections import ReflectionsPage, ReflectionStarted
from api.schemas.review import ConfirmPublic, ReviewPublic
from api.schemas.search import ContextPublic, MemoryPublic, SearchPublic
from api.schemas.staging import EntriesAck, EntriesPage, EntryPublic, TaskPublic
from api.schemas.webhooks import DeliveryList, WebhookCreated, WebhookList, WebhookPublic
from api.schemas.working_memory import FileHistoryPublic, ProjectStatsPublic, WorkingMemoryPublic

__all__ = [
    "DEFAULT_URL",
    "DEFAULT_TIMEOUT",
    "Entry",
    "LoregateClient",
    "AsyncLoregateClient",
    "LoregateError",
    "UnauthenticatedError",
    "PolicyDeniedError",
    "NotFoundError",
    "ConflictError",
    "LimitExceededError",
    "InvalidInputError",
    "RateLimitedError",
    "ApprovalRequiredError",
    "UnavailableError",
    "ServerError",
    "error_from_response",
]


@dataclass(frozen=True)
class Entry:
    """One staging entry to append. The actor is whoever owns the API key, so there is no actor field."""

    kind: str
    content: str
    payload: Any = None
    idempotency_key: str | None = None

    def as_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"kind": self.kind, "content": self.content}
        if self.payload is not None:
            body["payload"] = self.payload
        if self.idempotency_key is not None:
            body["idempotency_key"] = self.idempotency_key
        return body


EntryLike = Entry | Mapping[str, Any]


def _entries_json(entries: EntryLike | Sequence[EntryLike]) -> list[dict[str, Any]]:
    """One entry or a batch, as the `entries` list of the request body."""
    if isinstance(entries, (Entry, Mapping)):
        entries = [entries]
    return [e.as_json() if isinstance(e, Entry) else dict(e) for e in entries]


def _code(files: Sequence[str] | None, symbols: Sequence[str] | None) -> dict[str, Any]:
    """The code locations of a read, only where given."""
    return drop_none({"files": list(files) if files else None, "symbols": list(symbols) if symbols else None})


def _seg(value: str) -> str:
    """A path segment: ids are quoted so `mem:abc` or a stray `/` cannot change the route.

    An empty id would name another route (`/v1/memories/` is the gateway's redirect to the listing, an
    empty answer), and `.` or `..` would be resolved away by the URL, so they are refused or kept literal.
    """
    if not value:
        raise InvalidInputError("invalid_input", "an id in the request path is empty", 422)
    if value in (".", ".."):
        return value.replace(".", "%2E")
    return quote(value, safe=":")


def _next_entries(request: Request, page: EntriesPage) -> Request | None:
    return None if page.next_after_seq is None else request.with_params(after_seq=page.next_after_seq)


def _next_plan_page(request: Request, page: PromotionPlanPage) -> Request | None:
    return None if page.next_offset is None else request.with_params(offset=page.next_offset)


class _Api:
    """Every call of the v1 API, declared once for both clients (paths and field names are stable)."""

    @endpoint(HealthPublic)
    def health(self) -> Request:
        """Whether the gateway is up and reaches its database (`UnavailableError` when it does not)."""
        return Request("GET", "/healthz")

    # staging

    @endpoint(TaskPublic)
    def open_task(
        self, *, org: str, project: str, worktree: str, description: str, task_id: str | None = None
    ) -> Request:
        """Open a task in a tenant (orchestrators and humans); `task_id` is optional."""
        body = {"org": org, "project": project, "worktree": worktree, "description": description}
        return Request("POST", "/v1/tasks", drop_none({**body, "task_id": task_id}))

    @endpoint(TaskPublic)
    def task(self, task_id: str) -> Request:
        """A task and where it stands."""
        return Request("GET", f"/v1/tasks/{_seg(task_id)}")

    @endpoint(EntriesAck)
    def append(self, task_id: str, entries: EntryLike | Sequence[EntryLike]) -> Request:
        """Append one entry or a batch (all or nothing) to the task's staging log."""
        return Request("POST", f"/v1/tasks/{_seg(task_id)}/entries", {"entries": _entries_json(entries)})

    @pages(EntriesPage, EntryPublic, lambda page: page.entries, _next_entries)
    def entries(self, task_id: str, *, after_seq: int = 0, page_size: int = 100) -> Request:
        """Every staging entry after `after_seq`, in order, fetched a page at a time."""
        params = {"after_seq": after_seq, "limit": page_size}
        return Request("GET", f"/v1/tasks/{_seg(task_id)}/entries", params=params)

    # the promotion gate

    @endpoint(PromotionStarted)
    def start_promotion(
        self, task_id: str, target_scope: str, verification: Mapping[str, Any] | None = None
    ) -> Request:
        """Start the task's promotion into `target_scope` (a second start returns the running one)."""
        body = drop_none({"target_scope": target_scope, "verification": verification})
        return Request("POST", f"/v1/tasks/{_seg(task_id)}/promotion", body)

    @endpoint(PromotionPublic)
    def promotion(self, task_id: str, number: int | None = None) -> Request:
        """Where the task's latest promotion (or promotion `number`) stands, with its plan's first page."""
        return Request("GET", f"/v1/promotions/{_seg(task_id)}", params=drop_none({"number": number}))

    @endpoint(TaskPromotions)
    def task_promotions(self, task_id: str) -> Request:
        """Every promotion of the task, by number: the staging each took and how it ended."""
        return Request("GET", f"/v1/tasks/{_seg(task_id)}/promotions")

    @endpoint(TaskPromotions)
    def close_task(self, task_id: str) -> Request:
        """Close the task: no more entries, no more promotions (orchestrator or human)."""
        return Request("POST", f"/v1/tasks/{_seg(task_id)}/close", {})

    @endpoint(PromotionPlanPage)
    def promotion_plan(self, task_id: str, offset: int = 0, limit: int | None = None) -> Request:
        """A page of the promotion's plan with full contents (`next_offset` continues)."""
        params = drop_none({"offset": offset, "limit": limit})
        return Request("GET", f"/v1/promotions/{_seg(task_id)}/plan", params=params)

    @pages(PromotionPlanPage, PlanEntryPublic, lambda page: page.items, _next_plan_page)
    def promotion_plan_all(self, task_id: str, *, page_size: int = 500) -> Request:
        """Every entry of the promotion's plan, in plan order, fetched a page at a time."""
        params = {"offset": 0, "limit": page_size}
        return Request("GET", f"/v1/promotions/{_seg(task_id)}/plan", params=params)

    @endpoint(PromotionList)
    def promotions(self, *, state: str | None = None, limit: int | None = None) -> Request:
        """Promotions of tasks this key may read (`state="awaiting_approval"`: those waiting for a human)."""
        return Request("GET", "/v1/promotions", params=drop_none({"state": state, "limit": limit}))

    @endpoint(PromotionPublic)
    def verify(self, task_id: str, source: str, success: bool = True) -> Request:
        """The verification evidence a promotion waits for (given once)."""
        body = {"source": source, "success": success}
        return Request("POST", f"/v1/promotions/{_seg(task_id)}/verify", body)

    @endpoint(DecisionPublic)
    def approve(
        self, task_id: str, note: str | None = None, items: list[dict[str, Any]] | None = None
    ) -> Request:
        """Approve a promotion awaiting approval; the approver is this key's principal.

        `items`: plan items rejected or edited (`{"index", "decision": "reject"|"edit", "reason", "title",
        "content"}`); the rest publish as planned.
        """
        return Request(
            "POST",
            f"/v1/promotions/{_seg(task_id)}/approve",
            drop_none({"note": note, "items": items or None}),
        )

    @endpoint(DecisionPublic)
    def reject(self, task_id: str, note: str | None = None) -> Request:
        """Reject a promotion awaiting approval; the approver is this key's principal."""
        return Request("POST", f"/v1/promotions/{_seg(task_id)}/reject", drop_none({"note": note}))

    @endpoint(ApprovalTokenPublic)
    def approval_token(self, task_id: str) -> Request:
        """A short-lived token to decide this promotion as this key's principal from the Temporal UI."""
        return Request("POST", f"/v1/promotions/{_seg(task_id)}/approval-token")

    # the read path

    @endpoint(SearchPublic)
    def search(
        self,
        query: str,
        *,
        task_id: str,
        k: int | None = None,
        types: Sequence[str] | None = None,
        intent: str | None = None,
        include_history: bool = False,
        compact: bool = False,
        files: Sequence[str] | None = None,
        symbols: Sequence[str] | None = None,
        code_filter: bool = False,
    ) -> Request:
        """Hybrid search of the memories the task can see; `compact` results carry citation, title, type.

        `files` / `symbols` raise the memories of tasks that touched them (`code_filter`: only those)."""
        body = {"query": query, "task_id": task_id, "k": k, "intent": intent}
        body = drop_none({**body, "types": list(types) if types else None, **_code(files, symbols)})
        # only asked-for options are sent, so a gateway without them still answers plain searches
        flags = {"include_history": include_history, "compact": compact, "code_filter": code_filter}
        return Request("POST", "/v1/search", {**body, **{name: True for name, on in flags.items() if on}})

    @endpoint(ContextPublic)
    def context(
        self,
        query: str,
        *,
        task_id: str,
        max_tokens: int | None = None,
        files: Sequence[str] | None = None,
        symbols: Sequence[str] | None = None,
        short_term: bool = True,
    ) -> Request:
        """The `[MEMORY CONTEXT]` block for a prompt, with `[mem:<citation>]` marks; it ends with the task's
        own latest decisions and errors unless `short_term` is False."""
        body = drop_none(
            {"query": query, "task_id": task_id, "max_tokens": max_tokens, **_code(files, symbols)}
        )
        if not short_term:
            body["short_term"] = False
        return Request("POST", "/v1/context", body)

    @endpoint(FileHistoryPublic)
    def file_history(self, path: str, *, task_id: str, limit: int | None = None) -> Request:
        """What happened around a file: episodes, bug patterns, rules and decisions, newest first, cited."""
        params = drop_none({"path": path, "task_id": task_id, "limit": limit})
        return Request("GET", "/v1/files/history", params=params)

    @endpoint(ProjectStatsPublic)
    def project_stats(self, *, task_id: str, limit: int | None = None) -> Request:
        """The reader's project in numbers: tasks, success rate, most-touched files, hotspots, errors."""
        return Request("GET", "/v1/projects/stats", params=drop_none({"task_id": task_id, "limit": limit}))

    @endpoint(ProjectKnowledgePublic)
    def project_knowledge(self, project: str) -> Request:
        """The project's latest computed hotspots and statistics, with when they were computed."""
        return Request("GET", f"/v1/projects/{_seg(project)}/knowledge")

    # a task's working memory

    @endpoint(WorkingMemoryPublic)
    def working_memory(self, task_id: str) -> Request:
        """The task's hypotheses, files and symbols, latest errors, decisions and tool calls, and counts."""
        return Request("GET", f"/v1/tasks/{_seg(task_id)}/working-memory")

    @endpoint(WorkingMemoryPublic)
    def update_working_memory(
        self,
        task_id: str,
        *,
        hypotheses: Sequence[Mapping[str, Any]] = (),
        files: Sequence[str] = (),
        symbols: Sequence[str] = (),
    ) -> Request:
        """Set hypotheses (`{text, confidence, evidence_ids?}`; at 0.9 one becomes a decision) and track
        files and symbols; the working memory after."""
        body = {"hypotheses": [dict(h) for h in hypotheses], "files": list(files), "symbols": list(symbols)}
        return Request("POST", f"/v1/tasks/{_seg(task_id)}/working-memory", body)

    @endpoint(MemoryPublic)
    def memory(self, citation: str) -> Request:
        """A memory by citation (`mem:abc123`, `abc123`) or id, with its provenance and history."""
        return Request("GET", f"/v1/memories/{_seg(citation)}")

    @endpoint(CitationsAck)
    def cite(self, task_id: str, citations: Sequence[str]) -> Request:
        """Declare the memories a task used (`[mem:…]` in its staging counts too); once per task, caller."""
        return Request("POST", f"/v1/tasks/{_seg(task_id)}/citations", {"citations": list(citations)})

    @endpoint(UsedByPublic)
    def used_by(self, citation: str) -> Request:
        """The tasks that cited or declared a memory (those the caller may not read are only counted)."""
        return Request("GET", f"/v1/memories/{_seg(citation)}/used-by")

    @endpoint(MostUsedPublic)
    def most_used(self, task_id: str, *, limit: int | None = None) -> Request:
        """The memories a task sees, most used by principals independent of them first."""
        return Request(
            "GET", "/v1/citations/most-used", params=drop_none({"task_id": task_id, "limit": limit})
        )

    # memory that learns

    @endpoint(BugMatchPublic)
    def match_bug_pattern(
        self, error: str, *, task_id: str, stack: str | None = None, k: int | None = None
    ) -> Request:
        """Bug patterns matching an error (same signature first), each with its best solutions first."""
        body = drop_none({"error": error, "task_id": task_id, "stack": stack, "k": k})
        return Request("POST", "/v1/bug-patterns/match", body)

    @endpoint(ObservationPublic)
    def observe_rule(
        self, memory: str, outcome: str, *, note: str | None = None, task_id: str | None = None
    ) -> Request:
        """How a code rule fared (`followed_passed`, `violated`, `rejected_by_human`): its EMA moves, once
        per principal, rule and task."""
        body = drop_none({"outcome": outcome, "note": note, "task_id": task_id})
        return Request("POST", f"/v1/memories/{_seg(memory)}/observations", body)

    @endpoint(RuleCandidatesPublic)
    def rule_candidates(self) -> Request:
        """Code rules below 0.3 you may read: candidates to retire, weakest first."""
        return Request("GET", "/v1/code-rules/candidates")

    @endpoint(FromPatchPublic)
    def code_rules_from_patch(
        self,
        diff: str,
        outcome: str = "success",
        *,
        task_id: str | None = None,
        message: str | None = None,
        project: str | None = None,
        worktree: str | None = None,
        idempotency_key: str | None = None,
    ) -> Request:
        """Stage the code patterns a unified diff shows as rule proposals (into `task_id`, or a task opened
        for the patch); nothing is published before the task's promotion."""
        body = drop_none(
            {
                "diff": diff,
                "outcome": outcome,
                "task_id": task_id,
                "message": message,
                "project": project,
                "worktree": worktree,
                "idempotency_key": idempotency_key,
            }
        )
        return Request("POST", "/v1/code-rules/from-patch", body)

    @endpoint(CorrectionPublic)
    def correct(
        self,
        task_id: str,
        content: str,
        *,
        key: str | None = None,
        idempotency_key: str | None = None,
    ) -> Request:
        """A human's correction of an agent's work in a task; the same in N tasks proposes a preference."""
        payload = {"key": key} if key is not None else None
        body = drop_none({"content": content, "payload": payload, "idempotency_key": idempotency_key})
        return Request("POST", f"/v1/tasks/{_seg(task_id)}/corrections", body)

    # circular-fix detection

    @endpoint(CheckPublic)
    def check_approach(self, task_id: str, approach: str, *, subtask: str | None = None) -> Request:
        """`valid: false` with the failure history when this approach already failed on the task."""
        body = drop_none({"approach": approach, "subtask": subtask})
        return Request("POST", f"/v1/tasks/{_seg(task_id)}/approaches/check", body)

    @endpoint(ApproachPublic)
    def record_approach(
        self,
        task_id: str,
        approach: str,
        outcome: str,
        *,
        reason: str | None = None,
        subtask: str | None = None,
        idempotency_key: str | None = None,
    ) -> Request:
        """Record an attempted approach and how it ended (failures keep their reason)."""
        body = {"approach": approach, "outcome": outcome, "reason": reason, "subtask": subtask}
        body = drop_none({**body, "idempotency_key": idempotency_key})
        return Request("POST", f"/v1/tasks/{_seg(task_id)}/approaches", body)

    # trust

    @endpoint(ValidatePublic)
    def validate(
        self, memory: str, source: str, *, reason: str | None = None, idempotency_key: str | None = None
    ) -> Request:
        """Boost a memory's confidence by `source`'s amount (once per principal and source)."""
        body = drop_none({"source": source, "reason": reason, "idempotency_key": idempotency_key})
        return Request("POST", f"/v1/memories/{_seg(memory)}/validate", body)

    @endpoint(FeedbackPublic)
    def feedback(self, memory: str, helpful: bool, *, idempotency_key: str | None = None) -> Request:
        """Whether a memory helped: one vote per principal, the latest counts."""
        body = drop_none({"helpful": helpful, "idempotency_key": idempotency_key})
        return Request("POST", f"/v1/memories/{_seg(memory)}/feedback", body)

    # change requests

    @endpoint(ChangeRequestList)
    def change_requests(self, *, state: str | None = None, limit: int | None = None) -> Request:
        """Change requests of memories this key may read (`state="awaiting_approval"`: waiting ones)."""
        return Request("GET", "/v1/change-requests", params=drop_none({"state": state, "limit": limit}))

    @endpoint(ChangeRequestPublic)
    def change_request(self, request_id: str) -> Request:
        """A change request: the memory as it is and the proposed change, side by side."""
        return Request("GET", f"/v1/change-requests/{_seg(request_id)}")

    @endpoint(ChangeDecisionPublic)
    def approve_change(self, request_id: str, note: str | None = None) -> Request:
        """Approve a change request; the approver is this key's principal."""
        return Request("POST", f"/v1/change-requests/{_seg(request_id)}/approve", drop_none({"note": note}))

    @endpoint(ChangeDecisionPublic)
    def reject_change(self, request_id: str, note: str | None = None) -> Request:
        """Reject a change request; the approver is this key's principal."""
        return Request("POST", f"/v1/change-requests/{_seg(request_id)}/reject", drop_none({"note": note}))

    @endpoint(BatchDecisionPublic)
    def decide_batch(
        self,
        decision: str,
        *,
        promotions: Sequence[str] = (),
        change_requests: Sequence[str] = (),
        note: str | None = None,
    ) -> Request:
        """Approve or reject several promotions (by task id) and change requests at once, each checked on its
        own: one refusal is that item's outcome and the others are still decided."""
        body = {
            "decision": decision,
            "promotions": list(promotions),
            "change_requests": list(change_requests),
        }
        return Request("POST", "/v1/decisions", drop_none({**body, "note": note}))

    @endpoint(ApprovalTokenPublic)
    def change_approval_token(self, request_id: str) -> Request:
        """A short-lived token to decide this change request as this key's principal from the Temporal UI."""
        return Request("POST", f"/v1/change-requests/{_seg(request_id)}/approval-token")

    @endpoint(ChangeRequestPublic)
    def lift_memories(
        self,
        memories: Sequence[str],
        target_scope: str,
        *,
        reason: str,
        idempotency_key: str | None = None,
    ) -> Request:
        """Lift memories to a wider scope: applied at once, or a change request awaiting approval."""
        body = drop_none(
            {
                "memory_ids": [m.removeprefix("mem:") for m in memories],
                "target_scope": {"scope": target_scope},
                "reason": reason,
                "idempotency_key": idempotency_key,
            }
        )
        return Request("POST", "/v1/memories/lift", body)

    # reflection

    @endpoint(ReflectionStarted)
    def start_reflection(self, *, org: str | None = None, project: str | None = None) -> Request:
        """Start the project's reflection (humans who may approve it): its insights go through the gate."""
        return Request("POST", "/v1/reflections", drop_none({"org": org, "project": project}))

    @endpoint(ReflectionsPage)
    def reflections(self, *, org: str | None = None, project: str | None = None) -> Request:
        """The project's newest reflections: trigger, state, episodes read and insights staged."""
        return Request("GET", "/v1/reflections", params=drop_none({"org": org, "project": project}))

    # keeping memory true

    @endpoint(ReviewPublic)
    def review(self, *, scope: str | None = None) -> Request:
        """Stale memories you may read (a memory they build on changed), oldest mark first."""
        return Request("GET", "/v1/memories/review", params=drop_none({"scope": scope}))

    @endpoint(ConfirmPublic)
    def confirm(self, memory: str, *, note: str | None = None) -> Request:
        """A human's word that a stale memory still holds: its stale mark is cleared."""
        return Request("POST", f"/v1/memories/{_seg(memory)}/confirm", drop_none({"note": note}))

    @endpoint(EventsPage)
    def memory_events(self, memory: str, *, cursor: str | None = None, limit: int | None = None) -> Request:
        """A page of a memory's audit events, oldest first (`next_cursor` for the next)."""
        params = drop_none({"cursor": cursor, "limit": limit})
        return Request("GET", f"/v1/memories/{_seg(memory)}/events", params=params)

    @endpoint(EventsPage)
    def events(
        self,
        *,
        event_type: str | None = None,
        actor: str | None = None,
        since: str | None = None,
        until: str | None = None,
        cursor: str | None = None,
        limit: int | None = None,
        org: str | None = None,
        project: str | None = None,
    ) -> Request:
        """A page of a tenant's audit events (yours unless `org`/`project` name one you may read), newest
        first (`next_cursor` for the next)."""
        params = {
            "type": event_type,
            "actor": actor,
            "since": since,
            "until": until,
            "org": org,
            "project": project,
        }
        return Request("GET", "/v1/events", params=drop_none({**params, "cursor": cursor, "limit": limit}))

    @endpoint(ErasurePublic)
    def erase(
        self,
        *,
        memory: str | None = None,
        task: str | None = None,
        subject: str | None = None,
        org: str | None = None,
        project: str | None = None,
        dry_run: bool = False,
    ) -> Request:
        """Erase a memory, a task or a subject (with its org, maybe project): the receipt, or a dry run."""
        target = {"memory": memory, "task": task, "subject": subject, "org": org, "project": project}
        return Request("POST", "/v1/erasures", {**drop_none(target), "dry_run": dry_run})

    # webhooks (admins)

    @endpoint(WebhookCreated)
    def add_webhook(
        self, *, org: str, url: str, project: str | None = None, events: Sequence[str] | None = None
    ) -> Request:
        """Register a webhook for a tenant; the answer holds its signing secret, shown only now."""
        body = drop_none(
            {"org": org, "project": project, "url": url, "events": list(events) if events else None}
        )
        return Request("POST", "/v1/webhooks", body)

    @endpoint(WebhookList)
    def webhooks(self, *, org: str | None = None) -> Request:
        """The registered webhooks (of one org when given)."""
        return Request("GET", "/v1/webhooks", params=drop_none({"org": org}))

    @endpoint(WebhookPublic)
    def remove_webhook(self, webhook_id: str) -> Request:
        """Remove a webhook and its delivery records."""
        return Request("DELETE", f"/v1/webhooks/{_seg(webhook_id)}")

    @endpoint(DeliveryList)
    def webhook_deliveries(self, webhook_id: str) -> Request:
        """A webhook's deliveries, newest first."""
        return Request("GET", f"/v1/webhooks/{_seg(webhook_id)}/deliveries")


class LoregateClient(_Api, SyncTransport):
    """Blocking client; use as a context manager (or call `close`) to release its connections."""


class AsyncLoregateClient(_Api, AsyncTransport):
    """The same API as `LoregateClient`, for asyncio code (agents, orchestrators, the MCP server)."""
