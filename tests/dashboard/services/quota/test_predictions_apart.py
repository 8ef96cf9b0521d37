"""Issue 24, item 4: a dashboard prediction never changes usage, the max in force or the
state of a change; only what the scheduler reports does.

When the dashboard's own timer fires, its predicted run leaves the change ``fired``
(predicted here, awaiting the scheduler), never ``done``. The scheduler settles it: its
observed quota preemption of the queue, or a snapshot captured after the deadline that
shows the queue within the change's max once the cluster has the change. The max in
force read by what-ifs, plans, usage-rise timers and the change page is the
scheduler's: changes planned in the dashboard do not count.

Scenario: factories.small_scenario with a 9-core max on root.a (60 s delay); every
allocation is 1 core, so *n* allocations are *n* cores of usage under root.a.
"""

from __future__ import annotations

from typing import Any

import factories
import pytest
from quota_snapshots import at, partition, scenario, store
from rest_framework.test import APIClient

from dashboard import models, services
from dashboard.pages.scope import Scope
from dashboard.pages.views.changes import current_max_of, limits_in_force
from dashboard.services.quota.enforcement import retime_from_cluster
from dashboard.services.quota.scheduler_clock import apply_planned

T = factories.T0
State = models.QuotaChange.State
Run = models.PreemptionRun

pytestmark = pytest.mark.django_db


def observed_quota(seconds: float, maximum: dict[str, int]) -> Run:
    """The scheduler's own quota preemption of root.a, as read from its events."""
    return Run.objects.create(
        partition=partition(),
        kind=Run.Kind.QUOTA,
        trigger=Run.Trigger.OBSERVED,
        status=Run.Status.DONE,
        queue="root.a",
        queued_at=at(seconds),
        started_at=at(seconds),
        finished_at=at(seconds),
        request={"queue": "root.a", "max": maximum, "event_id": 7},
        idempotency_key=f"observed:test:quota:{seconds}",
    )


def planned_and_fired() -> models.QuotaChange:
    """10 cores under root.a; a decrease to 6 cores planned here at 10 s fires at 70 s."""
    store(scenario(10, max_vcore=12000), 0)
    change = services.schedule_quota_change(
        partition(), "root.a", new_max={"vcore": 6000}, now=at(10)
    )
    assert (change.state, change.deadline, change.is_planned) == (State.WAITING, at(70), True)
    assert services.sweep_due_changes(at(70)).fired == (change.pk,)
    change.refresh_from_db()
    return change


def test_a_fired_timer_leaves_the_change_fired_awaiting_the_scheduler() -> None:
    change = planned_and_fired()
    assert change.state == State.FIRED
    assert change.get_state_display() == "Fired: predicted here, awaiting the scheduler"
    assert change.run is not None
    assert change.run.nature == "predicted"
    assert "awaiting the scheduler" in change.reason
    assert change.is_planned  # the prediction applied nothing
    # not active: a later change of the queue is decided as after a completed run
    assert State.FIRED not in models.QuotaChange.ACTIVE_STATES


def test_a_prediction_changes_no_max_in_force() -> None:
    """After the planned decrease fired, the max in force everywhere it is read is still
    the scheduler's 12 cores; the change forms edit the plan (6 cores)."""
    change = planned_and_fired()
    p = partition()
    snap = services.latest_snapshot(p)
    assert snap is not None
    assert services.queue_settings(p, "root.a").max == {"vcore": 12000}
    assert services.queue_settings(p, "root.a", planned=True).max == {"vcore": 6000}
    assert services.settings_by_queue(p, snap)["root.a"].max == {"vcore": 12000}
    assert services.config_in_force(p, snap)["root.a"].max == {"vcore": 12000}
    assert services.config_in_force(p, snap)["root.a"].timer.kind == "idle"  # none there
    assert current_max_of(p)("root.a") == {"vcore": 12000}  # the what-if's
    assert current_max_of(p, planned=True)("root.a") == {"vcore": 6000}  # the change form's
    whatif_limits = limits_in_force(Scope(partition=p, snapshot=snap))
    assert whatif_limits["root.a"]["vcore"]["text"] == "12 cores"
    # and usage: the next snapshot, still 10 cores, starts no rise and settles nothing
    store(scenario(10, max_vcore=12000), 100)
    change.refresh_from_db()
    assert change.state == State.FIRED
    assert not models.QuotaChange.objects.filter(cause="usage_rose").exists()


def test_the_schedulers_quota_preemption_settles_a_fired_change() -> None:
    change = planned_and_fired()
    # another max enforced (not this change): nothing settles
    observed_quota(80, {"vcore": 8000})
    retime_from_cluster(partition(), now=at(90))
    change.refresh_from_db()
    assert change.state == State.FIRED
    run = observed_quota(95, {"vcore": 6000})
    retime_from_cluster(partition(), now=at(100))
    change.refresh_from_db()
    assert change.state == State.DONE
    assert change.applied_at is not None  # the enforcement shows the cluster applied it
    assert f"observed run {run.pk}" in change.reason
    alert = models.Alert.objects.get(kind=models.Alert.Kind.QUOTA_OBSERVED, change=change)
    assert "the dashboard's prediction is settled" in alert.message


def test_a_later_snapshot_within_the_max_settles_only_an_applied_change() -> None:
    change = planned_and_fired()
    store(scenario(5, max_vcore=12000), 120)  # within 6 cores, but the cluster has 12
    change.refresh_from_db()
    assert change.state == State.FIRED  # planned: the cluster has not shown the change
    models.QuotaChange.objects.filter(pk=change.pk).update(applied_at=at(10))
    store(scenario(7, max_vcore=6000), 130)  # applied, but 7 cores exceed 6
    change.refresh_from_db()
    assert change.state == State.FIRED
    snap = store(scenario(6, max_vcore=6000), 140)
    change.refresh_from_db()
    assert change.state == State.DONE
    assert f"settled by the scheduler: snapshot {snap.pk}" in change.reason


def test_a_planned_change_due_with_usage_within_is_cleared_as_planned() -> None:
    """At the deadline usage is within the max: the scheduler's check clears the timer
    (5.1, tick); for a change only planned here that is the dashboard's prediction, and
    the change says so."""
    store(scenario(10, max_vcore=12000), 0)
    planned = services.schedule_quota_change(
        partition(), "root.a", new_max={"vcore": 6000}, now=at(10)
    )
    store(scenario(5, max_vcore=12000), 30)
    services.sweep_due_changes(at(70))
    planned.refresh_from_db()
    assert planned.state == State.CLEARED
    assert "timer cleared at the scheduler's check" in planned.reason
    assert "planned here" in planned.reason
    assert planned.run is None


def test_fired_shown_on_the_pages_and_in_the_api(staff: Any) -> None:
    change = planned_and_fired()
    staff_client = APIClient()
    staff_client.force_login(staff)
    assert change.run is not None
    body = staff_client.get(f"/api/quota-changes/{change.pk}/").json()
    assert (body["state"], body["planned"]) == ("fired", True)
    listed = staff_client.get("/api/quota-changes/", {"state": "fired"}).json()
    assert [c["id"] for c in listed["results"]] == [change.pk]
    schema = staff_client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    states = [
        s
        for name, s in schema["components"]["schemas"].items()
        if name.endswith("Enum") and "fired" in s.get("enum", [])
    ]
    assert states
    assert {"waiting", "running", "done"} <= set(states[0]["enum"])
    detail = staff_client.get(f"/changes/{change.pk}/").content.decode()
    assert "Fired: predicted here, awaiting the scheduler" in detail
    listing = staff_client.get("/changes/").content.decode()
    assert "Fired: predicted here, awaiting the scheduler" in listing
    run_page = staff_client.get(f"/runs/{change.run.pk}/").content.decode()
    assert "fired: predicted here, awaiting the scheduler" in run_page
    history = staff_client.get("/history/").content.decode()
    assert f"change #{change.pk}</a>: fired: predicted here, awaiting the scheduler" in history


def test_a_fired_change_replaced_in_the_cluster_before_the_scheduler_reported_ends() -> None:
    """A fired change whose max the cluster replaced (a later change it applied) before
    the scheduler reported on it is no longer awaited: done, naming the change that
    replaced it; usage above the fired max never settles it otherwise."""
    change = planned_and_fired()
    models.QuotaChange.objects.filter(pk=change.pk).update(applied_at=at(10))
    store(scenario(10, max_vcore=6000), 80)  # the cluster has 6 cores: still 10 used
    change.refresh_from_db()
    assert change.state == State.FIRED
    # the administrator raised it back in the cluster before the scheduler preempted (as
    # the config poll learns it: applied, no timer)
    later = models.QuotaChange.objects.create(
        partition=partition(),
        queue_path="root.a",
        depth=1,
        old_max={"vcore": 6000},
        new_max={"vcore": 12000},
        delay=60,
        state=State.DONE,
        reason="an increase: no timer",
        changed_at=at(100),
        applied_at=at(100),
        learned=True,
        clock_source=models.QuotaChange.ClockSource.CONFIG_IMPORT,
    )
    store(scenario(10, max_vcore=12000), 90)  # captured before the raise: still awaited
    change.refresh_from_db()
    assert change.state == State.FIRED
    snap = store(scenario(10, max_vcore=12000), 150)
    change.refresh_from_db()
    assert change.state == State.DONE
    assert change.superseded_by == later
    assert f"replaced in the cluster by change {later.pk}" in change.reason
    assert f"snapshot {snap.pk}" in change.reason
    later.refresh_from_db()
    assert later.state == State.DONE  # the replacing change is left as it was


def test_a_planned_change_cleared_here_starts_the_schedulers_timer_once_applied() -> None:
    """A planned change's timer is the dashboard's prediction: cleared at 70 (usage 5
    within 6). When the cluster's config shows it applied at 90 with usage back at 8 over
    6, the scheduler applies it as a lowering and starts its timer then (engine.md 5.1,
    config applied): the change waits again, on the scheduler's clock, instead of staying
    cleared while the scheduler's timer runs."""
    store(scenario(10, max_vcore=12000), 0)
    planned = services.schedule_quota_change(
        partition(), "root.a", new_max={"vcore": 6000}, now=at(10)
    )
    store(scenario(5, max_vcore=12000), 30)
    services.sweep_due_changes(at(70))
    planned.refresh_from_db()
    assert planned.state == State.CLEARED
    store(scenario(8, max_vcore=12000), 80)
    version = models.ConfigVersion.objects.create(
        partition=partition(), number=1, text="", imported_at=at(90)
    )
    [applied] = apply_planned(partition(), {"root.a": ({"vcore": 6000}, 60.0)}, version, at(90))
    applied.refresh_from_db()
    assert (applied.pk, applied.state) == (planned.pk, State.WAITING), applied.reason
    assert (applied.applied_at, applied.deadline) == (at(90), at(150))
    assert "applied in the cluster" in applied.reason
