"""Code patterns read from a unified diff (pure rules): what kind of change a patch makes, in which languages.

A patch becomes **proposals**, never memory: the gateway stages each as a `rule` entry of a task
(api/services/patch_patterns.py), and the promotion turns it into a `code_rule` candidate like any other
rule, so approval, trust and the EMA of observations apply (docs/patch-patterns.md).

The diff is parsed with `unidiff` (git extended headers, renames, new and deleted files, `\\ No newline`);
text without one file header and one hunk is not a diff (`InvalidInput`).

**Taxonomy** (`CATEGORIES`; docs/patch-patterns.md says what each detects): extract-method,
guard-clause, error-handling, rename, null-check, add-test, type-annotation, dependency-bump, logging,
resource-cleanup. Each is read from the lines a patch adds and removes, per file.

A line that appears both added and removed (moved or re-indented) counts for nothing. A **proposal** is one
category with the languages its files are in (by extension, `LANGUAGES`; a manifest's ecosystem), the
files, and an **example**: at most `EXAMPLE_LINES` lines of evidence, each shortened, redacted
(governance/redaction). Its canonical key `pattern.<category>.<languages>` and its content (the category's
rule, stated for those languages) are the same for every patch showing the pattern, so a later promotion of
the same pattern merges into the published rule (its confidence goes on from where observations left it)
instead of superseding it.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from unidiff.errors import UnidiffParseError
from unidiff.patch import PatchSet

from governance.errors import InvalidInput
from governance.redaction import redact

__all__ = [
    "CATEGORIES",
    "Category",
    "LANGUAGES",
    "EXAMPLE_LINES",
    "FileChange",
    "Proposal",
    "parse_diff",
    "language_of",
    "detect",
    "propose",
    "proposals_of",
    "pattern_key",
]

EXAMPLE_LINES = 8
_LINE_CHARS = 160


@dataclass(frozen=True)
class Category:
    """One kind of change: its name (the taxonomy's), a title and the rule it states."""

    name: str
    title: str
    rule: str


CATEGORIES: dict[str, Category] = {
    c.name: c
    for c in (
        Category(
            "extract-method",
            "Extract method",
            "Move a block that does one thing into a named function and call it, instead of growing the "
            "caller.",
        ),
        Category(
            "guard-clause",
            "Guard clause",
            "Check the failing or trivial condition first and leave early (return, raise, continue) "
            "instead of nesting the main path.",
        ),
        Category(
            "error-handling",
            "Error handling",
            "Catch the specific errors an operation can raise and raise or map them to the project's own "
            "exceptions, with a message that says what failed.",
        ),
        Category(
            "rename",
            "Rename",
            "Rename an identifier or file everywhere it is used when its name no longer says what it holds.",
        ),
        Category(
            "null-check",
            "Null check",
            "Compare with None/null explicitly before using a value that may be absent.",
        ),
        Category(
            "add-test",
            "Add test",
            "Add a test that exercises the changed behaviour alongside the change.",
        ),
        Category(
            "type-annotation",
            "Type annotation",
            "Annotate function signatures and variables with their types, so the type checker sees the "
            "change.",
        ),
        Category(
            "dependency-bump",
            "Dependency bump",
            "Move one dependency to a new version in its manifest, in a change of its own.",
        ),
        Category(
            "logging",
            "Logging",
            "Log what the code does at the point it happens, through the module's logger rather than print.",
        ),
        Category(
            "resource-cleanup",
            "Resource cleanup",
            "Release what is opened (files, connections, clients) on every path: a context manager, "
            "finally, defer or an explicit close.",
        ),
    )
}

LANGUAGES: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".jsx": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".ts": "typescript",
    ".tsx": "typescript",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".kt": "kotlin",
    ".rb": "ruby",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".hpp": "cpp",
    ".cs": "csharp",
    ".php": "php",
    ".swift": "swift",
    ".scala": "scala",
    ".sh": "shell",
}
# manifests name their ecosystem's language
_MANIFESTS: dict[str, str] = {
    "pyproject.toml": "python",
    "setup.py": "python",
    "setup.cfg": "python",
    "pipfile": "python",
    "package.json": "javascript",
    "go.mod": "go",
    "cargo.toml": "rust",
    "gemfile": "ruby",
    "pom.xml": "java",
    "build.gradle": "java",
}


def language_of(path: str) -> str | None:
    """The language of a file by its extension, or of a manifest by its ecosystem; None when unknown."""
    name = PurePosixPath(path).name.lower()
    if name in _MANIFESTS:
        return _MANIFESTS[name]
    if re.fullmatch(r"requirements[\w.-]*\.(txt|in)", name):
        return "python"
    return LANGUAGES.get(PurePosixPath(name).suffix)


def _is_manifest(path: str) -> bool:
    name = PurePosixPath(path).name.lower()
    return (
        name in _MANIFESTS
        or bool(re.fullmatch(r"requirements[\w.-]*\.(txt|in)", name))
        or ("/.github/workflows/" in f"/{path}" and name.endswith((".yml", ".yaml")))
    )


@dataclass(frozen=True)
class FileChange:
    """One file of a diff: its path (the target's, or the source's when deleted), language, and its hunks as
    sequences of (`+`, `-` or ` `, text without the newline)."""

    path: str
    language: str | None
    hunks: tuple[tuple[tuple[str, str], ...], ...]
    source_path: str | None = None  # the old path of a rename
    added_file: bool = False

    @property
    def added(self) -> list[str]:
        return [text for hunk in self.hunks for kind, text in hunk if kind == "+"]

    @property
    def removed(self) -> list[str]:
        return [text for hunk in self.hunks for kind, text in hunk if kind == "-"]


def _strip_prefix(path: str) -> str:
    return path[2:] if path.startswith(("a/", "b/")) else path


def parse_diff(text: str) -> list[FileChange]:
    """The files of a unified diff; `InvalidInput` when the text is not one (no file header with a hunk, or
    a malformed hunk)."""
    try:
        patch = PatchSet(text)
    except UnidiffParseError as exc:
        raise InvalidInput(f"not a unified diff: {exc}") from None
    files: list[FileChange] = []
    for f in patch:
        target = _strip_prefix(f.target_file) if f.target_file != "/dev/null" else None
        source = _strip_prefix(f.source_file) if f.source_file != "/dev/null" else None
        path = target or source or f.path
        hunks = tuple(
            tuple((line.line_type, line.value.rstrip("\r\n")) for line in hunk if line.line_type in "+- ")
            for hunk in f
        )
        renamed = source is not None and target is not None and source != target
        if not hunks and not renamed:
            continue
        files.append(
            FileChange(
                path=path,
                language=language_of(path),
                hunks=hunks,
                source_path=source if renamed else None,
                added_file=bool(f.is_added_file),
            )
        )
    if not files:
        raise InvalidInput(
            "not a unified diff: no file header (`--- a/…`, `+++ b/…`) followed by a hunk (`@@ -l,n +l,n @@`)"
        )
    return files


@dataclass
class _Evidence:
    files: list[str] = field(default_factory=list)
    languages: set[str] = field(default_factory=set)
    lines: list[str] = field(default_factory=list)

    def add(self, change: FileChange, lines: Iterable[str]) -> None:
        if change.path not in self.files:
            self.files.append(change.path)
        if change.language is not None:
            self.languages.add(change.language)
        for line in lines:
            if len(self.lines) < EXAMPLE_LINES and line not in self.lines:
                self.lines.append(line)


def _norm(line: str) -> str:
    return " ".join(line.split())


def _new_lines(change: FileChange) -> list[str]:
    """Added lines whose code was not also removed (a move, a re-indentation or a changed comment is no new
    code)."""
    removed = Counter(_norm(_code(line)) for line in change.removed)
    out: list[str] = []
    for line in change.added:
        key = _norm(_code(line))
        if removed[key] > 0:
            removed[key] -= 1
            continue
        out.append(line)
    return out


def _code(line: str) -> str:
    """A line without its comment and string contents (so a word in a string or comment is no code)."""
    line = re.sub(r"(\"\"\"|''')", "", line)
    line = re.sub(r"\"(?:\\.|[^\"\\])*\"|'(?:\\.|[^'\\])*'|`[^`]*`", '""', line)
    return re.split(r"\s#|^#|\s//|^\s*//", line, maxsplit=1)[0]


_ERROR = re.compile(
    r"^\s*(try\s*:|try\s*\{|except\b|finally\s*:|raise\b|throw\b|.*\}\s*catch\b|catch\s*\(|"
    r"if\s+err\s*!=\s*nil|class\s+\w*(Error|Exception)\b|.*\.map_err\(|.*\?;\s*$|"
    r".*\bpanic!?\()"
)
_NULL = re.compile(
    r"\bis\s+(not\s+)?None\b|[!=]=\s*None\b|[!=]==?\s*(null|undefined)\b|\b(null|undefined)\s*[!=]==?|"
    r"[!=]=\s*nil\b|\?\.|\?\?|\.is_none\(\)|\.is_some\(\)|Objects\.(isNull|nonNull|requireNonNull)"
)
_COND = re.compile(r"^\s*(if|elif|else\s+if|unless|while|assert|return|guard)\b|\?.*:|\band\b|\bor\b|&&|\|\|")
_GUARD_IF = re.compile(r"^(\s*)(if|elif|unless|guard)\b.*[:{]?\s*$")
_EXIT = re.compile(r"^\s*(return\b|raise\b|throw\b|continue\b|break\b|panic\()")
_ONE_LINE_GUARD = re.compile(
    r"^\s*if\s*\(.*\)\s*(return|throw|continue|break)\b|^\s*if\s+.*:\s*(return|raise|continue|break)\b"
)
_DEF = re.compile(
    r"^\s*(?:async\s+)?(?:def|function|func|fn)\s+(?:\([^)]*\)\s*)?([A-Za-z_]\w*)\s*[(<]|"
    r"^\s*(?:public|private|protected|static|\s)+[\w<>\[\]]+\s+([A-Za-z_]\w*)\s*\("
)
_LOG = re.compile(
    r"\b(logger|log|_log|LOG|LOGGER|logging|slog)\.(debug|info|warn|warning|error|exception|critical|"
    r"fatal|trace|log|Printf|Println|Print|Debug|Info|Warn|Error)\s*\(|\blogging\.getLogger\(|"
    r"\bconsole\.(log|warn|error|info|debug)\(|\bgetLogger\(|\blog::(debug|info|warn|error)!"
)
_CLEANUP = re.compile(
    r"^\s*(async\s+)?with\s+.+:\s*$|\.a?close\(\)|^\s*finally\s*[:{]|^\s*defer\b|^\s*using\s*\(|"
    r"^\s*try\s*\(|def\s+__a?exit__|@(contextlib\.)?(async)?contextmanager|\.dispose\(\)|\bExitStack\("
)
_TEST_FN = re.compile(
    r"^\s*(async\s+)?def\s+test_?\w*\(|^\s*func\s+Test\w*\(|^\s*(it|test|describe)\s*\(|@Test\b|"
    r"^\s*#\[test\]|^\s*class\s+Test\w*"
)
_TYPING = re.compile(
    r"^\s*from\s+typing(_extensions)?\s+import\b|^\s*import\s+typing\b|\bTYPE_CHECKING\b|\btyping\.cast\(|"
    r"\bcast\(|#\s*type:\s*(?!ignore)\S|\bTypeVar\(|\bProtocol\b|\bTypedDict\b"
)
_ANNOTATED_PARAM = re.compile(r"[(,]\s*\*{0,2}\w+\s*:\s*[\w\"'\[]")
_VAR_ANNOTATION = re.compile(r"^\s*(self\.)?\w+\s*:\s*[\w\"'\[][\w.\[\], |\"']*(=|$)")
_IDENT = re.compile(r"[A-Za-z_]\w*")
_KEYWORDS = frozenset(
    "def class return if else elif for while in is not and or None True False import from as with async "
    "await try except finally raise pass self cls lambda yield function const let var new this null "
    "undefined public private static void int str bool float".split()
)
_VERSIONED = re.compile(
    r"^\s*\"?(?P<name>@?[A-Za-z0-9_.\-/]+?)\"?\s*(?:\[[^\]]*\])?\s*(?:==|>=|~=|<=|~>|=|:|\s|@v?)\s*"
    r"\"?[\^~>=<v ]*(?P<version>\d+(?:\.[\w*]+)*)"
)
_USES = re.compile(r"^\s*-?\s*uses:\s*(?P<name>[\w.\-/]+)@(?P<version>[\w.\-]+)")


def _is_test_file(path: str) -> bool:
    p = f"/{path.lower()}"
    name = PurePosixPath(p).name
    return (
        "/tests/" in p
        or "/test/" in p
        or "/__tests__/" in p
        or name.startswith("test_")
        or bool(re.search(r"(_test\.(py|go|rb)|\.(test|spec)\.[jt]sx?|Test\.java|_spec\.rb)$", name, re.I))
    )


def _def_name(line: str) -> str | None:
    match = _DEF.match(line)
    if match is None:
        return None
    name = match.group(1) or match.group(2)
    return name if name not in _KEYWORDS else None


def _annotations(line: str) -> int:
    """How many annotations a line carries: a return type, annotated parameters, a variable's type."""
    if _def_name(line) is not None:
        params = line[line.find("(") :]
        return len(_ANNOTATED_PARAM.findall(params.replace("self", "").replace("cls", ""))) + ("->" in line)
    return 1 if _VAR_ANNOTATION.match(line) and not re.match(r"^\s*(else|try|finally|elif|if)\b", line) else 0


def _detect_type_annotation(change: FileChange, new: list[str]) -> list[str]:
    if change.language not in ("python", "typescript"):
        return []
    found = [line for line in new if _TYPING.search(line)]
    removed_defs = {_def_name(line): line for line in change.removed if _def_name(line)}
    for line in change.added:
        name = _def_name(line)
        if (
            name is not None
            and name in removed_defs
            and _annotations(line) > _annotations(removed_defs[name])
        ):
            found.append(line)
    removed_vars = {
        m.group(1): line
        for line in change.removed
        if (m := re.match(r"^\s*((?:self\.)?\w+)\s*[:=]", line)) is not None
    }
    for line in new:
        m = re.match(r"^\s*((?:self\.)?\w+)\s*:", line)
        if m and m.group(1) in removed_vars and _annotations(line) > _annotations(removed_vars[m.group(1)]):
            found.append(line)
    return found


def _detect_guard(change: FileChange) -> list[str]:
    found: list[str] = []
    for hunk in change.hunks:
        in_new_def = False
        for index, (kind, text) in enumerate(hunk):
            if kind != "+":
                in_new_def = False
                continue
            if _def_name(text) is not None:
                in_new_def = True  # a new function's checks are its code, not a guard added to a caller
                continue
            if in_new_def:
                continue
            if _ONE_LINE_GUARD.match(_code(text)):
                found.append(text)
                continue
            guard = _GUARD_IF.match(_code(text))
            if guard is None or index + 1 >= len(hunk):
                continue
            kind2, text2 = hunk[index + 1]
            indent = len(guard.group(1))
            if kind2 == "+" and _EXIT.match(text2) and len(text2) - len(text2.lstrip()) > indent:
                found.extend([text, text2])
    return found


def _in_code(name: str, line: str) -> bool:
    """Whether `name` stands in `line` as code (defined, imported, called, indexed, assigned, dotted), not
    as a word of prose (a docstring's typo fixed is no rename)."""
    n = re.escape(name)
    return bool(
        re.search(
            rf"\b(def|class|import|as|function|func|let|const|var)\s+{n}\b|\b{n}\s*[.(\[,:=)\]]|[.(\[,=]\s*{n}\b",
            _code(line),
        )
    )


def _detect_rename(change: FileChange) -> list[str]:
    if change.source_path is not None:
        return [f"rename {change.source_path} -> {change.path}"]
    mappings: Counter[tuple[str, str]] = Counter()
    evidence: dict[tuple[str, str], list[str]] = {}
    definitions: set[tuple[str, str]] = set()
    for hunk in change.hunks:
        index = 0
        while index < len(hunk):
            if hunk[index][0] != "-":
                index += 1
                continue
            minus = []
            while index < len(hunk) and hunk[index][0] == "-":
                minus.append(hunk[index][1])
                index += 1
            plus = []
            while index < len(hunk) and hunk[index][0] == "+":
                plus.append(hunk[index][1])
                index += 1
            if len(minus) != len(plus):
                continue
            for old, new in zip(minus, plus, strict=True):
                a, b = _IDENT.findall(_code(old)), _IDENT.findall(_code(new))
                if len(a) != len(b) or re.sub(r"\w+", "x", _code(old)) != re.sub(r"\w+", "x", _code(new)):
                    continue
                changed = {(x, y) for x, y in zip(a, b, strict=True) if x != y}
                if len(changed) != 1:
                    continue
                pair = next(iter(changed))
                if pair[0] in _KEYWORDS or pair[1] in _KEYWORDS or pair[0].lower() == pair[1].lower():
                    continue
                if pair[0].isdigit() or not re.search(r"[A-Za-z]", pair[1]) or not _in_code(pair[0], old):
                    continue
                mappings[pair] += 1
                evidence.setdefault(pair, []).extend([f"-{old.strip()}", f"+{new.strip()}"])
                if _def_name(old) == pair[0] or re.match(rf"^\s*class\s+{re.escape(pair[0])}\b", old):
                    definitions.add(pair)
    return [
        line
        for pair, count in mappings.items()
        if count >= 2 or pair in definitions
        for line in evidence[pair]
    ]


def _detect_extract(change: FileChange, new: list[str]) -> list[str]:
    removed_names = {_def_name(line) for line in change.removed}
    defs = [(name, line) for line in new if (name := _def_name(line)) and name not in removed_names]
    moved = {_norm(line) for line in change.removed if len(_norm(line)) > 8} & {
        _norm(line) for line in change.added if _def_name(line) is None
    }
    if len(moved) < 2:
        return []
    found: list[str] = []
    for name, line in defs:
        call = re.compile(rf"(?<![\w.])(self\.|this\.|cls\.)?{re.escape(name)}\s*\(")
        calls = [c for c in change.added if c is not line and _def_name(c) is None and call.search(_code(c))]
        if calls:
            found.extend([line, calls[0]])
    return found


def _detect_dependency(change: FileChange) -> list[str]:
    if not _is_manifest(change.path):
        return []

    def versions(lines: Sequence[str]) -> dict[str, tuple[str, str]]:
        out: dict[str, tuple[str, str]] = {}
        for line in lines:
            match = _USES.match(line) or _VERSIONED.match(line)
            if match is not None and not line.lstrip().startswith(("#", "//")):
                out[match.group("name").lower().strip('"')] = (match.group("version"), line.strip())
        return out

    before, after = versions(change.removed), versions(change.added)
    found: list[str] = []
    for name, (version, line) in after.items():
        if name in before and before[name][0] != version:
            found.extend([f"-{before[name][1]}", f"+{line}"])
    return found


def _detect_file(change: FileChange) -> dict[str, list[str]]:
    new = _new_lines(change)
    code = [(line, _code(line)) for line in new]
    found: dict[str, list[str]] = {
        "error-handling": [line for line, c in code if _ERROR.match(c)],
        "null-check": [line for line, c in code if _NULL.search(c) and _COND.search(c)],
        "logging": [line for line, c in code if _LOG.search(c)],
        "resource-cleanup": [line for line, c in code if _CLEANUP.search(c)],
        "type-annotation": _detect_type_annotation(change, new),
        "guard-clause": _detect_guard(change),
        "rename": _detect_rename(change),
        "extract-method": _detect_extract(change, new),
        "dependency-bump": _detect_dependency(change),
        "add-test": [line for line, c in code if _TEST_FN.match(c)] if _is_test_file(change.path) else [],
    }
    if _is_manifest(change.path):
        # a manifest's lines are configuration, not code: only its versions count
        return {"dependency-bump": found["dependency-bump"]}
    return {category: lines for category, lines in found.items() if lines}


def detect(files: Sequence[FileChange]) -> dict[str, _Evidence]:
    """The categories a diff shows, each with its files, languages and evidence lines (taxonomy order)."""
    seen: dict[str, _Evidence] = {}
    for change in files:
        for category, lines in _detect_file(change).items():
            seen.setdefault(category, _Evidence()).add(change, lines)
    return {c: seen[c] for c in CATEGORIES if c in seen}


@dataclass(frozen=True)
class Proposal:
    """A code pattern a patch shows: a rule candidate to stage, never a published memory."""

    category: str
    languages: tuple[str, ...]
    title: str
    rule: str
    canonical_key: str
    example: str
    files: tuple[str, ...]


def pattern_key(category: str, languages: Sequence[str]) -> str:
    """`pattern.<category>.<language>[-<language>…]`, or `.any` when no file's language is known."""
    return f"pattern.{category}.{'-'.join(sorted(languages)) or 'any'}"


def _example(evidence: _Evidence) -> str:
    lines = []
    for line in evidence.lines[:EXAMPLE_LINES]:
        text = line.rstrip()
        lines.append(text if len(text) <= _LINE_CHARS else text[: _LINE_CHARS - 1] + "…")
    return redact("\n".join(lines)).text


def propose(diff: str) -> list[Proposal]:
    """The proposals of a unified diff (`InvalidInput` when it is not one), in taxonomy order."""
    return proposals_of(parse_diff(diff))


def proposals_of(files: Sequence[FileChange]) -> list[Proposal]:
    """The proposals of a diff's files (`parse_diff`), in taxonomy order."""
    proposals: list[Proposal] = []
    for category, evidence in detect(files).items():
        spec = CATEGORIES[category]
        languages = tuple(sorted(evidence.languages))
        named = ", ".join(languages) if languages else "any language"
        proposals.append(
            Proposal(
                category=category,
                languages=languages,
                title=f"{spec.title} ({named})",
                rule=f"{spec.title} ({named}): {spec.rule}",
                canonical_key=pattern_key(category, languages),
                example=_example(evidence),
                files=tuple(evidence.files),
            )
        )
    return proposals
