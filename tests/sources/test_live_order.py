"""Config and events from the scheduler are learned as one step whose result does not
depend on which was read first (issue 24, item 3), polled in this process from the live
fake scheduler (:mod:`live_yunikorn`): root.batch lowered from 9 to 8 cores with its
QUEUE_MAX event, seen events first, config first, or both in one poll.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from live_yunikorn import EVENTS, live_yunikorn
from sources_helpers import T0, poll_live

from dashboard import models as dm
from dashboard.sources.models import ClusterSource

pytestmark = pytest.mark.django_db

Clock = dm.QuotaChange.ClockSource
QUEUE_MAX_15245 = datetime.fromtimestamp(1788256470.012887, tz=UTC)


def _learned() -> list[tuple[Any, ...]]:
    return [
        (c.clock_source, c.changed_at, c.deadline, c.state, c.new_max)
        for c in dm.QuotaChange.objects.filter(learned=True).order_by("id")
    ]


@pytest.mark.parametrize("order", ["events first", "config first", "one poll"])
def test_a_lowered_max_and_its_event_are_learned_once_whatever_came_first(order: str) -> None:
    """Whatever the order, one learned change: 8 cores, timed by its QUEUE_MAX event."""
    with live_yunikorn() as yk:
        source = ClusterSource.objects.create(name="live", base_url=yk.url)
        assert poll_live(source, T0, config=True).status == "stored"
        at_ns = time.time_ns()
        minute = timedelta(minutes=1)

        def lower_the_queue() -> None:  # the queues answer and the QUEUE_MAX event
            yk.set_max("root.batch", 8000)
            yk.queue_max_event("root.batch", 8000, at_ns)

        if order == "events first":
            lower_the_queue()
            poll_live(source, T0 + minute, config=True)
            yk.set_config_max("root.batch", 8000)
        elif order == "config first":
            yk.set_config_max("root.batch", 8000)
            poll_live(source, T0 + minute, config=True)
            lower_the_queue()
        else:
            lower_the_queue()
            yk.set_config_max("root.batch", 8000)
        poll_live(source, T0 + 2 * minute, config=True)
        poll_live(source, T0 + 3 * minute, config=True)  # nothing new: nothing more
    at = datetime.fromtimestamp(at_ns / 1e9, tz=UTC)
    ((clock, changed_at, deadline, state, new_max),) = _learned()
    assert (clock, state, new_max) == (
        Clock.EVENT,
        dm.QuotaChange.State.WAITING,
        {"vcore": 8000, "memory": 48 * 2**30},
    )
    assert abs((changed_at - at).total_seconds()) < 0.001
    # rule set scheduler (the default, engine.md 5.1): root.batch's timer from the first
    # batch's decrease (QUEUE_MAX at 09:54:30, delay 5 min) is running, and a further
    # decrease keeps it (Go's setPreemptionTime keeps a set start time)
    assert deadline == QUEUE_MAX_15245 + timedelta(minutes=5)
    reason = dm.QuotaChange.objects.get(learned=True).deadline_reason
    assert reason["rule"] == "kept", reason


def test_the_first_poll_times_the_timer_its_events_batch_explains() -> None:
    """root.batch is above its max at the first poll; the batch holds the QUEUE_MAX event
    that lowered it (09:54:30): the timer starts there, not at the poll (10:00)."""
    with live_yunikorn() as yk:
        source = ClusterSource.objects.create(name="live", base_url=yk.url)
        poll_live(source, T0, config=True)
    (change,) = dm.QuotaChange.objects.filter(queue_path="root.batch")
    assert (change.clock_source, change.changed_at, change.deadline) == (
        Clock.EVENT,
        QUEUE_MAX_15245,
        QUEUE_MAX_15245 + timedelta(minutes=5),
    )


def test_a_failing_events_batch_alerts_once_after_alert_after() -> None:
    with live_yunikorn() as yk:
        source = ClusterSource.objects.create(name="live", base_url=yk.url, alert_after=120)
        poll_live(source, T0)
        yk.fail(EVENTS, "500")
        for minutes in (1, 2, 3, 4):
            assert poll_live(source, T0 + timedelta(minutes=minutes)).status != "failed"
        yk.fail(EVENTS, "ok")
        poll_live(source, T0 + timedelta(minutes=5))
    failing = dm.Alert.objects.filter(kind="source_failing")
    # failing since 10:01, alert after 120 s: raised at the 10:03 poll, once
    assert [a.created_at for a in failing] == [T0 + timedelta(minutes=3)]
    assert "/ws/v1/events/batch" in failing.get().message
    assert (
        dm.Alert.objects.filter(
            kind="source_recovered", message__contains="events are read again"
        ).count()
        == 1
    )
