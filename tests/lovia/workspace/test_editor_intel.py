"""The editor port in the framework: symbol positions (UTF-16 included), new-vs-stale problems,
problems after edits (bounded waits, an editor that never answers), caps and the ACL."""

from __future__ import annotations

import asyncio
import dataclasses
import re
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from lovia.agent import Agent
from lovia.exceptions import ToolError
from lovia.run_context import RunContext
from lovia.tools.base import Tool, apply_tool_policies
from lovia.workspace import LocalWorkspaceSession, Workspace, WorkspacePolicy
from lovia.workspace.editor_intel import (
    CodeLocation,
    Diagnostic,
    DiagnosticsReport,
    FileDiagnostics,
    LocationKind,
    LspPosition,
    SymbolInfo,
    column_of,
    find_symbol,
    lsp_position,
    new_problems,
    utf16_offset,
)
from lovia.workspace.editor_tools import NO_ANSWER, NO_NEW_PROBLEMS, EditorTools

_FLAG = re.compile(r"BROKEN(\w*)")


class RuleEditor:
    """A small language server over the disk: every ``BROKEN<name>`` is an error; an update
    of a file's problems arrives ``delay`` seconds after it is waited for."""

    def __init__(self, *, delay: float = 0.05, hang: bool = False) -> None:
        self.delay = delay
        self.hang = hang
        self.versions: dict[Path, int] = {}
        self.asked: list[Path] = []
        self.locations_found: list[CodeLocation] = []

    def _problems(self, path: Path) -> tuple[Diagnostic, ...]:
        try:
            text = path.read_text()
        except OSError:
            return ()
        out = []
        for number, line in enumerate(text.splitlines(), start=1):
            for m in _FLAG.finditer(line):
                out.append(
                    Diagnostic(path, number, m.start() + 1, "error", f"broken {m.group(1)}", "rule")
                )
        return tuple(out)

    async def diagnostics(
        self,
        paths: Sequence[Path] | None,
        *,
        after: Mapping[Path, int] | None = None,
        wait: float = 0.0,
    ) -> DiagnosticsReport:
        if self.hang:
            await asyncio.sleep(3600)
        self.asked += list(paths or [])
        if after:
            await asyncio.sleep(min(self.delay, wait))
            for path in after:
                self.versions[path] = self.versions.get(path, 0) + 1
        files = tuple(
            FileDiagnostics(p, self._problems(p), self.versions.setdefault(p, 0))
            for p in paths or []
        )
        return DiagnosticsReport(files)

    async def locations(
        self, kind: LocationKind, path: Path, position: LspPosition
    ) -> list[CodeLocation]:
        if self.hang:
            await asyncio.sleep(3600)
        self.asked.append(path)
        return list(self.locations_found)

    async def document_symbols(self, path: Path) -> list[SymbolInfo]:
        return [
            SymbolInfo("Config", "class", path, 1, 7),
            SymbolInfo("load", "method", path, 2, 9, depth=1),
        ]

    async def workspace_symbols(self, query: str) -> list[SymbolInfo]:
        return []


def ctx(session: Any) -> RunContext[Any]:
    return RunContext(context=None, entries=[], agent=Agent(name="t"), workspace=session)


async def call(tool: Tool, args: dict[str, Any], session: Any) -> str:
    c = ctx(session)
    result = await apply_tool_policies(tool.invoke, tool.policies, args, c)
    return result if isinstance(result, str) else tool.result_renderer(result, c)  # type: ignore[misc]


def tools_of(root: Path, editor: RuleEditor, **options: Any) -> dict[str, Tool]:
    ws = Workspace.local(str(root), denied_paths=("secret*",))
    ws = dataclasses.replace(ws, editor=EditorTools(editor, **options))
    return {t.name: t for t in ws.tools()}


@pytest.fixture
async def session(root: Path) -> Any:
    s = LocalWorkspaceSession(root, policy=WorkspacePolicy.coding(denied_paths=("secret*",)))
    yield s
    await s.close()


class TestPositions:
    def test_nearest_occurrence_and_utf16(self) -> None:
        text = "x = 1\n# 😀 value here\nvalue = 2\n\n\nprint(value)\n"
        assert find_symbol(text, "value") == (2, 5)
        assert find_symbol(text, "value", line=5) == (6, 7)
        assert find_symbol(text, "value", line=3) == (3, 1)
        pos = lsp_position(text, "value", line=2)
        assert pos == LspPosition(line=1, character=5)  # the emoji is two UTF-16 units
        assert column_of("# 😀 value", 5) == 5
        assert utf16_offset("# 😀 value", 5) == 5

    def test_lines_end_only_where_lsp_ends_them(self) -> None:
        text = "a = 1\x0c\r\nb = 2\u2028c\rvalue = 3\n"
        assert find_symbol(text, "value") == (3, 1)
        assert lsp_position(text, "c") == LspPosition(line=1, character=6)

    def test_word_boundaries(self) -> None:
        text = "values = 1\n$value = 2\nvalue2 = 3\nvalue = 4\n"
        assert find_symbol(text, "value") == (4, 1)

    def test_missing_symbol_says_what_to_do(self) -> None:
        with pytest.raises(ToolError) as info:
            find_symbol("def other():\n    pass\n", "parse")
        assert "'parse' does not occur" in str(info.value)
        assert info.value.hint and "symbols(path=" in info.value.hint


class TestNewProblems:
    def test_shifted_problems_are_not_new_and_extra_ones_are(self, tmp_path: Path) -> None:
        a = tmp_path / "a.ts"
        old = [Diagnostic(a, 3, 1, "error", "x is not defined", "ts", "2304")]
        shifted = [Diagnostic(a, 5, 1, "error", "x is not defined", "ts", "2304")]
        assert new_problems(old, shifted) == []
        both = [*shifted, Diagnostic(a, 40, 1, "error", "x is not defined", "ts", "2304")]
        assert new_problems(old, both) == [both[1]]
        hint = [Diagnostic(a, 1, 1, "hint", "unused", "ts", None)]
        assert new_problems([], hint) == []


class TestAfterEdits:
    async def test_a_breaking_and_a_fixing_edit(self, root: Path, session: Any) -> None:
        (root / "a.py").write_text("ok = 1\n")
        (root / "b.py").write_text("BROKENstale\n")  # stale problems elsewhere: not ours
        editor = RuleEditor()
        tools = tools_of(root, editor)
        out = await call(
            tools["edit_file"], {"path": "a.py", "old": "ok", "new": "BROKENok"}, session
        )
        assert out.startswith("edited a.py (1 replacement)\n\nNew problems after this edit")
        assert "a.py:1:1  error: broken ok [rule]" in out and "b.py" not in out
        out = await call(
            tools["edit_file"], {"path": "a.py", "old": "BROKENok", "new": "ok"}, session
        )
        assert out == f"edited a.py (1 replacement)\n\n{NO_NEW_PROBLEMS}"
        out = await call(tools["write_file"], {"path": "c.py", "content": "x\nBROKENc\n"}, session)
        assert "c.py:2:1  error: broken c [rule]" in out

    async def test_an_editor_that_never_answers_costs_one_timeout(
        self, root: Path, session: Any
    ) -> None:
        (root / "a.py").write_text("ok = 1\n")
        tools = tools_of(root, RuleEditor(hang=True), timeout=0.2)
        started = time.monotonic()
        out = await call(tools["edit_file"], {"path": "a.py", "old": "ok", "new": "no"}, session)
        assert time.monotonic() - started < 1.0
        assert out == f"edited a.py (1 replacement)\n\n{NO_ANSWER}"
        assert (root / "a.py").read_text() == "no = 1\n"

    async def test_the_settle_wait_is_bounded(self, root: Path, session: Any) -> None:
        (root / "a.py").write_text("ok = 1\n")
        slow = RuleEditor(delay=3600)  # never reports the file again
        slow_after = slow.diagnostics

        async def never_settles(paths: Any, *, after: Any = None, wait: float = 0.0) -> Any:
            if after:
                await asyncio.sleep(3600)
            return await slow_after(paths, after=after, wait=wait)

        slow.diagnostics = never_settles  # type: ignore[method-assign]
        tools = tools_of(root, slow, settle=0.3, timeout=0.2)
        started = time.monotonic()
        out = await call(tools["edit_file"], {"path": "a.py", "old": "ok", "new": "no"}, session)
        elapsed = time.monotonic() - started
        assert elapsed < 0.3 + 0.2 + 0.5, elapsed
        assert out.endswith(NO_ANSWER)

    async def test_an_editor_without_versions_gets_the_settle_time(
        self, root: Path, session: Any
    ) -> None:
        (root / "a.py").write_text("ok = 1\n")
        editor = RuleEditor()
        counted = editor.diagnostics

        async def unversioned(paths: Any, *, after: Any = None, wait: float = 0.0) -> Any:
            assert not after  # nothing to wait for: lovia waits itself
            report = await counted(paths)
            return DiagnosticsReport(
                tuple(FileDiagnostics(f.path, f.diagnostics) for f in report.files)
            )

        editor.diagnostics = unversioned  # type: ignore[method-assign]
        tools = tools_of(root, editor, settle=0.2)
        started = time.monotonic()
        out = await call(
            tools["edit_file"], {"path": "a.py", "old": "ok", "new": "BROKENok"}, session
        )
        assert time.monotonic() - started >= 0.2
        assert "a.py:1:1  error: broken ok [rule]" in out

    async def test_an_editor_that_answers_at_once_is_asked_again_until_it_rechecked(
        self, root: Path, session: Any
    ) -> None:
        (root / "a.py").write_text("ok = 1\n")
        editor = RuleEditor()
        fresh = editor.diagnostics
        calls: list[float] = []
        stale: list[DiagnosticsReport] = []

        async def impatient(paths: Any, *, after: Any = None, wait: float = 0.0) -> Any:
            calls.append(time.monotonic())
            if not after:  # the snapshot before the edit
                stale.append(await fresh(paths))
                return stale[0]
            if len(calls) < 4:  # not re-checked yet: the old problems, the old version
                return stale[0]
            return await fresh(paths, after=after, wait=0.0)

        editor.diagnostics = impatient  # type: ignore[method-assign]
        tools = tools_of(root, editor, settle=1.0)
        out = await call(
            tools["edit_file"], {"path": "a.py", "old": "ok", "new": "BROKENok"}, session
        )
        assert "a.py:1:1  error: broken ok [rule]" in out
        assert len(calls) == 4 and calls[-1] - calls[1] >= 0.2  # asked again every 100 ms

    async def test_the_option_turns_it_off(self, root: Path, session: Any) -> None:
        (root / "a.py").write_text("ok = 1\n")
        editor = RuleEditor()
        tools = tools_of(root, editor, diagnostics_after_edits=False)
        out = await call(
            tools["edit_file"], {"path": "a.py", "old": "ok", "new": "BROKEN"}, session
        )
        assert out == "edited a.py (1 replacement)" and editor.asked == []


class TestTools:
    async def test_absent_without_a_port(self, root: Path) -> None:
        ws = Workspace.local(str(root))
        assert "diagnostics" not in {t.name for t in ws.tools()}
        assert "find_references" not in ws.instructions()

    async def test_references_are_capped_and_denied_files_hidden(
        self, root: Path, session: Any
    ) -> None:
        (root / "lib.py").write_text("def parse():\n    pass\n")
        (root / "secret.py").write_text("parse()\n")
        (root / "use.py").write_text("\n".join("parse()" for _ in range(60)) + "\n")
        editor = RuleEditor()
        editor.locations_found = [CodeLocation(root / "secret.py", 1, 1)] + [
            CodeLocation(root / "use.py", n, 1) for n in range(1, 61)
        ]
        tools = tools_of(root, editor)
        out = await call(tools["find_references"], {"path": "lib.py", "symbol": "parse"}, session)
        lines = out.splitlines()
        assert lines[0] == "use.py:1:1  parse()"
        assert len(lines) == 51 and lines[-1] == "… 10 more not shown"
        assert "secret" not in out

    async def test_a_denied_file_is_never_asked_about(self, root: Path, session: Any) -> None:
        (root / "secret.py").write_text("def parse(): pass\n")
        editor = RuleEditor()
        tools = tools_of(root, editor)
        for name, args in [
            ("go_to_definition", {"path": "secret.py", "symbol": "parse"}),
            ("diagnostics", {"path": "secret.py"}),
            ("symbols", {"path": "secret.py"}),
        ]:
            with pytest.raises(ToolError, match="denied"):
                await call(tools[name], args, session)
        assert editor.asked == []

    async def test_outline_and_diagnostics(self, root: Path, session: Any) -> None:
        (root / "a.py").write_text("class Config:\n    def load(self): BROKENx\n")
        tools = tools_of(root, RuleEditor())
        out = await call(tools["symbols"], {"path": "a.py"}, session)
        assert out == "class Config  :1\n  method load  :2"
        out = await call(tools["diagnostics"], {"path": "a.py"}, session)
        assert (
            out == "1 errors, 0 warnings, 1 problems in 1 files:\na.py:2:21  error: broken x [rule]"
        )
        tool = tools["go_to_definition"]
        assert tool.kind == "search" and tool.title is not None
        with pytest.raises(ToolError):
            await call(tools["symbols"], {}, session)
