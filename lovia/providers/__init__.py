"""Model providers and the ``vendor:model`` registry.

Vendor SDKs are imported lazily: ``import lovia`` never imports ``openai`` or ``anthropic``.
"""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lovia.exceptions import UserError
from lovia.providers._clients import aclose_shared_clients
from lovia.providers.base import ModelSettings, Provider, supports_vision

if TYPE_CHECKING:
    from lovia.providers.anthropic import AnthropicProvider
    from lovia.providers.openai import OpenAIChatProvider
    from lovia.providers.openai_responses import OpenAIResponsesProvider

logger = logging.getLogger("lovia.providers")

ProviderFactory = Callable[..., Provider]

_BUILTIN: dict[str, str] = {
    "anthropic": "lovia.providers.anthropic:AnthropicProvider",
    "claude": "lovia.providers.anthropic:AnthropicProvider",
    "openai": "lovia.providers.openai:OpenAIChatProvider",
    "openai-chat": "lovia.providers.openai:OpenAIChatProvider",
    "oai": "lovia.providers.openai:OpenAIChatProvider",
    "openai-responses": "lovia.providers.openai_responses:OpenAIResponsesProvider",
}
_REGISTRY: dict[str, ProviderFactory] = {}
_ENTRY_POINTS: dict[str, Any] | None = None

_LAZY = {
    "OpenAIChatProvider": "lovia.providers.openai",
    "OpenAIResponsesProvider": "lovia.providers.openai_responses",
    "AnthropicProvider": "lovia.providers.anthropic",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'lovia.providers' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def _load_builtin(target: str) -> ProviderFactory:
    module, _, attr = target.partition(":")
    factory: ProviderFactory = getattr(importlib.import_module(module), attr)
    return factory


def register_provider(prefix: str, factory: ProviderFactory) -> None:
    """Register a factory for ``prefix:model`` specs; later registrations win."""
    _REGISTRY[prefix.lower()] = factory


def _class_factory(cls: type[Any]) -> ProviderFactory:
    def factory(model: str, **kw: Any) -> Provider:
        instance: Provider = cls(model=model, **kw)
        return instance

    return factory


def _entry_point_factory(vendor: str) -> ProviderFactory | None:
    global _ENTRY_POINTS
    if _ENTRY_POINTS is None:
        _ENTRY_POINTS = {}
    from importlib.metadata import entry_points  # slow to import; only for unknown vendors

    for ep in entry_points(group="lovia.providers"):
        if ep.name.lower() != vendor:
            continue
        try:
            obj = ep.load()
        except Exception as exc:
            raise UserError(
                f"Provider plugin '{vendor}' failed to load from entry point '{ep.value}': {exc}",
                hint="Check that the package providing it is installed and importable.",
            ) from exc
        if isinstance(obj, type):
            chosen: ProviderFactory = _class_factory(obj)
        elif callable(obj):
            chosen = obj
        else:
            raise UserError(
                f"Provider plugin '{vendor}' must be a provider class or callable factory",
                hint=f"The entry point '{ep.value}' resolves to {type(obj).__name__}.",
            )
        _ENTRY_POINTS[vendor] = chosen
        _REGISTRY[vendor] = chosen
        return chosen
    return None


def _factory(spec: str, vendor: str) -> ProviderFactory:
    factory = _REGISTRY.get(vendor)
    if factory is None and vendor in _BUILTIN:
        factory = _load_builtin(_BUILTIN[vendor])
    if factory is None:
        factory = _entry_point_factory(vendor)
    if factory is None:
        known = ", ".join(sorted({*_BUILTIN, *_REGISTRY}))
        raise UserError(
            f"Unknown model spec: '{spec}'",
            hint=(
                f"Use one of the known prefixes ({known}), e.g. 'openai:gpt-4.1-mini', or add "
                "your own with lovia.providers.register_provider(prefix, factory) or a package "
                "exposing the 'lovia.providers' entry-point group."
            ),
        )
    return factory


def check_model_spec(spec: str) -> None:
    """Raise the ``UserError`` :func:`provider_from_string` would for an unknown prefix, without
    building a provider (no API key needed): for checking every spec before work starts."""
    if ":" in spec:
        _factory(spec, spec.split(":", 1)[0].lower())


def provider_from_string(
    spec: str,
    *,
    api_key: str | None = None,
    base_url: str | None = None,
    supports_vision: bool | None = None,
) -> Provider:
    """Build a provider from ``vendor:model`` (a bare name means OpenAI Chat)."""
    overrides: dict[str, Any] = {
        k: v
        for k, v in (
            ("api_key", api_key),
            ("base_url", base_url),
            ("supports_vision", supports_vision),
        )
        if v is not None
    }
    if ":" not in spec:
        if spec.lower().startswith("claude"):
            logger.warning(
                "provider.guess: '%s' has no vendor prefix and is sent to OpenAI Chat; "
                "did you mean 'anthropic:%s'?",
                spec,
                spec,
            )
        from lovia.providers.openai import OpenAIChatProvider

        provider: Provider = OpenAIChatProvider(model=spec, **overrides)
        return provider
    vendor, model = spec.split(":", 1)
    vendor = vendor.lower()
    factory = _factory(spec, vendor)
    if overrides:
        try:
            return factory(model, **overrides)
        except TypeError as exc:
            raise UserError(
                f"provider plugin '{vendor}' does not accept "
                f"api_key/base_url/supports_vision overrides: {exc}",
                hint="Configure the provider through its own environment variables instead.",
            ) from exc
    return factory(model)


def model_from_env(*, required: bool = True) -> str | None:
    """The model spec from ``LOVIA_MODEL``."""
    value = os.environ.get("LOVIA_MODEL", "").strip()
    if value:
        return value
    if required:
        raise UserError(
            "no model configured in the environment",
            hint="Set LOVIA_MODEL, e.g. LOVIA_MODEL=openai:gpt-4.1-mini or "
            "LOVIA_MODEL=anthropic:claude-sonnet-4-5.",
        )
    return None


__all__ = [
    "AnthropicProvider",
    "ModelSettings",
    "OpenAIChatProvider",
    "OpenAIResponsesProvider",
    "Provider",
    "aclose_shared_clients",
    "check_model_spec",
    "model_from_env",
    "provider_from_string",
    "register_provider",
    "supports_vision",
]
