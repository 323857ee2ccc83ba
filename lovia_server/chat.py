"""``lovia chat``: chat with an agent in the terminal through the real language server.

    lovia chat --demo                    offline demo model (scripted), no key needed
    lovia chat "fix the failing test"    one run with the configured model (LOVIA_MODEL)
    lovia chat                           interactive: each line is a run in the same session;
                                         while a run works, a line steers it
    lovia chat --resume [RUN_ID]         continue an interrupted run

It spawns ``lovia-server``, speaks the editor protocol over stdio and renders the events.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import difflib
import os
import sys
import tempfile
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any

from lovia_server.client import RpcError, StdioClient

DEMO_PROMPT = "Show me around this workspace and tidy up its README."


class Terminal:
    """Renders lovia events as plain (optionally coloured) terminal text."""

    def __init__(self, out: Any, *, color: bool, root: Path | None = None) -> None:
        self.out = out
        self.root = root
        self.color = color
        self.at_line_start = True

    def c(self, code: str, text: str) -> str:
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
            self.write(self.c("2", event["text"]))
        elif kind == "message.completed":
            if not self.at_line_start:
                self.write("\n")
        elif kind == "tool.call":
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
            self.line(self.c("33", f"  approval {event['outcome']} ({event.get('by', 'user')})"))
        elif kind == "user.message" and event.get("source") == "steer":
            self.line(self.c("1", f"you (steer): {event['text']}"))
        elif kind == "handoff":
            self.line(self.c("36", f"⇢ {event['fromAgent']} → {event['toAgent']}"))
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
        status = event["status"]
        mark = {"completed": "✓", "failed": "✗", "declined": "⊘", "cancelled": "⊘"}[status]
        texts = [c["text"] for c in event["content"] if c["type"] == "text"]
        first = (texts[0].strip().splitlines() or [""])[0] if texts else ""
        if len(first) > 100:
            first = first[:99] + "…"
        self.line(self.c("32" if status == "completed" else "31", f"  {mark} {first}"))

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
        if event.get("resumable"):
            extra += f" (resumable: lovia chat --resume {event['runId']})"
        color = "1" if status == "completed" else "31"
        self.line(self.c(color, f"— {status}, {tokens} tokens{extra}"))


class ChatSession:
    """One conversation. Lines from the terminal answer a pending prompt, steer a live run, or
    start the next run."""

    def __init__(
        self,
        client: StdioClient,
        term: Terminal,
        *,
        auto_approve: bool,
        read_line: Callable[[str], Awaitable[str | None]],
        interactive: bool,
    ) -> None:
        self.client = client
        self.term = term
        self.auto_approve = auto_approve
        self.read_line = read_line
        self.interactive = interactive
        self.session_id: str | None = None
        self.run_id: str | None = None
        self.finished = asyncio.Event()
        self.status = "completed"
        self.prompts: deque[tuple[dict[str, Any], asyncio.Future[str]]] = deque()
        self._tasks: set[asyncio.Task[None]] = set()

    # ------------------------------------------------------------------ events

    async def on_event(self, event: dict[str, Any]) -> None:
        if self.run_id is not None and event.get("runId") != self.run_id:
            return
        self.term.event(event)
        kind = event["kind"]
        if kind == "approval.requested":
            self._spawn(self._approve(event))
        elif kind == "question.requested":
            self._spawn(self._answer(event))
        elif kind == "run.finished" and event.get("seq", 0) > self._started_seq:
            self.status = event["status"]
            self.finished.set()
        elif kind == "run.started":
            self._started_seq = event["seq"]

    _started_seq = 0

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _ask(self, event: dict[str, Any]) -> str:
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self.prompts.append((event, future))
        return await future

    async def _approve(self, event: dict[str, Any]) -> None:
        self.term.line(self.term.c("33", f"? approval needed: {event['title']}"))
        if event.get("detail"):
            self.term.line(self.term.c("33", f"  {event['detail']}"))
        for diff in event.get("diff") or []:
            self.term.diff(diff)
        message = None
        if self.auto_approve:
            decision = "allow_once"
            self.term.line(self.term.c("33", "  allowed (--yes)"))
        elif not self.interactive:
            decision = "reject_once"
            message = "Rejected: lovia chat was not run interactively (pass --yes to allow)."
        else:
            self.term.line(self.term.c("33", "  allow? [y]es / [a]lways / [n]o (or type a reason)"))
            answer = (await self._ask(event)).strip()
            decision = {"y": "allow_once", "yes": "allow_once", "a": "allow_always"}.get(
                answer.lower(), "reject_once"
            )
            if decision == "reject_once" and answer.lower() not in ("", "n", "no"):
                message = answer
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
        self.term.line(self.term.c("33", f"? {event['text']}"))
        if event.get("choices"):
            self.term.line(self.term.c("33", "  choices: " + ", ".join(event["choices"])))
        answer = (await self._ask(event)) if self.interactive else ""
        with contextlib.suppress(RpcError):
            await self.client.request(
                "lovia/answer",
                {"runId": event["runId"], "questionId": event["questionId"], "answer": answer},
            )

    # ------------------------------------------------------------------ input

    async def handle_line(self, line: str) -> None:
        """A line typed while a run is live: answer the oldest prompt, else steer."""
        if self.prompts:
            _, future = self.prompts.popleft()
            if not future.done():
                future.set_result(line)
            return
        if line.strip() and self.run_id is not None and not self.finished.is_set():
            with contextlib.suppress(RpcError):
                await self.client.request(
                    "lovia/steer", {"runId": self.run_id, "message": line.strip()}
                )
                self.term.line(self.term.c("2", "  (steer queued for the next turn)"))

    async def _pump_input(self) -> None:
        while not self.finished.is_set():
            line = await self.read_line("")
            if line is None:
                return
            await self.handle_line(line)

    async def _follow(self) -> str:
        reader = (
            asyncio.get_running_loop().create_task(self._pump_input()) if self.interactive else None
        )
        try:
            await self.finished.wait()
        except asyncio.CancelledError:
            if self.run_id:
                await self.client.request("lovia/cancel", {"runId": self.run_id})
            await self.finished.wait()
        finally:
            if reader is not None:
                reader.cancel()
        return self.status

    async def run(self, prompt: str, cwd: Path) -> str:
        self.finished.clear()
        self._started_seq = 0
        params: dict[str, Any] = {"prompt": prompt, "cwd": str(cwd)}
        if self.session_id:
            params["sessionId"] = self.session_id
        self.term.line(self.term.c("1", f"you: {prompt}"))
        self.run_id = None
        result = await self.client.request("lovia/run", params)
        self.session_id = result["sessionId"]
        self.run_id = result["runId"]
        return await self._follow()

    async def resume(self, run_id: str | None) -> str:
        if run_id is None:
            listing = await self.client.request("lovia/sessions", {"limit": 50})
            resumable = [s for s in listing["sessions"] if s["resumable"]]
            if not resumable:
                self.term.line("nothing to resume in this workspace")
                return "completed"
            run_id = resumable[0]["lastRunId"]
        self.finished.clear()
        self._started_seq = 0
        self.run_id = run_id
        result = await self.client.request("lovia/resume", {"runId": run_id})
        self.session_id = result["sessionId"]
        self.term.line(self.term.c("2", f"resuming run {run_id}"))
        return await self._follow()


def _parse(argv: list[str] | None, prog: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=prog, description="Chat with a lovia agent.")
    parser.add_argument("prompt", nargs="*", help="run this prompt once instead of chatting")
    parser.add_argument("--workspace", "--cwd", dest="workspace", help="workspace folder")
    parser.add_argument("--demo", action="store_true", help="use the offline demo model")
    parser.add_argument("--model", help="model string, e.g. openai:gpt-4.1-mini")
    parser.add_argument("--agent", help="agent file 'path.py:name' in the workspace")
    parser.add_argument("--resume", nargs="?", const="", metavar="RUN_ID", help="resume a run")
    parser.add_argument("--yes", action="store_true", help="approve every request")
    parser.add_argument("--state-dir", help="where the server keeps state.db")
    return parser.parse_args(argv)


def _workspace_root(args: argparse.Namespace) -> Path:
    if args.demo and not args.workspace:
        root = Path(tempfile.mkdtemp(prefix="lovia-demo-"))
        (root / "README.md").write_text(
            "# my project\n\nthis project does things.\nTODO: write the docs\n"
        )
        (root / "app.py").write_text('print("hello")\n')
        return root
    return Path(args.workspace or os.getcwd()).resolve()


async def _read_line(prompt: str) -> str | None:
    try:
        return await asyncio.to_thread(input, prompt)
    except EOFError:
        return None


async def _main(args: argparse.Namespace) -> int:
    root = await asyncio.to_thread(_workspace_root, args)
    settings: dict[str, Any] = {}
    if args.demo:
        settings["agent"] = "lovia:demo"
        settings["permissions"] = {"write": "ask"}
    elif args.agent:
        settings["agent"] = args.agent
    if args.model:
        settings["model"] = args.model
    init: dict[str, Any] = {"protocolVersion": 1, "client": "cli", "approvals": "events"}
    if args.state_dir:
        init["stateDir"] = args.state_dir
    elif args.demo and not args.workspace:
        init["stateDir"] = str(root / ".lovia-state")
    color = sys.stdout.isatty() and "NO_COLOR" not in os.environ
    term = Terminal(sys.stdout, color=color, root=root)
    chat: ChatSession | None = None

    async def on_event(event: dict[str, Any]) -> None:
        if chat is not None:
            await chat.on_event(event)

    client = StdioClient(on_event=on_event, settings=settings)
    await client.start(root, init)
    interactive = sys.stdin.isatty()
    chat = ChatSession(
        client, term, auto_approve=args.yes, read_line=_read_line, interactive=interactive
    )
    banner = f"lovia chat in {root}"
    if args.demo:
        banner += " — demo model (offline, scripted: it does the same thing every time)"
    term.line(term.c("2", banner))
    status = "completed"
    try:
        if args.resume is not None:
            status = await chat.resume(args.resume or None)
        elif args.prompt or args.demo:
            status = await chat.run(" ".join(args.prompt) or DEMO_PROMPT, root)
        else:
            term.line(term.c("2", "type a message; /resume, /exit"))
            while True:
                line = await _read_line("> ")
                if line is None or line.strip() in ("/exit", "/quit"):
                    break
                if line.strip() == "/resume":
                    status = await chat.resume(None)
                elif line.strip():
                    status = await chat.run(line.strip(), root)
    except RpcError as exc:
        hint = exc.data.get("hint") if isinstance(exc.data, dict) else None
        term.line(f"error: {exc}" + (f"\n  hint: {hint}" if hint else ""))
        if exc.code == -32016 and not args.demo:
            term.line("  or try the offline demo: lovia chat --demo")
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


__all__ = ["ChatSession", "Terminal", "sub_main"]
