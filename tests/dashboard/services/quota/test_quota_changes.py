"""Delay timer rules of scheduled quota changes, one by one, driven by an injected clock.

The snapshot (factories.small_scenario): root.a has guaranteed 2 cores, a 60 s
quota preemption delay and usage 8 cores (root.a.x and root.a.y, 4 each). No
test sleeps: every service call gets ``now`` explicitly.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import factories
import pytest
from django.db import IntegrityError, transaction

from dashboard import models, services

T = factories.T0
State = models.QuotaChange.State


def at(seconds: float) -> datetime:
    return T + timedelta(seconds=seconds)


@pytest.fixture
def partition(snapshot: models.ClusterSnapshot) -> models.Partition:
    """These are the seed's rules (rule set ``seed``, engine.md 5); the scheduler's rules
    (the default) are tested in test_timer_rule_sets.py."""
    snapshot.partition.timer_rules = "seed"
    snapshot.partition.save(update_fields=["timer_rules"])
    return snapshot.partition


def enforcement_runs() -> list[models.PreemptionRun]:
    return list(
        models.PreemptionRun.objects.filter(
            kind=models.PreemptionRun.Kind.QUOTA_ENFORCEMENT
        ).order_by("id")
    )


@pytest.mark.django_db
def test_timer_starts_when_the_change_is_saved(partition: models.Partition) -> None:
    """A decrease below usage waits for exactly the delay from the moment it is saved."""
    change = services.schedule_quota_change(partition, "root.a", new_max={"vcore": 5000}, now=T)
    assert (State.WAITING, T + timedelta(seconds=60)) == (change.state, change.deadline)
    assert change.new_max == {"vcore": 5000}
    assert change.old_max is None


@pytest.mark.django_db
def test_due_change_fires_once_at_its_deadline(partition: models.Partition) -> None:
    """Before the deadline nothing fires; at it the plan runs once and victims are stored."""
    change = services.schedule_quota_change(partition, "root.a", new_max={"vcore": 5000}, now=T)
    assert services.sweep_due_changes(at(59)).fired == ()
    assert (change.pk,) == services.sweep_due_changes(at(60)).fired
    assert services.sweep_due_changes(at(61)).fired == ()
    change.refresh_from_db()
    [run] = enforcement_runs()
    # the run is the dashboard's prediction: the change fired, awaiting the scheduler
    assert change.state == State.FIRED
    assert run.pk == change.run_id
    assert (run.status, run.trigger, run.outcome) == ("done", "timer", "enforced")
    assert run.target == {"vcore": 3000}
    assert run.result is not None
    assert run.result["victims"] == list(run.victims.values_list("allocation_key", flat=True))
    assert run.victims.count() >= 3


@pytest.mark.django_db
def test_further_decrease_resets_the_timer_from_the_change_time(
    partition: models.Partition,
) -> None:
    """A second change of the max restarts the timer from its own time, not the old deadline."""
    first = services.schedule_quota_change(partition, "root.a", new_max={"vcore": 5000}, now=T)
    second = services.schedule_quota_change(
        partition, "root.a", new_max={"vcore": 4000}, now=at(30)
    )
    first.refresh_from_db()
    assert (State.RESET, second.pk) == (first.state, first.superseded_by_id)
    assert (State.WAITING, at(90)) == (second.state, second.deadline)
    assert second.old_max == {"vcore": 5000}
    assert services.sweep_due_changes(at(60)).fired == ()
    assert (second.pk,) == services.sweep_due_changes(at(90)).fired
    [run] = enforcement_runs()
    assert run.target == {"vcore": 4000}


@pytest.mark.django_db
def test_changing_only_the_delay_resets_the_timer(partition: models.Partition) -> None:
    """A new delay alone restarts the timer from the change with the new delay."""
    first = services.schedule_quota_change(partition, "root.a", new_max={"vcore": 5000}, now=T)
    second = services.schedule_quota_change(partition, "root.a", new_delay=120.0, now=at(30))
    first.refresh_from_db()
    assert first.state == State.RESET
    assert (State.WAITING, at(150), {"vcore": 5000}) == (
        second.state,
        second.deadline,
        second.new_max,
    )
    assert (second.old_delay, second.delay) == (60.0, 120.0)
    assert services.sweep_due_changes(at(149)).fired == ()
    assert (second.pk,) == services.sweep_due_changes(at(150)).fired


@pytest.mark.django_db
def test_increase_before_the_deadline_cancels_the_decrease(partition: models.Partition) -> None:
    """Q -> Q/3 then -> Q/2 before the deadline: no preemption, the decrease is cancelled."""
    first = services.schedule_quota_change(partition, "root.a", new_max={"vcore": 3000}, now=T)
    second = services.schedule_quota_change(
        partition, "root.a", new_max={"vcore": 4500}, now=at(30)
    )
    first.refresh_from_db()
    assert first.state == State.CANCELLED_BY_INCREASE
    assert second.state == State.DONE
    assert second.deadline is None
    assert models.Alert.objects.filter(
        kind=models.Alert.Kind.CANCELLED_BY_INCREASE, change=first
    ).exists()
    assert services.sweep_due_changes(at(1000)).fired == ()
    assert enforcement_runs() == []


@pytest.mark.django_db
def test_change_while_preemption_runs_is_skipped_with_an_alert(
    partition: models.Partition,
) -> None:
    """A change arriving while the queue's preemption runs is recorded as skipped."""
    first = services.schedule_quota_change(partition, "root.a", new_max={"vcore": 6000}, now=T)
    run_id = services.claim_change(first.pk, at(60))
    assert run_id is not None
    first.refresh_from_db()
    assert first.state == State.RUNNING
    late = services.schedule_quota_change(partition, "root.a", new_max={"vcore": 3000}, now=at(61))
    assert late.state == State.SKIPPED
    assert late.deadline is None
    assert models.Alert.objects.filter(kind=models.Alert.Kind.CHANGE_SKIPPED, change=late).exists()
    # completion re-checks the skipped change: usage (6 cores after the run) exceeds 3 cores
    services.execute_run(run_id, now=at(62))
    first.refresh_from_db()
    assert first.state == State.FIRED  # predicted here: the scheduler has not reported it
    follow = models.QuotaChange.objects.get(state=State.WAITING, queue_path="root.a")
    assert ({"vcore": 3000}, at(122)) == (follow.new_max, follow.deadline)


@pytest.mark.django_db
def test_leaf_fires_before_its_parent_when_deadlines_are_equal(
    partition: models.Partition,
) -> None:
    """Equal deadlines: the leaf first. Both are predictions: neither preempts anything in
    the cluster, so the parent's plan counts the usage the snapshot reports, as a what-if
    of the same change on the same snapshot does."""
    parent = services.schedule_quota_change(partition, "root.a", new_max={"vcore": 5000}, now=T)
    leaf = services.schedule_quota_change(
        partition, "root.a.x", new_max={"vcore": 2000}, new_delay=60.0, now=T
    )
    assert parent.deadline == leaf.deadline
    assert (leaf.pk, parent.pk) == services.sweep_due_changes(at(60)).fired
    leaf_run, parent_run = enforcement_runs()
    assert (leaf_run.queue, parent_run.queue) == ("root.a.x", "root.a")
    # the leaf's alert says the scheduler's order is the other way round; the parent's not
    note = (
        "; root.a was due by then too (at 2026-09-01 10:01:00 UTC): the dashboard fires the "
        "deeper queue first, while yunikorn-core walks the tree top down each second and "
        "would start root.a's quota preemption first, holding root.a.x back while it runs"
    )
    assert note in fired_alert(leaf_run)
    assert "was due by then too" not in fired_alert(parent_run)
    leaf_victims = set(leaf_run.victims.values_list("allocation_key", flat=True))
    parent_victims = set(parent_run.victims.values_list("allocation_key", flat=True))
    assert len(leaf_victims) == 2
    # the leaf's predicted victims are not gone: 8 cores used - 5 max = 3 cores
    assert parent_run.target == {"vcore": 3000}
    assert parent_run.snapshot is not None
    whatif = services.create_run(
        kind=models.PreemptionRun.Kind.WHATIF_QUOTA,
        snapshot=parent_run.snapshot,
        request={"queue": "root.a", "new_max": {"vcore": 5000}},
        now=at(61),
        enqueue=False,
    )
    services.execute_run(whatif.pk, now=at(61))
    whatif.refresh_from_db()
    assert (whatif.target, set(whatif.victims.values_list("allocation_key", flat=True))) == (
        parent_run.target,
        parent_victims,
    )


def fired_alert(run: models.PreemptionRun) -> str:
    """The message of the alert that says *run*'s timer fired in the dashboard."""
    alert = models.Alert.objects.get(run=run, message__contains="timer fired in the dashboard")
    return alert.message


@pytest.mark.django_db
def test_the_order_note_follows_which_was_due_first(partition: models.Partition) -> None:
    """One sweep fires a leaf and its parent, deepest first. The parent due two seconds
    before the leaf: the scheduler would have started it first, the leaf's alert says so.
    The leaf due two seconds before its parent: the scheduler's order is the sweep's."""
    services.schedule_quota_change(partition, "root.a", new_max={"vcore": 5000}, now=T)
    services.schedule_quota_change(
        partition, "root.a.x", new_max={"vcore": 2000}, new_delay=60.0, now=at(2)
    )
    services.sweep_due_changes(at(62))
    leaf_run, parent_run = enforcement_runs()
    assert (leaf_run.queue, parent_run.queue) == ("root.a.x", "root.a")
    assert "; root.a was due by then too (at 2026-09-01 10:01:00 UTC)" in fired_alert(leaf_run)

    services.schedule_quota_change(partition, "root.a.y", new_max={"vcore": 2000}, now=at(100))
    services.schedule_quota_change(partition, "root.a", new_max={"vcore": 4000}, now=at(102))
    services.sweep_due_changes(at(162))
    *_, leaf_y, parent_again = enforcement_runs()
    assert (leaf_y.queue, parent_again.queue) == ("root.a.y", "root.a")
    assert "was due by then too" not in fired_alert(leaf_y)


@pytest.mark.django_db
def test_flag_off_means_no_timer_with_the_reason() -> None:
    """With quota preemption disabled on the partition no timer starts; the reason says why.
    (The seed's rule; under ``scheduler`` a config applied with the flag off arms the
    timer: test_timer_rule_sets.py.)"""
    snap = factories.SnapshotFactory.create(scenario=factories.small_scenario(enabled=False))
    snap.partition.timer_rules = "seed"
    snap.partition.save(update_fields=["timer_rules"])
    change = services.schedule_quota_change(
        snap.partition, "root.a", new_max={"vcore": 5000}, now=T
    )
    assert (change.state, change.deadline) == (State.DONE, None)
    assert "disabled" in change.reason
    assert services.sweep_due_changes(at(10_000)).fired == ()


@pytest.mark.django_db
def test_zero_delay_means_no_timer_with_the_reason() -> None:
    """A zero quota preemption delay: YuniKorn never enforces, so no timer."""
    snap = factories.SnapshotFactory.create(scenario=factories.small_scenario(delay=0))
    change = services.schedule_quota_change(
        snap.partition, "root.a", new_max={"vcore": 5000}, now=T
    )
    assert (change.state, change.deadline) == (State.DONE, None)
    assert "delay is 0" in change.reason


@pytest.mark.django_db
def test_usage_within_the_new_max_starts_no_timer(partition: models.Partition) -> None:
    """Nothing to enforce when usage is already within the new max."""
    change = services.schedule_quota_change(partition, "root.a", new_max={"vcore": 9000}, now=T)
    assert (change.state, change.deadline) == (State.DONE, None)
    assert "within" in change.reason


@pytest.mark.django_db
def test_deadline_passed_while_stopped_fires_once_at_the_next_sweep(
    partition: models.Partition,
) -> None:
    """Deadlines live in the database: after downtime the first sweep fires, later ones don't."""
    change = services.schedule_quota_change(partition, "root.a", new_max={"vcore": 5000}, now=T)
    assert (change.pk,) == services.sweep_due_changes(at(3600)).fired
    assert services.sweep_due_changes(at(3601)).fired == ()
    assert len(enforcement_runs()) == 1


@pytest.mark.django_db
def test_child_waits_while_an_ancestor_runs(partition: models.Partition) -> None:
    """A due queue never starts while an ancestor's quota preemption runs."""
    parent = services.schedule_quota_change(partition, "root.a", new_max={"vcore": 6000}, now=T)
    assert services.claim_change(parent.pk, at(60)) is not None  # parent now running
    child = services.schedule_quota_change(
        partition, "root.a.y", new_max={"vcore": 3000}, new_delay=10.0, now=at(61)
    )
    assert child.state == State.WAITING
    assert services.sweep_due_changes(at(80)).fired == ()
    child.refresh_from_db()
    assert child.state == State.WAITING


@pytest.mark.django_db
def test_database_allows_one_active_change_per_queue(partition: models.Partition) -> None:
    """The partial unique constraint refuses a second waiting change for the same queue."""
    services.schedule_quota_change(partition, "root.a", new_max={"vcore": 5000}, now=T)
    with pytest.raises(IntegrityError), transaction.atomic():
        models.QuotaChange.objects.create(
            partition=partition,
            queue_path="root.a",
            state=State.WAITING,
            changed_at=T,
            deadline=at(5),
        )


@pytest.mark.django_db
def test_cancel_stops_a_waiting_timer(partition: models.Partition, staff: object) -> None:
    """A cancelled change never fires; only waiting changes can be cancelled."""
    change = services.schedule_quota_change(partition, "root.a", new_max={"vcore": 5000}, now=T)
    services.cancel_quota_change(change, now=at(10))
    assert change.state == State.CANCELLED
    assert services.sweep_due_changes(at(100)).fired == ()
    with pytest.raises(services.ServiceError) as err:
        services.cancel_quota_change(change, now=at(11))
    assert err.value.field == "state"


@pytest.mark.django_db
def test_unknown_queue_and_no_op_changes_are_refused(partition: models.Partition) -> None:
    """Errors name the field: an unknown queue, a change that changes nothing, bad quantities."""
    with pytest.raises(services.ServiceError) as err:
        services.schedule_quota_change(partition, "root.nope", new_max={"vcore": 1}, now=T)
    assert err.value.field == "queue_path"
    with pytest.raises(services.ServiceError) as err:
        services.schedule_quota_change(partition, "root.a", new_delay=60.0, now=T)
    assert err.value.field == "new_max"
    with pytest.raises(services.ServiceError) as err:
        services.schedule_quota_change(partition, "root.a", new_max={"vcore": -1}, now=T)
    assert err.value.field == "new_max.vcore"
