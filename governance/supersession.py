"""Contradiction judges: does a new statement contradict an old one about the same subject?

Supersession needs a decision the canonical key cannot give (two memories about the same thing
without a shared key). Two judges share one protocol:

- `RuleBasedJudge` (default, deterministic, offline): only speaks when the texts are nearly the same
  statement and differ in polarity (a negation on one side), in an opposite pair (enabled/disabled,
  always/never, 허용/금지 ...) or in a number/version (governance/wording/differences.py), and their words
  exchange no roles (governance/wording/order.py), and both are about one subject
  (governance/wording/subjects.py: "Server web-4 runs X" beside "Server web-3 runs X" is another fact, not
  a revision). It is deliberately conservative: a false "contradicts" would deprecate good knowledge, a
  false "no" only leaves two related memories.
- `LLMJudge` (governance/adapters/llm_judge.py): any OpenAI-compatible chat endpoint answering JSON; on any
  failure it falls back to the rule-based judge, so a flaky endpoint never blocks promotion.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol

from governance.wording.canonical import normalise
from governance.wording.differences import material_difference, skeleton
from governance.wording.order import order_difference
from governance.wording.subjects import subject_difference

__all__ = ["Verdict", "ContradictionJudge", "RuleBasedJudge"]


@dataclass(frozen=True)
class Verdict:
    """A judge's answer: whether the new text contradicts the old one, and why (kept as the note)."""

    contradicts: bool
    reason: str


class ContradictionJudge(Protocol):
    """Decides whether `new` contradicts `old`; `similarity` is their embedding cosine (a hint).

    `blocking` says whether `judge` waits on the network (callers then run it in a thread).
    """

    blocking: bool

    def judge(self, *, new: str, old: str, similarity: float) -> Verdict: ...


def _overlap(a: str, b: str) -> float:
    """Jaccard overlap of character bigrams (works for Korean, where particles glue onto words)."""
    grams_a = {a[i : i + 2] for i in range(max(1, len(a) - 1))}
    grams_b = {b[i : i + 2] for i in range(max(1, len(b) - 1))}
    if not grams_a or not grams_b:
        return 0.0
    return len(grams_a & grams_b) / len(grams_a | grams_b)


class RuleBasedJudge:
    """Deterministic judge: a contradiction is the same statement with a different value or polarity."""

    blocking = False

    def __init__(self, *, min_similarity: float = 0.8, min_overlap: float = 0.55) -> None:
        self.min_similarity = min_similarity
        self.min_overlap = min_overlap

    def judge(self, *, new: str, old: str, similarity: float) -> Verdict:
        if similarity < self.min_similarity:
            return Verdict(False, "not about the same subject")
        return _text_verdict(new, old, self.min_overlap)


# beyond the similarity, a verdict is a pure function of the two texts, and a publication asks about the same
# pairs again and again (each repeat of a fact meets the same close memories): once per pair per process
@lru_cache(maxsize=1 << 16)
def _text_verdict(new: str, old: str, min_overlap: float) -> Verdict:
    """`RuleBasedJudge`'s verdict on two texts about the same subject."""
    na, nb = normalise(new), normalise(old)
    difference = material_difference(na, nb)
    if difference is None:
        return Verdict(False, "no contradicting value, negation or opposite")
    # the same words with roles exchanged are another fact beside the old one, not its new version
    exchanged = order_difference(new, old)
    if exchanged is not None:
        return Verdict(False, f"{difference}, but {exchanged}: another statement, not a revision")
    # the same thing said of another subject ("web-4" after "web-3") is another fact, both true at once
    other = subject_difference(new, old)
    if other is not None:
        return Verdict(False, f"{difference}, but {other}: another fact, not a revision")
    # the rest of the text must be (nearly) the same statement, else they are two different facts
    if _overlap(skeleton(na), skeleton(nb)) < min_overlap:
        return Verdict(False, f"{difference}, but the statements differ otherwise")
    return Verdict(True, difference)
