"""Which files and symbols an entry is about: payload first, then diffs, stack frames, `file:line`, paths."""

from __future__ import annotations

from governance.code_locations import (
    locations_from_payload,
    locations_from_text,
    locations_of_entry,
    normalise_path,
    path_matches,
    text_key,
)

DIFF = """diff --git a/httpx/_auth.py b/httpx/_auth.py
index 1c2d..3e4f 100644
--- a/httpx/_auth.py
+++ b/httpx/_auth.py
@@ -120,7 +120,8 @@ class DigestAuth(Auth):
@@ -200,3 +201,4 @@ def auth_flow(self, request):
"""


def test_locations_from_text_reads_a_unified_diff_and_its_hunk_symbols() -> None:
    found = locations_from_text(DIFF)
    assert found.files == ("httpx/_auth.py",)
    assert found.symbols == ("DigestAuth", "auth_flow")


def test_locations_from_text_reads_python_and_javascript_stack_frames() -> None:
    text = (
        'File "/srv/app/api/views.py", line 41, in login\n    at handleRequest (src/server/router.ts:88:13)\n'
    )
    found = locations_from_text(text)
    assert found.files == ("/srv/app/api/views.py", "src/server/router.ts")
    assert found.symbols == ("login", "handleRequest")
    assert found.lines == (("/srv/app/api/views.py", 41), ("src/server/router.ts", 88))


def test_locations_from_text_reads_file_line_marks_and_paths_but_not_versions_or_prose() -> None:
    found = locations_from_text(
        "see httpx/_models.py:33, README.md and docs/api.md; bumped to 1.2.3, e.g. this"
    )
    assert found.files == ("httpx/_models.py", "README.md", "docs/api.md")
    assert found.lines == (("httpx/_models.py", 33),)


def test_locations_from_payload_wins_and_both_are_merged_once() -> None:
    payload = {"files": ["./src/a.py", "src/a.py"], "symbol": "Pool.connect", "path": "b/src/b.py"}
    assert locations_from_payload(payload).files == ("src/a.py", "src/b.py")
    found = locations_of_entry("Edited src/a.py and src/c.py", payload)
    assert found.files == ("src/a.py", "src/b.py", "src/c.py")
    assert found.symbols == ("Pool.connect",)


def test_locations_of_entry_reads_a_command_in_the_payload() -> None:
    found = locations_of_entry("ran the tests", {"tool": "Bash", "command": "pytest tests/test_client.py -x"})
    assert found.files == ("tests/test_client.py",)


def test_locations_from_payload_ignores_what_is_no_path() -> None:
    assert locations_from_payload({"files": ["", "/dev/null", 3, "x" * 500]}).files == ()
    assert locations_from_payload(["files"]).files == ()  # type: ignore[arg-type]


def test_path_matches_a_suffix_at_a_component_boundary_only() -> None:
    assert path_matches("/home/dev/repo/httpx/_client.py", "httpx/_client.py")
    assert path_matches("httpx/_client.py", "./httpx/_client.py")
    assert not path_matches("httpx/x_client.py", "_client.py")
    assert normalise_path("a/src/app.py") == "src/app.py" and normalise_path("a.py") == "a.py"
    assert text_key("/home/dev/httpx/_client.py") == "httpx/_client.py" and text_key("setup.py") == "setup.py"
