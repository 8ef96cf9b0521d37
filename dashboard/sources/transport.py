"""The httpx transport that applies a source's address policy after DNS
(:mod:`dashboard.sources.addresses` says why and how).

A module of its own so that the policy's checks, which the models and forms run when a
URL is saved, do not load the HTTP client library: only a poll does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx

from dashboard.sources.addresses import (
    AddressPolicy,
    IPAddress,
    default_port,
    literal_ip,
    resolve,
)


class PolicyTransport(httpx.HTTPTransport):
    """An httpx transport that resolves each request's host once, checks every address
    against the policy, and connects to the checked address (Host header and TLS server
    name unchanged)."""

    def __init__(self, policy: AddressPolicy, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.policy = policy

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        host = request.url.host
        port = request.url.port or default_port(request.url.scheme)
        ip = literal_ip(host)
        if ip is not None:
            ips: Sequence[IPAddress] = [ip]
        else:
            try:
                ips = resolve(host, port)
            except (OSError, UnicodeError) as exc:
                raise httpx.ConnectError(
                    f"cannot resolve {host}: {type(exc).__name__}", request=request
                ) from None
        if not ips:
            raise httpx.ConnectError(f"cannot resolve {host}", request=request)
        for each in ips:
            self.policy.check(each, port, host=host)
        request.url = request.url.copy_with(host=str(ips[0]))
        if request.url.scheme == "https":
            request.extensions = {**request.extensions, "sni_hostname": host}
        return super().handle_request(request)
