"""``GET /metrics``: the Prometheus text exposition of :class:`DashboardCollector`.

A scrape is let in by a bearer token (``Authorization: Bearer <METRICS_TOKEN>``,
compared in constant time) or by its client address being in
``METRICS_ALLOWED_NETWORKS`` (the address the server saw, ``REMOTE_ADDR``: a
forwarded-for header is never trusted for it).  With neither set every scrape is
refused, so the figures (cluster, queue and source names) are never public by default.
"""

from __future__ import annotations

import hmac
import ipaddress

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

from dashboard.metrics.collector import DashboardCollector


def registry() -> CollectorRegistry:
    """A registry of this collector only: process metrics of one web process would
    not describe the dashboard, and no state is shared across processes."""
    out = CollectorRegistry(auto_describe=False)
    out.register(DashboardCollector())
    return out


def _token_ok(request: HttpRequest) -> bool:
    token = str(getattr(settings, "METRICS_TOKEN", "") or "")
    header = request.headers.get("Authorization", "")
    scheme, _, given = header.partition(" ")
    if not token or scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(given.strip().encode(), token.encode())


def _network_ok(request: HttpRequest) -> bool:
    networks = getattr(settings, "METRICS_ALLOWED_NETWORKS", []) or []
    if not networks:
        return False
    try:
        address = ipaddress.ip_address(str(request.META.get("REMOTE_ADDR", "")).split("%")[0])
    except ValueError:
        return False
    return any(
        address.version == net.version and address in net
        for net in (ipaddress.ip_network(str(n), strict=False) for n in networks)
    )


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    if not (_token_ok(request) or _network_ok(request)):
        answer = HttpResponse(
            "metrics: a bearer token (METRICS_TOKEN) or an allowed client address "
            "(METRICS_ALLOWED_NETWORKS) is needed\n",
            status=401 if getattr(settings, "METRICS_TOKEN", "") else 403,
            content_type="text/plain; charset=utf-8",
        )
        if answer.status_code == 401:
            answer["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return answer
    return HttpResponse(generate_latest(registry()), content_type=CONTENT_TYPE_LATEST)
