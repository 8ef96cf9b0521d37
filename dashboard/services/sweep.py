"""The periodic sweep: fire due quota changes and give stale runs another go."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Q

from dashboard import models
from dashboard.plumbing.clock import utcnow
from dashboard.services.alerts import raise_alert
from dashboard.services.quota import deadlines
from dashboard.services.quota.queue_settings import queue_usage
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
    """Fire every due quota change once: deepest first, then by path; recover stale runs.

    Safe to run concurrently (row locks, conditional updates and the constraints
    decide who wins) and after any restart: a deadline that passed while nothing
    ran fires now.
    """
    now = now or utcnow()
    recovered = recover_stale_runs(now)
    fired: list[int] = []
    due = list(
        models.QuotaChange.objects.filter(state=models.QuotaChange.State.WAITING, deadline__lte=now)
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
                    usage=queue_usage(snapshot, change.queue_path),
                    delay=change.delay,
                    enabled=change.partition.quota_preemption_enabled,
                    ancestor_running=ancestor_running,
                ),
                now,
            )
            if step.action in ("none", "skipped_ancestor_running"):
                return None  # an ancestor's preemption runs: this one fires at a later sweep
            if step.action != "start_preemption":
                # an applied change is settled by the scheduler's own snapshot; a planned
                # one only fired here: the cluster has not shown it yet
                planned = change.is_planned
                done = models.QuotaChange.objects.filter(
                    pk=change.pk, state=models.QuotaChange.State.WAITING
                ).update(
                    state=(
                        models.QuotaChange.State.FIRED if planned else models.QuotaChange.State.DONE
                    ),
                    started_at=now,
                    finished_at=now,
                    snapshot=snapshot,
                    reason=f"fired without preemption: {step.note}"
                    + ("; planned, awaiting the scheduler" if planned else ""),
                )
                if done:
                    raise_alert(
                        models.Alert.Kind.QUOTA,
                        f"{change.queue_path}: quota change {change.pk} fired without "
                        f"preemption: {step.note}",
                        level=models.Alert.Level.INFO,
                        partition=change.partition,
                        queue=change.queue_path,
                        change=change,
                        now=now,
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
