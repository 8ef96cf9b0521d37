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
the scheduler's. A waiting change the scheduler already enforced (an observed
quota preemption of the queue after the change, see
:mod:`dashboard.services.runs.observed`) is done: nothing is left for the dashboard's
own timer to predict. A change whose timer fired in the dashboard is ``fired``
(a prediction, awaiting the scheduler) until the scheduler's quota preemption or
a later snapshot within its max settles it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime

from django.db import IntegrityError, transaction
from django.db.models import Q

from dashboard import models
from dashboard.display import format_datetime, format_resource
from dashboard.importers.events import EventsImport
from dashboard.plumbing.clock import from_epoch
from dashboard.services.alerts import raise_alert
from dashboard.services.quota.deadlines import deadline_of, reason_of, retime_reason, rules_of
from dashboard.services.quota.deadlines import step as deadline_step
from dashboard.services.quota.queue_settings import QueueSettings, allocated_usage, timer_usage
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
        replaced = later.replacing(change)
        if replaced is not None:
            n = models.QuotaChange.objects.filter(pk=change.pk, state=State.FIRED).update(
                state=State.DONE,
                superseded_by=replaced,
                finished_at=replaced.applied_at,
                reason=(
                    f"replaced in the cluster by change {replaced.pk} (applied "
                    f"{format_datetime(replaced.applied_at)}) before the scheduler reported "
                    f"on this one; snapshot {snap.pk} captured "
                    f"{format_datetime(snap.captured_at)} has the later max"
                ),
            )
            if n:
                change.refresh_from_db()
                done.append(change)
            continue
        observed = enforcements.first(change, of_max=True)
        if observed is not None:
            # the scheduler's own quota preemption of this max: the change is settled by
            # that run, not by a snapshot that shows what it left
            n = models.QuotaChange.objects.filter(pk=change.pk, state=State.FIRED).update(
                state=State.DONE,
                finished_at=observed.queued_at,
                reason=(
                    f"enforced in the cluster: the scheduler's quota preemption at "
                    f"{format_datetime(observed.queued_at)} (observed run {observed.pk}), "
                    "after the dashboard's prediction"
                ),
            )
            if n:
                change.refresh_from_db()
                done.append(change)
            continue
        if change.queue_path not in usage:
            continue
        used = usage[change.queue_path]
        if timers.exceeds_max(used, change.new_max):
            continue
        n = models.QuotaChange.objects.filter(pk=change.pk, state=State.FIRED).update(
            state=State.DONE,
            finished_at=snap.captured_at,
            reason=(
                f"settled by the scheduler: snapshot {snap.pk} captured "
                f"{format_datetime(snap.captured_at)} shows usage {format_resource(used)} "
                f"within the max {format_resource(change.new_max or {})}"
            ),
        )
        if n:
            change.refresh_from_db()
            done.append(change)
    return done


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
