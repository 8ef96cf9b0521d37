"""Where each part comes from: REST files or the full state dump, and which partition."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dashboard.importers.errors import ImportFailure
from dashboard.importers.snapshot.access import Reader
from dashboard.importers.snapshot.memo import PollMemo
from dashboard.importers.snapshot.result import Kind


@dataclass
class _Sources:
    """The pieces of a YuniKorn import, wherever they came from."""

    kind: Kind
    tree: tuple[str, str, dict[str, Any]] | None = None  # file, json path, root object
    nodes: tuple[str, str, list[Any]] | None = None
    apps: list[tuple[str, str, list[Any]]] = field(default_factory=list)
    partitions: tuple[str, str, list[Any]] | None = None
    config: tuple[str, str, dict[str, Any]] | None = None
    diagnostics: tuple[str, dict[str, Any]] | None = None
    captured_at: float | None = None
    cluster_id: str | None = None
    files: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    events: dict[str, Any] | None = None
    events_file: str = ""
    #: The applications (by identity: each answer is held until the import ends) whose
    #: allocations are all objects without a gang fact (see ``applications._drop_unread``).
    gangless: set[int] = field(default_factory=set)
    #: a poller's memo and the digest of each object of the nodes answer (REST answers)
    memo: PollMemo | None = None
    node_digests: list[bytes] | None = None
    #: position -> the digest of a new node object's allocations list
    list_digests: dict[int, bytes] | None = None


def _pick_partition(candidates: list[tuple[str, int]], wanted: str | None, file: str) -> int:
    names = [n for n, _ in candidates]
    if wanted is not None:
        for n, i in candidates:
            if n == wanted:
                return i
        raise ImportFailure(f"no partition {wanted!r} (found: {', '.join(names) or 'none'})", file)
    if len(candidates) == 1:
        return candidates[0][1]
    for n, i in candidates:
        if n == "default":
            return i
    raise ImportFailure(
        f"several partitions ({', '.join(names)}) and none called default; choose one", file
    )


def _statedump_sources(name: str, doc: dict[str, Any], wanted: str | None) -> tuple[_Sources, str]:
    r = Reader(name)
    src = _Sources(kind="statedump", files=[name])
    trees = r.arr(doc.get("queues"), "queues")
    candidates = []
    for i, t in enumerate(trees):
        t = r.obj(t, f"queues[{i}]")
        candidates.append(
            (r.string(t.get("partition"), f"queues[{i}].partition", required=False) or "default", i)
        )
    if not candidates:
        raise r.fail("queues", "the state dump holds no queue tree")
    idx = _pick_partition(candidates, wanted, name)
    part = candidates[idx][0]
    src.tree = (name, f"queues[{idx}]", trees[idx])
    if doc.get("nodes") is not None:
        for i, entry in enumerate(r.arr(doc["nodes"], "nodes")):
            entry = r.obj(entry, f"nodes[{i}]")
            if (entry.get("partitionName") or "default") == part:
                src.nodes = (
                    name,
                    f"nodes[{i}].nodesInfo",
                    r.arr(entry.get("nodesInfo") or [], f"nodes[{i}].nodesInfo"),
                )
    if doc.get("applications") is not None:
        src.apps.append((name, "applications", r.arr(doc["applications"], "applications")))
    if doc.get("partitions") is not None:
        src.partitions = (name, "partitions", r.arr(doc["partitions"], "partitions"))
    if isinstance(doc.get("config"), dict):
        src.config = (name, "config", doc["config"])
    if isinstance(doc.get("rmDiagnostics"), dict):
        src.diagnostics = (name, doc["rmDiagnostics"])
    else:
        src.warnings.append(
            f"{name}: no rmDiagnostics (shim cache): allow-preemption opt-outs are unknown and "
            "assumed true"
        )
    if doc.get("timestamp") is not None:
        src.captured_at = r.time_ns(doc["timestamp"], "timestamp")
    infos = doc.get("clusterInfo")
    if isinstance(infos, list) and infos and isinstance(infos[0], dict):
        builds = infos[0].get("rmBuildInformation")
        if isinstance(builds, list) and builds and isinstance(builds[0], dict):
            rm = builds[0].get("rmId")
            src.cluster_id = rm if isinstance(rm, str) else None
    return src, part
