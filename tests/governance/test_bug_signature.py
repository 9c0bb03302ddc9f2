"""Error signatures: variants of one error share a signature, different errors do not; fix statistics."""

from __future__ import annotations

from typing import Any

import pytest

from governance.bug_signature import (
    FAILED_MARKER,
    FIX_MARKER,
    add_attempt,
    error_headline,
    error_signature,
    failed_fixes,
    ranked_solutions,
    split_bug_pattern,
)
from governance.cognify import StagedEntry, rule_based_analysis
from governance.dedup import DecisionKind, Neighbour, classify

# (variant a, variant b): the same error met twice, with different numbers, paths, ids and names
SAME_ERROR = [
    pytest.param(
        'Traceback (most recent call last):\n  File "/app/src/main.py", line 42, in <module>\n'
        "    run()\nKeyError: 'user_42'",
        'Traceback (most recent call last):\n  File "/home/bob/repo/main.py", line 7, in run\n'
        "    load()\nKeyError: 'order_9'",
        id="python-traceback",
    ),
    pytest.param(
        "TypeError: Cannot read properties of undefined (reading 'map')\n"
        "    at Object.<anonymous> (/app/src/index.js:10:15)",
        "TypeError: Cannot read properties of undefined (reading 'items')\n"
        "    at render (/srv/web/dist/app.js:2291:7)",
        id="node",
    ),
    pytest.param(
        "panic: runtime error: index out of range [5] with length 3\n\ngoroutine 1 [running]:\n"
        "main.main()\n\t/tmp/x.go:8 +0x1d",
        "panic: runtime error: index out of range [12] with length 12\n\ngoroutine 7 [running]:\n",
        id="go-panic",
    ),
    pytest.param(
        'Exception in thread "main" java.lang.NullPointerException: Cannot invoke "String.length()"'
        ' because "<local1>" is null\n\tat Main.main(Main.java:5)',
        'Exception in thread "worker-3" java.lang.NullPointerException: Cannot invoke "List.size()"'
        ' because "items" is null\n\tat com.acme.Cart.total(Cart.java:88)',
        id="java",
    ),
    pytest.param(
        'ERROR:  duplicate key value violates unique constraint "users_pkey"\n'
        "DETAIL:  Key (id)=(17) already exists.",
        'ERROR:  duplicate key value violates unique constraint "orders_pkey"',
        id="psql",
    ),
    pytest.param(
        '오류:  중복된 키 값이 "users_pkey" 고유 제약 조건을 위반함',
        '오류:  중복된 키 값이 "tasks_pkey" 고유 제약 조건을 위반함',
        id="psql-korean",
    ),
    pytest.param(
        "open /etc/app/config-7.yaml: no such file or directory",
        "open ./conf/prod.yaml: no such file or directory",
        id="go-error-path",
    ),
    pytest.param(
        "ConnectionError: HTTPSConnectionPool(host='api.example.com', port=443): Max retries exceeded with "
        "url: /v1/items/abc123 (Caused by NewConnectionError('<object at 0x7f3a2c1b4d90>'))",
        "ConnectionError: HTTPSConnectionPool(host='10.0.0.7', port=8443): Max retries exceeded with "
        "url: /v2/orders/77 (Caused by NewConnectionError('<object at 0x55d0a1>'))",
        id="requests",
    ),
    pytest.param(
        "asyncpg.exceptions.UniqueViolationError: id 5d2f0c1e-8b7a-4c3d-9e1f-0a1b2c3d4e5f exists",
        "asyncpg.exceptions.UniqueViolationError: id 0a1b2c3d-0000-4c3d-9e1f-ffffffffffff exists",
        id="uuid",
    ),
    pytest.param(
        r"ValueError: invalid literal for int() with base 10: '12a' at C:\Users\bob\app.py",
        r"ValueError: invalid literal for int() with base 10: 'x' at D:\work\tool\cli.py",
        id="windows-path",
    ),
    pytest.param(
        "fatal: unable to access 'https://github.com/acme/repo.git/': Could not resolve host",
        "fatal: unable to access 'https://gitlab.example/x/y.git/': Could not resolve host",
        id="git-no-type",
    ),
    pytest.param(
        "error[E0382]: borrow of moved value: `x`",
        "error[E0382]: borrow of moved value: `config`",
        id="rust",
    ),
    pytest.param(
        'psycopg.errors.UndefinedTable: relation "public.orders_2024" does not exist\nLINE 1: SELECT ...',
        'psycopg.errors.UndefinedTable: relation "audit_9" does not exist',
        id="psycopg",
    ),
    pytest.param(
        "commit 9f8e7d6c5b4a failed: lock held by pid 4242",
        "commit 0123abcd9876 failed: lock held by pid 17",
        id="hex-and-pid",
    ),
]

DIFFERENT_ERRORS = [
    pytest.param("KeyError: 'a'", "ValueError: 'a'", id="type"),
    pytest.param(
        "error[E0382]: borrow of moved value: `x`", "error[E0499]: borrow of moved value: `x`", id="rust"
    ),
    pytest.param(
        'ERROR:  relation "users" does not exist', 'ERROR:  column "users" does not exist', id="psql"
    ),
    pytest.param("TypeError: x is not a function", "TypeError: x is not iterable", id="node"),
]


@pytest.mark.parametrize(("a", "b"), SAME_ERROR)
def test_error_signature_variants_of_one_error_are_equal(a: str, b: str) -> None:
    assert error_signature(a) == error_signature(b)
    assert error_signature(a).key == error_signature(b).key


@pytest.mark.parametrize(("a", "b"), DIFFERENT_ERRORS)
def test_error_signature_different_errors_differ(a: str, b: str) -> None:
    assert error_signature(a).key != error_signature(b).key


def test_error_signature_python_takes_the_last_exception_line() -> None:
    sig = error_signature(
        'Traceback (most recent call last):\n  File "a.py", line 1\nValueError: bad\n\n'
        "During handling of the above exception, another exception occurred:\n\n"
        "Traceback (most recent call last):\nRuntimeError: worse 3"
    )
    assert sig.error_type == "RuntimeError"
    assert sig.message == "worse <n>"


def test_error_signature_types_and_masks() -> None:
    assert error_signature("TypeError: Cannot read 'x'").error_type == "TypeError"
    assert error_signature("panic: boom").error_type == "panic"
    assert error_signature('Exception in thread "main" java.lang.IllegalStateException: x').error_type == (
        "java.lang.IllegalStateException"
    )
    assert error_signature("no space left on device").error_type == "error"
    assert error_signature("ValueError: at /a/b/c.py line 9 id 0xdeadbeef").message == (
        "at <path> line <n> id <hex>"
    )


def test_error_signature_stack_is_read_when_the_message_has_no_headline() -> None:
    sig = error_signature("the build failed", "Traceback (most recent call last):\nImportError: no x")
    assert sig.error_type == "ImportError"


def test_error_signature_key_is_a_canonical_key() -> None:
    key = error_signature("KeyError: 'x'").key
    assert key.startswith("bug.") and len(key) == 20


def test_split_bug_pattern_error_and_fix() -> None:
    assert split_bug_pattern(f"KeyError: 'x'{FIX_MARKER}use .get()") == ("KeyError: 'x'", "use .get()")
    assert split_bug_pattern("KeyError: 'x'") == ("KeyError: 'x'", None)


def test_add_attempt_counts_the_same_fix_once_and_ranks_by_success_rate() -> None:
    raw = add_attempt([], "Pin numpy", succeeded=True)
    raw = add_attempt(raw, "pin  NUMPY", succeeded=False)
    raw = add_attempt(raw, "Upgrade pandas", succeeded=True)
    assert raw[0] == {"solution": "Pin numpy", "successes": 1, "attempts": 2}
    best = ranked_solutions(raw)
    assert [s.solution for s in best] == ["Upgrade pandas", "Pin numpy"]
    assert best[0].success_rate == 1.0 and best[1].success_rate == 0.5


def _entry(n: int, kind: str, content: str) -> StagedEntry:
    return StagedEntry(id=n, seq=n, kind=kind, content=content)


def test_cognify_bug_pattern_is_keyed_by_its_signature() -> None:
    analysis = rule_based_analysis(
        "t",
        [_entry(1, "error", "KeyError: 'user_42' in /a/b.py"), _entry(2, "result", "use dict.get")],
        success=True,
    )
    (bug,) = [c for c in analysis.candidates if c.memory_type == "bug_pattern"]
    assert bug.canonical_key == error_signature("KeyError: 'order_1' in /c/d.py").key


def test_classify_bug_pattern_same_signature_merges_not_supersedes() -> None:
    key = error_signature("KeyError: 'a'").key
    old = Neighbour("m1", "s", key, "h1", 0.4, "t", "KeyError: 'a'\nResolved by: x", "bug_pattern")
    decision = classify(
        content="KeyError: 'b'\nResolved by: y",
        content_hash="h2",
        canonical_key=key,
        neighbours=[old],
        dup_threshold=0.9,
        related_threshold=0.5,
        scope_key="s",
        memory_type="bug_pattern",
    )
    assert decision.kind is DecisionKind.DUPLICATE and decision.target_id == "m1"


def test_cognify_fix_after_which_the_error_came_back_is_tried_without_success() -> None:
    entries = [
        _entry(1, "error", "KeyError: 'user_1'"),
        _entry(2, "decision", "Retry the load"),
        _entry(3, "error", "KeyError: 'user_2'"),
        _entry(4, "result", "Use dict.get"),
        _entry(5, "error", "ValueError: bad 7"),
    ]
    analysis = rule_based_analysis("t", entries, success=True)
    (bug,) = [c for c in analysis.candidates if c.memory_type == "bug_pattern"]
    assert bug.content == f"KeyError: 'user_1'{FAILED_MARKER}Retry the load{FIX_MARKER}Use dict.get"
    assert bug.source_entry_ids == [1, 2, 3, 4]
    assert split_bug_pattern(bug.content) == ("KeyError: 'user_1'", "Use dict.get")
    assert failed_fixes(bug.content) == ["Retry the load"]


def test_cognify_repeated_error_before_any_fix_is_not_a_failed_fix() -> None:
    entries = [
        _entry(1, "error", "KeyError: 'a'"),
        _entry(2, "error", "KeyError: 'b'"),
        _entry(3, "result", "Use dict.get"),
    ]
    (bug,) = [c for c in rule_based_analysis("t", entries, success=True).candidates]
    assert failed_fixes(bug.content) == [] and bug.content.endswith(f"{FIX_MARKER}Use dict.get")


TRACEBACK = (
    'Traceback (most recent call last):\n  File "/app/db.py", line 3\nImportError: no module named psycopg2'
)


def test_error_headline_names_a_traceback_by_its_exception_line() -> None:
    traceback = TRACEBACK
    assert error_headline(traceback) == "ImportError: no module named psycopg2"
    assert error_headline("  \nsegfault in worker 3\n") == "segfault in worker 3"


def _bug(entries: list[StagedEntry]) -> Any:
    candidates = rule_based_analysis("t", entries, success=True).candidates
    (bug,) = [c for c in candidates if c.memory_type == "bug_pattern"]
    return bug


def test_cognify_bug_pattern_is_titled_by_its_error_not_the_traceback_header() -> None:
    traceback = TRACEBACK
    entries = [_entry(1, "error", traceback), _entry(2, "result", "installed psycopg[binary]")]
    bug = _bug(entries)
    assert bug.title == "ImportError: no module named psycopg2"
    named = StagedEntry(id=1, seq=1, kind="error", content=traceback, payload={"title": "psycopg2 missing"})
    assert _bug([named, entries[1]]).title == "psycopg2 missing"
