"""lovia_server: a language-server host that runs lovia agents for editors."""

import os as _os
import sys as _sys


def _unshadow_workspace() -> None:
    """``python -m lovia_server`` puts its working directory first on ``sys.path``, and an
    editor starts it in the user's workspace: a ``pydantic.py`` or ``asyncio.py`` there would
    be imported by the server before any trust check. While ``-m`` is locating this package
    (``sys.argv[0] == "-m"``) that entry is dropped, unless this package itself lives there (a
    checkout run in place). Spawners should also pass ``-P``/``PYTHONSAFEPATH=1``, which covers
    the package name too."""
    if _sys.argv[:1] != ["-m"] or _sys.flags.safe_path or not _sys.path:
        return
    try:
        cwd = _os.path.realpath(_os.getcwd())
        first = _os.path.realpath(_sys.path[0] or _os.curdir)
        home = _os.path.dirname(_os.path.dirname(_os.path.realpath(__file__)))
    except OSError:
        return
    if first == cwd and home != cwd:
        del _sys.path[0]


_unshadow_workspace()
