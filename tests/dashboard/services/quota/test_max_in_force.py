"""Issue 40, "what must exist": the max in force and the planned max are each computed
in one place (:func:`dashboard.services.quota.queue_settings.in_force`) from the changes
that are in force or waiting, never from a superseded planned one or a cancelled one;
:func:`queue_settings`, :func:`settings_for_paths` and :func:`settings_by_queue` are that
one computation, for one queue, some or all of a snapshot's.

The one-queue cluster of :mod:`quota_snapshots`: root.a, max 9 cores, delay 60 s.
"""

from __future__ import annotations

import pytest
from quota_snapshots import at, partition, scenario, store

from dashboard import models, services
from dashboard.services.quota.queue_settings import settings_for_paths

State = models.QuotaChange.State

pytestmark = pytest.mark.django_db


def maxes(planned: bool) -> set[int | None]:
    """root.a's vcore max as each of the three readers gives it (one value when they agree)."""
    p = partition()
    snap = services.latest_snapshot(p)
    assert snap is not None
    found = [
        services.queue_settings(p, "root.a", planned=planned),
        settings_for_paths(p, ["root.a", "root.a.x"], planned=planned)["root.a"],
        services.settings_by_queue(p, snap, planned=planned)["root.a"],
    ]
    return {(f.max or {}).get("vcore") for f in found}


def applied(change: models.QuotaChange) -> models.QuotaChange:
    models.QuotaChange.objects.filter(pk=change.pk).update(applied_at=change.changed_at)
    change.refresh_from_db()
    return change


def test_the_max_in_force_and_the_planned_max_through_a_changes_life() -> None:
    store(scenario(8), 0)
    assert maxes(planned=False) == maxes(planned=True) == {9000}
    # the cluster lowers it to 8 (usage 8: within, no timer): in force and planned
    applied(
        services.schedule_quota_change(partition(), "root.a", new_max={"vcore": 8000}, now=at(10))
    )
    assert maxes(planned=False) == maxes(planned=True) == {8000}
    # planned here: 7, then edited to 6 (7 superseded), then cancelled: the plan is back
    # to the cluster's 8, and neither the superseded 7 nor the cancelled 6 sets a max
    first = services.schedule_quota_change(
        partition(), "root.a", new_max={"vcore": 7000}, now=at(20)
    )
    assert (maxes(planned=False), maxes(planned=True)) == ({8000}, {7000})
    edited = services.schedule_quota_change(
        partition(), "root.a", new_max={"vcore": 6000}, now=at(30)
    )
    first.refresh_from_db()
    assert first.state == State.RESET
    assert (maxes(planned=False), maxes(planned=True)) == ({8000}, {6000})
    services.cancel_quota_change(edited, now=at(35))
    assert maxes(planned=False) == maxes(planned=True) == {8000}
    # the cluster lowers it to 7; usage falls within before the deadline: the change is
    # cleared, and its max stays in force (a cleared change is not a cancelled one)
    lowered = applied(
        services.schedule_quota_change(partition(), "root.a", new_max={"vcore": 7000}, now=at(40))
    )
    assert lowered.state == State.WAITING
    store(scenario(6), 50)
    services.sweep_due_changes(at(51))
    lowered.refresh_from_db()
    assert lowered.state == State.CLEARED
    assert maxes(planned=False) == maxes(planned=True) == {7000}


def test_the_settings_come_in_the_paths_order() -> None:
    """Every web process renders the same page from these settings (the forms' limits):
    their order is the paths', never a set's, which follows each process's string
    hashing (two web processes drew the changes page's limits in two orders)."""
    store(scenario(8), 0)
    asked = [f"root.a.q{n:02d}" for n in range(40, 0, -1)] + ["root.a", "root"]
    found = settings_for_paths(partition(), asked)
    assert list(found) == sorted(asked)
    snap = services.latest_snapshot(partition())
    assert snap is not None
    by_queue = services.settings_by_queue(partition(), snap)
    assert list(by_queue) == sorted(by_queue)
