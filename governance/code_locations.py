"""Which files and symbols a staging entry is about: from its payload, else from its text.

A pure rule: no database, no I/O. Agents (and `loregate hook`) say it in the payload, which wins:

| payload field | meaning |
|---|---|
| `files` | a list of paths (or one path) the entry touched, read or is about |
| `file`, `path` | one path |
| `symbols` | a list of names (functions, classes, methods: `Client.send`) |
| `symbol` | one name |

Where no payload says, the text is read for what coding work leaves in it: unified diff headers
(`diff --git a/x b/x`, `+++ b/x`), hunk headers naming a function (`@@ -1,4 +1,5 @@ def send(`), Python
stack frames (`File "x.py", line 3, in send`), JavaScript stack frames (`at send (src/x.ts:3:9)`), Go
frames (`x.go:12 +0x1d`), `file:line` marks (`httpx/_client.py:120`) and bare paths with a source or
config extension. Paths are kept as written, minus a diff's `a/` / `b/` and a leading `./`; two paths name
the same file when one is the other or ends with `/` + the other (`path_matches`), so an absolute path in a
stack trace meets the repository-relative path an agent tracked.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "MAX_LOCATIONS",
    "MAX_PATH_CHARS",
    "CodeLocations",
    "normalise_path",
    "path_matches",
    "text_key",
    "locations_from_payload",
    "locations_from_text",
    "locations_of_entry",
]

# an entry names at most this many files and as many symbols (a huge diff's list is cut, first seen kept)
MAX_LOCATIONS = 50
MAX_PATH_CHARS = 400
MAX_SYMBOL_CHARS = 200

_EXTENSIONS = (
    "py|pyi|pyx|js|jsx|mjs|cjs|ts|tsx|go|rs|java|kt|kts|scala|rb|php|cs|c|h|cc|cpp|cxx|hpp|hh|m|mm|swift|"
    "sh|bash|zsh|ps1|sql|proto|graphql|vue|svelte|css|scss|less|html|htm|md|rst|txt|toml|yaml|yml|json|"
    "ini|cfg|conf|lock|gradle|tf|lua|dart|ex|exs|erl|hs|ml|clj|r|jl|pl|ipynb"
)
_PATH = rf"(?:[A-Za-z]:)?[\w.@~+-]*(?:/[\w.@~+-]+)*\.(?:{_EXTENSIONS})"
_PATH_RE = re.compile(rf"(?<![\w/.@~+:-])({_PATH})(?![\w/-])")
_FILE_LINE_RE = re.compile(rf"(?<![\w/.@~+-])({_PATH}):(\d+)")
_DIFF_GIT_RE = re.compile(r"^diff --git a/(\S+) b/(\S+)", re.MULTILINE)
_DIFF_FILE_RE = re.compile(r"^(?:\+\+\+|---) (?:[ab]/)?(\S+)", re.MULTILINE)
_HUNK_RE = re.compile(r"^@@ [^@]* @@\s*(.*)$", re.MULTILINE)
_PY_FRAME_RE = re.compile(r'File "([^"]+)", line (\d+)(?:, in ([\w<>.]+))?')
_JS_FRAME_RE = re.compile(r"\bat (?:async )?([\w$.<>]+) \(([^()\s]+?):(\d+)(?::\d+)?\)")
_DEF_RE = re.compile(r"\b(?:async\s+def|def|class|func|function|fn)\s+(?:\([^)]*\)\s*)?([A-Za-z_$][\w$]*)")
_TICKED_RE = re.compile(r"`([A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)*)\(\)`")


@dataclass(frozen=True)
class CodeLocations:
    """Files and symbols, each once, in the order first named."""

    files: tuple[str, ...] = ()
    symbols: tuple[str, ...] = ()
    # `file:line` marks seen, as (file, line): where in the file, for readers
    lines: tuple[tuple[str, int], ...] = field(default=())

    def merged(self, other: CodeLocations) -> CodeLocations:
        """Both, this one's first, bounded by MAX_LOCATIONS."""
        return CodeLocations(
            files=_unique([*self.files, *other.files])[:MAX_LOCATIONS],
            symbols=_unique([*self.symbols, *other.symbols])[:MAX_LOCATIONS],
            lines=tuple(dict.fromkeys([*self.lines, *other.lines]))[:MAX_LOCATIONS],
        )


def _unique(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(v for v in values if v))


def normalise_path(path: str) -> str:
    """A path as stored: trimmed, forward slashes, no diff `a/` `b/` prefix, no leading `./`.

    Returns "" for what is no path (empty, `/dev/null`, over MAX_PATH_CHARS, a NUL inside).
    """
    cleaned = path.strip().strip("'\"`,;()[]").replace("\\", "/")
    if cleaned.startswith(("a/", "b/")) and "/" in cleaned[2:]:
        cleaned = cleaned[2:]
    while cleaned.startswith("./"):
        cleaned = cleaned[2:]
    if not cleaned or cleaned == "/dev/null" or len(cleaned) > MAX_PATH_CHARS or "\x00" in cleaned:
        return ""
    return cleaned


def path_matches(stored: str, asked: str) -> bool:
    """Whether two paths name the same file: equal, or one ends with `/` + the other."""
    a, b = normalise_path(stored), normalise_path(asked)
    if not a or not b:
        return False
    return a == b or a.endswith("/" + b.lstrip("/")) or b.endswith("/" + a.lstrip("/"))


def text_key(path: str) -> str:
    """What to look for in a text that may name `path`: its last two components (`httpx/_client.py` for
    `/home/dev/httpx/_client.py`), or the name alone for a file at the root; a text names paths relative to
    some root nobody knows, and a bare name (`__init__.py`) would match every package."""
    parts = [p for p in normalise_path(path).split("/") if p]
    return "/".join(parts[-2:])


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple):
        return [v for v in value if isinstance(v, str)]
    return []


def _symbol(name: str) -> str:
    cleaned = name.strip().strip("`'\"()")
    return cleaned if 0 < len(cleaned) <= MAX_SYMBOL_CHARS and "\x00" not in cleaned else ""


def locations_from_payload(payload: Mapping[str, Any] | None) -> CodeLocations:
    """What the payload's `files`, `file`, `path`, `symbols` and `symbol` fields say (module docstring)."""
    if not isinstance(payload, Mapping):
        return CodeLocations()
    files = [normalise_path(p) for key in ("files", "file", "path") for p in _strings(payload.get(key))]
    symbols = [_symbol(s) for key in ("symbols", "symbol") for s in _strings(payload.get(key))]
    return CodeLocations(files=_unique(files)[:MAX_LOCATIONS], symbols=_unique(symbols)[:MAX_LOCATIONS])


def locations_from_text(text: str) -> CodeLocations:
    """Files and symbols named in `text`: diffs, stack frames, `file:line` marks, paths (module docstring)."""
    files: list[str] = []
    symbols: list[str] = []
    lines: list[tuple[str, int]] = []
    for match in _DIFF_GIT_RE.finditer(text):
        files += [match.group(1), match.group(2)]
    files += [m.group(1) for m in _DIFF_FILE_RE.finditer(text)]
    for match in _HUNK_RE.finditer(text):
        symbols += [m.group(1) for m in _DEF_RE.finditer(match.group(1))]
    for match in _PY_FRAME_RE.finditer(text):
        files.append(match.group(1))
        lines.append((match.group(1), int(match.group(2))))
        if match.group(3) and not match.group(3).startswith("<"):
            symbols.append(match.group(3))
    for match in _JS_FRAME_RE.finditer(text):
        files.append(match.group(2))
        lines.append((match.group(2), int(match.group(3))))
        if not match.group(1).startswith("<"):
            symbols.append(match.group(1))
    for match in _FILE_LINE_RE.finditer(text):
        files.append(match.group(1))
        lines.append((match.group(1), int(match.group(2))))
    files += [m.group(1) for m in _PATH_RE.finditer(text) if "/" in m.group(1) or "." in m.group(1)[:-1]]
    symbols += [m.group(1) for m in _TICKED_RE.finditer(text)]
    normalised = [normalise_path(f) for f in files]
    return CodeLocations(
        files=_unique(f for f in normalised if f and not _is_noise(f))[:MAX_LOCATIONS],
        symbols=_unique(_symbol(s) for s in symbols)[:MAX_LOCATIONS],
        lines=tuple(dict.fromkeys((normalise_path(f), n) for f, n in lines if normalise_path(f)))[
            :MAX_LOCATIONS
        ],
    )


def _is_noise(path: str) -> bool:
    """Version numbers and host names that look like `x.y` files (`1.2.txt` stays; `e.g` never matched)."""
    head = path.rsplit("/", 1)[-1]
    stem = head.rsplit(".", 1)[0]
    return stem == "" or stem.replace(".", "").isdigit()


def locations_of_entry(content: str, payload: Mapping[str, Any] | None) -> CodeLocations:
    """An entry's files and symbols: the payload's first, then what its text names (module docstring)."""
    said = locations_from_payload(payload)
    found = locations_from_text(content)
    if isinstance(payload, Mapping):
        for key in ("command", "stack", "diff", "patch"):
            for extra in _strings(payload.get(key)):
                found = found.merged(locations_from_text(extra))
    return said.merged(found)
