"""A scheduler restart seen in a poll: the events batch answers another ``InstanceUUID``
whose ids start from 0 again. The restart is stored, shown in the history and the alert
feed, and the waiting timer of a queue over its max is re-armed at the restart + delay
(rule set ``scheduler``, engine.md 5.1: recovery adds every allocation through
``IncAllocatedResource`` with no start time).

Served from a local HTTP server with the shared acme-ml answers and events (the
``served`` fixture of ``test_observed_poll``): root.research.nlp uses 8 cores (12
allocated, 4 being preempted), max 16, delay 10 minutes.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from django.test import Client
from sources_helpers import T0, FakeYuniKorn, SleepRecorder, poll_live
from test_observed_poll import UUID, Ring, served

from dashboard import models as dm
from dashboard import services as platform
from dashboard.sources import services as sources
from dashboard.sources.client import FetchError
from dashboard.sources.health import default_path_fetcher
from dashboard.sources.models import ClusterSource

__all__ = ["served"]  # the fixture, used by name

pytestmark = pytest.mark.django_db

NLP = "root.research.nlp"
QUEUES = "/ws/v1/partition/default/queues"
NEW_UUID = "5f1c2d3e-after-the-restart"


def restart(yunikorn: FakeYuniKorn, ring: Ring, at_ns: int) -> None:
    """The scheduler restarts: a new instance, event ids from 0, nlp's max at 6 cores
    (the change applied in its config)."""
    first = [dict(r) for r in ring.records[:2]]
    for i, r in enumerate(first):
        r["timestampNano"] = at_ns + i * 1000
    ring.uuid, ring.lowest, ring.records = NEW_UUID, 0, first
    queues = yunikorn.json(QUEUES)
    stack = [queues]
    while stack:
        q = stack.pop()
        if q["queuename"] == NLP:
            q["maxResource"]["vcore"] = 6000
        stack.extend(q.get("children") or [])
    yunikorn.set_json(QUEUES, queues)


def page(staff: Any, url: str) -> str:
    client = Client()
    client.force_login(staff)
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


def test_a_restart_seen_in_a_poll_rearms_the_deadline_and_is_shown(
    served: tuple[FakeYuniKorn, Ring], staff: Any
) -> None:
    yunikorn, ring = served
    source = ClusterSource.objects.create(name="acme-ml", base_url=yunikorn.url)
    assert poll_live(source, T0).status == "stored"
    partition = dm.Partition.objects.get()
    (baseline,) = dm.SchedulerStart.objects.all()
    assert (baseline.instance_uuid, baseline.is_restart) == (UUID, False)
    change = platform.schedule_quota_change(partition, NLP, new_max={"vcore": 6000}, now=T0)
    assert (change.state, change.deadline) == ("waiting", T0 + timedelta(minutes=10))
    restarted_at = T0 + timedelta(minutes=5)
    restart(yunikorn, ring, int(restarted_at.timestamp() * 10**9))
    assert poll_live(source, T0 + timedelta(minutes=6)).status == "stored"
    source.refresh_from_db()
    assert source.events_instance == NEW_UUID
    change.refresh_from_db()
    # Go: the timer is lost with the scheduler; recovery re-arms it at 10:05 + 10 min
    assert (change.state, change.deadline) == ("waiting", restarted_at + timedelta(minutes=10))
    assert change.deadline_reason == {
        "rule": "rearmed",
        "at": restarted_at.timestamp(),
        "since": None,
    }
    stored = dm.SchedulerStart.objects.get(is_restart=True)
    assert (stored.instance_uuid, stored.started_at) == (NEW_UUID, restarted_at)
    # root.batch recovers 12 cores allocated (2 of them being preempted) over its 10-core
    # max: the scheduler's usage is allocated (engine.md 5.1), it is re-armed too
    assert [q["queue"] for q in stored.rearmed] == [NLP, "root.batch"]
    alert = dm.Alert.objects.get(kind=dm.Alert.Kind.SCHEDULER_RESTART, partition=partition)
    assert f"instance {NEW_UUID}" in alert.message
    assert f"{NLP} until 2026-09-01 10:15:00 UTC" in alert.message
    assert NEW_UUID in page(staff, "/history/")
    assert "the scheduler restarted at 2026-09-01 10:05:00 UTC" in page(staff, "/alerts/")
    # polled again: the same instance, nothing is re-armed twice
    poll_live(source, T0 + timedelta(minutes=7))
    assert dm.SchedulerStart.objects.count() == 2
    assert dm.Alert.objects.filter(kind=dm.Alert.Kind.SCHEDULER_RESTART).count() == 1


# -- the scheduler's startTime (/ws/v1/clusters, read with the health card) -------------

HEALTH = "/ws/v1/scheduler/healthcheck"
CLUSTERS = "/ws/v1/clusters"


def serve_start(yunikorn: FakeYuniKorn, started: datetime) -> None:
    """The scheduler's health and /ws/v1/clusters answer with *started* as its startTime."""
    yunikorn.set_json(HEALTH, {"Healthy": True, "HealthChecks": []})
    yunikorn.set_json(
        CLUSTERS,
        [
            {
                "startTime": int(started.timestamp() * 10**9),
                "rmBuildInformation": [{"buildVersion": "1.7.0", "rmId": "mycluster"}],
                "partition": "default",
                "clusterName": "kubernetes",
            }
        ],
    )


def poll_with_health(
    source: ClusterSource, at: datetime, *, events: Any = None
) -> sources.PollOutcome:
    """A forced poll over HTTP that also reads the scheduler's health and clusters answer,
    as every poll of a worker does."""
    return sources.poll_source(
        source.pk,
        now=at,
        force=True,
        fetch=sources.default_fetcher(sleep=SleepRecorder()),
        events=events or sources.default_events_fetcher(sleep=SleepRecorder()),
        health=default_path_fetcher(sources.fetch_policy()),
    )


def test_a_restart_is_timed_by_the_clusters_start_time_when_served(
    served: tuple[FakeYuniKorn, Ring], staff: Any
) -> None:
    """The new instance's first event comes 40 s after its start: the restart is the
    startTime (10:05), not the event, and nlp's deadline is 10:05 + 10 min."""
    yunikorn, ring = served
    first_start = T0 - timedelta(hours=2)
    serve_start(yunikorn, first_start)
    source = ClusterSource.objects.create(name="acme-ml", base_url=yunikorn.url)
    assert poll_with_health(source, T0).status == "stored"
    partition = dm.Partition.objects.get()
    (baseline,) = dm.SchedulerStart.objects.all()
    # the instance's start is the served startTime, not its first event in the buffer
    assert (baseline.instance_uuid, baseline.started_at, baseline.is_restart) == (
        UUID,
        first_start,
        False,
    )
    assert baseline.source == "/ws/v1/clusters startTime"
    change = platform.schedule_quota_change(partition, NLP, new_max={"vcore": 6000}, now=T0)
    restarted_at = T0 + timedelta(minutes=5)
    restart(yunikorn, ring, int((restarted_at + timedelta(seconds=40)).timestamp() * 10**9))
    serve_start(yunikorn, restarted_at)
    assert poll_with_health(source, T0 + timedelta(minutes=6)).status == "stored"
    stored = dm.SchedulerStart.objects.get(is_restart=True)
    assert (stored.instance_uuid, stored.started_at, stored.source) == (
        NEW_UUID,
        restarted_at,
        "/ws/v1/clusters startTime",
    )
    change.refresh_from_db()
    assert (change.state, change.deadline) == ("waiting", restarted_at + timedelta(minutes=10))
    assert change.deadline_reason["at"] == restarted_at.timestamp()
    # root.batch recovers 12 cores allocated (2 of them being preempted) over its 10-core
    # max: the scheduler's usage is allocated (engine.md 5.1), it is re-armed too
    assert [q["queue"] for q in stored.rearmed] == [NLP, "root.batch"]
    (alert,) = dm.Alert.objects.filter(kind=dm.Alert.Kind.SCHEDULER_RESTART)
    assert "the scheduler restarted at 2026-09-01 10:05:00 UTC" in alert.message
    assert "/ws/v1/clusters startTime" in alert.message
    assert f"{NLP} until 2026-09-01 10:15:00 UTC" in alert.message
    assert "the scheduler restarted at 2026-09-01 10:05:00 UTC" in page(staff, "/alerts/")
    # polled again: the same start, nothing moves
    assert poll_with_health(source, T0 + timedelta(minutes=7)).status == "unchanged"
    assert dm.SchedulerStart.objects.count() == 2
    assert dm.Alert.objects.filter(kind=dm.Alert.Kind.SCHEDULER_RESTART).count() == 1


def test_a_new_start_time_is_a_restart_while_the_events_batch_fails(
    served: tuple[FakeYuniKorn, Ring],
) -> None:
    """The events batch cannot be read, so no new InstanceUUID is seen: the new startTime
    alone recognises the restart and re-arms nlp; the next batch names the instance."""
    yunikorn, ring = served
    serve_start(yunikorn, T0 - timedelta(hours=2))
    source = ClusterSource.objects.create(name="acme-ml", base_url=yunikorn.url)
    assert poll_with_health(source, T0).status == "stored"
    partition = dm.Partition.objects.get()
    change = platform.schedule_quota_change(partition, NLP, new_max={"vcore": 6000}, now=T0)
    restarted_at = T0 + timedelta(minutes=5)
    restart(yunikorn, ring, int((restarted_at + timedelta(seconds=40)).timestamp() * 10**9))
    serve_start(yunikorn, restarted_at)

    def failing(source: ClusterSource, start: int) -> bytes:
        raise FetchError("events", "HTTP 500 from the scheduler")

    poll_with_health(source, T0 + timedelta(minutes=6), events=failing)
    stored = dm.SchedulerStart.objects.get(is_restart=True)
    assert (stored.instance_uuid, stored.started_at) == ("", restarted_at)
    (alert,) = dm.Alert.objects.filter(kind=dm.Alert.Kind.SCHEDULER_RESTART)
    assert "(instance not named yet; time from the /ws/v1/clusters startTime)" in alert.message
    change.refresh_from_db()
    assert change.deadline == restarted_at + timedelta(minutes=10)
    # the events come back: the instance is this start's, no second restart, and the
    # restart's one alert names it
    poll_with_health(source, T0 + timedelta(minutes=7))
    stored.refresh_from_db()
    assert stored.instance_uuid == NEW_UUID
    (alert,) = dm.Alert.objects.filter(kind=dm.Alert.Kind.SCHEDULER_RESTART)
    assert f"(instance {NEW_UUID}; time from the /ws/v1/clusters startTime)" in alert.message
    assert "re-armed: root." in alert.message
    assert dm.SchedulerStart.objects.filter(is_restart=True).count() == 1
    change.refresh_from_db()
    assert change.deadline == restarted_at + timedelta(minutes=10)
