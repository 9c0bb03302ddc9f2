"""The Python client of the HTTP gateway, sync (`LoregateClient`) and async (`AsyncLoregateClient`).

Orchestrators, the CLI, the MCP server and the tests all talk to loregate through this module, so the
gateway's JSON is decoded in one place and every refusal becomes one typed exception. The exceptions are
the domain's own types too: `NotFoundError` is both a `LoregateError` (it carries `error`, `detail` and
the HTTP status) and a `governance.errors.NotFound`, so code written against the service layer catches
the same errors whether it runs in-process or over the network.

Configuration comes from the arguments or the environment: `LOREGATE_URL` (default
http://127.0.0.1:8080) and `LOREGATE_API_KEY`.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx

from governance import errors as ge

__all__ = [
    "DEFAULT_URL",
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
]

DEFAULT_URL = "http://127.0.0.1:8080"
DEFAULT_TIMEOUT = 30.0


class LoregateError(ge.GovernanceError):
    """A refusal from the gateway: `error` is its type, `detail` its message, `status_code` its status."""

    def __init__(
        self, error: str, detail: str, status_code: int, body: Mapping[str, Any] | None = None
    ) -> None:
        super().__init__(detail)
        self.error = error
        self.status_code = status_code
        self.body: dict[str, Any] = dict(body or {})

    def __str__(self) -> str:
        return f"{self.error} ({self.status_code}): {self.detail}"


class UnauthenticatedError(LoregateError, ge.Unauthenticated):
    """No API key, or an unknown or revoked one (401)."""


class PolicyDeniedError(LoregateError, ge.PolicyDenied):
    """The policy does not let this key do this (403)."""


class NotFoundError(LoregateError, ge.NotFound):
    """Unknown task, memory or promotion (404)."""


class ConflictError(LoregateError, ge.Conflict):
    """Idempotency key reused with another body, or a state clash (409)."""


class LimitExceededError(LoregateError, ge.LimitExceeded):
    """Entry, batch or request over the configured limits (413)."""


class InvalidInputError(LoregateError, ge.InvalidInput):
    """The request breaks a schema or domain rule (400, 422)."""


class RateLimitedError(LoregateError, ge.RateLimited):
    """Too many requests (429); retry later."""


class ApprovalRequiredError(LoregateError, ge.ApprovalRequired):
    """The target scope needs an approval first (409)."""


class UnavailableError(LoregateError, ge.Unavailable):
    """The gateway, its database or Temporal cannot be reached (503, or no connection); retry later."""


class ServerError(LoregateError):
    """The gateway failed in a way that is not the client's doing (500)."""


_BY_KIND: dict[str, type[LoregateError]] = {
    "unauthenticated": UnauthenticatedError,
    "forbidden": PolicyDeniedError,
    "not_found": NotFoundError,
    "conflict": ConflictError,
    "approval_required": ApprovalRequiredError,
    "payload_too_large": LimitExceededError,
    "invalid_input": InvalidInputError,
    "validation_error": InvalidInputError,
    "bad_request": InvalidInputError,
    "rate_limited": RateLimitedError,
    "unavailable": UnavailableError,
}

_BY_STATUS: dict[int, type[LoregateError]] = {
    400: InvalidInputError,
    401: UnauthenticatedError,
    403: PolicyDeniedError,
    404: NotFoundError,
    405: InvalidInputError,
    409: ConflictError,
    413: LimitExceededError,
    415: InvalidInputError,
    422: InvalidInputError,
    429: RateLimitedError,
    502: UnavailableError,
    503: UnavailableError,
    504: UnavailableError,
}


def error_from_response(response: httpx.Response) -> LoregateError:
    """The typed exception for a refusal, from its `{"error", "detail"}` body (else from its status)."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        body = {"error": "error", "detail": response.text.strip() or response.reason_phrase}
    kind = str(body.get("error", "error"))
    detail = str(body.get("detail", ""))
    cls = _BY_KIND.get(kind) or _BY_STATUS.get(response.status_code) or ServerError
    return cls(kind, detail, response.status_code, body)


def _unreachable(base_url: str, exc: httpx.TransportError) -> UnavailableError:
    return UnavailableError("unavailable", f"cannot reach the gateway at {base_url}: {exc}", 0)


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


def _drop_none(body: Mapping[str, Any]) -> dict[str, Any]:
    """Leave out unset options, so the server's defaults apply."""
    return {k: v for k, v in body.items() if v is not None}


def _seg(value: str) -> str:
    """A path segment: ids are quoted so `mem:abc` or a stray `/` cannot change the route."""
    return quote(value, safe=":")


@dataclass(frozen=True)
class _Call:
    """One request, built once for both the sync and the async client."""

    method: str
    path: str
    json: dict[str, Any] | None = None
    params: dict[str, Any] | None = None


class _Calls:
    """The API's requests (paths and field names of the stable v1 API), independent of the transport."""

    @staticmethod
    def open_task(org: str, project: str, worktree: str, description: str, task_id: str | None) -> _Call:
        body = {
            "org": org,
            "project": project,
            "worktree": worktree,
            "description": description,
            "task_id": task_id,
        }
        return _Call("POST", "/v1/tasks", _drop_none(body))

    @staticmethod
    def task(task_id: str) -> _Call:
        return _Call("GET", f"/v1/tasks/{_seg(task_id)}")

    @staticmethod
    def append(task_id: str, entries: EntryLike | Sequence[EntryLike]) -> _Call:
        return _Call("POST", f"/v1/tasks/{_seg(task_id)}/entries", {"entries": _entries_json(entries)})

    @staticmethod
    def entries_page(task_id: str, after_seq: int, limit: int) -> _Call:
        params = {"after_seq": after_seq, "limit": limit}
        return _Call("GET", f"/v1/tasks/{_seg(task_id)}/entries", params=params)

    @staticmethod
    def start_promotion(task_id: str, target_scope: str, verification: Mapping[str, Any] | None) -> _Call:
        body = _drop_none({"target_scope": target_scope, "verification": verification})
        return _Call("POST", f"/v1/tasks/{_seg(task_id)}/promotion", body)

    @staticmethod
    def promotion(task_id: str) -> _Call:
        return _Call("GET", f"/v1/promotions/{_seg(task_id)}")

    @staticmethod
    def promotion_plan(task_id: str, offset: int, limit: int | None) -> _Call:
        params = _drop_none({"offset": offset, "limit": limit})
        return _Call("GET", f"/v1/promotions/{_seg(task_id)}/plan", params=params)

    @staticmethod
    def promotions(state: str | None, limit: int | None) -> _Call:
        return _Call("GET", "/v1/promotions", params=_drop_none({"state": state, "limit": limit}))

    @staticmethod
    def verify(task_id: str, source: str, success: bool) -> _Call:
        return _Call("POST", f"/v1/promotions/{_seg(task_id)}/verify", {"source": source, "success": success})

    @staticmethod
    def decide(task_id: str, decision: str, note: str | None) -> _Call:
        return _Call("POST", f"/v1/promotions/{_seg(task_id)}/{decision}", _drop_none({"note": note}))

    @staticmethod
    def search(
        query: str,
        task_id: str,
        k: int | None,
        types: Sequence[str] | None,
        intent: str | None,
        include_history: bool,
        compact: bool,
    ) -> _Call:
        body = _drop_none(
            {
                "query": query,
                "task_id": task_id,
                "k": k,
                "intent": intent,
                "types": list(types) if types else None,
            }
        )
        if include_history:
            body["include_history"] = True
        if compact:
            body["compact"] = True
        return _Call("POST", "/v1/search", body)

    @staticmethod
    def context(query: str, task_id: str, max_tokens: int | None) -> _Call:
        return _Call(
            "POST", "/v1/context", _drop_none({"query": query, "task_id": task_id, "max_tokens": max_tokens})
        )

    @staticmethod
    def match_bug_pattern(error: str, task_id: str, stack: str | None, k: int | None) -> _Call:
        body = _drop_none({"error": error, "task_id": task_id, "stack": stack, "k": k})
        return _Call("POST", "/v1/bug-patterns/match", body)

    @staticmethod
    def observe_rule(ref: str, outcome: str, note: str | None) -> _Call:
        body = _drop_none({"outcome": outcome, "note": note})
        return _Call("POST", f"/v1/memories/{_seg(ref)}/observations", body)

    @staticmethod
    def rule_candidates() -> _Call:
        return _Call("GET", "/v1/code-rules/candidates")

    @staticmethod
    def memory(ref: str) -> _Call:
        return _Call("GET", f"/v1/memories/{_seg(ref)}")

    @staticmethod
    def check_approach(task_id: str, approach: str, subtask: str | None) -> _Call:
        body = _drop_none({"approach": approach, "subtask": subtask})
        return _Call("POST", f"/v1/tasks/{_seg(task_id)}/approaches/check", body)

    @staticmethod
    def record_approach(
        task_id: str,
        approach: str,
        outcome: str,
        reason: str | None,
        subtask: str | None,
        idempotency_key: str | None,
    ) -> _Call:
        body = _drop_none(
            {
                "approach": approach,
                "outcome": outcome,
                "reason": reason,
                "subtask": subtask,
                "idempotency_key": idempotency_key,
            }
        )
        return _Call("POST", f"/v1/tasks/{_seg(task_id)}/approaches", body)

    @staticmethod
    def validate(ref: str, source: str, reason: str | None, idempotency_key: str | None) -> _Call:
        body = _drop_none({"source": source, "reason": reason, "idempotency_key": idempotency_key})
        return _Call("POST", f"/v1/memories/{_seg(ref)}/validate", body)

    @staticmethod
    def feedback(ref: str, helpful: bool, idempotency_key: str | None) -> _Call:
        body = _drop_none({"helpful": helpful, "idempotency_key": idempotency_key})
        return _Call("POST", f"/v1/memories/{_seg(ref)}/feedback", body)

    @staticmethod
    def change_requests(state: str | None, limit: int | None) -> _Call:
        return _Call("GET", "/v1/change-requests", params=_drop_none({"state": state, "limit": limit}))

    @staticmethod
    def change_request(request_id: str) -> _Call:
        return _Call("GET", f"/v1/change-requests/{_seg(request_id)}")

    @staticmethod
    def decide_change(request_id: str, decision: str, note: str | None) -> _Call:
        return _Call("POST", f"/v1/change-requests/{_seg(request_id)}/{decision}", _drop_none({"note": note}))

    @staticmethod
    def review(scope: str | None) -> _Call:
        return _Call("GET", "/v1/memories/review", params=_drop_none({"scope": scope}))

    @staticmethod
    def confirm(ref: str, note: str | None) -> _Call:
        return _Call("POST", f"/v1/memories/{_seg(ref)}/confirm", _drop_none({"note": note}))

    @staticmethod
    def memory_events(ref: str, cursor: str | None, limit: int | None) -> _Call:
        params = _drop_none({"cursor": cursor, "limit": limit})
        return _Call("GET", f"/v1/memories/{_seg(ref)}/events", params=params)

    @staticmethod
    def events(
        event_type: str | None,
        actor: str | None,
        since: str | None,
        until: str | None,
        cursor: str | None,
        limit: int | None,
    ) -> _Call:
        params = {"type": event_type, "actor": actor, "since": since, "until": until}
        return _Call("GET", "/v1/events", params=_drop_none({**params, "cursor": cursor, "limit": limit}))

    @staticmethod
    def erase(target: dict[str, str | None], dry_run: bool) -> _Call:
        return _Call("POST", "/v1/erasures", {**_drop_none(target), "dry_run": dry_run})


def _settings(base_url: str | None, api_key: str | None) -> tuple[str, dict[str, str]]:
    url = (base_url or os.environ.get("LOREGATE_URL") or DEFAULT_URL).rstrip("/")
    key = api_key if api_key is not None else os.environ.get("LOREGATE_API_KEY")
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return url, headers


def _decode(response: httpx.Response) -> dict[str, Any]:
    if response.status_code >= 400:
        raise error_from_response(response)
    if not response.content:
        return {}
    body = response.json()
    return body if isinstance(body, dict) else {"result": body}


class LoregateClient:
    """Blocking client; use as a context manager (or call `close`) to release its connections."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url, headers = _settings(base_url, api_key)
        self._http = httpx.Client(
            base_url=self.base_url, headers=headers, timeout=timeout, transport=transport
        )

    def __enter__(self) -> LoregateClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _send(self, call: _Call) -> dict[str, Any]:
        try:
            response = self._http.request(call.method, call.path, json=call.json, params=call.params)
        except httpx.TransportError as exc:
            raise _unreachable(self.base_url, exc) from exc
        return _decode(response)

    def open_task(
        self, *, org: str, project: str, worktree: str, description: str, task_id: str | None = None
    ) -> dict[str, Any]:
        """Open a task (orchestrators, humans); repeating the same request returns the same task."""
        return self._send(_Calls.open_task(org, project, worktree, description, task_id))

    def task(self, task_id: str) -> dict[str, Any]:
        return self._send(_Calls.task(task_id))

    def append(self, task_id: str, entries: EntryLike | Sequence[EntryLike]) -> dict[str, Any]:
        """Append one entry or a batch (all or nothing); entries with a seen idempotency key are replayed."""
        return self._send(_Calls.append(task_id, entries))

    def entries(self, task_id: str, *, after_seq: int = 0, page_size: int = 100) -> Iterator[dict[str, Any]]:
        """Every staging entry after `after_seq`, in sequence order, fetched a page at a time."""
        while True:
            page = self._send(_Calls.entries_page(task_id, after_seq, page_size))
            yield from page["entries"]
            if page.get("next_after_seq") is None:
                return
            after_seq = int(page["next_after_seq"])

    def start_promotion(
        self, task_id: str, target_scope: str, verification: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """Start the task's promotion (`verification`: `{"source", "success"}`); a second start finds it."""
        return self._send(_Calls.start_promotion(task_id, target_scope, verification))

    def promotion(self, task_id: str) -> dict[str, Any]:
        """The task's promotion: state, plan, verification, refusals, what it published."""
        return self._send(_Calls.promotion(task_id))

    def promotion_plan(self, task_id: str, offset: int = 0, limit: int | None = None) -> dict[str, Any]:
        """A page of the promotion's plan (full contents): `{task_id, total, offset, limit, next_offset,
        items}`; `next_offset` is null after the last page."""
        return self._send(_Calls.promotion_plan(task_id, offset, limit))

    def promotion_plan_all(self, task_id: str, *, page_size: int = 500) -> Iterator[dict[str, Any]]:
        """Every entry of the promotion's plan, in plan order, fetched a page at a time."""
        offset: int | None = 0
        while offset is not None:
            page = self.promotion_plan(task_id, offset, page_size)
            yield from page["items"]
            offset = page.get("next_offset")

    def promotions(self, *, state: str | None = None, limit: int | None = None) -> dict[str, Any]:
        """Promotions of tasks this key may read (`state="awaiting_approval"`: those waiting for a human)."""
        return self._send(_Calls.promotions(state, limit))

    def verify(self, task_id: str, source: str, success: bool = True) -> dict[str, Any]:
        """The verification evidence a promotion waits for (given once)."""
        return self._send(_Calls.verify(task_id, source, success))

    def approve(self, task_id: str, note: str | None = None) -> dict[str, Any]:
        """Approve a promotion awaiting approval; the approver is this key's principal."""
        return self._send(_Calls.decide(task_id, "approve", note))

    def reject(self, task_id: str, note: str | None = None) -> dict[str, Any]:
        """Reject a promotion awaiting approval; the approver is this key's principal."""
        return self._send(_Calls.decide(task_id, "reject", note))

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
    ) -> dict[str, Any]:
        return self._send(_Calls.search(query, task_id, k, types, intent, include_history, compact))

    def context(self, query: str, *, task_id: str, max_tokens: int | None = None) -> dict[str, Any]:
        return self._send(_Calls.context(query, task_id, max_tokens))

    def match_bug_pattern(
        self, error: str, *, task_id: str, stack: str | None = None, k: int | None = None
    ) -> dict[str, Any]:
        """Bug patterns matching an error (same signature first), each with its best solutions first."""
        return self._send(_Calls.match_bug_pattern(error, task_id, stack, k))

    def observe_rule(self, memory: str, outcome: str, *, note: str | None = None) -> dict[str, Any]:
        """How a code rule fared (`followed_passed`, `violated`, `rejected_by_human`): its EMA moves."""
        return self._send(_Calls.observe_rule(memory, outcome, note))

    def rule_candidates(self) -> dict[str, Any]:
        """Code rules below 0.3 you may read: candidates to retire, weakest first."""
        return self._send(_Calls.rule_candidates())

    def memory(self, citation: str) -> dict[str, Any]:
        """A memory by citation (`mem:abc123`, `abc123`) or id, with its provenance and history."""
        return self._send(_Calls.memory(citation))

    def check_approach(self, task_id: str, approach: str, *, subtask: str | None = None) -> dict[str, Any]:
        """`valid: false` with the failure history when this approach already failed on the task."""
        return self._send(_Calls.check_approach(task_id, approach, subtask))

    def record_approach(
        self,
        task_id: str,
        approach: str,
        outcome: str,
        *,
        reason: str | None = None,
        subtask: str | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """Record an attempted approach and how it ended (failures keep their reason)."""
        call = _Calls.record_approach(task_id, approach, outcome, reason, subtask, idempotency_key)
        return self._send(call)

    def validate(
        self, memory: str, source: str, *, reason: str | None = None, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """Boost a memory's confidence by `source`'s amount (once per principal and source)."""
        return self._send(_Calls.validate(memory, source, reason, idempotency_key))

    def feedback(self, memory: str, helpful: bool, *, idempotency_key: str | None = None) -> dict[str, Any]:
        """Whether a memory helped: one vote per principal, the latest counts."""
        return self._send(_Calls.feedback(memory, helpful, idempotency_key))

    def change_requests(self, *, state: str | None = None, limit: int | None = None) -> dict[str, Any]:
        """Change requests of memories this key may read (`state="awaiting_approval"`: waiting ones)."""
        return self._send(_Calls.change_requests(state, limit))

    def change_request(self, request_id: str) -> dict[str, Any]:
        """A change request: the memory as it is and the proposed change, side by side."""
        return self._send(_Calls.change_request(request_id))

    def approve_change(self, request_id: str, note: str | None = None) -> dict[str, Any]:
        """Approve a change request; the approver is this key's principal."""
        return self._send(_Calls.decide_change(request_id, "approve", note))

    def reject_change(self, request_id: str, note: str | None = None) -> dict[str, Any]:
        """Reject a change request; the approver is this key's principal."""
        return self._send(_Calls.decide_change(request_id, "reject", note))

    def review(self, *, scope: str | None = None) -> dict[str, Any]:
        """Stale memories you may read (a memory they build on changed), oldest mark first."""
        return self._send(_Calls.review(scope))

    def confirm(self, memory: str, *, note: str | None = None) -> dict[str, Any]:
        """A human's word that a stale memory still holds: its stale mark is cleared."""
        return self._send(_Calls.confirm(memory, note))

    def memory_events(
        self, memory: str, *, cursor: str | None = None, limit: int | None = None
    ) -> dict[str, Any]:
        """A page of a memory's audit events, oldest first (`next_cursor` for the next)."""
        return self._send(_Calls.memory_events(memory, cursor, limit))

    def events(
        self,
        *,
        event_type: str | None = None,
        actor: str | None = None,
        since: str | None = None,
        until: str | None = None,
        cursor: str | None = None,
        limit: int | None = None,
    ) -> dict[str, Any]:
        """A page of your tenant's audit events, newest first (`next_cursor` for the next)."""
        return self._send(_Calls.events(event_type, actor, since, until, cursor, limit))

    def erase(
        self,
        *,
        memory: str | None = None,
        task: str | None = None,
        subject: str | None = None,
        org: str | None = None,
        project: str | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Erase a memory, a task or a subject (with its org, maybe project): the receipt, or a dry run."""
        target = {"memory": memory, "task": task, "subject": subject, "org": org, "project": project}
        return self._send(_Calls.erase(target, dry_run))


class AsyncLoregateClient:
    """The same API as `LoregateClient`, for asyncio code (agents, orchestrators, the MCP server)."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.base_url, headers = _settings(base_url, api_key)
        self._http = httpx.AsyncClient(
            base_url=self.base_url, headers=headers, timeout=timeout, transport=transport
        )

    async def __aenter__(self) -> AsyncLoregateClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _send(self, call: _Call) -> dict[str, Any]:
        try:
            response = await self._http.request(call.method, call.path, json=call.json, params=call.params)
        except httpx.TransportError as exc:
            raise _unreachable(self.base_url, exc) from exc
        return _decode(response)

    async def open_task(
        self, *, org: str, project: str, worktree: str, description: str, task_id: str | None = None
    ) -> dict[str, Any]:
        return await self._send(_Calls.open_task(org, project, worktree, description, task_id))

    async def task(self, task_id: str) -> dict[str, Any]:
        return await self._send(_Calls.task(task_id))

    async def append(self, task_id: str, entries: EntryLike | Sequence[EntryLike]) -> dict[str, Any]:
        return await self._send(_Calls.append(task_id, entries))

    async def entries(
        self, task_id: str, *, after_seq: int = 0, page_size: int = 100
    ) -> AsyncIterator[dict[str, Any]]:
        while True:
            page = await self._send(_Calls.entries_page(task_id, after_seq, page_size))
            for entry in page["entries"]:
                yield entry
            if page.get("next_after_seq") is None:
                return
            after_seq = int(page["next_after_seq"])

    async def start_promotion(
        self, task_id: str, target_scope: str, verification: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        return await self._send(_Calls.start_promotion(task_id, target_scope, verification))

    async def promotion(self, task_id: str) -> dict[str, Any]:
        return await self._send(_Calls.promotion(task_id))

    async def promotion_plan(self, task_id: str, offset: int = 0, limit: int | None = None) -> dict[str, Any]:
        return await self._send(_Calls.promotion_plan(task_id, offset, limit))

    async def promotion_plan_all(
        self, task_id: str, *, page_size: int = 500
    ) -> AsyncIterator[dict[str, Any]]:
        offset: int | None = 0
        while offset is not None:
            page = await self.promotion_plan(task_id, offset, page_size)
            for entry in page["items"]:
                yield entry
            offset = page.get("next_offset")

    async def promotions(self, *, state: str | None = None, limit: int | None = None) -> dict[str, Any]:
        return await self._send(_Calls.promotions(state, limit))

    async def verify(self, task_id: str, source: str, success: bool = True) -> dict[str, Any]:
        return await self._send(_Calls.verify(task_id, source, success))

    async def approve(self, task_id: str, note: str | None = None) -> dict[str, Any]:
        return await self._send(_Calls.decide(task_id, "approve", note))

    async def reject(self, task_id: str, note: str | None = None) -> dict[str, Any]:
        return await self._send(_Calls.decide(task_id, "reject", note))

    async def search(
        self,
        query: str,
        *,
        task_id: str,
        k: int | None = None,
        types: Sequence[str] | None = None,
        intent: str | None = None,
        include_history: bool = False,
        compact: bool = False,
    ) -> dict[str, Any]:
        return await self._send(_Calls.search(query, task_id, k, types, intent, include_history, compact))

    async def context(self, query: str, *, task_id: str, max_tokens: int | None = None) -> dict[str, Any]:
        return await self._send(_Calls.context(query, task_id, max_tokens))

    async def match_bug_pattern(
        self, error: str, *, task_id: str, stack: str | None = None, k: int | None = None
    ) -> dict[str, Any]:
        return await self._send(_Calls.match_bug_pattern(error, task_id, stack, k))

    async def observe_rule(self, memory: str, outcome: str, *, note: str | None = None) -> dict[str, Any]:
        return await self._send(_Calls.observe_rule(memory, outcome, note))

    async def rule_candidates(self) -> dict[str, Any]:
        return await self._send(_Calls.rule_candidates())

    async def memory(self, citation: str) -> dict[str, Any]:
        return await self._send(_Calls.memory(citation))

    async def check_approach(
        self, task_id: str, approach: str, *, subtask: str | None = None
    ) -> dict[str, Any]:
        return await self._send(_Calls.check_approach(task_id, approach, subtask))

    async def record_approach(
        self,
        task_id: str,
        approach: str,
        outcome: str,
        *,
        reason: str | None = None,
        subtask: str | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        call = _Calls.record_approach(task_id, approach, outcome, reason, subtask, idempotency_key)
        return await self._send(call)

    async def validate(
        self, memory: str, source: str, *, reason: str | None = None, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        return await self._send(_Calls.validate(memory, source, reason, idempotency_key))

    async def feedback(
        self, memory: str, helpful: bool, *, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        return await self._send(_Calls.feedback(memory, helpful, idempotency_key))

    async def change_requests(self, *, state: str | None = None, limit: int | None = None) -> dict[str, Any]:
        return await self._send(_Calls.change_requests(state, limit))

    async def change_request(self, request_id: str) -> dict[str, Any]:
        return await self._send(_Calls.change_request(request_id))

    async def approve_change(self, request_id: str, note: str | None = None) -> dict[str, Any]:
        return await self._send(_Calls.decide_change(request_id, "approve", note))

    async def reject_change(self, request_id: str, note: str | None = None) -> dict[str, Any]:
        return await self._send(_Calls.decide_change(request_id, "reject", note))

    async def review(self, *, scope: str | None = None) -> dict[str, Any]:
        return await self._send(_Calls.review(scope))

    async def confirm(self, memory: str, *, note: str | None = None) -> dict[str, Any]:
        return await self._send(_Calls.confirm(memory, note))

    async def memory_events(
        self, memory: str, *, cursor: str | None = None, limit: int | None = None
    ) -> dict[str, Any]:
        return await self._send(_Calls.memory_events(memory, cursor, limit))

    async def events(
        self,
        *,
        event_type: str | None = None,
        actor: str | None = None,
        since: str | None = None,
        until: str | None = None,
        cursor: str | None = None,
        limit: int | None = None,
    ) -> dict[str, Any]:
        return await self._send(_Calls.events(event_type, actor, since, until, cursor, limit))

    async def erase(
        self,
        *,
        memory: str | None = None,
        task: str | None = None,
        subject: str | None = None,
        org: str | None = None,
        project: str | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        target = {"memory": memory, "task": task, "subject": subject, "org": org, "project": project}
        return await self._send(_Calls.erase(target, dry_run))
