"""Read side of the pages: stored rows -> the plain values dashboard.charts draws.

Queries only (no writes); the engine is reached through :mod:`dashboard.services`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar, cast

from django.db.models import Q, QuerySet

from dashboard import models, services
from dashboard.charts.values import (
    NodeRow,
    QueueRow,
    RunRow,
    UsagePoint,
    resource_types,
    type_order,
)
from dashboard.pages.memo import Memo

Resource = Mapping[str, int]


def _resource(value: object) -> dict[str, int] | None:
    if value is None or not isinstance(value, Mapping):
        return None
    return {str(k): int(v) for k, v in value.items()}


def _lower_than(new: Resource | None, old: Resource | None) -> bool:
    """Whether *new* tightens *old* in some type (a lowered max)."""
    if new is None:
        return False
    if old is None:
        return True
    return any(t not in old or q < old[t] for t, q in new.items())


@dataclass(frozen=True, slots=True)
class WaitingChange:
    """What the pages show of a waiting change: its id, queue, new max, deadline, and
    whether it is only planned here (the dashboard's prediction, not yet in the cluster)."""

    pk: int
    queue_path: str
    new_max: Any
    deadline: datetime | None
    planned: bool = False


def waiting_changes(
    partition: models.Partition, paths: Collection[str] | None = None
) -> dict[str, WaitingChange]:
    """The waiting (timer running) change per queue path of *partition* (of *paths* only
    when given).

    Plain values, not model instances: a partition can have hundreds waiting, read on
    every tree page, and building model instances for them costs time on each read.
    """
    rows = (
        models.QuotaChange.objects.filter(
            partition=partition, state__in=models.QuotaChange.ACTIVE_STATES
        )
        .order_by("queue_path", "-changed_at", "-id")
        .values_list("pk", "queue_path", "new_max", "deadline", "applied_at")
    )
    if paths is not None:
        rows = rows.filter(queue_path__in=list(paths))
    out: dict[str, WaitingChange] = {}
    for pk, path, new_max, deadline, applied_at in rows:
        if path not in out:
            out[path] = WaitingChange(pk, path, new_max, deadline, planned=applied_at is None)
    return out


def preemptable_by_path(snapshot: models.ClusterSnapshot) -> dict[str, dict[str, int] | None]:
    """Engine ``preemptable`` for every queue of *snapshot*, through the services.

    A stored snapshot never changes, and ``services.queue_preemptable`` reads
    only its rows (the values stored at import), so the answer is kept per
    snapshot and process.
    """
    return _per_snapshot(snapshot, "preemptable", lambda: services.queue_preemptable(snapshot))


_T = TypeVar("_T")


#: Per-snapshot values kept per process: a handful per snapshot, a few snapshots read at once.
_SNAPSHOT_MEMO: Memo[Any] = Memo(48)


def _per_snapshot(snapshot: models.ClusterSnapshot, what: str, build: Callable[[], _T]) -> _T:
    """*build()* once per stored snapshot and process: a stored snapshot never changes.

    Kept as objects (unpickling a big answer from a shared cache costs time on every
    read); the key holds the snapshot's id, checksum and import time, so a
    database rebuilt with the same ids never reads another's values.
    """
    return cast(_T, _SNAPSHOT_MEMO.get((what, snapshot_key(snapshot)), build))


#: Counts of a snapshot's rows under a queue (and a filter), many per snapshot.
_COUNT_MEMO: Memo[int] = Memo(4096)


def snapshot_count(
    snapshot: models.ClusterSnapshot, what: tuple[str, ...], count: Callable[[], int]
) -> int:
    """*count()* of a query over *snapshot*'s rows named by *what*, once per process.

    *what* must name everything the query depends on besides the snapshot (the
    queue, the filter's words): a stored snapshot's rows never change.
    """
    return _COUNT_MEMO.get((what, snapshot_key(snapshot)), count)


def snapshot_key(snapshot: models.ClusterSnapshot) -> str:
    """What names one stored snapshot in a cache: its id, checksum and import time."""
    return f"{snapshot.pk}:{snapshot.checksum}:{snapshot.imported_at.timestamp()}"


#: The stored figures of one queue, as read by :func:`queue_rows`.
QueueValues = tuple[str, Any, Any, Any, Any, Any, str, bool, Any, Any]


def _queue_values(snapshot: models.ClusterSnapshot) -> tuple[QueueValues, ...]:
    """Every queue's stored figures, in path order (plain tuples: 1,000+ queues per read)."""

    def build() -> tuple[QueueValues, ...]:
        return tuple(
            models.SnapshotQueue.objects.filter(snapshot=snapshot)
            .order_by("path")
            .values_list(
                "path",
                "guaranteed",
                "max",
                "usage",
                "preempting",
                "allocated",
                "status",
                "dynamic",
                "max_applications",
                "running_apps",
            )
        )

    return _per_snapshot(snapshot, "queues", build)


def queue_rows(
    snapshot: models.ClusterSnapshot,
    *,
    with_preemptable: bool = True,
    changes: Mapping[str, WaitingChange] | None = None,
    paths: Collection[str] | None = None,
) -> list[QueueRow]:
    """Every queue of *snapshot* (or those of *paths*) as chart rows, in path order.

    ``allocated`` is as YuniKorn reports it, ``used`` allocated minus
    preempting (the engine's usage), with the queue's status, dynamic flag and
    application figures; a waiting
    change that lowers a queue's max shows as ``lowered_max``. *changes* is
    :func:`waiting_changes` of the snapshot's partition when the caller has it.
    The stored figures are read once per snapshot and cached.
    """
    if changes is None:
        changes = waiting_changes(snapshot.partition, paths)
    preemptable = preemptable_by_path(snapshot) if with_preemptable else {}
    rows: list[QueueRow] = []
    for (
        path,
        guaranteed,
        maximum,
        usage,
        preempting,
        allocated,
        status,
        dynamic,
        max_applications,
        running_apps,
    ) in _queue_values(snapshot):
        if paths is not None and path not in paths:
            continue
        current_max = _resource(maximum)
        change = changes.get(path)
        lowered = None
        if change is not None and _lower_than(_resource(change.new_max), current_max):
            lowered = _resource(change.new_max)
        rows.append(
            QueueRow(
                path=path,
                guaranteed=_resource(guaranteed),
                max=current_max,
                used=_resource(usage) or {},
                preemptable=preemptable.get(path),
                preempting=_resource(preempting) or {},
                lowered_max=lowered,
                lowered_planned=lowered is not None and change is not None and change.planned,
                allocated=_resource(allocated),
                status=status,
                dynamic=dynamic,
                max_applications=max_applications,
                running_apps=running_apps,
            )
        )
    return rows


def queue_row(snapshot: models.ClusterSnapshot, path: str) -> QueueRow | None:
    """One queue of *snapshot* as a chart row (``None`` if the path is unknown)."""
    rows = queue_rows(snapshot, paths={path})
    return rows[0] if rows else None


ChangesKey = tuple[tuple[str, int, str, bool], ...]


def changes_key(waiting: Mapping[str, WaitingChange]) -> ChangesKey:
    """What of *waiting* (:func:`waiting_changes`) a figure of queue rows depends on (a
    cache key): each queue's newest waiting change, as (path, id, new max, only planned
    here)."""
    return tuple((path, c.pk, str(c.new_max), c.planned) for path, c in sorted(waiting.items()))


def waiting_key(partition: models.Partition) -> ChangesKey:
    """:func:`changes_key` of *partition*'s waiting changes."""
    return changes_key(waiting_changes(partition))


def known_types(snapshot: models.ClusterSnapshot) -> list[str]:
    """The resource types of *snapshot* (queues, waiting changes, nodes): the forms' rows.

    Kept per snapshot and waiting changes (a lowered max may name a type of its own).
    """

    def build() -> list[str]:
        rows = queue_rows(snapshot, with_preemptable=False)
        return resource_types_of(snapshot, rows) or ["vcore", "memory"]

    key = f"known-types:{waiting_key(snapshot.partition)}"
    return list(_per_snapshot(snapshot, key, build))


#: Every node of the snapshots read lately, by id (5,000 nodes: a few MB each).
_NODES_MEMO: Memo[dict[str, NodeRow]] = Memo(4)


def node_rows_by_id(snapshot: models.ClusterSnapshot) -> dict[str, NodeRow]:
    """Every node of *snapshot* as a chart row, by id, read once per process.

    For pages that pick a few hundred nodes of one snapshot again and again (a
    run's answer draws the nodes holding its victims).  Never mutate the answer.
    """
    return _NODES_MEMO.get(
        snapshot_key(snapshot), lambda: {row.id: row for row in node_rows(snapshot)}
    )


def nodes_cached(snapshot: models.ClusterSnapshot) -> bool:
    """Whether :func:`node_rows_by_id` of *snapshot* is kept by this process."""
    return snapshot_key(snapshot) in _NODES_MEMO


def gang_facts(snapshot: models.ClusterSnapshot) -> dict[str, dict[str, object]]:
    """The gang-scheduling facts of *snapshot*'s allocations that have any, once per process.

    ``services.gang_allocations`` of the whole snapshot (gang allocations are few);
    never mutate the answer.
    """
    return _per_snapshot(snapshot, "gang", lambda: services.gang_allocations(snapshot))


def node_rows(
    snapshot: models.ClusterSnapshot, ids: Collection[str] | None = None
) -> list[NodeRow]:
    """Every node of *snapshot* (or those of *ids*): capacity as reported, occupied by
    other pods, allocated sum."""
    nodes = services.snapshot_nodes(snapshot)
    if ids is not None:
        nodes = nodes.filter(node_id__in=ids)
    return [
        NodeRow(
            id=n.node_id,
            capacity=_resource(n.capacity) or {},
            allocated=_resource(n.allocated) or {},
            schedulable=n.schedulable,
            reported_capacity=_resource(n.reported_capacity),
            occupied=_resource(n.occupied) or {},
        )
        for n in nodes.order_by("node_id")
    ]


def usage_points(partition: models.Partition, path: str, limit: int = 200) -> list[UsagePoint]:
    """The queue's limits and usage in the newest *limit* snapshots of the partition."""
    rows = (
        models.SnapshotQueue.objects.filter(snapshot__partition=partition, path=path)
        .select_related("snapshot")
        .only("usage", "allocated", "guaranteed", "max", "snapshot__captured_at")
        .order_by("-snapshot__captured_at", "-snapshot_id")[:limit]
    )
    return [
        UsagePoint(
            at=r.snapshot.captured_at,
            used=_resource(r.usage) or {},
            guaranteed=_resource(r.guaranteed),
            max=_resource(r.max),
            allocated=_resource(r.allocated),
        )
        for r in rows
    ]


def subtree_filter(field: str, path: str) -> Q:
    """``field`` equal to *path* or below it (``path.`` prefix)."""
    return Q(**{field: path}) | Q(**{f"{field}__startswith": path + "."})


def run_rows(runs: Iterable[models.PreemptionRun]) -> list[RunRow]:
    """Runs as timeline points (victim counts must be annotated as ``victim_count``).

    A predicted run is plotted when its timer fired (``queued_at``, the change's
    deadline, the time the history table shows), never when the worker computed it;
    other runs when they started."""
    out: list[RunRow] = []
    for run in runs:
        if run.nature == models.PreemptionRun.Nature.PREDICTED:
            started = run.queued_at
        else:
            started = run.started_at or run.queued_at
        out.append(
            RunRow(
                id=run.pk,
                started=started,
                queue=run.queue or "(all queues)",
                trigger=f"{run.get_nature_display()} · {run.get_kind_display()} · "
                f"{run.get_trigger_display()}",
                outcome=run.outcome or run.status,
                victims=int(getattr(run, "victim_count", 0) or 0),
                finished=run.finished_at,
                nature=run.get_nature_display(),
            )
        )
    return out


def filtered_runs(
    partition: models.Partition | None, params: Mapping[str, str]
) -> QuerySet[models.PreemptionRun]:
    """Runs of *partition* narrowed by the history filters (queue, outcome, kind, trigger, dates).

    ``queue`` matches the run's queue or anything below it; ``since`` and
    ``until`` are ISO dates (inclusive days) or datetimes.
    """
    qs = models.PreemptionRun.objects.all()
    if partition is not None:
        qs = qs.filter(partition=partition)
    queue = params.get("queue", "").strip()
    if queue:
        qs = qs.filter(subtree_filter("queue", queue))
    for key in ("outcome", "kind", "trigger", "status"):
        value = params.get(key, "").strip()
        if value:
            qs = qs.filter(**{key: value})
    nature = params.get("nature", "").strip()
    if nature in models.PreemptionRun.Nature.values:
        qs = qs.of_nature(nature)
    since = parse_when(params.get("since", ""))
    until = parse_when(params.get("until", ""), end_of_day=True)
    if since is not None:
        qs = qs.filter(queued_at__gte=since)
    if until is not None:
        qs = qs.filter(queued_at__lte=until)
    return qs


def parse_when(text: str, *, end_of_day: bool = False) -> datetime | None:
    """An ISO date or datetime from a filter field, in UTC (``None`` if empty or unreadable)."""
    from datetime import UTC, time

    text = text.strip()
    if not text:
        return None
    try:
        if len(text) == 10:
            day = datetime.fromisoformat(text).date()
            return datetime.combine(day, time.max if end_of_day else time.min, tzinfo=UTC)
        value = datetime.fromisoformat(text)
    except ValueError:
        return None
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def leaf_paths(snapshot: models.ClusterSnapshot) -> list[str]:
    """Leaf queue paths of *snapshot*, sorted (read once per snapshot and process)."""

    def build() -> tuple[str, ...]:
        rows = snapshot.queues.filter(is_leaf=True).order_by("path")
        return tuple(rows.values_list("path", flat=True))

    return list(_per_snapshot(snapshot, "leaf-paths", build))


def all_paths(snapshot: models.ClusterSnapshot) -> list[str]:
    """All queue paths of *snapshot*, sorted (read once per snapshot and process)."""

    def build() -> tuple[str, ...]:
        return tuple(snapshot.queues.order_by("path").values_list("path", flat=True))

    return list(_per_snapshot(snapshot, "all-paths", build))


def resource_types_of(snapshot: models.ClusterSnapshot, rows: Sequence[QueueRow]) -> list[str]:
    """Resource types seen in *rows*, in any queue of *snapshot* or on its nodes.

    The snapshot's own types are read once per snapshot (cached): a page drawing
    one queue reads no node.
    """
    seen = set(resource_types(rows)) | set(_snapshot_types(snapshot))
    return sorted(seen, key=type_order)


def _snapshot_types(snapshot: models.ClusterSnapshot) -> list[str]:
    def build() -> list[str]:
        seen = set(resource_types(queue_rows(snapshot, changes={})))
        capacities = services.snapshot_nodes(snapshot).values_list("capacity", flat=True)
        for cap in capacities[:2000]:
            if isinstance(cap, Mapping):
                seen.update(str(t) for t in cap)
        return sorted(seen, key=type_order)

    return _per_snapshot(snapshot, "types", build)


def node_count(snapshot: models.ClusterSnapshot) -> int:
    """How many nodes *snapshot* holds (counted once per snapshot)."""
    return _per_snapshot(snapshot, "nodes", lambda: services.snapshot_nodes(snapshot).count())


def leaf_count(snapshot: models.ClusterSnapshot) -> int:
    """How many leaf queues *snapshot* holds (counted once per snapshot)."""
    return _per_snapshot(snapshot, "leaves", lambda: snapshot.queues.filter(is_leaf=True).count())
