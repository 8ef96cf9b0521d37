"""What a queue is configured with now (its config, then later changes) and its usage."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from django.db.models import QuerySet, Value

from dashboard import models
from dashboard.display import format_duration, format_quantity
from dashboard.plumbing.errors import ServiceError
from dashboard.services.limits import Resource
from dashboard.services.scope.latest import latest_config, latest_snapshot


@dataclass(frozen=True, slots=True)
class QueueSettings:
    """What a queue is configured with in the cluster right now (config, then later changes
    the cluster made or applied, then the scheduler's observations)."""

    max: Resource | None
    delay: float
    is_known: bool
    is_dynamic: bool
    depth: int
    source: str = "config"
    """Where the max comes from: ``config`` (the config in force), ``snapshot`` (a queue
    only a snapshot knows), ``change`` (a change since the config) or ``observed`` (the
    scheduler's own QUEUE_MAX event or quota preemption, newer than both)."""


def observed_maxes(
    partition: models.Partition,
    paths: Iterable[str] | None,
    since: datetime | None,
) -> dict[str, tuple[datetime, Resource | None]]:
    """Queue -> the max the scheduler last showed (a QUEUE_MAX event or the max its own quota
    preemption enforced) after *since*, with its time: after an enforcement in the cluster,
    its max is the one in force. Two queries whatever the number of queues."""
    runs = models.PreemptionRun.objects.filter(
        partition=partition,
        trigger=models.PreemptionRun.Trigger.OBSERVED,
        kind=models.PreemptionRun.Kind.QUOTA,
    )
    events = models.ObservedMaxChange.objects.filter(partition=partition)
    if since is not None:
        runs = runs.filter(queued_at__gt=since)
        events = events.filter(time__gt=since)
    if paths is not None:
        wanted = list(set(paths))
        runs = runs.filter(queue__in=wanted)
        events = events.filter(queue__in=wanted)
    # one query: the runs' requests (holding the enforced max) and the events' maxes
    rows = (
        runs.order_by()
        .annotate(kind_of=Value("run"))
        .values_list("queued_at", "queue", "request", "kind_of")
        .union(
            events.order_by()
            .annotate(kind_of=Value("event"))
            .values_list("time", "queue", "new_max", "kind_of"),
            all=True,
        )
    )
    seen: list[tuple[datetime, str, Resource | None]] = []
    for at, queue, value, kind in rows:
        maximum = (value or {}).get("max") if kind == "run" else value
        seen.append((at, queue, maximum or None))
    out: dict[str, tuple[datetime, Resource | None]] = {}
    for at, queue, maximum in sorted(seen, key=lambda e: (e[0], e[1])):
        out[queue] = (at, maximum)  # the latest wins
    return out


def _with_observed(
    result: dict[str, QueueSettings],
    partition: models.Partition,
    paths: Iterable[str] | None,
    since: datetime | None,
    changed: Mapping[str, datetime],
) -> None:
    """Let the scheduler's own observations newer than the config and the queue's last
    change set the max in force (in place)."""
    for path, (at, maximum) in observed_maxes(partition, paths, since).items():
        base = result.get(path)
        last = changed.get(path)
        if base is None or not base.is_known or (last is not None and last >= at):
            continue
        if maximum == base.max:
            continue
        result[path] = QueueSettings(
            maximum, base.delay, True, base.is_dynamic, base.depth, "observed"
        )


def counted_changes(partition: models.Partition) -> QuerySet[models.QuotaChange]:
    """The changes that set a queue's max in force and its planned max (the one rule of
    :func:`in_force`): never a cancelled one, nor one being decided, nor a planned one a
    later change superseded (its max was never in the cluster; the change that replaced
    it, or nothing when that one was cancelled in turn, is the plan). A superseded change
    the cluster applied was in force there until the next one, and counts."""
    State = models.QuotaChange.State
    return (
        models.QuotaChange.objects.filter(partition=partition)
        .exclude(state__in=[State.CANCELLED, State.PENDING])
        .exclude(
            applied_at__isnull=True,
            state__in=[State.RESET, State.CANCELLED_BY_INCREASE],
        )
    )


#: Up to this many queues are read by their paths; more read the whole config.
_BY_PATH = 200


def in_force(
    partition: models.Partition,
    paths: Iterable[str] | None,
    *,
    snapshot: models.ClusterSnapshot | None = None,
    queues: Iterable[models.SnapshotQueue] | None = None,
    planned: bool = False,
    observed: bool = True,
) -> dict[str, QueueSettings]:
    """The max and effective delay in force of queues of *partition*: the one place both
    "the max in force" and "the planned max" are computed (:func:`queue_settings`,
    :func:`settings_for_paths` and :func:`settings_by_queue` ask it).

    Layer by layer: the config in force (the latest imported, never a planned version),
    else the snapshot's own max and delay for a queue the config does not know (dynamic);
    then the last of the queue's :func:`counted_changes` since that config (applied in the
    cluster; with *planned*, the changes planned in the dashboard too: the plan); then,
    with *observed*, what the scheduler was seen doing since (its QUEUE_MAX events, its
    quota preemptions) when newer than that change. A change superseded before the
    cluster applied it, or cancelled, sets neither.

    *paths*: the queues wanted (None: every queue of *snapshot*). *snapshot* is the one a
    dynamic queue is read from (default: the partition's latest); *queues* its rows when
    the caller holds them. A fixed number of queries, whatever the number of queues.
    """
    config = (
        partition.configs.filter(planned=False)
        .order_by("-number")
        .only("pk", "imported_at")
        .first()
    )
    rows_of: dict[str, models.SnapshotQueue] = {}
    if paths is None:  # every queue of the snapshot
        assert snapshot is not None, "in_force(paths=None) reads the queues of a snapshot"
        rows_of = {q.path: q for q in (snapshot.queues.all() if queues is None else queues)}
        wanted = set(rows_of)
    else:
        wanted = set(paths)
    result: dict[str, QueueSettings] = {}
    if config is not None:
        found = models.ConfigQueue.objects.filter(version=config)
        if len(wanted) <= _BY_PATH:
            found = found.filter(path__in=wanted)
        for c in found.only("path", "max", "quota_preemption_delay", "depth"):
            if c.path in wanted:
                result[c.path] = QueueSettings(
                    c.max, c.quota_preemption_delay, True, False, c.depth
                )
    missing = wanted - set(result)
    if missing and paths is not None:
        snapshot = (
            snapshot or partition.snapshots.order_by("-captured_at", "-id").only("pk").first()
        )
        if snapshot is not None:
            rows = models.SnapshotQueue.objects.filter(snapshot=snapshot)
            if len(missing) <= _BY_PATH:  # the queues and their ancestors (their delays)
                rows = rows.filter(path__in={a for p in missing for a in _ancestry(p)})
            rows_of = {
                q.path: q
                for q in rows.only("path", "parent_path", "max", "quota_preemption_delay", "depth")
            }
    for path in missing:
        row = rows_of.get(path)
        if row is not None:
            result[path] = QueueSettings(
                row.max,
                _snapshot_delay(rows_of, row),
                True,
                config is not None,  # a queue the config does not know is dynamic
                row.depth,
                "snapshot",
            )
    for path in wanted - set(result):
        result[path] = QueueSettings(None, 0.0, False, False, path.count("."))
    changes = counted_changes(partition)
    if len(wanted) <= _BY_PATH:
        changes = changes.filter(queue_path__in=wanted)
    if config is not None:
        changes = changes.filter(changed_at__gte=config.imported_at)
    if not planned:
        changes = changes.filter(applied_at__isnull=False)  # planned here: not in force
    changed: dict[str, datetime] = {}
    for change in changes.order_by("changed_at", "id").only(
        "queue_path", "new_max", "delay", "changed_at"
    ):
        base = result.get(change.queue_path)  # the last one of a queue wins
        if base is not None and base.is_known:
            result[change.queue_path] = QueueSettings(
                change.new_max, change.delay, True, base.is_dynamic, base.depth, "change"
            )
            changed[change.queue_path] = change.changed_at
    if observed:
        _with_observed(
            result,
            partition,
            wanted if len(wanted) <= _BY_PATH else None,
            config.imported_at if config is not None else None,
            changed,
        )
    # by path: the same order in every process (the queues were gathered in sets, whose
    # order follows each process's string hashing), so pages built from it are alike
    return dict(sorted(result.items()))


def queue_settings(
    partition: models.Partition, queue_path: str, *, planned: bool = False
) -> QueueSettings:
    """The queue's max and effective delay in force in the cluster (:func:`in_force`): the
    scheduler's config in force, then later changes the cluster made or was seen applying,
    then what the scheduler was observed doing since (its QUEUE_MAX events, its quota
    preemptions).

    Changes planned in the dashboard and not yet seen applied in the cluster
    (``QuotaChange.applied_at`` is None) do not count, nor does any prediction of the
    dashboard (a fired timer changes no max): what-ifs, scheduling, plans and the timers
    read the scheduler's max. *planned*: count the planned changes too - the
    administrator's plan as it stands (a config export writes it in; a config import
    recognises it applied).
    """
    return in_force(partition, [queue_path], planned=planned)[queue_path]


def settings_for_paths(
    partition: models.Partition,
    paths: Iterable[str],
    *,
    planned: bool = False,
    observed: bool = True,
) -> dict[str, QueueSettings]:
    """:func:`queue_settings` of every queue in *paths* (:func:`in_force`).

    *observed*: whether the scheduler's own QUEUE_MAX events and quota preemptions
    count; a config import compares without them, so that events stored before or after
    the config that explains them learn the same change.
    """
    return in_force(partition, paths, planned=planned, observed=observed)


def settings_by_queue(
    partition: models.Partition,
    snapshot: models.ClusterSnapshot,
    queues: Iterable[models.SnapshotQueue] | None = None,
    *,
    planned: bool = False,
) -> dict[str, QueueSettings]:
    """:func:`queue_settings` for every queue of *snapshot*, the partition's latest
    snapshot (:func:`in_force`); *queues* are its rows when the caller holds them."""
    rows = list(snapshot.queues.all()) if queues is None else list(queues)
    return in_force(partition, None, snapshot=snapshot, queues=rows, planned=planned)


def _ancestry(path: str) -> list[str]:
    """*path* and its ancestors: ``root.a.x`` -> ``root``, ``root.a``, ``root.a.x``."""
    parts = path.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


def _snapshot_delay(rows: Mapping[str, models.SnapshotQueue], row: models.SnapshotQueue) -> float:
    """The queue's own delay, else the nearest ancestor's (as in the snapshot), else 0."""
    while row.quota_preemption_delay is None:
        parent = rows.get(row.parent_path) if row.parent_path else None
        if parent is None:
            return 0.0
        row = parent
    return float(row.quota_preemption_delay)


def queue_guaranteed(partition: models.Partition, queue_path: str) -> Resource | None:
    """The queue's own guaranteed: from the latest config, else the latest snapshot."""
    config = latest_config(partition)
    if config is not None:
        row = config.queues.filter(path=queue_path).first()
        if row is not None:
            return row.guaranteed
    snapshot = latest_snapshot(partition, defer_state=True)
    if snapshot is not None:
        found = snapshot.queues.filter(path=queue_path).first()
        if found is not None:
            return found.guaranteed
    return None


def check_max_above_guaranteed(
    new_max: Mapping[str, int] | None,
    guaranteed: Mapping[str, int] | None,
    delay: float,
    queue_path: str,
    *,
    kept: Mapping[str, int] | None = None,
) -> None:
    """With a quota preemption delay, a max must stay above the guarantee in every type both
    define (quota seed, "Meaningful Quota Decrease").  Only for changes made in the
    dashboard: yunikorn-core accepts such a config, so an imported one is only warned
    about (:mod:`dashboard.importers.quota_rule`).

    *kept* is the max already in force: a type at its value there is not part of the
    change and is not checked (the administrator did not touch it), also when the delay
    changes (the cluster's own config may hold a max at its guarantee; the scheduler
    accepts it).

    Raises:
        ServiceError: naming ``new_max``, the type and both values in the pages' units.
    """
    if not delay or new_max is None or not guaranteed:
        return
    for t in sorted(set(new_max) & set(guaranteed)):
        if kept is not None and kept.get(t) == new_max[t]:
            continue
        if new_max[t] <= guaranteed[t]:
            raise ServiceError(
                "new_max",
                f"{queue_path}: the max of {t}, {format_quantity(t, new_max[t])}, must be "
                f"greater than its guarantee of {format_quantity(t, guaranteed[t])} because "
                f"a quota preemption delay ({format_duration(delay)}) is set: a lowered "
                "quota must stay above the queue's guaranteed resources",
            )


def allocated_usage(row: models.SnapshotQueue) -> dict[str, int]:
    """The scheduler's usage of *row*'s queue: its *allocated*, which still holds the
    allocations being preempted (``preemptingResource``) until the shim releases them.

    yunikorn-core decides every "within the max" on it
    (``max.StrictlyGreaterThanOrEqualsOnlyExisting(allocatedResource)``, engine.md 5.1):
    7 GPUs allocated (1 preempting) against a max of 6 is over it.  A row stored before
    ``allocated`` was kept falls back to usage + preempting.  The one reading of it: the
    timers, the sweep, restarts and the settling of a fired change all come here.
    """
    source = dict(row.allocated or {})
    if not source:
        for part in (row.usage or {}, row.preempting or {}):
            for t, q in part.items():
                source[t] = source.get(t, 0) + q
    return {t: q for t, q in source.items() if q}


def row_timer_usage(row: models.SnapshotQueue, rules: str) -> dict[str, int]:
    """The usage a quota timer of *row*'s queue is decided on, by the partition's rule set:
    ``scheduler`` (engine.md 5.1) the scheduler's allocated (:func:`allocated_usage`);
    ``seed`` (engine.md 5) U(Q), without the allocations being preempted.

    The dashboard's own predictions (a timer run "predicted in the dashboard") preempt
    nothing in the cluster: their victims still count until a later snapshot or the
    scheduler's observed preemption shows them gone (issue 24, predictions apart from
    reality).
    """
    if rules == "scheduler":
        return allocated_usage(row)
    return {t: q for t, q in dict(row.usage or {}).items() if q}


def timer_usage(
    snapshot: models.ClusterSnapshot, queue_path: str, rules: str
) -> dict[str, int] | None:
    """:func:`row_timer_usage` of *queue_path* in *snapshot* (None when it has no such queue)."""
    row = snapshot.queues.filter(path=queue_path).only("usage", "preempting", "allocated").first()
    return None if row is None else row_timer_usage(row, rules)
