"""The installed version, read from package metadata so that asking costs no heavy imports."""

from __future__ import annotations

# The distribution's name; "lovia" on the package index is an unrelated project.
DISTRIBUTION = "lovia-agents"


def server_version() -> str:
    """lovia's version without importing lovia (the server answers initialize before that)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        from lovia import __version__

        return __version__
