"""The attack matrix in docs/security.md is complete and points at tests that exist.

Rows are the surfaces through which a path or a command reaches the outside world; columns
are the attacks. Every cell is either one or more tests (run elsewhere in the suite, through
that surface's real entry point) or a reasoned "not reachable". A surface with cell tests in
``tests/security/matrix/test_<row>.py`` must have its row, and each such test its cell: a
new surface cannot land without taking its place in the matrix.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "security.md"
MATRIX_TESTS = ROOT / "tests" / "security" / "matrix"
COLUMNS = (
    "read_denied",
    "read_outside",
    "write_protected",
    "write_symlinked_parent",
    "write_git_dir",
    "network",
    "widen_permissions",
)
_ROW = re.compile(r"^\|[^|]*\(`(?P<row>[a-z_]+)`\)\s*\|(?P<cells>.*)\|\s*$")
_CELL = re.compile(r"^- `(?P<row>[a-z_]+)` × `(?P<col>[a-z_]+)`: (?P<what>.+)$")
_NODE = re.compile(r"`(tests/[^`:]+\.py)::([A-Za-z_0-9]+)(\[[^`]*\])?`")
_NOT_REACHABLE = "not reachable — "


def _section() -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index("## The attack matrix")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def _table() -> dict[str, list[str]]:
    rows: dict[str, list[str]] = {}
    for line in _section().splitlines():
        found = _ROW.match(line)
        if found:
            cells = [c.strip() for c in found["cells"].split("|")]
            rows[found["row"]] = cells
    return rows


def _cells() -> dict[tuple[str, str], str]:
    cells: dict[tuple[str, str], str] = {}
    for line in _section().splitlines():
        found = _CELL.match(line)
        if found:
            key = (found["row"], found["col"])
            assert key not in cells, f"cell {key} is listed twice"
            cells[key] = found["what"].strip()
    return cells


def _functions(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    }


def test_every_row_has_every_column() -> None:
    table = _table()
    assert table, "docs/security.md has no attack matrix rows"
    for row, marks in table.items():
        assert len(marks) == len(COLUMNS), f"row {row} has {len(marks)} cells"
        assert all(mark in ("✓", "n/r") for mark in marks), f"row {row}: {marks}"


def test_every_cell_is_a_test_or_a_reason() -> None:
    table, cells = _table(), _cells()
    wanted = {(row, col) for row in table for col in COLUMNS}
    assert set(cells) == wanted, (
        f"missing: {sorted(wanted - set(cells))}, unknown: {sorted(set(cells) - wanted)}"
    )
    for (row, col), what in cells.items():
        mark = table[row][COLUMNS.index(col)]
        if what.startswith(_NOT_REACHABLE):
            assert mark == "n/r", f"{row} × {col} says not reachable but is marked {mark}"
            assert len(what) > len(_NOT_REACHABLE) + 20, f"{row} × {col}: say why"
            continue
        assert mark == "✓", f"{row} × {col} names tests but is marked {mark}"
        nodes = _NODE.findall(what)
        assert nodes, f"{row} × {col}: {what!r} names no test"
        for file, name, _param in nodes:
            path = ROOT / file
            assert path.is_file(), f"{row} × {col}: {file} does not exist"
            assert name in _functions(path), f"{row} × {col}: {file} has no {name}"


def test_every_matrix_test_has_its_cell() -> None:
    table, cells = _table(), _cells()
    for path in sorted(MATRIX_TESTS.glob("test_*.py")):
        row = path.stem.removeprefix("test_")
        assert row in table, f"{path.name} tests a surface the matrix has no row for"
        for name in sorted(_functions(path)):
            if not name.startswith(f"test_{row}__"):
                continue
            col = name.removeprefix(f"test_{row}__")
            assert col in COLUMNS, f"{path.name}::{name}: no column {col!r}"
            node = f"`tests/security/matrix/{path.name}::{name}"
            assert node in cells.get((row, col), ""), f"{path.name}::{name} is not in its cell"
