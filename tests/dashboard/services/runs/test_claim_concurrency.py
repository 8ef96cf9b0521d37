"""Races on PostgreSQL: two transactions (threads with their own connections) never claim the
same due change twice, and the constraints hold when application checks are bypassed.

On SQLite (local runs without DATABASE_URL) these are skipped; in CI (CI=true) the
database is PostgreSQL and a non-PostgreSQL database fails the test instead.
"""

from __future__ import annotations

import os
import threading
from datetime import timedelta

import factories
import pytest
from django.db import IntegrityError, connection, transaction
from races import in_threads

from dashboard import models, services

T = factories.T0

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _postgres_only() -> None:
    if connection.vendor != "postgresql":
        if os.environ.get("CI") == "true":
            pytest.fail("CI runs the race tests on PostgreSQL: set DATABASE_URL")
        pytest.skip("row-lock races need PostgreSQL (set DATABASE_URL)")


def _due_changes(n: int) -> list[models.QuotaChange]:
    snapshot = factories.SnapshotFactory.create()
    # maxes newly set on queues without one: rule set seed starts their timers
    snapshot.partition.timer_rules = "seed"
    snapshot.partition.save(update_fields=["timer_rules"])
    # root.a keeps above its 2-core guarantee; its leaves have none
    targets = [("root.a.x", 500), ("root.a.y", 500), ("root.a", 3000)][:n]
    return [
        services.schedule_quota_change(
            snapshot.partition, p, new_max={"vcore": v}, new_delay=10.0, now=T
        )
        for p, v in targets
    ]


def test_two_transactions_cannot_both_claim_one_change() -> None:
    [change] = _due_changes(1)
    barrier = threading.Barrier(2)

    def claim() -> int | None:
        barrier.wait()
        return services.claim_change(change.pk, T + timedelta(seconds=10))

    results = in_threads(claim, claim)
    assert not [r for r in results if isinstance(r, Exception)], results
    winners = [r for r in results if r is not None]
    assert len(winners) == 1
    assert (
        models.PreemptionRun.objects.filter(idempotency_key=f"quota-change-{change.pk}").count()
        == 1
    )


def test_a_locked_change_is_skipped_not_waited_for() -> None:
    """While one transaction holds the row lock, another sweep skips it (SKIP LOCKED)."""
    [change] = _due_changes(1)
    locked = threading.Event()
    release = threading.Event()

    def hold_lock() -> None:
        with transaction.atomic():
            models.QuotaChange.objects.select_for_update().get(pk=change.pk)
            locked.set()
            release.wait(timeout=30)

    def claim_while_locked() -> int | None:
        locked.wait(timeout=30)
        try:
            return services.claim_change(change.pk, T + timedelta(seconds=10))
        finally:
            release.set()

    results = in_threads(hold_lock, claim_while_locked)
    assert results == [None, None]
    change.refresh_from_db()
    assert change.state == models.QuotaChange.State.WAITING
    # once the lock is gone the next sweep claims it
    assert services.sweep_due_changes(T + timedelta(seconds=11)).fired == (change.pk,)


def test_concurrent_sweeps_fire_every_change_exactly_once() -> None:
    changes = _due_changes(3)
    assert {c.state for c in changes} == {models.QuotaChange.State.WAITING}
    barrier = threading.Barrier(3)

    def sweep() -> tuple[int, ...]:
        barrier.wait()
        return services.sweep_due_changes(T + timedelta(seconds=10)).fired

    results = in_threads(sweep, sweep, sweep)
    assert not [r for r in results if isinstance(r, Exception)], results
    # a queue whose ancestor was running during those sweeps waits for the next one
    later = services.sweep_due_changes(T + timedelta(seconds=11)).fired
    fired = [c for r in results for c in r] + list(later)
    assert len(fired) == len(set(fired))
    # every change was decided once: fired (planned here, so a prediction awaiting the
    # scheduler, with a plan or without one), never done by the dashboard itself
    states = set(
        models.QuotaChange.objects.filter(pk__in=[c.pk for c in changes]).values_list(
            "state", flat=True
        )
    )
    assert states == {models.QuotaChange.State.FIRED}
    runs = models.PreemptionRun.objects.filter(kind=models.PreemptionRun.Kind.QUOTA_ENFORCEMENT)
    assert sorted(runs.values_list("request__change", flat=True)) == sorted(fired)
    assert set(runs.values_list("status", flat=True)) == {"done"}
    # no run names an allocation twice; runs of different changes are predictions on the
    # snapshot as the scheduler reported it, so a leaf's and its parent's may share one
    # (a prediction never removes usage: issue 24)
    for run in runs:
        keys = list(run.victims.values_list("allocation_key", flat=True))
        assert len(keys) == len(set(keys)), run.pk


def test_constraint_refuses_a_second_running_quota_preemption_for_a_queue() -> None:
    """Even bypassing the services, PostgreSQL keeps one running preemption per queue."""
    snapshot = factories.SnapshotFactory.create()
    barrier = threading.Barrier(2)

    def start() -> int:
        barrier.wait()
        with transaction.atomic():
            run = models.PreemptionRun.objects.create(
                partition=snapshot.partition,
                snapshot=snapshot,
                kind=models.PreemptionRun.Kind.QUOTA_ENFORCEMENT,
                status=models.PreemptionRun.Status.RUNNING,
                queue="root.a",
                queued_at=T,
            )
            return run.pk

    results = in_threads(start, start)
    assert len([r for r in results if isinstance(r, int)]) == 1
    assert len([r for r in results if isinstance(r, IntegrityError)]) == 1
