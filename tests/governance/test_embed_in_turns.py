"""A big caller's texts go to the embedder in slices, one turn at the fair gate each: slices grow while the
caller is alone there and stay small while another caller is about (counted at a real endpoint)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from governance.adapters.embedders import (
    EMBEDDING_TENANT,
    FairEmbedder,
    OpenAIEmbedder,
    embed_in_turns,
    fair_gate_of,
)
from governance.limits import FairGate
from tests.utils.fake_openai import FakeOpenAI

DIM = 384


def _vector(text: str) -> list[float]:
    rng = np.random.default_rng(sum(text.encode()) + len(text))
    return [float(x) for x in rng.normal(size=DIM)]


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(embed=lambda texts: [_vector(t) for t in texts]) as fake:
        yield fake


def _endpoint(fake: FakeOpenAI) -> OpenAIEmbedder:
    return OpenAIEmbedder(base_url=fake.base_url, model="m", api_key=None, dim=DIM)


def _sizes(fake: FakeOpenAI) -> list[int]:
    return [len(r["input"]) for r in fake.embedding_requests()]


TEXTS = [f"observation {i}: service kappa-{i} answered in {i} ms" for i in range(150)]


async def test_embed_in_turns_a_caller_alone_from_the_start_takes_the_biggest_slices(
    fake_openai: FakeOpenAI,
) -> None:
    embedder = FairEmbedder(_endpoint(fake_openai), FairGate(clock=lambda: 0.0))
    EMBEDDING_TENANT.set("promotion:big")
    vectors = await embed_in_turns(embedder, TEXTS, first=8, most=64)
    assert _sizes(fake_openai) == [64, 64, 22]
    # every text once, in order
    expected = np.asarray([_vector(t) for t in TEXTS], dtype=np.float32)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    assert np.allclose(np.asarray(vectors), expected, atol=1e-6)


async def test_embed_in_turns_slices_grow_once_the_other_caller_is_gone() -> None:
    now = [0.0]

    def embed(texts: list[str]) -> list[list[float]]:
        now[0] += 10.0  # each slice takes 10 s: the other caller is forgotten after the second
        return [_vector(t) for t in texts]

    gate = FairGate(clock=lambda: now[0])
    gate.acquire("promotion:small")
    gate.release()
    with FakeOpenAI(embed=embed) as fake:
        EMBEDDING_TENANT.set("promotion:big")
        vectors = await embed_in_turns(FairEmbedder(_endpoint(fake), gate), TEXTS, first=8, most=64)
        assert _sizes(fake) == [8, 8, 16, 32, 64, 22]
    assert len(vectors) == len(TEXTS)


async def test_embed_in_turns_slices_stay_small_while_another_caller_was_served_lately(
    fake_openai: FakeOpenAI,
) -> None:
    gate = FairGate(clock=lambda: 0.0)  # no time passes: the other caller stays recent
    embedder = FairEmbedder(_endpoint(fake_openai), gate)
    gate.acquire("promotion:small")
    gate.release()
    EMBEDDING_TENANT.set("promotion:big")
    await embed_in_turns(embedder, TEXTS[:40], first=8, most=64)
    assert _sizes(fake_openai) == [8, 8, 8, 8, 8]


async def test_embed_in_turns_without_a_gate_keeps_the_first_slice(fake_openai: FakeOpenAI) -> None:
    endpoint = _endpoint(fake_openai)
    assert fair_gate_of(endpoint) is None
    await embed_in_turns(endpoint, TEXTS[:20], first=8, most=64)
    assert _sizes(fake_openai) == [8, 8, 4]
