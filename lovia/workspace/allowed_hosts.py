"""The sandbox's network allowlist: which ``host:port`` a sandboxed command may reach.

Entries are ``example.com`` (that name only), ``*.example.com`` (its subdomains, not the
name itself), an IP literal (``10.0.0.5``, ``[::1]``) or ``localhost``, each with an
optional ``:port``; without one only ports 80 and 443 are allowed.

The proxy judges the *name* a command asked for, before anything is resolved, and then
connects to the address it resolved itself (no rebinding between check and connect). A
name entry never reaches a loopback, link-local, unspecified or multicast address, nor an
address of this host's own interfaces: only an entry that is that IP literal (or
``localhost``) does.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from dataclasses import dataclass

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

DEFAULT_PORTS: frozenset[int] = frozenset({80, 443})
_LABEL_RE = re.compile(r"^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$")
_THIS_NETWORK = ipaddress.ip_network("0.0.0.0/8")


def normalize_host(raw: str) -> str:
    """``raw`` as a canonical host (lower case, no trailing dot, IPs in standard form).

    Raises ``ValueError`` with a readable reason for anything that is neither a DNS name
    nor an IP literal (user info, percent escapes, all-numeric shorthand like ``127.1``).
    """
    host = raw.strip()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
        try:
            return str(ipaddress.IPv6Address(host))
        except ValueError:
            raise ValueError(f"{raw!r} is not an IPv6 address") from None
    host = host.lower().removesuffix(".")
    if not host:
        raise ValueError("the host is empty")
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        pass
    if not host.isascii():
        raise ValueError(f"{raw!r} is not ASCII; write the name in its xn-- (punycode) form")
    if len(host) > 253:
        raise ValueError(f"{raw!r} is longer than a DNS name can be")
    labels = host.split(".")
    if not all(_LABEL_RE.match(label) for label in labels):
        raise ValueError(f"{raw!r} is not a host name")
    last = labels[-1]
    if last.isdigit() or last.startswith("0x"):
        raise ValueError(f"{raw!r} looks like a shortened IP address; write it as a.b.c.d")
    return host


def split_host_port(text: str) -> tuple[str, int | None]:
    """``host``, ``host:port``, ``[v6]`` or ``[v6]:port`` → (host part, port or None)."""
    text = text.strip()
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            raise ValueError(f"{text!r}: unclosed '['")
        host, rest = text[: end + 1], text[end + 1 :]
        if not rest:
            return host, None
        if not rest.startswith(":"):
            raise ValueError(f"{text!r}: expected ':port' after ']'")
        return host, _port(rest[1:], text)
    if text.count(":") == 1:
        host, port = text.split(":")
        return host, _port(port, text)
    return text, None  # a bare IPv6 literal has several colons and no port


def _port(text: str, whole: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise ValueError(f"{whole!r}: the port must be a number from 1 to 65535")
    return int(text)


@dataclass(frozen=True)
class AllowedHost:
    """One allowlist entry."""

    host: str
    """Canonical host; for a wildcard the suffix without ``*.``."""
    wildcard: bool = False
    port: int | None = None
    """None: ports 80 and 443."""

    @classmethod
    def parse(cls, entry: str) -> AllowedHost:
        """Raises ``ValueError`` with a readable reason."""
        if not isinstance(entry, str) or not entry.strip():
            raise ValueError("an allowed domain must be a non-empty string")
        text = entry.strip()
        if "://" in text or "/" in text or "@" in text:
            raise ValueError(f"{entry!r}: give a host (optionally host:port), not a URL")
        raw_host, port = split_host_port(text)
        wildcard = raw_host.startswith("*.")
        if wildcard:
            raw_host = raw_host[2:]
        if "*" in raw_host:
            raise ValueError(f"{entry!r}: only a leading '*.' wildcard is supported")
        host = normalize_host(raw_host)
        if wildcard and (is_ip_literal(host) or "." not in host):
            raise ValueError(f"{entry!r}: a wildcard needs a domain such as *.example.com")
        return cls(host=host, wildcard=wildcard, port=port)

    @property
    def literal(self) -> bool:
        """An IP literal or ``localhost``: the entry may reach that local address."""
        return not self.wildcard and (self.host == "localhost" or is_ip_literal(self.host))

    def matches(self, host: str, port: int) -> bool:
        """``host`` must already be canonical (:func:`normalize_host`)."""
        if (port not in DEFAULT_PORTS) if self.port is None else (port != self.port):
            return False
        if self.wildcard:
            return host.endswith("." + self.host)
        return host == self.host

    def __str__(self) -> str:
        host = f"*.{self.host}" if self.wildcard else self.host
        if ":" in host:
            host = f"[{host}]"
        return host if self.port is None else f"{host}:{self.port}"


def parse_allowlist(entries: tuple[str, ...] | list[str]) -> tuple[AllowedHost, ...]:
    return tuple(AllowedHost.parse(e) for e in entries)


def match(allowlist: tuple[AllowedHost, ...], host: str, port: int) -> AllowedHost | None:
    """The first entry that allows ``host:port`` (host canonical), else None."""
    for entry in allowlist:
        if entry.matches(host, port):
            return entry
    return None


def is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def is_local_address(ip: IPAddress) -> bool:
    """Loopback, link-local, unspecified, multicast, ``0.0.0.0/8`` or one of this host's own
    addresses (tested by binding to it: only a local address can be bound)."""
    mapped = ip.ipv4_mapped if isinstance(ip, ipaddress.IPv6Address) else None
    if mapped is not None:
        ip = mapped
    if ip.is_loopback or ip.is_link_local or ip.is_unspecified or ip.is_multicast:
        return True
    if isinstance(ip, ipaddress.IPv4Address) and ip in _THIS_NETWORK:
        return True
    family = socket.AF_INET if isinstance(ip, ipaddress.IPv4Address) else socket.AF_INET6
    try:
        with socket.socket(family, socket.SOCK_DGRAM) as probe:
            probe.bind((str(ip), 0))
    except OSError:
        return False
    return True


__all__ = [
    "DEFAULT_PORTS",
    "AllowedHost",
    "is_ip_literal",
    "is_local_address",
    "match",
    "normalize_host",
    "parse_allowlist",
    "split_host_port",
]
