from __future__ import annotations

import email.utils

import pytest

from lovia.exceptions import UserError
from lovia.providers._http import (
    host_matches,
    is_retryable_status,
    normalize_base_url,
    parse_retry_after,
)


@pytest.mark.parametrize("code", [408, 429, 500, 502, 503, 529, 599])
def test_retryable_statuses(code: int) -> None:
    assert is_retryable_status(code)


@pytest.mark.parametrize("code", [None, 200, 400, 401, 403, 404, 413, 422, 600])
def test_final_statuses(code: int | None) -> None:
    assert not is_retryable_status(code)


def test_host_matches_only_the_domain_and_true_subdomains() -> None:
    domains = ("api.openai.com",)
    assert host_matches("api.openai.com", domains)
    assert host_matches("eu.api.openai.com", domains)
    assert host_matches("API.OpenAI.com", domains)
    for host in ("evilapi.openai.com", "openai.com", None, ""):
        assert not host_matches(host, domains)


def test_retry_after_seconds_milliseconds_and_dates() -> None:
    assert parse_retry_after({"retry-after": "3"}) == 3.0
    assert parse_retry_after({"retry-after": "1.5"}) == 1.5
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    date = email.utils.formatdate(1_000_010, usegmt=True)
    assert parse_retry_after({"retry-after": date}, now=1_000_000) == pytest.approx(10)
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None
    assert parse_retry_after(None) is None


def test_base_url_is_normalized() -> None:
    url = normalize_base_url(" http://localhost:8000/v1/ ", label="X", env_var="X_URL", example="e")
    assert url == "http://localhost:8000/v1"


@pytest.mark.parametrize("bad", ["localhost:8000/v1", "ftp://host/v1", "http://", "not a url"])
def test_bad_base_url_names_the_variable(bad: str) -> None:
    with pytest.raises(UserError) as info:
        normalize_base_url(bad, label="OpenAI Chat", env_var="OPENAI_BASE_URL", example="e")
    assert "OPENAI_BASE_URL" in str(info.value)
