"""Run execution: claim by conditional update, lease take-over, exactly-once results."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import factories
import pytest

from dashboard import models, services, tasks

T = factories.T0
Status = models.PreemptionRun.Status


def _run(snapshot: models.ClusterSnapshot) -> models.PreemptionRun:
    return services.create_run(
        kind=models.PreemptionRun.Kind.WHATIF_PREEMPT,
        snapshot=snapshot,
        request={"ask_key": "ask-1"},
        now=T,
        enqueue=False,
    )


@pytest.mark.django_db
def test_running_a_run_twice_records_one_answer(snapshot: models.ClusterSnapshot) -> None:
    run = _run(snapshot)
    services.execute_run(run.pk, now=T)
    victims = list(run.victims.values_list("allocation_key", flat=True))
    services.execute_run(run.pk, now=T + timedelta(seconds=1))
    run.refresh_from_db()
    assert (run.status, run.attempts) == (Status.DONE, 1)
    assert list(run.victims.values_list("allocation_key", flat=True)) == victims
    assert run.result is not None
    assert victims == run.result["victims"]
    assert run.engine_ms is not None
    assert run.started_at == T


@pytest.mark.django_db
def test_a_live_claim_is_left_alone(snapshot: models.ClusterSnapshot) -> None:
    """A redelivery while the first worker still holds the lease does nothing."""
    run = _run(snapshot)
    assert services.claim_run(run.pk, T) is not None
    services.execute_run(run.pk, now=T + timedelta(seconds=5))
    run.refresh_from_db()
    assert (run.status, run.attempts, run.victims.count()) == (Status.RUNNING, 1, 0)


@pytest.mark.django_db
def test_an_expired_claim_is_taken_over_and_the_late_worker_cannot_write(
    snapshot: models.ClusterSnapshot, settings: Any
) -> None:
    """The first worker vanished: after its lease a new attempt finishes; the old one loses."""
    run = _run(snapshot)
    stale = services.claim_run(run.pk, T)
    assert stale is not None
    later = T + timedelta(seconds=settings.DASHBOARD_RUN_LEASE_SECONDS + 1)
    services.execute_run(run.pk, now=later)
    run.refresh_from_db()
    assert (run.status, run.attempts) == (Status.DONE, 2)
    victims = run.victims.count()
    # the first worker wakes up and tries to store its (identical) answer: refused
    answer = services.compute_run(stale)
    assert services.finish_run(stale, 1, answer, 1.0, now=later) is False
    assert run.victims.count() == victims


@pytest.mark.django_db
def test_sweep_resends_lost_pending_runs(
    snapshot: models.ClusterSnapshot, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    """A run whose message vanished (Redis lost it) is re-sent by the sweep, once per period."""
    run = _run(snapshot)
    later = T + timedelta(seconds=settings.DASHBOARD_RUN_REQUEUE_SECONDS + 1)
    with django_capture_on_commit_callbacks(execute=True):
        report = services.sweep_due_changes(later)
    assert report.recovered == (run.pk,)
    run.refresh_from_db()
    assert run.status == Status.DONE


@pytest.mark.django_db
def test_engine_errors_are_recorded_on_the_run(snapshot: models.ClusterSnapshot) -> None:
    run = _run(snapshot)
    models.PendingAsk.objects.filter(snapshot=snapshot).delete()
    services.execute_run(run.pk, now=T)
    run.refresh_from_db()
    assert run.status == Status.FAILED
    assert run.error
    assert models.Alert.objects.filter(kind=models.Alert.Kind.RUN_FAILED, run=run).exists()


@pytest.mark.django_db
def test_tasks_are_thin_and_named(snapshot: models.ClusterSnapshot) -> None:
    run = _run(snapshot)
    tasks.execute_run.delay(run.pk)
    run.refresh_from_db()
    assert run.status == Status.DONE
    assert tasks.execute_run.name == "dashboard.execute_run"
    assert tasks.sweep_quota_changes.name == "dashboard.sweep_quota_changes"
    for task in (tasks.execute_run, tasks.sweep_quota_changes):
        assert task.acks_late is True
        assert task.reject_on_worker_lost is True


def test_task_names_are_stable_and_without_aliases() -> None:
    """Every dashboard task is registered once, under its stable name."""
    from dashboard.celery import app

    app.loader.import_default_modules()
    expected = {
        "dashboard.execute_run",
        "dashboard.sweep_quota_changes",
        "dashboard.poll_cluster_sources",
        "dashboard.poll_cluster_source",
        "dashboard.prune_snapshots",
        "dashboard.run_import_job",
        "dashboard.warm_snapshot",
        "dashboard.deliver_alert",
        "dashboard.sweep_alert_deliveries",
    }
    assert expected == {name for name in app.tasks if name.startswith("dashboard.")}


def test_beat_runs_the_sweep_periodically() -> None:
    from dashboard.celery import app

    app.loader.import_default_modules()
    schedule = app.conf.beat_schedule
    [entry] = [e for e in schedule.values() if e["task"] == "dashboard.sweep_quota_changes"]
    assert entry["schedule"] > 0


def test_the_broker_transport_is_loaded_once_on_a_thread_of_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A cold process (the command line) loads its broker client while the import's
    writes wait on the database; later calls in the same process do nothing."""
    import threading

    from dashboard.celery import app as celery_app
    from dashboard.services.runs import requests as run_requests

    monkeypatch.setattr(run_requests, "_broker_prepared", threading.Event())
    loaded: list[tuple[str, type]] = []
    real = celery_app.connection_for_write

    def spy(*args: Any, **kwargs: Any) -> Any:
        connection = real(*args, **kwargs)
        transport = connection.transport  # what the helper asks for
        loaded.append((threading.current_thread().name, type(transport)))
        return connection

    monkeypatch.setattr(celery_app, "connection_for_write", spy)
    before = {t.ident for t in threading.enumerate()}
    run_requests.prepare_broker_in_background()
    run_requests.prepare_broker_in_background()
    for t in threading.enumerate():
        if t.ident not in before and t.name == "prepare-broker":
            t.join(timeout=30)
    assert len(loaded) == 1, loaded
    thread_name, transport_class = loaded[0]
    assert thread_name == "prepare-broker"
    assert transport_class.__module__.startswith(("kombu.transport", "dashboard.broker"))
