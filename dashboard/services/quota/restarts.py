"""Scheduler restarts: recognised from what a poll, a stream or an upload reads, stored,
announced, and every queue timer re-armed by the partition's rule set.

A restart is a new scheduler instance: ``/ws/v1/clusters`` ``startTime`` when the
caller has it, else a new ``InstanceUUID`` in the events (whose ids restart from
0; the instance's first event is then the restart time, the latest it can have
happened).  The first instance a partition sees is stored too, as the baseline
(not a restart).  An instance already stored, or one that started before the
partition's latest (an old folder uploaded late), re-arms nothing.

At a restart (engine.md 5.1 / 5, :func:`engine.timers.rearm_after_restart`):
under ``scheduler`` every managed queue over its max with a delay waits until
recovery + delay, a timer or not before; under ``seed`` only the pending timers
restart from zero.

The scheduler re-arms a timer when it recovers the queue's allocations, and the
k8shim replays them only after listing its pods: meanwhile the REST API answers an
empty partition (no node, no allocation). A restart first seen in such an answer
re-arms nothing and closes nothing: the waiting changes wait with no deadline
(``SchedulerStart.awaiting_recovery``) until a later answer shows the partition
recovered; they are re-armed then from the recovery time (the new instance's first
recovered allocation event, else its first node event, else the capture of the first
answer that shows the allocations back). A restart whose first answer shows the
allocations re-arms from the start.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime

from django.db import IntegrityError, transaction

from dashboard import models
from dashboard.display import format_datetime
from dashboard.importers.events import EventsImport
from dashboard.plumbing.clock import epoch, from_epoch
from dashboard.services.alerts import raise_alert
from dashboard.services.quota import deadlines
from dashboard.services.quota.queue_settings import row_timer_usage, settings_by_queue
from dashboard.services.scope.latest import latest_config, latest_snapshot
from engine import timers

State = models.QuotaChange.State

FROM_START_TIME = "/ws/v1/clusters startTime"
FROM_FIRST_EVENT = "first event of the new InstanceUUID"
#: The instance of a restart seen from the startTime alone, until an events batch names it.
UNNAMED_INSTANCE = "not named yet"


def scheduler_restarts(
    partition: models.Partition | None, limit: int = 20
) -> list[models.SchedulerStart]:
    """The latest scheduler restarts of *partition* (all partitions when None), newest first."""
    rows = models.SchedulerStart.objects.filter(is_restart=True).select_related(
        "partition__cluster"
    )
    if partition is not None:
        rows = rows.filter(partition=partition)
    return list(rows.order_by("-started_at", "-id")[:limit])


_START_TIME = re.compile(rb'"startTime"\s*:\s*(\d+)')


def served_start_time(files: Mapping[str, bytes]) -> datetime | None:
    """The scheduler's start (``ClusterDAOInfo.startTime``, nanoseconds) when the files
    carry it: ``clusters.json`` (``/ws/v1/clusters``) or a state dump's ``clusterInfo``
    (read near its key, never parsing the whole dump again)."""
    for name in files:  # names first: a lazy mapping reads only the files asked for
        if name.endswith("clusters.json"):
            window = files[name][:20_000]
        elif "statedump" in name:
            body = files[name]
            at = body.find(b'"clusterInfo"')
            window = body[at : at + 4000] if at >= 0 else b""
        else:
            continue
        found = _START_TIME.search(window)
        if found is not None and int(found.group(1)) > 0:
            return from_epoch(int(found.group(1)) / 1e9)
    return None


def restart_time(
    batch: EventsImport | None, start_time: datetime | None
) -> tuple[datetime, str] | None:
    """When the scheduler instance started, and from what (None: nothing tells)."""
    if start_time is not None:
        return start_time, FROM_START_TIME
    if batch is None:
        return None
    first = min((r.time for r in batch.records), default=None)
    if first is None:
        return None
    return from_epoch(first), FROM_FIRST_EVENT


#: ``si.EventRecord`` numbers of a recovery: an application's allocation added
#: (type APP, change ADD, detail APP_ALLOC) and a node added (type NODE, change ADD).
_TYPE_APP, _TYPE_NODE, _CHANGE_ADD, _APP_ALLOC = 2, 3, 2, 200


def recovery_time(batch: EventsImport | None, instance: str, after: datetime) -> datetime | None:
    """When the scheduler instance *instance* recovered its allocations by *batch*: its
    first allocation added, else its first node added, at or after *after* (None: the
    batch does not show it)."""
    if batch is None or not batch.records or (instance and batch.instance_uuid != instance):
        return None
    start = epoch(after)
    allocs = [
        r.time
        for r in batch.records
        if r.type == _TYPE_APP
        and r.change_type == _CHANGE_ADD
        and r.change_detail == _APP_ALLOC
        and r.time >= start
    ]
    nodes = [
        r.time
        for r in batch.records
        if r.type == _TYPE_NODE and r.change_type == _CHANGE_ADD and r.time >= start
    ]
    found = min(allocs, default=None) or min(nodes, default=None)
    return from_epoch(found) if found is not None else None


def partition_empty(snapshot: models.ClusterSnapshot | None, since: datetime) -> bool:
    """Whether *snapshot*, captured at or after *since*, shows the partition empty (no
    queue holds an allocation): the scheduler has not recovered the shim's pods yet."""
    if snapshot is None or snapshot.captured_at < since:
        return False
    return not any(a for a in snapshot.queues.values_list("allocated", flat=True))


def resume_after_recovery(
    partition: models.Partition,
    batch: EventsImport | None,
    *,
    snapshot: models.ClusterSnapshot | None,
    now: datetime,
) -> models.SchedulerStart | None:
    """A restart awaiting its recovery: the recovery time when *batch* shows it, and once
    *snapshot* shows the partition recovered, the timers re-armed from it. Returns the
    restart when it was re-armed now."""
    row = (
        models.SchedulerStart.objects.filter(partition=partition, awaiting_recovery=True)
        .order_by("-started_at", "-id")
        .first()
    )
    if row is None:
        return None
    found = recovery_time(batch, row.instance_uuid, row.started_at)
    if found is not None and (row.recovered_at is None or found < row.recovered_at):
        row.recovered_at = found
        row.save(update_fields=["recovered_at"])
    if snapshot is None or snapshot.captured_at < row.started_at:
        return None
    if partition_empty(snapshot, row.started_at):
        return None
    if row.recovered_at is None:
        # recovered between two answers whose events did not show it: the latest it can be
        row.recovered_at = snapshot.captured_at
    row.awaiting_recovery = False
    row.save(update_fields=["recovered_at", "awaiting_recovery"])
    _rearm_and_announce(partition, row, snapshot=snapshot, now=now)
    return row


def note_scheduler_instance(
    partition: models.Partition,
    batch: EventsImport | None,
    *,
    now: datetime,
    start_time: datetime | None = None,
    snapshot: models.ClusterSnapshot | None = None,
) -> models.SchedulerStart | None:
    """Store the scheduler instance the batch (its ``InstanceUUID``) or *start_time*
    (``/ws/v1/clusters`` ``startTime``) shows, when new; at a restart re-arm the timers.

    Runs inside the caller's transaction. Returns the stored row (None when the
    instance is known or the batch has no instance or no event to time it by).
    """
    uuid = batch.instance_uuid[:100] if batch is not None else ""
    known = models.SchedulerStart.objects.filter(partition=partition)
    if uuid and known.filter(instance_uuid=uuid).exists():
        resume_after_recovery(partition, batch, snapshot=snapshot, now=now)
        return None
    if start_time is not None and known.filter(started_at=start_time).exists():
        return None
    if not uuid and start_time is None:
        return None
    latest = known.order_by("-started_at", "-id").first()
    if uuid and latest is not None and not latest.instance_uuid:
        # the instance whose startTime an earlier answer gave, now seen in its events
        first = restart_time(batch, None)
        if start_time in (None, latest.started_at) and (
            first is None or first[0] >= latest.started_at
        ):
            latest.instance_uuid = uuid
            latest.save(update_fields=["instance_uuid"])
            _name_the_instance(partition, latest)
            resume_after_recovery(partition, batch, snapshot=snapshot, now=now)
            return None
    when = restart_time(batch, start_time)
    if when is None:
        return None
    started_at, source = when
    is_restart = latest is not None and started_at > latest.started_at
    try:
        with transaction.atomic():
            row = models.SchedulerStart.objects.create(
                partition=partition,
                instance_uuid=uuid,
                started_at=started_at,
                source=source,
                seen_at=now,
                is_restart=is_restart,
            )
    except IntegrityError:  # stored meanwhile by a concurrent poll
        return None
    if not is_restart:
        return row
    _rearm_and_announce(partition, row, snapshot=snapshot, now=now)
    return row


def _rearm_and_announce(
    partition: models.Partition,
    row: models.SchedulerStart,
    *,
    snapshot: models.ClusterSnapshot | None,
    now: datetime,
    earlier: datetime | None = None,
) -> None:
    """Re-arm the timers at the restart *row* and say so in the alert feed (*earlier*: the
    first event's time the restart was first timed by, now corrected by the startTime).
    Before the scheduler recovered its allocations (*snapshot* shows the partition
    empty) nothing is re-armed: the waiting changes wait without a deadline."""
    uuid = row.instance_uuid
    if (
        row.recovered_at is None
        and deadlines.rules_of(partition) == "scheduler"
        and partition_empty(snapshot, row.started_at)
    ):
        if row.awaiting_recovery:
            return  # held and announced already (a start time correcting the first event)
        row.awaiting_recovery = True
        row.save(update_fields=["awaiting_recovery"])
        held = hold_until_recovery(partition, row)
        raise_alert(
            models.Alert.Kind.SCHEDULER_RESTART,
            f"{_restart_words(row)}; time from the {row.source}); the partition answers "
            "empty until the scheduler recovers its nodes and allocations: "
            + (
                f"{len(held)} waiting quota changes wait for it "
                f"({', '.join(c.queue_path for c in held[:10])}), their timers re-armed then"
                if held
                else "timers are re-armed then"
            ),
            level=models.Alert.Level.WARNING,
            partition=partition,
            now=now,
        )
        return
    if row.recovered_at is None:
        # recovered before the first answer after the restart: timed by the start
        row.recovered_at = row.started_at
        row.save(update_fields=["recovered_at"])
    rearmed = rearm_timers(
        partition, row.recovered_at, snapshot=snapshot, instance=uuid, started=row.started_at
    )
    row.rearmed = [
        {"queue": c.queue_path, "change": c.pk, "deadline": epoch(c.deadline)}
        for c in rearmed
        if c.deadline is not None
    ]
    row.save(update_fields=["rearmed"])
    listed = ", ".join(
        f"{c.queue_path} until {format_datetime(c.deadline)}" for c in rearmed[:10]
    ) + (f" and {len(rearmed) - 10} more" if len(rearmed) > 10 else "")
    corrected = (
        f", before its first event at {format_datetime(earlier)}" if earlier is not None else ""
    )
    message = (
        f"{_restart_words(row)}; time "
        f"from the {row.source}{corrected}); rule set {partition.timer_rules}: "
        + (
            f"{len(rearmed)} quota preemption timers re-armed: {listed}"
            if rearmed
            else "no queue is above its max with a delay: no timer re-armed"
        )
    )
    if earlier is not None:
        # the restart was announced when its events came first: that entry is corrected
        # (one alert per restart), not joined by a second one
        announced = models.Alert.objects.filter(
            kind=models.Alert.Kind.SCHEDULER_RESTART,
            partition=partition,
            message__contains=f"(instance {uuid}; time from the {FROM_FIRST_EVENT})",
        ).order_by("-id")
        first = announced.first()
        if first is not None:
            first.message = message
            first.save(update_fields=["message"])
            return
    raise_alert(
        models.Alert.Kind.SCHEDULER_RESTART,
        message,
        level=models.Alert.Level.WARNING,
        partition=partition,
        now=now,
    )


def _restart_words(row: models.SchedulerStart, uuid: str | None = None) -> str:
    """The start of a restart alert's message: when, and which instance (*uuid*, else the
    row's; "not named yet" while no events batch has named it)."""
    instance = (row.instance_uuid if uuid is None else uuid) or UNNAMED_INSTANCE
    return f"the scheduler restarted at {format_datetime(row.started_at)} (instance {instance}"


def _name_the_instance(partition: models.Partition, row: models.SchedulerStart) -> None:
    """A restart announced from the startTime alone, before an events batch named its
    instance: its alert names the instance now."""
    if not row.is_restart:
        return
    unnamed = _restart_words(row, uuid="")
    alert = (
        models.Alert.objects.filter(
            kind=models.Alert.Kind.SCHEDULER_RESTART,
            partition=partition,
            message__startswith=unnamed,
        )
        .order_by("-id")
        .first()
    )
    if alert is not None:
        alert.message = _restart_words(row) + alert.message[len(unnamed) :]
        alert.save(update_fields=["message"])


def note_start_time(
    partition: models.Partition,
    start_time: datetime,
    *,
    now: datetime,
    instance: str = "",
    snapshot: models.ClusterSnapshot | None = None,
) -> models.SchedulerStart | None:
    """The scheduler's ``startTime`` (``/ws/v1/clusters``) read on its own, after the events
    of the same poll (*instance*: the ``InstanceUUID`` they showed, if any).

    The start time is the better clock: an instance stored from its first event gets its
    start (earlier, and after the previous instance's), and at a restart the timers are
    re-armed from it. A start time no instance has is a new instance
    (:func:`note_scheduler_instance`: a restart when later than the latest), whose
    ``InstanceUUID`` a later events batch names. Runs inside the caller's transaction;
    returns the row stored or corrected (None: known already).
    """
    known = models.SchedulerStart.objects.filter(partition=partition)
    if known.filter(started_at=start_time).exists():
        return None
    row = known.filter(instance_uuid=instance[:100]).first() if instance else None
    if row is None or start_time > row.started_at:
        # an instance the events have not named yet (their batch failing or behind)
        return note_scheduler_instance(
            partition, None, now=now, start_time=start_time, snapshot=snapshot
        )
    if row.source != FROM_FIRST_EVENT:
        return None  # older than the instance the events name: not a new one
    before = known.filter(started_at__lt=row.started_at).exclude(pk=row.pk)
    if before.filter(started_at__gte=start_time).exists():
        return None  # not this instance's start: an older one's is as late
    earlier = row.started_at
    row.started_at = start_time
    row.source = FROM_START_TIME
    if row.recovered_at == earlier:
        row.recovered_at = None  # it was timed by the first event: by the start now
    row.save(update_fields=["started_at", "source", "recovered_at"])
    if row.is_restart:
        _rearm_and_announce(partition, row, snapshot=snapshot, now=now, earlier=earlier)
    return row


def hold_until_recovery(
    partition: models.Partition, row: models.SchedulerStart
) -> list[models.QuotaChange]:
    """The waiting changes of *partition* at a restart seen before its recovery: still
    waiting, with no deadline (the scheduler holds no timer until it recovers the
    allocations; the dashboard's sweep fires none meanwhile)."""
    held = list(
        models.QuotaChange.objects.select_for_update().filter(
            partition=partition, state=State.WAITING
        )
    )
    for change in held:
        change.deadline = None
        change.reason = (
            f"the scheduler restarted at {format_datetime(row.started_at)}: its timer is "
            "re-armed when it recovers the queue's allocations (the partition answers empty "
            "until then)"
        )
        change.save(update_fields=["deadline", "reason", "updated_at"])
    return held


def rearm_timers(
    partition: models.Partition,
    restarted_at: datetime,
    *,
    snapshot: models.ClusterSnapshot | None = None,
    instance: str = "",
    started: datetime | None = None,
) -> list[models.QuotaChange]:
    """Re-arm every queue's timer at a scheduler restart by the partition's rule set;
    the waiting changes (new or moved) it leaves.

    *restarted_at* is when the timers re-arm from (the recovery), *started* when the new
    scheduler instance started (default: *restarted_at*). A change whose timer fired in
    the dashboard at or after that start was a prediction of a timer the scheduler lost
    in its restart: it is closed (:func:`_close_moot_predictions`), so that a queue has
    one open change, the one holding the re-armed timer."""
    snap = snapshot or latest_snapshot(partition, defer_state=True)
    if snap is None:
        return []
    models.Partition.objects.select_for_update().filter(pk=partition.pk).first()
    rows = list(snap.queues.all())
    in_force = settings_by_queue(partition, snap, rows)
    active = {
        c.queue_path: c
        for c in models.QuotaChange.objects.select_for_update().filter(
            partition=partition, state__in=models.QuotaChange.ACTIVE_STATES
        )
    }
    rules = deadlines.rules_of(partition)
    config = latest_config(partition)
    out: list[models.QuotaChange] = []
    for row in sorted(rows, key=lambda q: (-q.depth, q.path)):
        current = in_force[row.path]
        change = active.get(row.path)
        if change is not None and change.state == State.RUNNING:
            continue  # the dashboard's own predicted run: it completes as predicted
        # a queue's own timer runs on its change's max (a planned change's prediction
        # too); a queue without one is re-armed on the scheduler's max in force
        facts = timers.QueueFacts(
            max=change.new_max if change is not None else current.max,
            # the usage the scheduler recovers: allocated under rule set scheduler
            usage=row_timer_usage(row, rules),
            delay=change.delay if change is not None else current.delay,
            enabled=partition.quota_preemption_enabled,
            dynamic=current.is_dynamic,
        )
        step = timers.rearm_after_restart(
            deadlines.state_of(change), epoch(restarted_at), facts, rules=rules
        )
        deadline = deadlines.deadline_of(step)
        words = f"re-armed at the scheduler's restart at {format_datetime(restarted_at)}"
        if deadline is not None and change is not None:
            if change.cause == models.QuotaChange.Cause.RESTART:
                change.changed_at = restarted_at  # re-armed again: from this restart time
            change.deadline = deadline
            change.deadline_reason = deadlines.reason_of(step)
            change.reason = (
                f"{words} (rule set {rules}): quota preemption fires at "
                f"{format_datetime(deadline)} (delay {change.delay:g}s)"
            )
            change.save(
                update_fields=["changed_at", "deadline", "deadline_reason", "reason", "updated_at"]
            )
            out.append(change)
        elif deadline is not None:
            out.append(
                models.QuotaChange.objects.create(
                    partition=partition,
                    queue_path=row.path,
                    depth=row.depth,
                    cause=models.QuotaChange.Cause.RESTART,
                    old_max=current.max,
                    new_max=current.max,
                    old_delay=current.delay,
                    delay=current.delay,
                    state=State.WAITING,
                    changed_at=restarted_at,
                    clock_source=models.QuotaChange.ClockSource.EVENT,
                    clock_detail=f"scheduler restart (instance {instance})"[:255],
                    learned=True,
                    applied_at=restarted_at,
                    deadline=deadline,
                    deadline_reason=deadlines.reason_of(step),
                    reason=(
                        f"{words} (rule set {rules}): usage above the max, quota preemption "
                        f"fires at {format_datetime(deadline)} (delay {current.delay:g}s)"
                    ),
                    config_version=config,
                    snapshot=snap,
                )
            )
        elif change is not None and change.state == State.WAITING:
            change.state = State.DONE
            change.finished_at = restarted_at
            change.reason = (
                f"the scheduler's restart at {format_datetime(restarted_at)} lost the timer: "
                f"{step.note}"
            )
            change.save(update_fields=["state", "finished_at", "reason", "updated_at"])
    _close_moot_predictions(partition, started or restarted_at, out)
    return out


def _close_moot_predictions(
    partition: models.Partition, started: datetime, holders: list[models.QuotaChange]
) -> list[models.QuotaChange]:
    """Close the changes whose timer fired in the dashboard at or after the scheduler
    instance *started*: the scheduler lost that timer in its restart and never fired it
    there, so the prediction awaits nothing. Each names the restart and the change that
    holds its queue's re-armed timer (*holders*; ``superseded_by``), if any."""
    by_queue = {c.queue_path: c for c in holders}
    moot = list(
        models.QuotaChange.objects.select_for_update().filter(
            partition=partition, state=State.FIRED, started_at__gte=started
        )
    )
    for change in moot:
        holder = by_queue.get(change.queue_path)
        change.state = State.DONE
        change.finished_at = started
        change.superseded_by = holder
        change.reason = (
            f"the scheduler restarted at {format_datetime(started)}, before this timer fired "
            "there, and lost it: the dashboard's prediction will not happen; "
            + (
                f"the re-armed timer is change {holder.pk}'s"
                if holder is not None
                else "no timer was re-armed (the queue is within its max at the recovery)"
            )
        )
        change.save(update_fields=["state", "finished_at", "superseded_by", "reason", "updated_at"])
    return moot
