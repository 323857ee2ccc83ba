"""``lovia-server --probe``: what an editor checks before it starts the server."""

from __future__ import annotations

import json
import platform
import subprocess
import sys

from lovia_server.protocol import PROTOCOL_VERSION
from lovia_server.version import server_version


def test_probe_prints_version_protocol_and_python_as_json() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "lovia_server", "--probe"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=True,
    )
    probe = json.loads(out.stdout)
    assert probe == {
        "version": server_version(),
        "protocolVersion": PROTOCOL_VERSION,
        "python": platform.python_version(),
    }


def test_probe_does_not_import_the_server_or_the_framework() -> None:
    code = (
        "import sys; from lovia_server.__main__ import sub_main; sub_main(['--probe']); "
        "print(sorted(m for m in ('pygls', 'lovia', 'lsprotocol') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_the_version_comes_from_the_lovia_agents_distribution() -> None:
    from importlib.metadata import version

    assert server_version() == version("lovia-agents")


def test_the_version_is_lovias_own_read_without_importing_it() -> None:
    from importlib.metadata import version

    from lovia import __version__
    from lovia_server.version import DISTRIBUTION

    assert server_version() == __version__ == version(DISTRIBUTION)
