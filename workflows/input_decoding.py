"""Unreadable workflow input ends the workflow at once, instead of retrying its first task forever.

A workflow started by hand (`temporal workflow start --type PromotionWorkflow --input '"x"'`, or an object
missing required fields) carries an input the worker cannot decode into the workflow's input dataclass.
Temporal's SDK treats that as a failed workflow task and retries it every few seconds, with a traceback each
time, until someone terminates the run. The worker's payload converter therefore turns a decoding error for
one of its workflows' input types into a non-retryable `ApplicationError` of type `UnreadableInput`: the SDK
fails the workflow execution with it (a failure error raised while decoding the start is the supported way
to fail the workflow rather than the task), and one warning line names the workflow and the cause.

Only the start input of loregate's workflows is concerned: activity results, child results, signal and
update arguments decode as before, and any other error in a workflow task (nondeterminism, a code bug) still
fails the task, so a fixed worker resumes the run. A start with no input at all (or with several) never
reaches the converter: the worker's `StartArgumentsInterceptor` fails it the same way before `run` is called
(the workflows whose `@workflow.init` takes the input declare it with `start_input_init`: the SDK builds the
instance with every argument the start carried before any interceptor runs, so their `__init__` takes the
input's default when the count is wrong, and the interceptor then fails the start).
"""

from __future__ import annotations

import functools
import inspect
import logging
import typing
from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar, Self, TypeVar, cast

from temporalio import workflow
from temporalio.api.common.v1 import Payload
from temporalio.converter import (
    DataConverter,
    DefaultPayloadConverter,
    SerializationContext,
    WorkflowSerializationContext,
)
from temporalio.exceptions import ApplicationError
from temporalio.worker import (
    ExecuteWorkflowInput,
    Interceptor,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
)

__all__ = [
    "UNREADABLE_INPUT",
    "StartArgumentsInterceptor",
    "start_input_init",
    "input_converter_class",
    "data_converter_for",
]

UNREADABLE_INPUT = "UnreadableInput"

logger = logging.getLogger("loregate.workflows")


class _InputCheckingPayloadConverter(DefaultPayloadConverter):
    """The default converter; a decoding error for a workflow input type fails the workflow."""

    # by module and name: the workflow sandbox imports its own copy of each input class
    input_types: ClassVar[frozenset[str]] = frozenset()

    def __init__(self) -> None:
        super().__init__()
        self._context: SerializationContext | None = None

    def with_context(self, context: SerializationContext) -> Self:
        new = super().with_context(context)
        if new is self:
            new = type(self)()
        new._context = context
        return new

    def from_payloads(self, payloads: Sequence[Payload], type_hints: list[type] | None = None) -> list[Any]:
        try:
            return super().from_payloads(payloads, type_hints)
        except Exception as err:
            unreadable = [t for t in type_hints or [] if _name(t) in self.input_types]
            if not unreadable:
                raise
            cause = err.__cause__ or err
            where = ""
            if isinstance(self._context, WorkflowSerializationContext):
                where = f" of workflow {self._context.workflow_id}"
            message = (
                f"unreadable input{where}: expected a {unreadable[0].__name__} object "
                f"({type(cause).__name__}: {cause})"
            )
            logger.warning("%s; the workflow fails without running", message)
            raise ApplicationError(message, type=UNREADABLE_INPUT, non_retryable=True) from None


def _name(t: type) -> str:
    return f"{getattr(t, '__module__', '')}.{getattr(t, '__qualname__', '')}"


def _input_types(workflow_classes: Iterable[type]) -> frozenset[str]:
    found: set[str] = set()
    for cls in workflow_classes:
        hints = typing.get_type_hints(cls.run)  # type: ignore[attr-defined]
        found.update(_name(t) for name, t in hints.items() if name != "return" and isinstance(t, type))
    return frozenset(found)


def input_converter_class(workflow_classes: Iterable[type]) -> type[DefaultPayloadConverter]:
    """A payload converter class that fails the workflow on an unreadable start input of these workflows."""
    types = _input_types(workflow_classes)
    return type("LoregatePayloadConverter", (_InputCheckingPayloadConverter,), {"input_types": types})


def data_converter_for(base: DataConverter, workflow_classes: Iterable[type]) -> DataConverter:
    """`base` (its codec and failure converter kept) with the input-checking payload converter."""
    if issubclass(base.payload_converter_class, _InputCheckingPayloadConverter):
        return base
    import dataclasses

    return dataclasses.replace(base, payload_converter_class=input_converter_class(workflow_classes))


class _StartArgumentsInbound(WorkflowInboundInterceptor):
    """Fails a start that carried no input (or several): the converter never saw a payload to refuse."""

    async def execute_workflow(self, input: ExecuteWorkflowInput) -> Any:
        expected = len(inspect.signature(input.run_fn).parameters) - 1  # less `self`
        if len(input.args) != expected:
            info = workflow.info()
            message = (
                f"unreadable input of workflow {info.workflow_id}: {info.workflow_type} takes "
                f"{expected} input object{'s' if expected != 1 else ''}, the start carried {len(input.args)}"
            )
            workflow.logger.warning("%s; the workflow fails without running", message)
            raise ApplicationError(message, type=UNREADABLE_INPUT, non_retryable=True)
        return await super().execute_workflow(input)


class StartArgumentsInterceptor(Interceptor):
    """The worker interceptor that refuses a start with the wrong number of inputs (see above)."""

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor] | None:
        return _StartArgumentsInbound


_Init = TypeVar("_Init", bound=Callable[..., None])


def start_input_init(init: _Init) -> _Init:
    """`@workflow.init` for an `__init__(self, data: Input = NO_INPUT)`, whatever the start carried.

    The SDK calls `__init__` with every argument of the start before `StartArgumentsInterceptor` can look at
    them; a start with two inputs would make that call a `TypeError`, a failed workflow task retried forever.
    The wrapper passes the input on only when the start carried exactly one (a single unreadable one never
    gets here: the payload converter fails the workflow first) and otherwise builds the instance from the
    default, so the interceptor fails the start cleanly. The SDK sees the wrapped signature
    (`inspect.signature` follows `__wrapped__`), which must equal `run`'s.
    """

    @functools.wraps(init)
    def tolerant(self: object, *args: object) -> None:
        if len(args) == 1:
            init(self, args[0])
        else:
            init(self)

    return cast(_Init, workflow.init(tolerant))
