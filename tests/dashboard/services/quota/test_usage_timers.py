"""engine.md section 5: "usage rises above the max while idle and the delay is > 0 -> waiting".

The dashboard sees usage rise when a snapshot arrives (upload, import command or a
polled cluster source). Scenario: factories.small_scenario with a max on root.a
(guaranteed 2 cores, 60 s delay); every allocation is 1 core, so *n* allocations
are *n* cores of usage under root.a.
"""

from __future__ import annotations

from typing import Any

import factories
import pytest
from quota_snapshots import at, scenario, store
from rest_framework.test import APIClient

from dashboard import models, services

T = factories.T0
State = models.QuotaChange.State
Cause = models.QuotaChange.Cause


def usage_changes() -> list[models.QuotaChange]:
    return list(models.QuotaChange.objects.filter(cause=Cause.USAGE_ROSE).order_by("id"))


@pytest.mark.django_db
def test_usage_rising_above_the_max_starts_the_timer_and_fires_once() -> None:
    store(scenario(8), 0)  # 8 cores under a 9-core max: nothing to do
    assert usage_changes() == []
    snap = store(scenario(10), 30)  # two allocations grew the queue to 10 cores
    [change] = usage_changes()
    assert (change.queue_path, change.state, change.deadline) == ("root.a", State.WAITING, at(90))
    assert change.old_max == change.new_max == {"vcore": 9000}
    assert change.snapshot_id == snap.pk
    assert change.created_by is None
    alert = models.Alert.objects.get(change=change)
    assert alert.kind == models.Alert.Kind.TIMER
    assert "rose above the max" in alert.message
    assert "vcore 10 cores" in alert.message  # the pages' units, not millicores
    assert "vcore 9 cores" in alert.message
    assert "fires at 2026-09-01 10:01:30 UTC (change" in alert.message  # no ISO, no microseconds
    # the max in force is unchanged by it
    assert services.queue_settings(snap.partition, "root.a").max == {"vcore": 9000}

    assert services.sweep_due_changes(at(89)).fired == ()
    assert services.sweep_due_changes(at(90)).fired == (change.pk,)
    assert services.sweep_due_changes(at(91)).fired == ()
    change.refresh_from_db()
    assert change.state == State.FIRED  # the dashboard's prediction: awaiting the scheduler
    run = change.run
    assert run is not None
    assert (run.kind, run.status, run.outcome) == ("quota_enforcement", "done", "enforced")
    assert run.target == {"vcore": 1000}
    # the parent's target is shared between its two leaves (500 each, engine.md 4.5)
    # and each leaf's 1-core victim overshoots its share
    assert run.claimed == {"vcore": 2000}
    assert sorted(run.victims.values_list("leaf", flat=True)) == ["root.a.x", "root.a.y"]


@pytest.mark.django_db
def test_usage_already_above_in_the_previous_snapshot_did_not_rise() -> None:
    store(scenario(10), 0)  # the first snapshot: nothing is known before it, so it rose
    [first] = usage_changes()
    services.cancel_quota_change(first, now=at(10))
    store(scenario(10), 20)  # still above, idle: no new rise, no new timer
    store(scenario(11), 40)  # grew further but was above already
    assert usage_changes() == [first]


@pytest.mark.django_db
def test_usage_rising_again_after_a_prediction_starts_a_new_timer_only_on_a_real_rise() -> None:
    """A predicted run preempts nothing in the cluster: its victims still count, so the
    next snapshot, still above the max, is no new rise; usage back within the max and
    then above again is one, and starts a new timer."""
    store(scenario(10), 0)
    [first] = usage_changes()
    services.sweep_due_changes(at(60))
    first.refresh_from_db()
    assert first.state == State.FIRED
    store(scenario(10), 100)  # the same usage: the prediction took nothing away
    assert usage_changes() == [first]
    first.refresh_from_db()
    assert first.state == State.FIRED  # still above: the scheduler has not settled it
    store(scenario(8), 150)  # within the max (9 cores) in the cluster
    first.refresh_from_db()
    assert first.state == State.DONE  # the scheduler's snapshot settles it
    assert "settled by the scheduler: snapshot" in first.reason
    store(scenario(10), 200)  # above it again
    [_, second] = usage_changes()
    assert (second.state, second.deadline) == (State.WAITING, at(260))


@pytest.mark.django_db
def test_a_waiting_change_is_not_moved_by_a_rise() -> None:
    store(scenario(8), 0)
    change = services.schedule_quota_change(
        models.Partition.objects.get(name="default"),
        "root.a",
        new_max={"vcore": 7000},
        now=at(10),
    )
    assert (change.state, change.deadline) == (State.WAITING, at(70))
    store(scenario(12), 30)
    assert usage_changes() == []
    change.refresh_from_db()
    assert (change.state, change.deadline) == (State.WAITING, at(70))


@pytest.mark.django_db
def test_the_max_in_force_is_the_latest_change_not_the_snapshot() -> None:
    store(scenario(8), 0)
    partition = models.Partition.objects.get(name="default")
    raised = services.schedule_quota_change(
        partition, "root.a", new_max={"vcore": 12000}, now=at(5)
    )
    assert raised.state == State.DONE  # an increase: no timer
    # seen applied in the cluster (as a config read from it shows): now in force there
    models.QuotaChange.objects.filter(pk=raised.pk).update(applied_at=at(5))
    store(scenario(10, max_vcore=9000), 30)  # the snapshot still says 9 cores
    assert usage_changes() == []
    store(scenario(13, max_vcore=9000), 60)
    [change] = usage_changes()
    assert change.new_max == {"vcore": 12000}


@pytest.mark.django_db
def test_usage_at_the_max_is_within_it() -> None:
    store(scenario(8), 0)
    store(scenario(9), 30)
    assert usage_changes() == []


@pytest.mark.django_db
@pytest.mark.parametrize(
    "kw",
    [
        {"enabled": False},
        {"delay": 0.0},
        {"max_vcore": None},
    ],
    ids=["flag-off", "delay-0", "no-max"],
)
def test_no_timer_without_flag_delay_or_max(kw: dict[str, Any]) -> None:
    store(scenario(8, **kw), 0)
    store(scenario(12, **kw), 30)
    assert models.QuotaChange.objects.count() == 0


@pytest.mark.django_db
def test_a_snapshot_older_than_the_latest_starts_nothing() -> None:
    store(scenario(8), 0)
    store(scenario(12), 30, captured=-100)  # an old dump uploaded late
    assert usage_changes() == []


@pytest.mark.django_db
def test_leaves_and_parents_each_get_their_own_timer_deepest_first() -> None:
    doc_low = scenario(8)
    doc_low["queues"]["children"][0]["children"][0]["max"] = {"vcore": 5000}  # root.a.x
    store(doc_low, 0)
    doc_high = scenario(12)
    doc_high["queues"]["children"][0]["children"][0]["max"] = {"vcore": 5000}
    store(doc_high, 30)  # root.a.x 6 cores > 5, root.a 12 > 9
    assert [c.queue_path for c in usage_changes()] == ["root.a.x", "root.a"]


@pytest.mark.django_db
def test_settings_by_queue_agrees_with_queue_settings() -> None:
    snap = store(scenario(8), 0)
    partition = snap.partition
    services.schedule_quota_change(partition, "root.a.x", new_max={"vcore": 3000}, now=at(5))
    services.schedule_quota_change(partition, "root.a", new_delay=30, now=at(6))
    bulk = services.settings_by_queue(partition, snap)
    assert set(bulk) == set(snap.queues.values_list("path", flat=True))
    for path, settings in bulk.items():
        assert settings == services.queue_settings(partition, path), path


@pytest.mark.django_db
def test_the_api_and_the_changes_page_say_what_started_it(
    staff_client: APIClient, client: Any, staff: Any
) -> None:
    store(scenario(8), 0)
    store(scenario(10), 30)
    [change] = usage_changes()
    answer = staff_client.get(f"/api/quota-changes/{change.pk}/").json()
    assert answer["cause"] == "usage_rose"
    client.force_login(staff)
    page = client.get("/changes/", {"partition": "default"}, secure=True)
    assert page.status_code == 200
    assert "usage rose" in page.content.decode()


@pytest.mark.django_db
def test_a_change_planned_here_is_not_the_max_a_usage_rise_is_judged_by() -> None:
    """The scheduler starts its timer when usage rises above *its* max (engine.md 5.1,
    usage rises): a raise planned in the dashboard and not applied in the cluster does
    not count, so 10 cores over the cluster's 9 start a timer on 9."""
    store(scenario(8), 0)
    partition = models.Partition.objects.get(name="default")
    raised = services.schedule_quota_change(
        partition, "root.a", new_max={"vcore": 12000}, now=at(5)
    )
    assert raised.is_planned
    assert services.queue_settings(partition, "root.a").max == {"vcore": 9000}
    assert services.queue_settings(partition, "root.a", planned=True).max == {"vcore": 12000}
    store(scenario(10, max_vcore=9000), 30)
    [change] = usage_changes()
    assert (change.new_max, change.deadline) == ({"vcore": 9000}, at(90))


def learned_changes() -> list[models.QuotaChange]:
    return list(models.QuotaChange.objects.filter(learned=True).order_by("id"))


@pytest.mark.django_db
def test_a_max_the_cluster_lowered_says_so_and_names_only_the_types_over() -> None:
    """Issue 40 item 6: a dynamic queue's max lowered in the cluster (its snapshot shows
    vcore 9 -> 7 cores and memory lowered too, usage 6 -> 8 cores) is a change the cluster
    made: not "usage rose" with the max "unchanged", the previous max kept, the types
    lowered (vcore, memory) and the one over (vcore only) named."""
    low = scenario(6)
    low["queues"]["children"][0]["max"] = {"vcore": 9000, "memory": 10**15}
    store(low, 0)
    high = scenario(8)
    high["queues"]["children"][0]["max"] = {"vcore": 7000, "memory": 10**14}
    snap = store(high, 30)
    assert usage_changes() == []
    [change] = learned_changes()
    assert change.cause == Cause.CHANGE
    assert change.old_max == {"vcore": 9000, "memory": 10**15}
    assert change.new_max == {"vcore": 7000, "memory": 10**14}
    assert (change.state, change.deadline) == (State.WAITING, at(90))
    assert "the cluster lowered the max of memory, vcore" in change.reason
    assert "usage over the max in vcore (vcore 8 cores against vcore 7 cores)" in change.reason
    assert "usage rose" not in change.reason
    alert = models.Alert.objects.get(change=change)
    assert "lowered the max of memory, vcore" in alert.message
    assert "(over in vcore)" in alert.message
    assert "rose above" not in alert.message
    assert services.queue_settings(snap.partition, "root.a").max == change.new_max


@pytest.mark.django_db
def test_a_max_lowered_by_a_queue_max_event_says_so() -> None:
    """The scheduler's QUEUE_MAX event lowered root.a to 7 cores before the snapshot's own
    max caught up: the change names the event and the previous max (9 cores)."""
    snap = store(scenario(6), 0)
    models.ObservedMaxChange.objects.create(
        partition=snap.partition, event_id=1, queue="root.a", time=at(20), new_max={"vcore": 7000}
    )
    store(scenario(8), 30)
    [change] = learned_changes()
    assert (change.cause, change.old_max, change.new_max) == (
        Cause.CHANGE,
        {"vcore": 9000},
        {"vcore": 7000},
    )
    assert "the cluster lowered the max of vcore" in change.reason
    assert "QUEUE_MAX event" in change.reason


def test_a_lowering_from_an_unknown_max_says_the_previous_value_is_unknown() -> None:
    from dashboard.services.quota.timers import ClusterLowering

    words = ClusterLowering(None, False, "the scheduler's QUEUE_MAX event").words({"gpu": 6})
    assert "the previous max is unknown" in words
    assert "gpu" in words
    assert ClusterLowering({"gpu": 8, "vcore": 10}, True, "x").lowered_types(
        {"gpu": 6, "vcore": 10}
    ) == ["gpu"]
