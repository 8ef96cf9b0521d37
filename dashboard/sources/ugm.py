"""Per-user and per-group usage as the scheduler tracks it, read with every HTTP poll.

``GET /ws/v1/partition/<p>/usage/users`` and ``.../usage/groups`` answer lists of
``dao.UserResourceUsageDAOInfo`` / ``dao.GroupResourceUsageDAOInfo``
(``pkg/webservice/dao/ugm_info.go``): a name and a ``queues`` tree of
``ResourceUsageDAOInfo`` (``queuePath``, ``resourceUsage``, ``runningApplications``,
``maxResources``, ``maxApplications``, ``children``).  Only the latest answer is kept,
on the source, with the time it was read: the queue page shows it for the partition's
newest snapshot as "the scheduler's tracking now", not as part of an older snapshot.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any
from urllib.parse import quote

from dashboard import services as platform
from dashboard.importers.errors import ImportFailure
from dashboard.importers.safejson import load_json
from dashboard.sources.client import FetchError
from dashboard.sources.health import PathFetcher
from dashboard.sources.models import ClusterSource

INT64_MAX = 2**63 - 1
#: Most users or groups kept from one answer (the rest are counted, not kept).
KEEP_LIMIT = 2000


def _resource(v: object, where: str) -> dict[str, int]:
    if v is None:
        return {}
    if not isinstance(v, Mapping):
        raise ImportFailure("must be an object of quantities", where)
    out: dict[str, int] = {}
    for t, q in v.items():
        if isinstance(q, bool) or not isinstance(q, int) or not -INT64_MAX - 1 <= q <= INT64_MAX:
            raise ImportFailure("must be an int64 quantity", f"{where}.{t}")
        out[str(t)] = q
    return out


def _walk(node: object, where: str, out: dict[str, dict[str, Any]], depth: int = 0) -> None:
    if depth > 64:
        raise ImportFailure("nested deeper than 64 queues", where)
    if not isinstance(node, Mapping):
        raise ImportFailure("must be an object", where)
    path = node.get("queuePath")
    if not isinstance(path, str) or not path:
        raise ImportFailure("must name its queue", f"{where}.queuePath")
    running = node.get("runningApplications") or []
    if not isinstance(running, list):
        raise ImportFailure("must be a list", f"{where}.runningApplications")
    max_apps = node.get("maxApplications") or 0
    if isinstance(max_apps, bool) or not isinstance(max_apps, int) or max_apps < 0:
        raise ImportFailure("must be a count", f"{where}.maxApplications")
    out[path] = {
        "usage": _resource(node.get("resourceUsage"), f"{where}.resourceUsage"),
        "running": len(running),
        "max": _resource(node.get("maxResources"), f"{where}.maxResources") or None,
        "max_apps": max_apps or None,
    }
    children = node.get("children") or []
    if not isinstance(children, list):
        raise ImportFailure("must be a list", f"{where}.children")
    for i, child in enumerate(children):
        _walk(child, f"{where}.children[{i}]", out, depth + 1)


def parse_usage(data: bytes, kind: str) -> dict[str, dict[str, dict[str, Any]]]:
    """Name -> queue path -> {usage, running, max, max_apps} of a users or groups answer.

    Raises:
        ImportFailure: naming the entry and field of a malformed answer.
    """
    key = "userName" if kind == "users" else "groupName"
    doc = load_json(kind, data)
    if not isinstance(doc, list):
        raise ImportFailure("expected a list", kind)
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for i, entry in enumerate(doc[:KEEP_LIMIT]):
        where = f"{kind}: [{i}]"
        if not isinstance(entry, Mapping):
            raise ImportFailure("must be an object", where)
        name = entry.get(key)
        if not isinstance(name, str) or not name:
            raise ImportFailure("must be a name", f"{where}.{key}")
        queues: dict[str, dict[str, Any]] = {}
        if entry.get("queues") is not None:
            _walk(entry["queues"], f"{where}.queues", queues)
        out[name] = queues
    return out


def check_usage(source_id: int, fetch: PathFetcher, *, now: datetime | None = None) -> None:
    """Read both answers and keep them on the source (an error is kept, never raised)."""
    now = now or platform.utcnow()
    source = ClusterSource.objects.get(pk=source_id)
    stored: dict[str, Any] = {"read_at": now.isoformat(), "error": ""}
    base = f"/ws/v1/partition/{quote(source.partition, safe='')}/usage"
    try:
        for kind in ("users", "groups"):
            stored[kind] = parse_usage(fetch(source, f"{base}/{kind}"), kind)
    except (FetchError, ImportFailure) as exc:
        stored = {"read_at": now.isoformat(), "error": str(exc), "users": {}, "groups": {}}
    source.usage_tracking = stored
    source.save(update_fields=["usage_tracking"])


def queue_usage(source: ClusterSource, path: str) -> dict[str, Any]:
    """What the source's last answers say of queue *path*: rows of users and groups."""
    stored = source.usage_tracking or {}
    rows: dict[str, list[dict[str, Any]]] = {"users": [], "groups": []}
    for kind in rows:
        for name, queues in sorted((stored.get(kind) or {}).items()):
            q = queues.get(path) if isinstance(queues, Mapping) else None
            if isinstance(q, Mapping) and (q.get("usage") or q.get("running") or q.get("max")):
                rows[kind].append({"name": name, **q})
    return {
        "source": source.name,
        "read_at": stored.get("read_at"),
        "error": stored.get("error") or "",
        **rows,
    }
