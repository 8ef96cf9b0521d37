"""The quota preemption delay timers of engine.md section 5, applied to stored changes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from django.db import IntegrityError, transaction

from dashboard import models
from dashboard.display import format_datetime, format_resource, outcome_words
from dashboard.plumbing.clock import epoch, from_epoch, utcnow
from dashboard.services.alerts import raise_alert
from dashboard.services.quota import deadlines
from dashboard.services.quota.enforcement import settle_fired
from dashboard.services.quota.queue_settings import (
    QueueSettings,
    row_timer_usage,
    settings_by_queue,
    settings_for_paths,
    timer_usage,
)
from dashboard.services.quota.scheduler_clock import (
    Clock,
    ClusterClock,
    timer_clock,
    what_the_cluster_did,
)
from dashboard.services.scope.latest import latest_config, latest_snapshot
from engine import timers

if TYPE_CHECKING:
    from dashboard.services.runs.compute import RunAnswer


@dataclass(frozen=True, slots=True)
class ChangeDecision:
    """Where a newly saved change goes, and what happens to the queue's active one."""

    state: str
    deadline: datetime | None
    reason: str
    previous: str | None
    """New state of the queue's waiting change (``reset``/``cancelled_by_increase``), if any."""
    action: str
    """The ``engine.timers`` action behind the decision."""
    deadline_reason: dict[str, object] = field(default_factory=dict)
    """The engine's reason for the deadline (``DeadlineReason.to_dict()``)."""


def exceeds(usage: Mapping[str, int] | None, limit: Mapping[str, int] | None) -> bool:
    """Usage above *limit* in some type of the limit (undefined max types are unlimited)."""
    return timers.exceeds_max(usage, limit)


def _above(limit: Mapping[str, int] | None) -> dict[str, int]:
    return {t: q + 1 for t, q in (limit or {}).items()}


def decide_change(
    *,
    active: models.QuotaChange | None,
    quota_preemption_enabled: bool,
    old_delay: float,
    delay: float,
    old_max: Mapping[str, int] | None,
    new_max: Mapping[str, int] | None,
    usage: Mapping[str, int] | None,
    is_dynamic: bool,
    queue: str,
    now: datetime,
    rules: timers.RuleSet = timers.DEFAULT_RULES,
) -> ChangeDecision:
    """The partition's timer rules (*rules*, ``engine.timers``) for one saved change.

    Under ``scheduler`` (engine.md 5.1) a further decrease keeps the first start, a
    delay change shifts the deadline by new - old, a raise keeps the timer; under
    ``seed`` (engine.md 5) a further change resets it from the change and a purely
    looser max cancels it. Under both, a change arriving while a quota preemption
    runs is skipped, and with the flag off or a zero delay no timer starts.
    """
    state = deadlines.state_of(active)
    event = timers.ConfigChanged(
        old_max=old_max,
        old_delay=old_delay,
        max=new_max,
        # unknown usage (no snapshot yet): assume the max is exceeded; the tick re-checks
        usage=usage if usage is not None else _above(new_max),
        delay=delay,
        enabled=quota_preemption_enabled,
        dynamic=is_dynamic,
    )
    step = deadlines.step(rules, state, event, now)
    was_waiting = state.is_waiting
    states = models.QuotaChange.State
    if step.action == "skipped_running":
        return ChangeDecision(
            states.SKIPPED,
            None,
            f"a quota preemption is running for {queue}: this change is recorded and "
            "skipped; it is re-checked when the running preemption finishes",
            None,
            step.action,
        )
    deadline = deadlines.deadline_of(step)
    if deadline is not None:
        verb = {
            "reset": "timer reset from the change time",
            "kept": "timer kept from the first decrease",
            "shifted": "timer shifted by the delay change",
            "kept_across_raise": "timer kept across the raise",
        }.get(step.action, "timer started")
        above = (
            "usage exceeds the new max"
            if usage is not None
            else "usage not known yet (no snapshot): taken as above the new max"
        )
        return ChangeDecision(
            states.WAITING,
            deadline,
            f"{verb}: {above}, quota preemption fires at "
            f"{format_datetime(deadline)} (delay {delay:g}s; rule set {rules})",
            states.RESET if was_waiting else None,
            step.action,
            deadlines.reason_of(step),
        )
    previous: str | None = None
    if was_waiting:
        previous = (
            states.CANCELLED_BY_INCREASE if step.action == "cancelled_by_increase" else states.RESET
        )
    return ChangeDecision(states.DONE, None, f"no timer: {step.note}", previous, step.action)


def snapshot_arrived(
    partition: models.Partition,
    snapshot: models.ClusterSnapshot,
    *,
    now: datetime | None = None,
    queues: Sequence[models.SnapshotQueue] | None = None,
) -> list[models.QuotaChange]:
    """What a newly stored snapshot settles and starts: changes whose timer fired in the
    dashboard that the snapshot shows within their max are done (the scheduler's report,
    :func:`settle_fired`), then the timers of usage rises (:func:`start_usage_timers`,
    whose changes are returned)."""
    settle_fired(partition)
    return start_usage_timers(partition, snapshot, now=now, queues=queues)


def start_usage_timers(
    partition: models.Partition,
    snapshot: models.ClusterSnapshot,
    *,
    now: datetime | None = None,
    queues: Sequence[models.SnapshotQueue] | None = None,
) -> list[models.QuotaChange]:
    """Start the timer of every queue whose usage rose above its max in *snapshot*.

    engine.md section 5, "usage rises above the max while idle and the delay is > 0
    -> waiting(now + delay)", applied when a snapshot arrives: a queue with no active
    change whose usage in this snapshot exceeds the max in force, where the partition's
    previous snapshot did not, gets a
    waiting change with ``cause=usage_rose`` (the max itself is unchanged) and a
    warning in the alert feed; where the max in force is one the cluster lowered (a
    QUEUE_MAX event, a dynamic queue's snapshot max), the change is that lowering
    (``cause=change``, learned, its previous max; :func:`cluster_lowering`). The timer
    starts when the scheduler's did, where the
    snapshot reports it (``ClusterSnapshot.scheduler_timers``), else at the snapshot's
    capture time (its "now": the latest the rise can have happened), never at the
    import: an old state dump gets a deadline in the past. Usage is the one the partition's
    rule set tests (:func:`row_timer_usage`: under ``scheduler`` the scheduler's allocated,
    the allocations being preempted included, in this snapshot and the previous one);
    the partition's first snapshot, with nothing before it to rise from, counts the
    allocations being preempted as gone. ``now`` is when the
    dashboard saw the rise (the alert's time). A snapshot older than the partition's
    latest starts nothing, and nor does a queue that was already above its max (it
    rose earlier; nothing new happened).

    Runs inside the caller's transaction; the partition row is locked like a change.
    *queues* are the snapshot's queue rows when the caller has them (the import that
    has just written them; a thousand queues are then not read back twice).
    """
    now = now or utcnow()
    models.Partition.objects.select_for_update().filter(pk=partition.pk).first()
    partition.refresh_from_db(fields=["quota_preemption_enabled"])
    if not partition.quota_preemption_enabled:
        return []
    if latest_snapshot(partition, defer_state=True) != snapshot:
        return []
    previous = (
        partition.snapshots.exclude(pk=snapshot.pk)
        .filter(captured_at__lte=snapshot.captured_at)
        .order_by("-captured_at", "-id")
        .first()
    )
    active = set(
        models.QuotaChange.objects.filter(
            partition=partition, state__in=models.QuotaChange.ACTIVE_STATES
        ).values_list("queue_path", flat=True)
    )
    rows = list(snapshot.queues.all()) if queues is None else list(queues)
    in_force = settings_by_queue(partition, snapshot, rows)
    config = latest_config(partition)
    rules = deadlines.rules_of(partition)
    started: list[models.QuotaChange] = []
    for row in sorted(rows, key=lambda q: (-q.depth, q.path)):
        current = in_force[row.path]
        if row.path in active or current.max is None or current.delay <= 0:
            continue
        # the usage the scheduler tests its max against (rule set scheduler: allocated,
        # the allocations being preempted included; seed: U(Q)). With no snapshot before
        # this one, the rise is a guess: allocations being preempted are then taken as on
        # their way out (a preemption under way arms no new timer), not as risen now
        usage = row_timer_usage(row, rules if previous is not None else "seed")
        clock = timer_clock(snapshot, row.path) or ClusterClock(
            snapshot.captured_at, Clock.CAPTURE, f"snapshot {snapshot.pk}"
        )
        step = deadlines.step(
            partition,
            timers.TimerState.idle(),
            timers.UsageRose(
                max=current.max,
                usage=usage,
                delay=current.delay,
                enabled=True,
                dynamic=current.is_dynamic,
            ),
            clock.at,
        )
        if step.action != "start_wait" or step.state.deadline is None:
            continue
        before = timer_usage(previous, row.path, rules) if previous is not None else None
        if before is not None and exceeds(before, current.max):
            continue  # already above in the previous snapshot: it did not rise now
        deadline = from_epoch(step.state.deadline)
        over = over_types(usage, current.max)
        lowered = cluster_lowering(partition, row.path, current, previous)
        over_in = f"{over_words(usage, current.max)} in snapshot {snapshot.pk}"
        started_at = f"timer started {format_datetime(clock.at)} ({Clock(clock.source).label})"
        fires = f"quota preemption fires at {format_datetime(deadline)} (delay {current.delay:g}s)"
        try:
            with transaction.atomic():
                change = models.QuotaChange.objects.create(
                    partition=partition,
                    queue_path=row.path,
                    depth=row.depth,
                    cause=(
                        models.QuotaChange.Cause.USAGE_ROSE
                        if lowered is None
                        else models.QuotaChange.Cause.CHANGE
                    ),
                    old_max=current.max if lowered is None else lowered.old_max,
                    new_max=current.max,
                    old_delay=current.delay,
                    delay=current.delay,
                    state=models.QuotaChange.State.WAITING,
                    changed_at=clock.at,
                    clock_source=clock.source,
                    clock_detail=clock.detail[:255],
                    applied_at=clock.at,
                    learned=lowered is not None,
                    deadline=deadline,
                    deadline_reason=deadlines.reason_of(step),
                    reason=(
                        f"{started_at}: {over_in}; {fires}"
                        if lowered is None
                        # what the cluster did first: a retiming keeps it (retime)
                        else f"{lowered.words(current.max)}; {over_in}; {started_at}: {fires}"
                    ),
                    config_version=config,
                    snapshot=snapshot,
                )
        except IntegrityError:  # a change for the queue was saved meanwhile: it decides
            continue
        what = (
            f"usage {format_resource(usage)} rose above the max"
            if lowered is None
            else f"{lowered.words(current.max)}: usage {format_resource(usage)} is above the max"
        )
        raise_alert(
            models.Alert.Kind.TIMER,
            f"{row.path}: {what} "
            f"{format_resource(current.max)} (over in {', '.join(over)}) in snapshot "
            f"{snapshot.pk}; quota "
            f"preemption fires at {format_datetime(deadline)} (change {change.pk}; timer from "
            f"{Clock(clock.source).label}) unless usage falls within the max or the max is "
            "raised first",
            partition=partition,
            queue=row.path,
            change=change,
            now=now,
        )
        started.append(change)
    return started


def over_types(usage: Mapping[str, int], limit: Mapping[str, int] | None) -> list[str]:
    """The types of *limit* that *usage* is above (sorted): only those are "over".

    >>> over_types({"gpu": 7, "vcore": 3000}, {"gpu": 6, "vcore": 8000})
    ['gpu']
    """
    return sorted(t for t, q in (limit or {}).items() if usage.get(t, 0) > q)


def over_words(usage: Mapping[str, int], limit: Mapping[str, int] | None) -> str:
    """The types *usage* is over *limit* in, with both figures ("" when within).

    >>> over_words({"gpu": 7, "vcore": 3000}, {"gpu": 6, "vcore": 8000})
    'usage over the max in gpu (gpu 7 against gpu 6)'
    """
    over = over_types(usage, limit)
    if not over or limit is None:
        return ""
    return (
        f"usage over the max in {', '.join(over)} "
        f"({format_resource({t: usage.get(t, 0) for t in over})} against "
        f"{format_resource({t: limit[t] for t in over})})"
    )


@dataclass(frozen=True, slots=True)
class ClusterLowering:
    """A max the cluster lowered (not a change made in the dashboard): its previous max,
    when the dashboard knows it (``known``), and what told it (``source``)."""

    old_max: Mapping[str, int] | None
    known: bool
    source: str

    def lowered_types(self, new_max: Mapping[str, int] | None) -> list[str]:
        """The types of *new_max* below the previous max (every type when it is unknown)."""
        if not self.known:
            return sorted(new_max or {})
        old = self.old_max
        return sorted(
            t for t, q in (new_max or {}).items() if old is None or t not in old or q < old[t]
        )

    def words(self, new_max: Mapping[str, int] | None) -> str:
        """What the cluster did, for the change's reason and its alert."""
        types = ", ".join(self.lowered_types(new_max))
        if not self.known:
            return (
                f"the cluster's max is {format_resource(new_max)} ({self.source}); the previous "
                f"max is unknown, so which of {types} it lowered is not known"
            )
        return (
            f"the cluster lowered the max of {types} "
            f"({format_resource(self.old_max)} -> {format_resource(new_max)}; {self.source})"
        )


def cluster_lowering(
    partition: models.Partition,
    path: str,
    current: QueueSettings,
    previous: models.ClusterSnapshot | None,
) -> ClusterLowering | None:
    """Whether the max in force, *current*, is one the cluster lowered: the scheduler's
    QUEUE_MAX event (``source == "observed"``), or the snapshot's own max of a queue the
    config does not know, below the previous snapshot's. None when it is not (the config's
    max or a change's, or a snapshot max the previous snapshot had too): usage rose.

    The previous max is the one before the queue's latest QUEUE_MAX event (the event before
    it, else the config's or the changes'), or the previous snapshot's; ``known`` is False
    when nothing distinct is known (the event's max is already the config's, the dashboard
    never saw the queue before)."""
    if current.source == "observed":
        events = list(
            models.ObservedMaxChange.objects.filter(partition=partition, queue=path)
            .order_by("-time", "-event_id")
            .values_list("new_max", flat=True)[:2]
        )
        if len(events) == 2:
            old: Mapping[str, int] | None = events[1] or None
        else:
            old = settings_for_paths(partition, [path], observed=False)[path].max
        source = "the scheduler's QUEUE_MAX event"
        if old == current.max:
            return ClusterLowering(None, False, source)
        lowering = ClusterLowering(old, True, source)
        return lowering if lowering.lowered_types(current.max) else None
    if current.source == "snapshot" and previous is not None:
        before = previous.queues.filter(path=path).only("max").first()
        if before is None or before.max == current.max:
            return None
        lowering = ClusterLowering(before.max, True, f"snapshot {previous.pk} had the old max")
        return lowering if lowering.lowered_types(current.max) else None
    return None


def complete_change(
    run: models.PreemptionRun, answer: RunAnswer, finished: datetime
) -> models.QuotaChange | None:
    """Mark the change of a finished enforcement run fired; re-check changes skipped meanwhile.

    The run is the dashboard's prediction: the change is ``fired`` (awaiting the
    scheduler), never ``done``, and the max in force, usage and the change's applied
    time stay as they are. Only the scheduler settles it: its observed quota
    preemption, or a later snapshot showing the queue within the change's max once the
    config in force has it (:func:`dashboard.services.quota.enforcement.settle_fired`).

    Returns the change (None when no running change belongs to the run).
    """
    change = models.QuotaChange.objects.filter(
        run=run, state=models.QuotaChange.State.RUNNING
    ).first()
    if change is None:
        return None
    change.state = models.QuotaChange.State.FIRED
    change.finished_at = finished
    did = what_the_cluster_did(change.reason)  # a learned lowering keeps saying so
    change.reason = (f"{did}; " if did else "") + (
        f"timer fired in the dashboard: predicted quota preemption, "
        f"{outcome_words(str(answer['outcome']))} ({len(answer['victims'])} victims "
        "predicted; nothing was preempted in the cluster); awaiting the scheduler: its "
        "quota preemption or a later snapshot settles the change"
    )
    if change.is_planned:
        change.reason += (
            "; the change is planned, not applied in the cluster: the max in force there is "
            "whatever the cluster's config says"
        )
    change.save(update_fields=["state", "finished_at", "reason", "updated_at"])
    skipped = (
        models.QuotaChange.objects.filter(
            partition=change.partition,
            queue_path=change.queue_path,
            state=models.QuotaChange.State.SKIPPED,
            changed_at__gte=change.started_at or change.changed_at,
        )
        .order_by("-changed_at", "-id")
        .first()
    )
    if skipped is None or run.snapshot is None:
        return change
    partition = change.partition
    started = change.started_at or change.changed_at
    step = deadlines.step(
        partition,
        timers.TimerState.running(epoch(started), change.new_max),
        timers.Completed(
            max=skipped.new_max,
            usage=timer_usage(run.snapshot, change.queue_path, deadlines.rules_of(partition)),
            delay=skipped.delay,
            enabled=partition.quota_preemption_enabled,
        ),
        finished,
    )
    if step.action == "rewait" and step.state.deadline is not None:
        follow = models.QuotaChange.objects.create(
            partition=partition,
            queue_path=change.queue_path,
            depth=change.depth,
            old_max=change.new_max,
            new_max=skipped.new_max,
            old_delay=change.delay,
            new_delay=skipped.new_delay,
            delay=skipped.delay,
            state=models.QuotaChange.State.WAITING,
            cause=models.QuotaChange.Cause.RECHECK,
            changed_at=finished,
            deadline=from_epoch(step.state.deadline),
            deadline_reason=deadlines.reason_of(step),
            reason=f"re-check of skipped change {skipped.pk}: {step.note}",
            created_by=skipped.created_by,
            config_version=skipped.config_version,
            snapshot=run.snapshot,
        )
        skipped.superseded_by = follow
        skipped.save(update_fields=["superseded_by", "updated_at"])
    return change


def scheduler_order_note(change: models.QuotaChange) -> str:
    """What yunikorn-core would do first when *change* fires in the dashboard before an
    ancestor's timer that was due no later (engine.md 5.1 "Order").

    Under rule set ``seed`` the dashboard's sweep fires every due change deepest first;
    the scheduler walks the tree top down once a second, so it would have started the
    ancestor (due before or within the same second) and held the queues below it back
    while that runs. An ancestor still waiting when *change* fires is exactly that case.
    "" when there is none, and under rule set ``scheduler``, whose sweep walks as the
    scheduler does.
    """
    if change.deadline is None or deadlines.rules_of(change.partition) == "scheduler":
        return ""
    waiting = models.QuotaChange.objects.filter(
        partition=change.partition,
        queue_path__in=list(timers.ancestor_paths(change.queue_path)),
        state=models.QuotaChange.State.WAITING,
        deadline__lt=change.deadline + timedelta(seconds=timers.SCHEDULER_TICK_SECONDS),
    ).values_list("queue_path", "deadline")
    if not waiting:
        return ""
    top, due = min(waiting, key=lambda row: row[0].count("."))
    return (
        f"; {top} was due by then too (at {format_datetime(due)}): the dashboard fires the "
        f"deeper queue first, while yunikorn-core walks the tree top down each second and "
        f"would start {top}'s quota preemption first, holding {change.queue_path} back "
        "while it runs"
    )
