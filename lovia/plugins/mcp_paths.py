"""Paths an MCP tool's arguments name, judged by the run's workspace ACL.

An MCP server is a separate program: the workspace cannot see what it reads or writes. What it
can see is the arguments lovia sends. A tool that declares a path argument (by the property's
name, such as ``path`` or ``file_path``, or by ``format: "path"``/``"uri"``) gets each value
judged as ``read_file`` would judge it: a denied path refuses the call before the server is
contacted, and an ``ask`` path (outside the workspace, under the default presets) needs
approval even for a tool that otherwise runs unasked. What the server then does with the path
is its own business: a tool that writes is gated by asking for it (``needs_approval``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from lovia.exceptions import ToolError
from lovia.tools.base import ApprovalPredicate

if TYPE_CHECKING:
    from lovia.run_context import RunContext

_PATH_NAMES = frozenset(
    {
        "path",
        "paths",
        "file",
        "files",
        "filepath",
        "filepaths",
        "filename",
        "filenames",
        "directory",
        "directories",
        "dir",
        "dirs",
        "folder",
        "folders",
        "root",
        "cwd",
        "workdir",
        "workingdirectory",
        "uri",
        "uris",
        "source",
        "destination",
        "src",
        "dest",
        "sourcepath",
        "destinationpath",
        "targetpath",
        "repopath",
        "repository",
    }
)
_PATH_FORMATS = frozenset({"path", "file-path", "uri", "uri-reference", "iri"})


def path_arguments(schema: Mapping[str, Any]) -> frozenset[str]:
    """The top-level properties of an input schema that name files or directories."""
    props = schema.get("properties")
    if not isinstance(props, Mapping):
        return frozenset()
    out = set()
    for name, spec in props.items():
        if not isinstance(name, str):
            continue
        key = name.lower().replace("_", "").replace("-", "")
        fmt = spec.get("format") if isinstance(spec, Mapping) else None
        items = spec.get("items") if isinstance(spec, Mapping) else None
        if isinstance(items, Mapping) and fmt is None:
            fmt = items.get("format")
        if key in _PATH_NAMES or fmt in _PATH_FORMATS:
            out.add(name)
    return frozenset(out)


def _values(args: Mapping[str, Any], names: frozenset[str]) -> Iterator[str]:
    for name in names:
        value = args.get(name)
        for item in value if isinstance(value, list) else [value]:
            if not isinstance(item, str) or not item.strip():
                continue
            if "://" in item:
                parsed = urlparse(item)
                if parsed.scheme != "file":
                    continue  # a web address is not a local path
                item = unquote(parsed.path)
            yield item


def _decisions(
    args: Mapping[str, Any], ctx: RunContext[Any], names: frozenset[str]
) -> Iterator[tuple[str, str]]:
    workspace = getattr(ctx, "workspace", None)
    decide = getattr(workspace, "decide_path", None)
    if not callable(decide):
        return
    for path in _values(args, names):
        try:
            yield path, str(decide(path))
        except Exception:
            yield path, "ask"  # cannot judge: a human decides


def guarded_approval(
    base: bool | ApprovalPredicate, names: frozenset[str]
) -> bool | ApprovalPredicate:
    """``base`` plus: a call naming a path the workspace would ask about needs approval (a
    denied one does not: :func:`check_paths` refuses it)."""
    if not names:
        return base

    def needs(args: dict[str, Any], ctx: RunContext[Any]) -> bool:
        verdicts = [d for _, d in _decisions(args, ctx, names)]
        if "deny" in verdicts:
            return False  # refused when it runs, with a clear error
        if "ask" in verdicts:
            return True
        return base(args, ctx) if callable(base) else bool(base)

    return needs


def check_paths(
    tool_name: str,
    args: Mapping[str, Any],
    ctx: RunContext[Any],
    names: frozenset[str],
) -> None:
    """Refuse a call that names a denied path, before the server sees it."""
    for path, decision in _decisions(args, ctx, names):
        if decision == "deny":
            raise ToolError(
                f"{tool_name} may not use {path!r}: the workspace policy denies that path.",
                hint="MCP tools are held to the same denied paths as the built-in file tools; "
                "choose another path or ask the user.",
            )


__all__ = ["check_paths", "guarded_approval", "path_arguments"]
