"""What both OpenAI providers share: the ``openai`` SDK client, its headers and error classes.

Chat Completions and the Responses API live on the same endpoint with the same key, so the
two providers build the same client (and share it through :mod:`._clients`), send the same
headers and sort the same SDK exceptions. Only the request and the event stream differ.
"""

from __future__ import annotations

from typing import Any

from lovia.http_config import resolve_verify
from lovia.providers._sdk import SDKProvider

DEFAULT_BASE_URL = "https://api.openai.com/v1"
OFFICIAL_HOSTS = ("api.openai.com",)
_NO_KEY = "lovia-no-api-key"  # satisfies the SDK constructor; the header is omitted on the wire


class OpenAISDKProvider(SDKProvider):
    """Base of the OpenAI providers (internal): endpoint configuration and the SDK client."""

    vendor = "openai"
    api_key_env = "OPENAI_API_KEY"
    base_url_env = "OPENAI_BASE_URL"
    default_base_url = DEFAULT_BASE_URL
    base_url_example = "http://localhost:11434/v1 (Ollama) or http://localhost:8000/v1 (vLLM)"
    official_hosts = OFFICIAL_HOSTS

    _headers: dict[str, object] | None = None

    def _probe_windows(self) -> bool:
        return not self.is_official_host

    def _sdk_errors(self) -> tuple[type[BaseException], type[BaseException], type[BaseException]]:
        import openai

        return (openai.APIStatusError, openai.APITimeoutError, openai.APIConnectionError)

    def _request_headers(self) -> dict[str, object]:
        if self._headers is None:
            import openai

            headers: dict[str, object] = {"content-type": "application/json"}
            for key, value in self.default_headers.items():
                if key == "authorization" and self._api_key:
                    continue  # the API key wins over a user auth header
                headers[key] = value
            if not self._api_key and "authorization" not in headers and self._client is None:
                headers["authorization"] = openai.omit  # keyless local server: no auth header
            self._headers = headers
        return self._headers

    def _build_client(self) -> Any:
        import openai

        http = openai.DefaultAsyncHttpxClient(
            timeout=self._http_timeout(), verify=resolve_verify(), trust_env=self.trust_env
        )
        return openai.AsyncOpenAI(
            api_key=self._api_key or _NO_KEY,
            base_url=self.base_url,
            max_retries=0,
            http_client=http,
        )


__all__ = ["DEFAULT_BASE_URL", "OFFICIAL_HOSTS", "OpenAISDKProvider"]
