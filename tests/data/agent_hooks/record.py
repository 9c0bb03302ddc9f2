"""Record a real coding session as the hook events a coding-agent CLI sends, one JSON object per line.

    python tests/data/agent_hooks/record.py OUT.jsonl start --cwd DIR
    python tests/data/agent_hooks/record.py OUT.jsonl prompt "the user's words"
    python tests/data/agent_hooks/record.py OUT.jsonl bash "command" [--description TEXT]
    python tests/data/agent_hooks/record.py OUT.jsonl read PATH
    python tests/data/agent_hooks/record.py OUT.jsonl edit PATH OLD_FILE NEW_FILE
    python tests/data/agent_hooks/record.py OUT.jsonl stop | end

Each tool verb *does* the work (runs the command in the session's directory, reads the file, makes the
edit) and records what happened as it happened: a `PreToolUse` event with the tool's input, then a
`PostToolUse` event with its real output, or a `PostToolUseFailure` when the command exits non-zero, in the
field names of Claude Code's documented hook input (`session_id`, `transcript_path`, `cwd`,
`hook_event_name`, `tool_name`, `tool_use_id`, `tool_input`, `tool_response`, `error`). `session.jsonl`
beside this file is such a recording; the test replays it through `loregate hook`.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

_STATE = ".recording.json"  # beside OUT: the session's id, directory and tool-use counter


def _state(out: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((out.parent / _STATE).read_text())
    return loaded


def _write(out: Path, state: dict[str, Any], event: str, **fields: Any) -> None:
    base = {
        "session_id": state["session_id"],
        "transcript_path": f"~/.claude/projects/session/{state['session_id']}.jsonl",
        "cwd": state["cwd"],
        "permission_mode": "default",
        "hook_event_name": event,
    }
    with out.open("a") as handle:
        handle.write(json.dumps({**base, **fields}, ensure_ascii=False) + "\n")


def _tool(out: Path, state: dict[str, Any], name: str, tool_input: dict[str, Any]) -> str:
    state["uses"] += 1
    (out.parent / _STATE).write_text(json.dumps(state))
    use_id = f"toolu_{state['uses']:02d}"
    _write(out, state, "PreToolUse", tool_name=name, tool_use_id=use_id, tool_input=tool_input)
    return use_id


def main(argv: list[str]) -> None:
    out, verb, *rest = argv
    path = Path(out)
    if verb == "start":
        cwd = rest[rest.index("--cwd") + 1]
        state = {"session_id": str(uuid.uuid4()), "cwd": str(Path(cwd).resolve()), "uses": 0}
        (path.parent / _STATE).write_text(json.dumps(state))
        path.write_text("")
        _write(path, state, "SessionStart", source="startup")
        return
    state = _state(path)
    cwd = Path(state["cwd"])
    if verb == "prompt":
        _write(path, state, "UserPromptSubmit", prompt=rest[0])
    elif verb == "bash":
        tool_input = {"command": rest[0]}
        if "--description" in rest:
            tool_input["description"] = rest[rest.index("--description") + 1]
        use_id = _tool(path, state, "Bash", tool_input)
        done = subprocess.run(rest[0], shell=True, cwd=cwd, capture_output=True, text=True, timeout=600)
        print(done.stdout + done.stderr)
        if done.returncode == 0:
            response = {"stdout": done.stdout, "stderr": done.stderr, "interrupted": False, "isImage": False}
            _write(path, state, "PostToolUse", tool_name="Bash", tool_use_id=use_id,
                   tool_input=tool_input, tool_response=response)  # fmt: skip
        else:
            error = f"Exit code {done.returncode}\n{done.stdout}{done.stderr}".rstrip()
            _write(path, state, "PostToolUseFailure", tool_name="Bash", tool_use_id=use_id,
                   tool_input=tool_input, error=error)  # fmt: skip
    elif verb == "read":
        file_path = str((cwd / rest[0]).resolve())
        use_id = _tool(path, state, "Read", {"file_path": file_path})
        content = Path(file_path).read_text()
        lines = content.count("\n")
        file = {"filePath": file_path, "content": content, "numLines": lines, "startLine": 1}
        file["totalLines"] = lines
        response = {"type": "text", "file": file}
        _write(path, state, "PostToolUse", tool_name="Read", tool_use_id=use_id,
               tool_input={"file_path": file_path}, tool_response=response)  # fmt: skip
    elif verb == "edit":
        file_path = str((cwd / rest[0]).resolve())
        old, new = Path(rest[1]).read_text(), Path(rest[2]).read_text()
        tool_input = {"file_path": file_path, "old_string": old, "new_string": new}
        use_id = _tool(path, state, "Edit", tool_input)
        text = Path(file_path).read_text()
        if text.count(old) != 1:
            error = "String to replace not found in file." if old not in text else "Found several matches."
            _write(path, state, "PostToolUseFailure", tool_name="Edit", tool_use_id=use_id,
                   tool_input=tool_input, error=error)  # fmt: skip
            raise SystemExit(error)
        Path(file_path).write_text(text.replace(old, new))
        response = {"filePath": file_path, "oldString": old, "newString": new, "userModified": False}
        _write(path, state, "PostToolUse", tool_name="Edit", tool_use_id=use_id,
               tool_input=tool_input, tool_response=response)  # fmt: skip
    elif verb == "stop":
        _write(path, state, "Stop", stop_hook_active=False)
    elif verb == "end":
        _write(path, state, "SessionEnd", reason="exit")
        (path.parent / _STATE).unlink()
    else:
        raise SystemExit(f"unknown verb {verb!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
