"""Importers and exporters of YuniKorn queue configs and cluster snapshots.

Framework-free: nothing here imports Django; the platform stores what these
functions return.  Every function raises :class:`ImportFailure` (location +
message) for bad input and returns frozen, JSON-friendly dataclasses.

- :func:`parse_config` - queues.yaml or its ConfigMap -> :class:`ConfigImport`
- :func:`parse_snapshot` - scenario JSON, REST responses or state dump -> :class:`SnapshotImport`
  (with YuniKorn's own figures kept as extra scenario keys, see :mod:`~dashboard.importers.facts`)
- :func:`parse_events` - ``/ws/v1/events/batch`` -> :class:`EventsImport` (the scheduler's own
  quota changes and preemptions)
- :func:`export_config`, :func:`export_configmap`, :func:`scenario_json` - back out again
- :func:`to_queue_config` - a partition's queue tree for the engine
"""

from __future__ import annotations

from dashboard.importers.config import (
    MAX_CONFIG_BYTES,
    ConfigChange,
    ConfigImport,
    PartitionSpec,
    QueueSpec,
    parse_config,
    to_queue_config,
)
from dashboard.importers.errors import ImportFailure
from dashboard.importers.events import EventsImport, parse_events
from dashboard.importers.export import export_config, export_configmap, scenario_json
from dashboard.importers.snapshot import MAX_SNAPSHOT_BYTES, SnapshotImport, parse_snapshot

__all__ = [
    "MAX_CONFIG_BYTES",
    "MAX_SNAPSHOT_BYTES",
    "ConfigChange",
    "ConfigImport",
    "EventsImport",
    "ImportFailure",
    "PartitionSpec",
    "QueueSpec",
    "SnapshotImport",
    "export_config",
    "export_configmap",
    "parse_config",
    "parse_events",
    "parse_snapshot",
    "scenario_json",
    "to_queue_config",
]
