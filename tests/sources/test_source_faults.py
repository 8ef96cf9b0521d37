"""A source's faults are visible (issue 24, item 6): stale when no poll finished for two
intervals, alerted once after ``alert_after``; warnings raised once per source and cause;
a JSON 503 from the API while the database cannot be reached."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from unittest import mock

import pytest
from django.db import OperationalError
from sources_helpers import T0, FakeYuniKorn
from template_render import render_states

from dashboard import models as dm
from dashboard.sources import faults, services
from dashboard.sources.models import ClusterSource

pytestmark = pytest.mark.django_db

INTERVAL = 60


def _source(**kw: Any) -> ClusterSource:
    return ClusterSource.objects.create(
        name="acme-ml",
        base_url="http://127.0.0.1:9",
        poll_interval=INTERVAL,
        alert_after=300,
        **kw,
    )


def _polled(source: ClusterSource, at: Any) -> None:
    ClusterSource.objects.filter(pk=source.pk).update(
        last_success_at=at, status=ClusterSource.Status.HEALTHY
    )
    source.refresh_from_db()


def test_a_source_is_stale_after_two_intervals_and_alerts_once_after_alert_after() -> None:
    source = _source()
    _polled(source, T0)
    assert not faults.is_stale(source, T0 + timedelta(seconds=2 * INTERVAL - 1))
    assert faults.is_stale(source, T0 + timedelta(seconds=2 * INTERVAL))
    state = services.source_state(source, T0 + timedelta(seconds=2 * INTERVAL))
    assert (state["status"], state["stale"], state["healthy"]) == ("stale", True, False)
    assert "stale: no poll finished" in render_states()

    stale_at = T0 + timedelta(seconds=2 * INTERVAL)
    assert faults.alert_stale(stale_at + timedelta(seconds=299)) == []
    assert faults.alert_stale(stale_at + timedelta(seconds=300)) == [source.pk]
    assert faults.alert_stale(stale_at + timedelta(seconds=400)) == []  # once
    (alert,) = dm.Alert.objects.filter(kind="source_failing")
    assert "is stale" in alert.message

    # a poll finishes again: the streak ends with a recovery note
    source.refresh_from_db()
    back = stale_at + timedelta(seconds=500)
    assert faults.poll_finished(source, back) == ["faults"]
    source.save(update_fields=["faults"])
    _polled(source, back)
    assert dm.Alert.objects.filter(kind="source_recovered", message__contains="stale").exists()
    assert not faults.is_stale(source, back)
    assert faults.poll_finished(source, back) == []  # nothing alerted: nothing to end


def test_a_disabled_source_is_never_stale() -> None:
    source = _source(enabled=False)
    assert not faults.is_stale(source, T0 + timedelta(days=1))


def test_the_same_warnings_are_raised_once_per_source_and_cause() -> None:
    source = _source()
    for minute in range(5):
        faults.note_warnings(source, "snapshot", ["w1", "w2"], T0 + timedelta(minutes=minute))
    faults.note_warnings(source, "config", ["w1"], T0)
    assert dm.Alert.objects.filter(kind="import_warning").count() == 3
    faults.note_warnings(source, "snapshot", ["w1", "w3"], T0 + timedelta(minutes=6))
    # changed: raised again (the unread w1 entry counts it, w3 is new)
    assert dm.Alert.objects.filter(kind="import_warning").count() == 4
    assert dm.Alert.objects.get(message__contains="snapshot: w1").count == 2
    assert dm.Alert.objects.filter(message__contains="snapshot: w3").exists()


def test_polls_of_an_unchanged_source_raise_its_import_warning_once(
    yunikorn: FakeYuniKorn,
) -> None:
    """The REST answers' warning (no allow-preemption flag), over changed snapshots."""
    source = ClusterSource.objects.create(name="acme-ml", base_url=yunikorn.url)
    tree = yunikorn.json("/ws/v1/partition/default/queues")
    for minute in range(4):
        tree["children"][0]["maxResource"]["vcore"] = 40000 + minute * 1000
        yunikorn.set_json("/ws/v1/partition/default/queues", tree)
        assert (
            services.poll_source(
                source.pk, now=T0 + timedelta(minutes=minute), force=True, events=_no_events
            ).status
            == "stored"
        )
    warnings = dm.Alert.objects.filter(kind="import_warning")
    assert warnings.count() == 1, list(warnings.values_list("message", flat=True))
    assert dm.ClusterSnapshot.objects.count() == 4


def _no_events(source: ClusterSource, start: int) -> bytes:
    return b'{"InstanceUUID": "u", "LowestID": 0, "HighestID": -1, "EventRecords": null}'


def test_the_api_answers_json_503_while_the_database_cannot_be_reached(
    viewer_client: Any,
) -> None:
    with mock.patch(
        "django.db.backends.utils.CursorWrapper.execute",
        side_effect=OperationalError("could not connect to server"),
    ):
        answer = viewer_client.get("/api/sources/")
    assert answer.status_code == 503
    assert answer["Content-Type"].startswith("application/json")
    assert answer["Retry-After"] == "30"
    assert answer.json()["code"] == "database_unavailable"


def test_the_api_says_stale_not_healthy_while_stale(staff_client: Any) -> None:
    """Issue 37, item 11: the API's status agrees with its stale flag."""
    from dashboard.plumbing.clock import utcnow

    source = _source()
    _polled(source, utcnow() - timedelta(seconds=2 * INTERVAL + 5))
    body = staff_client.get(f"/api/sources/{source.pk}/").json()
    assert (body["status"], body["stale"]) == ("stale", True)
    _polled(source, utcnow())
    body = staff_client.get(f"/api/sources/{source.pk}/").json()
    assert (body["status"], body["stale"]) == ("healthy", False)
    ClusterSource.objects.filter(pk=source.pk).update(status=ClusterSource.Status.FAILING)
    assert staff_client.get(f"/api/sources/{source.pk}/").json()["status"] == "failing"
