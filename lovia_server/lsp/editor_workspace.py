"""The editor's workspace as lovia sees it: folders + settings -> ACL, open-document overlay,
edits through the editor, one live workspace session per conversation.
"""

from __future__ import annotations

import asyncio
import codecs
import dataclasses
import logging
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

from lovia.agent import Agent
from lovia.run_context import current_tool_call
from lovia.tools.base import Tool
from lovia.tools.presentation import can_preview, preview_call
from lovia.workspace import LocalWorkspace, WorkspaceError
from lovia.workspace.editor_tools import EditorTools
from lovia.workspace.errors import FileChangedError
from lovia.workspace.paths import relative_to_root, resolve_path
from lovia.workspace.policy import WorkspacePolicy
from lovia.workspace.workspace import WorkspaceSessionBinding
from lovia_server import protocol as p
from lovia_server.host.acl import folder_config
from lovia_server.host.context_items import BuiltContext, ContextWorkspace, build_context
from lovia_server.host.editor_waits import (
    UNCONFIRMED_HINT,
    editor_file_timeout,
    unconfirmed_write,
)
from lovia_server.host.payloads import file_diffs
from lovia_server.host.reviewed_edits import reviewed_tools
from lovia_server.host.uris import path_uri, uri_to_path
from lovia_server.host.workspace_sessions import OutputListener, WorkspaceSessions, close_quietly
from lovia_server.lsp.declared_edits import buffer_shows, can_create, tell_created
from lovia_server.lsp.editor_intel import LspEditorIntel, offers
from lovia_server.lsp.text_edits import LineEdit, TextPosition, minimal_edits

if TYPE_CHECKING:
    from lovia_server.host.ports import RunSpec
    from lovia_server.lsp.client_state import LspClient

logger = logging.getLogger("lovia_server.workspace")

_BUFFER_CATCH_UP = 1.0
"""Seconds an edit waits for the editor's buffer to show the text it was computed on."""


class EditorOverlay:
    """Reads of files open in the editor return the editor's current (maybe unsaved) text,
    or what the agent last wrote to the file while the editor's buffer has not moved on since
    (a buffer not reloaded after a disk write, a ``didChange`` still on its way): never an
    older text than the agent's own write."""

    def __init__(self, server: LspClient) -> None:
        self.server = server
        self._written: dict[Path, tuple[int | None, str]] = {}

    def document(self, path: Path) -> Any:
        try:
            docs = self.server.workspace.text_documents
        except Exception:
            return None
        for doc in list(docs.values()):
            doc_path = uri_to_path(doc.uri)
            if doc_path is None:
                continue
            try:
                if doc_path.resolve() == path:
                    return doc
            except OSError:
                continue
        return None

    def open_paths(self) -> list[Path]:
        """The files open in the editor (resolved): a search asks :meth:`text_for` only
        about these, not about every file of a big tree."""
        try:
            docs = list(self.server.workspace.text_documents.values())
        except Exception:
            return []
        out: list[Path] = []
        for doc in docs:
            doc_path = uri_to_path(doc.uri)
            if doc_path is None:
                continue
            try:
                out.append(doc_path.resolve())
            except OSError:
                continue
        return out

    def text_for(self, path: Path) -> str | None:
        doc = self.document(path)
        if doc is None:
            self._written.pop(path, None)
            return None
        written = self._written.get(path)
        if written is not None:
            if written[0] == doc.version:
                return written[1]
            self._written.pop(path, None)  # the buffer moved on: it is the truth again
        source: str = doc.source
        return source

    def wrote(self, path: Path, text: str) -> None:
        """The agent wrote ``text`` to ``path``: until the buffer's version changes, reads
        see that text, not the buffer's older one."""
        doc = self.document(path)
        if doc is None or doc.source == text:
            self._written.pop(path, None)
        else:
            self._written[path] = (doc.version, text)

    def unsaved_under(self, root: Path) -> list[str]:
        """Files under ``root`` (relative, POSIX) the user changed in the editor without
        saving: edited since opened or saved, and different from the disk (a buffer that is
        only stale, e.g. not reloaded after the agent wrote the file, does not count)."""
        try:
            docs = list(self.server.workspace.text_documents.values())
        except Exception:
            return []
        edited = self.server.edited_uris
        out = []
        for doc in docs:
            if doc.uri not in edited:
                continue
            path = uri_to_path(doc.uri)
            if path is None:
                continue
            try:
                path = path.resolve()
                rel = path.relative_to(root)
            except (OSError, ValueError):
                continue
            try:
                on_disk: str | None = path.read_bytes().decode("utf-8")
            except FileNotFoundError:
                continue  # deleted on disk: nothing of the user's to keep there
            except (OSError, UnicodeDecodeError):
                on_disk = None
            if on_disk != doc.source:
                out.append(rel.as_posix())
        return sorted(out)


@dataclasses.dataclass(frozen=True)
class ReviewedBinding(WorkspaceSessionBinding):
    """The conversation's live session, its edit tools able to write the reviewed version an
    approval's answer carries."""

    def tools(self) -> list[Tool]:
        """The review policy on the edit tools, and the editor's tools around them: problems
        after an edit are reported for a reviewed version too."""
        editor = self.workspace.editor
        bare = dataclasses.replace(self.workspace, editor=None).tools()
        tools = reviewed_tools(bare, self._session)
        return editor.wrap(tools) if editor is not None else tools


class EditorWorkspace:
    def __init__(self, server: LspClient, *, on_output: OutputListener | None = None) -> None:
        self.server = server
        self.overlay = EditorOverlay(server)
        self.sessions = WorkspaceSessions(on_output)
        self.declined_calls: set[str] = set()
        self.intel = LspEditorIntel(server, self.overlay)
        self.plan_sessions: set[str] = set()
        """Conversations whose runs are in plan mode (the last ``lovia/run`` said so)."""

    # ------------------------------------------------------------------ folders

    def folders(self) -> list[Path]:
        return list(self.server.folders)

    def _inside(self, path: Path) -> Path | None:
        best: Path | None = None
        for folder in self.folders():
            inside = path == folder or path.is_relative_to(folder)
            if inside and (best is None or len(folder.parts) > len(best.parts)):
                best = folder
        return best

    def resolve_cwd(self, cwd: str | None) -> Path:
        folders = self.folders()
        if not folders:
            raise p.ProtocolError(
                p.PATH_OUTSIDE_WORKSPACE, "No workspace folder is open", {"field": "cwd"}
            )
        if cwd is None or not cwd.strip():
            return folders[0]
        raw = uri_to_path(cwd) if cwd.startswith("file:") else Path(cwd).expanduser()
        if raw is None:
            raise p.invalid_params(f"cwd must be a path or file: URI, got {cwd!r}", "cwd")
        path = (raw if raw.is_absolute() else folders[0] / raw).resolve()
        if self._inside(path) is None:
            raise p.ProtocolError(
                p.PATH_OUTSIDE_WORKSPACE,
                f"cwd {path} is outside every workspace folder",
                {"field": "cwd", "path": str(path)},
            )
        return path

    def root_for(self, cwd: Path) -> Path:
        return self._inside(cwd) or self.folders()[0]

    def unsaved_paths(self, root: Path) -> list[str]:
        """Files of ``root`` with unsaved editor changes (relative to it)."""
        return self.overlay.unsaved_under(root)

    # ------------------------------------------------------------------ policy

    def edit_mode(self) -> p.EditMode:
        """The setting, else the client's preference, else ``auto``: through the editor when
        it can apply edits (its undo stack and unsaved buffers stay in charge)."""
        wanted = self.server.settings.editMode
        if wanted == "auto":
            wanted = self.server.init_options.editMode or "auto"
        if wanted != "server" and self._can_apply_edits():
            return "workspaceEdit"
        return "server"

    def _can_apply_edits(self) -> bool:
        return self.server.client_supports("workspace.apply_edit")

    def _can_apply(self, capability: str) -> bool:
        return self.server.client_supports(capability)

    def config_for(self, root: Path, *, plan: bool = False) -> LocalWorkspace:
        settings = self.server.settings
        perms = settings.permissions
        preset = perms.preset if self.server.init_options.trusted else "readonly"
        trusted = self.server.init_options.trusted
        # A root outside every folder is a worktree run's (docs/worktrees.md): it sees none of
        # the folders, and its writes go to its own disk, not through the editor's buffers.
        isolated = self._inside(root) is None
        config = folder_config(
            root,
            [root] if isolated else self.folders(),
            perms,
            preset,
            agent=settings.agent if trusted else None,
            sandbox=settings.sandbox,
            plan=plan,
        )
        return dataclasses.replace(
            config,
            close_after_run=False,
            overlay=None if isolated else self.overlay,
            write_sink=None if isolated else self._write_sink,
            # the editor's language services see the folders, not a worktree's files
            editor=None if isolated else self.editor_tools(),
        )

    def editor_tools(self) -> EditorTools | None:
        """The editor's language intelligence, for a client that declared it answers
        ``lovia/editor/*`` (``None`` otherwise: no tools, nothing in the instructions)."""
        offered = offers(self.server.init_options.editorIntel)
        if not offered:
            return None
        return EditorTools(
            self.intel,
            offers=offered,
            diagnostics_after_edits=self.server.settings.diagnosticsAfterEdits,
        )

    def describe(self) -> list[p.FolderAcl]:
        out = []
        for folder in self.folders():
            policy = self.config_for(folder).policy
            out.append(
                p.FolderAcl(
                    uri=path_uri(folder),
                    path=str(folder),
                    preset=self.server.settings.permissions.preset
                    if self.server.init_options.trusted
                    else "readonly",
                    write=policy.write,
                    read_outside=policy.read_outside,
                    write_outside=policy.write_outside,
                    shell=policy.shell_default if policy.allow_shell else "deny",
                    denied_paths=list(policy.denied_paths),
                    protected_paths=list(policy.protected_paths),
                    path_rules=[
                        p.PathRuleView(pattern=r.pattern, action=r.action, ops=sorted(r.ops))
                        for r in policy.path_rules
                    ],
                    command_rules=[
                        p.CommandRuleView(pattern=r.pattern, decision=r.action)
                        for r in policy.command_rules
                    ],
                )
            )
        return out

    # ------------------------------------------------------------------ sessions

    async def session_for(self, session_id: str, root: Path) -> Any:
        """The conversation's live workspace session (rebuilt when the configuration changed)."""
        return await self.sessions.session(session_id, self._config(session_id, root))

    def _config(self, session_id: str, root: Path) -> LocalWorkspace:
        return self.config_for(root, plan=session_id in self.plan_sessions)

    async def attach(self, agent: Agent[Any], root: Path, session_id: str) -> Agent[Any]:
        """Bind the conversation's workspace to an agent that has none."""
        if agent.workspace is not None:
            return agent
        session = await self.session_for(session_id, root)
        binding = ReviewedBinding(workspace=self._config(session_id, root), _session=session)
        return agent.clone(workspace=binding)

    async def close_session(self, session_id: str) -> None:
        await self.sessions.close(session_id)

    async def aclose(self) -> None:
        await self.sessions.aclose()

    def settings_changed(self) -> None:
        """Sessions are rebuilt lazily: the next run compares its configuration."""

    # ------------------------------------------------------------------ reads and edits

    async def _read_full(self, root: Path, path: Path) -> str | None:
        text = self.overlay.text_for(path)
        if text is not None:
            return text
        return await asyncio.to_thread(_read_mentioned, path)

    async def preview(
        self, spec: RunSpec, tool: Tool | None, args: Mapping[str, Any]
    ) -> list[p.FileDiff]:
        """What an edit call would change before it happens (the approval diff): the tool's own
        preview against the run's workspace session, each diff with the file's ``uri``."""
        workspace = spec.agent.workspace
        if not can_preview(tool):
            return []
        if isinstance(workspace, WorkspaceSessionBinding):  # the conversation's live session
            diffs = await preview_call(tool, args, await workspace.open())
        elif isinstance(workspace, LocalWorkspace):  # cheap to open just for this
            session = await workspace.open()
            try:
                diffs = await preview_call(tool, args, session)
            finally:
                await close_quietly(session)
        else:  # no workspace, or a backend too costly to open for a preview
            return []
        return file_diffs(diffs)

    def declined(self, call_id: str) -> bool:
        return call_id in self.declined_calls

    def can_review(self, spec: RunSpec) -> bool:
        """Runs on the editor's workspace can (an agent bringing its own cannot)."""
        binding = spec.agent.workspace
        return isinstance(binding, ReviewedBinding)

    async def read_back(self, spec: RunSpec, path: str) -> str | None:
        """What a completed write left in ``path`` (in workspaceEdit mode the editor owns the
        text, so the preview stands)."""
        if self.edit_mode() == "workspaceEdit":
            return None
        try:
            return await asyncio.to_thread(Path(path).read_text, encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    async def _write_sink(self, path: Path, old_text: str | None, new_text: str) -> bool:
        """In ``workspaceEdit`` mode, apply writes through the editor (``workspace/applyEdit``)
        so they land in its buffers with undo; otherwise the session writes the disk."""
        if self.edit_mode() != "workspaceEdit":
            return False
        doc = self.overlay.document(path)
        plain = not self.server.init_options.present
        creating = old_text is None and not await asyncio.to_thread(path.exists)
        if creating and (plain or not can_create(self.server)):
            # No CreateFile for a client that did not declare it, nor for a plain one: the file
            # is written on disk and the editor told (it would apply nothing, or keep the text
            # in an unsaved buffer while the agent is told the file exists).
            asyncio.get_running_loop().create_task(tell_created(self.server, path))
            return False
        if doc is None and plain:
            # A plain client (no lovia handlers) would keep the edit of a file it has not open
            # in a hidden unsaved buffer: the disk is written instead.
            return False
        if doc is not None and old_text is not None and doc.source != old_text:
            doc = await self._buffer_holding(path, old_text)
        call = current_tool_call.get()
        title = f"{call.name if call else 'edit'} {path.name}"
        if creating:
            edits = [LineEdit(TextPosition(0, 0), TextPosition(0, 0), new_text)]
        else:
            edits = minimal_edits(doc.source if doc is not None else old_text or "", new_text)
        if self._can_apply("workspace.workspace_edit.document_changes"):
            annotate = self._can_apply("workspace.workspace_edit.change_annotation_support")
            annotation = (call.id if call is not None else "lovia") if annotate else None
            edit = _document_changes(path, doc, creating, edits, annotation, title)
        elif doc is not None:
            # A client without documentChanges (Neovim 0.7) gets plain changes, and only for
            # documents it has open: a file it has not open has no buffer to keep in step, and
            # such a client would leave the edit in a hidden unsaved buffer the server never sees.
            edit = lsp.WorkspaceEdit(changes={path_uri(path): [_text_edit(e) for e in edits]})
        else:
            return False
        # sent at once (the server's *_async wrapper would send only when awaited)
        future = self.server.jsonrpc.send_request_async(
            lsp.WORKSPACE_APPLY_EDIT,
            lsp.ApplyWorkspaceEditParams(edit=edit, label=f"lovia: {title}"),
        )
        limit = editor_file_timeout()
        try:
            result = await asyncio.wait_for(future, limit)
        except TimeoutError:
            raise WorkspaceError(unconfirmed_write(path, limit), hint=UNCONFIRMED_HINT) from None
        if not getattr(result, "applied", False):
            if call is not None:
                self.declined_calls.add(call.id)
            reason = getattr(result, "failure_reason", None)
            raise WorkspaceError(
                f"The editor declined the edit to {path}" + (f": {reason}" if reason else ""),
                hint="The user or the editor rejected this change; do not retry it unchanged.",
            )
        if plain and doc is not None and not await buffer_shows(self.overlay, path, new_text):
            raise WorkspaceError(
                f"The editor said it applied the edit to {path}, but its buffer does not hold "
                "the new text",
                hint=f"Read {path.name} again to see what it holds now.",
            )
        return True

    async def _buffer_holding(self, path: Path, text: str) -> Any:
        """The open document once its buffer holds ``text``, the text the edit was computed
        on (a ``didChange`` of the agent's previous edit may still be on its way); after a
        short bounded wait the edit is refused rather than applied over a newer text."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + _BUFFER_CATCH_UP
        while True:
            doc = self.overlay.document(path)
            if doc is None or doc.source == text:
                return doc
            if loop.time() >= deadline:
                raise FileChangedError(
                    f"{path.name} changed in the editor while the edit was being prepared "
                    "(the user typed in it); nothing was written.",
                    hint=f"Read {path.name} again and redo your change on its current text.",
                )
            await asyncio.sleep(0.02)

    async def context(self, items: list[p.ContextItem]) -> BuiltContext:
        """A prompt's context items (``@`` mentions) as model text plus their summaries."""

        policies: dict[Path, WorkspacePolicy] = {}  # a listing judges many paths: build once

        def policy_of(root: Path) -> WorkspacePolicy:
            policy = policies.get(root)
            if policy is None:
                policy = policies[root] = self.config_for(root).policy
            return policy

        def readable(root: Path, path: Path) -> str | None:
            resolved = resolve_path(root, str(path))
            decision = policy_of(root).decide_path(
                rel=resolved.rel, abs_posix=resolved.abs_posix, op="read"
            )
            return None if decision == "deny" else resolved.display()

        def readable_plain(root: Path, path: Path) -> bool:
            rel = relative_to_root(root, path)
            return (
                policy_of(root).decide_path(rel=rel, abs_posix=path.as_posix(), op="read") != "deny"
            )

        workspace = ContextWorkspace(
            root_of=self._inside,
            readable=readable,
            read=self._read_full,
            readable_plain=readable_plain,
        )
        return await build_context(items, workspace)


MAX_MENTION_BYTES = 16 * 1024 * 1024


def _read_mentioned(path: Path) -> str | None:
    """A mentioned file's text for ``lovia/run``, which answers only once it is built: never
    waits on a FIFO or device (only a regular file is read), and reads at most
    ``MAX_MENTION_BYTES`` (a context item shows at most 60,000 characters; a range past that
    much of a file comes out empty). None when it cannot be read or is not UTF-8."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks: list[bytes] = []
        left = MAX_MENTION_BYTES
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    try:  # a cut file may end inside a character: that part is left out
        return codecs.getincrementaldecoder("utf-8")().decode(data, final=left > 0)
    except UnicodeDecodeError:
        return None


def _range(edit: LineEdit) -> lsp.Range:
    return lsp.Range(
        start=lsp.Position(line=edit.start.line, character=edit.start.character),
        end=lsp.Position(line=edit.end.line, character=edit.end.character),
    )


def _text_edit(edit: LineEdit) -> lsp.TextEdit:
    return lsp.TextEdit(range=_range(edit), new_text=edit.new_text)


def _document_changes(
    path: Path,
    doc: Any,
    creating: bool,
    edits: list[LineEdit],
    annotation: str | None,
    title: str,
) -> lsp.WorkspaceEdit:
    """A ``TextDocumentEdit`` against the open document's version (``CreateFile`` first for a
    new file), every edit annotated with the tool call where the client supports annotations
    (``annotation`` is then set)."""
    uri = path_uri(path)
    changes: list[Any] = [lsp.CreateFile(uri=uri, annotation_id=annotation)] if creating else []
    version = doc.version if doc is not None and not creating else None
    text_edits: list[lsp.TextEdit | lsp.AnnotatedTextEdit] = [
        lsp.AnnotatedTextEdit(range=_range(e), new_text=e.new_text, annotation_id=annotation)
        if annotation is not None
        else _text_edit(e)
        for e in edits
    ]
    changes.append(
        lsp.TextDocumentEdit(
            text_document=lsp.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version),
            edits=text_edits,
        )
    )
    if annotation is None:
        return lsp.WorkspaceEdit(document_changes=changes)
    return lsp.WorkspaceEdit(
        document_changes=changes,
        change_annotations={
            annotation: lsp.ChangeAnnotation(label=f"lovia: {title}", needs_confirmation=False)
        },
    )


__all__ = ["EditorOverlay", "EditorWorkspace"]
