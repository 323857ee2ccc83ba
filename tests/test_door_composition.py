"""The two front doors build no part of the host themselves: ``HostCore.open`` assembles it.

A door (``lovia_server/lsp``, ``lovia_server/acp`` and the entry points) brings its ports
(``DoorPorts``: editor, event sink, workspace, where its conversations work) and translates its
protocol into host calls. Were it to construct a publisher, a supervisor, an agent factory or
the worktree runs, or to rewire one after construction, the composition would be written twice
again (issue 37). Checked from the source with ``ast``.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: What only the host constructs.
HOST_PARTS = frozenset(
    {
        "AgentFactory",
        "HostCore",
        "HumanChannel",
        "MCPPolicy",
        "Publisher",
        "RunSupervisor",
        "SQLiteCheckpointer",
        "SQLiteSession",
        "ServerStore",
        "WorktreeChildren",
        "WorktreeRuns",
    }
)
#: Host methods that assemble part of it (``HostCore.open`` is the one way in).
HOST_BUILDERS = frozenset({"open_store"})


def door_modules(root: Path = ROOT) -> list[Path]:
    server = root / "lovia_server"
    return sorted(
        [*(server / "lsp").rglob("*.py"), *(server / "acp").rglob("*.py"), server / "__main__.py"]
    )


def host_parts_built(path: Path, root: Path = ROOT) -> list[str]:
    """Each construction of a host part in ``path``, and each rewiring of one after it."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    where = path.relative_to(root).as_posix()
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            if name in HOST_PARTS or name in HOST_BUILDERS:
                found.append(f"{where}:{node.lineno}: {name}(...)")
        elif isinstance(node, ast.Assign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                # ``supervisor.subagents.isolation = ...``: a host part rewired by a door
                if isinstance(target, ast.Attribute) and _reaches_into_host(target.value):
                    found.append(f"{where}:{node.lineno}: sets {ast.unparse(target)}")
    return sorted(found, key=lambda hit: int(hit.split(":")[1]))  # by line


def _reaches_into_host(node: ast.expr) -> bool:
    names = {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}
    return bool(names & {"supervisor", "subagents", "publisher", "agents", "worktrees", "core"})


def test_the_doors_build_no_host_part() -> None:
    found = [hit for path in door_modules() for hit in host_parts_built(path)]
    assert found == [], "a front door builds part of the host (use HostCore.open):\n" + "\n".join(
        found
    )


def test_the_check_sees_a_door_that_assembles_the_host(tmp_path: Path) -> None:
    door = tmp_path / "lovia_server" / "acp"
    door.mkdir(parents=True)
    (door / "agent.py").write_text(
        "async def open(store, editor):\n"
        "    core = HostCore(state_dir=d, store=await HostCore.open_store(d))\n"
        "    publisher = host.event_log.Publisher(store, editor.notify)\n"
        "    core.supervisor.subagents.isolation = WorktreeChildren(runs, core.supervisor)\n"
        "    self.core = await HostCore.open(d, ports, settings)\n"
    )
    assert host_parts_built(door / "agent.py", tmp_path) == [
        "lovia_server/acp/agent.py:2: HostCore(...)",
        "lovia_server/acp/agent.py:2: open_store(...)",
        "lovia_server/acp/agent.py:3: Publisher(...)",
        "lovia_server/acp/agent.py:4: sets core.supervisor.subagents.isolation",
        "lovia_server/acp/agent.py:4: WorktreeChildren(...)",
    ]


def server_imports(path: Path) -> list[int]:
    """Lines of ``path`` that import the language server's module (type-only imports too)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "lovia_server.lsp.language_server":
            lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module == "lovia_server.lsp":
            lines += [node.lineno for a in node.names if a.name == "language_server"]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
            lines += [node.lineno for n in names if n == "lovia_server.lsp.language_server"]
    return lines


def test_no_lsp_module_imports_the_server_back() -> None:
    """The lsp modules are built over ``client_state.LspClient``, not ``LoviaServer``: the
    server imports them, never the other way round."""
    lsp = ROOT / "lovia_server" / "lsp"
    found = [
        f"{path.relative_to(ROOT).as_posix()}:{line}"
        for path in sorted(lsp.rglob("*.py"))
        if path.name != "language_server.py"
        for line in server_imports(path)
    ]
    assert found == []
