"""The dedup/supersede/new decision for one candidate memory against its published neighbours (pure).

Parallel writers must never leave duplicates or contradictions behind (docs/architecture.md). Storage finds
the neighbours (same hash, same canonical-key head, nearest embeddings) under a lock; this module decides:

1. same content hash in the target scope                         -> DUPLICATE (reinforce it)
2. a bug pattern with the same error signature (its canonical key)  -> DUPLICATE (one pattern, counted)
   an active head with the same canonical key, other content     -> SUPERSEDE it
3. same content hash in a wider visible scope                     -> DUPLICATE
4. cosine >= dup_threshold, compatible keys, no veto (below), and the duplicate model
   (`governance.dedup_model`: cosine, lexical similarity, named terms and numbers) says so -> DUPLICATE
5. the contradiction judge says a close neighbour of the same memory type is contradicted -> SUPERSEDE it
6. otherwise                                                      -> NEW, linked to close neighbours

Step 4's "material difference" (a changed number, unit or version, another tool or owner, a negation, an
opposite term) keeps near-misses like "timeout 30 s" / "timeout 60 s" apart even when the embedder puts them
side by side; it is a veto. So is an "order difference" (`governance.wording.order.order_difference`): the
same words in an order that says another thing ("A calls B" / "B calls A", "migrate X to Y" / "Y to X",
a moved "only"), where a merge would keep one statement and lose the other, and between two Latin-script
texts the same said of another subject (`governance.wording.subjects`: "web-4 runs X" / "web-3 runs X",
which the rule-based judge does not read as a contradiction either: both facts stay). Between two Latin-script
texts the veto is `governance.order_model.order_veto`: a value difference always refuses; the wording and
order rules refuse between short texts (between 8 and 13 words a learned model may refuse besides), and
between longer ones a learned model over how the shared words moved (fitted on external
paraphrase-adversary pairs) decides, the rules' verdicts among its signals. The
duplicate model then separates paraphrases, abbreviations and translations from other statements of
the same subject; `dup_threshold` is the cosine floor below which it is not asked
(docs/dedup-calibration.md).
A text holding a redacted value (`[REDACTED]`) merges only with one of the same words around its
placeholders: the values cannot be compared, and the placeholders read as shared words.
Supersession only targets memories of the target scope: a project cannot deprecate org knowledge.
A judged contradiction (step 5) needs the same memory type: a skill whose steps quote a decision is not
a newer version of that decision's fact, and superseding it would hand the skill the fact's canonical key.
An episode is the record of one task's run, not a claim about the world: steps 4 and 5 never apply to it,
so a later task's episode can neither be merged into nor deprecate an earlier one (only a replay of the
same episode, identical content, is a duplicate).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache

from governance.dedup_model import DEDUP_MODEL, DedupModel, duplicate_probability
from governance.order_model import long_enough, order_veto
from governance.redaction.kinds import PLACEHOLDER
from governance.supersession import ContradictionJudge, RuleBasedJudge
from governance.wording.differences import material_difference, value_difference
from governance.wording.order import order_difference
from governance.wording.subjects import subject_difference

__all__ = [
    "Neighbour",
    "DecisionKind",
    "Decision",
    "RECORD_TYPES",
    "BUG_PATTERN",
    "normalise_text",
    "content_hash",
    "classify",
]

# memory types that record what happened rather than state what is true: never merged or superseded by
# similarity or judgment
RECORD_TYPES = frozenset({"episode"})
_HANGUL = re.compile(r"[\uac00-\ud7a3]")
# a bug pattern's canonical key is its error signature: a new occurrence merges, it never replaces
BUG_PATTERN = "bug_pattern"


def normalise_text(text: str) -> str:
    """Unicode NFKC, case-folded, whitespace collapsed: the form two copies of one fact share."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def content_hash(text: str) -> str:
    """sha256 (hex) of the normalised text."""
    return hashlib.sha256(normalise_text(text).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Neighbour:
    """An active published memory close to the candidate (by hash, canonical key or embedding)."""

    id: str
    scope_key: str
    canonical_key: str | None
    content_hash: str
    similarity: float
    title: str
    content: str
    memory_type: str | None = None


class DecisionKind(StrEnum):
    """What publishing a candidate does."""

    NEW = "new"
    DUPLICATE = "duplicate"
    SUPERSEDE = "supersede"


@dataclass(frozen=True)
class Decision:
    """The outcome of `classify`; `target_id` is the duplicate or the superseded head."""

    kind: DecisionKind
    target_id: str | None
    similarity: float | None
    reason: str
    related_ids: tuple[str, ...] = ()


def _keys_compatible(a: str | None, b: str | None) -> bool:
    # two different canonical keys are two different subjects, however similar the wording
    return a is None or b is None or a == b


# a pair's veto and swap are pure functions of its two texts, and a publication meets the same pairs again and
# again (each repeat of a fact meets the same close memories; publish decides again what plan decided): each
# pair is worked out once per process
_PAIRS_CACHED = 1 << 16


@lru_cache(maxsize=_PAIRS_CACHED)
def _refused(a: str, b: str) -> bool:
    """A veto on merging `a` and `b`: for two Latin-script texts, the same said of two subjects
    (`governance.wording.subjects`, a name swapped in the subject: the learned model reads a long
    sentence with its subject swapped as a rewording), then `governance.order_model.order_veto` (value
    differences, then the rules and the learned order model); with Korean on a side, the material and
    order differences of `governance.wording` (a Latin name swapped in a Korean subject is one; a Korean
    word swapped may be a synonym)."""
    if _redacted_apart(a, b):
        return True
    if _HANGUL.search(a) or _HANGUL.search(b):
        return material_difference(a, b) is not None or order_difference(a, b) is not None
    return subject_difference(a, b, names_only=True) is not None or order_veto(a, b) is not None


_WORDS = re.compile(r"\w+")


def _words_around_placeholders(text: str) -> list[str]:
    return _WORDS.findall(text.replace(PLACEHOLDER, " ").casefold())


def _redacted_apart(a: str, b: str) -> bool:
    """One of the texts holds a value the redactor removed: removed values cannot be compared, and the
    placeholders read to the embedder and the model as words both texts share ("db password is
    [REDACTED]" / "smtp password is [REDACTED]" at cosine 0.96). Such texts state one fact only in the
    same words around their placeholders; a rewording of a redacted statement stays its own memory."""
    if PLACEHOLDER not in a and PLACEHOLDER not in b:
        return False
    return _words_around_placeholders(a) != _words_around_placeholders(b)


@lru_cache(maxsize=_PAIRS_CACHED)
def _reworded_swap(a: str, b: str) -> bool:
    """Two long sentences of nearly the same words, with no other value, whose word order the learned
    model reads as another statement: the new one is not a revision of the old, so no judge supersedes it
    (a word moved reads to the rules as a substituted value)."""
    if _HANGUL.search(a) or _HANGUL.search(b) or not long_enough(a, b):
        return False
    return value_difference(a, b) is None and order_veto(a, b) is not None


def classify(
    *,
    content: str,
    content_hash: str,
    canonical_key: str | None,
    neighbours: Sequence[Neighbour],
    dup_threshold: float,
    related_threshold: float,
    judge: ContradictionJudge | None = None,
    scope_key: str | None = None,
    memory_type: str | None = None,
    dedup_model: DedupModel | None = None,
) -> Decision:
    """Decide NEW, DUPLICATE or SUPERSEDE for a candidate (see the module docstring for the order).

    `scope_key` is the candidate's target scope; when given, only memories of that scope can be
    superseded and exact duplicates there win over those in wider scopes. `judge` defaults to the
    rule-based judge. `memory_type` (the candidate's) keeps step 5 to neighbours of the same type.
    `dedup_model` defaults to the shipped `DEDUP_MODEL`.
    """
    model = dedup_model if dedup_model is not None else DEDUP_MODEL
    ordered = sorted(neighbours, key=lambda n: (-n.similarity, n.id))

    def in_scope(n: Neighbour) -> bool:
        return scope_key is None or n.scope_key == scope_key

    same_hash = [n for n in ordered if n.content_hash == content_hash]
    for n in same_hash:
        if in_scope(n):
            return Decision(DecisionKind.DUPLICATE, n.id, max(n.similarity, 1.0), "identical content")

    if canonical_key is not None and memory_type == BUG_PATTERN:
        for n in ordered:
            if n.canonical_key == canonical_key and in_scope(n):
                return Decision(DecisionKind.DUPLICATE, n.id, n.similarity, "same error signature")

    if canonical_key is not None:
        for n in ordered:
            if n.canonical_key == canonical_key and in_scope(n) and n.content_hash != content_hash:
                return Decision(
                    DecisionKind.SUPERSEDE,
                    n.id,
                    n.similarity,
                    f"new content for canonical key {canonical_key!r}",
                )

    if same_hash:
        n = same_hash[0]
        return Decision(
            DecisionKind.DUPLICATE, n.id, max(n.similarity, 1.0), "identical content (wider scope)"
        )

    if memory_type in RECORD_TYPES:
        related = tuple(n.id for n in ordered if n.similarity >= related_threshold)
        return Decision(
            DecisionKind.NEW, None, None, f"a new {memory_type}: records are never merged", related
        )

    for n in ordered:
        if n.similarity < dup_threshold:
            break
        if not _keys_compatible(canonical_key, n.canonical_key) or _refused(content, n.content):
            continue
        probability = duplicate_probability(content, n.content, n.similarity, model)
        if probability >= model.cut:
            return Decision(
                DecisionKind.DUPLICATE,
                n.id,
                n.similarity,
                f"similarity {n.similarity:.3f}, duplicate probability {probability:.2f}",
            )

    active_judge = judge if judge is not None else RuleBasedJudge()
    for n in ordered:
        if n.similarity < related_threshold:
            break
        if not in_scope(n) or not _keys_compatible(canonical_key, n.canonical_key):
            continue
        if memory_type is not None and n.memory_type is not None and n.memory_type != memory_type:
            continue
        if _reworded_swap(content, n.content):
            continue
        # the same said of another subject is another fact: no judge (rules or LLM) is asked to retire it
        if subject_difference(content, n.content) is not None:
            continue
        verdict = active_judge.judge(new=content, old=n.content, similarity=n.similarity)
        if verdict.contradicts:
            return Decision(DecisionKind.SUPERSEDE, n.id, n.similarity, verdict.reason)

    related = tuple(n.id for n in ordered if n.similarity >= related_threshold)
    return Decision(DecisionKind.NEW, None, None, "no duplicate or contradiction", related)
