"""``lovia chat``: chat with an agent in the terminal through the real language server.

    lovia chat --demo                    offline demo model (scripted), no key needed
    lovia chat "fix the failing test"    one run with the configured model (LOVIA_MODEL)
    lovia chat                           interactive: each line is a run in the same session;
                                         while a run works, a line steers it
    lovia chat --resume [RUN_ID]         continue an interrupted run

It spawns ``lovia-server``, speaks the editor protocol over stdio and renders the events.
Ctrl-C cancels the live run; a second Ctrl-C (or one at the prompt) quits, and a run that had
not finished stays resumable. The server's own log goes to a file (``--verbose`` shows it).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import signal
import sys
import tempfile
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import IO, Any

from lovia_server.chat.chat_args import parse_chat_args
from lovia_server.chat.chat_commands import (
    COMMANDS,
    HELP,
    command_of,
    server_commands,
    server_help,
    unknown,
)
from lovia_server.chat.chat_input import ChatInput, stdin_is_tty
from lovia_server.chat.chat_notices import describe_error, instructions_notice, sandbox_notice
from lovia_server.chat.client import RpcError, StdioClient
from lovia_server.chat.terminal_text import printable
from lovia_server.chat.terminal_view import Terminal
from lovia_server.protocol import RUN_NOT_ACTIVE

DEMO_PROMPT = "Show me around this workspace and tidy up its README."


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
        prompt_stays_open: Callable[[], bool] = lambda: False,
    ) -> None:
        self.client = client
        self.term = term
        self.auto_approve = auto_approve
        self.read_line = read_line
        self.interactive = interactive
        # A line editor's open prompt holds keys typed into it: a run's end leaves it open.
        self.prompt_stays_open = prompt_stays_open
        self.session_id: str | None = None
        self.run_id: str | None = None
        self.finished = asyncio.Event()
        self.cancelling = False
        self.status = "completed"
        self.prompts: deque[tuple[dict[str, Any], asyncio.Future[str]]] = deque()
        self._tasks: set[asyncio.Task[None]] = set()
        self._reading = False
        self._carried: asyncio.Task[None] | None = None  # a prompt left open by a run's end
        self._input_ended = False
        self._queued: deque[str] = deque()  # lines for the next prompts, in order
        self._deferred: list[str] = []  # commands typed during a run, for after it
        self.commands: dict[str, str] = {}  # the server's (lovia/commands), for lovia/run
        self.command_help = ""

    @property
    def live(self) -> bool:
        """A run was started (or resumed) and has not finished yet."""
        return self.run_id is not None and not self.finished.is_set()

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
        elif kind == "approval.resolved":
            self._drop_prompt("approvalId", event.get("approvalId"))
        elif kind == "question.answered":
            self._drop_prompt("questionId", event.get("questionId"))
        elif kind == "run.finished" and event.get("seq", 0) > self._started_seq:
            self.status = event["status"]
            for _, future in self.prompts:  # nobody answers a finished run's prompts
                future.cancel()
            self.prompts.clear()
            self.finished.set()
        elif kind == "run.started":
            self._started_seq = event["seq"]

    _started_seq = 0

    def _drop_prompt(self, key: str, value: Any) -> None:
        """A prompt resolved elsewhere (a timeout, the cancel) no longer takes the next line."""
        for item in list(self.prompts):
            if item[0].get(key) == value:
                self.prompts.remove(item)
                item[1].cancel()

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
        for line in str(event.get("detail") or "").splitlines():
            self.term.line(self.term.c("33", f"  {line}"))
        for diff in event.get("diff") or []:
            self.term.diff(diff)
        warning = event.get("warning")
        if warning:
            self.term.line(self.term.c("31", f"  ! {warning}"))
        offered = {o.get("decision") for o in event.get("options") or []}
        message = None
        if self.auto_approve and not warning:
            decision = "allow_once"
            self.term.decided_by[str(event["approvalId"])] = "--yes"
        elif not self.interactive:
            decision = "reject_once"
            self.term.decided_by[str(event["approvalId"])] = "not interactive"
            message = (
                "Rejected: a change to editor or agent configuration needs a person's approval."
                if warning
                else "Rejected: lovia chat was not run interactively (pass --yes to allow)."
            )
        else:
            always = " / [a]lways" if "allow_always" in offered else ""
            self.term.line(self.term.c("33", f"  allow? [y]es{always} / [n]o (or type a reason)"))
            answer = (await self._ask(event)).strip()
            choices = {"y": "allow_once", "yes": "allow_once"}
            if always:
                choices["a"] = "allow_always"
            decision = choices.get(answer.lower(), "reject_once")
            if decision == "reject_once" and answer.lower() not in ("", "n", "no"):
                message = answer
        with contextlib.suppress(RpcError, ConnectionError):
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
        with contextlib.suppress(RpcError, ConnectionError):
            await self.client.request(
                "lovia/answer",
                {"runId": event["runId"], "questionId": event["questionId"], "answer": answer},
            )

    # ------------------------------------------------------------------ input

    async def handle_line(self, line: str) -> None:
        """A line typed while a run is live: answer the oldest prompt, else steer. A line that
        arrives as the run ends is put back for the next prompt."""
        if self.prompts:
            _, future = self.prompts.popleft()
            if not future.done():
                future.set_result(line)
            return
        if not self.live:
            self._put_back(line)
            return
        if not line.strip():
            return
        command = command_of(line)
        if command is not None:  # a command is never a steer
            if command == "/help":
                self.help()
            elif command in COMMANDS or command in self.commands:
                self.term.line(self.term.c("2", f"  ({command} after this run; Ctrl-C cancels it)"))
                self._deferred.append(line)
            else:
                self.term.line(self.term.c("33", unknown(command)))
            return
        try:
            await self.client.request(
                "lovia/steer", {"runId": self.run_id, "message": line.strip()}
            )
        except RpcError as exc:
            if not self.live or exc.code == RUN_NOT_ACTIVE:  # the run ended meanwhile: a new prompt
                self._put_back(line)
            else:
                self.term.line(self.term.c("31", f"  (not steered: {exc})"))
            return
        self.term.line(self.term.c("2", "  (steer queued for the next turn)"))

    def help(self) -> None:
        for line in [*HELP.splitlines(), *self.command_help.splitlines()]:
            self.term.line(self.term.c("2", line))

    async def list_commands(self) -> dict[str, str]:
        """The server's commands (``lovia/commands``), kept for ``/help``; for completion."""
        listed = (await self.client.request("lovia/commands", {}))["commands"]
        self.commands, self.command_help = server_commands(listed), server_help(listed)
        return self.commands

    def _put_back(self, line: str) -> None:
        """A line for the next prompt (typed as the run ended)."""
        if line.strip():
            self._queued.append(line)

    async def _pump_input(self) -> None:
        while not self.finished.is_set():
            self._reading = True
            try:
                line = await self.read_line("")
            finally:
                self._reading = False
            if line is None:
                self._input_ended = True
                return
            await self.handle_line(line)

    async def next_line(self, prompt: str) -> str | None:
        """The next line for a new prompt: one typed during the last run (a command kept for
        after it) first; else what is typed into the prompt still open from that run (the
        same prompt: taking it down could drop keys typed meanwhile), else a new prompt's."""
        if not self._queued and self._carried is not None:
            carried, self._carried = self._carried, None
            try:  # its line is put back when it comes; a quit cancels this wait (and it)
                await asyncio.wait({carried})
            except asyncio.CancelledError:
                carried.cancel()
                raise
        if self._queued:
            return self._queued.popleft()
        if self._input_ended:
            return None
        return await self.read_line(prompt)

    async def _follow(self) -> str:
        reader, self._carried = self._carried, None  # the open prompt reads for this run too
        if reader is not None and reader.done():
            reader = None
        if reader is None and self.interactive:
            reader = asyncio.get_running_loop().create_task(self._pump_input())
        try:
            await self.finished.wait()
        finally:
            if reader is not None:
                keep = self.prompt_stays_open()
                if keep and self.finished.is_set() and self._reading and not reader.done():
                    # The run ended while the prompt is open: keep it open (taking it down
                    # could drop keys typed meanwhile); its line starts the next run.
                    self._carried = reader
                else:  # quitting, or a line is being handled: let that finish
                    if reader.done() or self._reading:
                        reader.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await reader
            self._queued.extendleft(reversed([x for x in self._deferred if x.strip()]))
            self._deferred.clear()
        return self.status

    def cancel(self) -> None:
        """Ask the server to stop the live run (once); it ends ``cancelled``."""
        if not self.live or self.cancelling or self.run_id is None:
            return
        self.cancelling = True
        self.term.line(self.term.c("33", "cancelling… (Ctrl-C again to quit)"))
        self._spawn(self._send_cancel(self.run_id))

    async def _send_cancel(self, run_id: str) -> None:
        with contextlib.suppress(RpcError, ConnectionError):
            await self.client.request("lovia/cancel", {"runId": run_id})

    def stop_tasks(self) -> None:
        for task in [*self._tasks, *([self._carried] if self._carried else [])]:
            task.cancel()

    async def run(self, prompt: str, cwd: Path) -> str:
        self.finished.clear()
        self.cancelling = False
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
        self.cancelling = False
        self._started_seq = 0
        self.run_id = run_id
        self.term.line(self.term.c("2", f"resuming run {run_id}"))
        try:
            result = await self.client.request("lovia/resume", {"runId": run_id})
        except RpcError:
            self.run_id = None  # nothing is live: no "stopped where it stands" on the way out
            raise
        self.session_id = result["sessionId"]
        return await self._follow()


def _demo_folder() -> Path:
    root = Path(tempfile.mkdtemp(prefix="lovia-demo-"))
    (root / "README.md").write_text(
        "# my project\n\nthis project does things.\nTODO: write the docs\n"
    )
    (root / "app.py").write_text('print("hello")\n')
    return root


def _stdin_fd() -> int:
    try:
        return sys.stdin.fileno()
    except (AttributeError, ValueError, OSError):  # closed, or replaced by a non-file
        return -1


def _log_path(args: argparse.Namespace, root: Path, temporary: bool) -> Path:
    if args.log_file:
        return Path(args.log_file).expanduser()
    from lovia_server.protocol.settings import default_state_dir

    state = Path(args.state_dir).expanduser() if args.state_dir else None
    if state is None:
        state = default_state_dir(None if temporary else root)
    return state / "chat-server.log"


def _open_log(path: Path) -> IO[bytes] | None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return path.open("wb")
    except OSError:
        return None


class ChatCommand:
    """The command around a session: the server, the terminal, the keys and the clean-up."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.temporary: Path | None = None
        self.quitting = asyncio.Event()
        self.chat: ChatSession | None = None
        self.client: StdioClient | None = None
        self.term = Terminal(sys.stdout, color=sys.stdout.isatty() and "NO_COLOR" not in os.environ)

    # ------------------------------------------------------------------ signals

    def on_interrupt(self) -> None:
        """Ctrl-C: cancel the live run; again (or with no run) quit; a third kills the server."""
        if self.quitting.is_set():
            if self.client is not None:
                self.client.kill()
            return
        if self.chat is not None and self.chat.live and not self.chat.cancelling:
            self.chat.cancel()
            return
        self.quit()

    def quit(self) -> None:
        if not self.quitting.is_set():
            self.quitting.set()

    def _install_signals(self) -> None:
        loop = asyncio.get_running_loop()
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signal.SIGINT, self.on_interrupt)
            loop.add_signal_handler(signal.SIGTERM, self.quit)
            loop.add_signal_handler(signal.SIGHUP, self.quit)

    # ------------------------------------------------------------------ main

    async def main(self) -> int:
        self._install_signals()
        try:
            work = asyncio.get_running_loop().create_task(self._work())
            quitting = asyncio.get_running_loop().create_task(self.quitting.wait())
            await asyncio.wait({work, quitting}, return_when=asyncio.FIRST_COMPLETED)
            quitting.cancel()
            if not work.done():
                work.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await work
                return 130
            return work.result()
        finally:
            await self._close()

    async def _close(self) -> None:
        if self.chat is not None:
            if self.chat.live:
                self.term.line(self.term.c("2", "(quitting: the run is stopped where it stands)"))
            self.chat.stop_tasks()
        if self.client is not None:
            await self.client.close()
        if self.temporary is not None:
            await asyncio.to_thread(shutil.rmtree, self.temporary, True)

    async def _work(self) -> int:
        args = self.args
        if args.demo and not args.workspace:
            self.temporary = root = await asyncio.to_thread(_demo_folder)
        else:
            root = await asyncio.to_thread(Path(args.workspace or os.getcwd()).resolve)
        term = self.term
        term.root = root
        term.resume_hint = self.temporary is None
        settings: dict[str, Any] = {}
        if args.demo:
            settings["agent"] = "lovia:demo"
            settings["permissions"] = {"write": "ask"}
        elif args.agent:
            settings["agent"] = args.agent
        if args.model:
            settings["model"] = args.model
        init: dict[str, Any] = {
            "protocolVersion": 1,
            "client": "cli",
            "approvals": "events",
        }
        if args.untrusted:
            init["trusted"] = False
        if args.state_dir:
            init["stateDir"] = args.state_dir
        elif self.temporary is not None:
            init["stateDir"] = str(root / ".lovia-state")
        log_path = _log_path(args, root, self.temporary is not None)
        log = None if args.verbose else await asyncio.to_thread(_open_log, log_path)
        env = {"LOVIA_LOG_LEVEL": "INFO"} if args.verbose else None
        stderr: IO[bytes] | int = log if log is not None else asyncio.subprocess.DEVNULL
        interactive = stdin_is_tty()
        reader = ChatInput(term, _stdin_fd(), tty=interactive)
        reader.start(COMMANDS, self.on_interrupt)

        async def on_event(event: dict[str, Any]) -> None:
            if self.chat is not None:
                await self.chat.on_event(event)

        try:
            self.client = client = StdioClient(
                on_event=on_event,
                settings=settings,
                env=env,
                stderr=None if args.verbose else stderr,
            )
            self.chat = chat = ChatSession(
                client,
                term,
                auto_approve=args.yes,
                read_line=reader.read,
                interactive=interactive,
                prompt_stays_open=lambda: reader.editor is not None,
            )
            await client.start(root, init)
            banner = f"lovia chat in {root}"
            if args.demo:
                banner += " — demo model (offline, scripted: it does the same thing every time)"
            term.line(term.c("2", banner))
            status_now = await client.request("lovia/status", {})
            notice = sandbox_notice(status_now)
            if notice:
                term.line(term.c("33", notice))
            listed = instructions_notice(status_now)
            if listed:
                term.line(term.c("2", listed))
            reader.add_commands(await chat.list_commands())
            status = await self._converse(chat, root)
        except RpcError as exc:
            message, hint = describe_error(exc, args)
            term.line(printable(f"error: {message}" + (f"\n  hint: {hint}" if hint else "")))
            status = "failed"
        except ConnectionError:
            where = "run with --verbose to see why" if log is None else f"its log: {log_path}"
            term.line(f"error: the lovia server stopped unexpectedly\n  hint: {where}")
            status = "failed"
        finally:
            reader.close()
            if log is not None:
                log.close()
        return {"completed": 0, "cancelled": 130}.get(status, 1)

    async def _converse(self, chat: ChatSession, root: Path) -> str:
        args, term = self.args, self.term
        if args.resume is not None:
            status = await chat.resume(args.resume or None)
            if not chat.interactive:
                return status
            # In a terminal the resumed run is part of the conversation: the chat goes on.
        elif args.prompt or args.demo:
            status = await chat.run(" ".join(args.prompt) or DEMO_PROMPT, root)
            if args.prompt or not chat.interactive:
                return status
            # --demo without a prompt: after its script, a terminal chat goes on.
        term.line(
            term.c("2", "type a message; /help lists commands; Ctrl-C cancels a run, twice quits")
        )
        while True:
            line = await chat.next_line("> ")
            if line is None:
                return "completed"  # each run's outcome was shown; leaving is not a failure
            command = command_of(line)
            if command in ("/exit", "/quit"):
                return "completed"
            if command == "/help":
                chat.help()
            elif command == "/resume":
                await chat.resume(None)
            elif command == "/new":
                chat.session_id = None
                term.line(term.c("2", "(a new session: the next message starts afresh)"))
                first = line.split(maxsplit=1)[1:]  # /new with a message: it starts the session
                if first and first[0].strip():
                    await chat.run(first[0].strip(), root)
            elif command is not None and command not in chat.commands:
                term.line(term.c("33", unknown(command)))
            elif line.strip():
                await chat.run(line.strip(), root)


def sub_main(argv: list[str] | None = None, *, prog: str = "lovia chat") -> int:
    args = parse_chat_args(argv, prog)
    try:
        return asyncio.run(ChatCommand(args).main())
    except KeyboardInterrupt:
        return 130


__all__ = ["ChatSession", "describe_error", "instructions_notice", "sandbox_notice", "sub_main"]
