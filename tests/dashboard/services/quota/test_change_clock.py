"""Quota timers run by the scheduler's clock: changes learned from the cluster start at its
change time (a QUEUE_MAX event or ``quotaPreemptionStartTime``), never at the import;
changes made here are planned until a config shows them; what the scheduler enforced
sets the max in force.

On the shared acme-ml fixtures (root.batch lowered 14 -> 10 cores at 09:54:30, its
quota preemption at 09:59:30; a state dump captured at 10:00:00) and on lab-west
(data/cluster-b: root.reports lowered 12 -> 11 cores at 13:58:00, 20m delay,
``quotaPreemptionStartTime`` 14:18:00).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from rest_answers import (
    CLUSTER_B,
    GI,
    at,
    import_config_file,
    plan_reports_max,
    rest_files,
    without_start_time,
)
from rest_framework.test import APIClient

from dashboard import models, services
from dashboard.importers.events import parse_events
from dashboard.services.quota.queue_settings import settings_for_paths

pytestmark = pytest.mark.django_db

Clock = models.QuotaChange.ClockSource
State = models.QuotaChange.State
NOW = datetime(2026, 11, 24, 9, 0, tzinfo=UTC)  # two months after acme-ml's capture
BATCH_EVENT = datetime.fromtimestamp(1788256470.012887, tz=UTC)  # 09:54:30 QUEUE_MAX
REPORTS_EVENT = datetime.fromtimestamp(1791986280.0052269, tz=UTC)  # 13:58:00 QUEUE_MAX


def batch_change() -> models.QuotaChange:
    return models.QuotaChange.objects.get(queue_path="root.batch")


def dump(fixtures_dir: Path) -> models.ClusterSnapshot:
    data = (fixtures_dir / "rest" / "fullstatedump.json").read_bytes()
    return services.import_snapshot({"fullstatedump.json": data}, now=NOW)


def test_a_snapshots_now_is_its_capture_time(fixtures_dir: Path) -> None:
    """The state dump captured 2026-09-01 10:00 and imported two months later: every
    computation on it takes the capture time as its "now"."""
    snap = dump(fixtures_dir)
    assert snap.captured_at == at("2026-09-01T10:00:00.214551")
    assert snap.imported_at == NOW
    assert services.snapshot_now(snap) == snap.captured_at.timestamp()
    assert services.scenario_document(snap)["now"] == snap.captured_at.timestamp()


def test_config_after_the_events_the_timer_is_the_schedulers_and_already_enforced(
    fixtures_dir: Path,
) -> None:
    """The config lowering root.batch is imported two months after the cluster made the
    change: its timer starts at the QUEUE_MAX event (09:54:30), so its deadline (09:59:30)
    is long past, and the scheduler's own quota preemption at 09:59:30 enforced it: the
    dashboard's timer predicts nothing."""
    cfg = fixtures_dir / "config"
    import_config_file(cfg / "queues-nested-gpu-previous.yaml", NOW - timedelta(days=1))
    partition = models.Partition.objects.get(name="default")
    # the events batch, as a live source polls it
    services.record_observed(
        partition,
        parse_events((fixtures_dir / "rest" / "events_batch.json").read_bytes()),
        now=NOW,
    )
    assert models.ObservedMaxChange.objects.filter(queue="root.batch").count() == 1
    result = import_config_file(cfg / "queues-nested-gpu.yaml", NOW)
    (change,) = result.changes
    change.refresh_from_db()
    assert change.queue_path == "root.batch"
    assert change.learned
    assert (change.clock_source, change.clock_detail) == (Clock.EVENT, "QUEUE_MAX event 15245")
    assert change.changed_at == change.applied_at == BATCH_EVENT
    assert change.deadline == BATCH_EVENT + timedelta(minutes=5)  # in the past, not NOW + 5m
    observed = models.PreemptionRun.objects.get(
        trigger="observed", kind="quota", queue="root.batch"
    )
    assert change.state == State.DONE
    assert f"observed run {observed.pk}" in change.reason
    assert "enforced in the cluster" in change.reason
    (alert,) = models.Alert.objects.filter(change=change, message__contains="observed:")
    # the scheduler's enforcement, not the dashboard's timer
    assert alert.kind == models.Alert.Kind.QUOTA_OBSERVED
    assert alert.get_kind_display() == "Quota preemption observed (scheduler)"
    # nothing left for the dashboard's own timer: the sweep predicts nothing
    assert services.sweep_due_changes(now=NOW).fired == ()
    in_force = settings_for_paths(partition, ["root.batch"])["root.batch"]
    assert in_force.max == {"vcore": 10000, "memory": 48 * GI}


def test_old_dump_then_config_starts_at_the_event_not_at_the_import(fixtures_dir: Path) -> None:
    """A state dump captured two months ago, its events, then the config: the change is
    timed at 09:54:30, and its timer too: the scheduler's usage is its *allocated* (12
    cores, the 2 being preempted included) against the new max of 10 (engine.md 5.1), so
    the deadline is 09:59:30 and the scheduler's observed quota preemption settles it."""
    cfg = fixtures_dir / "config"
    import_config_file(cfg / "queues-nested-gpu-previous.yaml", NOW - timedelta(days=1))
    dump(fixtures_dir)
    partition = models.Partition.objects.get(name="default")
    services.record_observed(
        partition,
        parse_events((fixtures_dir / "rest" / "events_batch.json").read_bytes()),
        now=NOW,
    )
    import_config_file(cfg / "queues-nested-gpu.yaml", NOW)
    change = batch_change()
    assert (change.clock_source, change.changed_at) == (Clock.EVENT, BATCH_EVENT)
    assert (change.state, change.deadline) == (State.DONE, BATCH_EVENT + timedelta(minutes=5))
    assert change.reason.startswith("enforced in the cluster: the scheduler's quota preemption")


def test_old_dump_without_events_counts_from_the_capture_not_the_import(
    fixtures_dir: Path,
) -> None:
    """No event reaches back to the change, but the dump already shows the new max: the
    change was made by its capture time at the latest."""
    cfg = fixtures_dir / "config"
    import_config_file(cfg / "queues-nested-gpu-previous.yaml", NOW - timedelta(days=1))
    snap = dump(fixtures_dir)
    import_config_file(cfg / "queues-nested-gpu.yaml", NOW)
    change = batch_change()
    assert change.clock_source == Clock.CAPTURE
    assert change.changed_at == snap.captured_at
    assert change.get_clock_source_display().startswith("unknown")


def test_lab_west_imported_a_month_late_gets_no_fresh_timer() -> None:
    """lab-west's answers read a month after the capture: root.reports' timer is the
    scheduler's (fired 14:18:00 on 14 October), due now - not a fresh 20 minutes."""
    late = at("2026-11-14T14:00")
    services.import_snapshot(rest_files(CLUSTER_B / "rest"), now=late)
    (change,) = models.QuotaChange.objects.filter(queue_path="root.reports")
    assert change.deadline == at("2026-10-14T14:18")
    assert change.clock_source == Clock.START_TIME
    assert change.state == State.WAITING
    assert list(models.QuotaChange.objects.filter(state=State.WAITING, deadline__lte=late)) == [
        change
    ]


def test_config_alone_says_its_time_is_unknown(fixtures_dir: Path) -> None:
    """With nothing from the cluster to time it, the change counts from the import and
    says that the scheduler's time is unknown."""
    cfg = fixtures_dir / "config"
    import_config_file(cfg / "queues-nested-gpu-previous.yaml", NOW - timedelta(days=1))
    import_config_file(cfg / "queues-nested-gpu.yaml", NOW)
    change = batch_change()
    assert (change.clock_source, change.changed_at, change.applied_at) == (
        Clock.CONFIG_IMPORT,
        NOW,
        NOW,
    )
    assert "unknown" in change.get_clock_source_display()


def test_observed_enforcement_sets_the_max_in_force(fixtures_dir: Path) -> None:
    """The previous config (batch max 14 cores) was imported before the cluster lowered it;
    the REST folder then shows the scheduler's QUEUE_MAX and quota preemption at 10 cores:
    the max in force is 10, and it says it was observed (the folder without config.json,
    which would store the scheduler's config itself as the version in force)."""
    import_config_file(
        fixtures_dir / "config" / "queues-nested-gpu-previous.yaml", at("2026-09-01T09:50")
    )
    partition = models.Partition.objects.get(name="default")
    before = settings_for_paths(partition, ["root.batch"])["root.batch"]
    assert (before.max or {})["vcore"] == 14000
    answers = rest_files(fixtures_dir / "rest")
    del answers["config.json"]
    services.import_snapshot(answers, now=at("2026-09-01T10:00"))
    after = settings_for_paths(partition, ["root.batch"])["root.batch"]
    assert (after.max, after.source) == ({"vcore": 10000, "memory": 48 * GI}, "observed")
    assert services.queue_settings(partition, "root.batch") == after


def test_lab_west_snapshot_times_the_running_timer_by_quota_preemption_start_time() -> None:
    """lab-west's root.reports is above its max (12 > 11 cores): the dashboard's timer is
    the scheduler's, from quotaPreemptionStartTime (fires 14:18:00 = 13:58:00 + 20m)."""
    services.import_snapshot(rest_files(CLUSTER_B / "rest"), now=at("2026-10-14T14:00"))
    (change,) = models.QuotaChange.objects.filter(queue_path="root.reports")
    assert change.clock_source == Clock.START_TIME
    assert change.deadline == at("2026-10-14T14:18")
    assert change.changed_at == at("2026-10-14T13:58")
    assert "quotaPreemptionStartTime" in change.clock_detail


def test_lab_west_without_start_time_uses_the_queue_max_event() -> None:
    answers = without_start_time(rest_files(CLUSTER_B / "rest"))
    services.import_snapshot(answers, now=at("2026-10-14T14:00"))
    (change,) = models.QuotaChange.objects.filter(queue_path="root.reports")
    assert (change.clock_source, change.clock_detail) == (Clock.EVENT, "QUEUE_MAX event 48112")
    assert change.changed_at == REPORTS_EVENT
    assert change.deadline == REPORTS_EVENT + timedelta(minutes=20)


def test_planned_in_the_dashboard_until_the_config_shows_it_applied(staff: Any) -> None:
    """root.reports lowered to 11 cores in the dashboard at 13:40 is planned (its timer the
    dashboard's prediction); the REST answers do not make it applied; the live config
    does, and from then on its timer is the scheduler's (14:18:00)."""
    import_config_file(CLUSTER_B / "config" / "queues-v2.yaml", at("2026-10-14T13:31"))
    planned = plan_reports_max(11, staff, at("2026-10-14T13:40"))
    assert (planned.clock_source, planned.applied_at, planned.is_planned) == (
        Clock.DASHBOARD,
        None,
        True,
    )
    assert planned.deadline == at("2026-10-14T14:00")  # the dashboard's: 13:40 + 20m
    services.import_snapshot(rest_files(CLUSTER_B / "rest"), now=at("2026-10-14T14:00"))
    planned.refresh_from_db()
    assert planned.is_planned
    assert planned.deadline == at("2026-10-14T14:00")
    result = import_config_file(CLUSTER_B / "config" / "queues.yaml", at("2026-10-14T14:05"))
    assert result.changes == ()  # nothing new: the config shows the planned change
    planned.refresh_from_db()
    assert not planned.is_planned
    assert planned.clock_source == Clock.START_TIME
    assert planned.applied_at == planned.changed_at == at("2026-10-14T13:58")
    assert planned.deadline == at("2026-10-14T14:18")
    assert planned.state == State.WAITING
    assert not planned.learned  # made in the dashboard: a later change of the old config


def test_change_api_and_pages_say_where_the_time_comes_from(
    staff: Any, staff_client: APIClient, fixtures_dir: Path
) -> None:
    cfg = fixtures_dir / "config"
    import_config_file(cfg / "queues-nested-gpu-previous.yaml", NOW - timedelta(days=1))
    dump(fixtures_dir)
    import_config_file(cfg / "queues-nested-gpu.yaml", NOW)
    change = batch_change()
    body = staff_client.get(f"/api/quota-changes/{change.pk}/").json()
    assert body["clock_source"] == "capture"
    assert body["clock_source_text"].startswith("unknown")
    assert body["planned"] is False
    assert staff_client.get("/api/quota-changes/", {"planned": "true"}).json()["count"] == 0
    learned = staff_client.get("/api/quota-changes/", {"clock_source": "capture"}).json()
    assert [c["id"] for c in learned["results"]] == [change.pk]
    assert body["applied_at"] is not None
    client = APIClient()
    client.force_login(staff)
    page = client.get(f"/changes/{change.pk}/").content.decode()
    assert "timer start" in page
    assert "counted from the snapshot" in page
    assert "max in force" in page
    listing = client.get("/changes/").content.decode()
    assert "applied in the cluster" in listing


def test_after_a_predicted_run_nothing_happened_and_the_config_max_stays_in_force(
    staff: Any, fixtures_dir: Path
) -> None:
    """A change planned here fires the dashboard's own timer: its run is predicted, the
    change says nothing happened in the cluster, and the max in force in the cluster is
    still the config's (10 cores), while the dashboard plans with 8."""
    t = at("2026-09-01T10:00")
    import_config_file(fixtures_dir / "config" / "queues-nested-gpu.yaml", t)
    services.import_snapshot(rest_files(fixtures_dir / "rest"), now=t)
    partition = models.Partition.objects.get(name="default")
    change = services.schedule_quota_change(
        partition, "root.batch", new_max={"vcore": 8000, "memory": 48 * GI}, user=staff, now=t
    )
    assert change.is_planned
    assert change.state == State.WAITING
    assert services.sweep_due_changes(now=t + timedelta(minutes=6)).fired == (change.pk,)
    change.refresh_from_db()
    assert change.state == State.FIRED  # a prediction: awaiting the scheduler, not done
    assert change.run is not None
    assert change.run.get_nature_display() == "predicted"
    assert "nothing was preempted in the cluster" in change.reason
    assert "whatever the cluster's config says" in change.reason
    in_cluster = services.queue_settings(partition, "root.batch")
    assert (in_cluster.max, in_cluster.source) == ({"vcore": 10000, "memory": 48 * GI}, "config")
    planned = services.queue_settings(partition, "root.batch", planned=True)
    assert (planned.max or {})["vcore"] == 8000
    client = APIClient()
    client.force_login(staff)
    run = client.get(f"/api/runs/{change.run.pk}/").json()
    assert (run["nature"], run["outcome"]) == ("predicted", "enforced")  # the engine's value
    assert run["outcome_text"] == "predicted: target claimed in full"
    listed = client.get("/api/runs/", {"trigger": "observed"}).json()["results"]
    assert {r["outcome_text"] for r in listed} == {"observed: preempted"}
    page = client.get(f"/changes/{change.pk}/").content.decode()
    assert "nothing happened in the cluster" in page
    assert "10 cores" in page  # the max in force: the cluster's config
    assert "planned" in page
    queue_page = client.get("/queues/detail/", {"queue": "root.batch"}).content.decode()
    assert "Max in force in the cluster: <strong>memory 48 GiB, vcore 10 cores" in queue_page
    assert "Planned in the dashboard: <strong>memory 48 GiB, vcore 8 cores" in queue_page
    assert "nothing happened in the cluster" in queue_page


def test_queue_max_in_force_follows_the_schedulers_enforcement_after_the_capture() -> None:
    """The snapshot shows 14 cores; the scheduler's own quota preemption at 10 cores came
    after the capture: 10 is in force, and says it was observed. A planned change here does
    not change the max in force; one the cluster applied later does."""
    from dashboard.pages.views.queues import max_in_force

    t = at("2026-09-01T09:50")
    snap = models.ClusterSnapshot(captured_at=t)
    queue = models.SnapshotQueue(snapshot=snap, path="root.batch", max={"vcore": 14000})
    run = models.PreemptionRun(
        pk=7,
        kind="quota",
        trigger="observed",
        queue="root.batch",
        queued_at=t + timedelta(minutes=9),
        request={"max": {"vcore": 10000}},
    )
    planned = models.QuotaChange(
        pk=3, state="waiting", new_max={"vcore": 8000}, changed_at=t + timedelta(minutes=20)
    )
    assert max_in_force(queue, [], []).max == {"vcore": 14000}
    shown = max_in_force(queue, [planned], [run])
    assert (shown.max, shown.words) == (
        {"vcore": 10000},
        "observed: the scheduler's quota run 7",
    )
    assert (shown.has_planned, shown.planned_max) == (True, {"vcore": 8000})
    planned.applied_at = t + timedelta(minutes=25)
    applied = max_in_force(queue, [planned], [run])
    assert (applied.max, applied.has_planned) == ({"vcore": 8000}, False)


def test_a_planned_change_the_scheduler_enforced_is_applied_and_done(staff: Any) -> None:
    """root.reports lowered to 12 cores here at 13:20 (planned); the REST answers show the
    cluster set 12 cores at 13:30 (QUEUE_MAX) and enforced it at 13:50: the change is
    applied (13:30) and done by the scheduler's enforcement, not by the dashboard's timer."""
    import_config_file(CLUSTER_B / "config" / "queues-v1.yaml", at("2026-10-14T13:00"))
    change = plan_reports_max(12, staff, at("2026-10-14T13:20"))
    assert change.is_planned
    services.import_snapshot(rest_files(CLUSTER_B / "rest"), now=at("2026-10-14T14:00"))
    change.refresh_from_db()
    observed = models.PreemptionRun.objects.get(trigger="observed", kind="quota")
    assert change.state == State.DONE
    assert change.applied_at == datetime.fromtimestamp(1791984600.0041182, tz=UTC)  # 13:30
    assert f"observed run {observed.pk}" in change.reason
    assert change.run is None  # no predicted run
