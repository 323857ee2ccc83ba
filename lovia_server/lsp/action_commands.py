"""The code actions' commands (``workspace/executeCommand``) and what the menu needs to know.

A command answers as soon as its run is started (``{runId, sessionId}``) or its prompt is
settled; the run goes on and is shown as the client can show it (``lovia/event`` for lovia's own
clients, the plain conversation of :mod:`~lovia_server.lsp.editor_port` otherwise).
*Ask about this…* and *Tell the agent…* take the text as ``prompt`` / ``message`` where the
client can ask for one (the VS Code panel, a recipe); without it they offer a few common
questions and instructions through ``window/showMessageRequest``, the one input every LSP
client has.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

from lovia.workspace.paths import relative_to_root
from lovia.workspace.policy import WorkspacePolicy
from lovia.workspace.protected import protects
from lovia_server import protocol as p
from lovia_server.lsp import code_actions as ca
from lovia_server.lsp.approval_prompt import safe_first
from lovia_server.lsp.handlers import run as start_run

if TYPE_CHECKING:
    from lovia_server.lsp.server_runtime import ServerRuntime

Json = Any  # a decoded JSON value (the edge where the wire is untyped)

logger = logging.getLogger("lovia_server.lsp.actions")

CONTEXT_LINES = 30
"""Lines around the problem a *Fix this problem* run is shown (the file is there to read)."""

PROMPT_AFTER = 0.2
"""Seconds between a command's answer and the prompt it opens: eglot runs a server request
that reaches it while it waits for its own request's answer inside that wait, and drops the
prompt when the wait times out (10 s)."""

MAX_JUDGED = 4096
"""Files whose judgement is remembered (then the memory starts over)."""

QUESTIONS = (
    "What does this do?",
    "Why could this fail?",
    "How can this be simpler?",
)
INSTRUCTIONS = (
    "Stop and summarise what you did",
    "Keep the change minimal",
    "Explain your plan before editing",
)


class ActionDesk:
    """Judges which files get actions, and serves the actions' commands."""

    def __init__(self, rt: ServerRuntime) -> None:
        self.rt = rt
        self._policies: dict[Path, WorkspacePolicy] = {}
        self._policy_key: tuple[object, tuple[Path, ...]] | None = None
        self._judged: dict[str, bool] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    # ------------------------------------------------------------------ the menu

    def _policy(self, root: Path) -> WorkspacePolicy:
        policy = self._policies.get(root)
        if policy is None:
            policy = self._policies[root] = self.rt.workspace.config_for(root).policy
        return policy

    def allowed(self, uri: str) -> bool:
        """A file of the workspace the agent may read and whose writes are not protected
        (remembered per file until the settings or the folders change: judging resolves the
        path, which touches the disk)."""
        policy_key = (self.rt.server.settings, tuple(self.rt.server.folders))
        if policy_key != self._policy_key:
            self._policies.clear()
            self._judged.clear()
            self._policy_key = policy_key
        judged = self._judged.get(uri)
        if judged is None:
            if len(self._judged) >= MAX_JUDGED:
                self._judged.clear()
            judged = self._judged[uri] = self._judge(uri)
        return judged

    def _judge(self, uri: str) -> bool:
        path = ca.uri_path(uri)
        if path is None:
            return False
        root = self.rt.workspace._inside(path)
        if root is None:
            return False
        policy = self._policy(root)
        rel = relative_to_root(root, path)
        if policy.decide_path(rel=rel, abs_posix=path.as_posix(), op="read") == "deny":
            return False
        return rel is None or not protects(policy, root, rel)

    def live(self) -> ca.LiveState:
        supervisor = self.rt.core.supervisor
        top = [r for r in supervisor.live_runs() if r.parent_run_id is None]
        latest = max(top, key=lambda r: r.started_at) if top else None
        runs = supervisor.runs.all()
        waiting = supervisor.approvals.waiting(runs)
        answerable = None
        if waiting and self.rt.editor.plain:
            run_id, first = next(
                (ctl.run_id, a) for ctl in runs for a in ctl.approvals.values() if not a.settled
            )
            answerable = ca.WaitingApproval(
                run_id=run_id,
                approval_id=first.approval_id,
                title=first.payload.title,
                choices=tuple(
                    (o.label, o.decision.value) for o in safe_first(first.payload.options)
                ),
            )
        return ca.LiveState(
            run_id=latest.run_id if latest is not None else None,
            approvals_waiting=len(waiting),
            answerable=answerable,
        )

    def actions(self, params: Json) -> list[dict[str, Any]]:
        return ca.code_actions(params, allowed=self.allowed, live=self.live())

    # ------------------------------------------------------------------ the commands

    async def execute(self, command: str, raw: Json) -> Json:
        """Serve one command. It answers without waiting on the user: a prompt it opens
        (an approval asked again, a question to pick) is answered in the background, and what
        follows the answer (the run, the steer) starts then. Some editors block while a
        command they sent is unanswered (eglot), and a prompt dismissed without a reply would
        hold the command for ever."""
        args = raw if isinstance(raw, dict) else {}
        supervisor = self.rt.core.supervisor
        if command == ca.CMD_APPROVALS:
            runs = supervisor.runs.all()
            waiting = len(supervisor.approvals.waiting(runs))
            if waiting:
                self._background(supervisor.approvals.ask_again(runs))
            else:
                self.rt.editor.show("lovia: no approval is waiting")
            return {"asked": waiting}
        if command == ca.CMD_ANSWER:
            answer = p.ApproveParams.model_validate(args)
            return (await supervisor.approvals.approve(answer)).to_wire()
        if command == ca.CMD_CANCEL:
            return (await supervisor.cancel(_run_id(args))).to_wire()
        if command == ca.CMD_TELL:
            run_id = _run_id(args)
            message = args.get("message")
            if isinstance(message, str) and message.strip():
                return (await supervisor.steer(run_id, message)).to_wire()

            async def tell() -> None:
                chosen = await self._choose("Tell the agent:", INSTRUCTIONS)
                if chosen:
                    await supervisor.steer(run_id, chosen)

            self._background(tell())
            return None
        uri = args.get("uri")
        if not isinstance(uri, str) or not self.allowed(uri):
            raise p.ProtocolError(
                p.INVALID_PARAMS,
                "lovia takes no action on this file (outside the workspace, denied or protected)",
                {"field": "uri", "hint": "Change protected and denied files by hand."},
            )
        place = _place(uri, args.get("range"))
        rel = self._shown_path(uri)
        if command == ca.CMD_FIX:
            prompt, context = _fix(uri, rel, args, place)
        elif command == ca.CMD_EXPLAIN:
            prompt, context = f"Explain this code of {rel}.", [_selection(uri, place)]
        elif command == ca.CMD_TESTS:
            prompt = f"Write tests for this code of {rel}, where the project keeps its tests."
            context = [_selection(uri, place)]
        elif command == ca.CMD_ASK:
            context = [_selection(uri, place)]
            question = args.get("prompt")
            if not isinstance(question, str) or not question.strip():

                async def ask() -> None:
                    chosen = await self._choose(f"Ask about {rel}:", QUESTIONS)
                    if chosen:
                        await start_run(self.rt, p.RunParams(prompt=chosen, context=context))

                self._background(ask())
                return None
            prompt = question
        else:
            raise p.invalid_params(f"Unknown lovia action {command}", "command")
        params = p.RunParams(prompt=prompt, context=context)
        return (await start_run(self.rt, params)).to_wire()

    def _background(self, work: Coroutine[Any, Any, Any]) -> None:
        async def guarded() -> None:
            try:
                await asyncio.sleep(PROMPT_AFTER)  # the command's answer goes first
                await work
            except Exception as exc:
                logger.warning("action.failed", exc_info=True)
                self.rt.editor.show(f"lovia: {exc}", lsp.MessageType.Error)
            finally:
                work.close()  # never started when cancelled during the pause

        task = asyncio.get_running_loop().create_task(guarded())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _choose(self, message: str, choices: tuple[str, ...]) -> str | None:
        response = await self.rt.server.window_show_message_request_async(
            lsp.ShowMessageRequestParams(
                type=lsp.MessageType.Info,
                message=f"lovia: {message}",
                actions=[lsp.MessageActionItem(title=c) for c in choices],
            )
        )
        if response is None:
            return None
        title = response.title if hasattr(response, "title") else str(response)
        return title if title in choices else None

    def _shown_path(self, uri: str) -> str:
        path = ca.uri_path(uri)
        assert path is not None  # allowed() judged it
        root = self.rt.workspace._inside(path)
        return path.relative_to(root).as_posix() if root is not None else str(path)


def _run_id(args: dict[str, Any]) -> str:
    run_id = args.get("runId")
    if not isinstance(run_id, str) or not run_id:
        raise p.invalid_params("runId is required", "runId")
    return run_id


def _place(uri: str, raw: Any) -> p.Range:
    try:
        return p.Range.model_validate(raw)
    except Exception:
        return p.Range(start=p.Position(), end=p.Position())


def _selection(uri: str, place: p.Range) -> p.ContextItem:
    """The range's text, or the line at the cursor for an empty range."""
    end = place.end
    if place.start == end:
        end = p.Position(line=place.start.line + 1, character=0)
    return p.ContextItem(uri=uri, range=p.Range(start=place.start, end=end), kind="selection")


def _fix(
    uri: str, rel: str, args: dict[str, Any], place: p.Range
) -> tuple[str, list[p.ContextItem]]:
    problems: list[p.Problem] = []
    for raw in args.get("problems") or []:
        try:
            problems.append(p.Problem.model_validate(raw))
        except Exception:
            continue
    first = problems[0].range.start.line if problems and problems[0].range else place.start.line
    around = p.Range(
        start=p.Position(line=max(0, first - CONTEXT_LINES)),
        end=p.Position(line=first + CONTEXT_LINES + 1),
    )
    context = [p.ContextItem(uri=uri, range=around, kind="file")]
    if problems:
        listed = "; ".join(
            f"line {pr.range.start.line + 1 if pr.range else '?'}: "
            f"{pr.source + ': ' if pr.source else ''}{pr.message}"
            for pr in problems[:5]
        )
        prompt = f"Fix this problem in {rel} ({listed})."
        context.append(p.ContextItem(uri=uri, kind="problems", problems=problems))
    else:
        prompt = f"Fix the problem in this code of {rel}."
        context.append(_selection(uri, place))
    return prompt, context


__all__ = ["ActionDesk"]
