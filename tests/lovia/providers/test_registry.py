"""The model-string registry and the lazy SDK imports."""

from __future__ import annotations

import logging
import subprocess
import sys
from typing import Any

import pytest

import lovia.providers as providers
from lovia.exceptions import UserError
from lovia.providers import model_from_env, provider_from_string, register_provider
from lovia.providers.anthropic import AnthropicProvider
from lovia.providers.openai import OpenAIChatProvider


@pytest.fixture(autouse=True)
def _clean_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(providers, "_REGISTRY", {})
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:8000/v1")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://localhost:8001")


def test_lovia_imports_no_vendor_sdk() -> None:
    code = (
        "import sys, lovia, lovia.providers\n"
        "from lovia.providers import provider_from_string\n"
        "p = provider_from_string('openai:m', base_url='http://localhost:1/v1')\n"
        "q = provider_from_string('anthropic:c', base_url='http://localhost:1')\n"
        "loaded = [m for m in ('openai', 'anthropic', 'httpx2') if m in sys.modules]\n"
        "print(','.join(loaded) or 'none')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "none"


@pytest.mark.parametrize(
    ("spec", "cls"),
    [
        ("openai:gpt-4.1-mini", OpenAIChatProvider),
        ("openai-chat:gpt-4.1-mini", OpenAIChatProvider),
        ("OAI:gpt-4.1-mini", OpenAIChatProvider),
        ("anthropic:claude-sonnet-4-5", AnthropicProvider),
        ("claude:claude-sonnet-4-5", AnthropicProvider),
    ],
)
def test_builtin_prefixes(spec: str, cls: type[Any]) -> None:
    p = provider_from_string(spec)
    assert isinstance(p, cls)
    assert p.model == spec.split(":", 1)[1]


def test_ollama_tags_keep_their_colon_after_the_prefix() -> None:
    assert provider_from_string("openai:llama3.1:8b").model == "llama3.1:8b"


def test_lazy_attributes_resolve() -> None:
    import lovia

    assert lovia.OpenAIChatProvider is OpenAIChatProvider
    assert providers.AnthropicProvider is AnthropicProvider


def test_bare_model_name_means_openai_and_warns_for_claude(
    caplog: pytest.LogCaptureFixture,
) -> None:
    assert isinstance(provider_from_string("gpt-4.1-mini"), OpenAIChatProvider)
    with caplog.at_level(logging.WARNING, logger="lovia.providers"):
        p = provider_from_string("claude-sonnet-4-5")
    assert isinstance(p, OpenAIChatProvider)
    assert "anthropic:claude-sonnet-4-5" in caplog.text


def test_unknown_prefix_explains_how_to_register() -> None:
    with pytest.raises(UserError) as info:
        provider_from_string("mistral:large")
    text = str(info.value)
    assert "Unknown model spec: 'mistral:large'" in text
    assert "register_provider" in text and "lovia.providers" in text


def test_overrides_reach_the_provider() -> None:
    p = provider_from_string(
        "openai:m", api_key="k", base_url="http://h:1/v1", supports_vision=True
    )
    assert isinstance(p, OpenAIChatProvider)
    assert p.base_url == "http://h:1/v1" and p.supports_vision


def test_registered_factory_wins_over_builtins() -> None:
    made: list[str] = []

    def factory(model: str, **kw: Any) -> Any:
        made.append(model)
        return OpenAIChatProvider(model, **kw)

    register_provider("Anthropic", factory)
    provider_from_string("anthropic:x")
    assert made == ["x"]


def test_factory_rejecting_overrides_is_a_user_error() -> None:
    register_provider("mine", lambda model: OpenAIChatProvider(model))
    with pytest.raises(UserError, match="does not accept"):
        provider_from_string("mine:x", api_key="k")


def test_model_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOVIA_MODEL", raising=False)
    assert model_from_env(required=False) is None
    with pytest.raises(UserError) as info:
        model_from_env()
    assert "LOVIA_MODEL" in str(info.value)
    monkeypatch.setenv("LOVIA_MODEL", " anthropic:claude-x ")
    assert model_from_env() == "anthropic:claude-x"
