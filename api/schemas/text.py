"""What text and JSON a request may carry: only what the database can store, refused as 422 otherwise.

Postgres `text` and `jsonb` hold valid Unicode only, and `jsonb` finite numbers only; Python's `json`
nevertheless accepts `NaN`, `Infinity`, `1e400` (read as infinity) and lone surrogate escapes such as
`"\\ud800"`. Left alone, these reach the encoder or the driver and end as a 500. `Text` (any free text) and
`JsonPayload` (an entry's payload) refuse them while the request is validated, naming where they are.
"""

from __future__ import annotations

import json
import math
import re
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, StringConstraints

from governance.staging import TASK_ID_PATTERN

# whitespace for a regex character class, spelt out: `\s` differs between engines (ECMAScript's, which JSON
# Schema uses, has U+FEFF and not U+001C-U+001F; Python's has U+001C-U+001F; pydantic's, Rust's Unicode
# White_Space, has U+0085 and neither of the others), so a schema-valid value could be refused (the fuzz test
# found "\x0c9" and "\x1c…" projects). Spelt out, every engine reads the same set: Python's `\s` with U+FEFF.
SPACE = "\t\n\x0b\x0c\r \x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"

__all__ = [
    "MAX_JSON_DEPTH",
    "NAME_PATTERN",
    "WORKTREE_PATTERN",
    "NO_NUL",
    "NOT_BLANK",
    "PATTERN_WORDS",
    "SPACE",
    "Text",
    "ScopeName",
    "JsonPayload",
    "lone_surrogate",
    "json_problem",
    "printable",
    "refuse_lone_surrogates",
    "refuse_unstorable_json",
]

# an org or project name: no `/` or `*` (they separate and match scope keys), no leading whitespace
NAME_PATTERN = f"^[^/*{SPACE}][^/*]*$"
# a worktree's name: a branch's (`feature/login` keeps its `/`), but no `*` (it matches scope keys), no
# control or bidirectional-override character (a name that prints as another), not starting with whitespace
_UNPRINTED = "\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069"
WORKTREE_PATTERN = f"^[^*{SPACE}{_UNPRINTED}][^*{_UNPRINTED}]*$"
# Postgres text holds no NUL character: refused with a 422, never a 500 from the driver
NO_NUL = r"^[^\x00]*$"
# ...and a name or path holds something besides white space
NOT_BLANK = f"^[^\\x00]*[^{SPACE}\\x00][^\\x00]*$"

# What a refused pattern asks for, in words: pydantic's own message quotes the regex, which for names spells
# out every whitespace character (unreadable, and a raw U+FEFF in a terminal looks like nothing at all).
PATTERN_WORDS = {
    NAME_PATTERN: "should be a name without `/` or `*` that does not start with whitespace",
    WORKTREE_PATTERN: (
        "should be a worktree or branch name without `*` or control characters that does not start with "
        "whitespace"
    ),
    TASK_ID_PATTERN: (
        "should be 1 to 128 letters, digits, `.`, `_`, `:` or `-`, starting with a letter or a digit"
    ),
    NO_NUL: "should not contain a NUL character (U+0000 cannot be stored)",
    NOT_BLANK: "should hold something besides white space, and no NUL character",
}

# Containers nested deeper than this are refused. Python's own parser stops near 1000 levels with a
# RecursionError, and no payload an agent means to write needs more than a few.
MAX_JSON_DEPTH = 100

_SURROGATE = re.compile("[\ud800-\udfff]")


def printable(text: str) -> str:
    """`text` with lone surrogates as backslash escapes (e.g. `\\udc80`), so it can be encoded."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def lone_surrogate(text: str) -> int | None:
    """Index of the first lone surrogate in `text` (a pair in a JSON escape arrives as one character)."""
    found = _SURROGATE.search(text)
    return found.start() if found else None


def _surrogate_message(text: str, index: int) -> str:
    return (
        f"contains a lone surrogate (\\u{ord(text[index]):04x} at index {index}), which is not valid "
        "Unicode and cannot be stored"
    )


def refuse_lone_surrogates(value: Any) -> Any:
    """Before str validation: refuse a string holding a lone surrogate (other input passes through)."""
    if isinstance(value, str) and not value.isascii():  # isascii reads a flag: free for ASCII text
        index = lone_surrogate(value)
        if index is not None:
            raise ValueError(_surrogate_message(value, index))
    return value


def _pointer(path: tuple[str | int, ...]) -> str:
    """An RFC 6901 JSON pointer to the place (`/a/0`), printable; a deep one is shortened in the middle."""
    parts = [str(p).replace("~", "~0").replace("/", "~1") for p in path]
    if len(parts) > 10:
        parts = [*parts[:6], f"...({len(parts) - 8} more)...", *parts[-2:]]
    return printable("".join(f"/{p}" for p in parts))


def _where(path: tuple[str | int, ...]) -> str:
    return f"at {_pointer(path)}" if path else "the value itself"


def json_problem(value: Any, *, max_depth: int = MAX_JSON_DEPTH) -> str | None:
    """Why `value` (parsed JSON) cannot be stored as `jsonb`, or None. Iterative: any depth is safe."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(value, ())]
    while stack:
        item, path = stack.pop()
        if item is None or isinstance(item, bool | int):
            continue
        if isinstance(item, float):
            if math.isnan(item):
                return f"{_where(path)}: NaN is not a number JSON or Postgres can hold"
            if math.isinf(item):
                sign = "" if item > 0 else "-"
                return (
                    f"{_where(path)}: {sign}Infinity (or a number beyond a double's range, such as "
                    f"{sign}1e400) is not a finite number; JSON and Postgres hold finite numbers only"
                )
            continue
        if isinstance(item, str):
            index = lone_surrogate(item)
            if index is not None:
                return f"{_where(path)}: the string {_surrogate_message(item, index)}"
            continue
        if isinstance(item, dict | list):
            if len(path) >= max_depth:
                return f"{_where(path)}: nested deeper than {max_depth} levels"
            if isinstance(item, dict):
                children: list[tuple[Any, tuple[str | int, ...]]] = []
                for key, child in item.items():
                    if not isinstance(key, str):
                        return f"{_where(path)}: key {key!r} is not a string"
                    index = lone_surrogate(key)
                    if index is not None:
                        return f"{_where((*path, key))}: the key {_surrogate_message(key, index)}"
                    children.append((child, (*path, key)))
            else:
                children = [(child, (*path, i)) for i, child in enumerate(item)]
            stack.extend(reversed(children))  # the first problem in document order is reported
            continue
        return f"{_where(path)}: {type(item).__name__} is not a JSON value"
    return None


_ENCODER = json.JSONEncoder(allow_nan=False, ensure_ascii=False)  # built once: dumps builds one per call


def _plainly_storable(value: Any) -> bool:
    """True when `value` surely is storable, judged by C code (the JSON encoder) instead of a walk in Python:
    it encodes with finite numbers only, holds no lone surrogate, and has fewer brackets than the depth
    limit allows levels. False means only "look closer" (`json_problem` says where, if anywhere)."""
    try:
        encoded = _ENCODER.encode(value)
    except (ValueError, TypeError, RecursionError):
        return False
    if not encoded.isascii() and _SURROGATE.search(encoded):
        return False
    return encoded.count("[") + encoded.count("{") <= MAX_JSON_DEPTH


def _flat_and_plain(value: dict[Any, Any]) -> bool:
    """An object of ASCII keys and plain scalars (ASCII text, integers, finite floats, booleans, null): the
    shape of most payloads, judged without encoding it."""
    for key, item in value.items():
        if type(key) is not str or not key.isascii():
            return False
        kind = type(item)
        if kind is str:
            if not item.isascii():
                return False
        elif kind is float:
            if not math.isfinite(item):
                return False
        elif item is not None and kind is not int and kind is not bool:
            return False
    return True


def refuse_unstorable_json(value: Any) -> Any:
    """After validation: refuse a JSON value `jsonb` cannot hold, saying where the problem is."""
    if value is None or isinstance(value, int) or (isinstance(value, str) and value.isascii()):
        return value
    if type(value) is dict and _flat_and_plain(value):
        return value
    if isinstance(value, dict | list) and _plainly_storable(value):
        return value
    problem = json_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


Text = Annotated[str, BeforeValidator(refuse_lone_surrogates)]
"""Free text that reaches the database: any valid Unicode (lengths stay each field's own)."""

ScopeName = Annotated[
    str,
    StringConstraints(min_length=1, max_length=200, pattern=NAME_PATTERN),
    BeforeValidator(refuse_lone_surrogates),
]
"""An org, project or worktree name: no `/` or `*`, not starting with whitespace. A type whose constraints
come before its validator (which still runs first), so even an optional one keeps its pattern in the
published schema: after the validator, pydantic leaves it out and the schema allows what the gateway
refuses."""

JsonPayload = Annotated[Any, AfterValidator(refuse_unstorable_json)]
"""Any JSON value `jsonb` can hold: finite numbers, valid Unicode, at most `MAX_JSON_DEPTH` levels deep."""
