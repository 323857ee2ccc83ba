"""The one way up to the runner from the modules below it.

``Agent.run`` / ``run_sync`` / ``stream`` and ``agent_as_tool`` start runs, yet the
runner sits above them: it imports the run loop, and the loop imports handoffs, tools
and (for types) agents. Importing the runner from those modules would close an import
cycle, so they call :func:`runner` instead, which imports it on first use.

This is lovia core's only upward import; tests/test_import_graph.py allows exactly this
edge (``LAZY_SEAMS``) and requires it to stay inside the function.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lovia.runner import Runner


def runner() -> type[Runner]:
    """The ``Runner`` class, imported the first time a run is started from below it."""
    from lovia.runner import Runner

    return Runner
