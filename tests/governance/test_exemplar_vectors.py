"""The known injections' vectors ship for the calibrated embedder, and are used only where they fit."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from governance.adapters.embedders import make_embedder
from governance.adapters.exemplar_vectors import SHIPPED, VERIFY_COSINE, exemplar_vectors, load_shipped
from governance.config import Settings
from governance.instruction_exemplars import EXEMPLAR_EMBEDDER, exemplar_texts


def test_shipped_exemplar_vectors_are_the_default_embedders_of_todays_exemplars() -> None:
    embedder = make_embedder(Settings())
    assert embedder.model_id == EXEMPLAR_EMBEDDER
    texts = exemplar_texts()
    shipped = load_shipped(embedder.model_id, texts)
    assert shipped is not None, "exemplars changed: python -m governance.adapters.exemplar_vectors"
    picked = [0, len(texts) // 3, len(texts) - 1]
    fresh = embedder.embed_passages([texts[i] for i in picked])
    assert np.all(np.sum(fresh * shipped[picked], axis=1) >= VERIFY_COSINE)


def test_shipped_exemplar_vectors_refused_for_another_model_or_other_texts(tmp_path: Path) -> None:
    embedder = make_embedder(Settings())
    path = tmp_path / "vectors.npz"
    path.write_bytes(SHIPPED.read_bytes())
    texts = exemplar_texts()
    assert load_shipped(embedder.model_id, texts, path) is not None
    assert load_shipped("openai-compatible:http://x:m:384", texts, path) is None
    assert load_shipped(embedder.model_id, [*texts[:-1], texts[-1] + " (edited)"], path) is None
    assert load_shipped(embedder.model_id, texts, tmp_path / "missing.npz") is None


async def test_exemplar_vectors_are_off_for_an_uncalibrated_embedder_and_shared_otherwise() -> None:
    class Other:
        dim = 384
        name = "other"
        model_id = "other@1"

        def embed_passages(self, texts: list[str]) -> np.ndarray:
            raise AssertionError("an uncalibrated embedder is never asked")

        def embed_query(self, text: str) -> np.ndarray:
            raise AssertionError("never asked")

    assert await exemplar_vectors(Other()) is None
    embedder = make_embedder(Settings())
    first = await exemplar_vectors(embedder)
    assert first is not None and first.shape == (len(exemplar_texts()), embedder.dim)
    assert await exemplar_vectors(embedder) is first  # once per process
