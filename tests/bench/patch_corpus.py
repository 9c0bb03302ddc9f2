"""Build the corpus of real patches that measures patch-pattern detection (outside the pytest run).

    pip download --no-deps --only-binary :all: httpx==<v> -d WHEELS   # for the releases 0.13.0 .. 0.28.1
    python tests/bench/patch_corpus.py WHEELS HISTORY                  # writes tests/data/patch_patterns/

HISTORY is the full history with line counts (`shared/data/repo-history/httpx.jsonl` of this workplace:
commit, date, subject, body, files with lines added and deleted).

The patches: the commit history of encode/httpx (BSD-3, LICENSE.httpx beside the corpus) says, for every
commit, its message and the lines it added and deleted per file, but holds no diff. The released wheels
hold the library's source at each release. Between two consecutive releases, a library file (`httpx/*.py`)
that exactly one commit of the window touched, whose diff between the wheels adds and deletes exactly the
lines that commit's record says, is that commit's change to the file. A commit with at least one library
file recovered that way becomes one unified diff of the corpus (`complete` when all its library files are;
its tests and docs are not in the wheels).

The expectations: every category a commit's message (subject and body) names by the phrases below. They
were written from the messages alone, before the detection rules (governance/patch_patterns.py), and are
never tuned on what the rules find: a message that names no category expects none, and a category it does
not name counts against the rules when they find it (so precision is a lower bound: messages leave much
unsaid). `split` keeps a quarter of the commits (by hash) held out.
"""

from __future__ import annotations

import difflib
import json
import re
import sys
import zipfile
from collections import defaultdict
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "data" / "patch_patterns" / "httpx_patches.jsonl"

# what a commit message says -> the category it expects (written from the messages, before any rule)
EXPECTATIONS: dict[str, str] = {
    "extract-method": r"\brefactor|\bextract|\bsplit (out|into|up)|\bfactor out|\bpull out|\bmove .* into",
    "guard-clause": r"\bearly (return|exit)|\bguard|\bshort[- ]circuit|\bbail out",
    "error-handling": r"\bexceptions?\b|\berrors?\b|\braises?\b|\braising\b|\bexcept\b|\btimeout ?errors?",
    "rename": r"\brenam(e|es|ed|ing)\b",
    "null-check": r"\bnone\b|\bnull\b|\bif not set\b|\bmissing\b|\bempty\b",
    "add-test": r"\b(add|adds|added|more|additional|new|missing) (\w+ )?(unit )?tests?\b|\btest coverage\b",
    "type-annotation": r"\btype (hints?|annotations?|checks?|checking)\b|\btyping\b|\bannotat|\bmypy\b|"
    r"\bpy\.typed\b|\btyped\b",
    "dependency-bump": r"\bbump\b|\bupgrade\b|\bupdate (the )?(dependencies|requirements|deps)\b|\bpin\b|"
    r"\bdrop (support|python)|\brequire[sd]? \w+ ?[<>=]",
    "logging": r"\blog(s|ging|ger)?\b|\btrace\b",
    "resource-cleanup": r"\bclos(e|es|ed|ing)\b|\bclean ?up\b|\bcontext manager|\bleak|\bcleanup\b|"
    r"\brelease\b",
}


def expected_categories(subject: str, body: str) -> list[str]:
    """The categories a commit message names (EXPECTATIONS), sorted."""
    text = f"{subject}\n{body}".lower()
    return sorted(c for c, phrase in EXPECTATIONS.items() if re.search(phrase, text))


def split_of(commit: str) -> str:
    """`heldout` for a quarter of the commits (by the hash's first byte), `tune` for the rest."""
    return "heldout" if int(commit[:2], 16) % 4 == 0 else "tune"


def _version(subject: str) -> str | None:
    match = re.match(r"^(?:Version|Release) (\d+\.\d+(?:\.\d+)?)", subject)
    if match is None:
        return None
    parts = match.group(1).split(".")
    return ".".join(parts + ["0"] * (3 - len(parts)))


def _wheel_sources(path: Path) -> dict[str, list[str]]:
    with zipfile.ZipFile(path) as wheel:
        return {
            name: wheel.read(name).decode("utf-8").splitlines(keepends=True)
            for name in wheel.namelist()
            if name.startswith("httpx/") and name.endswith(".py")
        }


def _counts(diff: list[str]) -> tuple[int, int]:
    added = sum(1 for line in diff if line.startswith("+") and not line.startswith("+++"))
    deleted = sum(1 for line in diff if line.startswith("-") and not line.startswith("---"))
    return added, deleted


def build(wheels: Path, history: Path) -> list[dict[str, object]]:
    """The corpus: one record per commit whose library diff the wheels recover exactly."""
    commits = [json.loads(line) for line in history.read_text().splitlines() if line.strip()]
    commits.sort(key=lambda c: datetime.fromisoformat(c["date"]))
    released: dict[str, int] = {}
    for index, c in enumerate(commits):
        version = _version(c["subject"])
        if version is not None:
            released.setdefault(version, index)
    files = {}
    for wheel in wheels.glob("httpx-*.whl"):
        files[wheel.name.split("-")[1]] = wheel
    versions = sorted((v for v in files if v in released), key=lambda v: tuple(int(p) for p in v.split(".")))
    found: dict[str, dict[str, list[str]]] = defaultdict(dict)
    for old, new in zip(versions, versions[1:], strict=False):
        before, after = _wheel_sources(files[old]), _wheel_sources(files[new])
        window = commits[released[old] + 1 : released[new] + 1]
        touched: dict[str, list[dict[str, object]]] = defaultdict(list)
        for c in window:
            if _version(c["subject"]) is not None:
                continue
            for f in c["files"]:
                touched[f["path"]].append(c)
        for path, by in touched.items():
            if len(by) != 1 or path not in after or not path.startswith("httpx/"):
                continue
            diff = list(
                difflib.unified_diff(
                    before.get(path, []), after[path], fromfile=f"a/{path}", tofile=f"b/{path}"
                )
            )
            record = next(f for f in by[0]["files"] if f["path"] == path)  # type: ignore[union-attr]
            if diff and _counts(diff) == (record["added"], record["deleted"]):
                found[str(by[0]["commit"])][path] = diff
    corpus: list[dict[str, object]] = []
    for c in commits:
        got = found.get(c["commit"])
        library = [
            f["path"] for f in c["files"] if f["path"].startswith("httpx/") and f["path"].endswith(".py")
        ]
        if not got:
            continue
        diff_text = "".join(
            line if line.endswith("\n") else line + "\n" for path in sorted(got) for line in got[path]
        )
        corpus.append(
            {
                "commit": c["commit"],
                "subject": c["subject"],
                "body": c["body"][:600],
                "split": split_of(c["commit"]),
                "complete": set(got) == set(library),
                "expected": expected_categories(c["subject"], c["body"]),
                "diff": diff_text,
            }
        )
    return corpus


def main() -> None:
    corpus = build(Path(sys.argv[1]), Path(sys.argv[2]))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in corpus))
    labelled = sum(1 for r in corpus if r["expected"])
    print(f"{len(corpus)} patches ({labelled} with expected categories) -> {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
