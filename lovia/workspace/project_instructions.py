"""Project instructions: the repository's own rules files (``AGENTS.md`` and friends).

The files that apply everywhere (the user's ``~/.lovia/AGENTS.md``, the root's ``AGENTS.md``,
``CLAUDE.md``, ``.github/copilot-instructions.md`` and ``.github/instructions`` files whose
``applyTo`` covers every file) join the system prompt once per run. The others — an
``AGENTS.md`` or ``CLAUDE.md`` in a folder below the root, a ``.github/instructions`` file whose
``applyTo`` matches some files — join later, ahead of the result of the first file tool call
that reaches a matching path, once per conversation: the system prompt never changes in the
middle of a conversation, so the provider's prompt cache keeps its prefix.

Every file is read through the workspace policy: a file the rules do not let the agent read is
never read. Sizes are bounded per file and in total, with a visible note where a file is cut.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from lovia.workspace.paths import resolve_path

if TYPE_CHECKING:
    from lovia.run_context import RunContext
    from lovia.tools.base import Tool, ToolInvoker
    from lovia.workspace.policy import WorkspacePolicy

FOLDER_FILES: tuple[str, ...] = ("AGENTS.md", "CLAUDE.md")
"""Read at the root and in every folder between the root and the files the agent works on."""
COPILOT_FILE = ".github/copilot-instructions.md"
SCOPED_DIR = ".github/instructions"
SCOPED_SUFFIX = ".instructions.md"

INSTRUCTION_PROTECTED_PATHS: tuple[str, ...] = (*FOLDER_FILES, COPILOT_FILE, SCOPED_DIR)
"""Protected-path patterns of the instruction files (``AGENTS.md`` at any depth, ...)."""

PATH_TOOLS: frozenset[str] = frozenset(
    {"read_file", "write_file", "edit_file", "list_files", "grep_files", "view_image"}
)
"""The file tools whose ``path`` brings the instructions that cover it into the conversation."""

USER_INSTRUCTIONS = "~/.lovia/AGENTS.md"
"""The user's own instructions, for every project (lovia's user directory is ``~/.lovia``)."""

Scope = Literal["user", "root", "folder", "scoped"]


@dataclass(frozen=True)
class ProjectInstructions:
    """Workspace option: read the project's instruction files (see the module docstring).

    ``user_file`` is the user's own file (outside the workspace; only ``denied_paths`` can keep
    it out); sizes are in characters."""

    user_file: str | None = None
    max_file_chars: int = 16_000
    max_total_chars: int = 48_000


@dataclass(frozen=True)
class InstructionFile:
    """One instruction file as the model sees it."""

    path: str
    """Root-relative (the user file: absolute)."""
    scope: Scope
    text: str
    cut: bool = False
    apply_to: tuple[str, ...] = ()


# --------------------------------------------------------------------------- reading


def _readable(root: Path, policy: WorkspacePolicy, rel: str) -> Path | None:
    """The file at ``rel`` when the policy lets the agent read it (symlinks judged by their
    target: one that leaves the workspace is read only where reading outside is allowed)."""
    try:
        resolved = resolve_path(root, rel)
    except Exception:
        return None
    decision = policy.decide_path(rel=resolved.rel, abs_posix=resolved.abs_posix, op="read")
    if decision != "allow" or not resolved.abs.is_file():
        return None
    return resolved.abs


def _read(path: Path, limit: int) -> str | None:
    try:
        with path.open("rb") as handle:
            data = handle.read(limit * 4 + 4)
    except OSError:
        return None
    return data.decode("utf-8", errors="replace")


def _bounded(shown: str, text: str, limit: int) -> tuple[str, bool]:
    if len(text) <= limit:
        return text.strip(), False
    note = f"[lovia: {shown} was cut to its first {limit:,} characters]"
    return f"{text[:limit].rstrip()}\n\n{note}", True


def parse_front_matter(text: str) -> tuple[dict[str, str], str]:
    """``---``-fenced ``key: value`` lines at the top of a file, and the body after them."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return {}, text
    fields: dict[str, str] = {}
    for index, line in enumerate(lines[1:], start=1):
        if line.strip() == "---":
            return fields, "".join(lines[index + 1 :])
        key, sep, value = line.partition(":")
        if sep and key.strip():
            fields[key.strip()] = value.strip().strip("'\"")
    return {}, text


def apply_to_patterns(value: str) -> tuple[str, ...]:
    """Copilot's ``applyTo``: one glob or several, comma-separated."""
    return tuple(p.strip().strip("'\"").lstrip("/") for p in value.split(",") if p.strip())


def _glob_regex(pattern: str) -> re.Pattern[str]:
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def glob_matches(pattern: str, rel: str) -> bool:
    """``rel`` (root-relative, ``/``-separated) matches ``pattern``: ``*`` and ``?`` within a
    name, ``**`` across folders, as VS Code's globs."""
    return _glob_regex(pattern).match(rel) is not None


def _covers_everything(patterns: tuple[str, ...]) -> bool:
    return any(p in ("**", "**/*", "*/**") for p in patterns)


class _Budget:
    def __init__(self, options: ProjectInstructions) -> None:
        self.options = options
        self.left = options.max_total_chars

    def take(self, shown: str, raw: str) -> tuple[str, bool] | None:
        if self.left <= 0:
            return None
        limit = min(self.options.max_file_chars, self.left)
        text, cut = _bounded(shown, raw, limit)
        self.left -= min(len(raw), limit)
        return text, cut


def _load(
    root: Path,
    policy: WorkspacePolicy,
    rel: str,
    scope: Scope,
    budget: _Budget,
    *,
    scoped: bool = False,
) -> InstructionFile | None:
    path = _readable(root, policy, rel)
    if path is None:
        return None
    raw = _read(path, budget.options.max_file_chars)
    if raw is None:
        return None
    apply_to: tuple[str, ...] = ()
    if scoped:
        fields, raw = parse_front_matter(raw)
        apply_to = apply_to_patterns(fields.get("applyTo", ""))
    if not raw.strip():
        return None
    taken = budget.take(rel, raw)
    if taken is None:
        return None
    return InstructionFile(rel, scope, taken[0], taken[1], apply_to)


def _scoped_files(root: Path, policy: WorkspacePolicy, budget: _Budget) -> list[InstructionFile]:
    folder = _readable_dir(root, policy, SCOPED_DIR)
    if folder is None:
        return []
    try:
        names = sorted(n.name for n in folder.iterdir() if n.name.endswith(SCOPED_SUFFIX))
    except OSError:
        return []
    found: list[InstructionFile] = []
    for name in names[:64]:
        loaded = _load(root, policy, f"{SCOPED_DIR}/{name}", "scoped", budget, scoped=True)
        if loaded is not None and loaded.apply_to:
            found.append(loaded)
    return found


def _readable_dir(root: Path, policy: WorkspacePolicy, rel: str) -> Path | None:
    try:
        resolved = resolve_path(root, rel)
    except Exception:
        return None
    if resolved.rel is None or not resolved.abs.is_dir():
        return None
    if policy.decide_path(rel=resolved.rel, abs_posix=resolved.abs_posix, op="read") != "allow":
        return None
    return resolved.abs


def _user_file(options: ProjectInstructions, policy: WorkspacePolicy) -> InstructionFile | None:
    if not options.user_file:
        return None
    try:
        path = Path(options.user_file).expanduser().resolve()
    except (OSError, RuntimeError, ValueError):
        return None
    if policy.is_denied(rel=None, abs_posix=path.as_posix()) or not path.is_file():
        return None
    raw = _read(path, options.max_file_chars)
    if raw is None or not raw.strip():
        return None
    text, cut = _bounded(str(path), raw, options.max_file_chars)
    return InstructionFile(str(path), "user", text, cut)


def startup_files(
    root: str | Path, policy: WorkspacePolicy, options: ProjectInstructions
) -> list[InstructionFile]:
    """The files that apply everywhere, as the system prompt carries them (most general first:
    the user's, then the project's)."""
    base = Path(root).resolve()
    budget = _Budget(options)
    found: list[InstructionFile] = []
    user = _user_file(options, policy)
    if user is not None:
        found.append(user)
        budget.left -= len(user.text)
    for rel in (*FOLDER_FILES, COPILOT_FILE):
        loaded = _load(base, policy, rel, "root", budget)
        if loaded is not None:
            found.append(loaded)
    found += [f for f in _scoped_files(base, policy, budget) if _covers_everything(f.apply_to)]
    return found


def scoped_files(
    root: str | Path, policy: WorkspacePolicy, options: ProjectInstructions
) -> list[InstructionFile]:
    """The ``.github/instructions`` files that apply only to some files (their ``applyTo``)."""
    files = _scoped_files(Path(root).resolve(), policy, _Budget(options))
    return [f for f in files if not _covers_everything(f.apply_to)]


def files_for(
    root: str | Path, policy: WorkspacePolicy, options: ProjectInstructions, path: str
) -> list[InstructionFile]:
    """The instructions that join when the agent works on ``path``: the ``AGENTS.md`` and
    ``CLAUDE.md`` of each folder from below the root down to it (outermost first, so the
    nearest comes last) and the ``applyTo`` files matching it. Paths outside the root: none."""
    base = Path(root).resolve()
    try:
        resolved = resolve_path(base, path)
    except Exception:
        return []
    if resolved.rel is None or resolved.rel in ("", "."):
        return []
    parts = resolved.rel.split("/")
    folders = parts if resolved.abs.is_dir() else parts[:-1]
    budget = _Budget(options)
    found: list[InstructionFile] = []
    for depth in range(1, len(folders) + 1):
        folder = "/".join(folders[:depth])
        for name in FOLDER_FILES:
            loaded = _load(base, policy, f"{folder}/{name}", "folder", budget)
            if loaded is not None:
                found.append(loaded)
    if not resolved.abs.is_dir():
        for scoped in scoped_files(base, policy, options):
            if any(glob_matches(p, resolved.rel) for p in scoped.apply_to):
                found.append(scoped)
    return found


# --------------------------------------------------------------------------- the prompt


def _block(file: InstructionFile) -> str:
    where = f' applyTo="{", ".join(file.apply_to)}"' if file.apply_to else ""
    return (
        f'<project-instructions source="{file.path}"{where}>\n{file.text}\n</project-instructions>'
    )


def system_section(files: Iterable[InstructionFile]) -> str:
    """The system prompt's section for the files that apply everywhere ("" when none)."""
    blocks = [_block(f) for f in files]
    if not blocks:
        return ""
    return "\n\n".join(
        [
            "## Project instructions",
            "The user and the project wrote these rules for agents working here; follow them. "
            "More instructions may join later, ahead of a tool result, when you work under a "
            "folder that has its own AGENTS.md or on files a scoped instructions file covers. "
            "Where they disagree, the more specific wins: a folder's file over its parent's, "
            "the project's over the user's, and the user's direct requests over all of them.",
            *blocks,
        ]
    )


def delivered(entries: Iterable[Any]) -> set[str]:
    """Sources already in the conversation (their block in a tool result or a message)."""
    seen: set[str] = set()
    for entry in entries:
        text = getattr(entry, "output", None)
        if text is None:
            text = getattr(entry, "content", None)
        if isinstance(text, str) and "<project-instructions " in text:
            seen.update(re.findall(r'<project-instructions source="([^"]+)"', text))
    return seen


def joining_note(files: list[InstructionFile]) -> str:
    """What goes ahead of a tool result when ``files`` join the conversation."""
    names = ", ".join(f.path for f in files)
    return "\n\n".join(
        [
            f"[lovia: project instructions for this path ({names}); they apply to your work "
            "under it and take precedence over more general ones]",
            *(_block(f) for f in files),
        ]
    )


def join_policy(
    root: str | Path, policy: WorkspacePolicy, options: ProjectInstructions, tool: Tool
) -> Any:
    """A tool policy putting the instructions that cover the call's ``path`` (not yet in the
    conversation) ahead of its result."""

    async def with_instructions(invoke: ToolInvoker, args: dict[str, Any], ctx: Any) -> Any:
        result = await invoke(args, ctx)
        raw = args.get("path")
        if not isinstance(raw, str) or getattr(result, "ok", True) is False:
            return result
        files = files_for(root, policy, options, raw)
        if not files:
            return result
        claimed = _claimed_by_run(ctx)
        seen = delivered(getattr(ctx, "entries", ())) | claimed
        fresh = [f for f in files if f.path not in seen]
        if not fresh:
            return result
        # Claimed before the next await: calls of one turn finish before any of their results
        # is in the conversation, and only the first of them may bring a file in.
        claimed.update(f.path for f in fresh)
        rendered = await _render(tool, result, ctx)
        return f"{joining_note(fresh)}\n\n{rendered}"

    return with_instructions


_CLAIMED: dict[int, set[str]] = {}


def _claimed_by_run(ctx: Any) -> set[str]:
    """Sources a call of this run has already put ahead of its result (not yet in entries).

    Keyed by identity (a run context is not hashable) and dropped with the context."""
    key = id(ctx)
    claimed = _CLAIMED.get(key)
    if claimed is None:
        try:
            weakref.finalize(ctx, _CLAIMED.pop, key, None)
        except TypeError:  # a context that cannot be weakly referenced: entries alone decide
            return set()
        claimed = _CLAIMED[key] = set()
    return claimed


async def _render(tool: Tool, result: Any, ctx: RunContext[Any]) -> str:
    from lovia.tools.base import render_tool_result

    return await render_tool_result(tool, result, ctx)


def with_join_policies(
    tools: list[Tool], root: str | Path, policy: WorkspacePolicy, options: ProjectInstructions
) -> list[Tool]:
    """``tools`` with the file tools bringing in the instructions of the paths they reach."""
    import copy

    out: list[Tool] = []
    for tool in tools:
        if tool.name in PATH_TOOLS:
            tool = copy.copy(tool)
            tool.policies = (join_policy(root, policy, options, tool), *tool.policies)
        out.append(tool)
    return out


__all__ = [
    "FOLDER_FILES",
    "INSTRUCTION_PROTECTED_PATHS",
    "USER_INSTRUCTIONS",
    "InstructionFile",
    "ProjectInstructions",
    "apply_to_patterns",
    "delivered",
    "files_for",
    "glob_matches",
    "joining_note",
    "parse_front_matter",
    "scoped_files",
    "startup_files",
    "system_section",
    "with_join_policies",
]
