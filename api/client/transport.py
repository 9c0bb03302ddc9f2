"""How the client's API is declared once and served twice, blocking and asyncio.

Each API call is one method that only builds its `Request` (path, body, query), decorated with the response
model that parses the answer: `@endpoint(TaskPublic)`, or `@pages(EntriesPage, ...)` for a listing read a page
at a time. The decorator turns it into a descriptor: on a `SyncTransport` the method sends the request and
returns the model; on an `AsyncTransport` it is a coroutine function returning the same model (a paged one is
an iterator, or an async iterator, of the items). Sending, the decoding of the answer and the mapping of a
refusal to a typed exception live here once, so the two clients cannot drift apart.
"""

from __future__ import annotations

import functools
import inspect
import os
import re
import types
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Concatenate, Generic, ParamSpec, Self, TypeVar, overload

import httpx
from pydantic import BaseModel, ValidationError

from api.client.errors import (
    ServerError,
    UnauthenticatedError,
    error_from_response,
    foreign_answer,
    unreachable,
)

__all__ = [
    "DEFAULT_URL",
    "DEFAULT_TIMEOUT",
    "Request",
    "SyncTransport",
    "AsyncTransport",
    "Endpoint",
    "Pages",
    "endpoint",
    "pages",
    "parse",
    "drop_none",
]

P = ParamSpec("P")
ModelT = TypeVar("ModelT", bound=BaseModel)
ItemT = TypeVar("ItemT")


def drop_none(body: Mapping[str, Any]) -> dict[str, Any]:
    """Leave out unset options, so the server's defaults apply."""
    return {k: v for k, v in body.items() if v is not None}


@dataclass(frozen=True)
class Request:
    """One HTTP request of the v1 API (paths and field names are stable), independent of the transport."""

    method: str
    path: str
    json: dict[str, Any] | None = None
    params: dict[str, Any] = field(default_factory=dict)

    def with_params(self, **params: Any) -> Request:
        """The same request with these query parameters changed (the next page of a listing)."""
        return replace(self, params={**self.params, **params})


def parse(response: httpx.Response, model: type[ModelT]) -> ModelT:
    """The answer as `model`, or the typed exception of a refusal."""
    if response.status_code >= 400:
        raise error_from_response(response)
    try:
        return model.model_validate_json(response.content)
    except ValidationError as exc:  # a gateway of another version, or something that is not the gateway
        problems = exc.errors(include_url=False, include_input=False)
        if any(p["type"] == "json_invalid" for p in problems):  # an HTML page, say: not loregate at all
            raise ServerError("invalid_response", foreign_answer(response), response.status_code) from None
        asked = f"{response.request.method} {response.request.url.path}"
        first = problems[0]
        where = ".".join(str(part) for part in first["loc"]) or "the answer"
        detail = (
            f"the answer to {asked} is not a {model.__name__} ({len(problems)} problem(s), first "
            f"{where}: {first['msg']}): a gateway of another version, or not loregate's?"
        )
        raise ServerError("invalid_response", detail, response.status_code) from exc


DEFAULT_URL = "http://127.0.0.1:8080"
DEFAULT_TIMEOUT = 30.0


# what an API key may hold: visible ASCII (loregate's keys are `lg_` and URL-safe base64)
_KEY_CHARACTERS = re.compile(r"[\x21-\x7e]+")
MALFORMED_KEY = (
    "malformed API key (LOREGATE_API_KEY or --api-key): it holds white space or control characters inside "
    "it, which no loregate key has; the key is not shown"
)


def authorization(api_key: str | None) -> tuple[dict[str, str], str | None]:
    """The `Authorization` header for `api_key` (white space around it, a key file's newline, dropped), and
    why the key cannot be sent, if it cannot: the header would be refused before leaving, and httpx's
    error names the whole value, so the key is judged here and never repeated."""
    key = (api_key or "").strip()
    if not key:
        return {}, None
    if not _KEY_CHARACTERS.fullmatch(key):
        return {}, MALFORMED_KEY
    return {"Authorization": f"Bearer {key}"}, None


def _configured(
    base_url: str | None, api_key: str | None, timeout: float
) -> tuple[dict[str, Any], str | None]:
    """The httpx client's options, from the arguments or else `LOREGATE_URL` and `LOREGATE_API_KEY`, and
    why the key cannot be sent (`authorization`)."""
    url = (base_url or os.environ.get("LOREGATE_URL") or DEFAULT_URL).rstrip("/")
    key = api_key if api_key is not None else os.environ.get("LOREGATE_API_KEY")
    headers, problem = authorization(key)
    return {"base_url": url, "headers": headers, "timeout": timeout}, problem


class SyncTransport:
    """Sends requests with a blocking `httpx.Client`; use as a context manager (or `close` it)."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        options, self._key_problem = _configured(base_url, api_key, timeout)
        self._http = httpx.Client(**options, transport=transport)
        self.base_url = str(self._http.base_url).rstrip("/")

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the connections."""
        self._http.close()

    def call(self, request: Request, model: type[ModelT]) -> ModelT:
        """Send `request`; its answer as `model`."""
        if self._key_problem is not None:
            raise UnauthenticatedError("unauthenticated", self._key_problem, 0)
        try:
            response = self._http.request(
                request.method, request.path, json=request.json, params=request.params
            )
        except httpx.TransportError as exc:
            raise unreachable(self.base_url, exc) from exc
        return parse(response, model)


class AsyncTransport:
    """Sends requests with an `httpx.AsyncClient`; use as an async context manager (or `aclose` it)."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        options, self._key_problem = _configured(base_url, api_key, timeout)
        self._http = httpx.AsyncClient(**options, transport=transport)
        self.base_url = str(self._http.base_url).rstrip("/")

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Release the connections."""
        await self._http.aclose()

    async def call(self, request: Request, model: type[ModelT]) -> ModelT:
        """Send `request`; its answer as `model`."""
        if self._key_problem is not None:
            raise UnauthenticatedError("unauthenticated", self._key_problem, 0)
        try:
            response = await self._http.request(
                request.method, request.path, json=request.json, params=request.params
            )
        except httpx.TransportError as exc:
            raise unreachable(self.base_url, exc) from exc
        return parse(response, model)


Build = Callable[Concatenate[Any, P], Request]


def _described(method: Callable[..., Any], build: Callable[..., Any], returns: str) -> Callable[..., Any]:
    """`method` with the name, docstring and signature of `build`, but the return type the caller gets."""
    functools.update_wrapper(method, build)
    del method.__wrapped__  # type: ignore[attr-defined]  # inspect would follow it back to `-> Request`
    method.__signature__ = inspect.signature(build).replace(return_annotation=returns)  # type: ignore[attr-defined]
    return method


class _Twin:
    """A descriptor holding a method's blocking and asyncio forms; the client's transport picks one."""

    blocking: Callable[..., Any]
    asyncio: Callable[..., Any]

    def _bound(self, client: object, owner: type | None) -> Callable[..., Any]:
        if client is None:  # looked up on the class: the plain function, as for any method
            return self.asyncio if owner is not None and issubclass(owner, AsyncTransport) else self.blocking
        return types.MethodType(self.asyncio if isinstance(client, AsyncTransport) else self.blocking, client)


class Endpoint(_Twin, Generic[P, ModelT]):
    """One API call: `build` makes its request, `model` parses its answer."""

    def __init__(self, build: Build[P], model: type[ModelT]) -> None:
        self.build, self.model = build, model

        def blocking(client: SyncTransport, *args: P.args, **kwargs: P.kwargs) -> ModelT:
            return client.call(build(client, *args, **kwargs), model)

        async def asyncio(client: AsyncTransport, *args: P.args, **kwargs: P.kwargs) -> ModelT:
            return await client.call(build(client, *args, **kwargs), model)

        self.blocking = _described(blocking, build, model.__name__)
        self.asyncio = _described(asyncio, build, model.__name__)

    @overload
    def __get__(self, client: SyncTransport, owner: type | None = None) -> Callable[P, ModelT]: ...
    @overload
    def __get__(
        self, client: AsyncTransport, owner: type | None = None
    ) -> Callable[P, Coroutine[Any, Any, ModelT]]: ...
    @overload
    def __get__(self, client: None, owner: type | None = None) -> Callable[..., Any]: ...
    def __get__(self, client: object, owner: type | None = None) -> Callable[..., Any]:
        return self._bound(client, owner)


class Pages(_Twin, Generic[P, ModelT, ItemT]):
    """A listing read a page at a time: `build` makes the first page's request, `follow` the next one's."""

    def __init__(
        self,
        build: Build[P],
        model: type[ModelT],
        item: type[ItemT],
        items: Callable[[ModelT], Iterable[ItemT]],
        follow: Callable[[Request, ModelT], Request | None],
    ) -> None:
        self.build, self.model, self.item = build, model, item

        def blocking(client: SyncTransport, *args: P.args, **kwargs: P.kwargs) -> Iterator[ItemT]:
            request: Request | None = build(client, *args, **kwargs)
            while request is not None:
                page = client.call(request, model)
                yield from items(page)
                request = follow(request, page)

        async def asyncio(client: AsyncTransport, *args: P.args, **kwargs: P.kwargs) -> AsyncIterator[ItemT]:
            request: Request | None = build(client, *args, **kwargs)
            while request is not None:
                page = await client.call(request, model)
                for item in items(page):
                    yield item
                request = follow(request, page)

        self.blocking = _described(blocking, build, f"Iterator[{item.__name__}]")
        self.asyncio = _described(asyncio, build, f"AsyncIterator[{item.__name__}]")

    @overload
    def __get__(self, client: SyncTransport, owner: type | None = None) -> Callable[P, Iterator[ItemT]]: ...
    @overload
    def __get__(
        self, client: AsyncTransport, owner: type | None = None
    ) -> Callable[P, AsyncIterator[ItemT]]: ...
    @overload
    def __get__(self, client: None, owner: type | None = None) -> Callable[..., Any]: ...
    def __get__(self, client: object, owner: type | None = None) -> Callable[..., Any]:
        return self._bound(client, owner)


def endpoint(model: type[ModelT]) -> Callable[[Build[P]], Endpoint[P, ModelT]]:
    """Declare an API call whose answer is one `model`."""

    def declare(build: Build[P]) -> Endpoint[P, ModelT]:
        return Endpoint(build, model)

    return declare


def pages(
    model: type[ModelT],
    item: type[ItemT],
    items: Callable[[ModelT], Iterable[ItemT]],
    follow: Callable[[Request, ModelT], Request | None],
) -> Callable[[Build[P]], Pages[P, ModelT, ItemT]]:
    """Declare a paged listing: each answer is a `model`; the call yields its `items` (each an `item`)."""

    def declare(build: Build[P]) -> Pages[P, ModelT, ItemT]:
        return Pages(build, model, item, items, follow)

    return declare
