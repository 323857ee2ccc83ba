"""The sandbox's network allowlist: entry forms, matching, and which addresses count as local."""

from __future__ import annotations

import ipaddress

import pytest

from lovia.workspace.allowed_hosts import (
    AllowedHost,
    is_local_address,
    match,
    normalize_host,
    parse_allowlist,
)


@pytest.mark.parametrize(
    ("entry", "host", "port", "allowed"),
    [
        ("pypi.org", "pypi.org", 443, True),
        ("pypi.org", "pypi.org", 80, True),
        ("pypi.org", "pypi.org", 8080, False),
        ("pypi.org", "evil.pypi.org", 443, False),
        ("pypi.org", "pypi.org.evil.example", 443, False),
        ("*.pythonhosted.org", "files.pythonhosted.org", 443, True),
        ("*.pythonhosted.org", "a.b.pythonhosted.org", 443, True),
        ("*.pythonhosted.org", "pythonhosted.org", 443, False),
        ("*.pythonhosted.org", "evilpythonhosted.org", 443, False),
        ("PyPI.org.", "pypi.org", 443, True),
        ("registry.local:8443", "registry.local", 8443, True),
        ("registry.local:8443", "registry.local", 443, False),
        ("127.0.0.1:8000", "127.0.0.1", 8000, True),
        ("127.0.0.1:8000", "127.0.0.1", 8001, False),
        ("[::1]:8000", "::1", 8000, True),
        ("localhost:3000", "localhost", 3000, True),
    ],
)
def test_entries_match_exact_names_suffixes_and_ports(
    entry: str, host: str, port: int, allowed: bool
) -> None:
    allowlist = parse_allowlist([entry])
    assert (match(allowlist, normalize_host(host), port) is not None) is allowed


@pytest.mark.parametrize(
    "entry",
    [
        "",
        "https://pypi.org",
        "pypi.org/simple",
        "user@pypi.org",
        "*",
        "*.org.*",
        "py*.org",
        "*.10.0.0.1",
        "127.1",
        "0x7f000001",
        "2130706433",
        "bad host",
        "pypi.org:0",
        "pypi.org:99999",
        "[::1",
        "bücher.example",
    ],
)
def test_bad_entries_are_refused_with_a_reason(entry: str) -> None:
    with pytest.raises(ValueError) as exc:
        AllowedHost.parse(entry)
    assert str(exc.value)


def test_ip_forms_are_canonical_so_a_mapped_address_is_not_the_literal() -> None:
    allowlist = parse_allowlist(["127.0.0.1:8000"])
    assert normalize_host("[::ffff:127.0.0.1]") == "::ffff:7f00:1"
    assert match(allowlist, normalize_host("[::ffff:127.0.0.1]"), 8000) is None
    assert AllowedHost.parse("127.0.0.1:8000").literal
    assert AllowedHost.parse("localhost").literal
    assert not AllowedHost.parse("pypi.org").literal
    assert str(AllowedHost.parse("[::1]:80")) == "[::1]:80"
    assert str(AllowedHost.parse("*.Example.com")) == "*.example.com"


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "127.8.9.10",
        "::1",
        "169.254.169.254",
        "0.0.0.0",
        "0.1.2.3",
        "::ffff:127.0.0.1",
        "224.0.0.1",
        "fe80::1",
    ],
)
def test_loopback_link_local_and_unspecified_are_local(address: str) -> None:
    assert is_local_address(ipaddress.ip_address(address))


def test_public_addresses_are_not_local() -> None:
    assert not is_local_address(ipaddress.ip_address("93.184.216.34"))
    assert not is_local_address(ipaddress.ip_address("2606:2800:220:1:248:1893:25c8:1946"))


def _own_address() -> str | None:
    """A non-loopback address of this machine (the one a default route would use)."""
    import socket

    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("192.0.2.1", 9))  # TEST-NET: nothing is sent
            address = str(probe.getsockname()[0])
    except OSError:
        return None
    return None if address.startswith("127.") else address


def test_this_hosts_own_addresses_are_local() -> None:
    own = _own_address()
    if own is None:
        pytest.skip("no non-loopback address here")
    assert is_local_address(ipaddress.ip_address(own))
