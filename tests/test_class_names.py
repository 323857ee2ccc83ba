"""A reader finds a class by its name: a public class name is defined once across ``lovia`` and
``lovia_server``, unless the second definition's docstring says why it shares the name (it
names the other one's module: a protocol model is the wire form of a framework event)."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _module(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def test_a_public_class_name_is_defined_once_or_says_why() -> None:
    found: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for package in ("lovia", "lovia_server"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.parse(path.read_text(encoding="utf-8")).body:
                if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                    found[node.name].append((_module(path), ast.get_docstring(node) or ""))
    unexplained = []
    for name, where in found.items():
        if len(where) < 2:
            continue
        modules = [module for module, _ in where]
        # every definition but one names another definition's module in its docstring
        silent = [m for m, doc in where if not any(o in doc for o in modules if o != m)]
        if len(silent) > 1:
            unexplained.append(f"{name}: {', '.join(silent)}")
    assert not unexplained, "\n".join(unexplained)
