"""The labelled dedup pairs and their cached cosines (shared by the calibration script and the tests).

`tests/data/dedup_pairs.jsonl` is written by `tests/data/make_dedup_pairs.py`. Each pair's cosine under the
default embedder (passage embeddings, as stored) is cached in `tests/data/dedup_cosines.json`, keyed by the
embedder's `model_id` and a digest of the two texts: embedding the ~1,400 texts takes ~30 s on two cores, so
the default test run reads the cache and re-embeds only a sample to prove it is current.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = [
    "PAIRS_FILE",
    "COSINES_FILE",
    "UNSEEN_FILE",
    "UNSEEN_COSINES_FILE",
    "Pair",
    "load_pairs",
    "pair_key",
    "cosines",
    "cached_cosines",
]

DATA = Path(__file__).resolve().parent.parent / "data"
PAIRS_FILE = DATA / "dedup_pairs.jsonl"
COSINES_FILE = DATA / "dedup_cosines.json"
# written by hand after the rules and the fit were done, to measure them on statements nobody tuned them on
UNSEEN_FILE = DATA / "dedup_pairs_unseen.jsonl"
UNSEEN_COSINES_FILE = DATA / "dedup_cosines_unseen.json"


@dataclass(frozen=True)
class Pair:
    """One labelled pair: `category` says what kind of pair, `split` whether the fit may see it."""

    a: str
    b: str
    label: str
    duplicate: bool
    lang: str
    category: str = ""
    split: str = "train"
    source: str = ""


def load_pairs(path: Path = PAIRS_FILE) -> list[Pair]:
    """The labelled pairs."""
    with path.open(encoding="utf-8") as handle:
        return [Pair(**json.loads(line)) for line in handle if line.strip()]


def pair_key(a: str, b: str) -> str:
    """The cache key of a pair's cosine (order matters not: cosine is symmetric)."""
    first, second = sorted((a, b))
    return hashlib.sha256(f"{first}\x1e{second}".encode()).hexdigest()[:20]


def cached_cosines(pairs: list[Pair], model_id: str, path: Path = COSINES_FILE) -> np.ndarray | None:
    """The cached cosines of `pairs` under `model_id`, or None if the cache lacks any."""
    if not path.exists():
        return None
    cache = json.loads(path.read_text(encoding="utf-8"))
    if cache.get("model_id") != model_id:
        return None
    values = cache["cosines"]
    try:
        return np.array([values[pair_key(p.a, p.b)] for p in pairs], dtype=np.float64)
    except KeyError:
        return None


def cosines(
    pairs: list[Pair], embedder: object, *, path: Path = COSINES_FILE, write: bool = True
) -> np.ndarray:
    """Each pair's cosine of passage embeddings: from the cache, else embedded (texts once) and cached."""
    model_id = str(embedder.model_id)  # type: ignore[attr-defined]
    found = cached_cosines(pairs, model_id, path)
    if found is not None:
        return found
    texts = sorted({t for p in pairs for t in (p.a, p.b)})
    vectors = embedder.embed_passages(texts)  # type: ignore[attr-defined]
    index = {t: i for i, t in enumerate(texts)}
    sims = np.array([float(vectors[index[p.a]] @ vectors[index[p.b]]) for p in pairs])
    if write:
        body = {
            "model_id": model_id,
            "cosines": {pair_key(p.a, p.b): round(float(s), 5) for p, s in zip(pairs, sims, strict=True)},
        }
        path.write_text(json.dumps(body, sort_keys=True, indent=0) + "\n", encoding="utf-8")
    return np.round(sims, 5)
