"""Shape rules for the stateful modules: short functions that read as their phases.

The run loop (``lovia/runtime/loop.py``) and the server's run supervisor (with the parts it
is split into: controller, projection, brokers, queries, recovery) hold all mutable run
state; keeping every function there under 80 lines keeps them reviewable.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LIMIT = 80
STATEFUL = [
    "lovia/runtime/loop.py",
    "lovia_server/supervisor.py",
    "lovia_server/run_controller.py",
    "lovia_server/event_projection.py",
    "lovia_server/approval_broker.py",
    "lovia_server/question_broker.py",
    "lovia_server/session_queries.py",
    "lovia_server/run_recovery.py",
]


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
