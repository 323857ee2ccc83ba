"""How the workspace tools show in an editor: titles, locations and diff previews."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lovia.tools.presentation import FileDiff, TitleFn, ToolLocation, path_title, short
from lovia.workspace.edits import apply_edit
from lovia.workspace.errors import WorkspaceError
from lovia.workspace.paths import resolve_path

# --------------------------------------------------------------------------- presentation


def _read_title(args: Mapping[str, Any]) -> str:
    rng = ""
    if args.get("start") or args.get("end"):
        rng = f" (lines {args.get('start') or 1}-{args.get('end') or 'end'})"
    return path_title("Read")(args) + rng


def _grep_title(args: Mapping[str, Any]) -> str:
    path = args.get("path")
    where = path if isinstance(path, str) and path else "."
    return f"Search {short(args.get('pattern', ''), 40)!r} in {where}"


def _shell_title(args: Mapping[str, Any]) -> str:
    description = args.get("description")
    if isinstance(description, str) and description.strip():
        return short(description)
    return f"Run `{short(args.get('command', ''), 70)}`"


def _shell_locations(args: Mapping[str, Any]) -> list[ToolLocation]:
    cwd = args.get("cwd")
    return [ToolLocation(cwd)] if isinstance(cwd, str) and cwd not in ("", ".") else []


def _process_title(verb: str) -> TitleFn:
    def title(args: Mapping[str, Any]) -> str:
        return f"{verb} {args.get('process_id', 'process')}"

    return title


def _preview_target(workspace: Any, path: Any) -> str | None:
    """The absolute path a preview shows, or None when ``workspace`` cannot preview."""
    root = getattr(workspace, "root", None)
    if not isinstance(path, str) or root is None or not hasattr(workspace, "current_text"):
        return None
    return str(resolve_path(Path(root), path).abs)


async def _preview_write(args: Mapping[str, Any], workspace: Any) -> list[FileDiff]:
    """``write_file``'s change: the current text (None for a new file) -> ``content``."""
    content = args.get("content")
    try:
        target = _preview_target(workspace, args.get("path"))
        if target is None or not isinstance(content, str):
            return []
        old = await workspace.current_text(args["path"])
    except WorkspaceError:
        return []
    return [FileDiff(path=target, oldText=old, newText=content)]


async def _preview_edit(args: Mapping[str, Any], workspace: Any) -> list[FileDiff]:
    """``edit_file``'s change, computed with the same :func:`apply_edit` the session runs."""
    old, new = args.get("old"), args.get("new")
    if not isinstance(old, str) or not isinstance(new, str):
        return []
    try:
        target = _preview_target(workspace, args.get("path"))
        if target is None:
            return []
        text = await workspace.current_text(args["path"])
        if text is None:
            return []
        new_text, _ = apply_edit(text, old, new, replace_all=bool(args.get("replace_all")))
    except WorkspaceError:
        return []
    return [FileDiff(path=target, oldText=text, newText=new_text)]
