"""MCP tool arguments that name paths are judged by the run's workspace."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from lovia.exceptions import ToolError
from lovia.plugins.mcp_paths import PathArguments, check_paths, guarded_approval
from lovia.workspace import LocalWorkspaceSession, WorkspacePolicy


def test_paths_are_found_by_schema_name_and_value_at_any_depth():
    schema = {
        "type": "object",
        "$defs": {"Out": {"type": "object", "properties": {"to": {"format": "path"}}}},
        "properties": {
            "path": {"type": "string"},
            "file_path": {"type": "string"},
            "Paths": {"type": "array", "items": {"type": "string"}},
            "where": {"type": "string", "format": "uri"},
            "either": {"anyOf": [{"type": "integer"}, {"type": "string", "format": "path"}]},
            "out": {"$ref": "#/$defs/Out"},
            "query": {"type": "string"},
            "count": {"type": "integer"},
        },
    }
    spec = PathArguments(schema)
    args = {
        "path": "a.txt",
        "file_path": "b.txt",
        "Paths": ["c.txt", "d.txt"],
        "where": "file:///etc/hostname",
        "either": "e.txt",
        "out": {"to": "f.txt"},
        "query": "plain words",
        "count": 3,
        "options": {"target": "g.txt", "deep": [{"name": "/abs/h"}, {"x": "~/i"}]},
        "files": [{"name": "j.txt"}],
        "link": "https://example.com/k",
        "note": "./l.txt",
    }
    assert spec.found(args) == [
        "a.txt",
        "b.txt",
        "c.txt",
        "d.txt",
        "/etc/hostname",
        "e.txt",
        "f.txt",
        "g.txt",
        "/abs/h",
        "~/i",
        "j.txt",
        "./l.txt",
    ]
    assert PathArguments({"type": "object"}).found({"query": "x", "n": 1}) == []


@pytest.fixture
def ctx(tmp_path: Path) -> SimpleNamespace:
    root = (tmp_path / "ws").resolve()
    root.mkdir()
    (root / ".env").write_text("KEY=1\n")
    policy = WorkspacePolicy.coding(denied_paths=(".env",))
    return SimpleNamespace(workspace=LocalWorkspaceSession(root, policy=policy), root=root)


def test_a_denied_path_is_refused_in_every_spelling(ctx):
    spec = PathArguments({"type": "object", "properties": {"path": {}, "files": {}}})
    for args in (
        {"path": ".env"},
        {"path": str(ctx.root / ".ENV")},
        {"path": (ctx.root / ".env").as_uri()},
        {"files": ["README.md", "sub/../.env"]},
        {"query": (ctx.root / ".env").as_uri()},
        {"options": {"target": ".env"}},
    ):
        with pytest.raises(ToolError, match="denies that path"):
            check_paths("read", args, ctx, spec)
        assert guarded_approval(False, spec)(args, ctx) is False  # refused, not asked
    check_paths("read", {"path": "README.md", "files": ["https://example.com/.env"]}, ctx, spec)


def test_an_outside_path_asks_even_for_an_approved_tool(ctx):
    needs = guarded_approval(False, PathArguments())
    assert needs({"path": "/etc/hostname"}, ctx) is True
    assert needs({"deep": [{"x": "/etc/hostname"}]}, ctx) is True
    assert needs({"path": "README.md"}, ctx) is False
    assert guarded_approval(True, PathArguments())({"path": "README.md"}, ctx) is True


def test_a_protected_path_asks_unless_the_tool_is_read_only(ctx):
    args = {"path": ".vscode/settings.json"}
    assert guarded_approval(False, PathArguments())(args, ctx) is True
    assert guarded_approval(False, PathArguments(read_only=True))(args, ctx) is False
    (judged,) = PathArguments().judge(args, ctx)
    assert judged.protected and judged.decision == "allow"


def test_without_a_workspace_nothing_changes():
    needs = guarded_approval(False, PathArguments())
    assert needs({"path": "/etc/shadow"}, SimpleNamespace(workspace=None)) is False
    check_paths("x", {"path": "/etc/shadow"}, SimpleNamespace(workspace=None), PathArguments())
