"""A real Celery worker and beat follow a fake YuniKorn scheduler that changes live.

The fake (:mod:`live_yunikorn`) serves the acme-ml cluster through the REST API the
dashboard reads (queues, nodes, applications, partitions, config, events batch and
stream) and is changed by the test while the worker polls it: the first batch's
QUEUE_MAX event, a live decrease whose event comes before its config, a second
decrease whose config comes first, a raise seen in one poll, a failing events
endpoint, a worker killed in the middle of a poll, a scheduler restart; in stream
mode, a quota preemption whose summary comes a cycle after its victims.

Run on PostgreSQL and Redis (the workers reach the pytest-django test database):

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/dash_NAME \\
    REDIS_URL=redis://127.0.0.1:6379/N \\
    pytest tests/sources/test_live_scheduler_integration.py

Waits are bounds, not timing assertions.
"""

from __future__ import annotations

import json
import os
import signal
import time
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
import redis
from live_yunikorn import EVENTS, LiveYuniKorn, live_yunikorn
from support.processes import FAILED
from test_sources_integration import Processes, wait_for

from dashboard import models as dm
from dashboard.sources import services
from dashboard.sources.models import ClusterSource

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

INTERVAL = 5
ALERT_AFTER = 8
Clock = dm.QuotaChange.ClockSource
QUEUE_MAX_15245 = datetime.fromtimestamp(1788256470.012887, tz=UTC)


@pytest.fixture
def scheduler() -> Iterator[LiveYuniKorn]:
    with live_yunikorn() as state:
        yield state


@pytest.fixture(scope="module")
def _shared_processes(
    redis_url: str, django_db_setup: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Processes]:
    """The worker and beat the module's tests share in one test process; the queue is
    emptied before and after them (never under running processes)."""
    redis.Redis.from_url(redis_url).flushdb()
    procs = Processes(tmp_path_factory.mktemp("live-celery"), redis_url)
    yield procs
    procs.retire()
    redis.Redis.from_url(redis_url).flushdb()


@pytest.fixture
def processes(_shared_processes: Processes, request: pytest.FixtureRequest) -> Iterator[Processes]:
    """A worker and a beat following the test's source: the ones the module's previous
    test left running, or new ones (a process died, or that test failed). Each test has
    its own fake scheduler, source and rows; its end disables its sources, so no new
    poll of them starts, and a poll under way stores nothing once the source's row is
    gone (its writes check the lease on the locked row)."""
    shared = _shared_processes
    if not shared.running():
        shared.retire()
        shared.worker()  # first: procs[0] is the worker
        shared.beat()
    yield shared
    ClusterSource.objects.update(enabled=False)
    if request.node.stash.get(FAILED, False) or not shared.running():
        shared.retire()


def _at(ns: int) -> datetime:
    return datetime.fromtimestamp(ns / 1e9, tz=UTC)


def _close(a: datetime | None, b: datetime) -> bool:
    return a is not None and abs((a - b).total_seconds()) < 0.001


def learned(vcore: int) -> list[dm.QuotaChange]:
    """The changes the dashboard learned from the cluster setting root.batch to *vcore*."""
    return [
        c
        for c in dm.QuotaChange.objects.filter(queue_path="root.batch", learned=True)
        if (c.new_max or {}).get("vcore") == vcore
    ]


def max_event_stored(vcore: int) -> bool:
    return any(
        (e.new_max or {}).get("vcore") == vcore
        for e in dm.ObservedMaxChange.objects.filter(queue="root.batch")
    )


def config_stored(scheduler: LiveYuniKorn) -> bool:
    return dm.ConfigVersion.objects.filter(checksum__iexact=scheduler.config["Checksum"]).exists()


def test_a_worker_learns_every_change_in_any_order_and_shows_its_faults(
    scheduler: LiveYuniKorn, processes: Processes
) -> None:
    source = ClusterSource.objects.create(
        name="live", base_url=scheduler.url, poll_interval=INTERVAL, alert_after=ALERT_AFTER
    )

    # 1. the first poll learns the timer its events batch explains: root.batch uses 10
    # cores over a max of 9 since QUEUE_MAX event 15245 (09:54:30), delay 5m
    wait_for(
        lambda: dm.QuotaChange.objects.filter(queue_path="root.batch").exists(),
        180,
        "the first poll's timer",
        processes,
    )
    (first,) = dm.QuotaChange.objects.filter(queue_path="root.batch")
    assert first.clock_source == Clock.EVENT  # not the poll's time
    assert _close(first.changed_at, QUEUE_MAX_15245)
    assert _close(first.deadline, QUEUE_MAX_15245 + timedelta(minutes=5))

    # 2. a live decrease to 8 cores: the queue and its QUEUE_MAX event first, the config
    # a poll later - learned once, on the event's time
    t8 = time.time_ns()
    scheduler.set_max("root.batch", 8000)
    scheduler.queue_max_event("root.batch", 8000, t8)
    wait_for(lambda: max_event_stored(8000), 60, "the 8-core event", processes)
    scheduler.set_config_max("root.batch", 8000)
    wait_for(lambda: config_stored(scheduler), 60, "the 8-core config", processes)
    (eight,) = learned(8000)
    assert (eight.clock_source, _close(eight.changed_at, _at(t8))) == (Clock.EVENT, True)

    # 3. a second decrease to 7: the config first, its event a poll later
    scheduler.set_config_max("root.batch", 7000)
    wait_for(lambda: config_stored(scheduler), 60, "the 7-core config", processes)
    t7 = time.time_ns()
    scheduler.set_max("root.batch", 7000)
    scheduler.queue_max_event("root.batch", 7000, t7)
    wait_for(lambda: max_event_stored(7000), 60, "the 7-core event", processes)
    wait_for(
        lambda: all(c.clock_source == Clock.EVENT for c in learned(7000)),
        60,
        "the 7-core change retimed by its event",
        processes,
    )
    (seven,) = learned(7000)
    assert _close(seven.changed_at, _at(t7))

    # 4. a raise to 12, config and event in one poll
    t12 = time.time_ns()
    scheduler.set_max("root.batch", 12000)
    scheduler.queue_max_event("root.batch", 12000, t12)
    scheduler.set_config_max("root.batch", 12000)
    wait_for(lambda: config_stored(scheduler), 60, "the 12-core config", processes)
    (twelve,) = learned(12000)
    assert (twelve.clock_source, _close(twelve.changed_at, _at(t12))) == (Clock.EVENT, True)
    assert len(learned(8000)) == len(learned(7000)) == 1  # nothing learned twice

    # 5. a failing events endpoint: the polls go on, and it alerts after alert_after
    scheduler.fail(EVENTS, "500")
    wait_for(
        lambda: dm.Alert.objects.filter(
            kind="source_failing", message__contains="events/batch"
        ).exists(),
        90,
        "the events alert",
        processes,
    )
    source.refresh_from_db()
    assert source.status == ClusterSource.Status.HEALTHY  # the snapshots are still read
    scheduler.fail(EVENTS, "ok")

    # 6. a worker killed in the middle of a poll holds its lease: the source shows
    # "stale" within two poll intervals and alerts after alert_after (the beat tick
    # runs on the other worker)
    scheduler.fail("/ws/v1/partitions", "hang")
    asked = scheduler.rest.requests_to("/ws/v1/partitions")
    wait_for(
        lambda: scheduler.rest.requests_to("/ws/v1/partitions") > asked, 60, "a poll", processes
    )
    worker = processes.procs[0][0]
    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait(timeout=30)
    killed_at = time.monotonic()
    processes.procs.pop(0)
    processes.worker()
    wait_for(
        lambda: services.source_state(ClusterSource.objects.get(pk=source.pk))["stale"],
        2 * INTERVAL + 5,
        "the source to show stale",
        processes,
    )
    assert time.monotonic() - killed_at <= 2 * INTERVAL + 5
    wait_for(
        lambda: dm.Alert.objects.filter(kind="source_failing", message__contains="stale").exists(),
        90,
        "the stale alert",
        processes,
    )
    # one warning per source and cause: the importer's REST warning was raised once,
    # for a dozen snapshots and configs
    warnings = list(
        dm.Alert.objects.filter(kind="import_warning").values_list("message", flat=True)
    )
    assert len(warnings) == len(set(warnings)), warnings
    assert len([w for w in warnings if "allow-preemption flag" in w]) == 1, warnings
    assert dm.ClusterSnapshot.objects.count() >= 4


def test_stream_mode_keeps_victims_whose_summary_comes_a_cycle_later(
    scheduler: LiveYuniKorn, processes: Processes
) -> None:
    source = ClusterSource.objects.create(
        name="live-stream",
        base_url=scheduler.url,
        poll_interval=INTERVAL,
        follow_stream=True,
        reconcile_interval=3600,
    )
    wait_for(
        lambda: ClusterSource.objects.get(pk=source.pk).last_cycle.startswith("stream:"),
        180,
        "a cycle on the stream",
        processes,
    )
    # the scheduler's quota preemption of root.batch: two victims in this cycle...
    now = time.time_ns()
    scheduler.fixture_event(18, now)
    scheduler.fixture_event(19, now + 1000)
    wait_for(
        lambda: len(ClusterSource.objects.get(pk=source.pk).events_waiting or []) == 2,
        60,
        "the victims kept waiting for their summary",
        processes,
    )
    # ...its summary in a later one, after the queues answer changed too
    scheduler.set_max("root.batch", 8000)
    added = datetime.now(UTC)
    scheduler.fixture_event(20, now + 2000)
    wait_for(
        lambda: dm.PreemptionRun.objects.filter(trigger="observed", kind="quota").exists(),
        60,
        "the observed quota preemption",
        processes,
    )
    run = dm.PreemptionRun.objects.get(trigger="observed", kind="quota")
    assert sorted(run.victims.values_list("allocation_key", flat=True)) == [
        "61c627cf-f498-5eca-8f51-53dad0540f7c",
        "9fc30366-04e6-5707-ba1c-345ee30643cf",
    ]

    # the snapshot that followed is stamped when its answers were fetched: after the
    # summary arrived, not when its cycle began (the stream was open before it)
    def lowered() -> dm.ClusterSnapshot | None:
        return (
            dm.ClusterSnapshot.objects.filter(queues__path="root.batch", queues__max__vcore=8000)
            .order_by("captured_at")
            .first()
        )

    wait_for(lambda: lowered() is not None, 60, "the snapshot after the summary", processes)
    snapshot = lowered()
    assert snapshot is not None
    assert snapshot.captured_at >= added


def _control(scheduler: LiveYuniKorn, action: str, args: dict[str, object]) -> object:
    """One action of the fake scheduler's HTTP control API (as another process would)."""
    request = urllib.request.Request(
        f"{scheduler.url}/control/{action}",
        data=json.dumps(args).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as answer:  # the fake, on 127.0.0.1
        return json.loads(answer.read())["result"]


def test_a_scheduler_restart_is_stored_alerted_and_rearms_the_waiting_deadline(
    scheduler: LiveYuniKorn, processes: Processes
) -> None:
    """yunikorn-core keeps no timer across a restart: recovery adds root.batch's
    allocations again (IncAllocatedResource, no start time) and, usage 10 cores over the
    max of 8, arms its timer at the restart + its 5-minute delay (engine.md 5.1, rule set
    ``scheduler``, the default). The restart time is the new ``startTime`` of
    ``/ws/v1/clusters``, a second before the new instance's first event."""
    source = ClusterSource.objects.create(
        name="live-restart", base_url=scheduler.url, poll_interval=INTERVAL
    )
    first_start = _at(scheduler.start_ns)
    wait_for(
        lambda: dm.SchedulerStart.objects.filter(started_at=first_start).exists(),
        180,
        "the first instance, started at its served startTime",
        processes,
    )
    (baseline,) = dm.SchedulerStart.objects.all()
    assert (baseline.instance_uuid, baseline.is_restart) == (scheduler.uuid, False)
    partition = dm.Partition.objects.get(name="default")
    assert partition.timer_rules == "scheduler"

    # the timer the first batch explains (since 09:54:30 on the fixture's day) is long
    # due: the dashboard's sweep fires it, a prediction
    wait_for(
        lambda: (
            dm.QuotaChange.objects.filter(queue_path="root.batch").exists()
            and not dm.QuotaChange.objects.filter(
                queue_path="root.batch", state__in=dm.QuotaChange.ACTIVE_STATES
            ).exists()
        ),
        120,
        "the first timer fired",
        processes,
    )
    # a live decrease to 8 cores with its event: root.batch (10 cores) waits 5 minutes
    t8 = time.time_ns()
    scheduler.set_max("root.batch", 8000)
    scheduler.queue_max_event("root.batch", 8000, t8)
    scheduler.set_config_max("root.batch", 8000)
    # a poll that read the new max before the event is in a batch times the change by
    # its capture first; the event's time replaces it when the batch comes
    wait_for(
        lambda: [c for c in learned(8000) if _close(c.deadline, _at(t8) + timedelta(minutes=5))],
        60,
        "the 8-core change, timed by its event",
        processes,
    )
    (lowered,) = learned(8000)
    assert lowered.state == dm.QuotaChange.State.WAITING

    # the scheduler restarts, through its control API
    restart = _control(scheduler, "restart", {})
    assert isinstance(restart, dict)
    restarted_at = _at(int(restart["start_ns"]))
    rearmed_at = restarted_at + timedelta(minutes=5)

    def rearmed() -> bool:
        lowered.refresh_from_db()
        return _close(lowered.deadline, rearmed_at)

    wait_for(rearmed, 60, "the deadline re-armed at the restart", processes)
    # a poll whose events were read just before the restart and its clusters answer just
    # after notes the restart from the startTime alone; the next events batch names the
    # new instance
    wait_for(
        lambda: dm.SchedulerStart.objects.filter(
            is_restart=True, instance_uuid=restart["instance"]
        ).exists(),
        60,
        "the restart to carry the new instance",
        processes,
    )
    stored = dm.SchedulerStart.objects.get(is_restart=True)
    assert stored.instance_uuid == restart["instance"]
    assert _close(stored.started_at, restarted_at)
    assert stored.source == "/ws/v1/clusters startTime"
    assert [q["queue"] for q in stored.rearmed] == ["root.batch"]
    assert lowered.state == dm.QuotaChange.State.WAITING
    assert lowered.deadline_reason["rule"] == "rearmed"
    (alert,) = dm.Alert.objects.filter(kind=dm.Alert.Kind.SCHEDULER_RESTART)
    assert f"instance {restart['instance']}" in alert.message
    assert "/ws/v1/clusters startTime" in alert.message
    assert "rule set scheduler" in alert.message
    assert "root.batch until" in alert.message
    # later polls of the same instance move nothing
    polls = ClusterSource.objects.get(pk=source.pk).last_poll_at
    wait_for(
        lambda: ClusterSource.objects.get(pk=source.pk).last_poll_at != polls,
        60,
        "another poll",
        processes,
    )
    assert dm.SchedulerStart.objects.filter(is_restart=True).count() == 1
    assert dm.Alert.objects.filter(kind=dm.Alert.Kind.SCHEDULER_RESTART).count() == 1
    lowered.refresh_from_db()
    assert _close(lowered.deadline, rearmed_at)
