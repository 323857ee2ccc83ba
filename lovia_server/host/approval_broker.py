"""The approval broker: a tool call that needs the user's yes waits here until it is answered.

An answer comes from ``lovia/approve`` (the client), the editor's own approval UI (an
``EditorPort`` that ``asks_approvals``), a session rule an earlier "always" left, the timeout,
or a cancel; whichever comes first settles the call. Approved edits may carry the user's own
version of the files (reviewed edits), which the call then writes instead of its proposal.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from lovia import events
from lovia.tools.base import Tool
from lovia.workspace.protected import protected_warning
from lovia_server import protocol as p
from lovia_server.host.approval_answer import (
    CANCELLED_ANSWER,
    TIMED_OUT_ANSWER,
    ApprovalAnswer,
    ReviewedFile,
)
from lovia_server.host.payloads import (
    APPROVAL_OPTIONS,
    PROTECTED_OPTIONS,
    approval_command,
    approval_subject,
    judged_paths,
    protected_targets,
    tool_kind,
    tool_locations,
    tool_source,
    tool_title,
    workspace_policy,
)
from lovia_server.host.plan_runs import refuse_approval
from lovia_server.host.ports import EditorPort, WorkspacePort
from lovia_server.host.run_controller import CallInfo, RunController, report_progress, short_id
from lovia_server.protocol import (
    ApprovalAction,
    ApprovalChoice,
    ApprovalOutcome,
    ApprovalRequested,
    ApprovalResolved,
    FileDiff,
)

logger = logging.getLogger("lovia_server.host.supervisor")

SessionRules = dict[str, dict[str, Literal["allow", "reject"]]]


@dataclass
class PendingApproval:
    """An approval waiting for its answer. Its one future is the run's own (the loop waits on
    ``event.decision()``); :meth:`settle` resolves it with the answer, whoever gives it."""

    approval_id: str
    subject: str
    event: events.ApprovalRequired
    payload: ApprovalRequested
    answer: ApprovalAnswer | None = None
    decided: asyncio.Future[bool] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.decided = self.event.decision()

    @property
    def settled(self) -> bool:
        return self.answer is not None or self.decided.done()

    def settle(self, answer: ApprovalAnswer) -> bool:
        """Answer the approval; False when it already was (the first answer wins)."""
        if self.settled:
            return False
        self.answer = answer
        answer.apply(self.event)
        return True


class ToolCallSide(Protocol):
    """What an approval needs from the run's stream: the call shown, its diff, and the turn's
    restore point taken before an allowed call runs (the event projection)."""

    def announce(
        self, ctl: RunController, call_id: str, name: str, arguments: str, tool: Tool | None
    ) -> CallInfo: ...

    async def preview(self, ctl: RunController, info: CallInfo) -> list[FileDiff]: ...

    async def checkpoint(self, ctl: RunController, tools: list[Tool | None]) -> None: ...


class ApprovalBroker:
    """Pending approvals of live runs (on their controllers) and the session rules."""

    def __init__(
        self,
        *,
        editor: EditorPort,
        workspace: WorkspacePort,
        timeout: Callable[[], float | None],
    ) -> None:
        self.editor = editor
        self.workspace = workspace
        self.approval_timeout = timeout
        self.session_rules: SessionRules = {}

    async def ask(
        self, ctl: RunController, ev: events.ApprovalRequired, calls: ToolCallSide
    ) -> None:
        """Settle the call's approval: by a session rule, or by asking (the client's
        ``lovia/approve``, the editor's own UI, or the timeout)."""
        call = ev.call
        info = calls.announce(ctl, call.id, call.name, call.arguments, ev.tool)
        if ctl.spec.plan:
            refuse_approval(ev)  # plan mode never asks: no card, the model is told why
            info.declined = True
            return
        subject = approval_subject(info.tool, call.name, info.args, ctl.spec.root)
        approval_id = short_id("ap")
        payload = await self._approval_payload(ctl, info, approval_id, call.id, calls)
        ctl.log.emit(payload)
        # a change to protected paths is never settled by an earlier "always"
        protected = payload.warning is not None
        rule = None if protected else self.session_rules.get(ctl.session_id, {}).get(subject)
        pending = PendingApproval(approval_id, subject, ev, payload)
        if rule is not None:
            decision = ApprovalChoice.ALLOW_ONCE if rule == "allow" else ApprovalChoice.REJECT_ONCE
            pending.settle(ApprovalAnswer(decision, by="policy"))
        else:
            await self._wait(ctl, pending, protected)
        answer = pending.answer or CANCELLED_ANSWER
        outcome: ApprovalOutcome = "timed_out" if answer is TIMED_OUT_ANSWER else answer.outcome
        if outcome == "allowed":
            await calls.checkpoint(ctl, [info.tool])
            self._show_review(info, answer)
        else:
            info.declined = True
        ctl.log.emit(
            ApprovalResolved(
                approval_id=approval_id,
                outcome=outcome,
                by=answer.by,
                decision=answer.decision if outcome in ("allowed", "rejected") else None,
                edited=True if outcome == "allowed" and answer.edits else None,
            )
        )

    async def _wait(self, ctl: RunController, pending: PendingApproval, protected: bool) -> None:
        """Wait for the run's approval future (settled by ``lovia/approve``, the editor's own
        UI or a cancel) until the timeout; remember an "always" answer for the session."""
        ctl.approvals[pending.approval_id] = pending
        report_progress(
            self.editor, "report", ctl.run_id, f"Waiting for approval: {pending.payload.title}"
        )
        asker: asyncio.Task[None] | None = None
        if self.editor.asks_approvals:
            asker = asyncio.get_running_loop().create_task(self._ask_editor(pending))
        try:
            await asyncio.wait_for(asyncio.shield(pending.decided), self.approval_timeout())
        except TimeoutError:
            pending.settle(TIMED_OUT_ANSWER)
        finally:
            ctl.approvals.pop(pending.approval_id, None)
            if asker is not None:
                asker.cancel()
        answer = pending.answer
        if answer is not None and answer.decision.always and not answer.cancelled and not protected:
            rules = self.session_rules.setdefault(ctl.session_id, {})
            rules[pending.subject] = "allow" if answer.decision.allows else "reject"

    @staticmethod
    def _show_review(info: CallInfo, answer: ApprovalAnswer) -> None:
        """An approved edited version replaces the proposal in the call's result diff (the
        call itself gets it with the answer)."""
        if not answer.edits:
            return
        applied = {f.path: f.applied for f in answer.edits}
        info.diff = [
            d.model_copy(update={"new_text": applied.get(d.path, d.new_text)})
            for d in info.diff or []
        ]

    async def _ask_editor(self, pending: PendingApproval) -> None:
        """Ask through the editor's own prompt; a prompt the user dismissed (no answer) leaves
        the approval waiting, to be asked again (:meth:`ask_again`), answered with
        ``lovia/approve``, or settled by the timeout or a cancel."""
        if pending.settled:
            return
        try:
            decision = await self.editor.ask_approval(pending.payload)
        except Exception:
            logger.warning("approval.ask_failed", exc_info=True)
            return
        if decision is not None:
            pending.settle(ApprovalAnswer(decision, by="editor"))

    def waiting(self, runs: list[RunController]) -> list[PendingApproval]:
        """The approvals still waiting for an answer, oldest run first."""
        return [a for ctl in runs for a in ctl.approvals.values() if not a.settled]

    async def ask_again(self, runs: list[RunController]) -> None:
        """Ask the editor, one prompt after another, about every approval still waiting (a
        prompt the user dismissed, or one an editor dropped without answering: the first
        answer to any of its prompts settles it)."""
        for pending in self.waiting(runs):
            await self._ask_editor(pending)

    async def _approval_payload(
        self,
        ctl: RunController,
        info: CallInfo,
        approval_id: str,
        call_id: str,
        calls: ToolCallSide,
    ) -> ApprovalRequested:
        name, args, kind = info.name, info.args, tool_kind(info.tool)
        title = tool_title(info.tool, name, args)
        locations = tool_locations(info.tool, args, ctl.spec.root)
        paths = [loc["path"] for loc in locations]
        diff: list[FileDiff] | None = None
        command = approval_command(info.tool, args)
        if kind == "edit":
            if info.diff is None:
                info.diff = await calls.preview(ctl, info)
            # Without a preview an edit is assumed to change an existing file.
            exists = any(d.old_text is not None for d in info.diff) or not info.diff
            action: ApprovalAction = "file.write" if exists else "file.create"
            target = paths[0] if paths else "a file"
            detail = f"The agent wants to {'edit' if exists else 'create'} {target}."
            if info.diff:
                diff = info.diff
            # "Always" is remembered per file (approval_subject), so only offered with one.
            options = APPROVAL_OPTIONS["file" if paths else "other"]
            command = None
        elif kind == "delete" and paths:
            action = "file.delete"
            detail = f"The agent wants to delete {paths[0]}."
            options = APPROVAL_OPTIONS["file"]
            command = None
        elif command is not None:
            action = "shell"
            cwd = args.get("cwd") or "."
            detail = f"Run in {cwd}: {command}"
            note = confinement_note(ctl.spec.agent.workspace, command)
            if note:
                detail += f"\n{note}"
            options = APPROVAL_OPTIONS["command"]
        elif kind in ("read", "search") and paths:
            root = ctl.spec.root
            outside = not any(Path(path).is_relative_to(root) for path in paths)
            action = "read.outside" if outside else "other"
            detail = f"The agent wants to read {paths[0]}."
            options = APPROVAL_OPTIONS["other"]
        else:
            action = "other"
            detail = f"The agent wants to call {name}."
            options = APPROVAL_OPTIONS["other"]
        policy = await workspace_policy(ctl.spec.agent.workspace)
        if action == "other" or (action == "read.outside" and tool_source(info.tool)):
            judged = judged_paths(policy, paths, ctl.spec.root)
            detail += f"\n{judged}" if judged else ""
        guarded = protected_targets(policy, info.tool, args, ctl.spec.root)
        return ApprovalRequested(
            approval_id=approval_id,
            tool_call_id=call_id,
            action=action,
            title=title,
            detail=detail,
            paths=paths,
            command=command,
            diff=diff,
            options=PROTECTED_OPTIONS if guarded else options,
            subagent=ctl.subagent,
            warning=protected_warning(guarded) if guarded else None,
        )

    def cancel_all(self, ctl: RunController) -> None:
        """Cancel every pending approval (a cancelled run, a stopping server)."""
        for pending in list(ctl.approvals.values()):
            pending.settle(CANCELLED_ANSWER)

    def approve(self, ctl: RunController, params: p.ApproveParams) -> p.ApproveResult:
        """``lovia/approve``: the typed params become the approval's answer, once."""
        pending = ctl.approvals.get(params.approval_id)
        if pending is None or pending.settled:
            raise p.ProtocolError(
                p.APPROVAL_NOT_FOUND,
                f"No pending approval {params.approval_id}",
                {
                    "approvalId": params.approval_id,
                    "outcome": "resolved" if pending else "unknown",
                },
            )
        answer = ApprovalAnswer(
            decision=params.decision,
            message=params.message,
            by="user",
            edits=self._reviewed_files(ctl, pending, params) if params.edits else None,
            shown=self._shown_files(ctl, pending) if params.decision.allows else None,
        )
        pending.settle(answer)
        return p.ApproveResult(
            approval_id=params.approval_id,
            outcome="allowed" if params.decision.allows else "rejected",
        )

    def _reviewed_files(
        self, ctl: RunController, pending: PendingApproval, params: p.ApproveParams
    ) -> tuple[ReviewedFile, ...] | None:
        """The approval's files with the user's text where given (None: nothing differs)."""
        diffs = pending.payload.diff or []
        if not params.decision.allows:
            raise p.invalid_params("edits go with an allow decision", "edits")
        if not diffs or not self.workspace.can_review(ctl.spec):
            raise p.invalid_params("This approval has no edit preview that can be changed", "edits")
        by_path = {d.path: d for d in diffs}
        approved: dict[str, str] = {}
        for index, edit in enumerate(params.edits or []):
            if edit.path not in by_path:
                raise p.invalid_params(
                    f"{edit.path} is not a file of this approval", f"edits.{index}.path"
                )
            approved[edit.path] = edit.new_text
        files = tuple(
            ReviewedFile(d.path, d.old_text, d.new_text, approved.get(d.path, d.new_text))
            for d in diffs
        )
        return files if any(f.applied != f.proposed for f in files) else None

    def _shown_files(
        self, ctl: RunController, pending: PendingApproval
    ) -> tuple[ReviewedFile, ...] | None:
        """The card's files (its text and the proposal), for a run that can review them."""
        diffs = pending.payload.diff or []
        if not diffs or not self.workspace.can_review(ctl.spec):
            return None
        return tuple(ReviewedFile(d.path, d.old_text, d.new_text, d.new_text) for d in diffs)

    def forget_session(self, session_id: str) -> None:
        self.session_rules.pop(session_id, None)

    def rules_view(self) -> list[p.SessionRule]:
        return [
            p.SessionRule(session_id=sid, subject=subject, decision=decision)
            for sid, rules in self.session_rules.items()
            for subject, decision in rules.items()
        ]


def confinement_note(workspace: Any, command: str) -> str | None:
    """What the workspace's executor says approving ``command`` means (the sandbox: whether
    it gets the network), for the approval card."""
    config = getattr(workspace, "workspace", workspace)  # a session binding wraps its config
    note = getattr(getattr(config, "executor", None), "approval_note", None)
    if not callable(note):
        return None
    try:
        text = note(command)
    except Exception:
        return None
    return text if isinstance(text, str) and text else None


__all__ = [
    "CANCELLED_ANSWER",
    "TIMED_OUT_ANSWER",
    "ApprovalAnswer",
    "ApprovalBroker",
    "PendingApproval",
    "ToolCallSide",
    "confinement_note",
]
