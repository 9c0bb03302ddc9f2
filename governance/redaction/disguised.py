"""Secrets hidden by an encoding a reader undoes without thinking: percent-encoding (RFC 3986), once or
more (`next=https%3A%2F%2F…%3Fpass%3D%2525…`, a URL inside a URL's parameter). A run of text holding `%XX`
escapes is decoded, up to three times, and scanned again; a secret found in the decoded text is cut from the
run as written, escapes and all."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from governance.redaction.kinds import Span

__all__ = ["percent_encoded"]

# a run without spaces that holds at least two escapes (one `%20` in a sentence is not worth a rescan)
_RUN = re.compile(r"[^\s\"'<>`]*%[0-9A-Fa-f]{2}[^\s\"'<>`]*%[0-9A-Fa-f]{2}[^\s\"'<>`]*")
# what hides a value from the rules: an encoded `=` (`%3D`: a name and its value are not seen as such), an
# encoded `://` (a URL inside a parameter, its userinfo unseen), or a second encoding (`%25…`); a single
# `%40` or `%2F` in userinfo is the URL rules' own, and a run without one of these is not decoded
_HIDING = re.compile(r"%3[Dd]|%25|%3[Aa]%2[Ff]%2[Ff]")
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")


def _unquote(text: str, starts: list[int], ends: list[int]) -> tuple[str, list[int], list[int]]:
    """`text` with each `%XX` of a printable ASCII character decoded, and where each decoded character
    starts and ends in the original text (`starts`, `ends` say the same of `text`)."""
    out: list[str] = []
    new_starts: list[int] = []
    new_ends: list[int] = []
    pos = 0
    for match in _ESCAPE.finditer(text):
        code = int(match.group(1), 16)
        if not 0x20 <= code < 0x7F:
            continue
        for index in range(pos, match.start()):
            out.append(text[index])
            new_starts.append(starts[index])
            new_ends.append(ends[index])
        out.append(chr(code))
        new_starts.append(starts[match.start()])
        new_ends.append(ends[match.end() - 1])
        pos = match.end()
    for index in range(pos, len(text)):
        out.append(text[index])
        new_starts.append(starts[index])
        new_ends.append(ends[index])
    return "".join(out), new_starts, new_ends


def percent_encoded(scan: Callable[[str, int], list[Span]]) -> Callable[[str, int], Iterator[Span]]:
    """A detector that rescans each percent-encoded run with `scan` once decoded (`scan` is the whole set
    of detectors; the rescan runs one level deeper, as a base64 run's does, and not past the second)."""

    def detect(text: str, depth: int) -> Iterator[Span]:
        if depth >= 2:
            return
        for run in _RUN.finditer(text):
            decoded = run.group()
            if _HIDING.search(decoded) is None:
                continue
            starts = list(range(run.start(), run.end()))
            ends = [index + 1 for index in starts]
            for _ in range(3):
                if _ESCAPE.search(decoded) is None:
                    break
                unquoted, starts, ends = _unquote(decoded, starts, ends)
                if unquoted == decoded:
                    break
                decoded = unquoted
                for start, end, priority in scan(decoded, depth + 1):
                    if start < end:
                        yield starts[start], ends[end - 1], priority

    return detect
