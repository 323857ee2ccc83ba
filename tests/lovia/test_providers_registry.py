import logging
import subprocess
import sys

import pytest

from lovia import providers
from lovia.exceptions import UserError
from lovia.providers import model_from_env, provider_from_string, register_provider
from lovia.providers.base import (
    ModelSettings,
    context_window,
    discover_context_window,
    provider_options,
    supports_vision,
)


class Fake:
    name = "fake"
    supports_json_schema = False

    def __init__(self, model, **kw):
        self.model = model
        self.kw = kw


def test_import_lovia_does_not_import_sdks():
    code = "import lovia, lovia.providers, sys; print('openai' in sys.modules, 'anthropic' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False False"


def test_register_provider_and_overrides(monkeypatch):
    monkeypatch.setattr(providers, "_REGISTRY", {})
    register_provider("Fake", Fake)
    p = provider_from_string("FAKE:m1")
    assert isinstance(p, Fake) and p.model == "m1" and p.kw == {}
    p = provider_from_string("fake:m2", api_key="k", base_url="u")
    assert p.kw == {"api_key": "k", "base_url": "u"}

    def strict_factory(model):
        return Fake(model)

    register_provider("strict", strict_factory)
    with pytest.raises(UserError, match="does not accept api_key/base_url/supports_vision"):
        provider_from_string("strict:m", api_key="k")


def test_unknown_prefix_hint(monkeypatch):
    monkeypatch.setattr(providers, "_REGISTRY", {})
    with pytest.raises(UserError) as info:
        provider_from_string("nosuch:model")
    assert "Unknown model spec: 'nosuch:model'" in str(info.value)
    assert "register_provider" in info.value.hint and "lovia.providers" in info.value.hint


def test_entry_point_loading(monkeypatch):
    import importlib.metadata as md

    class EP:
        def __init__(self, name, value, obj):
            self.name, self.value, self._obj = name, value, obj

        def load(self):
            if isinstance(self._obj, Exception):
                raise self._obj
            return self._obj

    eps = [
        EP("plug", "pkg:Fake", Fake),
        EP("broken", "pkg:x", ImportError("nope")),
        EP("weird", "pkg:y", 42),
    ]
    monkeypatch.setattr(md, "entry_points", lambda group: eps if group == "lovia.providers" else [])
    monkeypatch.setattr(providers, "_REGISTRY", {})
    monkeypatch.setattr(providers, "_ENTRY_POINTS", None)
    assert provider_from_string("plug:m").model == "m"
    assert "plug" in providers._REGISTRY
    with pytest.raises(UserError, match="failed to load from entry point 'pkg:x'"):
        provider_from_string("broken:m")
    with pytest.raises(UserError, match="must be a provider class or callable factory"):
        provider_from_string("weird:m")


def test_model_from_env(monkeypatch):
    monkeypatch.delenv("LOVIA_MODEL", raising=False)
    assert model_from_env(required=False) is None
    with pytest.raises(UserError, match="no model configured in the environment") as info:
        model_from_env()
    assert "LOVIA_MODEL" in info.value.hint
    monkeypatch.setenv("LOVIA_MODEL", "openai:gpt-4.1-mini")
    assert model_from_env() == "openai:gpt-4.1-mini"


def test_provider_options_and_capabilities():
    s = ModelSettings(provider_options={"a": {"x": 1, "y": 2}, "b": {"y": None}})
    assert provider_options(s, "a", "b") == {"x": 1, "y": None}
    assert supports_vision(object()) is False
    assert context_window(object()) is None

    class W:
        supports_vision = True

        def context_window(self):
            return 1000

    assert supports_vision(W()) and context_window(W()) == 1000


async def test_discover_context_window():
    class D:
        async def discover_context_window(self):
            return 4096

    assert await discover_context_window(D()) == 4096
    assert await discover_context_window(object()) is None


def test_bare_claude_name_warns(caplog, monkeypatch):
    import lovia.providers as p

    created = {}

    class Stub:
        def __init__(self, model, **kw):
            created["model"] = model

    import types

    monkeypatch.setitem(
        sys.modules, "lovia.providers.openai", types.SimpleNamespace(OpenAIChatProvider=Stub)
    )
    with caplog.at_level(logging.WARNING, logger="lovia.providers"):
        p.provider_from_string("claude-sonnet-4-5")
    assert created["model"] == "claude-sonnet-4-5"
    assert "anthropic:claude-sonnet-4-5" in caplog.text
