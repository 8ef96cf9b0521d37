"""A poll's limits from the ``SOURCES_*`` settings: HTTP policy, answer size, lease.

Read at each call, so a changed setting applies to the next poll.  Every reader of
a scheduler (the poll, the events, the config in force, the stream, the verdict)
takes its HTTP policy from here.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

from dashboard.sources.client import FetchPolicy


def _setting(name: str, default: Any) -> Any:
    return getattr(settings, name, default)


def fetch_policy() -> FetchPolicy:
    """Timeout, retries and backoff from the ``SOURCES_HTTP_*`` settings."""
    return FetchPolicy(
        timeout=float(_setting("SOURCES_HTTP_TIMEOUT", 10.0)),
        retries=int(_setting("SOURCES_HTTP_RETRIES", 2)),
        backoff=float(_setting("SOURCES_HTTP_BACKOFF", 0.5)),
        backoff_max=float(_setting("SOURCES_HTTP_BACKOFF_MAX", 8.0)),
        max_bytes=answer_limit(),
    )


def answer_limit() -> int:
    """The largest answer read from a scheduler, per endpoint (``SOURCES_MAX_ANSWER_BYTES``)."""
    return int(_setting("SOURCES_MAX_ANSWER_BYTES", 64 * 1024 * 1024))


def lease_seconds() -> float:
    """How long a claimed poll may take before another worker may take the source over."""
    policy = fetch_policy()
    per_endpoint = policy.timeout * (policy.retries + 1) + sum(
        policy.delay(i) for i in range(policy.retries)
    )
    floor = float(_setting("SOURCES_POLL_LEASE_SECONDS", 120.0))
    return max(floor, 4 * per_endpoint + 60.0)
