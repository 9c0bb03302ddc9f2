"""A word-level diff between what is published and what would replace it, for the people who approve.

An approver reads a supersede or a duplicate as the published text with the words it loses struck out and
the words the new text brings marked: `word_diff(old, new)` gives the operations, `word_diff_text` the same
as one line in git's `--word-diff=plain` form (`[-removed-]{+added+}`).

Built on the standard library's `difflib.SequenceMatcher` over tokens (runs of word characters, runs of
whitespace and single punctuation marks), so whitespace and punctuation stay where they were and a changed
word is one replacement, not a character soup. Junk heuristics are off (`autojunk=False`): in a long text a
frequent word such as "the" would otherwise be ignored and the diff would wander.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher
from enum import StrEnum

__all__ = ["DiffOp", "DiffKind", "tokens", "word_diff", "word_diff_text", "MAX_DIFF_TOKENS"]

# A diff of two texts this long (in tokens, each) is still quick (SequenceMatcher is quadratic at worst);
# longer texts are compared as their first MAX_DIFF_TOKENS tokens and the rest as one replaced run.
MAX_DIFF_TOKENS = 4000

_TOKEN = re.compile(r"\w+|\s+|[^\w\s]", re.UNICODE)


class DiffKind(StrEnum):
    """What a run of words does: stays, goes (only in the published text), or comes (only in the new)."""

    EQUAL = "equal"
    DELETE = "delete"
    INSERT = "insert"


@dataclass(frozen=True)
class DiffOp:
    """One run of the diff: its kind and its text (whitespace included, as written)."""

    op: DiffKind
    text: str


def tokens(text: str) -> list[str]:
    """`text` as words, whitespace runs and punctuation marks; joined again they are `text`."""
    return _TOKEN.findall(text)


def _append(ops: list[DiffOp], kind: DiffKind, text: str) -> None:
    if not text:
        return
    if ops and ops[-1].op is kind:
        ops[-1] = DiffOp(kind, ops[-1].text + text)
    else:
        ops.append(DiffOp(kind, text))


def word_diff(old: str, new: str) -> list[DiffOp]:
    """The runs that turn `old` into `new`, in reading order; a replacement is its delete, then its insert.

    Joining the `equal` and `delete` runs gives `old`; joining the `equal` and `insert` runs gives `new`.
    """
    a, b = tokens(old), tokens(new)
    tail_a, tail_b = "".join(a[MAX_DIFF_TOKENS:]), "".join(b[MAX_DIFF_TOKENS:])
    a, b = a[:MAX_DIFF_TOKENS], b[:MAX_DIFF_TOKENS]
    runs = [
        (tag == "equal", "".join(a[i1:i2]), "".join(b[j1:j2]))
        for tag, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    ]
    # a lone space between two changes joins them: "[-the async API-]{+its own pool+}" reads as one
    # replacement, where "[-the-]{+its+} [-async-]{+own+} [-API-]{+pool+}" reads as a word soup
    merged: list[tuple[bool, str, str]] = []
    for n, (same, old_text, new_text) in enumerate(runs):
        between = 0 < n < len(runs) - 1 and not runs[n - 1][0] and not runs[n + 1][0]
        if same and between and old_text.isspace() and "\n" not in old_text:
            same = False
        if merged and not same and not merged[-1][0]:
            _, prev_old, prev_new = merged.pop()
            old_text, new_text = prev_old + old_text, prev_new + new_text
        merged.append((same, old_text, new_text))
    ops: list[DiffOp] = []
    for same, old_text, new_text in merged:
        if same:
            _append(ops, DiffKind.EQUAL, old_text)
        else:
            _append(ops, DiffKind.DELETE, old_text)
            _append(ops, DiffKind.INSERT, new_text)
    if tail_a == tail_b:
        _append(ops, DiffKind.EQUAL, tail_a)
    else:
        _append(ops, DiffKind.DELETE, tail_a)
        _append(ops, DiffKind.INSERT, tail_b)
    return ops


def word_diff_text(ops: list[DiffOp]) -> str:
    """The diff as one text: `[-removed-]` and `{+added+}` around what changed (git `--word-diff=plain`)."""
    marks = {DiffKind.EQUAL: "{}", DiffKind.DELETE: "[-{}-]", DiffKind.INSERT: "{{+{}+}}"}
    return "".join(marks[o.op].format(o.text) for o in ops)
