"""Issue 40, items 1, 2 and 4: the sweep checks waiting changes as the scheduler's quota
loop does under rule set ``scheduler`` (engine.md 5.1, "Tick"), on its *allocated* usage.

Scenario: factories.small_scenario with a 9-core max on root.a (60 s delay) and 5 on
each of its leaves; every allocation is 1 core, alternating between root.a.x (odd
keys) and root.a.y (even keys), so *n* allocations are *n* cores of usage under root.a.
"""

from __future__ import annotations

from typing import Any

import factories
import pytest
import quota_snapshots
from django.utils.html import escape
from quota_snapshots import at, partition, store
from rest_framework.test import APIClient

from dashboard import models, services

T = factories.T0
State = models.QuotaChange.State

pytestmark = pytest.mark.django_db


def scenario(allocations: int, **kw: Any) -> dict[str, Any]:
    # a limit on each leaf to lower: setting one where none was is a raise
    return quota_snapshots.scenario(allocations, leaf_max_vcore=5000, **kw)


def applied_change(new_vcore: int, seconds: float, queue: str = "root.a") -> models.QuotaChange:
    change = services.schedule_quota_change(
        partition(), queue, new_max={"vcore": new_vcore}, new_delay=60.0, now=at(seconds)
    )
    models.QuotaChange.objects.filter(pk=change.pk).update(applied_at=at(seconds))
    change.refresh_from_db()
    return change


def test_a_waiting_change_within_its_max_is_cleared_before_its_deadline() -> None:
    """Item 1: usage falls within the max at 30 (5 cores against 6); core clears the timer
    at its next check, due or not (``tryAcquirePreemption``), so the sweep at 31 settles
    the change without preemption; a rise at 40 starts a new timer from the rise (40 +
    60), not the stale deadline of 70."""
    store(scenario(8), 0)
    change = applied_change(6000, 10)
    assert (change.state, change.deadline) == (State.WAITING, at(70))
    store(scenario(5, max_vcore=6000), 30)
    assert services.sweep_due_changes(at(31)).fired == ()
    change.refresh_from_db()
    assert change.state == State.CLEARED  # its own state: not done, not fired
    assert change.finished_at == at(31)
    assert change.reason.startswith("timer cleared at the scheduler's check")
    assert change.run is None
    alert = models.Alert.objects.get(change=change, message__contains="was cleared")
    assert "within the max" in alert.message
    store(scenario(8, max_vcore=6000), 40)
    rose = models.QuotaChange.objects.get(queue_path="root.a", state=State.WAITING)
    assert (rose.cause, rose.deadline) == (models.QuotaChange.Cause.USAGE_ROSE, at(100))
    assert services.sweep_due_changes(at(70)).fired == ()
    assert services.sweep_due_changes(at(100)).fired == (rose.pk,)


def test_within_counts_the_allocations_being_preempted() -> None:
    """Item 2: 8 cores allocated, 2 of them being preempted, against a new max of 7: the
    scheduler's usage is its allocated (``StrictlyGreaterThanOrEqualsOnlyExisting`` on
    ``allocatedResource``), so a timer starts; the seed counts 6 and starts none."""
    store(scenario(8, preempted=2), 0)
    change = services.schedule_quota_change(partition(), "root.a", new_max={"vcore": 7000}, now=T)
    assert (change.state, change.deadline) == (State.WAITING, at(60))
    assert services.sweep_due_changes(at(60)).fired == (change.pk,)

    models.Partition.objects.all().delete()
    store(scenario(8, preempted=2), 0)
    p = partition()
    p.timer_rules = "seed"
    p.save(update_fields=["timer_rules"])
    seed = services.schedule_quota_change(p, "root.a", new_max={"vcore": 7000}, now=T)
    assert (seed.state, seed.deadline) == (State.DONE, None)


def test_timer_usage_is_allocated_under_scheduler_and_usage_under_seed() -> None:
    snap = store(scenario(8, preempted=2), 0)
    assert services.timer_usage(snap, "root.a", "scheduler") == {"vcore": 8000}
    assert services.timer_usage(snap, "root.a", "seed") == {"vcore": 6000}
    assert services.timer_usage(snap, "root.nope", "scheduler") is None


def test_a_cleared_change_is_shown_as_cleared_on_the_pages_and_in_the_api(staff: Any) -> None:
    """Item 1's clearing is a state of the change's life (docs/user/quota-changes.md):
    ``cleared`` in the API (and its filter and schema), "Cleared" on the pages."""
    store(scenario(8), 0)
    change = applied_change(6000, 10)
    store(scenario(5, max_vcore=6000), 30)
    services.sweep_due_changes(at(31))
    client = APIClient()
    client.force_login(staff)
    assert client.get(f"/api/quota-changes/{change.pk}/").json()["state"] == "cleared"
    listed = client.get("/api/quota-changes/", {"state": "cleared"}).json()
    assert [c["id"] for c in listed["results"]] == [change.pk]
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    assert any(
        name.endswith("Enum") and "cleared" in s.get("enum", []) and "fired" in s["enum"]
        for name, s in schema["components"]["schemas"].items()
    )
    label = escape(str(State.CLEARED.label))  # as the pages write it
    assert label.startswith("Cleared")
    assert label in client.get(f"/changes/{change.pk}/").content.decode()
    listing = client.get("/changes/").content.decode()
    assert f'<span class="pill cleared" data-testid="change-state">{label}</span>' in listing
    queue_page = client.get("/queues/detail/", {"queue": "root.a"}).content.decode()
    assert f'<span class="pill cleared">{label}</span>' in queue_page


def test_a_parent_and_its_child_due_in_the_same_second_run_the_parent_first() -> None:
    """Item 4: root.a and root.a.x both due at 70: the walk starts root.a and skips its
    subtree that second; root.a.x waits, and fires at the check after root.a's run."""
    store(scenario(8), 0)
    parent = applied_change(6000, 10)
    leaf = applied_change(2000, 10, "root.a.x")
    assert parent.deadline == leaf.deadline == at(70)
    assert services.sweep_due_changes(at(70)).fired == (parent.pk,)
    leaf.refresh_from_db()
    assert leaf.state == State.WAITING
    assert services.sweep_due_changes(at(71)).fired == (leaf.pk,)


def test_a_running_parent_hides_its_subtree() -> None:
    """While root.a's quota preemption runs, a child neither fires (due) nor is cleared
    (within its max)."""
    store(scenario(8), 0)
    parent = applied_change(6000, 0)
    assert services.claim_change(parent.pk, at(60)) is not None  # root.a now running
    due = applied_change(2000, 0, "root.a.x")
    fits = applied_change(3000, 1, "root.a.y")  # 4 cores against 3: waiting
    store(scenario(6), 5)  # y: 3 cores, within 3
    assert services.sweep_due_changes(at(80)).fired == ()
    due.refresh_from_db()
    fits.refresh_from_db()
    assert (due.state, fits.state) == (State.WAITING, State.WAITING)


def test_nothing_is_checked_while_the_flag_is_off() -> None:
    """Item 4: with the partition flag off the scheduler checks no timer: past its
    deadline the change neither fires nor closes; once on again it fires at the next
    check."""
    store(scenario(8), 0)
    change = applied_change(6000, 10)
    p = partition()
    p.quota_preemption_enabled = False
    p.save(update_fields=["quota_preemption_enabled"])
    assert services.sweep_due_changes(at(100)).fired == ()
    change.refresh_from_db()
    assert (change.state, change.deadline) == (State.WAITING, at(70))
    p.quota_preemption_enabled = True
    p.save(update_fields=["quota_preemption_enabled"])
    assert services.sweep_due_changes(at(101)).fired == (change.pk,)
