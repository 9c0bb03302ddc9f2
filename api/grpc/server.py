"""The gRPC gateway (grpc.aio): the operations of the HTTP API over `api/grpc/proto/loregate.proto`.

It shares everything with HTTP but the transport: the same API keys (metadata `authorization: Bearer …`),
the same request models (api/schemas/), the same use cases (api/services/) and the one error mapping
(api/errors.py). A refusal's status details are the JSON body HTTP would send, so clients can show the same
`error`/`detail` whichever gateway they use.

`loregate serve` runs it inside the HTTP gateway process (one engine, one authoriser, one key cache);
`running_grpc_server` runs it on its own.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import grpc
from pydantic import BaseModel, ValidationError
from sqlalchemy import exc as sa_exc

from api.errors import error_body, grpc_code_of, is_unavailable, validation_detail
from api.grpc.proto import pb2, pb2_grpc
from api.schemas.approaches import ApproachIn, CheckIn
from api.schemas.change_requests import LiftIn
from api.schemas.citations import CitationsIn
from api.schemas.learning import BugMatchIn, ObservationIn
from api.schemas.live import FixHintPublic
from api.schemas.memories import FeedbackIn, ValidateIn
from api.schemas.patterns import CorrectionIn, FromPatchIn
from api.schemas.promotions import (
    MAX_PROMOTION_NUMBER,
    DecisionIn,
    PlanPageIn,
    PromotionStart,
    VerificationIn,
)
from api.schemas.reflections import ReflectionStart
from api.schemas.search import ContextIn, SearchIn
from api.schemas.staging import EntriesIn, TaskCreate
from api.schemas.staging_json import convert_entries
from api.schemas.text import MAX_JSON_DEPTH
from api.schemas.working_memory import FileHistoryIn, WorkingMemoryIn
from api.services import (
    approaches,
    bug_patterns,
    citations,
    code_rules,
    corrections,
    lifting,
    memories,
    patch_patterns,
    promotion_listing,
    promotion_views,
    promotions,
    reflections,
    search,
    staging,
    working_memory,
)
from api.services.gateway import (
    GatewayResources,
    authorized_task,
    presented_key_hash,
    principal_from_authorization,
)
from governance import errors as ge
from governance.adapters.tracing import instrument_engine, tracer_provider
from governance.config import Settings
from governance.identity import Principal
from governance.limits import retry_after_header
from governance.storage.engine import make_engine
from policy.enforcer import make_authorizer

__all__ = [
    "LoregateServicer",
    "start_grpc_server",
    "running_grpc_server",
    "COMMITTED_METADATA",
    "RETRY_AFTER_METADATA",
]

_log = logging.getLogger("loregate.grpc")
T = TypeVar("T")

# Trailing metadata of a failed AppendEntries stream: how many of its messages were stored before the error.
COMMITTED_METADATA = "loregate-committed-batches"
# Trailing metadata of a call refused by a rate limit or quota: the seconds to wait (HTTP's Retry-After).
RETRY_AFTER_METADATA = "retry-after"
# The longest memory reference (uuid or citation) the HTTP path accepts.
MEMORY_REF_MAX_LENGTH = 64


def _refusal(exc: Exception) -> tuple[grpc.StatusCode, dict[str, object]]:
    """The status and JSON body for any failure, mirroring `api/errors.py`'s HTTP handlers."""
    if isinstance(exc, ge.GovernanceError):
        return grpc_code_of(exc), error_body(exc.kind, exc.detail)
    if isinstance(exc, ValidationError):
        detail = validation_detail(exc.errors())
        return grpc.StatusCode.INVALID_ARGUMENT, error_body("validation_error", detail)
    if isinstance(exc, sa_exc.DataError):
        return grpc.StatusCode.INVALID_ARGUMENT, error_body(
            "invalid_input", f"the database refused the value: {exc.orig}"
        )
    if is_unavailable(exc):
        return grpc.StatusCode.UNAVAILABLE, error_body(
            "unavailable", "the database is unavailable; retry later (with your idempotency keys)"
        )
    _log.exception("unhandled error in the gRPC gateway", exc_info=exc)
    return grpc.StatusCode.INTERNAL, error_body("internal", "internal error; it has been logged")


async def _guarded(context: grpc.aio.ServicerContext, work: Callable[[], Awaitable[T]]) -> T:
    """Run `work`; a failure ends the call with the mapped status (abort raises, so nothing follows it)."""
    try:
        return await work()
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        code, body = _refusal(exc)
        if isinstance(exc, ge.RateLimited):
            # HTTP's Retry-After header, as trailing metadata (kept beside any trailer the call set)
            kept = tuple(context.trailing_metadata() or ())
            context.set_trailing_metadata(
                (*kept, (RETRY_AFTER_METADATA, retry_after_header(exc.retry_after)))
            )
    await context.abort(code, json.dumps(body))
    raise AssertionError("unreachable: abort raises")


def _parse_json(text: str, what: str) -> Any:
    """JSON text of a message field; what Python's parser cannot take is INVALID_ARGUMENT naming `what`.

    `NaN`, `Infinity` and numbers too large for a double parse here (as over HTTP) and are refused by the
    request models (api/schemas/text.py), which say where they are.
    """
    try:
        return json.loads(text)
    except RecursionError as exc:
        raise ge.InvalidInput(
            f"{what} is nested too deeply to parse (at most {MAX_JSON_DEPTH} levels are accepted)"
        ) from exc
    except ValueError as exc:  # not JSON, or an integer of more digits than Python converts
        raise ge.InvalidInput(f"{what} is not valid JSON: {exc}") from exc


def _json_object(text: str, what: str) -> dict[str, Any]:
    value = _parse_json(text, what) if text else {}
    if not isinstance(value, dict):
        raise ge.InvalidInput(f"{what} must be a JSON object")
    return value


def _required(value: str, field: str) -> str:
    """A path parameter of the HTTP route, which gRPC leaves empty when unset: refused, naming the field."""
    if not value:
        raise ge.InvalidInput(f"{field} is required")
    return value


def _memory_ref(value: str) -> str:
    """A memory's uuid or citation, bounded as the HTTP path is (api/http/routes/memories.py)."""
    if not 1 <= len(_required(value, "memory_id")) <= MEMORY_REF_MAX_LENGTH:
        raise ge.InvalidInput(f"memory_id must be at most {MEMORY_REF_MAX_LENGTH} characters")
    return value


def _reply(model: BaseModel) -> Any:
    """A response model as HTTP would serialise it (pydantic's JSON mode)."""
    return pb2.JsonReply(json=json.dumps(model.model_dump(mode="json"), ensure_ascii=False))


def _entry(message: Any, index: int) -> dict[str, Any]:
    entry: dict[str, Any] = {"kind": message.kind, "content": message.content}
    if message.HasField("payload_json"):
        entry["payload"] = _parse_json(message.payload_json, f"entries.{index}.payload_json")
    if message.HasField("idempotency_key"):
        entry["idempotency_key"] = message.idempotency_key
    return entry


def _hint(hint: FixHintPublic, *, offset: int) -> Any:
    """A fix hint of one message, its entry index counted across the stream."""
    return pb2.FixHint(
        entry_index=offset + hint.entry_index,
        seq=hint.seq,
        text=hint.text,
        detail=hint.detail,
        task_id=hint.task_id,
        agent=hint.agent,
        at=hint.at.isoformat(),
        task_status=hint.task_status,
        same_worktree=hint.same_worktree,
        standing=hint.standing,
    )


class LoregateServicer(pb2_grpc.LoregateServicer):  # type: ignore[misc]
    """The `loregate.v1.Loregate` service over a gateway's shared state."""

    def __init__(self, resources: GatewayResources) -> None:
        self._state = resources
        self._background: set[asyncio.Task[Any]] = set()

    async def _principal(self, context: grpc.aio.ServicerContext) -> Principal:
        metadata = dict(context.invocation_metadata() or ())
        value = metadata.get("authorization")
        return await principal_from_authorization(self._state, value if isinstance(value, str) else None)

    def _after_reply(self, work: Awaitable[None]) -> None:
        """Bookkeeping off the hot path (retrieval counts), as HTTP's background tasks do."""
        task = asyncio.ensure_future(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def OpenTask(self, request: Any, context: grpc.aio.ServicerContext) -> Any:  # noqa: N802
        async def work() -> Any:
            principal = await self._principal(context)
            body = TaskCreate.model_validate(
                {
                    "org": request.org,
                    "project": request.project,
                    "worktree": request.worktree,
                    "description": request.description,
                    "task_id": request.task_id if request.HasField("task_id") else None,
                }
            )
            task, created = await staging.open_task(self._state, principal, body)
            return pb2.Task(**task.model_dump(mode="json", exclude_none=True), created=created)

        return await _guarded(context, work)

    async def AppendEntries(  # noqa: N802
        self, request_iterator: AsyncIterator[Any], context: grpc.aio.ServicerContext
    ) -> Any:
        async def work() -> Any:
            # the trailer is sent with the status, so it is kept current as each message commits
            committed = 0
            context.set_trailing_metadata(((COMMITTED_METADATA, "0"),))
            principal = await self._principal(context)
            presented = dict(context.invocation_metadata() or ()).get("authorization")
            key_hash = presented_key_hash(presented if isinstance(presented, str) else None)
            task_id: str | None = None
            acks: list[Any] = []
            hints: list[Any] = []
            promotion = 0
            async for message in request_iterator:
                if task_id is None:
                    if not message.task_id:
                        raise ge.InvalidInput("the first message of the stream must name its task_id")
                    task_id = message.task_id
                elif message.task_id and message.task_id != task_id:
                    raise ge.InvalidInput("one AppendEntries stream appends to one task")
                task = await authorized_task(self._state, principal, task_id, "write")
                entries = [_entry(e, i) for i, e in enumerate(message.entries)]
                # msgspec checks what EntriesIn checks, in C; what it refuses, pydantic words
                drafts = convert_entries(entries)
                if drafts is None:
                    drafts = staging.drafts_of(EntriesIn.model_validate({"entries": entries}))
                ack = await staging.append_drafts(self._state, principal, task, drafts, key_hash=key_hash)
                committed += 1
                context.set_trailing_metadata(((COMMITTED_METADATA, str(committed)),))
                hints.extend(_hint(h, offset=len(acks)) for h in ack.hints)
                promotion = ack.promotion
                acks.extend(pb2.EntryAck(id=a.id, seq=a.seq, replayed=a.replayed) for a in ack.entries)
            if task_id is None:
                raise ge.InvalidInput("the stream carried no messages")
            return pb2.AppendReply(task_id=task_id, entries=acks, hints=hints, promotion=promotion)

        return await _guarded(context, work)

    async def StartPromotion(self, request: Any, context: grpc.aio.ServicerContext) -> Any:  # noqa: N802
        async def work() -> Any:
            principal = await self._principal(context)
            task_id = _required(request.task_id, "task_id")
            body = PromotionStart.model_validate(_json_object(request.json, "json"))
            return _reply(await promotions.start_promotion(self._state, principal, task_id, body))

        return await _guarded(context, work)

    async def Search(self, request: Any, context: grpc.aio.ServicerContext) -> Any:  # noqa: N802
        async def work() -> Any:
            principal = await self._principal(context)
            body = SearchIn.model_validate(_json_object(request.json, "json"))
            answer, hit_ids = await search.search(self._state, principal, body)
            self._after_reply(search.count_retrievals(self._state, hit_ids))
            return _reply(answer)

        return await _guarded(context, work)

    async def Context(self, request: Any, context: grpc.aio.ServicerContext) -> Any:  # noqa: N802
        async def work() -> Any:
            principal = await self._principal(context)
            body = ContextIn.model_validate(_json_object(request.json, "json"))
            answer, hit_ids = await search.context(self._state, principal, body)
            self._after_reply(search.count_retrievals(self._state, hit_ids))
            return _reply(answer)

        return await _guarded(context, work)

    async def CheckApproach(self, request: Any, context: grpc.aio.ServicerContext) -> Any:  # noqa: N802
        async def work() -> Any:
            principal = await self._principal(context)
            # as over HTTP: the task is authorised (write: a check counts refusals) before the body is read
            task_id = _required(request.task_id, "task_id")
            task = await authorized_task(self._state, principal, task_id, "write")
            body = CheckIn.model_validate(_json_object(request.json, "json"))
            return _reply(await approaches.check_approach(self._state, principal, task, body))

        return await _guarded(context, work)

    async def RecordApproach(self, request: Any, context: grpc.aio.ServicerContext) -> Any:  # noqa: N802
        async def work() -> Any:
            principal = await self._principal(context)
            task_id = _required(request.task_id, "task_id")
            task = await authorized_task(self._state, principal, task_id, "write")
            body = ApproachIn.model_validate(_json_object(request.json, "json"))
            return _reply(await approaches.record_approach(self._state, principal, task, body))

        return await _guarded(context, work)

    async def GetPromotion(self, request: Any, context: grpc.aio.ServicerContext) -> Any:  # noqa: N802
        async def work() -> Any:
            principal = await self._principal(context)
            task_id = _required(request.task_id, "task_id")
            number = request.number if request.HasField("number") else None
            # HTTP's bounds and words (`?number=` is a query parameter there)
            if number is not None and number < 1:
                raise ge.InvalidInput("number: Input should be greater than or equal to 1")
            if number is not None and number > MAX_PROMOTION_NUMBER:
                raise ge.InvalidInput(f"number: Input should be less than or equal to {MAX_PROMOTION_NUMBER}")
            return _reply(await promotion_views.promotion_status(self._state, principal, task_id, number))

        return await _guarded(context, work)

    async def ListTaskPromotions(self, request: Any, context: grpc.aio.ServicerContext) -> Any:  # noqa: N802
        async def work() -> Any:
            principal = await self._principal(context)
            task_id = _required(request.task_id, "task_id")
            return _reply(await promotion_listing.task_promotions(self._state, principal, task_id))

        return await _guarded(context, work)

    async def CloseTask(self, request: Any, context: grpc.aio.ServicerContext) -> Any:  # noqa: N802
        async def work() -> Any:
            principal = await self._principal(context)
            task_id = _required(request.task_id, "task_id")
            return _reply(await promotion_listing.close_task(self._state, principal, task_id))

        return await _guarded(context, work)

    async def GetWorkingMemory(self, request: Any, context: grpc.aio.ServicerContext) -> Any:  # noqa: N802
        async def work() -> Any:
            principal = await self._principal(context)
            task = await authorized_task(
                self._state, principal, _required(request.task_id, "task_id"), "read"
            )
            return _reply(await working_memory.show(self._state, task))

        return await _guarded(context, work)

    async def UpdateWorkingMemory(self, request: Any, context: grpc.aio.ServicerContext) -> Any:  # noqa: N802
        async def work() -> Any:
            principal = await self._principal(context)
            # as over HTTP: the task is authorised before the body is read
            task = await authorized_task(
                self._state, principal, _required(request.task_id, "task_id"), "write"
            )
            body = WorkingMemoryIn.model_validate(_json_object(request.json, "json"))
            return _reply(await working_memory.update(self._state, principal, task, body))

        return await _guarded(context, work)

    async def FileHistory(self, request: Any, context: grpc.aio.ServicerContext) -> Any:  # noqa: N802
        async def work() -> Any:
            principal = await self._principal(context)
            body = FileHistoryIn.model_validate(_json_object(request.json, "json"))
            answer = await working_memory.file_history(
                self._state, principal, body.task_id, body.path, limit=body.limit
            )
            return _reply(answer)

        return await _guarded(context, work)

    async def GetPromotionPlan(self, request: Any, context: grpc.aio.ServicerContext) -> Any:  # noqa: N802
        async def work() -> Any:
            principal = await self._principal(context)
            task_id = _required(request.task_id, "task_id")
            page = PlanPageIn.model_validate(
                {name: getattr(request, name) for name in ("offset", "limit") if request.HasField(name)}
            )
            answer = await promotion_views.promotion_plan(
                self._state, principal, task_id, page.offset, page.limit
            )
            return _reply(answer)

        return await _guarded(context, work)

    async def VerifyPromotion(self, request: Any, context: grpc.aio.ServicerContext) -> Any:  # noqa: N802
        async def work() -> Any:
            principal = await self._principal(context)
            task_id = _required(request.task_id, "task_id")
            body = VerificationIn.model_validate(_json_object(request.json, "json"))
            return _reply(await promotions.verify_promotion(self._state, principal, task_id, body))

        return await _guarded(context, work)

    async def ApprovePromotion(self, request: Any, context: grpc.aio.ServicerContext) -> Any:  # noqa: N802
        return await self._decide(request, context, "approve")

    async def RejectPromotion(self, request: Any, context: grpc.aio.ServicerContext) -> Any:  # noqa: N802
        return await self._decide(request, context, "reject")

    async def _decide(self, request: Any, context: grpc.aio.ServicerContext, decision: str) -> Any:
        async def work() -> Any:
            principal = await self._principal(context)
            task_id = _required(request.task_id, "task_id")
            body = DecisionIn.model_validate(_json_object(request.json, "json"))
            return _reply(await promotions.decide_promotion(self._state, principal, task_id, decision, body))

        return await _guarded(context, work)

    async def ValidateMemory(self, request: Any, context: grpc.aio.ServicerContext) -> Any:  # noqa: N802
        async def work() -> Any:
            principal = await self._principal(context)
            ref = _memory_ref(request.memory_id)
            body = ValidateIn.model_validate(_json_object(request.json, "json"))
            return _reply(await memories.validate(self._state, principal, ref, body))

        return await _guarded(context, work)

    async def MemoryFeedback(self, request: Any, context: grpc.aio.ServicerContext) -> Any:  # noqa: N802
        async def work() -> Any:
            principal = await self._principal(context)
            ref = _memory_ref(request.memory_id)
            body = FeedbackIn.model_validate(_json_object(request.json, "json"))
            return _reply(await memories.feedback(self._state, principal, ref, body))

        return await _guarded(context, work)

    async def MatchBugPattern(self, request: Any, context: grpc.aio.ServicerContext) -> Any:  # noqa: N802
        async def work() -> Any:
            principal = await self._principal(context)
            body = BugMatchIn.model_validate(_json_object(request.json, "json"))
            return _reply(await bug_patterns.match(self._state, principal, body))

        return await _guarded(context, work)

    async def ObserveCodeRule(self, request: Any, context: grpc.aio.ServicerContext) -> Any:  # noqa: N802
        async def work() -> Any:
            principal = await self._principal(context)
            ref = _memory_ref(request.memory_id)
            body = ObservationIn.model_validate(_json_object(request.json, "json"))
            return _reply(await code_rules.observe(self._state, principal, ref, body))

        return await _guarded(context, work)

    async def CodeRulesFromPatch(self, request: Any, context: grpc.aio.ServicerContext) -> Any:  # noqa: N802
        async def work() -> Any:
            principal = await self._principal(context)
            body = FromPatchIn.model_validate(_json_object(request.json, "json"))
            return _reply(await patch_patterns.from_patch(self._state, principal, body))

        return await _guarded(context, work)

    async def CorrectTask(self, request: Any, context: grpc.aio.ServicerContext) -> Any:  # noqa: N802
        async def work() -> Any:
            principal = await self._principal(context)
            task = await authorized_task(
                self._state, principal, _required(request.task_id, "task_id"), "read"
            )
            body = CorrectionIn.model_validate(_json_object(request.json, "json"))
            return _reply(await corrections.correct(self._state, principal, task, body))

        return await _guarded(context, work)

    async def RecordCitations(self, request: Any, context: grpc.aio.ServicerContext) -> Any:  # noqa: N802
        async def work() -> Any:
            principal = await self._principal(context)
            task = await authorized_task(
                self._state, principal, _required(request.task_id, "task_id"), "write"
            )
            body = CitationsIn.model_validate(_json_object(request.json, "json"))
            return _reply(await citations.record_citations(self._state, principal, task, body))

        return await _guarded(context, work)

    async def MemoryUsedBy(self, request: Any, context: grpc.aio.ServicerContext) -> Any:  # noqa: N802
        async def work() -> Any:
            principal = await self._principal(context)
            return _reply(await citations.used_by(self._state, principal, _memory_ref(request.memory_id)))

        return await _guarded(context, work)

    async def LiftMemories(self, request: Any, context: grpc.aio.ServicerContext) -> Any:  # noqa: N802
        async def work() -> Any:
            principal = await self._principal(context)
            body = LiftIn.model_validate(_json_object(request.json, "json"))
            return _reply(await lifting.lift(self._state, principal, body))

        return await _guarded(context, work)

    async def StartReflection(self, request: Any, context: grpc.aio.ServicerContext) -> Any:  # noqa: N802
        async def work() -> Any:
            principal = await self._principal(context)
            body = ReflectionStart.model_validate(_json_object(request.json, "json"))
            return _reply(await reflections.start_reflection(self._state, principal, body))

        return await _guarded(context, work)

    async def ListReflections(self, request: Any, context: grpc.aio.ServicerContext) -> Any:  # noqa: N802
        async def work() -> Any:
            principal = await self._principal(context)
            # the same names, checked the same way, as the HTTP query parameters
            body = ReflectionStart.model_validate(_json_object(request.json, "json"))
            return _reply(await reflections.reflections(self._state, principal, body.org, body.project))

        return await _guarded(context, work)


def _tracing_interceptors() -> list[Any]:
    """A server span per call (when tracing is on), as the HTTP gateway has per request."""
    provider = tracer_provider()
    if provider is None:
        return []
    from opentelemetry.instrumentation.grpc import aio_server_interceptor

    return [aio_server_interceptor(tracer_provider=provider)]  # type: ignore[no-untyped-call]


async def start_grpc_server(resources: GatewayResources, host: str, port: int) -> tuple[grpc.aio.Server, int]:
    """Serve on `host:port` (port 0: any free port); returns the started server and its bound port."""
    limit = resources.settings.max_request_bytes
    server = grpc.aio.server(
        interceptors=_tracing_interceptors(),
        options=[("grpc.max_receive_message_length", limit), ("grpc.max_send_message_length", limit)],
    )
    pb2_grpc.add_LoregateServicer_to_server(LoregateServicer(resources), server)
    bound = server.add_insecure_port(f"{host}:{port}")
    if bound == 0:
        raise OSError(f"cannot bind the gRPC gateway to {host}:{port}")
    await server.start()
    return server, bound


@asynccontextmanager
async def running_grpc_server(
    settings: Settings, *, host: str | None = None, port: int | None = None
) -> AsyncIterator[int]:
    """A gRPC gateway with resources of its own (engine, authoriser, caches); yields its bound port."""
    authorizer = make_authorizer(settings.sqlalchemy_url(), timeout_seconds=settings.db_timeout_seconds)
    state = GatewayResources(settings=settings, engine=make_engine(settings), authorizer=authorizer)
    instrument_engine(state.engine)
    authorizer.add_listener(state.key_cache.clear)
    server, bound = await start_grpc_server(
        state, host or settings.http_host, settings.grpc_port if port is None else port
    )
    try:
        yield bound
    finally:
        await server.stop(grace=5)
        authorizer.close()
        await state.engine.dispose()
