"""``GET /metrics``: the Prometheus text exposition of :class:`DashboardCollector`.

A scrape is let in by a bearer token (``Authorization: Bearer <METRICS_TOKEN>``,
compared in constant time) or by its client address being in
``METRICS_ALLOWED_NETWORKS`` (``REMOTE_ADDR``: the peer, or behind a proxy named in
``TRUSTED_PROXIES`` the client it forwarded for, :mod:`dashboard.clientaddr`; a
forwarded-for header from any other peer is never read).  With neither set every scrape
is refused, so the figures (cluster, queue and source names) are never public by default.

A scrape has a deadline, ``METRICS_DEADLINE_SECONDS``: on PostgreSQL its statements run
in one read-only transaction whose ``statement_timeout`` is what is left of it, and the
collector stops between families once past it.  Past the deadline the scrape answers
503 naming the setting (Prometheus records a failed scrape) instead of a late answer
that keeps a web thread and a database connection busy.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import time

from django.conf import settings
from django.db import OperationalError, connection, transaction
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from dashboard.metrics.collector import DashboardCollector, ScrapeDeadline
from dashboard.metrics.text import render

logger = logging.getLogger(__name__)


def _figures(deadline: float) -> bytes:
    """This collector's figures only: process metrics of one web process would not
    describe the dashboard, and no state is shared across processes."""
    return render(DashboardCollector(deadline).collect())


def _statement_timed_out(exc: OperationalError) -> bool:
    cause = exc.__cause__
    return type(cause).__name__ == "QueryCanceled" or "statement timeout" in str(exc)


def exposition(seconds: float) -> bytes:
    """The whole text exposition, within *seconds* (:class:`ScrapeDeadline` past them)."""
    deadline = time.monotonic() + seconds
    if connection.vendor != "postgresql":
        return _figures(deadline)
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET TRANSACTION READ ONLY")
            # a whole millisecond at least: 0 would mean no timeout
            cursor.execute(f"SET LOCAL statement_timeout = {max(1, int(seconds * 1000))}")
            # the grouped counts over the run history sort and hash in memory, and a
            # query this short gains nothing from compiling it (JIT took 130 ms)
            cursor.execute("SET LOCAL work_mem = '64MB'")
            cursor.execute("SET LOCAL jit = off")
        try:
            return _figures(deadline)
        except OperationalError as exc:
            if _statement_timed_out(exc):
                raise ScrapeDeadline("a statement") from exc
            raise


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
    seconds = float(settings.METRICS_DEADLINE_SECONDS)
    started = time.monotonic()
    try:
        body = exposition(seconds)
    except ScrapeDeadline as exc:
        logger.warning(
            "metrics: scrape stopped after %.1f s at %s", time.monotonic() - started, exc
        )
        return HttpResponse(
            f"metrics: the scrape did not finish within {seconds:g} s "
            f"(METRICS_DEADLINE_SECONDS); it stopped at {exc}\n",
            status=503,
            content_type="text/plain; charset=utf-8",
        )
    return HttpResponse(body, content_type=CONTENT_TYPE_LATEST)
