"""Error bodies become one-line summaries; statuses and transport failures are sorted by cause."""

from __future__ import annotations

import json
import socket
import ssl

import pytest

from lovia.exceptions import ProviderError
from lovia.providers._errors import (
    SUMMARY_LIMIT,
    Endpoint,
    is_transient_status,
    one_line,
    status_error,
    summarize_body,
    transport_error,
)

EP = Endpoint(
    vendor="openai",
    label="OpenAI Chat",
    model="m1",
    base_url="http://127.0.0.1:8000/v1",
    api_key_env="OPENAI_API_KEY",
    base_url_env="OPENAI_BASE_URL",
    timeout=30.0,
    is_context_overflow=lambda status, body: False,
    sdk_errors=(RuntimeError, RuntimeError, RuntimeError),
)


@pytest.mark.parametrize(
    ("body", "summary"),
    [
        ('{"error": {"message": "Bad key\\nreally", "type": "auth"}}', "Bad key really"),
        (
            '{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}',
            "Overloaded",
        ),
        ('{"error": {"type": "server_error"}}', "server_error"),
        ('{"error": "model not found"}', "model not found"),
        ('{"detail": "Not Found"}', "Not Found"),
        ('{"message": "upstream timeout"}', "upstream timeout"),
        (
            "<html><head><title>502 Bad&nbsp;Gateway</title></head><body>x</body></html>",
            "502 Bad Gateway",  # entities decoded, spaces normalised
        ),
        (
            "<!DOCTYPE html>\n<html>\n<body>\n<h1>Service <b>down</b></h1>\n</body></html>",
            "Service down",
        ),
        ("<html><body><p>nothing to name</p></body></html>", "(an HTML page without a title)"),
        ("\n\n  upstream connect error\nreset reason: overflow\n", "upstream connect error"),
        ("[1, 2]", "[1, 2]"),
        ("", ""),
    ],
)
def test_bodies_are_summarized_in_one_line(body: str, summary: str) -> None:
    assert summarize_body(body) == summary


def test_long_bodies_are_clipped() -> None:
    summary = summarize_body(json.dumps({"error": {"message": "word " * 400}}))
    assert len(summary) == SUMMARY_LIMIT and summary.endswith("…")
    assert one_line("a\n\tb   c", 10) == "a b c"


def test_status_message_is_the_status_and_the_summary() -> None:
    page = "<html><head><title>503 Service Unavailable</title></head>" + "<p>x</p>\n" * 80
    err = status_error(EP, 503, page + "</html>")
    assert isinstance(err, ProviderError)
    assert err.message == "OpenAI Chat stream returned HTTP 503: Service Unavailable"
    assert err.retryable is True and err.body and err.body.count("\n") == 80
    empty = status_error(EP, 502, "")
    assert empty.message == "OpenAI Chat stream returned HTTP 502: Bad Gateway"


@pytest.mark.parametrize("code", [408, 409, 429, 500, 501, 503, 529])
def test_transient_statuses(code: int) -> None:
    assert is_transient_status(code)


@pytest.mark.parametrize("code", [None, 400, 401, 403, 404, 413, 422])
def test_final_statuses(code: int | None) -> None:
    assert not is_transient_status(code)


def test_404_hint_names_the_model_setting_when_the_model_is_unknown() -> None:
    unknown_model = status_error(EP, 404, '{"error": {"message": "model \\"m1\\" not found"}}')
    assert unknown_model.hint and "LOVIA_MODEL" in unknown_model.hint
    assert "lovia.model" in unknown_model.hint and "openai:<model name>" in unknown_model.hint
    unknown_path = status_error(EP, 404, "404 page not found")
    assert unknown_path.hint and unknown_path.hint.startswith("Nothing answered")
    assert "OPENAI_BASE_URL" in unknown_path.hint and "/v1" in unknown_path.hint


def _raised_from(outer: BaseException, cause: BaseException) -> BaseException:
    try:
        try:
            raise cause
        except BaseException as inner:
            raise outer from inner
    except BaseException as exc:
        return exc


def test_refused_unresolvable_and_untrusted_connections_are_final() -> None:
    import httpx2

    refused = transport_error(
        EP,
        _raised_from(
            httpx2.ConnectError("All connection attempts failed"),
            ConnectionRefusedError(111, "refused"),
        ),
        streaming=False,
    )
    assert refused.retryable is False and "connection refused" in refused.message
    unknown = transport_error(
        EP,
        _raised_from(httpx2.ConnectError("lookup"), socket.gaierror(-2, "unknown")),
        streaming=False,
    )
    assert unknown.retryable is False and "cannot resolve host '127.0.0.1'" in unknown.message
    cert = ssl.SSLCertVerificationError(1, "certificate verify failed")
    cert.verify_message = "self-signed certificate"
    untrusted = transport_error(EP, _raised_from(httpx2.ConnectError("tls"), cert), streaming=False)
    assert untrusted.retryable is False and "self-signed certificate" in untrusted.message
    assert untrusted.hint and "LOVIA_HTTP_CA_BUNDLE" in untrusted.hint
    for err in (refused, unknown):
        assert err.hint and "OPENAI_BASE_URL" in err.hint


def test_resets_and_cuts_stay_retryable() -> None:
    import httpx2

    reset = transport_error(
        EP,
        _raised_from(httpx2.ConnectError("reset"), ConnectionResetError(104, "reset")),
        streaming=False,
    )
    assert reset.retryable is True
    cut = transport_error(EP, httpx2.RemoteProtocolError("peer closed\nconnection"), streaming=True)
    assert cut.retryable is True and cut.message == (
        "OpenAI Chat stream broke off: RemoteProtocolError: peer closed connection"
    )


def test_connect_timeout_is_retryable_and_names_the_base_url() -> None:
    import httpx2

    err = transport_error(EP, httpx2.ConnectTimeout("timed out"), streaming=False)
    assert err.retryable is True
    assert err.message == "OpenAI Chat: could not connect to http://127.0.0.1:8000/v1 within 10s"
    assert err.hint and "OPENAI_BASE_URL" in err.hint
    read = transport_error(EP, httpx2.ReadTimeout("timed out"), streaming=True)
    assert (
        read.retryable is True and read.message == "OpenAI Chat stream stalled: no data within 30s"
    )
