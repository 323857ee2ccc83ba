"""How ``lovia chat`` shows a run: lovia events as plain (optionally coloured) terminal text."""

from __future__ import annotations

import difflib
import shutil
import textwrap
from pathlib import Path
from typing import Any

from lovia_server.chat.terminal_text import printable

RESULT_LINES = 5  # of a tool's result; the rest is counted
REFUSAL_LINES = 20  # of a failed or declined result, wrapped


class Terminal:
    """Renders lovia events as plain (optionally coloured) terminal text.

    Every text that came from the run goes through ``printable`` (in ``c`` and ``text``): the
    model, files and commands must not reach the terminal's escape sequences."""

    def __init__(
        self, out: Any, *, color: bool, root: Path | None = None, resume_hint: bool = True
    ) -> None:
        self.out = out
        self.root = root
        self.color = color
        self.resume_hint = resume_hint  # off where the workspace is not kept (the demo folder)
        self.at_line_start = True
        # Approvals this terminal answered by itself (``--yes``, not interactive): who decided.
        self.decided_by: dict[str, str] = {}
        self.tool_kinds: dict[str, str] = {}  # of the calls not finished yet

    def c(self, code: str, text: str) -> str:
        text = printable(text)
        return f"\033[{code}m{text}\033[0m" if self.color else text

    def text(self, text: str) -> None:
        """Streamed text of the run, as it comes."""
        self.write(printable(text))

    def write(self, text: str) -> None:
        if not text:
            return
        self.out.write(text)
        self.out.flush()
        self.at_line_start = text.endswith("\n")

    def line(self, text: str) -> None:
        if not self.at_line_start:
            self.write("\n")
        self.write(text + "\n")

    def event(self, event: dict[str, Any]) -> None:
        kind = event["kind"]
        if kind == "message.delta":
            self.text(event["text"])
        elif kind == "reasoning.delta":
            self.write(self.c("2", event["text"]))
        elif kind == "message.completed":
            if not self.at_line_start:
                self.write("\n")
        elif kind == "tool.call":
            self.tool_kinds[str(event["toolCallId"])] = str(event.get("toolKind"))
            self.line(self.c("36", f"▸ {event['title']}"))
        elif kind == "tool.update":
            for chunk in event["output"]["text"].splitlines():
                self.line(self.c("2", f"  │ {chunk}"))
        elif kind == "tool.result":
            self._tool_result(event)
        elif kind == "todo.updated":
            marks = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}
            for item in event["items"]:
                label = item.get("activeForm") if item["status"] == "in_progress" else None
                self.line(self.c("35", f"  {marks[item['status']]} {label or item['content']}"))
        elif kind == "approval.resolved":
            self.line(self.c("33", f"  {self.approval_outcome(event)}"))
        elif kind == "user.message" and event.get("source") == "steer":
            self.line(self.c("1", f"you (steer): {event['text']}"))
        elif kind == "handoff":
            self.line(self.c("36", f"⇢ {event['fromAgent']} → {event['toAgent']}"))
        elif kind == "model.retrying":
            self._retrying(event)
        elif kind == "output.discarded":
            self.line(self.c("33", "(the model call was retried)"))
        elif kind == "run.started" and event.get("resumed"):
            self.line(self.c("2", "(resumed)"))
        elif kind == "run.finished":
            self._finished(event)

    def diff(self, diff: dict[str, Any]) -> None:
        old = (diff.get("oldText") or "").splitlines(keepends=True)
        new = diff["newText"].splitlines(keepends=True)
        name = diff["path"]
        if self.root is not None and Path(name).is_relative_to(self.root):
            name = str(Path(name).relative_to(self.root))
        for line in difflib.unified_diff(old, new, f"a/{name}", f"b/{name}", n=2):
            code = "32" if line.startswith("+") else "31" if line.startswith("-") else "2"
            self.line(self.c(code, "    " + line.rstrip("\n")))

    def _tool_result(self, event: dict[str, Any]) -> None:
        """The first lines of a result and how many more; a failure or a refusal whole (wrapped),
        since its reason is the useful part."""
        status = event["status"]
        mark = {"completed": "✓", "failed": "✗", "declined": "⊘", "cancelled": "⊘"}[status]
        texts = [c["text"] for c in event["content"] if c["type"] == "text"]
        lines = "\n".join(texts).strip().splitlines() or [""]
        width = max(shutil.get_terminal_size((100, 24)).columns - 5, 40)
        think = self.tool_kinds.pop(str(event.get("toolCallId")), None) == "think"
        if status == "completed" and think:
            # The model's own notes and plan: the plan shows as its own list (todo.updated).
            limit, lines = 1, lines[:1]
        elif status == "completed":
            limit = RESULT_LINES
            lines = [line if len(line) <= width else line[: width - 1] + "…" for line in lines]
        else:
            limit = REFUSAL_LINES
            lines = [row for line in lines for row in textwrap.wrap(line, width) or [""]]
        shown, more = lines[:limit], len(lines) - limit
        color = "32" if status == "completed" else "31"
        self.line(self.c(color, f"  {mark} {shown[0]}"))
        for line in shown[1:]:
            self.line(self.c(color, f"    {line}"))
        if more > 0:
            self.line(self.c("2", f"    … +{more} more line{'s' if more > 1 else ''}"))

    def _retrying(self, event: dict[str, Any]) -> None:
        """The cause, the wait and the next attempt, at once; the hint with the first retry."""
        seconds = max(int(event.get("delayMs") or 0), 0) / 1000
        wait = f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.1f} s"
        nxt, of = int(event["attempt"]) + 1, event["maxAttempts"]
        self.line(
            self.c(
                "33",
                f"  ⟳ the model call failed: {event['reason']}; "
                f"retrying in {wait} (attempt {nxt} of {of})",
            )
        )
        if event.get("hint") and event["attempt"] == 1:
            self.line(self.c("2", f"    hint: {event['hint']}"))

    def approval_outcome(self, event: dict[str, Any]) -> str:
        """Who decided, in the user's words: never "user" for what a flag or the server did."""
        outcome, by = event["outcome"], event.get("by") or "user"
        if outcome == "cancelled":
            return "approval withdrawn — no decision recorded"
        who = self.decided_by.pop(str(event.get("approvalId")), None)
        if who is None:
            who = {"user": "you", "editor": "the editor"}.get(by, by)
        return f"approval {outcome} ({who})"

    def _finished(self, event: dict[str, Any]) -> None:
        usage = event.get("usage") or {}
        tokens = (usage.get("inputTokens") or 0) + (usage.get("outputTokens") or 0)
        status = event["status"]
        extra = ""
        err = event.get("error")
        if err:
            extra = f": {err.get('message')}"
            if err.get("hint"):
                extra += f"\n  hint: {err['hint']}"
        if event.get("resumable") and self.resume_hint:
            extra += f" (resumable: lovia chat --resume {event['runId']})"
        color = "1" if status == "completed" else "31"
        self.line(self.c(color, f"— {status}, {tokens} tokens{usage_note(usage)}{extra}"))


def usage_note(usage: dict[str, Any]) -> str:
    """What a finished run's line adds to its tokens: the share of input the prompt cache
    served (once the run read or wrote it), the run's cost and, when earlier runs cost
    something too, the session's."""
    note = ""
    given = usage.get("inputTokens") or 0
    read = usage.get("cacheReadTokens") or 0
    if given > 0 and read + (usage.get("cacheWriteTokens") or 0) > 0:
        note += f", {min(100, round(read * 100 / given))}% cached"
    cost = usage.get("costUsd")
    if isinstance(cost, int | float):
        note += f", ${cost:.4f}"
        session = usage.get("sessionCostUsd")
        if isinstance(session, int | float) and abs(session - cost) > 1e-9:
            note += f" (session ${session:.4f})"
    return note


__all__ = ["Terminal", "usage_note"]
