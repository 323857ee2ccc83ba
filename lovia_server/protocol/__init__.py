"""The lovia editor protocol: methods with their params and results, event payloads, error codes.

Pydantic models with snake_case fields and camelCase wire names. Light to import (no lovia
core), so the server can answer ``initialize`` before it loads the framework. The JSON Schema in
``schema.json`` is generated from these models (``python -m lovia_server.protocol.schema``).
"""

from __future__ import annotations

from lovia_server.protocol.errors import *  # noqa: F403
from lovia_server.protocol.errors import __all__ as _errors_all
from lovia_server.protocol.events import *  # noqa: F403
from lovia_server.protocol.events import __all__ as _events_all
from lovia_server.protocol.methods import *  # noqa: F403
from lovia_server.protocol.methods import __all__ as _methods_all
from lovia_server.protocol.wire import WireModel, WireParams, omitted

PROTOCOL_VERSION = 1
EVENT = "lovia/event"

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
