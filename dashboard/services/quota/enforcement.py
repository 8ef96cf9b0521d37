"""The scheduler's quota preemptions settle the changes they enforce.

A waiting change the scheduler already enforced (an observed quota preemption of the
queue after the change, see :mod:`dashboard.services.runs.observed`) is done: nothing is
left for the dashboard's own timer to predict. A change whose timer fired in the
dashboard is ``fired`` (a prediction, awaiting the scheduler) until the scheduler's quota
preemption or a later snapshot within its max settles it. The change times come from
:mod:`dashboard.services.quota.scheduler_clock`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Q

from dashboard import models
from dashboard.display import format_datetime, format_resource
from dashboard.services.alerts import raise_alert
from dashboard.services.quota.deadlines import retime_reason
from dashboard.services.quota.queue_settings import allocated_usage
from dashboard.services.quota.scheduler_clock import (
    cluster_change_time,
    retime,
)
from dashboard.services.scope.latest import latest_snapshot
from engine import timers

Clock = models.QuotaChange.ClockSource
State = models.QuotaChange.State


class Enforcements:
    """The quota preemptions the scheduler ran (observed runs) on some queues of one
    partition from *since* on, read in one query, for the changes of those queues."""

    def __init__(self, partition_id: int, queues: Iterable[str], since: datetime | None) -> None:
        self.runs: dict[str, list[models.PreemptionRun]] = {}
        wanted = set(queues)
        if not wanted:
            return
        runs = models.PreemptionRun.objects.filter(
            partition_id=partition_id,
            trigger=models.PreemptionRun.Trigger.OBSERVED,
            kind=models.PreemptionRun.Kind.QUOTA,
            queue__in=wanted,
        )
        if since is not None:
            runs = runs.filter(queued_at__gte=since)
        for run in runs.order_by("queued_at", "id").only("id", "queue", "queued_at", "request"):
            self.runs.setdefault(run.queue, []).append(run)

    def first(
        self,
        change: models.QuotaChange,
        *,
        until: datetime | None = None,
        of_max: bool = False,
    ) -> models.PreemptionRun | None:
        """The first one on *change*'s queue from the change's start (until *until*);
        with *of_max*, the first one that enforced the change's max."""
        wanted = change.new_max or None
        for run in self.runs.get(change.queue_path, ()):
            if run.queued_at < change.changed_at:
                continue
            if until is not None and run.queued_at > until:
                break  # in time order: none later can be within
            if not of_max or ((run.request or {}).get("max") or None) == wanted:
                return run
        return None


def _first_enforcement(
    change: models.QuotaChange, *, until: datetime | None = None, of_max: bool = False
) -> models.PreemptionRun | None:
    """The first quota preemption the scheduler ran (an observed run) on *change*'s queue
    and partition from the change's start (until *until*); with *of_max*, the first one
    that enforced the change's max."""
    return Enforcements(change.partition_id, [change.queue_path], change.changed_at).first(
        change, until=until, of_max=of_max
    )


def settle_enforced(partition: models.Partition, *, now: datetime) -> list[models.QuotaChange]:
    """Changes the scheduler already enforced are done: a waiting one (its timer has nothing
    left to predict) or a fired one (the dashboard's prediction, awaiting the scheduler),
    by an observed quota preemption of the queue at or after the change, with the change's
    max, or after it was applied. Then fired changes a later snapshot settles
    (:func:`settle_fired`)."""
    done: list[models.QuotaChange] = []
    open_ = list(
        models.QuotaChange.objects.filter(
            partition=partition, state__in=[State.WAITING, State.FIRED]
        ).order_by("-depth", "queue_path")
    )
    # one query for every open change (not one per queue)
    enforcements = Enforcements(
        partition.pk,
        {c.queue_path for c in open_},
        min((c.changed_at for c in open_), default=None),
    )
    for change in open_:
        # a planned change the cluster has not shown: only an enforcement of its max
        observed = enforcements.first(change, of_max=change.is_planned)
        if observed is None:
            continue
        applied_at = change.applied_at
        if applied_at is None:  # the enforcement shows the planned change applied: when?
            seen = cluster_change_time(
                partition, change.queue_path, change.new_max, not_after=observed.queued_at
            )
            applied_at = seen.at if seen is not None else observed.queued_at
        fired = change.state == State.FIRED
        with transaction.atomic():
            n = models.QuotaChange.objects.filter(pk=change.pk, state=change.state).update(
                state=State.DONE,
                applied_at=applied_at,
                started_at=observed.queued_at,
                finished_at=observed.queued_at,
                reason=(
                    f"enforced in the cluster: the scheduler's quota preemption at "
                    f"{format_datetime(observed.queued_at)} (observed run {observed.pk}); "
                    f"the max in force is {format_resource(change.new_max or {})}"
                ),
            )
            if not n:
                continue
            raise_alert(
                models.Alert.Kind.QUOTA_OBSERVED,
                f"{change.queue_path}: observed: the scheduler enforced change {change.pk} at "
                f"{format_datetime(observed.queued_at)} (observed run {observed.pk}); "
                + (
                    "the dashboard's prediction is settled"
                    if fired
                    else "the dashboard's own timer does not fire"
                ),
                level=models.Alert.Level.INFO,
                partition=partition,
                queue=change.queue_path,
                change=change,
                now=now,
            )
        change.refresh_from_db()
        done.append(change)
    return done + settle_fired(partition)


def settle_fired(
    partition: models.Partition, snapshot: models.ClusterSnapshot | None = None
) -> list[models.QuotaChange]:
    """Fired changes (predicted here, awaiting the scheduler) that a later snapshot settles.

    Its ``finished_at`` becomes the time of what settled it (the snapshot's capture, the
    observed run, the replacing change's application): the end of the change's window,
    within which an observed preemption may answer its prediction
    (:func:`dashboard.services.runs.observed.prediction_for`).

    A change the cluster applied (``applied_at`` set) whose timer fired in the dashboard
    is done once a snapshot captured after its deadline shows the queue within the
    change's max (the scheduler's usage: whatever it preempted is gone, or nothing had
    to be). A planned change stays fired until the cluster shows it; a snapshot still
    above the max leaves it fired (the scheduler's preemption may be under way). A fired
    change whose max the cluster replaced by a later change before the scheduler reported
    on it is done too, naming that change (``superseded_by``): nothing will report on it.
    *snapshot* defaults to the partition's latest.
    """
    fired = list(
        models.QuotaChange.objects.filter(
            partition=partition, state=State.FIRED, applied_at__isnull=False
        )
    )
    if not fired:
        return []
    snap = snapshot or latest_snapshot(partition, defer_state=True)
    if snap is None:
        return []
    # the scheduler's usage: allocated, which still holds the allocations being preempted
    paths = {c.queue_path for c in fired}
    # (not through snap.queues: that would read each row's snapshot_id back)
    usage = {
        row.path: allocated_usage(row)
        for row in models.SnapshotQueue.objects.filter(snapshot=snap, path__in=paths).only(
            "path", "usage", "preempting", "allocated"
        )
    }
    # one query each for every fired change (not per queue): later changes the cluster
    # applied, and the scheduler's quota preemptions
    later = _AppliedChanges(partition.pk, paths, snap)
    enforcements = Enforcements(partition.pk, paths, min(c.changed_at for c in fired))
    done: list[models.QuotaChange] = []
    for change in fired:
        fired_at = change.started_at or change.deadline or change.changed_at
        if snap.captured_at <= max(fired_at, change.applied_at or fired_at):
            continue
        settled = _settlement(change, snap, later, enforcements, usage)
        if settled is None:
            continue
        n = models.QuotaChange.objects.filter(pk=change.pk, state=State.FIRED).update(
            state=State.DONE, **settled
        )
        if n:
            change.refresh_from_db()
            done.append(change)
    return done


def _settlement(
    change: models.QuotaChange,
    snap: models.ClusterSnapshot,
    later: _AppliedChanges,
    enforcements: Enforcements,
    usage: Mapping[str, Mapping[str, int]],
) -> dict[str, Any] | None:
    """What settles a fired *change* as of *snap* (the fields its row takes with
    ``done``), or None: it stays fired."""
    replaced = later.replacing(change)
    if replaced is not None:
        return {
            "superseded_by": replaced,
            "finished_at": replaced.applied_at,
            "reason": (
                f"replaced in the cluster by change {replaced.pk} (applied "
                f"{format_datetime(replaced.applied_at)}) before the scheduler reported "
                f"on this one; snapshot {snap.pk} captured "
                f"{format_datetime(snap.captured_at)} has the later max"
            ),
        }
    observed = enforcements.first(change, of_max=True)
    if observed is not None:
        # the scheduler's own quota preemption of this max: the change is settled by
        # that run, not by a snapshot that shows what it left
        return {
            "finished_at": observed.queued_at,
            "reason": (
                f"enforced in the cluster: the scheduler's quota preemption at "
                f"{format_datetime(observed.queued_at)} (observed run {observed.pk}), "
                "after the dashboard's prediction"
            ),
        }
    used = usage.get(change.queue_path)
    if used is None or timers.exceeds_max(used, change.new_max):
        return None
    return {
        "finished_at": snap.captured_at,
        "reason": (
            f"settled by the scheduler: snapshot {snap.pk} captured "
            f"{format_datetime(snap.captured_at)} shows usage {format_resource(used)} "
            f"within the max {format_resource(change.new_max or {})}"
        ),
    }


class _AppliedChanges:
    """The changes of some queues of one partition the cluster applied before *snap* was
    captured, read in one query."""

    def __init__(
        self, partition_id: int, queues: Iterable[str], snap: models.ClusterSnapshot
    ) -> None:
        self.of_queue: dict[str, list[models.QuotaChange]] = {}
        rows = models.QuotaChange.objects.filter(
            partition_id=partition_id,
            queue_path__in=set(queues),
            cause=models.QuotaChange.Cause.CHANGE,
            applied_at__lt=snap.captured_at,
        )
        for row in rows.order_by("-applied_at", "-pk"):
            self.of_queue.setdefault(row.queue_path, []).append(row)

    def replacing(self, change: models.QuotaChange) -> models.QuotaChange | None:
        """The later change of *change*'s queue the cluster applied by the time the
        snapshot was captured (the newest such), if any: the scheduler's max is then no
        longer the fired change's, and nothing will report on it any more."""
        assert change.applied_at is not None
        return next(
            (
                row
                for row in self.of_queue.get(change.queue_path, ())
                if row.pk != change.pk
                and row.applied_at is not None
                and row.applied_at > change.applied_at
            ),
            None,
        )


def retime_from_cluster(partition: models.Partition, *, now: datetime) -> None:
    """After a snapshot or events arrived: changes whose start was unknown get the scheduler's
    time where it is now known, and what the scheduler already enforced is done."""
    # only max changes: a QUEUE_MAX event times a change of the max, never a usage rise
    # a learned change that ended (no timer, or enforced) is retimed too: the events that
    # explain a config may come after it (an upload, then the next poll)
    unknown = models.QuotaChange.objects.filter(
        Q(state=State.WAITING)
        | Q(
            state__in=[State.DONE, State.FIRED, State.CLEARED],
            learned=True,
            superseded_by__isnull=True,
        ),
        partition=partition,
        cause=models.QuotaChange.Cause.CHANGE,
        clock_source__in=[Clock.CONFIG_IMPORT, Clock.CAPTURE],
    )
    for change in unknown:
        clock = cluster_change_time(partition, change.queue_path, change.new_max, not_after=now)
        if clock is None or clock.source in (Clock.CONFIG_IMPORT, Clock.CAPTURE):
            continue
        retime(change, clock)
    retime_replaced(partition)
    settle_enforced(partition, now=now)


def retime_replaced(partition: models.Partition) -> list[models.QuotaChange]:
    """Learned changes a later one replaced before the scheduler's time of either was known
    (configs imported before the events) take their QUEUE_MAX event's time: the latest
    event of the queue setting their max, not after their successor's change.  Their timer
    start, deadline and applied time become the scheduler's; their state stays."""
    replaced = list(
        models.QuotaChange.objects.filter(
            partition=partition,
            state=State.RESET,
            learned=True,
            cause=models.QuotaChange.Cause.CHANGE,
            clock_source__in=[Clock.CONFIG_IMPORT, Clock.CAPTURE],
            superseded_by__isnull=False,
        ).select_related("superseded_by")
    )
    if not replaced:
        return []
    events: dict[str, list[models.ObservedMaxChange]] = {}
    for event in models.ObservedMaxChange.objects.filter(
        partition=partition, queue__in={c.queue_path for c in replaced}
    ).order_by("time", "event_id"):
        events.setdefault(event.queue, []).append(event)
    done: list[models.QuotaChange] = []
    for change in replaced:
        successor = change.superseded_by
        assert successor is not None  # filtered above
        found = [
            e
            for e in events.get(change.queue_path, [])
            if (e.new_max or None) == (change.new_max or None) and e.time <= successor.changed_at
        ]
        if not found:
            continue
        event = found[-1]
        change.clock_source = Clock.EVENT
        change.clock_detail = f"QUEUE_MAX event {event.event_id}"
        change.changed_at = event.time
        if change.deadline is not None:
            retime_reason(change, event.time)
        if change.applied_at is None or event.time < change.applied_at:
            change.applied_at = event.time
        enforced = _first_enforcement(change, until=successor.changed_at)
        if enforced is not None and ((enforced.request or {}).get("max") or None) == (
            change.new_max or None
        ):
            # the scheduler enforced it before the successor replaced it: say so
            change.reason = (
                f"enforced in the cluster: the scheduler's quota preemption at "
                f"{format_datetime(enforced.queued_at)} (observed run {enforced.pk}); then "
                f"replaced by change {successor.pk}"
            )
        change.save(
            update_fields=[
                "clock_source",
                "clock_detail",
                "changed_at",
                "deadline",
                "deadline_reason",
                "applied_at",
                "reason",
                "updated_at",
            ]
        )
        done.append(change)
    return done
