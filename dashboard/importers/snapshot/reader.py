"""The entry point: files -> a SnapshotImport, from a scenario JSON or YuniKorn's answers."""

from __future__ import annotations

import gc
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from dashboard.importers.errors import ImportFailure
from dashboard.importers.safejson import load_json
from dashboard.importers.snapshot.access import _add_into, _drop_zeros, _loc, _sub
from dashboard.importers.snapshot.applications import _drop_unread
from dashboard.importers.snapshot.assemble import _from_yunikorn
from dashboard.importers.snapshot.bounds import check_names, check_queue_count, check_text
from dashboard.importers.snapshot.completed import read_completed
from dashboard.importers.snapshot.memo import (
    KnownApp,
    PartNode,
    PollMemo,
    StaleMemo,
    split_pieces,
)
from dashboard.importers.snapshot.result import MAX_SNAPSHOT_BYTES, SnapshotImport
from dashboard.importers.snapshot.shapes import _SHAPES, classify
from dashboard.names import name_problem
from engine.errors import ScenarioError
from engine.scenario import parse_scenario


def parse_snapshot(
    files: Mapping[str, bytes],
    *,
    partition: str | None = None,
    max_bytes: int = MAX_SNAPSHOT_BYTES,
    max_queues: int | None = None,
) -> SnapshotImport:
    """Import a cluster snapshot from one or more files.

    Args:
        files: file name -> content.
        partition: which partition to take when a dump holds several
            (default: the only one, else ``default``).
        max_bytes: the largest total accepted (a poller of a big cluster passes its
            own bound; uploads keep the default).
        max_queues: the most queues accepted (uploads: ``DASHBOARD_MAX_SNAPSHOT_QUEUES``),
            counted before any is built; None for no bound.

    Raises:
        ImportFailure: naming the file and the JSON key, for anything that
            cannot become a valid scenario; TooManyQueues above *max_queues*.
    """
    return _parse_without_collector(files, partition, max_bytes, max_queues, None)


def parse_polled(files: Mapping[str, bytes], memo: PollMemo, *, max_bytes: int) -> SnapshotImport:
    """:func:`parse_snapshot` of a poller's answers with *memo*, what the last parse of the
    same source read (:mod:`dashboard.importers.snapshot.memo`): node objects whose bytes
    did not change are not decoded or read again. The memo is updated by the parse."""
    return _parse_without_collector(files, None, max_bytes, None, memo)


def _parse_without_collector(
    files: Mapping[str, bytes],
    partition: str | None,
    max_bytes: int,
    max_queues: int | None,
    memo: PollMemo | None,
) -> SnapshotImport:
    # A large answer becomes millions of new containers, none of them in a reference
    # cycle: the cyclic collector, triggered again and again by that many allocations,
    # would walk them all each time for nothing (it doubled the time of a big import).
    enabled = gc.isenabled()
    gc.disable()
    try:
        if memo is not None:
            try:
                result = _parse(files, partition, max_bytes, max_queues, memo)
            except (ImportFailure, StaleMemo):
                memo.forget()  # read again without it: a refusal is worded as always
            else:
                memo.finish()
                return result
        return _parse(files, partition, max_bytes, max_queues)
    finally:
        if enabled:
            gc.enable()


def file_sizes(files: Mapping[str, bytes]) -> dict[str, int]:
    """Each file's size in bytes: asked of *files* when they can tell without being read
    (a ``sizes()`` method, as the command line's files on disk have), else measured."""
    sizes = getattr(files, "sizes", None)
    if callable(sizes):
        return dict(sizes())
    return {name: len(data) for name, data in files.items()}


def _parse(
    files: Mapping[str, bytes],
    partition: str | None,
    max_bytes: int,
    max_queues: int | None,
    memo: PollMemo | None = None,
) -> SnapshotImport:
    if not files:
        raise ImportFailure("no files given")
    total = sum(file_sizes(files).values())
    if total > max_bytes:
        raise ImportFailure(
            f"the snapshot is {total} bytes, larger than the limit of {max_bytes} bytes "
            f"({max_bytes / 2**20:g} MiB)"
        )
    docs: dict[str, list[tuple[str, Any]]] = {s: [] for s in _SHAPES}
    gangless: set[int] = set()
    node_digests: list[bytes] | None = None
    list_digests: dict[int, bytes] | None = None
    for name in sorted(files):
        data = files[name]  # read once: the command line's files come from disk
        split = _read_split(name, data, memo) if memo is not None else None
        if split is None:
            doc = load_json(name, data)
            check_text(name, data, doc)
        else:
            doc = split[0]
        del data
        check_queue_count(name, doc, max_queues)
        shape = classify(name, doc)
        if split is not None and memo is not None:
            if shape == "nodes":
                node_digests, list_digests = split[1], split[3]
                memo.pending_files.add(name)
                memo.pending_nodes_file = name
            elif shape == "applications":
                _known_applications(doc, split[1], memo, gangless)
                memo.pending_files.add(name)
            elif split[2]:
                raise StaleMemo(name)  # known objects in an answer of another kind
        elif shape == "applications":
            gangless.update(_drop_unread(doc) or ())
        del split
        docs[shape].append((name, doc))
    if docs["scenario"]:
        others = [n for s, items in docs.items() if s != "scenario" for n, _ in items]
        if len(docs["scenario"]) > 1 or others:
            names = [n for n, _ in docs["scenario"]] + others
            raise ImportFailure("a scenario JSON must be imported alone, got " + ", ".join(names))
        result = _from_scenario(*docs["scenario"][0])
    else:
        # read before the assembly, which empties each application it has read
        completed = read_completed(docs["applications"]) if docs["applications"] else None
        result = _from_yunikorn(docs, partition, gangless, memo, node_digests, list_digests)
        if completed is not None and result.kind == "rest":
            result = replace(result, completed=completed.of_partition(result.partition))
    # the allocations taken from the memo passed these checks when they were read
    vouched = memo.checked_allocations() if memo is not None else frozenset()
    check_names(", ".join(result.files) or "snapshot", result, vouched)
    return result


def _read_split(
    name: str, data: bytes, memo: PollMemo
) -> tuple[list[Any], list[bytes], bool, dict[int, bytes]] | None:
    """A JSON array read with *memo*: its objects (those known as :class:`KnownNode`,
    those known but for their figures as :class:`PartNode`), the digest of each, whether
    any was known, and the digests of the new node objects' allocations lists; None for
    a file not to be split (not the last nodes answer's name, or not an array)."""
    if memo.files is not None and name not in memo.files:
        return None
    # the first parse does not know which file is the nodes answer: each one is split finer
    pieces = split_pieces(data, memo, finer=memo.nodes_file in (None, name))
    if pieces is None:
        return None
    doc = pieces.items
    decoded = load_json(name, pieces.joined)  # the new objects only, checked as a file is
    check_text(name, pieces.joined, decoded)
    partial = pieces.partial
    for i, value in zip(pieces.new, decoded, strict=True):
        known = partial.get(i)
        doc[i] = value if known is None else PartNode(known, value)
    return doc, pieces.digests, len(pieces.new) != len(doc) or bool(partial), pieces.list_digests


def _known_applications(
    doc: list[Any], digests: list[bytes], memo: PollMemo, gangless: set[int]
) -> None:
    """An applications answer read with *memo*: the new application objects trimmed as
    without it (and kept for the next parse), the known ones copies of their trimmed
    objects."""
    fresh = [app for app in doc if type(app) is not KnownApp]
    ids = _drop_unread(fresh) or set()
    gangless.update(ids)
    for i, app in enumerate(doc):
        if type(app) is KnownApp:
            known = app
            doc[i] = app = known.copy()
            if known.gangless:
                gangless.add(id(app))
        elif type(app) is dict:
            known = KnownApp(KnownApp(app, False).copy(), id(app) in ids)
        elif type(app) is PartNode:
            raise StaleMemo("applications")  # a nodes answer's piece: read again without
        else:
            continue  # left for the import to name
        memo.next_known[digests[i]] = known


def _from_scenario(name: str, doc: dict[str, Any]) -> SnapshotImport:
    checked = dict(doc)
    if checked.get("request") is None:
        checked["request"] = {"type": "resources", "queue": "root"}
    try:
        parsed = parse_scenario(checked, default_now=0.0)
    except ScenarioError as exc:
        raise ImportFailure(exc.message, _loc(name, exc.field)) from None
    _check_type_names(name, parsed)
    scenario = {k: v for k, v in doc.items() if k != "request"}
    request = doc.get("request") or {}
    asks: list[dict[str, Any]] = []
    if request.get("type") == "preempt" and isinstance(request.get("ask"), dict):
        asks.append(dict(request["ask"]))
    elif request.get("type") == "round" and isinstance(request.get("asks"), list):
        asks.extend(dict(a) for a in request["asks"])
    usage: dict[str, dict[str, Any]] = {}
    apps: dict[str, dict[str, Any]] = {}
    paths = _paths(parsed.cluster.root)
    for path in paths:
        usage[path] = {"allocated": {}, "preempting": {}, "usage": {}}
    for a in parsed.cluster.allocations:
        parts = a.queue.split(".")
        for i in range(1, len(parts) + 1):
            u = usage[".".join(parts[:i])]
            _add_into(u["allocated"], a.resources)
            if a.preempted:
                _add_into(u["preempting"], a.resources)
        if a.app:
            app = apps.setdefault(a.app, {"id": a.app, "queue": a.queue, "allocations": 0})
            app["allocations"] += 1
    for u in usage.values():
        u["allocated"] = _drop_zeros(u["allocated"])
        u["preempting"] = _drop_zeros(u["preempting"])
        u["usage"] = _sub(u["allocated"], u["preempting"])
    now = doc.get("now")
    partition_name = (
        scenario.get("partition", {}).get("name", "default")
        if isinstance(scenario.get("partition"), dict)
        else "default"
    )
    problem = name_problem("partition", partition_name)
    if problem is not None:  # an object given as the name is refused, not stored as its repr
        raise ImportFailure(f"partition name {problem}", _loc(name, "partition.name"))
    return SnapshotImport(
        kind="scenario",
        partition=partition_name,
        captured_at=float(now)
        if isinstance(now, int | float) and not isinstance(now, bool)
        else None,
        scenario=scenario,
        asks=tuple(asks),
        applications=tuple(apps[k] for k in sorted(apps)),
        queue_usage=usage,
        warnings=(),
        files=(name,),
        cluster=parsed.cluster,
    )


def _check_type_names(name: str, parsed: Any) -> None:
    """Refuse an empty resource type name anywhere in a scenario (the config side refuses it
    too; the engine contract takes any *name*, and an empty string is none)."""

    def check(resource: Any, field: str) -> None:
        if resource is not None and "" in resource:
            raise ImportFailure("empty resource type name", _loc(name, field))

    stack: list[tuple[Any, str]] = [(parsed.cluster.root, parsed.cluster.root.name)]
    while stack:
        q, path = stack.pop()
        check(q.guaranteed, f"queue {path} guaranteed")
        check(q.max, f"queue {path} max")
        stack.extend((c, f"{path}.{c.name}") for c in q.children)
    for i, n in enumerate(parsed.cluster.nodes):
        check(n.capacity, f"nodes[{i}].capacity")
    for i, a in enumerate(parsed.cluster.allocations):
        check(a.resources, f"allocations[{i}].resources")
    for i, a in enumerate(getattr(parsed.request, "asks", ()) or ()):
        check(a.resources, f"request.asks[{i}].resources")
    ask = getattr(parsed.request, "ask", None)
    if ask is not None:
        check(ask.resources, "request.ask.resources")


def _paths(root: Any) -> list[str]:
    out: list[str] = []
    stack: list[tuple[Any, str]] = [(root, root.name)]
    while stack:
        q, path = stack.pop()
        out.append(path)
        stack.extend((c, f"{path}.{c.name}") for c in q.children)
    return sorted(out)
