"""Context windows: bundled per-host tables, ``GET /models`` discovery and error-body parsing."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Mapping

from lovia.providers._http import host_matches

MIN_WINDOW = 1024
MAX_WINDOW = 20_000_000

WindowRules = Mapping[str, int]
"""Model name → window; a key ending in ``-`` is a prefix rule."""

_RATE_LIMIT = re.compile(
    r"tokens per minute|requests per|per minute|per day|rate limit|rate_limit|\btpm\b|\brpm\b"
)
_NUM = r"(\d+(?:,\d{3})*)"
_WINDOW_PATTERNS = [
    re.compile(p)
    for p in (
        rf"maximum context length is {_NUM}",
        rf"context length is only {_NUM}",
        rf"maximum input length of {_NUM}",
        rf"> ?{_NUM} maximum",
        rf"must not exceed {_NUM}",
        rf"must be <= ?{_NUM}",
        rf"\"n_ctx\"\s*:\s*{_NUM}",
    )
]
_EXCEED_LIMIT = re.compile(r"> ?(\d+),")
_SNAPSHOT = re.compile(r"-(?:\d{4}-\d{2}-\d{2}|\d{8})$")
_MODEL_FIELDS = (
    "max_model_len",
    "context_window",
    "max_input_tokens",
    "loaded_context_length",
    "context_length",
    "max_context_length",
)


def _plausible(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if MIN_WINDOW <= value <= MAX_WINDOW else None


def window_from_error(body: str | None) -> int | None:
    """The context window an overflow error body reports, if it names one."""
    if not body:
        return None
    text = body.lower()
    if _RATE_LIMIT.search(text):
        return None
    found: list[int] = []
    for pattern in _WINDOW_PATTERNS:
        found.extend(int(m.replace(",", "")) for m in pattern.findall(text))
    if "exceed context limit" in text:
        found.extend(int(m) for m in _EXCEED_LIMIT.findall(text))
    plausible = [v for v in found if MIN_WINDOW <= v <= MAX_WINDOW]
    return min(plausible) if plausible else None


def window_from_models_payload(payload: object, model: str) -> int | None:
    """The window advertised for ``model`` in an OpenAI-style ``/models`` listing."""
    data = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(data, list):
        return None
    entries = [d for d in data if isinstance(d, dict)]
    entry = next((d for d in entries if d.get("id") == model), None)
    if entry is None and ":" in model:
        bare = model.split(":", 1)[1]
        entry = next((d for d in entries if d.get("id") == bare), None)
    if entry is None:
        return None
    top = entry.get("top_provider")
    if isinstance(top, dict):
        value = _plausible(top.get("context_length"))
        if value is not None:
            return value
    for key in _MODEL_FIELDS:
        value = _plausible(entry.get(key))
        if value is not None:
            return value
    return None


def strip_snapshot(model: str) -> str:
    """Drop a ``-YYYY-MM-DD`` / ``-YYYYMMDD`` suffix: ``gpt-4.1-2025-04-14`` → ``gpt-4.1``."""
    return _SNAPSHOT.sub("", model)


def table_window(model: str | None, rules: WindowRules | None) -> int | None:
    """Exact match (also without a snapshot date) first, else the longest matching prefix rule."""
    if not model or not rules:
        return None
    for name in (model, strip_snapshot(model)):
        exact = rules.get(name)
        if exact is not None and not name.endswith("-"):
            return exact
    best: tuple[int, int] | None = None
    for rule, window in rules.items():
        if rule.endswith("-") and model.startswith(rule) and (best is None or len(rule) > best[0]):
            best = (len(rule), window)
    return best[1] if best else None


def rules_for_host(host: str | None, table: Mapping[str, WindowRules]) -> WindowRules | None:
    for domain, rules in table.items():
        if host_matches(host, (domain,)):
            return rules
    return None


_ADVERTISED: dict[tuple[str, str], int] = {}
_PROBED: set[tuple[str, str]] = set()
# Probes under way, per endpoint and event loop: a second caller waits for the first one's
# answer instead of asking again (a host warming up while its first run starts).
_IN_FLIGHT: dict[tuple[int, tuple[str, str]], asyncio.Future[None]] = {}


def clear_endpoint_cache() -> None:
    """Forget every advertised window and probe (tests; a server that changed its model)."""
    _ADVERTISED.clear()
    _PROBED.clear()
    _IN_FLIGHT.clear()


class WindowResolver:
    """A provider's context window: the advertised ``/models`` value, else the host table.

    The advertised value and the "already probed" mark are process-wide per
    ``(base_url, model)``, so a run that builds a fresh provider does not probe again.
    """

    __slots__ = ("_key", "_rules", "model", "probe")

    def __init__(
        self,
        *,
        base_url: str,
        host: str | None,
        model: str,
        table: Mapping[str, WindowRules],
        probe: bool,
    ) -> None:
        self.model = model
        self.probe = probe
        self._key = (base_url, model)
        self._rules = rules_for_host(host, table)

    def window(self) -> int | None:
        advertised = _ADVERTISED.get(self._key)
        return advertised if advertised is not None else table_window(self.model, self._rules)

    async def discover(self, fetch: Callable[[], Awaitable[int | None]]) -> int | None:
        if self.probe and self._key not in _PROBED and self._key not in _ADVERTISED:
            slot = (id(asyncio.get_running_loop()), self._key)
            pending = _IN_FLIGHT.get(slot)
            if pending is None or pending.done():
                pending = asyncio.ensure_future(self._probe(fetch))
                _IN_FLIGHT[slot] = pending
                pending.add_done_callback(lambda done: _IN_FLIGHT.pop(slot, None))
            await asyncio.shield(pending)
        return self.window()

    async def _probe(self, fetch: Callable[[], Awaitable[int | None]]) -> None:
        try:
            value = await fetch()
        except Exception:
            value = None
        _PROBED.add(self._key)
        if value is not None:
            _ADVERTISED[self._key] = value


__all__ = [
    "WindowResolver",
    "clear_endpoint_cache",
    "rules_for_host",
    "strip_snapshot",
    "table_window",
    "window_from_error",
    "window_from_models_payload",
]
