"""The agent's tools over the editor's language intelligence, and problems after every edit.

``LocalWorkspace(editor=EditorTools(port))`` gives the agent ``diagnostics``,
``go_to_definition``, ``find_references``, ``find_implementations`` and ``symbols``, and makes
``write_file``/``edit_file`` report the errors and warnings their edit introduced. Without a
port the workspace has none of this and its instructions do not mention it.

Every path goes through the run's workspace session, judged as ``read_file`` judges it
(resolved: ``..``, ``~`` and symlinks followed): a denied file is never asked about and never
shown. The file a call names is read-gated like ``read_file`` (outside the workspace it asks).
Every path in the editor's answer (a problem's file, a definition, a reference, a symbol) is
shown only when reading it is allowed, or when it is the file (or lies in the folder) the user
just approved for this call; the others are left out with a note that says how many and that
``read_file`` on them asks the user. Every call to the port is bounded in time, so an editor
that never answers costs one timeout, not a run.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from lovia.exceptions import ToolError
from lovia.run_context import RunContext
from lovia.tools.base import Tool, ToolInvoker, invalid_arguments
from lovia.tools.presentation import path_locations, short
from lovia.workspace.editor_intel import (
    CodeLocation,
    Diagnostic,
    DiagnosticsReport,
    EditorIntel,
    LocationKind,
    NoLanguageServer,
    SymbolInfo,
    line_of,
    lsp_position,
    new_problems,
)
from lovia.workspace.errors import WorkspaceError
from lovia.workspace.paths import resolve_path
from lovia.workspace.tools import require_workspace

T = TypeVar("T")

EDIT_TOOLS = frozenset({"write_file", "edit_file"})
NO_NEW_PROBLEMS = "No new problems."
NO_ANSWER = "The editor did not answer the request for problems; continuing without them."


@dataclass(frozen=True)
class EditorTools:
    """The editor port and how the workspace uses it.

    ``settle`` is how long, after an edit, to wait for the language server to report the edited
    file again (the wait ends as soon as it does); ``timeout`` bounds every other request. One
    edit waits at most ``timeout + settle + timeout`` (snapshot, settle, grace) — 2.5 s with
    the defaults, and in practice as long as the language server takes to re-check the file.
    """

    port: EditorIntel = field(compare=False)
    offers: frozenset[str] = frozenset({"diagnostics", "locations", "symbols"})
    """What the port answers (an editor may answer only some): tools for the rest are left
    out."""
    diagnostics_after_edits: bool = True
    settle: float = 1.5
    timeout: float = 0.5
    max_results: int = 50

    def tools(self) -> list[Tool]:
        """The read-only tools over the port."""
        return _tools(self)

    def wrap(self, tools: list[Tool]) -> list[Tool]:
        """``tools`` with the edit tools reporting new problems (when enabled) and the editor's
        tools added."""
        out = []
        for tool in tools:
            if self._after_edits() and tool.name in EDIT_TOOLS:
                tool = copy.copy(tool)
                tool.policies = (_after_edit_policy(self, tool), *tool.policies)
            out.append(tool)
        return out + self.tools()

    def _after_edits(self) -> bool:
        return self.diagnostics_after_edits and "diagnostics" in self.offers

    def instructions(self) -> str:
        names = ", ".join(t.name for t in self.tools())
        if not names and not self._after_edits():
            return ""
        lines = ["## Editor"]
        if names:
            lines.append(
                f"The editor's language servers answer these tools: {names}. They work on the "
                "code's meaning, not its text: prefer them to grep_files to find a definition "
                "or the uses of a symbol. Name a symbol as it is written in a file (and a line "
                "near it when the name occurs more than once)."
            )
        if self._after_edits():
            lines.append(
                "After write_file and edit_file the result lists the errors and warnings your "
                "edit introduced; fix them before moving on."
            )
        return "\n".join(lines)


# --------------------------------------------------------------------------- plumbing


async def _bounded(call: Awaitable[T], seconds: float) -> T:
    return await asyncio.wait_for(call, timeout=max(seconds, 0.01))


def _session(ctx: RunContext[Any]) -> Any:
    return require_workspace(ctx)


def _readable(session: Any, path: Path) -> str:
    """``allow``/``ask``/``deny`` for reading ``path`` (``deny`` when unknown)."""
    try:
        decision = session.decide_path(str(path))
    except Exception:
        return "deny"
    return str(decision)


def _target(session: Any, raw: str) -> Path:
    """The file ``raw`` names, refused like a read when the rules deny it."""
    resolved = resolve_path(Path(session.root), raw)
    if _readable(session, resolved.abs) == "deny":
        raise ToolError(
            f"Reading {resolved.display()} is denied by the workspace rules.",
            hint="Work with files the workspace allows.",
        )
    return resolved.abs


def _display(session: Any, path: Path) -> str:
    return resolve_path(Path(session.root), str(path)).display()


class _Gate:
    """Which paths of one editor answer the model may see: those it may read without asking,
    and those under the call's own target when the user approved it (its read asked). Counts
    the results it leaves out, so the answer can say so."""

    def __init__(self, session: Any, target: Path | None = None) -> None:
        self.session = session
        self.approved = (
            target if target is not None and _readable(session, target) == "ask" else None
        )
        self.left_out = 0
        self._seen: dict[Path, str] = {}

    def verdict(self, path: Path) -> str:
        """``show``, ``ask`` (left out, counted) or ``deny`` (left out silently)."""
        if path not in self._seen:
            decision = _readable(self.session, path)
            if decision == "ask" and self.approved is not None:
                try:
                    resolved = resolve_path(Path(self.session.root), str(path)).abs
                except WorkspaceError:
                    resolved = None
                if resolved is not None and resolved.is_relative_to(self.approved):
                    decision = "allow"
            self._seen[path] = "show" if decision == "allow" else decision
        return self._seen[path]

    def shows(self, path: Path) -> bool:
        verdict = self.verdict(path)
        if verdict == "ask":
            self.left_out += 1
        return verdict == "show"

    def note(self) -> str:
        """What the model is told about the results left out (empty when none were)."""
        n = self.left_out
        if not n:
            return ""
        what = "1 result" if n == 1 else f"{n} results"
        return (
            f"{what} in files outside the workspace (or that the rules ask about) "
            f"{'was' if n == 1 else 'were'} left out; read_file on such a file asks the user."
        )

    def finish(self, text: str) -> str:
        note = self.note()
        return f"{text}\n{note}" if note else text


class _Texts:
    """File texts for snippets, read once per call through the session (ACL, open buffers)."""

    def __init__(self, session: Any, gate: _Gate) -> None:
        self.session = session
        self.gate = gate
        self._cache: dict[Path, str | None] = {}

    async def get(self, path: Path) -> str | None:
        if path not in self._cache:
            text = None
            if self.gate.verdict(path) == "show":
                try:
                    text = await self.session.current_text(str(path))
                except (WorkspaceError, OSError):
                    text = None
            self._cache[path] = text
        return self._cache[path]


def _capped(lines: list[str], total: int, limit: int) -> str:
    shown = lines[:limit]
    if total > len(shown):
        shown.append(f"… {total - len(shown)} more not shown")
    return "\n".join(shown)


async def _render_locations(
    session: Any, gate: _Gate, locations: list[CodeLocation], limit: int, empty: str
) -> str:
    texts = _Texts(session, gate)
    seen: set[tuple[Path, int, int]] = set()
    visible = []
    for loc in locations:
        spot = (loc.path, loc.line, loc.col)
        if spot in seen:
            continue
        seen.add(spot)
        if gate.shows(loc.path):
            visible.append(loc)
    if not visible:
        return gate.finish(empty)
    lines = []
    for loc in visible[:limit]:
        text = await texts.get(loc.path)
        snippet = short(line_of(text, loc.line).strip(), 120) if text is not None else ""
        head = f"{_display(session, loc.path)}:{loc.line}:{loc.col}"
        lines.append(f"{head}  {snippet}".rstrip())
    return gate.finish(_capped(lines, len(visible), limit))


def render_problem(session: Any, d: Diagnostic) -> str:
    """``path:line:col  severity: message [source code]``."""
    tag = " ".join(x for x in (d.source, f"{d.code}" if d.code else None) if x)
    message = " ".join(d.message.split())
    return f"{_display(session, d.path)}:{d.line}:{d.col}  {d.severity}: {short(message, 300)}" + (
        f" [{tag}]" if tag else ""
    )


def render_problems(session: Any, problems: list[Diagnostic], limit: int) -> str:
    lines = [render_problem(session, d) for d in problems[:limit]]
    return _capped(lines, len(problems), limit)


# --------------------------------------------------------------------------- after edits


def _after_edit_policy(editor: EditorTools, tool: Tool) -> Any:
    async def report_new_problems(invoke: ToolInvoker, args: dict[str, Any], ctx: Any) -> Any:
        raw = args.get("path")
        session = getattr(ctx, "workspace", None)
        if not isinstance(raw, str) or session is None or not hasattr(session, "root"):
            return await invoke(args, ctx)
        path = resolve_path(Path(session.root), raw).abs
        if _readable(session, path) == "deny":
            return await invoke(args, ctx)
        try:
            before: DiagnosticsReport | None = await _bounded(
                editor.port.diagnostics([path]), editor.timeout
            )
        except Exception:
            before = None
        result = await invoke(args, ctx)
        if getattr(result, "ok", True) is False or getattr(result, "changed", True) is False:
            return result
        note = await _problems_after(editor, session, path, before)
        rendered = tool.result_renderer(result, ctx) if tool.result_renderer else str(result)
        return f"{rendered}\n\n{note}"

    return report_new_problems


async def _settled(editor: EditorTools, path: Path, before: DiagnosticsReport) -> DiagnosticsReport:
    """The file's problems once the editor re-checked it, or as they are when ``settle`` ran
    out. An editor that waits (``after``) answers once; one that answers at once is asked again
    every 100 ms; one that does not count updates gets the whole settle time first."""
    versions = before.versions()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + editor.settle
    if path not in versions:
        await asyncio.sleep(editor.settle)
        return await editor.port.diagnostics([path])
    while True:
        left = max(deadline - loop.time(), 0.0)
        after = await editor.port.diagnostics([path], after=versions, wait=left)
        if after.versions().get(path) != versions[path] or loop.time() >= deadline:
            return after
        await asyncio.sleep(min(0.1, max(deadline - loop.time(), 0.0)))


async def _problems_after(
    editor: EditorTools, session: Any, path: Path, before: DiagnosticsReport | None
) -> str:
    """What the model is told about the problems its edit of ``path`` introduced."""
    if before is None:
        return NO_ANSWER
    try:
        after = await _bounded(_settled(editor, path, before), editor.settle + editor.timeout)
    except Exception:
        return NO_ANSWER
    new = [d for d in new_problems(before.all(), after.all()) if d.path == path]
    if not new:
        return NO_NEW_PROBLEMS
    errors = sum(d.severity == "error" for d in new)
    head = f"New problems after this edit ({errors} errors, {len(new) - errors} warnings):"
    return head + "\n" + render_problems(session, new, editor.max_results)


# --------------------------------------------------------------------------- the tools


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _DiagnosticsArgs(_Args):
    path: str | None = None


class _SymbolAt(_Args):
    path: str
    symbol: str = Field(min_length=1)
    line: int | None = Field(default=None, ge=1)


class _SymbolsArgs(_Args):
    path: str | None = None
    query: str | None = None

    @model_validator(mode="after")
    def _one(self) -> _SymbolsArgs:
        if (self.path is None) == (self.query is None):
            raise ValueError("pass exactly one of path (a file's outline) or query (a search)")
        return self


def _parse(model: type[BaseModel], name: str, args: Mapping[str, Any]) -> Any:
    try:
        return model.model_validate(dict(args))
    except ValidationError as exc:
        raise invalid_arguments(name, exc) from None


def _call(editor: EditorTools, call: Awaitable[T], what: str) -> Awaitable[T]:
    async def bounded() -> T:
        try:
            return await _bounded(call, editor.timeout + editor.settle)
        except TimeoutError:
            raise ToolError(
                f"The editor did not answer the request for {what}.",
                hint="The editor's language server may still be starting; try again later or "
                "use grep_files.",
            ) from None

    return bounded()


def _not_handled(session: Any, path: Path | None) -> str:
    """What the model reads when no language server in the editor handles the request: not an
    empty answer, which would read as "there are none"."""
    if path is None:
        return (
            "No language server in the editor searches workspace symbols; use grep_files instead."
        )
    return (
        f"No language server in the editor handles {_display(session, path)}; "
        "use grep_files or read_file instead."
    )


def _diagnostics_tool(editor: EditorTools) -> Tool:
    async def invoke(args: dict[str, Any], ctx: RunContext[Any]) -> str:
        a = _parse(_DiagnosticsArgs, "diagnostics", args)
        session = _session(ctx)
        target = _target(session, a.path) if a.path is not None else None
        paths = [target] if target is not None and not target.is_dir() else None
        report = await _call(editor, editor.port.diagnostics(paths), "problems")
        gate = _Gate(session, target)
        problems = [
            d
            for d in report.all()
            if (target is None or d.path == target or d.path.is_relative_to(target))
            and gate.shows(d.path)
        ]
        order = {"error": 0, "warning": 1, "information": 2, "hint": 3}
        problems.sort(key=lambda d: (order[d.severity], str(d.path), d.line, d.col))
        if not problems:
            return gate.finish("No problems reported.")
        errors = sum(d.severity == "error" for d in problems)
        warnings = sum(d.severity == "warning" for d in problems)
        files = len({d.path for d in problems})
        head = f"{errors} errors, {warnings} warnings, {len(problems)} problems in {files} files:"
        return gate.finish(head + "\n" + render_problems(session, problems, editor.max_results))

    return Tool(
        name="diagnostics",
        description="The problems (errors, warnings, hints) the editor's language servers "
        "report, as path:line:col  severity: message. path: one file or a directory; "
        "omit it for the whole workspace. Errors come first; the list is capped.",
        parameters={
            "type": "object",
            "properties": {
                "path": {
                    "type": ["string", "null"],
                    "default": None,
                    "description": "A file or directory (relative to the workspace root); "
                    "omit for every file the editor reports problems for.",
                },
            },
            "required": [],
            "additionalProperties": False,
        },
        invoke=invoke,
        kind="read",
        title=lambda a: f"Problems in {a.get('path') or 'the workspace'}",
        locations=path_locations(),
    )


_SYMBOL_AT_SCHEMA = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "The file the symbol is written in."},
        "symbol": {
            "type": "string",
            "description": "The name as written in that file (e.g. parse_config).",
        },
        "line": {
            "type": ["integer", "null"],
            "minimum": 1,
            "default": None,
            "description": "A line near the occurrence you mean (1-based), when the name "
            "occurs more than once.",
        },
    },
    "required": ["path", "symbol"],
    "additionalProperties": False,
}

_LOCATION_TOOLS: dict[str, tuple[LocationKind, str, str, str, str]] = {
    "go_to_definition": (
        "definition",
        "Where a symbol is defined, found by the editor's language server (not by text).",
        "Definition of",
        "No definition found.",
        "the definition",
    ),
    "find_references": (
        "references",
        "Every use of a symbol across the workspace, found by the editor's language server "
        "(real references, not text matches), as path:line:col  code.",
        "References to",
        "No references found.",
        "references",
    ),
    "find_implementations": (
        "implementation",
        "The implementations of an interface, abstract method or type, found by the editor's "
        "language server.",
        "Implementations of",
        "No implementations found.",
        "implementations",
    ),
}


def _location_tool(editor: EditorTools, name: str) -> Tool:
    kind, description, verb, empty, what = _LOCATION_TOOLS[name]

    async def invoke(args: dict[str, Any], ctx: RunContext[Any]) -> str:
        a = _parse(_SymbolAt, name, args)
        session = _session(ctx)
        path = _target(session, a.path)
        text = await session.current_text(str(path))
        if text is None:
            raise ToolError(f"No such file: {a.path}", hint="Check the path with list_files.")
        position = lsp_position(text, a.symbol, a.line)
        try:
            found = await _call(editor, editor.port.locations(kind, path, position), what)
        except NoLanguageServer:
            return _not_handled(session, path)
        gate = _Gate(session, path)
        return await _render_locations(session, gate, found, editor.max_results, empty)

    return Tool(
        name=name,
        description=description + " Give the file and the symbol's name as written there "
        "(and a nearby line when it occurs more than once). Results are capped.",
        parameters=_SYMBOL_AT_SCHEMA,
        invoke=invoke,
        kind="search",
        title=lambda a: f"{verb} {short(a.get('symbol', ''), 40)} ({a.get('path', '')})",
        locations=path_locations(line_key="line"),
    )


async def _render_symbols(
    session: Any, gate: _Gate, symbols: list[SymbolInfo], limit: int, outline: bool
) -> str:
    visible = [s for s in symbols if gate.shows(s.path)]
    if not visible:
        return gate.finish("No symbols found.")
    lines = []
    for s in visible[:limit]:
        if outline:
            lines.append(f"{'  ' * s.depth}{s.kind} {s.name}  :{s.line}")
        else:
            where = f"{_display(session, s.path)}:{s.line}:{s.col}"
            inside = f" (in {s.container})" if s.container else ""
            lines.append(f"{where}  {s.kind} {s.name}{inside}")
    return gate.finish(_capped(lines, len(visible), limit))


def _symbols_tool(editor: EditorTools) -> Tool:
    async def invoke(args: dict[str, Any], ctx: RunContext[Any]) -> str:
        a = _parse(_SymbolsArgs, "symbols", args)
        session = _session(ctx)
        if a.path is not None:
            path = _target(session, a.path)
            try:
                found = await _call(editor, editor.port.document_symbols(path), "symbols")
            except NoLanguageServer:
                return _not_handled(session, path)
            gate = _Gate(session, path)
            return await _render_symbols(session, gate, found, editor.max_results, outline=True)
        try:
            found = await _call(editor, editor.port.workspace_symbols(a.query or ""), "symbols")
        except NoLanguageServer:
            return _not_handled(session, None)
        gate = _Gate(session)
        return await _render_symbols(session, gate, found, editor.max_results, outline=False)

    def title(a: Mapping[str, Any]) -> str:
        if a.get("path"):
            return f"Outline of {a['path']}"
        return f"Symbols matching {short(a.get('query', ''), 40)!r}"

    return Tool(
        name="symbols",
        description="Symbols from the editor's language servers: with path, the file's outline "
        "(classes, functions, ... with their lines); with query, a search of the whole "
        "workspace's symbols by name. Pass exactly one of them. Results are capped.",
        parameters={
            "type": "object",
            "properties": {
                "path": {"type": ["string", "null"], "default": None},
                "query": {"type": ["string", "null"], "default": None},
            },
            "required": [],
            "additionalProperties": False,
        },
        invoke=invoke,
        kind="search",
        title=title,
        locations=path_locations(),
    )


def _read_gate(tool: Tool) -> Tool:
    """Reads of the named file ask first where the workspace rules say ``ask``."""
    from lovia.workspace.tools import path_needs_approval

    tool.needs_approval = path_needs_approval("read")
    return tool


def _tools(editor: EditorTools) -> list[Tool]:
    made = []
    if "diagnostics" in editor.offers:
        made.append(_diagnostics_tool(editor))
    if "locations" in editor.offers:
        made += [_location_tool(editor, name) for name in _LOCATION_TOOLS]
    if "symbols" in editor.offers:
        made.append(_symbols_tool(editor))
    return [_read_gate(t) for t in made]


__all__ = ["NO_ANSWER", "NO_NEW_PROBLEMS", "EditorTools", "render_problem"]
