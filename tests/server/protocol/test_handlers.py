"""Every lovia/* method is served by exactly one typed handler function, in the protocol's
order."""

import inspect

from lovia_server import protocol as p
from lovia_server.lsp.handlers import HANDLERS


def test_every_method_has_one_handler():
    assert [h.method for h in HANDLERS.values()] == list(p.METHOD_TABLE)


def test_each_handler_is_typed_with_its_methods_models():
    """``async def approve(rt, params: p.ApproveParams) -> p.ApproveResult``, as registered."""
    for name, registered in HANDLERS.items():
        handler = registered.handler
        assert inspect.iscoroutinefunction(handler), name
        namespace = vars(inspect.getmodule(handler))
        hints = {k: eval(v, namespace) for k, v in handler.__annotations__.items() if k != "rt"}
        assert hints == {"params": registered.method.params, "return": registered.method.result}


def test_every_method_has_an_execute_command_alias():
    assert [m.command for m in p.METHOD_TABLE] == [n.replace("/", ".", 1) for n in p.METHODS]
    assert p.DELETE_SESSION.command == "lovia.deleteSession"


def test_the_generated_names_are_the_models_names():
    from lovia_server.protocol import names

    assert list(names.METHOD_NAMES) == p.METHODS
    assert list(names.COMMAND_NAMES) == [m.command for m in p.METHOD_TABLE]
    assert list(names.EVENT_KINDS) == p.EVENT_KINDS
    assert names.DELTA_KINDS == p.DELTA_KINDS
    assert list(names.EDIT_MODES) == p.EDIT_MODES


def test_answering_initialize_loads_neither_pydantic_nor_lovia():
    import subprocess
    import sys

    code = (
        "import sys, asyncio\n"
        "from lovia_server.lsp.language_server import create_server\n"
        "server = create_server()\n"
        "out = []\n"
        "class W:\n"
        "    def write(self, data): out.append(data)\n"
        "server.protocol.set_writer(W())\n"
        "async def main():\n"
        "    server.protocol.handle_message({'jsonrpc': '2.0', 'id': 1, 'method': 'initialize',"
        " 'params': {'processId': None, 'rootUri': None, 'capabilities': {}}})\n"
        "    while not out: await asyncio.sleep(0)\n"
        "asyncio.run(main())\n"
        "assert b'lovia/run' in out[0], out\n"
        "print(sorted(m for m in ('pydantic', 'lovia') if m in sys.modules))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.strip().splitlines()[-1] == "[]"


def test_the_generated_capabilities_are_the_models_wire_shape():
    from lovia_server.protocol import names

    model = p.ServerCapabilities(
        protocol_version=p.PROTOCOL_VERSION,
        methods=p.METHODS,
        event_kinds=p.EVENT_KINDS,
        edit_modes=p.EDIT_MODES,
        version="9.9.9",
    )
    assert names.server_capabilities("9.9.9") == model.to_wire()
