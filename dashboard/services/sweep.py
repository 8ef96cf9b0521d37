"""The periodic sweep: check the waiting quota changes (fire, hold or clear them, in the
partition's rule set) and give stale runs another go."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Q

from dashboard import models
from dashboard.display import format_datetime
from dashboard.plumbing.clock import epoch, utcnow
from dashboard.services.alerts import raise_alert
from dashboard.services.quota import deadlines
from dashboard.services.quota.queue_settings import timer_usage
from dashboard.services.runs.execution import execute_run
from dashboard.services.runs.requests import enqueue_run
from dashboard.services.scope.latest import latest_snapshot
from engine import timers

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SweepReport:
    fired: tuple[int, ...]
    recovered: tuple[int, ...]


def sweep_due_changes(now: datetime | None = None) -> SweepReport:
    """One check of every waiting quota change, in each partition's rule set; recover
    stale runs.

    Rule set ``scheduler`` (engine.md 5.1, "Tick"): the scheduler's check, once per
    sweep, over each partition's waiting and running changes with
    :func:`engine.timers.tick_queues`: top down from the root, a running queue hides
    its subtree (a parent and child due together: the parent runs, the child waits
    for it), a waiting change whose queue is within its max (the scheduler's
    *allocated*) is cleared, due or not, and nothing happens while the partition's
    flag is off.  Rule set ``seed`` (engine.md 5): the due changes, deepest first,
    then by path.

    Safe to run concurrently (row locks, conditional updates and the constraints
    decide who wins) and after any restart: a deadline that passed while nothing
    ran fires now.
    """
    now = now or utcnow()
    recovered = recover_stale_runs(now)
    fired: list[int] = []
    partitions = models.Partition.objects.filter(
        changes__state=models.QuotaChange.State.WAITING
    ).exclude(timer_rules="seed")
    for partition in partitions.distinct().order_by("id"):
        for change_id in check_partition(partition, now):
            run_id = claim_change(change_id, now)
            if run_id is None:
                continue
            execute_run(run_id, now=now)
            fired.append(change_id)
    due = list(
        models.QuotaChange.objects.filter(
            state=models.QuotaChange.State.WAITING,
            deadline__lte=now,
            partition__timer_rules="seed",
        )
        .order_by("-depth", "queue_path", "deadline", "id")
        .values_list("pk", flat=True)
    )
    for change_id in due:
        run_id = claim_change(change_id, now)
        if run_id is None:
            continue
        execute_run(run_id, now=now)
        fired.append(change_id)
    return SweepReport(tuple(fired), tuple(recovered))


def check_partition(partition: models.Partition, now: datetime) -> list[int]:
    """The scheduler's check of *partition*'s waiting changes at *now* (rule set
    ``scheduler``): clears those whose queue is within its max, returns those to fire,
    in the walk's order (claim each with :func:`claim_change`)."""
    active = list(
        models.QuotaChange.objects.filter(
            partition=partition,
            state__in=(models.QuotaChange.State.WAITING, models.QuotaChange.State.RUNNING),
        ).order_by("changed_at", "id")
    )
    snapshot = latest_snapshot(partition, defer_state=True)
    states: dict[str, timers.TimerState] = {}
    facts: dict[str, timers.QueueFacts] = {}
    waiting: dict[str, models.QuotaChange] = {}
    for change in active:  # the latest of a queue wins
        states[change.queue_path] = deadlines.state_of(change)
        if change.state == models.QuotaChange.State.RUNNING:
            waiting.pop(change.queue_path, None)
            continue
        waiting[change.queue_path] = change
        source = snapshot or change.snapshot
        usage = timer_usage(source, change.queue_path, "scheduler") if source else None
        if usage is None:
            continue  # nothing known of the queue: the claim decides (and says so)
        facts[change.queue_path] = timers.QueueFacts(
            max=change.new_max,
            usage=usage,
            delay=change.delay,
            enabled=partition.quota_preemption_enabled,
        )
    due: list[int] = []
    at = epoch(now)
    for path, decision in timers.tick_queues(states, facts, at, rules="scheduler"):
        checked = waiting.get(path)
        if checked is None:
            continue
        if decision.action == "start_preemption":
            due.append(checked.pk)
        elif decision.action == "cancelled" and snapshot is not None:
            clear_change(checked, snapshot, now, decision.note)
    for path, change in waiting.items():
        if path not in facts and change.deadline is not None and change.deadline <= now:
            due.append(change.pk)  # no snapshot: the claim fails it with the reason
    return due


def clear_change(
    change: models.QuotaChange, snapshot: models.ClusterSnapshot, now: datetime, note: str
) -> bool:
    """The scheduler's check cleared *change*'s timer: its queue is within the max, due
    or not (engine.md 5.1).  The change is ``cleared`` (its max stays in force, nothing is
    preempted); a later rise above the max starts a new timer from the rise.  A change
    only planned here is cleared too: that is the dashboard's prediction, and its reason
    says so.  False when it was no longer waiting."""
    planned = (
        "; planned here, not applied in the cluster: the clearing is the dashboard's prediction"
        if change.is_planned
        else ""
    )
    cleared = models.QuotaChange.objects.filter(
        pk=change.pk, state=models.QuotaChange.State.WAITING
    ).update(
        state=models.QuotaChange.State.CLEARED,
        finished_at=now,
        snapshot=snapshot,
        reason=f"timer cleared at the scheduler's check at {format_datetime(now)}: {note}; "
        f"a later rise above the max starts a new timer{planned}",
    )
    if cleared:
        raise_alert(
            models.Alert.Kind.QUOTA,
            f"{change.queue_path}: the timer of quota change {change.pk} was cleared before "
            f"it fired: {note}",
            level=models.Alert.Level.INFO,
            partition=change.partition,
            queue=change.queue_path,
            change=change,
            now=now,
        )
    return bool(cleared)


def _settle_waiting(
    change: models.QuotaChange,
    snapshot: models.ClusterSnapshot,
    now: datetime,
    *,
    reason: str,
    alert: str,
    **times: datetime,
) -> bool:
    """Settle *change* if still waiting: an applied one is done, a planned one fired (the
    cluster has not shown it yet); an info alert on its queue says *alert*.  *times* are
    further timestamps to set (``started_at``).  False when it was no longer waiting."""
    planned = change.is_planned
    done = models.QuotaChange.objects.filter(
        pk=change.pk, state=models.QuotaChange.State.WAITING
    ).update(
        state=models.QuotaChange.State.FIRED if planned else models.QuotaChange.State.DONE,
        **times,
        finished_at=now,
        snapshot=snapshot,
        reason=reason + ("; planned, awaiting the scheduler" if planned else ""),
    )
    if done:
        raise_alert(
            models.Alert.Kind.QUOTA,
            f"{change.queue_path}: {alert}",
            level=models.Alert.Level.INFO,
            partition=change.partition,
            queue=change.queue_path,
            change=change,
            now=now,
        )
    return bool(done)


def claim_change(change_id: int, now: datetime) -> int | None:
    """Claim one due change (waiting -> running) and create its enforcement run."""
    try:
        with transaction.atomic():
            qs = models.QuotaChange.objects.filter(
                pk=change_id, state=models.QuotaChange.State.WAITING, deadline__lte=now
            )
            if connection.features.has_select_for_update_skip_locked:
                qs = qs.select_for_update(skip_locked=True)
            else:  # SQLite: BEGIN IMMEDIATE already serializes writers
                qs = qs.select_for_update()
            change = qs.select_related("partition").first()
            if change is None:
                return None
            ancestor_running = models.QuotaChange.objects.filter(
                partition=change.partition,
                state=models.QuotaChange.State.RUNNING,
                queue_path__in=list(timers.ancestor_paths(change.queue_path)),
            ).exists()
            snapshot = latest_snapshot(change.partition, defer_state=True) or change.snapshot
            if snapshot is None:
                models.QuotaChange.objects.filter(pk=change.pk).update(
                    state=models.QuotaChange.State.FAILED,
                    finished_at=now,
                    reason="no cluster snapshot to evaluate the change against",
                )
                raise_alert(
                    models.Alert.Kind.TIMER,
                    f"{change.queue_path}: change {change.pk} is due but the partition has no "
                    "snapshot; import one and schedule the change again",
                    level=models.Alert.Level.ERROR,
                    partition=change.partition,
                    queue=change.queue_path,
                    change=change,
                    now=now,
                )
                return None
            assert change.deadline is not None  # waiting rows always have one
            step = deadlines.step(
                change.partition,
                deadlines.state_of(change),
                timers.Tick(
                    max=change.new_max,
                    usage=timer_usage(
                        snapshot, change.queue_path, deadlines.rules_of(change.partition)
                    ),
                    delay=change.delay,
                    enabled=change.partition.quota_preemption_enabled,
                    ancestor_running=ancestor_running,
                ),
                now,
            )
            if step.action in ("none", "skipped_ancestor_running") or step.state.is_waiting:
                # not due, an ancestor's preemption runs, or (rule set scheduler) the
                # partition's flag is off: the timer waits for a later sweep
                return None
            if step.action == "cancelled" and deadlines.rules_of(change.partition) == "scheduler":
                clear_change(change, snapshot, now, step.note)
                return None
            if step.action != "start_preemption":
                # an applied change is settled by the scheduler's own snapshot; a planned
                # one only fired here: the cluster has not shown it yet
                _settle_waiting(
                    change,
                    snapshot,
                    now,
                    reason=f"fired without preemption: {step.note}",
                    alert=f"quota change {change.pk} fired without preemption: {step.note}",
                    started_at=now,
                )
                return None
            run = models.PreemptionRun.objects.create(
                partition=change.partition,
                snapshot=snapshot,
                kind=models.PreemptionRun.Kind.QUOTA_ENFORCEMENT,
                trigger=models.PreemptionRun.Trigger.TIMER,
                status=models.PreemptionRun.Status.PENDING,
                queue=change.queue_path,
                request={
                    "change": change.pk,
                    "queue": change.queue_path,
                    "new_max": change.new_max,
                },
                idempotency_key=f"quota-change-{change.pk}",
                created_by=change.created_by,
                # the prediction sits in history when its timer fired, not when the sweep
                # (or the import of an old snapshot) got to it
                queued_at=change.deadline,
            )
            claimed = models.QuotaChange.objects.filter(
                pk=change.pk, state=models.QuotaChange.State.WAITING
            ).update(state=models.QuotaChange.State.RUNNING, started_at=change.deadline, run=run)
            if claimed != 1:
                transaction.set_rollback(True)
                return None
            return run.pk
    except IntegrityError:
        logger.info("change %s not claimed: lost a race", change_id)
        return None


def recover_stale_runs(now: datetime) -> list[int]:
    """Runs whose worker vanished (lease expired) or whose message was lost get another go."""
    requeue_before = now - timedelta(seconds=settings.DASHBOARD_RUN_REQUEUE_SECONDS)
    pending = Q(status=models.PreemptionRun.Status.PENDING, queued_at__lt=requeue_before) & (
        Q(lease_until__isnull=True) | Q(lease_until__lt=now)
    )
    stale = list(
        models.PreemptionRun.objects.filter(
            Q(status=models.PreemptionRun.Status.RUNNING, lease_until__lt=now) | pending
        )
        .order_by("queued_at", "id")
        .values_list("pk", "kind", "status")
    )
    out: list[int] = []
    for run_id, kind, status in stale:
        out.append(run_id)
        if status == models.PreemptionRun.Status.PENDING:
            # for a pending run, lease_until is "not re-sent again before"
            models.PreemptionRun.objects.filter(pk=run_id, status=status).update(
                lease_until=now + timedelta(seconds=settings.DASHBOARD_RUN_REQUEUE_SECONDS)
            )
        if kind == models.PreemptionRun.Kind.QUOTA_ENFORCEMENT:
            execute_run(run_id, now=now)
        else:
            enqueue_run(run_id)
    return out
