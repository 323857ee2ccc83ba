"""The import graph of ``lovia`` and ``lovia_server`` has no cycles and respects the layers.

The layer rule (this docstring is where it is written down; docs/concepts.md "Layers"
points here, and the contributors' docs/architecture.md should too):

    lovia core       everything in ``lovia`` except ``lovia.workspace``;
                     never imports ``lovia.workspace`` or ``lovia_server``
    lovia.workspace  files + shell + ACL; never imports ``lovia_server``
    lovia_server     the editor host; may import both layers below

Imports only point downward and no two modules import each other, directly or
through others. The graph is built from the source with ``ast`` so it sees
every import a run could execute: module-level ones, imports inside functions
(lazy imports still run, and still close cycles), relative imports,
``importlib.import_module("literal")`` and the lazy-export tables of ``lovia._lazy``
(a module-level ``_LAZY = {name: "module"}``). Imports under ``if TYPE_CHECKING:`` are
left out: they never execute, so type-only references may point anywhere.
Module names computed at run time are not imports here: ``lovia.cli``'s subcommand
table names ``lovia_server`` modules as data (the spec'd ``lovia <command>`` dispatcher)
and loads them with ``importlib.import_module(variable)``.

An import of ``a.b`` is an edge to the module ``a.b`` only; the implicit import
of the parent package ``a`` is not an edge (every module would otherwise form a
cycle with its package's ``__init__``). ``from a import b`` is an edge to the
module ``a.b`` when that module exists, else to ``a``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("lovia", "lovia_server")

#: Cycles that are known and being removed on another branch, as the sorted
#: tuple of the modules in the cycle. Each entry must say where it is fixed;
#: the lead empties this after merging. An entry that no longer matches a
#: cycle fails the test, so the list cannot go stale.
KNOWN_CYCLES: frozenset[tuple[str, ...]] = frozenset()


#: Documented lazy seams: upward imports that run only when called, never at import
#: time, and so are left out of the cycle check. Each must stay inside a function.
LAZY_SEAMS: frozenset[tuple[str, str]] = frozenset(
    {
        # Agent.run/run_sync/stream and agent_as_tool start runs from below the runner.
        ("lovia._runner_seam", "lovia.runner"),
    }
)


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    line: int
    lazy: bool = False  # inside a function: runs when called, not on import

    def where(self) -> str:
        return f"{self.source} -> {self.target} (line {self.line})"


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def discover(root: Path = ROOT) -> dict[str, Path]:
    modules: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            modules[module_name(path, root)] = path
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    if isinstance(test, ast.Attribute):
        return test.attr == "TYPE_CHECKING"
    return False


_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def _runtime_nodes(nodes: list[ast.stmt]) -> Iterator[tuple[ast.AST, bool]]:
    """Every node under ``nodes`` except the bodies of ``if TYPE_CHECKING:``, each with
    whether it sits inside a function."""
    stack: list[tuple[ast.AST, bool]] = [(node, False) for node in reversed(nodes)]
    while stack:
        node, lazy = stack.pop()
        yield node, lazy
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            children: list[ast.AST] = list(node.orelse)
        else:
            children = list(ast.iter_child_nodes(node))
        inner = lazy or isinstance(node, _FUNCTIONS)
        stack.extend((child, inner) for child in reversed(children))


def _package_of(name: str, path: Path) -> str:
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def _resolve_relative(name: str, path: Path, level: int, module: str | None) -> str:
    base = _package_of(name, path).split(".")
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join([*base, module] if module else base)


def _internal(target: str, modules: dict[str, Path]) -> str | None:
    """The module in our packages that ``target`` names, or None if it is external."""
    while target:
        if target in modules:
            return target
        if "." not in target:
            return None
        target = target.rpartition(".")[0]
    return None


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> list[Edge]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    edges: dict[str, Edge] = {}

    def add(target: str, line: int, lazy: bool) -> None:
        resolved = _internal(target, modules)
        if resolved is None or resolved == name:
            return
        seen = edges.get(resolved)
        # One edge per target: the first module-level import, else the first lazy one.
        if seen is None or (seen.lazy and not lazy):
            edges[resolved] = Edge(name, resolved, line, lazy)

    for node, lazy in _runtime_nodes(tree.body):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, node.lineno, lazy)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = _resolve_relative(name, path, node.level, node.module)
            else:
                base = node.module or ""
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                add(submodule if submodule in modules else base, node.lineno, lazy)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute | ast.Name)
            and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id)
            == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            add(node.args[0].value, node.lineno, lazy)
        elif not lazy and _is_lazy_table(node):
            assert isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None
            for value in ast.walk(node.value):
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    add(value.value.partition(":")[0], value.lineno, True)
    return list(edges.values())


def _is_lazy_table(node: ast.AST) -> bool:
    """A module-level ``_LAZY = {...}``: names exported lazily, mapped to their modules."""
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, ast.AnnAssign):
        targets = [node.target]
    else:
        return False
    return any(isinstance(t, ast.Name) and t.id == "_LAZY" for t in targets)


def build_graph(root: Path = ROOT) -> dict[str, list[Edge]]:
    modules = discover(root)
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def without_seams(graph: dict[str, list[Edge]]) -> dict[str, list[Edge]]:
    return {
        name: [edge for edge in edges if (edge.source, edge.target) not in LAZY_SEAMS]
        for name, edges in graph.items()
    }


def strongly_connected(graph: dict[str, list[Edge]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative; returns the components with a cycle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, Iterator[Edge]]] = [(start, iter(graph[start]))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            advanced = False
            for edge in edges:
                target = edge.target
                if target not in index:
                    index[target] = low[target] = counter
                    counter += 1
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(graph[target])))
                    advanced = True
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def one_cycle(graph: dict[str, list[Edge]], component: list[str]) -> list[Edge]:
    """A shortest cycle through the component's first module, as the edges taken."""
    members = set(component)
    start = component[0]
    previous: dict[str, Edge] = {}
    frontier = [start]
    while frontier:
        following: list[str] = []
        for node in frontier:
            for edge in graph[node]:
                if edge.target not in members:
                    continue
                if edge.target == start:
                    path = [edge]
                    while path[0].source != start:
                        path.insert(0, previous[path[0].source])
                    return path
                if edge.target not in previous:
                    previous[edge.target] = edge
                    following.append(edge.target)
        frontier = following
    raise AssertionError(f"no cycle found in component {component}")


def layer_of(module: str) -> str:
    if module == "lovia_server" or module.startswith("lovia_server."):
        return "server"
    if module == "lovia.workspace" or module.startswith("lovia.workspace."):
        return "workspace"
    return "core"


#: Which layers each layer may import (imports only point downward).
ALLOWED = {
    "core": {"core"},
    "workspace": {"core", "workspace"},
    "server": {"core", "workspace", "server"},
}


#: lovia_server's parts (docs/architecture.md draws them): the two front doors import the host
#: core, the protocol and the transport, never each other; the host knows neither front door
#: nor the terminal client, and no transport (events leave through the sink a door gives it);
#: the transport (frame writer, JSON-RPC envelope, stdin reader, ``serve_stdio``) is the
#: protocol-neutral stdio both doors share, so it sits beside the host, below the doors, and
#: knows only the protocol's error codes; the protocol models know nothing else of the server.
#: Top-level modules (``lovia_server``, ``__main__``, ``version``) are entry points and may
#: import any part.
SERVER_PARTS = ("host", "lsp", "acp", "protocol", "chat", "batch", "transport")
SERVER_ALLOWED = {
    "protocol": {"protocol", "entry"},
    "transport": {"transport", "protocol", "entry"},
    "host": {"host", "protocol", "entry"},
    "lsp": {"lsp", "host", "protocol", "transport", "entry"},
    "acp": {"acp", "host", "protocol", "transport", "entry"},
    "chat": {"chat", "protocol", "entry"},
    # headless batches: the host core's built-in agent and prices, no front door
    "batch": {"batch", "host", "protocol", "entry"},
}


def server_part(module: str) -> str:
    """``host``, ``lsp``, ``acp``, ``protocol``, ``chat``, ``batch``, ``transport``, or
    ``entry`` for the top level."""
    parts = module.split(".")
    if len(parts) >= 2 and parts[1] in SERVER_PARTS:
        return parts[1]
    return "entry"


def server_part_report(graph: dict[str, list[Edge]]) -> list[str]:
    problems = []
    for edges in graph.values():
        for edge in edges:
            if layer_of(edge.source) != "server" or layer_of(edge.target) != "server":
                continue
            source, target = server_part(edge.source), server_part(edge.target)
            if source != "entry" and target not in SERVER_ALLOWED[source]:
                problems.append(f"{edge.where()}: {source} may not import {target}")
    return problems


def cycle_report(graph: dict[str, list[Edge]]) -> tuple[list[str], set[tuple[str, ...]]]:
    problems: list[str] = []
    seen: set[tuple[str, ...]] = set()
    for component in strongly_connected(graph):
        key = tuple(component)
        seen.add(key)
        if key in KNOWN_CYCLES:
            continue
        chain = one_cycle(graph, component)
        lines = "\n    ".join(edge.where() for edge in chain)
        problems.append(f"import cycle among {len(component)} modules {component}:\n    {lines}")
    return problems, seen


def layer_report(graph: dict[str, list[Edge]]) -> list[str]:
    return [
        f"{edge.where()}: {layer_of(edge.source)} may not import {layer_of(edge.target)}"
        for edges in graph.values()
        for edge in edges
        if layer_of(edge.target) not in ALLOWED[layer_of(edge.source)]
    ]


@pytest.fixture(scope="module")
def graph() -> dict[str, list[Edge]]:
    return build_graph()


def test_the_graph_covers_both_packages_and_sees_lazy_imports(graph: dict[str, list[Edge]]) -> None:
    assert "lovia" in graph and "lovia_server.lsp.language_server" in graph
    assert len(graph) > 50
    # lovia_server.lsp.language_server imports lovia_server.lsp.server_runtime inside a function, and lovia exports
    # Agent through its _LAZY table: both must be edges, or a cycle through them would hide.
    runtime = [
        e
        for e in graph["lovia_server.lsp.language_server"]
        if e.target == "lovia_server.lsp.server_runtime"
    ]
    assert runtime and runtime[0].lazy
    agent = [e for e in graph["lovia"] if e.target == "lovia.agent"]
    assert agent and agent[0].lazy


def test_no_import_cycles(graph: dict[str, list[Edge]]) -> None:
    problems, _ = cycle_report(without_seams(graph))
    assert not problems, "\n".join(problems)


def test_lazy_seams_exist_and_stay_inside_functions(graph: dict[str, list[Edge]]) -> None:
    """A seam imported at module level would be an import-time cycle; a gone one must leave
    LAZY_SEAMS."""
    edges = {(edge.source, edge.target): edge for edges in graph.values() for edge in edges}
    for seam in sorted(LAZY_SEAMS):
        assert seam in edges, f"remove from LAZY_SEAMS, this import is gone: {seam}"
        assert edges[seam].lazy, f"the seam {edges[seam].where()} must import inside a function"


def test_known_cycles_are_still_real(graph: dict[str, list[Edge]]) -> None:
    """An allow-listed cycle that has gone away must leave KNOWN_CYCLES too."""
    _, seen = cycle_report(without_seams(graph))
    stale = sorted(KNOWN_CYCLES - seen)
    assert not stale, f"remove from KNOWN_CYCLES, these cycles are gone: {stale}"


def test_imports_point_only_downward_through_the_layers(graph: dict[str, list[Edge]]) -> None:
    problems = layer_report(graph)
    assert not problems, "imports against the layers:\n" + "\n".join(problems)


def test_front_doors_import_the_host_core_never_each_other(graph: dict[str, list[Edge]]) -> None:
    """lsp and acp build on host and protocol only; host imports neither front door."""
    problems = server_part_report(graph)
    assert not problems, "imports across lovia_server's parts:\n" + "\n".join(problems)
    top = {name for name in graph if layer_of(name) == "server" and server_part(name) == "entry"}
    assert top <= {"lovia_server", "lovia_server.__main__", "lovia_server.version"}, (
        f"lovia_server's top level holds only entry modules; move these into a part: {top}"
    )


def test_a_cycle_is_reported_with_its_path(tmp_path: Path) -> None:
    """The checker itself finds a cycle made of a module-level and a lazy import."""
    pkg = tmp_path / "lovia"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("_LAZY = {'A': 'lovia.c'}\n")
    (pkg / "a.py").write_text("from lovia import b\n")
    (pkg / "b.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from lovia import c\n"
        "def f():\n    from . import a\n"
    )
    (pkg / "c.py").write_text("import lovia.a\nimport lovia\n")
    (tmp_path / "lovia_server").mkdir()
    (tmp_path / "lovia_server" / "__init__.py").write_text("")
    graph = build_graph(tmp_path)
    # lovia -> lovia.c through the lazy table, lovia.c -> lovia at module level.
    assert sorted(strongly_connected(graph)) == [["lovia", "lovia.c"], ["lovia.a", "lovia.b"]]
    chain = one_cycle(graph, ["lovia.a", "lovia.b"])
    assert [edge.where() for edge in chain] == [
        "lovia.a -> lovia.b (line 1)",
        "lovia.b -> lovia.a (line 5)",
    ]


def test_an_import_between_front_doors_is_reported(tmp_path: Path) -> None:
    (tmp_path / "lovia").mkdir()
    (tmp_path / "lovia" / "__init__.py").write_text("")
    server = tmp_path / "lovia_server"
    for part in ("host", "lsp", "acp"):
        (server / part).mkdir(parents=True)
        (server / part / "__init__.py").write_text("")
    (server / "__init__.py").write_text("")
    (server / "__main__.py").write_text("import lovia_server.lsp.a\nimport lovia_server.acp.b\n")
    (server / "host" / "core.py").write_text("def f():\n    import lovia_server.lsp.a\n")
    (server / "lsp" / "a.py").write_text("import lovia_server.host.core\n")
    (server / "acp" / "b.py").write_text("from lovia_server.lsp import a\n")
    assert server_part_report(build_graph(tmp_path)) == [
        "lovia_server.acp.b -> lovia_server.lsp.a (line 1): acp may not import lsp",
        "lovia_server.host.core -> lovia_server.lsp.a (line 2): host may not import lsp",
    ]


def test_a_layer_break_is_reported(tmp_path: Path) -> None:
    pkg = tmp_path / "lovia"
    (pkg / "workspace").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "workspace" / "__init__.py").write_text("import lovia_server.x\n")
    (pkg / "core.py").write_text(
        "import typing\nif typing.TYPE_CHECKING:\n    import lovia.workspace\n"
        "def f():\n    from .workspace import thing\n"
    )
    (tmp_path / "lovia_server").mkdir()
    (tmp_path / "lovia_server" / "__init__.py").write_text("")
    (tmp_path / "lovia_server" / "x.py").write_text("import lovia.core\n")
    assert layer_report(build_graph(tmp_path)) == [
        "lovia.core -> lovia.workspace (line 5): core may not import workspace",
        "lovia.workspace -> lovia_server.x (line 1): workspace may not import server",
    ]
