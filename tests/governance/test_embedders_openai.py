"""The OpenAI-compatible embedder against a real `/v1/embeddings` endpoint on loopback."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import numpy as np
import pytest

from governance.adapters.embedders import EmbeddingDimensionMismatch, OpenAIEmbedder, make_embedder
from governance.config import Settings
from tests.utils.fake_openai import FakeOpenAI

DIM = 384


def _vector(text: str, dim: int = DIM) -> list[float]:
    rng = np.random.default_rng(abs(hash(text)) % 2**32)
    return [float(x) for x in rng.normal(size=dim)]


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


def test_openai_embedder_returns_endpoint_vectors_normalised(fake_openai: FakeOpenAI) -> None:
    fake_openai.embed = lambda texts: [_vector(t) for t in texts]
    embedder = OpenAIEmbedder(base_url=fake_openai.base_url, model="fake-embed", api_key=None, dim=DIM)

    vectors = embedder.embed_passages(["first text", "second text"])
    query = embedder.embed_query("first text")

    assert vectors.shape == (2, DIM)
    for row, text in zip(vectors, ["first text", "second text"], strict=True):
        expected = np.asarray(_vector(text), dtype=np.float32)
        np.testing.assert_allclose(row, expected / np.linalg.norm(expected), atol=1e-6)
    np.testing.assert_allclose(query, vectors[0], atol=1e-6)
    assert [r["input"] for r in fake_openai.embedding_requests()] == [
        ["first text", "second text"],
        ["first text"],
    ]


def test_openai_embedder_wrong_dimension_raises_clear_error(fake_openai: FakeOpenAI) -> None:
    fake_openai.embed = lambda texts: [_vector(t, dim=1536) for t in texts]
    embedder = OpenAIEmbedder(base_url=fake_openai.base_url, model="fake-embed", api_key=None, dim=DIM)

    with pytest.raises(EmbeddingDimensionMismatch, match=r"1536-d .* schema holds 384-d"):
        embedder.embed_passages(["a text"])


def test_openai_embedder_missing_vectors_raise_clear_error(fake_openai: FakeOpenAI) -> None:
    fake_openai.embed = lambda texts: [_vector(texts[0])]  # one vector for two texts
    embedder = OpenAIEmbedder(base_url=fake_openai.base_url, model="fake-embed", api_key=None, dim=DIM)

    with pytest.raises(EmbeddingDimensionMismatch, match="1 vectors .* for 2 texts"):
        embedder.embed_passages(["a text", "another text"])


def test_make_embedder_dimension_other_than_schema_is_refused() -> None:
    settings = Settings(
        embedder="openai",
        embedding_base_url=f"http://127.0.0.1:9/{uuid.uuid4().hex}/v1",
        embedding_dim=1536,
    )

    with pytest.raises(EmbeddingDimensionMismatch, match="LOREGATE_EMBEDDING_DIM=1536 .* 384-d"):
        make_embedder(settings)
