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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from lovia import events
from lovia.tools.base import Tool
from lovia.workspace.protected import protected_warning
from lovia_server import protocol as p
from lovia_server.host.payloads import (
    APPROVAL_OPTIONS,
    PROTECTED_OPTIONS,
    approval_command,
    approval_subject,
    protected_targets,
    tool_kind,
    tool_locations,
    tool_title,
    workspace_policy,
)
from lovia_server.host.ports import EditorPort, WorkspacePort
from lovia_server.host.reviewed_edits import ReviewedFile
from lovia_server.host.run_controller import CallInfo, RunController, report_progress, short_id
from lovia_server.protocol import (
    ApprovalAction,
    ApprovalBy,
    ApprovalChoice,
    ApprovalOutcome,
    ApprovalRequested,
    ApprovalResolved,
    FileDiff,
)

logger = logging.getLogger("lovia_server.host.supervisor")

SessionRules = dict[str, dict[str, Literal["allow", "reject"]]]


@dataclass(frozen=True)
class ApprovalAnswer:
    """An approval's answer, one shape from ``lovia/approve`` (or the editor, or a cancel) to the
    run: the wire's ``ApprovalChoice``, the message a rejection tells the model, and who
    answered."""

    decision: ApprovalChoice
    message: str | None = None
    by: ApprovalBy = "user"
    cancelled: bool = False
    # What the user approved instead of the proposal (``lovia/approve`` edits), per file.
    edits: tuple[ReviewedFile, ...] | None = None

    @property
    def outcome(self) -> ApprovalOutcome:
        if self.cancelled:
            return "cancelled"
        return "allowed" if self.decision.allows else "rejected"

    def apply(self, ev: events.ApprovalRequired) -> None:
        """Let the waiting tool call run, or decline it with the message."""
        if self.outcome == "allowed":
            ev.approve()
        else:
            ev.reject(self.message)


CANCELLED_ANSWER = ApprovalAnswer(ApprovalChoice.REJECT_ONCE, cancelled=True)


@dataclass
class PendingApproval:
    approval_id: str
    tool_call_id: str
    subject: str
    future: asyncio.Future[ApprovalAnswer]
    payload: ApprovalRequested


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
        subject = approval_subject(info.tool, call.name, info.args, ctl.spec.root)
        approval_id = short_id("ap")
        payload = await self._approval_payload(ctl, info, approval_id, call.id, calls)
        ctl.log.emit(payload)
        # a change to protected paths is never settled by an earlier "always"
        protected = payload.warning is not None
        rule = None if protected else self.session_rules.get(ctl.session_id, {}).get(subject)
        answer: ApprovalAnswer
        outcome: ApprovalOutcome
        if rule is not None:
            decision = ApprovalChoice.ALLOW_ONCE if rule == "allow" else ApprovalChoice.REJECT_ONCE
            answer = ApprovalAnswer(decision, by="policy")
            outcome = answer.outcome
        else:
            loop = asyncio.get_running_loop()
            future: asyncio.Future[ApprovalAnswer] = loop.create_future()
            ctl.approvals[approval_id] = PendingApproval(
                approval_id, call.id, subject, future, payload
            )
            report_progress(
                self.editor, "report", ctl.run_id, f"Waiting for approval: {payload.title}"
            )
            asker: asyncio.Task[None] | None = None
            if self.editor.asks_approvals:
                asker = loop.create_task(self._ask_editor(payload, future))
            timeout = self.approval_timeout()
            try:
                answer = await asyncio.wait_for(asyncio.shield(future), timeout)
                outcome = answer.outcome
            except TimeoutError:
                answer = ApprovalAnswer(
                    ApprovalChoice.REJECT_ONCE, "The approval timed out.", by="policy"
                )
                outcome = "timed_out"
            finally:
                ctl.approvals.pop(approval_id, None)
                if asker is not None:
                    asker.cancel()
            if answer.decision.always and not answer.cancelled and not protected:
                rules = self.session_rules.setdefault(ctl.session_id, {})
                rules[subject] = "allow" if answer.decision.allows else "reject"
        if outcome == "allowed":
            await calls.checkpoint(ctl, [info.tool])
        self._take_review(ctl, info, call.id, answer if outcome == "allowed" else None)
        answer.apply(ev)
        if outcome != "allowed":
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

    def _take_review(
        self, ctl: RunController, info: CallInfo, call_id: str, answer: ApprovalAnswer | None
    ) -> None:
        """An approved edited version replaces the proposal: the call writes it, and its result
        diff shows it."""
        if answer is None or not answer.edits:
            return
        self.workspace.review(call_id, list(answer.edits))
        applied = {f.path: f.applied for f in answer.edits}
        info.diff = [
            d.model_copy(update={"new_text": applied.get(d.path, d.new_text)})
            for d in info.diff or []
        ]

    async def _ask_editor(
        self, payload: ApprovalRequested, future: asyncio.Future[ApprovalAnswer]
    ) -> None:
        try:
            decision = await self.editor.ask_approval(payload)
        except Exception:
            logger.warning("approval.ask_failed", exc_info=True)
            return
        if not future.done():
            future.set_result(ApprovalAnswer(decision or ApprovalChoice.REJECT_ONCE, by="editor"))

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
            if not pending.future.done():
                pending.future.set_result(CANCELLED_ANSWER)

    def approve(
        self,
        ctl: RunController,
        approval_id: str,
        decision: ApprovalChoice,
        message: str | None,
        edits: list[p.EditedFile] | None = None,
    ) -> p.ApproveResult:
        pending = ctl.approvals.get(approval_id)
        if pending is None or pending.future.done():
            raise p.ProtocolError(
                p.APPROVAL_NOT_FOUND,
                f"No pending approval {approval_id}",
                {"approvalId": approval_id, "outcome": "resolved" if pending else "unknown"},
            )
        reviewed = self._reviewed_files(ctl, pending, decision, edits) if edits else None
        pending.future.set_result(ApprovalAnswer(decision, message, "user", edits=reviewed))
        return p.ApproveResult(
            approval_id=approval_id, outcome="allowed" if decision.allows else "rejected"
        )

    def _reviewed_files(
        self,
        ctl: RunController,
        pending: PendingApproval,
        decision: ApprovalChoice,
        edits: list[p.EditedFile],
    ) -> tuple[ReviewedFile, ...] | None:
        """The approval's files with the user's text where given (None: nothing differs)."""
        diffs = pending.payload.diff or []
        if not decision.allows:
            raise p.invalid_params("edits go with an allow decision", "edits")
        if not diffs or not self.workspace.can_review(ctl.spec):
            raise p.invalid_params("This approval has no edit preview that can be changed", "edits")
        by_path = {d.path: d for d in diffs}
        approved: dict[str, str] = {}
        for index, edit in enumerate(edits):
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
    "ApprovalAnswer",
    "ApprovalBroker",
    "PendingApproval",
    "ToolCallSide",
    "confinement_note",
]
