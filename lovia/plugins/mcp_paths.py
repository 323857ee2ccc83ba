"""Paths an MCP tool's arguments name, judged by the run's workspace ACL.

An MCP server is a separate program: the workspace cannot see what it reads or writes. What it
can see is the arguments lovia sends, so every path in them is judged as ``read_file`` would
judge it (the session's ``decide_path``: resolved, symlinks followed, ``~`` expanded):

- **by the schema**: a property whose name looks like a path (``path``, ``file``, ``target``,
  ``dir``, ``cwd``, ``uri``, ``files``, ``output_dir``, ``configFile``, ...) or whose schema
  says ``format: path|file-path|uri|uri-reference|iri``, at any depth: nested objects, arrays
  (``items``), ``anyOf``/``oneOf``/``allOf`` and local ``$ref``s (``#/$defs/...``). Every string
  under such a property counts, relative ones relative to the workspace root;
- **by name without a schema**: an argument key with such a name anywhere in the arguments;
- **by value**: any string, under any name and at any depth, that is an absolute path
  (``/...``), a home path (``~``, ``~/...``), a relative escape (``./...``, ``../...``) or a
  ``file:`` URL.

A web address (``https://...``, any scheme but ``file``) is never a path. A denied path refuses
the call before the server is contacted; an ``ask`` path (outside the workspace, under the
default presets) needs approval even for a tool that otherwise runs unasked, and so does a
protected path (``.vscode/settings.json``, ``.git/hooks/...``) named to a tool the server does
not declare read-only (``readOnlyHint``). The tool's ``locations`` are the judged paths, so an
approval card shows them (and the server judges them again for its warning and detail).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from lovia.exceptions import ToolError
from lovia.tools.base import ApprovalPredicate
from lovia.tools.presentation import ToolLocation

if TYPE_CHECKING:
    from lovia.run_context import RunContext

_PATH_NAMES = frozenset(
    {
        "path",
        "file",
        "filename",
        "directory",
        "dir",
        "folder",
        "root",
        "cwd",
        "workdir",
        "workingdirectory",
        "uri",
        "source",
        "destination",
        "src",
        "dest",
        "target",
        "repository",
        "repo",
        "location",
        "workspace",
        "project",
        "mount",
    }
)
_PATH_SUFFIXES = ("path", "file", "filename", "dir", "directory", "folder", "uri", "root")
_PATH_FORMATS = frozenset({"path", "file-path", "uri", "uri-reference", "iri", "iri-reference"})
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_MAX_DEPTH = 32


def _path_name(name: str) -> bool:
    """Whether an argument named ``name`` holds paths (``files``, ``output_dir``, ``fileUri``)."""
    key = name.lower().replace("_", "").replace("-", "")
    key = key.removesuffix("s") if len(key) > 3 else key
    return key in _PATH_NAMES or key.endswith(_PATH_SUFFIXES)


def _local_path(value: str) -> str | None:
    """The local path a string names as a path argument, or None (a web address, an empty or
    multi-line string)."""
    text = value.strip()
    if not text or "\n" in text or "\x00" in text:
        return None
    if text[:5].lower() == "file:":
        parsed = urlparse(text)
        path = unquote(parsed.path) or "/"
        if parsed.netloc and parsed.netloc.lower() != "localhost":
            return f"//{parsed.netloc}{path}"
        return path
    if _SCHEME.match(text) and not re.match(r"^[A-Za-z]:[\\/]", text):
        return None  # https://..., s3://..., mailto:...: not a local path
    return text


def _looks_like_path(value: str) -> bool:
    """A string that is a path whatever argument it is in."""
    text = value.strip()
    if "\n" in text:
        return False
    return text.startswith(("/", "~/", "./", "../")) or text == "~" or text[:5].lower() == "file:"


@dataclass(frozen=True)
class JudgedPath:
    """One path an MCP call names: as written, where it resolves, and the workspace's verdict
    (``protected`` when writing it would change a protected path)."""

    raw: str
    shown: str
    decision: str
    protected: bool = False


@dataclass(frozen=True)
class PathArguments:
    """Where a tool's arguments name paths: its input ``schema`` (with its ``$defs``) and
    whether the server declares the tool read-only (then protected paths do not ask)."""

    schema: Mapping[str, Any] = field(default_factory=dict)
    read_only: bool = False

    # -------------------------------------------------------------- finding

    def found(self, args: Mapping[str, Any]) -> list[str]:
        """The local paths ``args`` name, once each, in order."""
        out: list[str] = []
        for value in self._walk(args, [self.schema], path_like=False, depth=0):
            path = _local_path(value)
            if path is not None and path not in out:
                out.append(path)
        return out

    def _resolve(self, schema: Any, depth: int) -> list[Mapping[str, Any]]:
        """``schema`` with local ``$ref``s followed and ``anyOf``/``oneOf``/``allOf`` spread."""
        if not isinstance(schema, Mapping) or depth > _MAX_DEPTH:
            return []
        out: list[Mapping[str, Any]] = [schema]
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/"):
            target: Any = self.schema
            for part in ref[2:].split("/"):
                target = target.get(part) if isinstance(target, Mapping) else None
            out += self._resolve(target, depth + 1)
        for key in ("anyOf", "oneOf", "allOf"):
            for alt in schema.get(key) or []:
                out += self._resolve(alt, depth + 1)
        return out

    def _walk(
        self, value: Any, schemas: list[Any], *, path_like: bool, depth: int
    ) -> Iterator[str]:
        if depth > _MAX_DEPTH:
            return
        spread = [s for schema in schemas for s in self._resolve(schema, depth)]
        if not path_like:
            path_like = any(s.get("format") in _PATH_FORMATS for s in spread)
        if isinstance(value, str):
            if path_like or _looks_like_path(value):
                yield value
        elif isinstance(value, list):
            items = [s.get("items") for s in spread if isinstance(s.get("items"), Mapping)]
            for item in value:
                yield from self._walk(item, items, path_like=path_like, depth=depth + 1)
        elif isinstance(value, Mapping):
            for key, inner in value.items():
                props = []
                for s in spread:
                    declared = s.get("properties")
                    if isinstance(declared, Mapping) and key in declared:
                        props.append(declared[key])
                    elif isinstance(s.get("additionalProperties"), Mapping):
                        props.append(s["additionalProperties"])
                named = isinstance(key, str) and _path_name(key)
                yield from self._walk(inner, props, path_like=path_like or named, depth=depth + 1)

    # -------------------------------------------------------------- judging

    def judge(self, args: Mapping[str, Any], ctx: RunContext[Any]) -> list[JudgedPath]:
        """Every path in ``args`` with the run's workspace verdict (none without a workspace)."""
        workspace = getattr(ctx, "workspace", None)
        if not callable(getattr(workspace, "decide_path", None)):
            return []
        return [_judge(workspace, path, self.read_only) for path in self.found(args)]

    def locations(self, args: Mapping[str, Any]) -> list[ToolLocation]:
        """The paths as the approval card lists them (relative ones from the root)."""
        out = []
        for path in self.found(args):
            shown = str(Path(path).expanduser()) if path.startswith("~") else path
            out.append(ToolLocation(shown))
        return out


def _judge(workspace: Any, path: str, read_only: bool) -> JudgedPath:
    """``path`` judged by the session (``decide_path``; ``protects`` and ``display_path`` where
    the session has them)."""
    try:
        decision = str(workspace.decide_path(path))
    except Exception:
        decision = "ask"  # cannot judge: a human decides
    shown, protected = path, False
    display, protects = (
        getattr(workspace, "display_path", None),
        getattr(workspace, "protects", None),
    )
    try:
        shown = str(display(path)) if callable(display) else path
        protected = not read_only and callable(protects) and bool(protects(path))
    except Exception:
        decision = "ask" if decision == "allow" else decision
    return JudgedPath(raw=path, shown=shown, decision=decision, protected=protected)


def guarded_approval(base: bool | ApprovalPredicate, spec: PathArguments) -> ApprovalPredicate:
    """``base`` plus: a call naming a path the workspace would ask about, or a protected path
    for a tool that may write, needs approval (a denied one does not: :func:`check_paths`
    refuses it when the call runs)."""

    def needs(args: dict[str, Any], ctx: RunContext[Any]) -> bool:
        judged = spec.judge(args, ctx)
        if any(j.decision == "deny" for j in judged):
            return False  # refused when it runs, with a clear error
        if any(j.decision != "allow" or j.protected for j in judged):
            return True
        return base(args, ctx) if callable(base) else bool(base)

    return needs


def check_paths(
    tool_name: str, args: Mapping[str, Any], ctx: RunContext[Any], spec: PathArguments
) -> None:
    """Refuse a call that names a denied path, before the server sees it."""
    for judged in spec.judge(args, ctx):
        if judged.decision == "deny":
            raise ToolError(
                f"{tool_name} may not use {judged.raw!r}: the workspace policy denies that path.",
                hint="MCP tools are held to the same denied paths as the built-in file tools; "
                "choose another path or ask the user.",
            )


__all__ = ["JudgedPath", "PathArguments", "check_paths", "guarded_approval"]
