"""Structured episodes: what a task's (redacted) staging says about the coding work, field by field.

A pure rule: no database, no I/O. The published episode keeps its prose (search reads it); this adds the
fields a reader asks by — task type, outcome, files with line changes, symbols, tools, error types, tests,
pivots, tokens and duration — stored beside it (migration 0026: `episode_details` and its link tables).

**Entry payload schema** (every field optional; a payload wins over what the text suggests):

| field | type | meaning |
|---|---|---|
| `files` / `file` / `path` | list of paths / a path | files the entry touched (code_locations.py) |
| `symbols` / `symbol` | list of names / a name | functions, classes, methods (`Client.send`) |
| `tool` | string | the tool the entry records a call of (`Edit`, `Bash`, `pytest`) |
| `tests` | `{run, passed, failed, framework}` | a test run's counts (non-negative integers) and runner |
| `pivot` | `{from, to, why}` | the approach changed: from what, to what, and why |
| `lines_added`, `lines_removed` | integers ≥ 0 | lines the entry changed (on its file when it names one) |
| `tokens` | integer ≥ 0 | model tokens the step used (summed over the task) |
| `duration_ms` | integer ≥ 0 | time the step took (summed over the task) |
| `task_type` | bugfix, feature, refactor, test, docs | the kind of task (the last one said wins) |

**Where no payload says**, the text is read: paths, `file:line` marks, stack frames and unified diffs
(governance/code_locations.py; a diff's `+`/`-` lines are counted per file), an error's type from its
signature (governance/bug_signature.py), test runners' summary lines — pytest (`3 failed, 12 passed in
1.2s`), jest (`Tests: 1 failed, 4 passed, 5 total`), go test (`--- PASS:` / `--- FAIL:` lines, else `ok  pkg
0.01s` / `FAIL pkg` per package) — and a failed `approach` followed by another approach is a pivot (why: its
payload `reason`, else "failed"). The tests recorded are the **last run** the task reported (its final
state); `runs` counts every run seen. Duration, where no payload gives one, is the time between the task's
first and last entry. Tools are counted from payload `tool` (a `tool_output` entry without one counts as
`tool_output`).

**Task type**: payload `task_type` wins; else the task's description, then its decisions and results, by
words: a conventional-commit prefix (`fix:`, `feat:`, `refactor:`, `test:`, `docs:`) first, then
bugfix (fix, bug, regression, crash, broken, error, failure, hotfix) > docs (docs, documentation, readme,
docstring, changelog, typo) > test (test, tests, coverage, flaky) > refactor (refactor, rename, cleanup,
simplify, extract, move, reorganise) > feature (add, implement, support, introduce, new, allow, enable);
else the files: only documentation files → docs, only test files → test; else `other`.

**Working memory** feeds it: files and symbols the agent tracked join the touched ones, and decision
entries a firm hypothesis became (payload `source: working_memory`) are listed as decided hypotheses.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from governance.bug_signature import error_signature
from governance.code_locations import (
    MAX_LOCATIONS,
    locations_from_payload,
    locations_of_entry,
    normalise_path,
)

__all__ = [
    "TASK_TYPES",
    "OUTCOMES",
    "MAX_PIVOTS",
    "MAX_TEXT_CHARS",
    "FileChange",
    "TestRun",
    "Pivot",
    "EpisodeStructure",
    "EntryView",
    "parse_test_summary",
    "diff_line_counts",
    "infer_task_type",
    "episode_structure",
]

TASK_TYPES = ("bugfix", "feature", "refactor", "test", "docs", "other")
OUTCOMES = ("success", "failure")
MAX_PIVOTS = 20
MAX_TEXT_CHARS = 300  # a pivot's from / to / why, a decided hypothesis
MAX_NAME_CHARS = 120  # a tool's or an error type's name

_PYTEST_COUNT = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed|deselected)\b")
_PYTEST_LINE = re.compile(
    r"^[=\s]*((?:\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?),?\s*)+)"
    r"in [\d.]+s",
    re.MULTILINE,
)
_JEST_LINE = re.compile(r"^\s*Tests:\s+(.*\d+ total)", re.MULTILINE)
_JEST_COUNT = re.compile(r"(\d+) (passed|failed|skipped|todo|total)\b")
_GO_TEST = re.compile(r"^\s*--- (PASS|FAIL): \S+", re.MULTILINE)
_GO_PKG = re.compile(r"^(ok|FAIL)\s+\S+\s+(?:[\d.]+s|\(cached\)|\[)", re.MULTILINE)
_DIFF_HEADER = re.compile(r"^diff --git a/(\S+) b/(\S+)")
_DIFF_NEW = re.compile(r"^\+\+\+ (?:b/)?(\S+)")

_PREFIX = re.compile(
    r"^\s*(fix|bugfix|hotfix|feat|feature|refactor|perf|test|tests|docs?)(\([^)]*\))?!?:", re.I
)
_PREFIX_TYPE = {
    "fix": "bugfix",
    "bugfix": "bugfix",
    "hotfix": "bugfix",
    "feat": "feature",
    "feature": "feature",
    "refactor": "refactor",
    "perf": "refactor",
    "test": "test",
    "tests": "test",
    "doc": "docs",
    "docs": "docs",
}
_WORDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "bugfix",
        re.compile(
            r"\b(fix(es|ed|ing)?|bugs?|regressions?|crash(es|ed)?|broken|errors?|failures?|hotfix)\b", re.I
        ),
    ),
    ("docs", re.compile(r"\b(docs?|documentation|readme|docstrings?|changelog|typos?)\b", re.I)),
    ("test", re.compile(r"\b(tests?|testing|coverage|flaky)\b", re.I)),
    (
        "refactor",
        re.compile(r"\b(refactor\w*|renam\w*|clean ?up|simplif\w*|extract\w*|reorgani[sz]\w*|tidy)\b", re.I),
    ),
    (
        "feature",
        re.compile(r"\b(add(s|ed|ing)?|implement\w*|support\w*|introduc\w*|new|allow\w*|enabl\w*)\b", re.I),
    ),
)
_DOC_FILE = re.compile(r"(\.(md|rst|txt|adoc)$)|(^|/)docs?/", re.I)
_TEST_FILE = re.compile(
    r"(^|/)(tests?|__tests__|spec)/|(^|/)test_[^/]*$|_test\.\w+$|\.(test|spec)\.\w+$", re.I
)


@dataclass(frozen=True)
class FileChange:
    """A file the task touched: how often, and the lines it changed there (0 where nothing said)."""

    path: str
    touches: int = 1
    lines_added: int = 0
    lines_removed: int = 0
    tracked: bool = False


@dataclass(frozen=True)
class TestRun:
    """A test run's counts and runner (`pytest`, `jest`, `go test`, or what a payload named)."""

    __test__ = False  # not a pytest class

    framework: str | None
    run: int
    passed: int
    failed: int


@dataclass(frozen=True)
class Pivot:
    """Where the approach changed: from what, to what, why; `seq` of the entry that said so."""

    from_: str
    to: str
    why: str
    seq: int


@dataclass(frozen=True)
class EpisodeStructure:
    """The structured fields of one episode (module docstring)."""

    task_type: str
    task_type_source: str  # payload | words | files | default
    outcome: str
    files: tuple[FileChange, ...] = ()
    symbols: tuple[str, ...] = ()
    tools: tuple[tuple[str, int], ...] = ()
    error_types: tuple[tuple[str, int], ...] = ()
    tests: TestRun | None = None
    test_runs: int = 0
    pivots: tuple[Pivot, ...] = ()
    lines_added: int = 0
    lines_removed: int = 0
    tokens: int | None = None
    duration_ms: int | None = None
    decided_hypotheses: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """A JSON-able form (a candidate's `structure` column, the export line)."""
        return {
            "task_type": self.task_type,
            "task_type_source": self.task_type_source,
            "outcome": self.outcome,
            "files": [
                {
                    "path": f.path,
                    "touches": f.touches,
                    "lines_added": f.lines_added,
                    "lines_removed": f.lines_removed,
                    "tracked": f.tracked,
                }
                for f in self.files
            ],
            "symbols": list(self.symbols),
            "tools": [{"tool": t, "calls": n} for t, n in self.tools],
            "error_types": [{"error_type": t, "count": n} for t, n in self.error_types],
            "tests": None
            if self.tests is None
            else {
                "framework": self.tests.framework,
                "run": self.tests.run,
                "passed": self.tests.passed,
                "failed": self.tests.failed,
            },
            "test_runs": self.test_runs,
            "pivots": [{"from": p.from_, "to": p.to, "why": p.why, "seq": p.seq} for p in self.pivots],
            "lines_added": self.lines_added,
            "lines_removed": self.lines_removed,
            "tokens": self.tokens,
            "duration_ms": self.duration_ms,
            "decided_hypotheses": list(self.decided_hypotheses),
        }

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> EpisodeStructure:
        """The inverse of `to_json`; ValueError for a task type or outcome it does not know."""
        if raw.get("task_type") not in TASK_TYPES or raw.get("outcome") not in OUTCOMES:
            raise ValueError(f"task_type must be one of {TASK_TYPES}, outcome one of {OUTCOMES}")
        tests = raw.get("tests")
        return cls(
            task_type=str(raw["task_type"]),
            task_type_source=str(raw.get("task_type_source") or "default"),
            outcome=str(raw["outcome"]),
            files=tuple(
                FileChange(
                    str(f["path"]),
                    int(f.get("touches", 1)),
                    int(f.get("lines_added", 0)),
                    int(f.get("lines_removed", 0)),
                    bool(f.get("tracked", False)),
                )
                for f in raw.get("files") or []
            ),
            symbols=tuple(str(s) for s in raw.get("symbols") or []),
            tools=tuple((str(t["tool"]), int(t["calls"])) for t in raw.get("tools") or []),
            error_types=tuple((str(e["error_type"]), int(e["count"])) for e in raw.get("error_types") or []),
            tests=None
            if not tests
            else TestRun(
                tests.get("framework"), int(tests["run"]), int(tests["passed"]), int(tests["failed"])
            ),
            test_runs=int(raw.get("test_runs") or 0),
            pivots=tuple(
                Pivot(str(p["from"]), str(p["to"]), str(p["why"]), int(p["seq"]))
                for p in raw.get("pivots") or []
            ),
            lines_added=int(raw.get("lines_added") or 0),
            lines_removed=int(raw.get("lines_removed") or 0),
            tokens=None if raw.get("tokens") is None else int(raw["tokens"]),
            duration_ms=None if raw.get("duration_ms") is None else int(raw["duration_ms"]),
            decided_hypotheses=tuple(str(h) for h in raw.get("decided_hypotheses") or []),
        )


@dataclass(frozen=True)
class EntryView:
    """What the structure reads of a staging entry (content already redacted)."""

    seq: int
    kind: str
    content: str
    payload: Mapping[str, Any] | None = None
    created_at_ms: float | None = None  # epoch milliseconds, for the task's duration


def _count(value: Any) -> int | None:
    """A non-negative integer, or None (booleans, floats with a fraction, negatives and text are no count)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, float) and value.is_integer() and value >= 0:
        return int(value)
    return None


def _short(value: Any, limit: int = MAX_TEXT_CHARS) -> str:
    text = " ".join(str(value).split()) if value is not None else ""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def parse_test_summary(text: str) -> TestRun | None:
    """The last test run a runner's summary in `text` reports: pytest, jest or go test (module docstring)."""
    found: list[tuple[int, TestRun]] = []
    for match in _PYTEST_LINE.finditer(text):
        counts = Counter[str]()
        for n, word in _PYTEST_COUNT.findall(match.group(1)):
            counts["error" if word.startswith("error") else word] += int(n)
        failed = counts["failed"] + counts["error"]
        passed = counts["passed"] + counts["xfailed"] + counts["xpassed"]
        found.append((match.start(), TestRun("pytest", passed + failed + counts["skipped"], passed, failed)))
    for match in _JEST_LINE.finditer(text):
        counts = Counter({word: int(n) for n, word in _JEST_COUNT.findall(match.group(1))})
        found.append((match.start(), TestRun("jest", counts["total"], counts["passed"], counts["failed"])))
    go_tests = _GO_TEST.findall(text)
    go_packages = _GO_PKG.findall(text)
    if go_tests or go_packages:
        outcomes = go_tests if go_tests else go_packages
        ok = sum(1 for o in outcomes if o in ("PASS", "ok"))
        bad = len(outcomes) - ok
        last = max(m.start() for m in [*_GO_TEST.finditer(text), *_GO_PKG.finditer(text)])
        found.append((last, TestRun("go test", ok + bad, ok, bad)))
    return max(found, key=lambda f: f[0])[1] if found else None


def _tests_from_payload(raw: Any) -> TestRun | None:
    if not isinstance(raw, Mapping):
        return None
    passed, failed, run = _count(raw.get("passed")), _count(raw.get("failed")), _count(raw.get("run"))
    if passed is None and failed is None and run is None:
        return None
    passed, failed = passed or 0, failed or 0
    framework = raw.get("framework")
    return TestRun(
        _short(framework, MAX_NAME_CHARS) if isinstance(framework, str) and framework.strip() else None,
        max(run or 0, passed + failed),
        passed,
        failed,
    )


def diff_line_counts(text: str) -> dict[str, tuple[int, int]]:
    """Lines added and removed per file of the unified diffs in `text` (`+++`/`---` headers not counted)."""
    counts: dict[str, list[int]] = {}
    current: str | None = None
    in_hunk = False
    for line in text.splitlines():
        if header := _DIFF_HEADER.match(line):
            current, in_hunk = normalise_path(header.group(2)) or None, False
            continue
        if line.startswith("+++ "):
            new = _DIFF_NEW.match(line)
            if new and normalise_path(new.group(1)):
                current = normalise_path(new.group(1))
            in_hunk = False
            continue
        if line.startswith("--- "):
            in_hunk = False
            continue
        if line.startswith("@@"):
            in_hunk = True
            continue
        if not in_hunk or current is None:
            continue
        if line.startswith("+"):
            counts.setdefault(current, [0, 0])[0] += 1
        elif line.startswith("-"):
            counts.setdefault(current, [0, 0])[1] += 1
    return {path: (added, removed) for path, (added, removed) in counts.items()}


def _type_by_words(text: str) -> str | None:
    if prefix := _PREFIX.match(text):
        return _PREFIX_TYPE[prefix.group(1).lower()]
    for task_type, pattern in _WORDS:
        if pattern.search(text):
            return task_type
    return None


def infer_task_type(
    description: str, texts: Sequence[str] = (), files: Sequence[str] = (), said: str | None = None
) -> tuple[str, str]:
    """(task type, where it came from): payload, words (description, then `texts`), files, or default."""
    if said in TASK_TYPES:
        return str(said), "payload"
    for text in (description, *texts):
        if found := _type_by_words(text):
            return found, "words"
    if files and all(_DOC_FILE.search(f) for f in files):
        return "docs", "files"
    if files and all(_TEST_FILE.search(f) for f in files):
        return "test", "files"
    return "other", "default"


def _pivots(entries: Sequence[EntryView]) -> list[Pivot]:
    pivots: list[Pivot] = []
    failed: EntryView | None = None
    for entry in entries:
        payload = entry.payload or {}
        said = payload.get("pivot")
        if isinstance(said, Mapping) and (said.get("from") or said.get("to")):
            pivots.append(
                Pivot(_short(said.get("from")), _short(said.get("to")), _short(said.get("why")), entry.seq)
            )
            continue
        if entry.kind != "approach":
            continue
        if failed is not None:
            reason = (failed.payload or {}).get("reason")
            why = _short(reason) if isinstance(reason, str) and reason.strip() else "failed"
            pivots.append(
                Pivot(_short(_first_line(failed.content)), _short(_first_line(entry.content)), why, entry.seq)
            )
        failed = entry if payload.get("outcome") == "failed" else None
    return pivots[:MAX_PIVOTS]


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def _ranked(counter: Counter[str]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_LOCATIONS])


def episode_structure(
    description: str,
    entries: Sequence[EntryView],
    *,
    success: bool,
    tracked_files: Iterable[str] = (),
    tracked_symbols: Iterable[str] = (),
) -> EpisodeStructure:
    """The structured fields of a task's episode from its entries (in sequence order; module docstring)."""
    touches: Counter[str] = Counter()
    lines: dict[str, list[int]] = {}
    symbols: dict[str, None] = {}
    tools: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    tests: TestRun | None = None
    test_runs = 0
    tokens: int | None = None
    duration: int | None = None
    said_type: str | None = None
    decided: list[str] = []
    texts: list[str] = []
    for entry in entries:
        payload: Mapping[str, Any] = entry.payload if isinstance(entry.payload, Mapping) else {}
        located = locations_of_entry(entry.content, payload)
        for path in located.files:
            touches[path] += 1
        symbols.update(dict.fromkeys(located.symbols))
        # line changes: the payload's (on its one file, else on the task), then the diffs in the text
        added, removed = _count(payload.get("lines_added")), _count(payload.get("lines_removed"))
        if added is not None or removed is not None:
            # on the one file the payload names (else the text's one file), else on the task as a whole
            said = locations_from_payload(payload).files
            named = said if said else located.files
            target = named[0] if len(named) == 1 else ""
            row = lines.setdefault(target, [0, 0])
            row[0] += added or 0
            row[1] += removed or 0
        else:
            for text in (
                entry.content,
                *(v for k in ("diff", "patch") if isinstance(v := payload.get(k), str)),
            ):
                for path, (a, r) in diff_line_counts(text).items():
                    row = lines.setdefault(path, [0, 0])
                    row[0] += a
                    row[1] += r
                    touches[path] += 0  # a diff's file is touched (counted once above when named)
        tool = payload.get("tool")
        if isinstance(tool, str) and tool.strip():
            tools[_short(tool, MAX_NAME_CHARS)] += 1
        elif entry.kind == "tool_output":
            tools["tool_output"] += 1
        if entry.kind == "error":
            stack = payload.get("stack")
            errors[
                _short(
                    error_signature(entry.content, stack if isinstance(stack, str) else None).error_type,
                    MAX_NAME_CHARS,
                )
            ] += 1
        run = _tests_from_payload(payload.get("tests")) or parse_test_summary(entry.content)
        if run is not None:
            tests, test_runs = run, test_runs + 1
        if (n := _count(payload.get("tokens"))) is not None:
            tokens = (tokens or 0) + n
        if (n := _count(payload.get("duration_ms"))) is not None:
            duration = (duration or 0) + n
        if isinstance(payload.get("task_type"), str) and payload["task_type"] in TASK_TYPES:
            said_type = payload["task_type"]
        if entry.kind == "decision" and payload.get("source") == "working_memory":
            decided.append(_short(_first_line(entry.content)))
        if entry.kind in ("decision", "result"):
            texts.append(entry.content)
    if duration is None:
        stamps = [e.created_at_ms for e in entries if e.created_at_ms is not None]
        duration = int(max(stamps) - min(stamps)) if len(stamps) >= 2 else None
    tracked = [p for p in (normalise_path(f) for f in tracked_files) if p]
    for path in tracked:
        touches[path] += 0
    order = list(dict.fromkeys([*touches, *(p for p in lines if p)]))[:MAX_LOCATIONS]
    files = tuple(
        FileChange(
            path,
            touches=touches.get(path, 0),
            lines_added=lines.get(path, [0, 0])[0],
            lines_removed=lines.get(path, [0, 0])[1],
            tracked=path in tracked,
        )
        for path in order
    )
    symbols.update(dict.fromkeys(s for s in tracked_symbols if s))
    task_type, source = infer_task_type(description, texts, [f.path for f in files], said_type)
    return EpisodeStructure(
        task_type=task_type,
        task_type_source=source,
        outcome="success" if success else "failure",
        files=files,
        symbols=tuple(symbols)[:MAX_LOCATIONS],
        tools=_ranked(tools),
        error_types=_ranked(errors),
        tests=tests,
        test_runs=test_runs,
        pivots=tuple(_pivots(entries)),
        lines_added=sum(a for a, _ in lines.values()),
        lines_removed=sum(r for _, r in lines.values()),
        tokens=tokens,
        duration_ms=duration,
        decided_hypotheses=tuple(dict.fromkeys(decided))[:MAX_PIVOTS],
    )
