"""What the SDK-backed providers share: configuration, the shared client, windows, lifecycle."""

from __future__ import annotations

import logging
import os
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

from lovia.exceptions import UserError
from lovia.http_config import resolve_timeout, resolve_trust_env
from lovia.model_view import conversation_of, was_rewritten
from lovia.providers._clients import shared_client
from lovia.providers._encoding import PrefixCache, encode_body
from lovia.providers._errors import CONNECT_TIMEOUT, Endpoint
from lovia.providers._http import host_matches, host_of, lower_keys, normalize_base_url
from lovia.providers._stream import SSEStream, open_stream
from lovia.providers._windows import WindowResolver, WindowRules, window_from_models_payload
from lovia.providers.base import ModelSettings
from lovia.providers.cache_watch import CacheWatch, Fingerprint
from lovia.transcript import TranscriptEntry

logger = logging.getLogger("lovia.providers")


class SDKProvider(ABC):
    """Base of :class:`OpenAIChatProvider` and :class:`AnthropicProvider` (internal)."""

    vendor: ClassVar[str]
    label: ClassVar[str]
    api_key_env: ClassVar[str]
    base_url_env: ClassVar[str]
    default_base_url: ClassVar[str]
    base_url_example: ClassVar[str]
    official_hosts: ClassVar[tuple[str, ...]]
    windows: ClassVar[dict[str, WindowRules]]

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None,
        base_url: str | None,
        client: Any,
        timeout: float | None,
        default_headers: dict[str, str] | None,
        trust_env: bool | None,
        official_dialect: bool | None,
        supports_vision: bool | None,
    ) -> None:
        if not model:
            raise UserError(
                f"{type(self).__name__} needs a model name",
                hint=f"Use e.g. model='{self.vendor}:<model name>'.",
            )
        self.model: str = model
        if base_url is None and client is not None:
            base_url = str(client.base_url)
        self.base_url = self._normalize_base_url(
            base_url or os.environ.get(self.base_url_env) or self.default_base_url
        )
        self._api_key = api_key or os.environ.get(self.api_key_env) or None
        self._client = client
        self.timeout = resolve_timeout(timeout)
        self.trust_env = resolve_trust_env(trust_env)
        self.default_headers = lower_keys(default_headers)
        self.host = host_of(self.base_url)
        self.is_official_host = host_matches(self.host, self.official_hosts)
        self.official_dialect = (
            official_dialect if official_dialect is not None else self.is_official_host
        )
        self.supports_vision: bool = (
            supports_vision if supports_vision is not None else self.is_official_host
        )
        self._windows = WindowResolver(
            base_url=self.base_url,
            host=self.host,
            model=model,
            table=self.windows,
            probe=self._probe_windows(),
        )
        # resolve_verify() reads these when the client is built: part of the endpoint's identity
        self._client_key = (
            self.vendor,
            self.base_url,
            self._api_key,
            self.trust_env,
            os.environ.get("LOVIA_HTTP_INSECURE"),
            os.environ.get("LOVIA_HTTP_CA_BUNDLE"),
        )
        self._endpoint: Endpoint | None = None
        self._timeout: Any = None
        self._messages = PrefixCache()  # encoded messages of the previous request
        self._cache_watch = CacheWatch(self.label)
        self._prefixes: dict[int, Fingerprint] = {}  # requests in flight, by id(entries)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"

    # ------------------------------------------------------------------ vendor hooks

    def _normalize_base_url(self, url: str) -> str:
        return normalize_base_url(
            url, label=self.label, env_var=self.base_url_env, example=self.base_url_example
        )

    def _probe_windows(self) -> bool:
        return True

    def _models_params(self) -> dict[str, Any]:
        return {}

    @staticmethod
    @abstractmethod
    def is_context_overflow(status: int, body: str) -> bool:
        """Whether an error response (``body`` lower-cased) means the prompt is too long."""

    @abstractmethod
    def _build_client(self) -> Any:
        """A new SDK client for this endpoint (``max_retries=0``)."""

    @abstractmethod
    def _sdk_errors(self) -> tuple[type[BaseException], type[BaseException], type[BaseException]]:
        """The SDK's ``(APIStatusError, APITimeoutError, APIConnectionError)``."""

    @abstractmethod
    def _request_headers(self) -> dict[str, object]:
        """Per-request headers (lower-case keys); ``omit`` values remove SDK defaults."""

    @abstractmethod
    def _build_payload(
        self,
        entries: Sequence[TranscriptEntry],
        tools: list[dict[str, Any]] | None,
        response_format: dict[str, Any] | None,
        settings: ModelSettings | None,
    ) -> dict[str, Any]:
        """The request body; pre-encoded parts are :class:`~._encoding.Raw` values."""

    # ------------------------------------------------------------------ plumbing

    def _check_ready(self) -> None:
        if self.is_official_host and not self._api_key and self._client is None:
            raise UserError(
                f"{self.label} requires an API key for {self.host}",
                hint=f"Set {self.api_key_env} (or pass api_key=...). For a compatible server "
                f"elsewhere set {self.base_url_env} instead.",
            )

    def _sdk_client(self) -> Any:
        if self._client is not None:
            return self._client
        return shared_client(self._client_key, self._build_client)

    @property
    def endpoint(self) -> Endpoint:
        """Error context; built on first use (the SDK is imported by then)."""
        if self._endpoint is None:
            self._endpoint = Endpoint(
                vendor=self.vendor,
                label=self.label,
                model=self.model,
                base_url=self.base_url,
                api_key_env=self.api_key_env,
                base_url_env=self.base_url_env,
                timeout=self.timeout,
                is_context_overflow=self.is_context_overflow,
                sdk_errors=self._sdk_errors(),
                has_api_key=bool(self._api_key) or self._client is not None,
            )
        return self._endpoint

    def _http_timeout(self) -> Any:
        if self._timeout is None:
            import httpx2

            self._timeout = httpx2.Timeout(self.timeout, connect=min(CONNECT_TIMEOUT, self.timeout))
        return self._timeout

    async def _open(
        self,
        path: str,
        entries: Sequence[TranscriptEntry],
        tools: list[dict[str, Any]] | None,
        response_format: dict[str, Any] | None,
        settings: ModelSettings | None,
    ) -> SSEStream:
        """Check the configuration, send the request, return the open event stream."""
        self._check_ready()
        body = encode_body(self._build_payload(entries, tools, response_format, settings))
        return await open_stream(
            self._sdk_client(),
            path,
            body,
            headers=self._request_headers(),
            request_timeout=self._http_timeout(),
            endpoint=self.endpoint,
        )

    # ------------------------------------------------------------------ cache health

    def _remember_prefix(
        self, entries: Sequence[TranscriptEntry], fingerprint: Fingerprint
    ) -> None:
        """Keep a request's fingerprint until its usage arrives (:meth:`_check_cache`)."""
        self._prefixes.pop(id(entries), None)
        self._prefixes[id(entries)] = fingerprint
        while len(self._prefixes) > 16:  # requests that failed never report usage
            del self._prefixes[next(iter(self._prefixes))]

    def _check_cache(self, entries: Sequence[TranscriptEntry], cache_read: int) -> None:
        """Compare this call's cache read with the previous call of its conversation."""
        fingerprint = self._prefixes.pop(id(entries), None)
        if fingerprint is not None:
            self._cache_watch.observe(
                conversation_of(entries),
                fingerprint,
                cache_read,
                rewritten=was_rewritten(entries),
            )

    # ------------------------------------------------------------------ windows, lifecycle

    def context_window(self) -> int | None:
        """The advertised window if discovered, else the bundled table's (no I/O)."""
        return self._windows.window()

    async def discover_context_window(self) -> int | None:
        """Ask ``GET {base_url}/models`` once per process and endpoint; never raises."""
        return await self._windows.discover(self._fetch_models_window)

    async def aclose(self) -> None:
        """Drop per-run caches. The SDK client is shared (or the caller's) and stays open."""
        self._messages.clear()

    async def warm_up(self) -> None:
        """Open the endpoint's connection before the first request, so a host's first run
        pays neither for building the SDK client nor for the TCP/TLS handshake nor for the
        context-window probe: one ``GET {base_url}/models`` (the probe itself where the
        endpoint is probed). Never raises; an endpoint that cannot work yet is left alone."""
        try:
            self._check_ready()
            if self._windows.probe:
                await self.discover_context_window()
            else:
                await self._get_models()
        except Exception:
            logger.debug("provider.warm_up failed for %s", self.base_url, exc_info=True)

    async def _get_models(self) -> Any:
        import httpx2

        headers = {k: v for k, v in self._request_headers().items() if k != "content-type"}
        options: dict[str, Any] = {"headers": headers, "timeout": 10.0}
        params = self._models_params()
        if params:
            options["params"] = params
        return await self._sdk_client().get("/models", cast_to=httpx2.Response, options=options)

    async def _fetch_models_window(self) -> int | None:
        response = await self._get_models()
        return window_from_models_payload(response.json(), self.model)


__all__ = ["SDKProvider"]
