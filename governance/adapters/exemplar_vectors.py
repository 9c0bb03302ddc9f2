"""The known injections' vectors (governance/instruction_exemplars.py), for the embedder they were calibrated
with, embedded once per process at most.

Plan compares every candidate's vector with those of ~300 exemplar texts. Embedding them cost every new
worker 8-13 s of its first plan, so the calibrated embedder's vectors ship beside this module
(`exemplar_vectors.npz`, written by `python -m governance.adapters.exemplar_vectors`), keyed by the
embedder's model id and a digest of the exemplar texts. They are verified when first asked for: the model
id and the digest must be the running ones, and a few exemplars embedded now must land where the shipped
vectors say (cosine >= `VERIFY_COSINE`). Otherwise (another engine build, an edited exemplar, no file) the
exemplars are embedded here instead, once per process. Nothing is ever downloaded.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import threading
from pathlib import Path

import numpy as np

from governance.adapters.embedders import Embedder
from governance.instruction_exemplars import EXEMPLAR_EMBEDDER, exemplar_texts

__all__ = [
    "SHIPPED",
    "VERIFY_COSINE",
    "exemplar_vectors",
    "load_shipped",
    "texts_digest",
    "write_shipped",
]

_log = logging.getLogger(__name__)

SHIPPED = Path(__file__).with_name("exemplar_vectors.npz")
# how close an exemplar embedded now must be to its shipped vector (the same engine gives ~1.0; the cut the
# vectors serve is 0.91, so a drift this small cannot move a decision)
VERIFY_COSINE = 0.999
# which exemplars are embedded again to verify the shipped vectors: the first, a middle one, the last
_SAMPLE = (0, 151, -1)
# texts embedded per call when the exemplars are embedded here (each call one turn at the fair gate)
_SLICE = 64

_vectors: dict[str, np.ndarray] = {}
_lock = threading.Lock()


def texts_digest(texts: list[str]) -> str:
    """What the shipped vectors were embedded from: a digest of the texts, in order."""
    digest = hashlib.sha256()
    for text in texts:
        digest.update(text.encode())
        digest.update(b"\x00")
    return digest.hexdigest()


def load_shipped(model_id: str, texts: list[str], path: Path = SHIPPED) -> np.ndarray | None:
    """The shipped vectors when they are `model_id`'s of exactly `texts` (unverified), else None."""
    if not path.exists():
        return None
    with np.load(path, allow_pickle=False) as shipped:
        if str(shipped["model_id"]) != model_id or str(shipped["texts_sha256"]) != texts_digest(texts):
            return None
        vectors = np.asarray(shipped["vectors"], dtype=np.float32)
    return vectors if vectors.shape[0] == len(texts) else None


def _verified(embedder: Embedder, texts: list[str], vectors: np.ndarray) -> bool:
    """A few exemplars embedded now land where the shipped vectors say."""
    picked = sorted({i % len(texts) for i in _SAMPLE})
    fresh = np.asarray(embedder.embed_passages([texts[i] for i in picked]), dtype=np.float32)
    cosines = np.sum(fresh * vectors[picked], axis=1)
    return bool(np.all(cosines >= VERIFY_COSINE))


def _embedded(embedder: Embedder, texts: list[str]) -> np.ndarray:
    parts = [embedder.embed_passages(texts[i : i + _SLICE]) for i in range(0, len(texts), _SLICE)]
    return np.asarray(np.concatenate(parts), dtype=np.float32)


def _vectors_for(embedder: Embedder) -> np.ndarray:
    with _lock:  # once per process, however many plans ask at once
        cached = _vectors.get(embedder.model_id)
        if cached is not None:
            return cached
        texts = exemplar_texts()
        vectors = load_shipped(embedder.model_id, texts)
        if vectors is None or not _verified(embedder, texts, vectors):
            _log.warning(
                "the shipped vectors of the known injections do not fit %s: embedding them in this process",
                embedder.model_id,
            )
            vectors = _embedded(embedder, texts)
        _vectors[embedder.model_id] = vectors
        return vectors


async def exemplar_vectors(embedder: Embedder) -> np.ndarray | None:
    """The exemplars' vectors (rows, unit) for `embedder`, or None when it is not the embedder the
    resemblance cut was calibrated with (the check is then off)."""
    if embedder.model_id != EXEMPLAR_EMBEDDER:
        return None
    cached = _vectors.get(embedder.model_id)
    if cached is not None:
        return cached
    return await asyncio.to_thread(_vectors_for, embedder)


def write_shipped(embedder: Embedder, path: Path = SHIPPED) -> Path:
    """Embed the exemplars with `embedder` and write them, keyed, where `load_shipped` reads them."""
    texts = exemplar_texts()
    np.savez_compressed(
        path,
        model_id=np.array(embedder.model_id),
        texts_sha256=np.array(texts_digest(texts)),
        vectors=_embedded(embedder, texts),
    )
    return path


if __name__ == "__main__":  # regenerate after editing the exemplars or changing the calibrated embedder
    from governance.adapters.embedders import make_embedder
    from governance.config import Settings

    print(write_shipped(make_embedder(Settings())))
