"""Repeated queries reuse their embedding: a bounded LRU before the embedder, counted at a real endpoint."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from governance.adapters.embedders import QueryCachingEmbedder, make_embedder
from governance.config import Settings
from tests.utils.fake_openai import FakeOpenAI

DIM = 384


def _vector(text: str) -> list[float]:
    rng = np.random.default_rng(sum(text.encode()) + len(text))
    return [float(x) for x in rng.normal(size=DIM)]


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(embed=lambda texts: [_vector(t) for t in texts]) as fake:
        yield fake


def _embedded(fake: FakeOpenAI) -> list[str]:
    return [text for r in fake.embedding_requests() for text in r["input"]]


def _settings(fake: FakeOpenAI, size: int) -> Settings:
    return Settings(embedder="openai", embedding_base_url=fake.base_url, query_embedding_cache_size=size)


def test_query_cache_second_identical_query_does_not_reach_the_endpoint(fake_openai: FakeOpenAI) -> None:
    embedder = make_embedder(_settings(fake_openai, 4))

    first = embedder.embed_query("why does the webhook time out")
    second = embedder.embed_query("why does the webhook time out")

    np.testing.assert_array_equal(first, second)
    assert _embedded(fake_openai) == ["why does the webhook time out"]
    assert isinstance(embedder, QueryCachingEmbedder) and (embedder.hits, embedder.misses) == (1, 1)


def test_query_cache_is_bounded_and_evicts_the_least_recently_used(fake_openai: FakeOpenAI) -> None:
    embedder = make_embedder(_settings(fake_openai, 2))
    assert isinstance(embedder, QueryCachingEmbedder)

    for query in ("alpha", "beta", "alpha", "gamma"):  # alpha used again: beta is the oldest when gamma comes
        embedder.embed_query(query)
    assert len(embedder) == 2
    embedder.embed_query("alpha")  # still cached
    embedder.embed_query("beta")  # evicted: embedded again

    assert _embedded(fake_openai) == ["alpha", "beta", "gamma", "beta"]
    assert len(embedder) == 2


def test_query_cache_hands_out_copies(fake_openai: FakeOpenAI) -> None:
    embedder = make_embedder(_settings(fake_openai, 4))
    vector = embedder.embed_query("same text")
    vector[:] = 0.0  # a caller scribbling on its vector

    again = embedder.embed_query("same text")

    assert np.linalg.norm(again) == pytest.approx(1.0, abs=1e-5)


def test_query_cache_never_holds_passages(fake_openai: FakeOpenAI) -> None:
    embedder = make_embedder(_settings(fake_openai, 4))
    embedder.embed_passages(["a passage"])
    embedder.embed_passages(["a passage"])

    assert _embedded(fake_openai) == ["a passage", "a passage"]


def test_query_cache_size_zero_embeds_every_query(fake_openai: FakeOpenAI) -> None:
    embedder = make_embedder(_settings(fake_openai, 0))
    embedder.embed_query("q")
    embedder.embed_query("q")

    assert not isinstance(embedder, QueryCachingEmbedder)
    assert _embedded(fake_openai) == ["q", "q"]


def test_query_cache_size_must_not_be_negative() -> None:
    with pytest.raises(ValueError, match="query_embedding_cache_size"):
        Settings(query_embedding_cache_size=-1)
