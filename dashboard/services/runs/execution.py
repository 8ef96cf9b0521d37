"""Executing a run: claimed by a conditional update with a lease, finished only by the claimant."""

from __future__ import annotations

import contextlib
import logging
import time
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Q

from dashboard import models
from dashboard.display import format_datetime, format_resource, humanize_text, outcome_words
from dashboard.plumbing.clock import utcnow
from dashboard.plumbing.errors import ServiceError
from dashboard.services.alerts import raise_alert
from dashboard.services.quota.timers import complete_change, scheduler_order_note
from dashboard.services.runs.compute import RunAnswer, compute_run
from dashboard.services.runs.observed import link_observed_to
from dashboard.services.snapshots.facts import gang_victims_note
from dashboard.services.snapshots.names import AllocationName, allocation_names
from engine.errors import ScenarioError

logger = logging.getLogger(__name__)


def claim_run(run_id: int, now: datetime) -> models.PreemptionRun | None:
    """Claim a run: pending -> running, or take over a running one whose lease expired."""
    lease = now + timedelta(seconds=settings.DASHBOARD_RUN_LEASE_SECONDS)
    claim = {
        "status": models.PreemptionRun.Status.RUNNING,
        "attempts": F("attempts") + 1,
        "lease_until": lease,
        "started_at": now,
    }
    expired = Q(status=models.PreemptionRun.Status.RUNNING, lease_until__lt=now)
    try:
        with transaction.atomic():
            taken = (
                models.PreemptionRun.objects.filter(pk=run_id)
                .filter(status=models.PreemptionRun.Status.PENDING)
                .update(**claim)
            )
            took_over = False
            if not taken:
                previous = (
                    models.PreemptionRun.objects.filter(pk=run_id)
                    .filter(expired)
                    .values_list("lease_until", flat=True)
                    .first()
                )
                taken = (
                    models.PreemptionRun.objects.filter(pk=run_id).filter(expired).update(**claim)
                )
                took_over = bool(taken)
            if took_over:
                run = models.PreemptionRun.objects.select_related("partition").get(pk=run_id)
                raise_alert(
                    models.Alert.Kind.ENGINE,
                    f"run {run.pk} ({run.kind}{', ' + run.queue if run.queue else ''}) was taken "
                    f"over after its worker stopped (lease expired at "
                    f"{format_datetime(previous, empty='-')}); attempt {run.attempts}",
                    partition=run.partition,
                    queue=run.queue,
                    run=run,
                    now=now,
                )
    except IntegrityError:
        # another quota preemption already runs for this queue: leave it pending
        logger.info("run %s not claimed: a quota preemption runs for its queue", run_id)
        return None
    if not taken:
        return None
    # the snapshot's stored scenario (megabytes for a big cluster) is not read: the run
    # uses the snapshot's cached engine state
    return (
        models.PreemptionRun.objects.select_related("snapshot", "partition")
        .defer("snapshot__scenario")
        .get(pk=run_id)
    )


def execute_run(run_id: int, *, now: datetime | None = None) -> None:
    """Claim, evaluate and store one run; running it twice is harmless.

    A run that is done, or claimed by a live worker (lease not expired), is left
    alone.  The result, victims and alerts are written by one conditional update
    that only succeeds for the claim that computed them, so a redelivered or
    taken-over task never records a second answer or a second set of victims.
    """
    clock_now = now or utcnow()
    run = claim_run(run_id, clock_now)
    if run is None:
        return
    attempt = run.attempts
    delay = settings.DASHBOARD_TEST_TASK_DELAY
    if delay > 0:  # test-only hook: lets an integration test kill the worker mid-task
        logger.warning("DASHBOARD_TEST_TASK_DELAY: run %s sleeps %.1fs", run_id, delay)
        time.sleep(delay)
    enforcing = run.kind == models.PreemptionRun.Kind.QUOTA_ENFORCEMENT
    error = ""
    unexpected: Exception | None = None
    # Quota plans of one partition run one at a time (partition row lock). Each counts the
    # usage its snapshot reports: a prediction preempts nothing in the cluster (issue 24).
    with transaction.atomic() if enforcing else contextlib.nullcontext():
        if enforcing:
            list(
                models.Partition.objects.select_for_update()
                .filter(pk=run.partition_id)
                .values_list("pk", flat=True)
            )
        started = time.perf_counter()
        try:
            answer = compute_run(run)
        except (ServiceError, ScenarioError, models.PendingAsk.DoesNotExist) as exc:
            error = str(exc)
        except Exception as exc:
            error, unexpected = f"{type(exc).__name__}: {exc}", exc
        else:
            engine_ms = (time.perf_counter() - started) * 1000.0
            finish_run(run, attempt, answer, engine_ms, now=now)
    if error:
        fail_run(run, attempt, error, now=now)
    if unexpected is not None:
        raise unexpected


def finish_run(
    run: models.PreemptionRun,
    attempt: int,
    answer: RunAnswer,
    engine_ms: float,
    *,
    now: datetime | None,
) -> bool:
    finished = now or utcnow()
    with transaction.atomic():
        won = models.PreemptionRun.objects.filter(
            pk=run.pk, status=models.PreemptionRun.Status.RUNNING, attempts=attempt
        ).update(
            status=models.PreemptionRun.Status.DONE,
            result=answer["result"],
            outcome=answer["outcome"],
            claimed=answer["claimed"],
            target=answer["target"],
            alerts=answer["alerts"],
            finished_at=finished,
            engine_ms=engine_ms,
            lease_until=None,
            error="",
        )
        if not won:
            transaction.set_rollback(True)
            return False
        models.RunVictim.objects.bulk_create(
            models.RunVictim(
                run=run,
                position=i,
                allocation_key=str(v["allocation_key"]),
                ask=str(v["ask"]),
                app=str(v["app"]),
                queue=str(v["queue"]),
                leaf=str(v["leaf"]),
                node=str(v["node"]),
                resources=v["resources"],
            )
            for i, v in enumerate(answer["victims"])
        )
        if run.kind == models.PreemptionRun.Kind.QUOTA_ENFORCEMENT:
            level = (
                models.Alert.Level.WARNING
                if answer["outcome"] in ("best_effort", "does_not_help")
                else models.Alert.Level.INFO
            )
            for text in answer["alerts"]:
                raise_alert(
                    models.Alert.Kind.QUOTA,
                    humanize_text(text),
                    level=level,
                    partition=run.partition,
                    queue=run.queue,
                    run=run,
                    now=finished,
                )
            change = complete_change(run, answer, finished)
            victims = answer["victims"]
            raise_alert(
                models.Alert.Kind.QUOTA,
                f"{run.queue}: quota change {change.pk if change else '-'} timer fired in the "
                f"dashboard (predicted, nothing was preempted in the cluster): "
                f"{outcome_words(str(answer['outcome']))}, {len(victims)} predicted "
                f"victim{'s' if len(victims) != 1 else ''}"
                + (
                    f" ({victims_named(run.snapshot, victims[:10])}"
                    f"{', ...' if len(victims) > 10 else ''})"
                    if victims
                    else ""
                )
                + gang_victims_note(run.snapshot, (str(v["allocation_key"]) for v in victims))
                + f"; claimed {_quoted(answer['claimed'])} of {_quoted(answer['target'])}"
                + (scheduler_order_note(change) if change else ""),
                level=level,
                partition=run.partition,
                queue=run.queue,
                run=run,
                change=change,
                now=finished,
            )
        # the scheduler's preemption may have been read before this prediction was done
        link_observed_to(run)
    return True


def victims_named(snapshot: models.ClusterSnapshot | None, victims: list[dict[str, object]]) -> str:
    """The victims as an alert names them: pod first, key second, the user last.

    >>> victims_named(None, [{"allocation_key": "alloc-1"}])
    'alloc-1'
    """
    keys = [str(v["allocation_key"]) for v in victims]
    names = allocation_names(snapshot, keys)
    return ", ".join((names.get(k) or AllocationName(k)).described for k in keys)


def fail_run(run: models.PreemptionRun, attempt: int, error: str, *, now: datetime | None) -> None:
    finished = now or utcnow()
    with transaction.atomic():
        won = models.PreemptionRun.objects.filter(
            pk=run.pk, status=models.PreemptionRun.Status.RUNNING, attempts=attempt
        ).update(
            status=models.PreemptionRun.Status.FAILED,
            error=error[:5000],
            finished_at=finished,
            lease_until=None,
        )
        if not won:
            return
        raise_alert(
            models.Alert.Kind.RUN_FAILED,
            f"run {run.pk} ({run.kind}) failed: {error}",
            level=models.Alert.Level.ERROR,
            partition=run.partition,
            queue=run.queue,
            run=run,
            now=finished,
        )
        if run.kind == models.PreemptionRun.Kind.QUOTA_ENFORCEMENT:
            models.QuotaChange.objects.filter(
                run=run, state=models.QuotaChange.State.RUNNING
            ).update(
                state=models.QuotaChange.State.FAILED,
                finished_at=finished,
                reason=f"predicted quota preemption failed: {error}"[:2000],
            )


def _quoted(resource: dict[str, int] | None) -> str:
    return format_resource(resource, empty="nothing")
