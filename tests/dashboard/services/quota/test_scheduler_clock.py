"""The scheduler's quota-preemption timers come from what it reports, never from import time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rest_answers import rest_files, without_start_time

from dashboard.importers import parse_events, parse_snapshot
from dashboard.importers.scheduler_clock import scheduler_timers

CLUSTER_B = Path(__file__).parents[2] / "data" / "cluster-b" / "rest"
NS = 10**9
T1358 = 1791986280.0  # 2026-10-14T13:58:00Z, lab-west's second root.reports decrease


def test_reported_start_time_wins() -> None:
    answers = rest_files(CLUSTER_B)
    snap = parse_snapshot(answers)
    timers = scheduler_timers(snap.scenario, parse_events(answers["events_batch.json"]))
    (timer,) = timers.values()
    assert (timer.queue, timer.source) == ("root.reports", "quotaPreemptionStartTime")
    assert timer.fires_at == T1358 + 1200
    assert "quotaPreemptionStartTime" in timer.describe()


def test_start_from_the_queue_max_event_agrees_with_the_reported_time() -> None:
    answers = without_start_time(rest_files(CLUSTER_B))
    snap = parse_snapshot(answers)
    (timer,) = scheduler_timers(snap.scenario, parse_events(answers["events_batch.json"])).values()
    assert (timer.queue, timer.source, timer.event_id) == ("root.reports", "QUEUE_MAX event", 48112)
    assert timer.changed_at == pytest.approx(T1358, abs=0.01)
    assert timer.fires_at == pytest.approx(T1358 + 1200, abs=0.01)  # = quotaPreemptionStartTime


def test_without_events_the_start_is_unknown_not_now() -> None:
    snap = parse_snapshot(without_start_time(rest_files(CLUSTER_B)))
    (timer,) = scheduler_timers(snap.scenario).values()
    assert (timer.source, timer.fires_at, timer.changed_at) == ("unknown", None, None)


def test_shared_cluster_has_no_running_timer(fixtures_dir: Path) -> None:
    """root.batch's timer fired at 09:59:30; usage (10 cores) is at its max since."""
    answers = rest_files(fixtures_dir / "rest")
    snap = parse_snapshot(answers)
    assert scheduler_timers(snap.scenario, parse_events(answers["events_batch.json"])) == {}


def scenario(max_vcore: int, enabled: bool = True, managed: bool = True) -> dict[str, Any]:
    return {
        "partition": {"quota_preemption_enabled": enabled},
        "queues": {
            "name": "root",
            "children": [
                {
                    "name": "q",
                    "max": {"vcore": max_vcore},
                    "quota_preemption_delay": 300.0,
                    "remaining": {"vcore": 9000},
                    "is_managed": managed,
                }
            ],
        },
    }


def batch(*events: tuple[int, int, int | None]) -> Any:
    """(seconds, detail, max vcore) events on root.q: 403 max changes, 407 summaries."""
    records = []
    for t, detail, vcore in events:
        rec: dict[str, Any] = {
            "type": 4,
            "objectID": "root.q",
            "timestampNano": t * NS,
            "eventChangeType": 1,
            "eventChangeDetail": detail,
            "resource": {"resources": {"vcore": {"value": vcore}}} if vcore else {},
        }
        if detail == 407:
            rec["message"] = (
                "Quota Preemption results summary: preemptable resources: map[vcore:1000], "
                "claimed resources: map[vcore:1000], selected victims: 1, preempted victims: 1"
            )
        records.append(rec)
    doc = {"InstanceUUID": "u", "LowestID": 0, "HighestID": len(records) - 1}
    return parse_events({**doc, "EventRecords": records}, start=0)


@pytest.mark.parametrize(
    ("events", "started"),
    [
        (((100, 403, 8000),), 100),
        (((100, 403, 8000), (200, 403, 7000)), 100),  # lowering again keeps the first start
        # a raise above usage (9000 within 12000) clears it: Go's setPreemptionTime clears the
        # start time when sq.maxResource.StrictlyGreaterThanOrEqualsOnlyExisting(allocated)
        (((100, 403, 8000), (200, 403, 12000), (300, 403, 7000)), 300),
        (((100, 403, 8000), (150, 407, 8000), (300, 403, 7000)), 300),  # the run cleared it
        # a raise still below usage (9000 > 8500) keeps the timer: fires at 100 + 300
        (((100, 403, 8000), (200, 403, 8500), (300, 403, 7000)), 100),
    ],
)
def test_timer_rules(events: tuple[tuple[int, int, int | None], ...], started: int) -> None:
    """Rule set ``scheduler`` (the default), engine.md 5.1."""
    (timer,) = scheduler_timers(scenario(7000), batch(*events)).values()
    assert (timer.changed_at, timer.fires_at) == (started, started + 300)


def test_max_removed_then_set_under_each_rule_set() -> None:
    """Max removed at 200, set to 7000 at 300 (usage 9000). ``seed``: a newly set max is
    tighter -> the timer starts at 300. ``scheduler``: removal clears (``resources.IsZero(
    sq.maxResource)``), and nil -> 7000 is ``StrictlyGreaterThan(sq.maxResource,
    oldMaxResource)``, a raise, which starts no timer: the batch does not explain the
    running timer, so its start is unknown."""
    events = batch((100, 403, 8000), (200, 403, None), (300, 403, 7000))
    (seed,) = scheduler_timers(scenario(7000), events, "seed").values()
    assert (seed.changed_at, seed.fires_at) == (300, 600)
    (go,) = scheduler_timers(scenario(7000), events, "scheduler").values()
    assert (go.source, go.fires_at) == ("unknown", None)


def test_raise_keeps_the_timer_only_under_scheduler() -> None:
    """8000 at 100, raised to 8500 at 200 (usage 9000 still above): ``scheduler`` keeps the
    first start (100 + 300, "kept across the raise"); ``seed`` cancels on the increase, so
    the batch does not explain the running timer."""
    events = batch((100, 403, 8000), (200, 403, 8500))
    (go,) = scheduler_timers(scenario(8500), events).values()
    assert (go.fires_at, (go.reason or {}).get("rule")) == (400, "kept_across_raise")
    (seed,) = scheduler_timers(scenario(8500), events, "seed").values()
    assert (seed.source, seed.fires_at) == ("unknown", None)


def test_no_timer_where_quota_preemption_cannot_fire() -> None:
    events = batch((100, 403, 7000))
    assert scheduler_timers(scenario(7000, enabled=False), events) == {}
    assert scheduler_timers(scenario(7000, managed=False), events) == {}  # dynamic queue
    assert scheduler_timers(scenario(9000), events) == {}  # usage not above max
