"""The workspace's modules import each other without cycles (function-level imports too)."""

from __future__ import annotations

import ast
from pathlib import Path

import lovia.workspace

PACKAGE = "lovia.workspace"
PACKAGE_DIR = Path(lovia.workspace.__file__).parent


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE_DIR).with_suffix("")
    parts = [p for p in rel.parts if p != "__init__"]
    return ".".join([PACKAGE, *parts])


def _import_graph() -> dict[str, set[str]]:
    """Edges between submodules (package ``__init__`` files excluded: they only re-export)."""
    files = {_module_name(p): p for p in PACKAGE_DIR.rglob("*.py")}
    packages = {_module_name(p) for p in PACKAGE_DIR.rglob("__init__.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        if name in packages:
            continue
        edges: set[str] = set()
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):  # every level: module, function, TYPE_CHECKING blocks
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.rsplit(".", node.level)[0]
                    mod = f"{base}.{node.module}" if node.module else base
                else:
                    mod = node.module or ""
                targets = [
                    f"{mod}.{a.name}" if f"{mod}.{a.name}" in files else mod for a in node.names
                ]
            for t in targets:
                if t in files and t not in packages and t != name:
                    edges.add(t)
        graph[name] = edges
    return graph


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_workspace_modules_have_no_import_cycle() -> None:
    assert _find_cycle(_import_graph()) is None


def test_the_guard_does_not_import_the_policy() -> None:
    graph = _import_graph()
    guard = {m for m in graph if m.startswith(f"{PACKAGE}.command_guard")}
    assert guard
    for module in guard:
        assert f"{PACKAGE}.policy" not in graph[module], module


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _find_cycle({"a": {"b"}, "b": set()}) is None
