"""Issue 40 item 2, every path: under rule set ``scheduler`` each "within the max" decision
reads the scheduler's *allocated*, which still holds the allocations being preempted
(engine.md 5.1: ``max.StrictlyGreaterThanOrEqualsOnlyExisting(allocatedResource)``):
the usage-rise timer, its "already above before" check, a restart's re-arming and a
fired change settled by a snapshot, as the sweep and the change's own decision already do.

The one-queue cluster of :mod:`quota_snapshots`: root.a, max 9 cores, delay 60 s; every
allocation is one core; ``preempted=n`` marks the first *n* as being preempted (still
allocated, preempting).
"""

from __future__ import annotations

import pytest
from quota_snapshots import at, partition, scenario, store

from dashboard import models, services
from dashboard.services.quota.restarts import note_start_time, rearm_timers

State = models.QuotaChange.State
Cause = models.QuotaChange.Cause

pytestmark = pytest.mark.django_db


def usage_changes() -> list[models.QuotaChange]:
    return list(models.QuotaChange.objects.filter(cause=Cause.USAGE_ROSE).order_by("id"))


def test_a_rise_counts_the_allocations_being_preempted() -> None:
    """10 cores allocated, 2 of them being preempted, against a max of 9: the scheduler's
    usage rose above the max (U(Q), 8 cores, would not); a later snapshot with the same 10
    allocated (none preempting any more) did not rise again: it was above already."""
    store(scenario(8), 0)
    rose = store(scenario(10, preempted=2), 20)
    [change] = usage_changes()
    assert (change.snapshot_id, change.state, change.deadline) == (rose.pk, State.WAITING, at(80))
    assert "vcore 10 cores against vcore 9 cores" in change.reason
    services.cancel_quota_change(change, now=at(30))
    store(scenario(10), 40)
    assert usage_changes() == [change]


def test_a_restart_rearms_on_the_allocations_being_preempted() -> None:
    """A restart at 50 s recovers 10 allocated cores (2 being preempted) of root.a, max 9:
    the scheduler re-arms its timer from the restart (engine.md 5.1, restart)."""
    store(scenario(8), 0)
    snap = store(scenario(10, preempted=2), 20)
    for change in models.QuotaChange.objects.filter(state=State.WAITING):
        services.cancel_quota_change(change, now=at(30))  # whatever the rise started
    [rearmed] = rearm_timers(partition(), at(50), snapshot=snap)
    assert (rearmed.queue_path, rearmed.cause, rearmed.deadline) == (
        "root.a",
        Cause.RESTART,
        at(110),
    )


def test_a_fired_change_is_not_settled_while_the_preempting_are_still_allocated() -> None:
    """A change fired in the dashboard (max 7) is settled by a later snapshot only when the
    scheduler's allocated is within the max: 8 allocated with 2 being preempted is not (U(Q)
    6 would be); 7 allocated is."""
    store(scenario(8), 0)
    lowered = services.schedule_quota_change(
        partition(), "root.a", new_max={"vcore": 7000}, now=at(10)
    )
    # seen applied in the cluster (as a config read from it would show)
    models.QuotaChange.objects.filter(pk=lowered.pk).update(applied_at=at(10))
    assert services.sweep_due_changes(at(70)).fired == (lowered.pk,)
    lowered.refresh_from_db()
    assert lowered.state == State.FIRED
    store(scenario(8, preempted=2), 80)
    lowered.refresh_from_db()
    assert lowered.state == State.FIRED, lowered.reason
    store(scenario(7), 90)
    lowered.refresh_from_db()
    assert lowered.state == State.DONE, lowered.reason


def test_a_prediction_the_restart_made_moot_is_closed_leaving_one_open_change() -> None:
    """Issue 40 item 7: root.a's timer (deadline 60) fired in the dashboard, but the
    scheduler restarted at 55, before it: core lost that timer and re-arms it at the
    recovery (55 + 60). The queue then has one open change, the re-armed one; the fired
    prediction is closed, naming the restart and the change that holds the timer now
    (not left awaiting a preemption that will not come beside a second waiting change)."""
    snap = store(scenario(10), 0)
    [fired] = usage_changes()
    assert services.sweep_due_changes(at(60)).fired == (fired.pk,)
    models.SchedulerStart.objects.create(
        partition=partition(),
        instance_uuid="i-1",
        started_at=at(-600),
        source="first event of the new InstanceUUID",
        seen_at=at(0),
    )
    note_start_time(partition(), at(55), now=at(70), snapshot=snap)
    open_ = models.QuotaChange.objects.filter(
        queue_path="root.a", state__in=[State.WAITING, State.RUNNING, State.FIRED]
    )
    [rearmed] = open_
    assert (rearmed.cause, rearmed.state, rearmed.deadline) == (
        Cause.RESTART,
        State.WAITING,
        at(115),
    )
    fired.refresh_from_db()
    assert fired.state == State.DONE
    assert fired.superseded_by_id == rearmed.pk
    assert "restarted" in fired.reason
    assert f"change {rearmed.pk}" in fired.reason
