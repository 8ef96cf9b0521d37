"""A poll reads the partition's completed applications
(``/ws/v1/partition/<p>/applications/completed``, yunikorn-core's
``[]*dao.ApplicationDAOInfo`` with ``resourceHistory``) and stores each once, for the
work lost to preemption."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from django.template.loader import render_to_string
from sources_helpers import T0, FakeYuniKorn, SleepRecorder

from dashboard import models as dm
from dashboard.services.history import work_lost
from dashboard.sources import health, services
from dashboard.sources.completed import completed_path
from dashboard.sources.models import ClusterSource

pytestmark = pytest.mark.django_db

COMPLETED = completed_path("default")
ANSWER = (
    Path(__file__).resolve().parents[1]
    / "dashboard"
    / "data"
    / "work-lost"
    / "partition_applications_completed.json"
)


def poll(source: ClusterSource, minutes: int = 0) -> services.PollOutcome:
    return services.poll_source(
        source.pk,
        now=T0 + timedelta(minutes=minutes),
        force=True,
        fetch=services.default_fetcher(sleep=SleepRecorder()),
        health=health.default_path_fetcher(services.fetch_policy()),
    )


def test_each_poll_reads_the_completed_applications_and_stores_them_once(
    yunikorn: FakeYuniKorn,
) -> None:
    yunikorn.bodies[COMPLETED] = ANSWER.read_bytes()
    source = ClusterSource.objects.create(name="acme-ml", base_url=yunikorn.url)
    assert poll(source).status == "stored"
    assert poll(source, minutes=1).status in ("stored", "unchanged")
    assert yunikorn.requests_to(COMPLETED) == 2
    rows = dm.CompletedApplication.objects.all()
    assert rows.count() == 4
    notebook = rows.get(app_id="nlp-notebook-bob-0831")
    assert notebook.partition.cluster_id == source.cluster_id
    assert notebook.preempted["p3.8xlarge"]["nvidia.com/gpu"] == 3600
    answer = work_lost.work_lost(notebook.partition, period="week")
    assert answer.totals()["vcore"] == 14_400_000


def test_an_unreadable_answer_stores_nothing_and_the_poll_stays_healthy(
    yunikorn: FakeYuniKorn,
) -> None:
    doc = json.loads(ANSWER.read_text())
    doc[0]["resourceHistory"]["preemptedResource"]["UNKNOWN"]["vcore"] = "lots"
    yunikorn.set_json(COMPLETED, doc)
    source = ClusterSource.objects.create(name="acme-ml", base_url=yunikorn.url)
    assert poll(source).status == "stored"
    source.refresh_from_db()
    assert source.status == ClusterSource.Status.HEALTHY
    assert dm.CompletedApplication.objects.count() == 0


def test_a_failing_read_shows_on_the_source_and_alerts_once_after_alert_after(
    yunikorn: FakeYuniKorn,
) -> None:
    """The scheduler keeps its completed list only for a while: a read failing for
    ``alert_after`` seconds raises one alert, the source shows the failure while it lasts,
    and a good read ends it with a recovery note."""
    doc = json.loads(ANSWER.read_text())
    doc[0]["resourceHistory"]["preemptedResource"]["UNKNOWN"]["vcore"] = "lots"
    yunikorn.set_json(COMPLETED, doc)
    source = ClusterSource.objects.create(name="acme-ml", base_url=yunikorn.url, alert_after=120)
    failing = dm.Alert.objects.filter(message__contains="the completed applications")

    assert poll(source).status == "stored"
    source.refresh_from_db()
    state = services.source_state(source, now=T0)
    assert "vcore" in str(state["completed_error"])
    assert state["completed_failing_since"] == T0
    assert not failing.exists()  # not yet failing for alert_after
    shown = render_to_string("sources/_source_states.html", {"source_states": [state]})
    assert "completed applications (work lost) not read since 2026" in shown
    assert "vcore" in shown

    poll(source, minutes=1)
    assert not failing.exists()
    poll(source, minutes=2)
    poll(source, minutes=3)
    alert = failing.get()  # once, however many polls fail after alert_after
    assert alert.level == dm.Alert.Level.ERROR
    assert "/ws/v1/partition/default/applications/completed" in alert.message
    assert "missing from the work lost to preemption" in alert.message

    yunikorn.bodies[COMPLETED] = ANSWER.read_bytes()
    poll(source, minutes=4)
    source.refresh_from_db()
    state = services.source_state(source, now=T0)
    assert state["completed_error"] == ""
    assert state["completed_failing_since"] is None
    assert dm.Alert.objects.filter(
        message="cluster source acme-ml: the completed applications are read again"
    ).exists()
    assert dm.CompletedApplication.objects.count() == 4
