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


def _like_openai(fake: FakeOpenAI) -> None:
    """Answer as OpenAI's text-embedding-3-small does: 1,536-d unless the request names `dimensions`."""

    def embed(texts: list[str]) -> list[list[float]]:
        asked = fake.embedding_requests()[-1].get("dimensions") or 1536
        return [_vector(t, dim=int(asked)) for t in texts]

    fake.embed = embed


def test_default_openai_model_gets_the_schema_dimension(fake_openai: FakeOpenAI) -> None:
    _like_openai(fake_openai)
    settings = Settings(
        embedder="openai",
        embedding_base_url=fake_openai.base_url,
        query_embedding_cache_size=0,
        embedding_model=f"text-embedding-3-small#{uuid.uuid4().hex[:6]}",  # a fresh shared embedder
    )
    embedder = make_embedder(settings)

    assert embedder.embed_passages(["a text"]).shape == (1, DIM)
    assert embedder.embed_query("a query").shape == (DIM,)
    assert [r["dimensions"] for r in fake_openai.embedding_requests()] == [DIM, DIM]


def test_other_models_are_not_sent_dimensions_unless_asked(fake_openai: FakeOpenAI) -> None:
    _like_openai(fake_openai)
    plain = OpenAIEmbedder(base_url=fake_openai.base_url, model="fake-embed", api_key=None, dim=DIM)
    asked = OpenAIEmbedder(
        base_url=fake_openai.base_url, model="fake-embed", api_key=None, dim=DIM, send_dimensions="always"
    )

    with pytest.raises(EmbeddingDimensionMismatch, match="LOREGATE_EMBEDDING_SEND_DIMENSIONS=always"):
        plain.embed_passages(["a text"])
    assert asked.embed_passages(["a text"]).shape == (1, DIM)
    assert [r.get("dimensions") for r in fake_openai.embedding_requests()] == [None, DIM]
