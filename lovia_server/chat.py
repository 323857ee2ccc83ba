"""``lovia chat``: chat with an agent in the terminal through the real language server.

lovia chat --demo                 scripted demo agent, no model or API key needed
lovia chat "fix the failing test" one run with the configured model (LOVIA_MODEL)
lovia chat                        interactive: each line is a run in the same session
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from lovia_server.client import RpcError, StdioClient

DEMO_PROMPT = "Show me what you can do: write a small Python script and run it."


class Terminal:
    """Renders lovia events as plain (optionally coloured) terminal text."""

    def __init__(self, out: Any, *, color: bool) -> None:
        self.out = out
        self.color = color
        self.at_line_start = True

    def _c(self, code: str, text: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.color else text

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
            self.write(event["text"])
        elif kind == "reasoning.delta":
            self.write(self._c("2", event["text"]))
        elif kind == "message.completed":
            if not self.at_line_start:
                self.write("\n")
        elif kind == "tool.call":
            self.line(self._c("36", f"▸ {event['title']}"))
        elif kind == "tool.update":
            for chunk in event["output"]["text"].splitlines():
                self.line(self._c("2", f"  │ {chunk}"))
        elif kind == "tool.result":
            self._tool_result(event)
        elif kind == "todo.updated":
            marks = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}
            for item in event["items"]:
                label = item.get("activeForm") if item["status"] == "in_progress" else None
                self.line(self._c("35", f"  {marks[item['status']]} {label or item['content']}"))
        elif kind == "approval.resolved":
            verdict = event["outcome"]
            self.line(self._c("33", f"  approval {verdict} ({event.get('by', 'user')})"))
        elif kind == "user.message" and event.get("source") == "steer":
            self.line(self._c("1", f"you (steer): {event['text']}"))
        elif kind == "handoff":
            self.line(self._c("36", f"⇢ {event['fromAgent']} → {event['toAgent']}"))
        elif kind == "output.discarded":
            self.line(self._c("33", "(retrying the model call)"))
        elif kind == "run.finished":
            self._finished(event)

    def _tool_result(self, event: dict[str, Any]) -> None:
        status = event["status"]
        mark = {"completed": "✓", "failed": "✗", "declined": "⊘", "cancelled": "⊘"}[status]
        texts = [c["text"] for c in event["content"] if c["type"] == "text"]
        first = (texts[0].strip().splitlines() or [""])[0] if texts else ""
        if len(first) > 100:
            first = first[:99] + "…"
        color = "32" if status == "completed" else "31"
        self.line(self._c(color, f"  {mark} {first}"))
        for diff in (c for c in event["content"] if c["type"] == "diff"):
            old = (diff.get("oldText") or "").splitlines()
            new = diff["newText"].splitlines()
            self.line(self._c("2", f"    {diff['path']}: {len(old)} → {len(new)} lines"))

    def _finished(self, event: dict[str, Any]) -> None:
        usage = event.get("usage") or {}
        tokens = (usage.get("inputTokens") or 0) + (usage.get("outputTokens") or 0)
        status = event["status"]
        extra = ""
        if event.get("error"):
            err = event["error"]
            extra = f": {err.get('message')}" + (
                f"\n  hint: {err['hint']}" if err.get("hint") else ""
            )
        if event.get("resumable"):
            extra += " (resumable)"
        self.line(
            self._c("1" if status == "completed" else "31", f"— {status}, {tokens} tokens{extra}")
        )


class ChatSession:
    def __init__(self, client: StdioClient, term: Terminal, *, auto_approve: bool) -> None:
        self.client = client
        self.term = term
        self.auto_approve = auto_approve
        self.interactive = sys.stdin.isatty()
        self.session_id: str | None = None
        self.run_id: str | None = None
        self.finished: asyncio.Event = asyncio.Event()
        self.status = "completed"
        self._tasks: set[asyncio.Task[None]] = set()

    async def on_event(self, event: dict[str, Any]) -> None:
        if event.get("runId") != self.run_id and self.run_id is not None:
            return
        self.term.event(event)
        kind = event["kind"]
        if kind == "approval.requested":
            self._spawn(self._approve(event))
        elif kind == "question.requested":
            self._spawn(self._answer(event))
        elif kind == "run.finished":
            self.status = event["status"]
            self.finished.set()

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _ask(self, prompt: str) -> str:
        return (await asyncio.to_thread(input, prompt)).strip()

    async def _approve(self, event: dict[str, Any]) -> None:
        detail = event.get("detail") or ""
        self.term.line(self.term._c("33", f"? approval needed: {event['title']}"))
        if detail:
            self.term.line(self.term._c("33", f"  {detail}"))
        if self.auto_approve:
            decision, message = "allow_once", None
            self.term.line(self.term._c("33", "  allowed (--yes)"))
        elif not self.interactive:
            decision = "reject_once"
            message = "Rejected: lovia chat was not run interactively (pass --yes to allow)."
        else:
            answer = (await self._ask("  allow? [y]es / [a]lways / [n]o: ")).lower()
            decision = {"y": "allow_once", "yes": "allow_once", "a": "allow_always"}.get(
                answer, "reject_once"
            )
            message = None
        with contextlib.suppress(RpcError):
            await self.client.request(
                "lovia/approve",
                {
                    "runId": event["runId"],
                    "approvalId": event["approvalId"],
                    "decision": decision,
                    "message": message,
                },
            )

    async def _answer(self, event: dict[str, Any]) -> None:
        self.term.line(self.term._c("33", f"? {event['text']}"))
        if event.get("choices"):
            self.term.line(self.term._c("33", "  choices: " + ", ".join(event["choices"])))
        answer = await self._ask("  answer: ") if self.interactive else ""
        with contextlib.suppress(RpcError):
            await self.client.request(
                "lovia/answer",
                {"runId": event["runId"], "questionId": event["questionId"], "answer": answer},
            )

    async def run(self, prompt: str, cwd: Path) -> str:
        self.finished.clear()
        params: dict[str, Any] = {"prompt": prompt, "cwd": str(cwd)}
        if self.session_id:
            params["sessionId"] = self.session_id
        self.term.line(self.term._c("1", f"you: {prompt}"))
        self.run_id = None
        result = await self.client.request("lovia/run", params)
        self.session_id = result["sessionId"]
        self.run_id = result["runId"]
        try:
            await self.finished.wait()
        except asyncio.CancelledError:
            await self.client.request("lovia/cancel", {"runId": self.run_id})
            await self.finished.wait()
        return self.status


def _parse(argv: list[str] | None, prog: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=prog, description="Chat with a lovia agent.")
    parser.add_argument("prompt", nargs="*", help="run this prompt once instead of a REPL")
    parser.add_argument("--demo", action="store_true", help="use the scripted demo agent")
    parser.add_argument("--cwd", help="workspace folder (default: current directory)")
    parser.add_argument("--model", help="model string, e.g. openai:gpt-4.1-mini")
    parser.add_argument("--yes", action="store_true", help="approve every request")
    parser.add_argument("--state-dir", help="where the server keeps state.db")
    return parser.parse_args(argv)


def _workspace_root(args: argparse.Namespace) -> Path:
    if args.demo and not args.cwd:
        root = Path(tempfile.mkdtemp(prefix="lovia-demo-"))
        (root / "README.md").write_text("# lovia demo workspace\n")
        return root
    return Path(args.cwd or os.getcwd()).resolve()


async def _main(args: argparse.Namespace) -> int:
    root = await asyncio.to_thread(_workspace_root, args)
    settings: dict[str, Any] = {}
    if args.demo:
        settings["agent"] = "lovia:demo"
    if args.model:
        settings["model"] = args.model
    init: dict[str, Any] = {"protocolVersion": 1, "client": "cli", "approvals": "events"}
    if args.state_dir:
        init["stateDir"] = args.state_dir
    elif args.demo:
        init["stateDir"] = str(root / ".lovia-state")
    term = Terminal(sys.stdout, color=sys.stdout.isatty() and "NO_COLOR" not in os.environ)
    chat: ChatSession | None = None

    async def on_event(event: dict[str, Any]) -> None:
        if chat is not None:
            await chat.on_event(event)

    client = StdioClient(on_event=on_event, settings=settings)
    await client.start(root, init)
    chat = ChatSession(client, term, auto_approve=args.yes)
    term.line(term._c("2", f"lovia chat in {root}" + (" (demo agent)" if args.demo else "")))
    status = "completed"
    try:
        if args.prompt or args.demo:
            prompt = " ".join(args.prompt) or DEMO_PROMPT
            status = await chat.run(prompt, root)
        else:
            while True:
                try:
                    line = await asyncio.to_thread(input, "> ")
                except EOFError:
                    break
                if line.strip() in ("/exit", "/quit"):
                    break
                if line.strip():
                    status = await chat.run(line.strip(), root)
    except RpcError as exc:
        hint = (exc.data or {}).get("hint") if isinstance(exc.data, dict) else None
        term.line(f"error: {exc}" + (f"\n  hint: {hint}" if hint else ""))
        status = "failed"
    finally:
        await client.close()
    return {"completed": 0, "cancelled": 130}.get(status, 1)


def sub_main(argv: list[str] | None = None, *, prog: str = "lovia chat") -> int:
    args = _parse(argv, prog)
    try:
        return asyncio.run(_main(args))
    except KeyboardInterrupt:
        return 130


__all__ = ["sub_main"]
