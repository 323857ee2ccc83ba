"""Lazily exported names (PEP 562) for packages that re-export more than a run needs.

A package lists ``_LAZY = {name: module}`` and sets
``__getattr__, __dir__ = lazy_exports(__name__, _LAZY)``. ``from package import name``
and ``package.name`` then import ``module`` on first use and cache the value in the
package, so later lookups are plain attribute reads. A name that is the package's own
submodule (``"events": "lovia.events"``) resolves to that module. For type checkers the
package imports the same names under ``if TYPE_CHECKING:``.

tests/test_import_graph.py reads every module-level ``_LAZY`` table as lazy imports, so
a lazy export still counts in the cycle and layer checks.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, table: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` for ``package`` that resolve ``table``'s names."""

    def __getattr__(name: str) -> Any:
        target = table.get(name)
        if target is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = importlib.import_module(target)
        value = module if target == f"{package}.{name}" else getattr(module, name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *table})

    return __getattr__, __dir__
