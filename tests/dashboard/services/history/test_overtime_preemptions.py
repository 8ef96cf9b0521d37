"""A queue's preemptions over time: victims per UTC day and per node over 48 hours, predicted
and observed apart, what-ifs and unfinished runs left out, the queue's subtree only."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from dashboard import models
from dashboard.services.history.overtime import Window
from dashboard.services.history.overtime_preemptions import (
    RunCount,
    preemptions_per_day,
    preemptions_per_node,
)

pytestmark = pytest.mark.django_db

Run = models.PreemptionRun
T0 = datetime(2026, 11, 1, tzinfo=UTC)


@pytest.fixture
def partition() -> models.Partition:
    cluster = models.Cluster.objects.create(name="c1")
    return models.Partition.objects.create(cluster=cluster, name="default")


def _run(
    partition: models.Partition,
    when: datetime,
    nature: str,
    victims: list[tuple[str, str]],
    *,
    status: str = "done",
) -> Run:
    kind, trigger = {
        "predicted": (Run.Kind.QUOTA_ENFORCEMENT, Run.Trigger.TIMER),
        "observed": (Run.Kind.PREEMPT, Run.Trigger.OBSERVED),
        "what_if": (Run.Kind.WHATIF_QUOTA, Run.Trigger.MANUAL),
    }[nature]
    run = Run.objects.create(
        partition=partition, kind=kind, trigger=trigger, status=status, queued_at=when
    )
    for i, (leaf, node) in enumerate(victims):
        models.RunVictim.objects.create(
            run=run, position=i, allocation_key=f"a{run.pk}-{i}", queue=leaf, leaf=leaf, node=node
        )
    return run


def test_victims_per_day_by_nature_in_the_queues_subtree(partition: models.Partition) -> None:
    """Every day of the window is listed (zeros included); a victim of another queue, of
    a what-if or of an unfinished run is not counted; a run counts once per day."""
    _run(partition, T0 + timedelta(hours=1), "predicted", [("root.a.x", "n1"), ("root.a", "n2")])
    _run(partition, T0 + timedelta(hours=23), "observed", [("root.a.y", "n1"), ("root.b", "n1")])
    _run(partition, T0 + timedelta(days=2, hours=5), "observed", [("root.a", "n3")])
    _run(partition, T0 + timedelta(hours=2), "what_if", [("root.a", "n1")])
    _run(partition, T0 + timedelta(hours=3), "predicted", [("root.a", "n1")], status="failed")
    _run(partition, T0 + timedelta(hours=4), "observed", [("root.ab", "n1")])  # not under root.a
    _run(partition, T0 - timedelta(minutes=1), "observed", [("root.a", "n1")])  # before
    days = preemptions_per_day(partition, "root.a", Window(T0, T0 + timedelta(days=3)))
    assert [(d.day, d.predicted, d.observed) for d in days] == [
        (date(2026, 11, 1), RunCount(1, 2), RunCount(1, 1)),
        (date(2026, 11, 2), RunCount(0, 0), RunCount(0, 0)),
        (date(2026, 11, 3), RunCount(0, 0), RunCount(1, 1)),
    ]


def test_root_counts_every_victim_and_days_end_before_the_window_end(
    partition: models.Partition,
) -> None:
    _run(partition, T0 + timedelta(hours=1), "predicted", [("root.a", "n1"), ("root.b", "n2")])
    _run(partition, T0 + timedelta(days=1), "observed", [("root.b", "n1")])  # at the end: out
    days = preemptions_per_day(partition, "root", Window(T0, T0 + timedelta(days=1)))
    assert [(d.day, d.predicted, d.observed) for d in days] == [
        (date(2026, 11, 1), RunCount(1, 2), RunCount(0, 0))
    ]


def test_victims_per_node_over_the_48_hours_before_until(partition: models.Partition) -> None:
    """Most preempted node first (ties by name); older victims are outside the 48 hours."""
    until = T0 + timedelta(days=5)
    _run(partition, until - timedelta(hours=1), "observed", [("root.a", "n2"), ("root.a", "n2")])
    _run(partition, until - timedelta(hours=47), "predicted", [("root.a", "n2"), ("root.a", "n1")])
    _run(partition, until - timedelta(hours=30), "observed", [("root.a.x", "n3")])
    _run(partition, until - timedelta(hours=49), "observed", [("root.a", "n9")])
    _run(partition, until - timedelta(hours=2), "observed", [("root.b", "n9")])
    window, nodes = preemptions_per_node(partition, "root.a", until)
    assert window == Window(until - timedelta(hours=48), until)
    assert [(n.node, n.predicted, n.observed) for n in nodes] == [
        ("n2", 1, 2),
        ("n1", 1, 0),
        ("n3", 0, 1),
    ]
