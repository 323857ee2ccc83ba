"""Text from the model, files and commands made safe to print on a terminal.

A terminal obeys the escape sequences in what it prints: OSC 8 makes a hyperlink whose target
is hidden, OSC 1337 (iTerm2) and other private sequences can fetch or store files, OSC 52 writes
the clipboard, CSI moves the cursor and erases lines (so text could rewrite an approval prompt
to show a different command), DCS and APC reach terminal-specific features. None of that may be
driven by model text: every escape sequence and every control character except newline and tab
is dropped, a carriage return becomes a newline, and the bidirectional overrides that make text
display in another order than it reads are dropped too. What is shown is exactly the text.

Chunks are cleaned one by one: a sequence cut between two chunks cannot form again, because its
introducer (ESC, or a C1 control) is dropped wherever it is.
"""

from __future__ import annotations

import re

_SEQUENCE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: cursor moves, erases, colours
    r"|\x1b[\]PX^_].*?(?:\x07|\x1b\\|\x9c|$)"  # OSC, DCS, SOS, PM, APC, to their terminator
    r"|[\x9d\x90\x98\x9e\x9f].*?(?:\x07|\x1b\\|\x9c|$)"  # the same with an 8-bit introducer
    r"|\x1b[ -/]*[0-~]",  # every other escape
    re.DOTALL,
)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` with nothing a terminal would act on."""
    if text.isprintable():
        return text
    text = _SEQUENCE.sub("", text)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROL.sub("", text)


__all__ = ["printable"]
