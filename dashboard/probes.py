"""Kubernetes probes and the Prometheus scrape, answered before every other middleware:
``/livez``, ``/readyz`` and ``/metrics``.

``/livez`` says the process answers (nothing else is touched, so a slow database never
gets a healthy web process restarted).  ``/readyz`` says whether this process can serve:
the database answers ``SELECT 1`` and the Celery broker accepts a connection; otherwise
503 with JSON naming what failed.  Both are answered before the host check
(``ALLOWED_HOSTS``: the kubelet asks by pod IP), the HTTPS redirect and sign-in, and
say nothing about the data.

``/metrics`` is answered here too, for the same reason: Prometheus scrapes a pod IP over
plain HTTP inside the cluster, so neither its Host header nor its scheme is the public
one.  It still needs its bearer token or an allowed address
(:mod:`dashboard.metrics.views`); only the host check and the HTTPS redirect are skipped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import DatabaseError, connections
from django.http import HttpRequest, HttpResponse, JsonResponse

logger = logging.getLogger(__name__)

LIVEZ = "/livez"
READYZ = "/readyz"
METRICS = "/metrics"
# seconds a readiness check waits for the broker (the kubelet's probe timeout is longer)
BROKER_TIMEOUT = 2


def check_database() -> None:
    """Raise if the default database does not answer ``SELECT 1``."""
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()


def check_broker() -> None:
    """Raise if the Celery broker refuses a connection."""
    from dashboard.celery import app  # the broker transport aliases are set up there

    with app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=1, interval_start=0, timeout=BROKER_TIMEOUT)


CHECKS: dict[str, Callable[[], None]] = {"database": check_database, "broker": check_broker}


def readiness() -> tuple[bool, dict[str, str]]:
    """Run every check: (all passed, check name -> "ok" or the failure's exception type)."""
    results: dict[str, str] = {}
    for name, check in CHECKS.items():
        try:
            check()
        except Exception as exc:  # any failure of a dependency means "not ready"
            logger.warning("readiness: %s failed: %s", name, exc)
            results[name] = f"failed ({type(exc).__name__})"
            if isinstance(exc, DatabaseError):
                # a broken connection is not reused by the next probe
                connections["default"].close_if_unusable_or_obsolete()
        else:
            results[name] = "ok"
    return all(v == "ok" for v in results.values()), results


class ProbeMiddleware:
    """Answers ``/livez``, ``/readyz`` and ``/metrics``; first in ``MIDDLEWARE``."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path_info == LIVEZ:
            return JsonResponse({"status": "alive"})
        if request.path_info == READYZ:
            ready, checks = readiness()
            failed = [name for name, result in checks.items() if result != "ok"]
            body: dict[str, object] = {
                "status": "ready" if ready else "not ready",
                "checks": checks,
            }
            if failed:
                body["failed"] = failed
            return JsonResponse(body, status=200 if ready else 503)
        if request.path_info == METRICS and request.method == "GET":
            # (only the scrape: any other method takes the usual path, CSRF check and all)
            from dashboard.metrics.views import metrics  # the collector reads the models

            return metrics(request)
        return self.get_response(request)
