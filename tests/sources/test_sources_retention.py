"""Retention of polled snapshots: referenced ones and the newest stay; the rest thin by age."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command

from dashboard import models as dm
from dashboard import services as platform
from dashboard.sources import retention
from dashboard.sources.models import ClusterSource, SourceSnapshot

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 9, 20, 0, 0, tzinfo=UTC)


def doc(at: datetime, n: int = 1) -> dict[str, Any]:
    return {
        "now": at.timestamp(),
        "partition": {"quota_preemption_enabled": True, "miss": 0.0},
        "queues": {"name": "root", "children": [{"name": "a"}]},
        "nodes": [{"id": "n1", "capacity": {"vcore": 10000}}],
        "allocations": [
            {"key": f"k{i}", "queue": "root.a", "node": "n1", "resources": {"vcore": 100}}
            for i in range(n)
        ],
    }


def polled(source: ClusterSource, at: datetime) -> int:
    row = platform.import_snapshot(
        {"s.json": json.dumps(doc(at)).encode()}, partition=source.partition, now=at
    )
    SourceSnapshot.objects.create(source=source, snapshot=row, fingerprint="0" * 64, fetched_at=at)
    return row.pk


@pytest.fixture
def history() -> dict[str, int]:
    source = ClusterSource.objects.create(name="acme", base_url="http://yk:9080")
    at = {
        "old_upload": NOW - timedelta(days=20),
        "d10_0100": datetime(2026, 9, 10, 1, 0, tzinfo=UTC),
        "d10_0900": datetime(2026, 9, 10, 9, 0, tzinfo=UTC),  # referenced by a run
        "d10_1700": datetime(2026, 9, 10, 17, 0, tzinfo=UTC),
        "d11_0200": datetime(2026, 9, 11, 2, 0, tzinfo=UTC),  # referenced by a change
        "d11_0300": datetime(2026, 9, 11, 3, 0, tzinfo=UTC),
        "d17_0505": datetime(2026, 9, 17, 5, 5, tzinfo=UTC),
        "d17_0605": datetime(2026, 9, 17, 6, 5, tzinfo=UTC),
        "h30_1810": datetime(2026, 9, 18, 18, 10, tzinfo=UTC),
        "h30_1820": datetime(2026, 9, 18, 18, 20, tzinfo=UTC),
        "h30_1850": datetime(2026, 9, 18, 18, 50, tzinfo=UTC),
        "h5_a": NOW - timedelta(hours=5),
        "h5_b": NOW - timedelta(hours=5, minutes=-10),
        "h1": NOW - timedelta(hours=1),
    }
    ids = {}
    upload = platform.import_snapshot(
        {"u.json": json.dumps(doc(at["old_upload"], 2)).encode()}, partition="default", now=NOW
    )
    ids["old_upload"] = upload.pk
    for name, when in at.items():
        if name != "old_upload":
            ids[name] = polled(source, when)
    partition = dm.Partition.objects.get(name="default")
    dm.PreemptionRun.objects.create(
        partition=partition,
        snapshot_id=ids["d10_0900"],
        kind=dm.PreemptionRun.Kind.ROUND,
        queued_at=NOW,
    )
    dm.QuotaChange.objects.create(
        partition=partition,
        queue_path="root.a",
        state=dm.QuotaChange.State.DONE,
        changed_at=NOW,
        snapshot_id=ids["d11_0200"],
    )
    return ids


def test_plan_thins_by_age_and_keeps_referenced_snapshots(history: dict[str, int]) -> None:
    """Hourly after a day, daily after a week; runs' and changes' snapshots are kept."""
    plan = retention.plan_prune(NOW)

    assert sorted(plan.delete) == sorted(
        [history["d10_1700"], history["d11_0300"], history["h30_1820"], history["h30_1850"]]
    )
    assert plan.considered == 13  # polled snapshots only: the upload is never thinned
    assert {history["d10_0900"], history["d11_0200"], history["h1"]} <= plan.protected


def test_dry_run_deletes_nothing_and_prune_deletes_the_plan(history: dict[str, int]) -> None:
    before = dm.ClusterSnapshot.objects.count()
    out = StringIO()

    call_command("prune_snapshots", "--dry-run", stdout=out)  # wall clock: all are old

    assert out.getvalue().startswith("would delete ")
    assert dm.ClusterSnapshot.objects.count() == before

    plan = retention.prune_snapshots(NOW)

    assert plan.deleted == 4
    left = set(dm.ClusterSnapshot.objects.values_list("pk", flat=True))
    assert left == set(history.values()) - set(plan.delete)
    run = dm.PreemptionRun.objects.get()
    assert run.snapshot_id == history["d10_0900"]
    assert dm.QuotaChange.objects.get().snapshot_id == history["d11_0200"]
    # the allocations only deleted snapshots held went with them
    assert platform.drop_unused_spans() == 0
    # thinning is stable: pruning again at the same time deletes nothing more
    assert retention.prune_snapshots(NOW).deleted == 0


def test_a_run_created_after_the_plan_still_keeps_its_snapshot(
    history: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The referenced check runs again when deleting: a stale plan cannot remove it."""
    plan = retention.plan_prune(NOW)
    victim = history["h30_1850"]
    assert victim in plan.delete
    dm.PreemptionRun.objects.create(
        partition=dm.Partition.objects.get(name="default"),
        snapshot_id=victim,
        kind=dm.PreemptionRun.Kind.ROUND,
        queued_at=NOW,
    )
    monkeypatch.setattr(retention, "plan_prune", lambda now=None, policy=None: plan)

    result = retention.prune_snapshots(NOW)

    assert result.deleted == 3
    assert dm.ClusterSnapshot.objects.filter(pk=victim).exists()


def test_retention_windows_come_from_settings(history: dict[str, int], settings: Any) -> None:
    """Keeping everything of the last 48 hours spares the three snapshots of 30 hours ago."""
    settings.SOURCES_RETENTION_KEEP_ALL_HOURS = 48
    settings.SOURCES_RETENTION_HOURLY_DAYS = 7

    plan = retention.plan_prune(NOW)

    assert history["h30_1820"] not in plan.delete
    assert history["h30_1850"] not in plan.delete
    assert sorted(plan.delete) == sorted([history["d10_1700"], history["d11_0300"]])


def test_the_newest_polled_snapshot_of_a_source_is_kept_however_old() -> None:
    source = ClusterSource.objects.create(name="quiet", base_url="http://yk:9080")
    first = polled(source, NOW - timedelta(days=30, hours=2))
    newest = polled(source, NOW - timedelta(days=30, hours=1))
    ClusterSource.objects.filter(pk=source.pk).update(last_snapshot=None)

    plan = retention.plan_prune(NOW)

    assert plan.delete == []
    assert {first, newest} & plan.protected == {newest}


def test_prune_task_runs_the_same_thinning(history: dict[str, int]) -> None:
    from dashboard.sources import tasks

    tasks.prune_snapshots.delay()  # eager; wall clock is after NOW, so at least the plan's

    assert not dm.ClusterSnapshot.objects.filter(
        pk__in=[history["d10_1700"], history["h30_1850"]]
    ).exists()
    assert dm.ClusterSnapshot.objects.filter(pk=history["d10_0900"]).exists()
