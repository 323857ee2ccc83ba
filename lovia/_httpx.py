"""``httpx`` without its command-line client's dependencies.

``httpx/__init__`` runs ``from ._main import main`` inside ``try``; ``httpx._main`` imports
``click``, ``pygments`` and ``rich`` whenever they are installed (other tools install
``click`` and ``pygments`` often, and if ``rich`` is missing the import fails *after*
paying for the other two). lovia never uses that CLI, so the built-in HTTP tools import
``httpx`` from here: while httpx's package initialises, an empty placeholder stands in for
``httpx._main``, the ``from ._main import main`` falls back to httpx's own stub, and the
placeholder is removed again, so a later ``import httpx._main`` (the ``httpx`` command)
works as usual. If httpx is already imported this does nothing.
"""

from __future__ import annotations

import sys
import types

_CLI = "httpx._main"

if "httpx" not in sys.modules and _CLI not in sys.modules:
    _placeholder = types.ModuleType(_CLI, "stand-in while lovia imports httpx; see lovia._httpx")
    sys.modules[_CLI] = _placeholder
    try:
        import httpx as httpx
    finally:
        if sys.modules.get(_CLI) is _placeholder:
            del sys.modules[_CLI]
else:
    import httpx as httpx

__all__ = ["httpx"]
