"""Structured episodes as a pure rule: payloads win, text fills in, task types follow the documented words."""

from __future__ import annotations

import pytest

from governance.episodes import (
    EntryView,
    EpisodeStructure,
    TestRun,
    diff_line_counts,
    episode_structure,
    infer_task_type,
    parse_test_summary,
)

DIFF = (
    "diff --git a/src/app.py b/src/app.py\n"
    "--- a/src/app.py\n"
    "+++ b/src/app.py\n"
    "@@ -1,3 +1,4 @@ def main(\n"
    " keep\n"
    "-old line\n"
    "+new line\n"
    "+another\n"
    "--- a/README.md\n"
    "+++ b/README.md\n"
    "@@ -1 +1 @@\n"
    "-x\n"
    "+y\n"
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("============ 3 failed, 12 passed in 1.20s ============", TestRun("pytest", 15, 12, 3)),
        ("2 passed, 1 skipped, 1 error in 0.3s", TestRun("pytest", 4, 2, 1)),
        ("Tests:       1 failed, 4 passed, 5 total", TestRun("jest", 5, 4, 1)),
        ("ok  \tgithub.com/acme/a\t0.01s\nFAIL\tgithub.com/acme/b\t0.02s", TestRun("go test", 2, 1, 1)),
        (
            "--- FAIL: TestA (0.00s)\n--- PASS: TestB (0.00s)\n--- PASS: TestC (0.00s)\nFAIL",
            TestRun("go test", 3, 2, 1),
        ),
    ],
)
def test_parse_test_summary_reads_each_runners_summary(text: str, expected: TestRun) -> None:
    assert parse_test_summary(text) == expected


def test_parse_test_summary_takes_the_last_run_and_ignores_prose() -> None:
    text = "1 failed, 2 passed in 0.1s\nfixed it\n3 passed in 0.2s"
    assert parse_test_summary(text) == TestRun("pytest", 3, 3, 0)
    assert parse_test_summary("the tests passed in the end") is None


def test_diff_line_counts_counts_each_files_lines_but_not_headers() -> None:
    assert diff_line_counts(DIFF) == {"src/app.py": (2, 1), "README.md": (1, 1)}


@pytest.mark.parametrize(
    ("description", "expected"),
    [
        ("fix: crash on empty body", ("bugfix", "words")),
        ("feat(client): HTTP/2 support", ("feature", "words")),
        ("Refactor the transport layer", ("refactor", "words")),
        ("Update the README", ("docs", "words")),
        ("Add tests for redirects", ("test", "words")),
        ("Add a proxy setting", ("feature", "words")),
        ("Version 0.2", ("other", "default")),
    ],
)
def test_infer_task_type_by_words(description: str, expected: tuple[str, str]) -> None:
    assert infer_task_type(description) == expected


def test_infer_task_type_payload_wins_then_files_decide() -> None:
    assert infer_task_type("Fix the bug", said="refactor") == ("refactor", "payload")
    assert infer_task_type("Version 0.2", files=["docs/index.md", "README.rst"]) == ("docs", "files")
    assert infer_task_type("Version 0.2", files=["tests/test_a.py"]) == ("test", "files")


def test_episode_structure_payload_counts_win_over_text() -> None:
    entries = [
        EntryView(1, "tool_output", DIFF, {"tool": "Edit", "files": ["src/app.py"], "lines_added": 7}),
        EntryView(
            2, "tool_output", "done", {"tool": "Bash", "tokens": 10, "duration_ms": 5, "task_type": "test"}
        ),
        EntryView(3, "tool_output", "more", {"tokens": 5, "duration_ms": 7, "lines_added": -3}),
    ]
    structure = episode_structure("Fix crash", entries, success=False)
    app = next(f for f in structure.files if f.path == "src/app.py")
    assert (app.lines_added, app.lines_removed) == (7, 0)  # the payload's, not the diff's
    assert structure.tokens == 15 and structure.duration_ms == 12
    assert structure.task_type == "test" and structure.outcome == "failure"
    assert structure.lines_added == 7  # a negative count is no count


def test_episode_structure_pivots_errors_and_decided_hypotheses() -> None:
    entries = [
        EntryView(1, "approach", "pin the version", {"outcome": "failed"}),
        EntryView(2, "approach", "vendor the module"),
        EntryView(3, "error", "TypeError: bad operand", None),
        EntryView(4, "error", "TypeError: bad operand again", None),
        EntryView(5, "thought", "x", {"pivot": {"from": "vendor", "to": "upstream fix", "why": "licence"}}),
        EntryView(
            6, "decision", "Hypothesis confirmed: the cache is stale\nmore", {"source": "working_memory"}
        ),
    ]
    structure = episode_structure("Something", entries, success=True, tracked_files=["./src/x.py"])
    assert [(p.from_, p.to, p.why, p.seq) for p in structure.pivots] == [
        ("pin the version", "vendor the module", "failed", 2),
        ("vendor", "upstream fix", "licence", 5),
    ]
    assert structure.error_types == (("TypeError", 2),)
    assert structure.decided_hypotheses == ("Hypothesis confirmed: the cache is stale",)
    assert [(f.path, f.tracked, f.touches) for f in structure.files] == [("src/x.py", True, 0)]


def test_episode_structure_duration_from_timestamps_and_json_round_trip() -> None:
    entries = [
        EntryView(1, "log", "start", None, created_at_ms=1_000.0),
        EntryView(2, "result", "end", None, created_at_ms=4_500.0),
    ]
    structure = episode_structure("Docs: typo", entries, success=True)
    assert structure.duration_ms == 3500 and structure.tokens is None
    assert EpisodeStructure.from_json(structure.to_json()) == structure


def test_episode_structure_from_json_refuses_unknown_types() -> None:
    raw = episode_structure("x", [], success=True).to_json()
    with pytest.raises(ValueError, match="task_type"):
        EpisodeStructure.from_json({**raw, "task_type": "chore"})
