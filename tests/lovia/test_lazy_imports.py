"""Lazy exports (lovia._lazy) and lazy imports: a run loads only what it uses (issue 17)."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from types import ModuleType

import pytest

import lovia

LAZY_PACKAGES = [
    "lovia",
    "lovia.context",
    "lovia.eval",
    "lovia.plugins",
    "lovia.plugins.memory",
    "lovia.plugins.skills",
    "lovia.stores",
    "lovia.tools",
]

#: Never loaded by importing what a plain run needs: optional parts, their dependencies,
#: provider SDKs and httpx's command-line extras.
NOT_ON_THE_RUN_PATH = [
    "pydantic",
    "httpx",
    "httpx2",
    "yaml",
    "aiosqlite",
    "openai",
    "anthropic",
    "mcp",
    "click",
    "pygments",
    "rich",
    "importlib.metadata",
    "lovia.schema",
    "lovia.context.compaction",
    "lovia.context.summarizer",
    "lovia.plugins.memory",
    "lovia.plugins.skills",
    "lovia.plugins.subagents",
    "lovia.plugins.todo",
    "lovia.stores.session",
    "lovia.tools.http",
    "lovia.tools.page",
    "lovia.tools.search",
    "lovia.workspace",
    "lovia_server",
]


def loaded_after(code: str, names: list[str]) -> list[str]:
    """Which of ``names`` a fresh interpreter has in ``sys.modules`` after running ``code``."""
    probe = (
        f"{code}\nimport json, sys\nprint(json.dumps([n for n in {names!r} if n in sys.modules]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    found: list[str] = json.loads(out.stdout.strip().splitlines()[-1])
    return found


def test_import_lovia_loads_only_the_export_table() -> None:
    assert loaded_after("import lovia", ["lovia.agent", "lovia.runner", "asyncio"]) == []


def test_importing_agent_and_runner_leaves_optional_parts_unloaded() -> None:
    assert loaded_after("from lovia import Agent, Runner", NOT_ON_THE_RUN_PATH) == []


def test_a_run_without_tools_or_structured_output_needs_no_pydantic() -> None:
    code = (
        "from lovia import Agent\n"
        "from lovia.context import NoopContextPolicy\n"
        "from lovia.testing import ScriptedProvider, text\n"
        "agent = Agent('a', model=ScriptedProvider([text('hi')]),"
        " context_policy=NoopContextPolicy())\n"
        "assert agent.run_sync('hello').output == 'hi'\n"
    )
    assert loaded_after(code, ["pydantic", "httpx", "lovia.schema"]) == []


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_every_lazy_export_is_the_defining_modules_object(package: str) -> None:
    module = importlib.import_module(package)
    table: dict[str, str] = module._LAZY
    for name, source in table.items():
        target = importlib.import_module(source)
        expected = target if source == f"{package}.{name}" else getattr(target, name)
        assert getattr(module, name) is expected, f"{package}.{name}"


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_all_names_are_listed_by_dir_and_resolve(package: str) -> None:
    module = importlib.import_module(package)
    assert set(module.__all__) <= set(dir(module))
    for name in module.__all__:
        assert hasattr(module, name), f"{package}.{name}"


def test_star_import_and_from_import_resolve_lazy_names() -> None:
    namespace: dict[str, object] = {}
    exec("from lovia import *", namespace)
    assert set(lovia.__all__) <= set(namespace)
    from lovia import Compaction, SQLiteSession, Todo, events

    assert isinstance(events, ModuleType) and events.__name__ == "lovia.events"
    assert Compaction.__module__ == "lovia.context.compaction"
    assert SQLiteSession.__module__ == "lovia.stores.session"
    assert Todo.__module__ == "lovia.plugins.todo"


def test_an_unknown_name_is_an_attribute_error_naming_the_package() -> None:
    with pytest.raises(AttributeError, match="module 'lovia' has no attribute 'Nope'"):
        lovia.Nope  # noqa: B018
    assert not hasattr(lovia.tools, "nope")
    with pytest.raises(ImportError):
        exec("from lovia.context import Nope", {})


def test_version_comes_from_the_leaf_module() -> None:
    from lovia._version import __version__

    assert lovia.__version__ == __version__
    assert loaded_after("import lovia._version", ["lovia.agent"]) == []


def test_http_tools_import_httpx_without_its_cli_dependencies() -> None:
    cli = ["click", "pygments", "rich"]
    # Whatever plain `import httpx` drags in here, lovia's tools must not.
    assert loaded_after("from lovia.tools import http_request, read_page, web_search", cli) == []
    code = "import lovia._httpx, httpx\nassert httpx.URL('https://example.com').host"
    # The stand-in is gone once httpx is imported, so `import httpx._main` works as usual.
    assert loaded_after(code, ["httpx._main", *cli]) == []
