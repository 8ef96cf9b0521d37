"""Issue 38, point 6: a queue over time defaults to the window of the data, and the newest
snapshot's figures hold until the data's end, never across a window the data does not
reach ("above the max for 30d" for a snapshot imported 40 days ago; "0 runs" though
preemptions happened)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from dashboard import models
from dashboard.services.history.overtime_report import queue_over_time
from dashboard.sources.models import ClusterSource

pytestmark = pytest.mark.django_db

Run = models.PreemptionRun
NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
#: the imported snapshots' time: 40 days before now, out of the last 30 days
T = datetime(2026, 10, 11, 8, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)


def _snapshot(p: models.Partition, at: datetime, used: int) -> None:
    snap = models.ClusterSnapshot.objects.create(
        partition=p, source_kind="rest", captured_at=at, imported_at=NOW, scenario={}
    )
    for path in ("root", "root.a"):
        models.SnapshotQueue.objects.create(
            snapshot=snap,
            path=path,
            name=path.rsplit(".", 1)[-1],
            usage={"vcore": used},
            allocated={"vcore": used},
            guaranteed=None,
            max={"vcore": 8000},
        )


def _run(p: models.Partition, at: datetime, trigger: str) -> None:
    run = Run.objects.create(
        partition=p,
        kind=Run.Kind.QUOTA_ENFORCEMENT if trigger == Run.Trigger.TIMER else Run.Kind.PREEMPT,
        trigger=trigger,
        status="done",
        queued_at=at,
    )
    models.RunVictim.objects.create(
        run=run, position=0, allocation_key=f"k{run.pk}", queue="root.a", leaf="root.a", node="n1"
    )


@pytest.fixture
def partition() -> models.Partition:
    """Two snapshots imported 40 days ago: root.a at 2 cores, then 2 hours later at 10
    (above its max of 8); an observed preemption between them, a predicted one an hour
    after the second: the data ends then (T + 3 h)."""
    cluster = models.Cluster.objects.create(name="lab-west")
    p = models.Partition.objects.create(cluster=cluster, name="default")
    _snapshot(p, T, 2000)
    _snapshot(p, T + 2 * HOUR, 10000)
    _run(p, T + HOUR, Run.Trigger.OBSERVED)
    _run(p, T + 3 * HOUR, Run.Trigger.TIMER)
    return p


def test_without_a_window_the_datas_days_are_shown(partition: models.Partition) -> None:
    """The window is the UTC day of the data; root.a was above its max from the second
    snapshot to the data's end (1 hour, not 30 days), and both preemptions count."""
    report = queue_over_time(queue="root.a", partition="default", now=NOW)
    day = datetime(2026, 10, 11, tzinfo=UTC)
    assert (day, day + timedelta(days=1)) == (report.usage.window.start, report.usage.window.end)
    assert report.is_data_window
    assert report.data is not None
    assert (report.data.start, report.data.end, report.data.end_by) == (T, T + 3 * HOUR, "run")
    assert report.usage.above_max_any_seconds == 3600
    assert report.usage.covered_seconds == 3 * 3600
    assert report.usage.until == T + 3 * HOUR
    assert (
        sum(d.observed.runs for d in report.days),
        sum(d.predicted.runs for d in report.days),
    ) == (1, 1)


def test_a_wider_window_does_not_stretch_the_newest_snapshot(partition: models.Partition) -> None:
    """Asked for a week around the data, the newest snapshot still ends at the data's end."""
    report = queue_over_time(
        queue="root.a",
        partition="default",
        start=T - timedelta(days=1),
        end=T + timedelta(days=6),
        now=NOW,
    )
    assert not report.is_data_window
    assert report.usage.above_max_any_seconds == 3600
    assert report.usage.until == T + 3 * HOUR


def test_a_live_sources_last_poll_ends_the_data(partition: models.Partition) -> None:
    """A source following the partition polled it successfully at T + 5 h: nothing changed
    since the second snapshot, whose figures hold until then."""
    ClusterSource.objects.create(
        name="lab-west",
        base_url="http://yunikorn.example:9080",
        partition="default",
        cluster=partition.cluster,
        last_success_at=T + 5 * HOUR,
    )
    report = queue_over_time(queue="root.a", partition="default", now=NOW)
    assert report.data is not None
    assert (report.data.end, report.data.end_by) == (T + 5 * HOUR, "source")
    assert report.usage.above_max_any_seconds == 3 * 3600


def test_the_page_opens_on_the_datas_window_and_says_where_it_ends(
    staff: Any, partition: models.Partition
) -> None:
    client = Client()
    client.force_login(staff)
    html = client.get(
        reverse("queue_over_time"), {"queue": "root.a", "cluster": "lab-west"}
    ).content.decode()
    assert 'value="2026-10-11T00:00"' in html  # the start field: the data's day
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", html))
    assert (
        "The window of the data: from 2026-10-11 08:00 to 2026-10-11 11:00 UTC (the newest "
        "predicted or observed run); the newest snapshot's figures hold until then."
    ) in text
    assert "Above the max in any type for 1h" in text.replace(" h", "h")


def test_one_snapshot_is_shown_at_its_instant(staff: Any) -> None:
    """A single imported snapshot (no run, no source): the window is its day, and its
    figures are shown at its one instant (not an empty window, not a month of them)."""
    cluster = models.Cluster.objects.create(name="one")
    p = models.Partition.objects.create(cluster=cluster, name="default")
    _snapshot(p, T, 10000)
    report = queue_over_time(queue="root.a", partition="default", cluster="one", now=NOW)
    usage = report.usage
    assert usage.is_instant
    assert (usage.covered_seconds, usage.above_max_any_seconds) == (0, 0)
    assert [(f.type, f.mean_used) for f in usage.types] == [("vcore", 10000.0)]
    assert [point.at for point in usage.series] == [T]
    client = Client()
    client.force_login(staff)
    html = client.get(
        reverse("queue_over_time"), {"queue": "root.a", "cluster": "one"}
    ).content.decode()
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", html))
    assert "The data of this window is one instant, the snapshot of 2026-10-11 08:00 UTC" in text
    assert "10.0 cores" in text
