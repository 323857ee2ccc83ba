"""MCP tool arguments that name paths are judged by the run's workspace."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from lovia.exceptions import ToolError
from lovia.plugins.mcp_paths import check_paths, guarded_approval, path_arguments
from lovia.workspace import LocalWorkspaceSession, WorkspacePolicy


def test_path_arguments_are_found_by_name_and_format():
    schema = {
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "file_path": {"type": "string"},
            "Paths": {"type": "array", "items": {"type": "string"}},
            "target": {"type": "string", "format": "uri"},
            "query": {"type": "string"},
            "count": {"type": "integer"},
        },
    }
    assert path_arguments(schema) == {"path", "file_path", "Paths", "target"}
    assert path_arguments({"type": "object"}) == frozenset()


@pytest.fixture
def ctx(tmp_path: Path) -> SimpleNamespace:
    root = (tmp_path / "ws").resolve()
    root.mkdir()
    (root / ".env").write_text("KEY=1\n")
    policy = WorkspacePolicy.coding(denied_paths=(".env",))
    return SimpleNamespace(workspace=LocalWorkspaceSession(root, policy=policy), root=root)


def test_a_denied_path_is_refused_in_every_spelling(ctx):
    names = frozenset({"path", "files"})
    for args in (
        {"path": ".env"},
        {"path": str(ctx.root / ".ENV")},
        {"path": (ctx.root / ".env").as_uri()},
        {"files": ["README.md", "sub/../.env"]},
    ):
        with pytest.raises(ToolError, match="denies that path"):
            check_paths("read", args, ctx, names)
        assert guarded_approval(False, names)(args, ctx) is False  # refused, not asked
    check_paths("read", {"path": "README.md", "files": ["https://example.com/.env"]}, ctx, names)


def test_an_outside_path_asks_even_for_an_approved_tool(ctx):
    needs = guarded_approval(False, frozenset({"path"}))
    assert needs({"path": "/etc/hostname"}, ctx) is True
    assert needs({"path": "README.md"}, ctx) is False
    assert guarded_approval(True, frozenset({"path"}))({"path": "README.md"}, ctx) is True


def test_without_a_workspace_or_path_arguments_nothing_changes():
    assert guarded_approval(True, frozenset()) is True
    needs = guarded_approval(False, frozenset({"path"}))
    assert needs({"path": "/etc/shadow"}, SimpleNamespace(workspace=None)) is False
    check_paths("x", {"path": "/etc/shadow"}, SimpleNamespace(workspace=None), frozenset({"path"}))
