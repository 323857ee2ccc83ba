"""The workspace an editor starts the server in cannot shadow the server's own imports.

``python -m lovia_server`` puts its working directory first on ``sys.path``; the VS Code
extension starts it in the first workspace folder. An untrusted project with an ``asyncio.py``
or a ``pydantic.py`` would otherwise run its code inside the server before any trust check.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.raw_lsp import RawClient

SHADOW = """
import pathlib
pathlib.Path(__file__).with_name("SHADOWED-" + __name__).write_text("imported")
raise ImportError("a workspace module shadowed the server's " + __name__)
"""


@pytest.mark.parametrize("safe_path", ["", "1"], ids=["in-package guard", "PYTHONSAFEPATH"])
async def test_modules_in_the_working_directory_are_not_imported_by_the_server(
    tmp_path: Path, safe_path: str
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    for name in ("asyncio", "pydantic", "lsprotocol", "aiosqlite", "lovia"):
        (workspace / f"{name}.py").write_text(SHADOW)
    client = await RawClient.start(tmp_path / "logs", {"PYTHONSAFEPATH": safe_path}, cwd=workspace)
    try:
        init = await client.request(
            "initialize",
            {
                "processId": None,
                "rootUri": workspace.as_uri(),
                "capabilities": {},
                "initializationOptions": {"lovia": {"stateDir": str(tmp_path / "state")}},
            },
            within=60,
        )
        assert "result" in init, init
        await client.notify("initialized", {})
        status = await client.request("lovia/status", {}, within=60)
        assert "result" in status, status
    finally:
        await client.close()
    assert sorted(p.name for p in workspace.glob("SHADOWED-*")) == []
