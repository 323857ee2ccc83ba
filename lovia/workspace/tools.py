"""The workspace tools: file, search, shell and process tools over the run's workspace session.

Their approval predicates are in :mod:`.tool_approval`, their renderers in
:mod:`.tool_renderers`, their editor presentation in :mod:`.tool_presentation`.
"""

from __future__ import annotations

import base64
import functools
import inspect
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from lovia.exceptions import ToolError
from lovia.parts import ImagePart, TextPart, image_mime
from lovia.run_context import RunContext, current_tool_call
from lovia.tools.base import ApprovalPredicate, Tool, invalid_arguments
from lovia.tools.presentation import (
    LocationsFn,
    PreviewFn,
    TitleFn,
    ToolKind,
    path_locations,
    path_title,
)
from lovia.transcript import InputEntry, TranscriptEntry
from lovia.workspace.errors import FileTooLargeError, WorkspaceError
from lovia.workspace.tool_approval import _shell_needs_approval, path_needs_approval
from lovia.workspace.tool_presentation import (
    _grep_title,
    _preview_edit,
    _preview_write,
    _process_title,
    _read_title,
    _shell_locations,
    _shell_title,
)
from lovia.workspace.tool_renderers import _renderer, render_workspace_result
from lovia.workspace.types import (
    DirEntry,
    EditResult,
    FileChange,
    FileContent,
    GrepMatch,
    ProcessOutput,
)

VIEW_IMAGE_MAX_BYTES = 5 * 1024 * 1024
_IMAGE_EXTENSIONS = frozenset({".jpg", ".jpeg", ".png", ".gif", ".webp"})


# --------------------------------------------------------------------------- plumbing


def require_workspace(ctx: RunContext[Any]) -> Any:
    """The run's workspace session, or a ``ToolError`` telling how to configure one."""
    workspace = getattr(ctx, "workspace", None)
    if workspace is None:
        raise ToolError(
            "No workspace is configured for this run.",
            hint="Set Agent(workspace=Workspace.local(...)) to give the agent files and a shell.",
        )
    return workspace


def _parser(model: type[BaseModel], name: str) -> Callable[[dict[str, Any]], Any]:
    def parse(args: dict[str, Any]) -> Any:
        try:
            return model.model_validate(args)
        except ValidationError as exc:
            raise invalid_arguments(name, exc) from None

    return parse


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


_PATH = {"type": "string", "description": "File path, relative to the workspace root or absolute."}


def _nullable_int(
    description: str, *, minimum: int = 1, maximum: int | None = None
) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "type": ["integer", "null"],
        "minimum": minimum,
        "default": None,
        "description": description,
    }
    if maximum is not None:
        schema["maximum"] = maximum
    return schema


def _accepts_call_id(method: Any) -> bool:
    func = getattr(method, "__func__", method)
    return _accepts_call_id_cached(func)


@functools.lru_cache(maxsize=64)
def _accepts_call_id_cached(func: Any) -> bool:
    try:
        return "call_id" in inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False


# --------------------------------------------------------------------------- tools


def _make(
    name: str,
    description: str,
    parameters: dict[str, Any],
    impl: Callable[[Any, RunContext[Any]], Awaitable[Any]],
    model: type[BaseModel],
    *,
    needs_approval: bool | ApprovalPredicate = False,
    parallel: bool = True,
    returns_images: bool = False,
    renderer: Callable[[Any, RunContext[Any]], str] | None = None,
    kind: ToolKind,
    title: TitleFn,
    locations: LocationsFn | None = None,
    preview: PreviewFn | None = None,
) -> Tool:
    parse = _parser(model, name)

    async def invoke(args: dict[str, Any], ctx: RunContext[Any]) -> Any:
        return await impl(parse(args), ctx)

    return Tool(
        name=name,
        description=description,
        parameters=parameters,
        invoke=invoke,
        needs_approval=needs_approval,
        parallel=parallel,
        returns_images=returns_images,
        result_renderer=renderer or _renderer(name),
        kind=kind,
        title=title,
        locations=locations,
        preview=preview,
    )


class _ReadFileArgs(_Args):
    path: str
    start: int | None = Field(default=None, ge=1)
    end: int | None = Field(default=None, ge=1)


async def _read_file(a: _ReadFileArgs, ctx: RunContext[Any]) -> FileContent:
    result: FileContent = await require_workspace(ctx).read_text(a.path, start=a.start, end=a.end)
    return result


read_file = _make(
    "read_file",
    "Read a text file from the workspace. Paths may be relative to the workspace root "
    "(preferred) or absolute; paths outside the workspace may need approval or be denied. "
    "Output is paged: pass start/end (1-based line numbers) to read a range; long files are "
    "truncated, so continue with the next range. Content keeps the file's own line endings "
    "and has no line numbers. Binary files are refused (inspect them with the shell). Always "
    "read a file before editing it.",
    _schema(
        {
            "path": _PATH,
            "start": _nullable_int("First line to read (1-based)."),
            "end": _nullable_int("Last line to read (inclusive)."),
        },
        ["path"],
    ),
    _read_file,
    _ReadFileArgs,
    kind="read",
    title=_read_title,
    locations=path_locations(line_key="start"),
    needs_approval=path_needs_approval("read"),
)


class _ViewImageArgs(_Args):
    path: str


async def _view_image(a: _ViewImageArgs, ctx: RunContext[Any]) -> list[Any]:
    suffix = Path(a.path).suffix.lower()
    if suffix not in _IMAGE_EXTENSIONS:
        raise ToolError(f"Not a supported image type: {a.path!r}")
    workspace = require_workspace(ctx)
    mime = image_mime(a.path) or "application/octet-stream"
    try:
        data = await workspace.read_bytes(a.path, max_bytes=VIEW_IMAGE_MAX_BYTES)
    except FileTooLargeError as exc:
        raise ToolError(
            str(exc),
            hint=f"Downscale a copy first, e.g. sips -Z 1568 {a.path} (macOS) or "
            f"magick {a.path} -resize 1568x1568 {a.path}.",
        ) from None
    return [
        TextPart(data.path),
        ImagePart(data=base64.b64encode(data.data).decode("ascii"), mime_type=mime),
    ]


view_image = _make(
    "view_image",
    "Look at an image file in the workspace (jpg, jpeg, png, gif or webp). Paths may be "
    "relative or absolute; paths outside the workspace may need approval or be denied.",
    _schema({"path": _PATH}, ["path"]),
    _view_image,
    _ViewImageArgs,
    kind="read",
    title=path_title("View image", fallback=""),
    locations=path_locations(),
    needs_approval=path_needs_approval("read"),
    returns_images=True,
)


class _ListFilesArgs(_Args):
    path: str = "."
    pattern: str | None = None
    include_hidden: bool = False
    max_results: int | None = Field(default=None, ge=1, le=1000)


async def _list_files(a: _ListFilesArgs, ctx: RunContext[Any]) -> list[DirEntry]:
    workspace = require_workspace(ctx)
    try:
        result: list[DirEntry] = await workspace.list_files(
            a.path,
            pattern=a.pattern,
            include_hidden=a.include_hidden,
            max_results=a.max_results,
        )
    except WorkspaceError as exc:
        root = getattr(workspace, "root", None)
        if exc.hint is None and root is not None:
            name = Path(root).name
            if name and a.path.strip().strip("/") == name:
                exc.hint = (
                    f"{name!r} is the name of the workspace itself, not a directory in it; "
                    "try list_files('.')."
                )
        raise
    return result


list_files = _make(
    "list_files",
    "List a directory of the workspace (directories first), or find files with a glob "
    "pattern relative to path (e.g. '**/*.py'). Paths may be relative or absolute; paths "
    "outside the workspace may need approval or be denied. Hidden entries are skipped unless "
    "include_hidden is true. Results are capped at max_results.",
    _schema(
        {
            "path": {**_PATH, "default": ".", "description": "Directory to list (default '.')."},
            "pattern": {
                "type": ["string", "null"],
                "default": None,
                "description": "Glob relative to path, e.g. '*.md' or 'src/**/*.ts'.",
            },
            "include_hidden": {"type": "boolean", "default": False},
            "max_results": _nullable_int("Maximum number of entries.", maximum=1000),
        },
        [],
    ),
    _list_files,
    _ListFilesArgs,
    kind="search",
    title=path_title("List", fallback="."),
    locations=path_locations(),
    needs_approval=path_needs_approval("read"),
    renderer=_renderer("list"),
)


class _GrepArgs(_Args):
    pattern: str
    path: str = "."
    glob: str | None = None
    ignore_case: bool = False
    include_hidden: bool = False
    max_matches: int | None = Field(default=None, ge=1, le=1000)


async def _grep_files(a: _GrepArgs, ctx: RunContext[Any]) -> list[GrepMatch]:
    result: list[GrepMatch] = await require_workspace(ctx).grep(
        a.pattern,
        path=a.path,
        glob=a.glob,
        ignore_case=a.ignore_case,
        include_hidden=a.include_hidden,
        max_matches=a.max_matches,
    )
    return result


grep_files = _make(
    "grep_files",
    "Search file contents with a Python regular expression; returns path:line: text for each "
    "matching line. path may be a file or a directory (searched recursively, hidden files "
    "skipped unless include_hidden); glob filters file names (e.g. '*.py'). Paths may be "
    "relative or absolute; paths outside the workspace may need approval or be denied. "
    "Binary and very large files are skipped; results are capped at max_matches.",
    _schema(
        {
            "pattern": {"type": "string", "description": "Python regular expression."},
            "path": {**_PATH, "default": ".", "description": "File or directory to search."},
            "glob": {"type": ["string", "null"], "default": None},
            "ignore_case": {"type": "boolean", "default": False},
            "include_hidden": {"type": "boolean", "default": False},
            "max_matches": _nullable_int("Maximum number of matches.", maximum=1000),
        },
        ["pattern"],
    ),
    _grep_files,
    _GrepArgs,
    kind="search",
    title=_grep_title,
    locations=path_locations(),
    needs_approval=path_needs_approval("read"),
    renderer=_renderer("grep"),
)


class _WriteArgs(_Args):
    path: str
    content: str
    create_only: bool = False


async def _write_file(a: _WriteArgs, ctx: RunContext[Any]) -> FileChange:
    result: FileChange = await require_workspace(ctx).write_text(
        a.path, a.content, create_only=a.create_only
    )
    return result


write_file = _make(
    "write_file",
    "Create a file or replace its whole content (parent directories are created). Use "
    "edit_file for targeted changes to an existing file; read it first. Paths may be relative "
    "or absolute; writes outside the workspace may need approval or be denied. "
    "create_only=true refuses to overwrite an existing file. A file that changed since you "
    "last read or wrote it (the user or another program edited it) is not overwritten: the "
    "call fails and you read it again.",
    _schema(
        {
            "path": _PATH,
            "content": {"type": "string", "description": "The complete new file content."},
            "create_only": {"type": "boolean", "default": False},
        },
        ["path", "content"],
    ),
    _write_file,
    _WriteArgs,
    kind="edit",
    title=path_title("Write"),
    locations=path_locations(),
    preview=_preview_write,
    needs_approval=path_needs_approval("write"),
    parallel=False,
)


class _EditArgs(_Args):
    path: str
    old: str
    new: str
    replace_all: bool = False


async def _edit_file(a: _EditArgs, ctx: RunContext[Any]) -> EditResult:
    result: EditResult = await require_workspace(ctx).edit_text(
        a.path, a.old, a.new, replace_all=a.replace_all
    )
    return result


edit_file = _make(
    "edit_file",
    "Replace an exact span of text in a file: old must match the current content exactly "
    "(whitespace and indentation included) and exactly once, unless replace_all is true. Read "
    "the file first and copy the span. Paths may be relative or absolute; paths outside the "
    "workspace may need approval or be denied.",
    _schema(
        {
            "path": _PATH,
            "old": {"type": "string", "description": "Exact text to replace (non-empty)."},
            "new": {"type": "string", "description": "Replacement text."},
            "replace_all": {"type": "boolean", "default": False},
        },
        ["path", "old", "new"],
    ),
    _edit_file,
    _EditArgs,
    kind="edit",
    title=path_title("Edit"),
    locations=path_locations(),
    preview=_preview_edit,
    needs_approval=path_needs_approval("read", "write"),
    parallel=False,
)


class _ShellArgs(_Args):
    command: str
    cwd: str = "."
    timeout: float | None = Field(default=None, ge=1)
    background: bool = False
    description: str | None = None


async def _shell(a: _ShellArgs, ctx: RunContext[Any]) -> Any:
    workspace = require_workspace(ctx)
    call = current_tool_call.get()
    if a.background:
        if _accepts_call_id(workspace.spawn):
            return await workspace.spawn(
                a.command, cwd=a.cwd, call_id=call.id if call is not None else None
            )
        return await workspace.spawn(a.command, cwd=a.cwd)
    if _accepts_call_id(workspace.run):
        return await workspace.run(
            a.command,
            cwd=a.cwd,
            timeout=a.timeout,
            call_id=call.id if call is not None else None,
        )
    return await workspace.run(a.command, cwd=a.cwd, timeout=a.timeout)


shell = _make(
    "shell",
    "Run a shell command (/bin/sh -c) in the workspace. It is non-interactive (stdin is "
    "empty), runs in a fresh process each call (cd and variables do not persist), and is not "
    "sandboxed unless the workspace says so. Paths in the command (arguments, redirections, "
    "cwd) are checked by the workspace rules; denied commands are refused and some need "
    "approval. Output is truncated: filter it (grep, head, tail). For servers, watchers and "
    "other long-running commands pass background=true, then poll read_process_output and stop "
    "them with kill_process.",
    _schema(
        {
            "command": {"type": "string", "description": "The shell command line."},
            "cwd": {
                "type": "string",
                "default": ".",
                "description": "Working directory (relative to the root or absolute).",
            },
            "timeout": {
                "type": ["number", "null"],
                "minimum": 1,
                "default": None,
                "description": "Seconds before the command is killed (foreground only).",
            },
            "background": {
                "type": "boolean",
                "default": False,
                "description": "Start it in the background and return a process id.",
            },
            "description": {
                "type": ["string", "null"],
                "default": None,
                "description": "A few words on what the command does; shown to the user.",
            },
        },
        ["command"],
    ),
    _shell,
    _ShellArgs,
    kind="execute",
    title=_shell_title,
    locations=_shell_locations,
    needs_approval=_shell_needs_approval,
    parallel=False,
)


class _ProcessArgs(_Args):
    process_id: str


async def _read_process_output(a: _ProcessArgs, ctx: RunContext[Any]) -> ProcessOutput:
    result: ProcessOutput = await require_workspace(ctx).read_process_output(a.process_id)
    return result


async def _kill_process(a: _ProcessArgs, ctx: RunContext[Any]) -> ProcessOutput:
    result: ProcessOutput = await require_workspace(ctx).kill_process(a.process_id)
    return result


_PROCESS_SCHEMA = _schema(
    {"process_id": {"type": "string", "description": "The id shell returned (bg-...)."}},
    ["process_id"],
)

read_process_output = _make(
    "read_process_output",
    "Read the new output of a background process started with shell(background=true) since "
    "the last read, and its status. Poll it while the process runs.",
    _PROCESS_SCHEMA,
    _read_process_output,
    _ProcessArgs,
    kind="read",
    title=_process_title("Read output of"),
)

kill_process = _make(
    "kill_process",
    "Stop a background process (and everything it started).",
    _PROCESS_SCHEMA,
    _kill_process,
    _ProcessArgs,
    kind="execute",
    title=_process_title("Stop"),
    parallel=False,
)


# --------------------------------------------------------------------------- reminder


def _reminder_preview(command: str) -> str:
    flat = " ".join(command.split()).replace("</system-reminder>", "[/system-reminder]")
    return flat if len(flat) <= 60 else flat[:59] + "…"


def background_process_reminder(ctx: RunContext[Any]) -> list[TranscriptEntry] | None:
    """A transient note listing running (or unread, finished) background processes."""
    workspace = getattr(ctx, "workspace", None)
    listing = getattr(workspace, "background_processes", None)
    if not callable(listing):
        return None
    lines: list[str] = []
    for p in listing():
        if p.status != "running" and p.exit_seen:
            continue
        preview = _reminder_preview(p.command)
        if p.status == "running":
            lines.append(f"- {p.process_id} running: {preview}")
        else:
            code = "unknown" if p.exit_code is None else str(p.exit_code)
            lines.append(
                f"- {p.process_id} {p.status} (exit code {code}): {preview} — call "
                f"read_process_output('{p.process_id}') for its final output"
            )
    if not lines:
        return None
    content = (
        "<system-reminder>\nBackground processes:\n" + "\n".join(lines) + "\n</system-reminder>"
    )
    return [InputEntry(role="user", content=content)]


__all__ = [
    "VIEW_IMAGE_MAX_BYTES",
    "background_process_reminder",
    "edit_file",
    "grep_files",
    "kill_process",
    "list_files",
    "path_needs_approval",
    "read_file",
    "read_process_output",
    "render_workspace_result",
    "require_workspace",
    "shell",
    "view_image",
    "write_file",
]
