"""The client's address behind the proxies named in ``TRUSTED_PROXIES``.

Behind an ingress every request comes from the ingress's address.  ``TRUSTED_PROXIES``
(comma-separated addresses or CIDRs) names the proxies whose ``X-Forwarded-For`` is
believed: when the peer is one of them, the client is the right-most address of that
header that is not a trusted proxy (each proxy appends the address it saw, so entries
left of the first untrusted one may be made up by the client).  A peer that is not a
trusted proxy is the client, whatever its header says.

:class:`TrustedProxyMiddleware` puts that address in ``REMOTE_ADDR`` (the peer's stays
in ``DASHBOARD_PEER_ADDR``), so the login throttle (django-axes, through
``AXES_CLIENT_IP_CALLABLE``), its records of failed sign-ins, the ``/metrics`` network
allowlist and gunicorn's access log all see the client.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from django.core.exceptions import ImproperlyConfigured

if TYPE_CHECKING:
    from django.http import HttpRequest, HttpResponse

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address
PEER_KEY = "DASHBOARD_PEER_ADDR"


def parse_trusted_proxies(entries: Iterable[str]) -> tuple[Network, ...]:
    """``TRUSTED_PROXIES``'s entries as networks; a bad one is named in the error.

    >>> [str(n) for n in parse_trusted_proxies(["10.0.0.0/8", " 192.168.1.7 ", ""])]
    ['10.0.0.0/8', '192.168.1.7/32']
    """
    networks: list[Network] = []
    for entry in entries:
        text = entry.strip()
        if not text:
            continue
        try:
            networks.append(ipaddress.ip_network(text, strict=False))
        except ValueError as exc:
            raise ImproperlyConfigured(
                f"TRUSTED_PROXIES: {text!r} is not an IP address or CIDR network ({exc})"
            ) from exc
    return tuple(networks)


def _address(text: str) -> Address | None:
    text = text.strip()
    if text.startswith("[") and "]" in text:  # [v6]:port
        text = text[1 : text.index("]")]
    elif text.count(":") == 1:  # v4:port
        text = text.split(":", 1)[0]
    try:
        address = ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _trusted(address: Address, proxies: Sequence[Network]) -> bool:
    return any(address.version == net.version and address in net for net in proxies)


def client_address(peer: str, forwarded_for: str, proxies: Sequence[Network]) -> str:
    """The client's address of a request from *peer* carrying *forwarded_for*.

    >>> proxies = parse_trusted_proxies(["10.0.0.0/8"])
    >>> client_address("10.0.0.5", "6.6.6.6, 203.0.113.9", proxies)
    '203.0.113.9'
    >>> client_address("10.0.0.5", "203.0.113.9, 10.0.0.7", proxies)
    '203.0.113.9'
    >>> client_address("198.51.100.1", "203.0.113.9", proxies)
    '198.51.100.1'
    """
    here = _address(peer)
    if here is None or not _trusted(here, proxies):
        return peer
    for entry in reversed([e for e in forwarded_for.split(",") if e.strip()]):
        hop = _address(entry)
        if hop is None:
            break  # garbage from a trusted proxy's client: the proxy is the last address known
        here = hop
        if not _trusted(hop, proxies):
            break
    return str(here)


class TrustedProxyMiddleware:
    """``REMOTE_ADDR`` becomes the client's address (see the module)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        from django.conf import settings

        self.get_response = get_response
        self.proxies = parse_trusted_proxies(settings.TRUSTED_PROXIES)

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if self.proxies:
            peer = str(request.META.get("REMOTE_ADDR", ""))
            request.META[PEER_KEY] = peer
            request.META["REMOTE_ADDR"] = client_address(
                peer, str(request.META.get("HTTP_X_FORWARDED_FOR", "")), self.proxies
            )
        return self.get_response(request)


def request_client_address(request: HttpRequest) -> str | None:
    """django-axes's ``AXES_CLIENT_IP_CALLABLE``: the address the middleware settled on
    (never a header axes would otherwise believe)."""
    address = request.META.get("REMOTE_ADDR")
    return str(address) if address else None
