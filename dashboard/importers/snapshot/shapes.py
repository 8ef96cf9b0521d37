"""Which YuniKorn answer (or scenario, or state dump) a file is, by its content."""

from __future__ import annotations

from typing import Any

from dashboard.importers.errors import ImportFailure
from dashboard.importers.snapshot.access import _tname

_SHAPES = (
    "scenario",
    "statedump",
    "queues",
    "queue",
    "nodes",
    "applications",
    "partitions",
    "config",
    "events",
    "placementrules",
    "empty",
)


def classify(name: str, doc: Any) -> str:
    """Which kind of document *doc* is, by content (the file name only breaks ties)."""
    if isinstance(doc, dict):
        if isinstance(doc.get("queues"), list) and (
            "rmDiagnostics" in doc or "clusterInfo" in doc or "partitions" in doc
        ):
            return "statedump"
        if isinstance(doc.get("queues"), dict) and "queuename" not in doc:
            return "scenario"
        if "queuename" in doc:
            return "queues" if not doc.get("parent") and doc.get("queuename") == "root" else "queue"
        if "Partitions" in doc:
            return "config"
        if "EventRecords" in doc:
            return "events"
    if isinstance(doc, list):
        if not doc:
            return "empty"
        first = doc[0]
        if isinstance(first, dict):
            if "nodeID" in first:
                return "nodes"
            if "applicationID" in first:
                return "applications"
            if "clusterId" in first and ("capacity" in first or "totalNodes" in first):
                return "partitions"
            if "name" in first and ("parameters" in first or "parentRule" in first):
                return "placementrules"
            if "queuename" in first:
                raise ImportFailure(
                    "a list of queues: GET /ws/v1/partition/{p}/queues returns ONE object (the "
                    "root with nested children), not a list as the YuniKorn site example shows",
                    name,
                )
    raise ImportFailure(
        "not a scenario JSON, a YuniKorn REST response or a state dump (unrecognised shape: "
        f"{_tname(doc)}"
        + (f" with keys {', '.join(sorted(doc)[:6])}" if isinstance(doc, dict) else "")
        + ")",
        name,
    )
