"""Cluster snapshots: our scenario JSON, YuniKorn REST responses, or the full state dump.

:func:`parse_snapshot` takes a mapping *file name -> bytes* and recognises each
file by its content (not only its name):

- a scenario JSON (scenario-format.md), alone;
- YuniKorn REST responses: ``/partition/{p}/queues`` (one object, required),
  ``/nodes``, ``/applications/{active|completed}``, ``/queue/{q}/applications``,
  ``/partitions``, ``/config`` (JSON), ``/placementrules`` and
  ``/events/batch`` (parsed into :attr:`SnapshotImport.observed`: the scheduler's own
  max changes and preemptions, see :mod:`dashboard.importers.events`);
- the state dump (``/debug/fullstatedump``), which wins over REST files
  given with it.

It returns a scenario-format cluster (without ``request``) that
``python -m engine`` accepts, the pending asks, the applications, the
scheduler's own per-queue figures for cross-checking, and warnings.  The
scenario also holds the scheduler's own facts as extra keys the engine ignores
(:mod:`dashboard.importers.facts`).

The README of the fixtures lists the surprises honoured here: one queue
object, ``partition`` only on root, absent = false/empty, priority as a
string, nanosecond times except the application ``startTime`` (milliseconds,
Go zero time for "never"), preempted allocations still counted in the
scheduler's ``allocatedResource`` (kept with ``preempted: true``; the contract
subtracts them and we cross-check ``preemptingResource``), zero-dropping node
capacity, all-zero max/guaranteed meaning "not set", effective (inherited)
properties with evaluated fields, allow-preemption only in the state dump's
shim cache, required-node from the allocation tag, dynamic queues.
"""

from __future__ import annotations

from dashboard.importers.snapshot.memo import PollMemo
from dashboard.importers.snapshot.reader import file_sizes, parse_polled, parse_snapshot
from dashboard.importers.snapshot.result import MAX_SNAPSHOT_BYTES, SnapshotImport

__all__ = [
    "MAX_SNAPSHOT_BYTES",
    "PollMemo",
    "SnapshotImport",
    "file_sizes",
    "parse_polled",
    "parse_snapshot",
]
