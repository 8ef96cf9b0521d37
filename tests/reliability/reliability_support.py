"""Shared pieces of the reliability suites: inputs, row counts and resource figures.

Nothing here asserts; the tests do.  Figures (peak Python memory, elapsed time)
are measured and printed, never compared with a wall-clock limit.
"""

from __future__ import annotations

import re
import resource
import time
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import scenarios
from django.apps import apps
from django.db import connection
from django.urls import resolve
from rest_framework.permissions import IsAdminUser
from support import plugin

from dashboard.access.api import OWN_ROWS

T0 = scenarios.T0.timestamp()

MiB = 1024 * 1024
PASSWORD = plugin.PASSWORD  # of the suites' users (fast test hasher)


def scenario(**overrides: Any) -> dict[str, Any]:
    """The shared small scenario (``tests/scenarios.py``) with a round request, plus
    *overrides* (top-level keys)."""
    doc = scenarios.small_scenario(round_request=True)
    doc.update(overrides)
    return doc


QUEUES_YAML = """\
partitions:
  - name: default
    preemption:
      quotapreemptionenabled: true
    queues:
      - name: root
        queues:
          - name: a
            resources:
              guaranteed: {vcore: 2}
              max: {vcore: 8}
            properties:
              quota.preemption.delay: 1m
            queues:
              - name: x
              - name: y
          - name: b
            resources:
              guaranteed: {vcore: 5}
"""


def db_counts() -> dict[str, int]:
    """Rows of every installed model, by ``app_label.Model``.

    One statement counts every table (``SELECT count(*)`` of each, joined by ``UNION
    ALL``): a count per model through the ORM was 43 queries, each built and sent
    apart, and the tests take the counts before and after every request they check.
    """
    tables = {
        f"{m._meta.app_label}.{m.__name__}": m._meta.db_table
        for m in apps.get_models(include_auto_created=True)
        if m._meta.managed and not m._meta.proxy
    }
    quote = connection.ops.quote_name
    sql = " UNION ALL ".join(
        f"SELECT %s, (SELECT count(*) FROM {quote(table)})" for table in tables.values()
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, list(tables))
        counts = {str(label): int(count) for label, count in cursor.fetchall()}
    assert counts.keys() == tables.keys(), "a count per model"
    return counts


def count_changes(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """Models whose row count differs, with the difference."""
    return {k: after.get(k, 0) - v for k, v in before.items() if after.get(k, 0) != v}


@dataclass
class Figures:
    """What one request cost: peak traced Python memory, process max RSS, elapsed time."""

    label: str
    peak_bytes: int = 0
    rss_growth_bytes: int = 0
    elapsed_s: float = 0.0

    def line(self) -> str:
        return (
            f"[figures] {self.label}: peak traced memory {self.peak_bytes / MiB:.1f} MiB, "
            f"max RSS growth {self.rss_growth_bytes / MiB:.1f} MiB, {self.elapsed_s * 1000:.0f} ms"
        )


def _max_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB


@contextmanager
def measured(label: str) -> Iterator[Figures]:
    """Trace Python allocations inside the block and print the figures afterwards."""
    figures = Figures(label)
    rss_before = _max_rss_bytes()
    tracemalloc.start()
    tracemalloc.reset_peak()
    started = time.perf_counter()
    try:
        yield figures
    finally:
        figures.elapsed_s = time.perf_counter() - started
        figures.peak_bytes = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        figures.rss_growth_bytes = max(0, _max_rss_bytes() - rss_before)
        print(figures.line())


def reads_open_to_viewers(path: str) -> bool:
    """Whether the view at *path* (``{id}`` placeholders allowed) lets every signed-in user
    read: none of its permissions is DRF's staff-only ``IsAdminUser``, and it is not one of
    the views of a user's own rows (the alert routes and deliveries: staff's, and a
    tenant's own; the API's default is ``QueueAclPermission``, under which the viewer, a
    reader of every queue, reads what staff read)."""
    match = resolve(re.sub(r"\{[^}]+\}", "1", path))
    view = getattr(match.func, "cls", None) or getattr(match.func, "view_class", None)
    if view is not None and f"{view.__module__}.{view.__qualname__}" in OWN_ROWS:
        return False  # a user's own rows (alert routes): staff's, or a tenant's own
    return not any(issubclass(p, IsAdminUser) for p in getattr(view, "permission_classes", []))
