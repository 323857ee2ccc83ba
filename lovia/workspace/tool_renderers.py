"""How the workspace tools' results read to the model: one renderer per result type."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lovia.run_context import RunContext
from lovia.tools.base import default_result_renderer
from lovia.workspace.types import (
    CommandResult,
    DirEntry,
    EditResult,
    FileChange,
    FileContent,
    GrepMatch,
    ProcessOutput,
    ProcessStart,
)

# --------------------------------------------------------------------------- renderers


def _render_file_content(r: FileContent) -> str:
    if r.total_lines == 0:
        return f"{r.path} (empty file)"
    if r.content == "":
        return f"{r.path}: start line {r.start} is past the last line ({r.total_lines})."
    return f"{r.path} (lines {r.start}-{r.end} of {r.total_lines})\n{r.content}"


def _render_dir_entries(entries: list[DirEntry]) -> str:
    if not entries:
        return "(no entries)"
    lines = []
    for e in entries:
        if e.is_dir:
            line = f"{e.path}/"
        elif e.size is not None:
            line = f"{e.path}  ({e.size} bytes)"
        else:
            line = e.path
        if e.symlink_target:
            line += f"  -> {e.symlink_target}"
        lines.append(line)
    if getattr(entries, "truncated", False):
        lines.append(
            f"… (truncated at {len(entries)} entries; narrow the path/pattern or raise max_results)"
        )
    return "\n".join(lines)


def _render_grep(matches: list[GrepMatch]) -> str:
    if not matches:
        return "(no matches)"
    lines = [f"{m.path}:{m.line}: {m.text}" for m in matches]
    if getattr(matches, "truncated", False):
        lines.append(
            f"… (truncated at {len(matches)} matches; narrow the search or raise max_matches)"
        )
    return "\n".join(lines)


def _render_file_change(r: FileChange) -> str:
    if not r.ok:
        return r.message or "no change"
    if r.action == "unchanged":
        return r.message or f"{r.path} unchanged"
    done = f"{r.action} {r.path} ({r.bytes_written} bytes)"
    return f"{done}\n{r.message}" if r.message else done


def _render_edit(r: EditResult) -> str:
    if not r.ok:
        return r.message or "edit failed"
    if not r.changed:
        return f"{r.path}: no change (old text == new text)"
    noun = "replacement" if r.replacements == 1 else "replacements"
    done = f"edited {r.path} ({r.replacements} {noun})"
    return f"{done}\n{r.message}" if r.message else done


def _render_process_start(r: ProcessStart) -> str:
    return (
        f"started background process {r.process_id} (pid {r.pid}). Poll "
        f"read_process_output('{r.process_id}') for its output; kill_process('{r.process_id}') "
        "stops it."
    )


def _render_command(r: CommandResult) -> str:
    if r.timed_out:
        return ("command timed out\n" + r.stderr).strip()
    lines = [f"exit code: {r.exit_code}"]
    stdout = r.stdout.rstrip("\n")
    stderr = r.stderr.rstrip("\n")
    if stdout.strip():
        lines.append(stdout)
    if stderr.strip():
        lines.append(f"--- stderr ---\n{stderr}")
    if not stdout.strip() and not stderr.strip():
        lines.append("(no output)")
    return "\n".join(lines)


def _render_process_output(r: ProcessOutput) -> str:
    if r.status == "running":
        head = f"process {r.process_id}: running"
    elif r.status == "killed":
        head = f"process {r.process_id}: killed"
    else:
        head = f"process {r.process_id}: exited with code {r.exit_code}"
    lines = [head]
    if r.truncated:
        lines.append(
            "[... earlier output dropped: only the newest output is kept between reads ...]"
        )
    body = r.output.rstrip("\n")
    lines.append(body if body else "(no new output)")
    return "\n".join(lines)


def render_workspace_result(result: Any, ctx: RunContext[Any] | None = None) -> str:
    """Model-visible text for any workspace result (other values pass through)."""
    if isinstance(result, str):
        return result
    if isinstance(result, FileContent):
        return _render_file_content(result)
    if isinstance(result, FileChange):
        return _render_file_change(result)
    if isinstance(result, EditResult):
        return _render_edit(result)
    if isinstance(result, CommandResult):
        return _render_command(result)
    if isinstance(result, ProcessStart):
        return _render_process_start(result)
    if isinstance(result, ProcessOutput):
        return _render_process_output(result)
    if isinstance(result, list):
        if result and all(isinstance(x, DirEntry) for x in result):
            return _render_dir_entries(result)
        if result and all(isinstance(x, GrepMatch) for x in result):
            return _render_grep(result)
    return default_result_renderer(result)


def _renderer(kind: str) -> Callable[[Any, RunContext[Any]], str]:
    def render(result: Any, ctx: RunContext[Any]) -> str:
        if isinstance(result, list) and not result:
            return "(no entries)" if kind == "list" else "(no matches)"
        return render_workspace_result(result, ctx)

    return render
