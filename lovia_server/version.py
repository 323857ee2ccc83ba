"""The installed version, read without importing lovia or scanning package metadata.

The server answers ``initialize`` before it imports the framework, and reading distribution
metadata (``importlib.metadata``) costs tens of milliseconds, so the version is read from the
text of ``lovia/_version.py``: the one file Hatch also reads it from.
"""

from __future__ import annotations

import functools
import importlib.util
import re
from pathlib import Path

# The distribution's name; "lovia" on the package index is an unrelated project.
DISTRIBUTION = "lovia-agents"

_VERSION = re.compile(r"""^__version__\s*=\s*["']([^"']+)["']""", re.MULTILINE)


@functools.cache
def server_version() -> str:
    """lovia's version without importing lovia (the server answers initialize before that)."""
    spec = importlib.util.find_spec("lovia")  # locates the package, does not import it
    for location in (spec.submodule_search_locations or []) if spec else []:
        try:
            text = (Path(location) / "_version.py").read_text(encoding="utf-8")
        except OSError:
            continue
        found = _VERSION.search(text)
        if found:
            return found.group(1)
    from importlib.metadata import version  # pragma: no cover - an unusual installation

    return version(DISTRIBUTION)  # pragma: no cover
