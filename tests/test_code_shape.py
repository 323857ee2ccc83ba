"""Shape rules for the stateful modules: short functions that read as their phases.

The run loop (``lovia/runtime/loop.py``) and the server's run supervisor (with the parts it
is split into: controller, projection, brokers, queries, recovery) hold all mutable run
state; keeping every function there under 80 lines keeps them reviewable. A server or core
module is one concept a newcomer finds from the file tree: over ``MODULE_LIMIT`` lines it says why in
its docstring (a line starting ``Long because``), and no two of its files share a name.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LIMIT = 80
STATEFUL = [
    "lovia/runtime/loop.py",
    "lovia_server/host/supervisor.py",
    "lovia_server/host/run_controller.py",
    "lovia_server/host/event_projection.py",
    "lovia_server/host/approval_broker.py",
    "lovia_server/host/question_broker.py",
    "lovia_server/host/session_queries.py",
    "lovia_server/host/run_recovery.py",
]
MODULE_LIMIT = 600
LONG_REASON = "Long because"


def long_functions(source: str, limit: int) -> list[tuple[str, int]]:
    tree = ast.parse(source)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            assert node.end_lineno is not None
            length = node.end_lineno - node.lineno + 1
            if length > limit:
                found.append((node.name, length))
    return found


@pytest.mark.parametrize("path", STATEFUL)
def test_stateful_modules_have_no_function_over_80_lines(path: str) -> None:
    assert long_functions((ROOT / path).read_text(), LIMIT) == []


def test_the_length_check_sees_a_long_function() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(LIMIT))
    assert long_functions(f"async def big():\n{body}\n", LIMIT) == [("big", LIMIT + 1)]


def test_run_loop_stream_names_its_phases() -> None:
    """``RunLoop.stream`` delegates each turn to ``_turn``, whose body runs the phases in order."""
    tree = ast.parse((ROOT / "lovia/runtime/loop.py").read_text())
    methods = {
        node.name: node
        for node in ast.walk(tree)
        if isinstance(node, ast.AsyncFunctionDef | ast.FunctionDef)
    }
    turn_source = ast.unparse(methods["_turn"])
    order = [
        "_check_limits",
        "_drain_mailbox",
        "_plan_view",
        "_call_model",
        "_tool_phase",
        "_finalize_output",
        "_apply_handoff",
    ]
    positions = [turn_source.index(name) for name in order]
    assert positions == sorted(positions)
    assert "self._turn(" in ast.unparse(methods["stream"])


def _modules(package: str) -> list[Path]:
    return sorted(p for p in (ROOT / package).rglob("*.py") if "__pycache__" not in p.parts)


def _server_modules() -> list[Path]:
    return _modules("lovia_server")


def unexplained_long_modules(paths: list[Path], limit: int) -> list[str]:
    found = []
    for path in paths:
        source = path.read_text()
        lines = source.count("\n")
        docstring = ast.get_docstring(ast.parse(source)) or ""
        if lines > limit and not any(
            line.strip().startswith(LONG_REASON) for line in docstring.splitlines()
        ):
            found.append(f"{path}: {lines} lines")
    return found


def test_server_modules_over_600_lines_say_why() -> None:
    problems = unexplained_long_modules(_server_modules(), MODULE_LIMIT)
    assert problems == [], f"split them, or say why in the docstring ({LONG_REASON} ...)"


def test_core_modules_over_600_lines_say_why() -> None:
    """The core is held to the server's rule: one concept per module, or a stated reason."""
    problems = unexplained_long_modules(_modules("lovia"), MODULE_LIMIT)
    assert problems == [], f"split them, or say why in the docstring ({LONG_REASON} ...)"


def test_the_module_check_sees_a_long_module_without_a_reason(tmp_path: Path) -> None:
    body = "\n".join(f"x{i} = {i}" for i in range(MODULE_LIMIT + 1))
    plain, explained = tmp_path / "plain.py", tmp_path / "explained.py"
    plain.write_text(f'"""One concept."""\n{body}\n')
    explained.write_text(f'"""One concept.\n\nLong because it is a table.\n"""\n{body}\n')
    problems = unexplained_long_modules([plain, explained], MODULE_LIMIT)
    assert [p.split(":")[0] for p in problems] == [str(plain)]


def test_no_two_server_files_share_a_name() -> None:
    """``lovia_server/acp/server.py`` beside ``lovia_server/server.py`` is two places to look."""
    seen: dict[str, list[str]] = {}
    for path in _server_modules():
        if path.name not in {"__init__.py", "__main__.py"}:
            seen.setdefault(path.name, []).append(str(path.relative_to(ROOT)))
    assert {name: where for name, where in seen.items() if len(where) > 1} == {}
