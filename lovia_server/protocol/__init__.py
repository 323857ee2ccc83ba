"""The lovia editor protocol: methods with their params and results, event payloads, error codes.

Pydantic models with snake_case fields and camelCase wire names. The JSON Schema in
``schema.json`` is generated from these models (``python -m lovia_server.protocol.schema``).

Importing the package costs only the error codes: the models (and pydantic with them) load on
first use of any of them (PEP 562), so the server answers ``initialize`` before it loads
pydantic; what that answer needs comes from the generated ``names`` module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lovia_server.protocol.errors import *  # noqa: F403

PROTOCOL_VERSION = 1
EVENT = "lovia/event"

if TYPE_CHECKING:
    from lovia_server.protocol.errors import __all__ as _errors_all
    from lovia_server.protocol.events import *  # noqa: F403
    from lovia_server.protocol.events import __all__ as _events_all
    from lovia_server.protocol.methods import *  # noqa: F403
    from lovia_server.protocol.methods import __all__ as _methods_all
    from lovia_server.protocol.wire import WireModel, WireParams, omitted

    __all__ = [
        "EVENT",
        "PROTOCOL_VERSION",
        "WireModel",
        "WireParams",
        "omitted",
        *_errors_all,
        *_events_all,
        *_methods_all,
    ]


def _load_models() -> None:
    """Bring every model module's exports into the package (once: later reads are plain)."""
    from lovia_server.protocol import events, methods, wire

    namespace = globals()
    for module in (wire, events, methods):
        for exported in module.__all__:
            namespace.setdefault(exported, getattr(module, exported))


# Submodules are never looked up here: ``from lovia_server.protocol import names`` asks the
# package first and must get an AttributeError, so the import system loads the module.
_SUBMODULES = frozenset(
    {
        "command_methods",
        "docs",
        "editor_requests",
        "errors",
        "events",
        "methods",
        "names",
        "schema",
        "wire",
        "worktree_methods",
    }
)


def __getattr__(name: str) -> Any:
    if not name.startswith("__") and name not in _SUBMODULES:
        _load_models()
        value = globals().get(name)
        if value is not None:
            return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
