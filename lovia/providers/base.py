"""The provider protocol every model adapter implements, and its settings."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from lovia.transcript import ModelDelta, TranscriptEntry


@dataclass
class ModelSettings:
    """Sampling settings; ``None`` means "don't send this field"."""

    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    stop: list[str] | None = None
    parallel_tool_calls: bool | None = None
    provider_options: dict[str, dict[str, Any]] = field(default_factory=dict)


def provider_options(settings: ModelSettings, *keys: str) -> dict[str, Any]:
    """Merge the per-vendor option dicts named by ``keys`` (later wins, ``None`` kept)."""
    merged: dict[str, Any] = {}
    for key in keys:
        merged.update(settings.provider_options.get(key) or {})
    return merged


@runtime_checkable
class Provider(Protocol):
    """A model adapter: transcript entries in, ``ModelDelta`` values out."""

    @property
    def name(self) -> str: ...

    @property
    def model(self) -> str | None: ...

    @property
    def supports_json_schema(self) -> bool: ...

    def stream(
        self,
        entries: Sequence[TranscriptEntry],
        *,
        tools: list[dict[str, Any]] | None = None,
        response_format: dict[str, Any] | None = None,
        settings: ModelSettings | None = None,
    ) -> AsyncIterator[ModelDelta]: ...


@runtime_checkable
class TokenEstimator(Protocol):
    def estimate_tokens(self, entries: Sequence[TranscriptEntry]) -> int: ...


@runtime_checkable
class ContextWindowProvider(Protocol):
    def context_window(self) -> int | None: ...


@runtime_checkable
class ContextWindowDiscovery(Protocol):
    async def discover_context_window(self) -> int | None: ...


@runtime_checkable
class VisionCapable(Protocol):
    @property
    def supports_vision(self) -> bool: ...


def context_window(provider: object) -> int | None:
    fn = getattr(provider, "context_window", None)
    if not callable(fn):
        return None
    value = fn()
    return value if isinstance(value, int) else None


async def discover_context_window(provider: object) -> int | None:
    fn = getattr(provider, "discover_context_window", None)
    if callable(fn):
        value = await fn()
        if isinstance(value, int):
            return value
    return context_window(provider)


def supports_vision(provider: object) -> bool:
    return bool(getattr(provider, "supports_vision", False))


__all__ = [
    "ContextWindowDiscovery",
    "ContextWindowProvider",
    "ModelSettings",
    "Provider",
    "TokenEstimator",
    "VisionCapable",
    "context_window",
    "discover_context_window",
    "provider_options",
    "supports_vision",
]
