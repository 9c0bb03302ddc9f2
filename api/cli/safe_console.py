"""A console that shows control characters in what it prints instead of sending them to the terminal.

Memory text, plan items, approval summaries and refusals come from agents. Printed as they are, an escape
sequence in them reaches the approver's terminal as a command: `ESC[8m` hides the text after it (an approval
summary reading "rename a variable" over a hidden "and delete the audit log"), `ESC]52;c;…` writes the
clipboard, `\\r` or a backspace overwrites what was shown. `SafeConsole` renders its own styles as usual and
writes every control character of the text itself as a visible stand-in: C0 as its Control Pictures symbol
(`␛` for ESC), DEL as `␡`, C1 (`0x80`-`0x9f`, where 8-bit CSI lives) and the bidirectional overrides and
isolates (which reorder what is shown) as `<U+XXXX>`. Newlines and tabs stay.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment
from rich.text import Text

__all__ = ["SafeConsole", "json_controls", "visible_controls"]

_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _stand_in(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x20:
        return chr(0x2400 + code)  # ␀ … ␟, ␛ for ESC
    if code == 0x7F:
        return "\u2421"  # ␡
    return f"<U+{code:04X}>"


def visible_controls(text: str) -> str:
    """`text` with every control character a terminal would act on (newline and tab aside) made visible."""
    return _UNSAFE.sub(_stand_in, text) if _UNSAFE.search(text) else text


def json_controls(text: str) -> str:
    """JSON text with those characters as `\\uXXXX` escapes: the same JSON, shown rather than acted on."""
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text) if _UNSAFE.search(text) else text


class SafeConsole(Console):
    """A rich `Console` whose printed text never carries a control character of its own to the terminal.

    Strings (what `print` is given, table cells, panel titles) get their stand-ins before rich lays them
    out, so widths and wrapping count them; a `Text` built by a command should hold `visible_controls`
    text. Whatever still carries one when rendered is rewritten then (a line may come out longer than the
    layout meant, never raw). The segments rich marks as control (cursor moves) pass, and its own styles
    are not in the text.
    """

    def render_str(self, text: str, **kwargs: Any) -> Text:
        return super().render_str(visible_controls(text), **kwargs)

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            if segment.control or not _UNSAFE.search(segment.text):
                yield segment
            else:
                yield Segment(visible_controls(segment.text), segment.style, segment.control)
