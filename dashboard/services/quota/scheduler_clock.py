"""The scheduler's clock for quota changes: when the cluster changed a max, and what follows.

A change the dashboard learns from the cluster (a new max in an imported or
polled config, a QUEUE_MAX event) is timed by the scheduler's clock, never by
the import: its timer starts at the scheduler's change time, read (best first)
from the latest snapshot's running timer (``quotaPreemptionStartTime``, or a
QUEUE_MAX event plus the delay: :mod:`dashboard.importers.scheduler_clock`),
from a stored QUEUE_MAX event with the same max, or from the capture time of a
snapshot that already shows the new max (the latest the change can have been
made). Only when none of these exists is the import time used, and the change
says so (``clock_source``).

A change made in the dashboard is *planned* (``applied_at`` is None) until a
config imported or polled from the cluster shows it; from then on its timer is
the scheduler's. What the scheduler's quota preemptions settle is
:mod:`dashboard.services.quota.enforcement`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime

from django.db import IntegrityError, transaction

from dashboard import models
from dashboard.display import format_datetime
from dashboard.importers.events import EventsImport
from dashboard.plumbing.clock import from_epoch
from dashboard.services.quota.deadlines import deadline_of, reason_of, retime_reason, rules_of
from dashboard.services.quota.deadlines import step as deadline_step
from dashboard.services.quota.queue_settings import QueueSettings, timer_usage
from dashboard.services.scope.latest import latest_snapshot
from engine import timers

Clock = models.QuotaChange.ClockSource
State = models.QuotaChange.State


@dataclass(frozen=True, slots=True)
class ClusterClock:
    """When the cluster made a change, by which clock, and a detail for people."""

    at: datetime
    source: str
    detail: str = ""


def store_max_changes(partition: models.Partition, batch: EventsImport) -> int:
    """Keep the QUEUE_MAX events of *batch* (each once per scheduler instance); the count new."""
    rows = [
        models.ObservedMaxChange(
            partition=partition,
            instance_uuid=batch.instance_uuid[:100],
            event_id=c.event_id,
            queue=c.queue[:1000],
            time=from_epoch(c.time),
            new_max=c.new_max,
        )
        for c in batch.queue_max_changes
    ]
    if not rows:
        return 0
    before = models.ObservedMaxChange.objects.filter(partition=partition).count()
    models.ObservedMaxChange.objects.bulk_create(rows, ignore_conflicts=True)
    return models.ObservedMaxChange.objects.filter(partition=partition).count() - before


def timer_clock(snapshot: models.ClusterSnapshot, queue: str) -> ClusterClock | None:
    """The start of the scheduler's running timer of *queue* as *snapshot* reported it."""
    timer = (snapshot.scheduler_timers or {}).get(queue)
    if not isinstance(timer, Mapping) or timer.get("changed_at") is None:
        return None
    at = from_epoch(float(timer["changed_at"]))
    if timer.get("source") == "quotaPreemptionStartTime":
        fires = from_epoch(float(timer["fires_at"]))
        return ClusterClock(
            at, Clock.START_TIME, f"quotaPreemptionStartTime {format_datetime(fires)}"
        )
    return ClusterClock(at, Clock.EVENT, f"QUEUE_MAX event {timer.get('event_id')}")


class ClusterClocks:
    """The cluster's change times of several queues of one partition, read in a fixed
    number of queries (the latest snapshot's maxes and timers, the latest QUEUE_MAX
    event of each queue)."""

    def __init__(
        self,
        partition: models.Partition,
        queues: Iterable[str],
        *,
        not_after: datetime | None = None,
    ) -> None:
        wanted = set(queues)
        self.not_after = not_after
        self.snapshot = latest_snapshot(partition, defer_state=True)
        self.shown: dict[str, Mapping[str, int] | None] = {}
        if self.snapshot is not None:
            for path, maximum in self.snapshot.queues.filter(path__in=wanted).values_list(
                "path", "max"
            ):
                self.shown[path] = maximum or None
        events = models.ObservedMaxChange.objects.filter(partition=partition, queue__in=wanted)
        if not_after is not None:
            events = events.filter(time__lte=not_after)
        self.latest: dict[str, models.ObservedMaxChange] = {}
        for event in events.order_by("time", "event_id"):
            self.latest[event.queue] = event  # the last one of a queue wins

    def of(self, queue: str, new_max: Mapping[str, int] | None) -> ClusterClock | None:
        """When the cluster set *queue*'s max to *new_max* (None: unknown).

        The snapshot's running timer of the queue (its start), else the queue's latest
        QUEUE_MAX event when it set that max, else the capture time of the snapshot
        when it already shows that max (the change cannot be later).
        """
        target = dict(new_max) if new_max else None
        snapshot = self.snapshot
        shows_it = snapshot is not None and queue in self.shown and self.shown[queue] == target
        if snapshot is not None and shows_it:
            found = timer_clock(snapshot, queue)
            if found is not None:
                return found
        latest = self.latest.get(queue)
        # the latest max change must be this one (an older event with the same max was undone)
        if latest is not None and (latest.new_max or None) == target:
            return ClusterClock(latest.time, Clock.EVENT, f"QUEUE_MAX event {latest.event_id}")
        if (
            snapshot is not None
            and shows_it
            and (self.not_after is None or snapshot.captured_at <= self.not_after)
        ):
            return ClusterClock(
                snapshot.captured_at, Clock.CAPTURE, f"snapshot {snapshot.pk} already shows it"
            )
        return None

    def learned(self, queue: str, new_max: Mapping[str, int] | None, at: datetime) -> ClusterClock:
        """The clock of a change a config import learned at *at*: the scheduler's, else
        the import (unknown, and said so)."""
        return self.of(queue, new_max) or ClusterClock(
            at, Clock.CONFIG_IMPORT, "no QUEUE_MAX event or snapshot shows the change yet"
        )


#: :func:`previous_maxes` when the scheduler's events do not tell the max before a change.
UNKNOWN_MAX: Mapping[str, int] = {"?": -1}


def previous_maxes(
    partition: models.Partition, clocks: Mapping[str, ClusterClock]
) -> dict[str, Mapping[str, int] | None]:
    """Queue -> the max it had in the scheduler just before the change its clock in
    *clocks* times, by the scheduler's clock alone: the queue's QUEUE_MAX event before it,
    in the same scheduler instance (a new instance numbers its events from 0 and starts
    from its config). One query, of the events of the queues timed by an event.

    Only a change timed by its QUEUE_MAX event has a place among the events; a queue
    whose clock is another, or whose instance has no earlier event, is left out
    (:data:`UNKNOWN_MAX`). Every max change of an instance is an event, so the one before
    is the max in force then, whatever order the dashboard learned the configs and
    snapshots in (a raise and a lowering seconds apart may reach it in one poll).
    """
    event_ids: dict[str, int] = {}
    for queue, clock in clocks.items():
        if clock.source != Clock.EVENT or not clock.detail.startswith("QUEUE_MAX event "):
            continue
        try:
            event_ids[queue] = int(clock.detail.removeprefix("QUEUE_MAX event ").split()[0])
        except (ValueError, IndexError):
            continue
    if not event_ids:
        return {}
    events: dict[str, list[models.ObservedMaxChange]] = {}
    for event in models.ObservedMaxChange.objects.filter(
        partition=partition, queue__in=set(event_ids)
    ).order_by("time", "event_id", "id"):
        events.setdefault(event.queue, []).append(event)
    found: dict[str, Mapping[str, int] | None] = {}
    for queue, event_id in event_ids.items():
        of_queue = events.get(queue, [])
        at = clocks[queue].at
        this = next((e for e in of_queue if e.event_id == event_id and e.time == at), None)
        if this is None:
            continue
        earlier = [
            e
            for e in of_queue
            if e.instance_uuid == this.instance_uuid and e.event_id < this.event_id
        ]
        if earlier:
            found[queue] = max(earlier, key=lambda e: e.event_id).new_max or None
    return found


def befores_by_scheduler_clock(
    partition: models.Partition, changes: Mapping[str, tuple[QueueSettings, ClusterClock]]
) -> dict[str, QueueSettings]:
    """Queue -> its *before* (what the dashboard held in force before a change the cluster
    made, timed by its clock; both given in *changes*), with the max the scheduler's own
    events say was in force just before the change's time when they tell
    (:func:`previous_maxes`)."""
    told = previous_maxes(partition, {queue: clock for queue, (_, clock) in changes.items()})
    out: dict[str, QueueSettings] = {}
    for queue, (before, _) in changes.items():
        found = told.get(queue, UNKNOWN_MAX)
        if found is UNKNOWN_MAX or found == before.max:
            out[queue] = before
        else:
            out[queue] = replace(before, max=dict(found) if found else None, source="observed")
    return out


def cluster_change_time(
    partition: models.Partition,
    queue: str,
    new_max: Mapping[str, int] | None,
    *,
    not_after: datetime | None = None,
) -> ClusterClock | None:
    """When the cluster set *queue*'s max to *new_max*, by the scheduler's clock (None:
    unknown); see :meth:`ClusterClocks.of`."""
    return ClusterClocks(partition, [queue], not_after=not_after).of(queue, new_max)


#: How the reason of a change the cluster made begins (``timers.ClusterLowering.words``).
CLUSTER_WORDS = ("the cluster lowered the max of ", "the cluster's max is ")


def what_the_cluster_did(reason: str) -> str:
    """The start of a learned change's *reason* saying what the cluster did (the types it
    lowered, from what, the types over), before the words of its timer; "" when the
    reason does not start so."""
    if not reason.startswith(CLUSTER_WORDS):
        return ""
    for timer_words in ("; timer ", "; no timer", "; the scheduler's timer"):
        head, sep, _ = reason.partition(timer_words)
        if sep:
            return head
    return ""


def retime(change: models.QuotaChange, clock: ClusterClock, *, applied: bool = True) -> None:
    """Count *change*'s timer from the cluster's *clock* (a waiting one gets a new deadline).

    A change applied at a guessed time (the import that showed it, or a snapshot's capture)
    takes the scheduler's earlier time as its applied time too: the cluster applied it then.
    """
    guessed = change.clock_source in (Clock.CONFIG_IMPORT, Clock.CAPTURE)
    change.clock_source = clock.source
    change.clock_detail = clock.detail[:255]
    if applied and (change.applied_at is None or (guessed and clock.at < change.applied_at)):
        change.applied_at = clock.at
    fields = ["clock_source", "clock_detail", "applied_at", "updated_at"]
    if change.learned and guessed and change.state != State.WAITING:
        # a change the cluster made was made at the scheduler's time, whichever of its
        # config and its event the dashboard read first
        change.changed_at = clock.at
        fields.append("changed_at")
    if change.state == State.WAITING and change.deadline is not None:
        change.changed_at = clock.at
        retime_reason(change, clock.at)
        did = what_the_cluster_did(change.reason)
        change.reason = (
            (f"{did}; " if did else "")
            + f"the scheduler's timer: started {format_datetime(clock.at)} "
            f"({change.get_clock_source_display()}), quota preemption fires at "
            f"{format_datetime(change.deadline)} (delay {change.delay:g}s)"
        )
        fields += ["changed_at", "deadline", "deadline_reason", "reason"]
    change.save(update_fields=fields)


def apply_planned(
    partition: models.Partition,
    in_config: Mapping[str, tuple[Mapping[str, int] | None, float]],
    version: models.ConfigVersion,
    now: datetime,
) -> list[models.QuotaChange]:
    """Mark the planned changes an imported config shows as applied; their timer is the
    scheduler's from then on.

    *in_config* is queue path -> (max, delay) of the imported config. Of each queue,
    the latest change made in the dashboard counts, when the config has its max and delay.
    """
    planned = (
        models.QuotaChange.objects.filter(partition=partition, applied_at__isnull=True)
        .exclude(state__in=[State.CANCELLED, State.PENDING])
        .order_by("queue_path", "-changed_at", "-id")
    )
    seen: set[str] = set()
    shown: list[models.QuotaChange] = []
    for change in planned:
        if change.queue_path in seen:
            continue
        seen.add(change.queue_path)
        wanted = in_config.get(change.queue_path)
        if wanted is None or (wanted[0] or None) != (change.new_max or None):
            continue
        if wanted[1] != change.delay:
            continue
        shown.append(change)
    if not shown:
        return []
    clocks = ClusterClocks(partition, [c.queue_path for c in shown], not_after=now)
    for change in shown:
        clock = clocks.of(change.queue_path, change.new_max) or ClusterClock(
            now, Clock.CONFIG_IMPORT, f"applied: seen in config v{version.number}"
        )
        retime(change, clock)
        if change.state == State.CLEARED:
            arm_when_applied(partition, change, clock, version)
    return shown


def arm_when_applied(
    partition: models.Partition,
    change: models.QuotaChange,
    clock: ClusterClock,
    version: models.ConfigVersion,
) -> bool:
    """A planned change whose predicted timer the dashboard's check cleared, now seen
    applied in the cluster: the scheduler applies it as any config change (engine.md 5.1,
    config applied) and starts its timer then when usage is over the max. The change
    waits again, timed by the cluster's *clock*; it stays cleared when usage is within,
    or when another change of the queue is active (it holds the timer). True when armed.
    """
    snap = latest_snapshot(partition, defer_state=True)
    rules = rules_of(partition)
    usage = timer_usage(snap, change.queue_path, rules) if snap is not None else None
    if usage is None:  # unknown (no snapshot): taken as above the max, as a saved change is
        usage = {t: q + 1 for t, q in (change.new_max or {}).items()}
    step = deadline_step(
        rules,
        timers.TimerState.idle(),
        timers.ConfigChanged(
            old_max=change.old_max,
            old_delay=change.old_delay if change.old_delay is not None else change.delay,
            max=change.new_max,
            usage=usage,
            delay=change.delay,
            enabled=partition.quota_preemption_enabled,
        ),
        clock.at,
    )
    deadline = deadline_of(step)
    if deadline is None:
        return False
    try:
        with transaction.atomic():
            armed = models.QuotaChange.objects.filter(pk=change.pk, state=State.CLEARED).update(
                state=State.WAITING,
                deadline=deadline,
                deadline_reason=reason_of(step),
                finished_at=None,
                snapshot=snap,
                reason=(
                    f"applied in the cluster (config v{version.number}) after the dashboard's "
                    "prediction had cleared its timer: the scheduler starts its timer at "
                    f"{format_datetime(clock.at)} ({Clock(clock.source).label}), usage over the "
                    f"max; quota preemption fires at {format_datetime(deadline)} (delay "
                    f"{change.delay:g}s)"
                ),
            )
    except IntegrityError:  # another change of the queue is active: it holds the timer
        return False
    change.refresh_from_db()
    return bool(armed)
