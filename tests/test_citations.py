"""The project's code and docs cite only what the project holds (no design notes or seeds kept elsewhere)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOREIGN = re.compile(r"\bseed\s*0\d\d\b|\bDESIGN\.md\b|\bSTYLE\.md\b", re.IGNORECASE)
SKIP = {".venv", ".git", "loregate.egg-info", "node_modules"}
# every kind of text the project holds: code, docs, settings, the gRPC contract, policy, console templates
TEXT_SUFFIXES = {
    ".py",
    ".md",
    ".toml",
    ".yaml",
    ".yml",
    ".proto",
    ".conf",
    ".csv",
    ".html",
    ".css",
    ".ini",
    ".cfg",
    ".txt",
    ".json",
    ".jsonl",
    ".sh",
    ".sql",
}


def test_no_file_cites_documents_the_project_does_not_hold() -> None:
    offenders = []
    for path in ROOT.rglob("*"):
        if SKIP & set(path.relative_to(ROOT).parts) or path.suffix not in TEXT_SUFFIXES:
            continue
        if path == Path(__file__):
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if FOREIGN.search(line):
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert offenders == []
