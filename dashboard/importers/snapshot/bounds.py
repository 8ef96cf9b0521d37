"""What a snapshot may hold before anything is stored: text a database can keep, names
by the one rule (:mod:`dashboard.names`), times within the calendar, and at most a
bounded number of queues.

The queue count is checked on the decoded JSON, before any queue is built: a few
megabytes of JSON can describe hundreds of thousands of queues, and building,
storing and evaluating those outlives a web worker's timeout.
"""

from __future__ import annotations

import re
from collections.abc import Container, Iterable, Mapping, Sequence
from typing import Any

from dashboard.importers.errors import ImportFailure
from dashboard.importers.quantities import QuantityError, check_resource_type
from dashboard.importers.snapshot.result import SnapshotImport
from dashboard.names import find_unstorable, name_problem, names_are_plain, path_problem

#: ``\u0000`` or a UTF-16 surrogate escape: only a text holding one can decode to a NUL
#: byte or a lone surrogate (raw control bytes and invalid UTF-8 are refused by JSON).
_SUSPECT_ESCAPE = re.compile(rb"\\u(?:0000|[dD][89a-fA-F])")

#: Seconds since the epoch a snapshot's times may take: years 1 to 9999, as Python's
#: and the database's date-times hold them.
MIN_EPOCH_SECONDS = -62135596800.0
MAX_EPOCH_SECONDS = 253402300799.0


class TooManyQueues(ImportFailure):
    """A snapshot with more queues than the limit (the API answers 413)."""

    def __init__(self, count: int, limit: int, name: str) -> None:
        super().__init__(
            f"the snapshot holds {count} queues, more than the limit of {limit} "
            "(DASHBOARD_MAX_SNAPSHOT_QUEUES)",
            name,
        )
        self.count = count
        self.limit = limit


def check_text(name: str, data: bytes, doc: Any) -> None:
    """Refuse a decoded JSON file holding a NUL byte or a lone surrogate in a string or key."""
    if _SUSPECT_ESCAPE.search(data) is None:
        return
    found = find_unstorable(doc)
    if found is not None:
        raise ImportFailure(found[1], f"{name}: {found[0]}")


def check_queue_count(name: str, doc: Any, limit: int | None) -> None:
    """Refuse a document with more than *limit* queue objects (the root of each queue
    tree and every object in a ``children`` list), counted before any queue is built."""
    if limit is None:
        return
    count = 0
    stack: list[tuple[Any, bool]] = [(doc, False)]
    while stack:
        value, is_child = stack.pop()
        if isinstance(value, dict):
            children = value.get("children")
            if isinstance(children, list):
                count += sum(1 for c in children if isinstance(c, dict)) + (not is_child)
                if count > limit:
                    raise TooManyQueues(count, limit, name)
                stack.extend((c, True) for c in children if isinstance(c, dict))
            stack.extend(
                (v, False)
                for k, v in value.items()
                if k != "children" and isinstance(v, dict | list)
            )
        elif isinstance(value, list):
            stack.extend((v, False) for v in value if isinstance(v, dict | list))


def _refuse_name(kind: str, value: object, where: str) -> None:
    problem = name_problem(kind, value)
    if problem is not None:
        raise ImportFailure(f"{kind} name {problem}", where)


def _resource_types(resource: Mapping[str, Any] | None, where: str) -> None:
    """The one rule for resource type names (``quantities.check_resource_type``), which
    configs, REST files and the what-if's resources are held to as well."""
    for key in resource or ():
        try:
            check_resource_type(key)
        except QuantityError as exc:
            raise ImportFailure(str(exc), where) from None


def _time(value: object, where: str) -> None:
    is_number = isinstance(value, int | float) and not isinstance(value, bool)
    if is_number and not MIN_EPOCH_SECONDS <= value <= MAX_EPOCH_SECONDS:  # type: ignore[operator]
        raise ImportFailure(
            f"{value!r} is out of range: a time in seconds since 1970 between "
            f"{MIN_EPOCH_SECONDS:.0f} (year 1) and {MAX_EPOCH_SECONDS:.0f} (year 9999)",
            where,
        )


def check_names(name: str, result: SnapshotImport, vouched: Container[int] = ()) -> None:
    """Refuse a parsed snapshot with a name the database cannot hold or a time out of
    range (the file *name* and the scenario key are named).

    *vouched*: the ids of allocation objects a poller's earlier parse checked already
    (taken from its memo, alive and unchanged: an allocation is immutable); their names
    are not checked together again (one by one, as ever, when the others hold one refused).
    """
    _refuse_name("partition", result.partition, f"{name}: partition.name")
    if result.captured_at is not None:
        _time(result.captured_at, f"{name}: now")
    cluster = result.cluster
    if cluster is not None:
        stack: list[tuple[Any, str]] = [(cluster.root, cluster.root.name)]
        while stack:
            queue, path = stack.pop()
            where = f"{name}: queue {path[:200]}"
            _refuse_name("queue", queue.name, where)
            problem = path_problem(path)
            if problem is not None:
                raise ImportFailure(problem, where)
            _resource_types(queue.guaranteed, f"{where} guaranteed")
            _resource_types(queue.max, f"{where} max")
            stack.extend((c, f"{path}.{c.name}") for c in queue.children)
        # the names of a big cluster are checked together first; only when that finds
        # something are they checked one by one, which names the first one refused
        nodes = cluster.nodes
        if not (
            names_are_plain("node", (n.id for n in nodes))
            and names_are_plain("resource type", _types_of(n.capacity for n in nodes))
        ):
            for i, node in enumerate(nodes):
                _refuse_name("node", node.id, f"{name}: nodes[{i}].id")
                _resource_types(node.capacity, f"{name}: nodes[{i}].capacity")
        allocations: Sequence[Any] = cluster.allocations
        if vouched:
            allocations = [a for a in allocations if id(a) not in vouched]
        if not _allocations_plain(allocations):
            for i, a in enumerate(cluster.allocations):
                where = f"{name}: allocations[{i}]"
                _refuse_name("allocation key", a.key, f"{where}.key")
                if a.app:
                    _refuse_name("application", a.app, f"{where}.app")
                _resource_types(a.resources, f"{where}.resources")
                _time(a.created, f"{where}.created")
    _check_asks(name, result.asks)
    apps = result.applications
    if not names_are_plain("application", (app["id"] for app in apps if app.get("id"))):
        for i, app in enumerate(apps):
            if app.get("id"):
                _refuse_name("application", app["id"], f"{name}: applications[{i}].id")


def _types_of(resources: Iterable[Mapping[str, Any] | None]) -> set[object]:
    """The resource type names of *resources*, each distinct map read once (an import's
    allocations share equal maps)."""
    maps = {id(r): r for r in resources if r}
    types: set[object] = set()
    for r in maps.values():
        types.update(r)
    return types


def _allocations_plain(allocations: Sequence[Any]) -> bool:
    """Whether :func:`check_names` would refuse nothing in *allocations*: their keys,
    applications, resource types and times checked together."""
    created = [a.created for a in allocations]
    if created and not (
        all(type(c) is float and c == c for c in created)  # NaN is no time
        and min(created) >= MIN_EPOCH_SECONDS
        and max(created) <= MAX_EPOCH_SECONDS
    ):
        return False
    return (
        names_are_plain("allocation key", (a.key for a in allocations))
        and names_are_plain("application", (a.app for a in allocations if a.app))
        and names_are_plain("resource type", _types_of(a.resources for a in allocations))
    )


def _check_asks(name: str, asks: Iterable[Mapping[str, Any]]) -> None:
    for i, ask in enumerate(asks):
        where = f"{name}: asks[{i}]"
        _refuse_name("ask key", ask.get("key"), f"{where}.key")
        if ask.get("app"):
            _refuse_name("application", ask["app"], f"{where}.app")
        resources = ask.get("resources")
        if isinstance(resources, Mapping):
            _resource_types(resources, f"{where}.resources")
        _time(ask.get("created"), f"{where}.created")
