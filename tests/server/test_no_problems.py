"""lovia publishes an empty set of problems for every version of an open document: rass, the
multiplexer eglot users put lovia behind (docs/editors.md), holds a file's diagnostics until
every server has published for that version, or 1 s, so without it clangd's problems would reach
Emacs a second late (bench/multiplexer_hop_bench.py)."""

from __future__ import annotations

from tests.server.test_code_actions import plain_client, until
from tests.server.vscode_client import VsCodeBuffers


async def test_every_version_of_an_open_document_gets_an_empty_set_of_problems(harness, tmp_path):
    app = harness.root / "app.py"
    app.write_text("x = 1\n")
    await harness.start(init_options=False, capabilities="emacs", adjust=plain_client())
    assert harness.client is not None
    published = harness.client.diagnostics
    buffers = VsCodeBuffers(harness)
    buffers.open(app)
    await until(lambda: app.as_uri() in published, within=10)
    assert list(published[app.as_uri()]) == []
    del published[app.as_uri()]
    buffers.type(app, "x = 2\n")
    await until(lambda: app.as_uri() in published, within=10)
    assert list(published[app.as_uri()]) == []


async def test_lovias_own_clients_get_no_empty_problems(harness):
    """The Neovim recipe and the VS Code extension wait for a buffer's next diagnostics after an
    edit: an empty set from lovia must not come before the language server's."""
    app = harness.root / "app.py"
    app.write_text("x = 1\n")
    await harness.start()
    assert harness.client is not None
    buffers = VsCodeBuffers(harness)
    buffers.open(app)
    buffers.type(app, "x = 2\n")
    await harness.request("lovia/status", {})  # the notifications before it were handled
    assert app.as_uri() not in harness.client.diagnostics
