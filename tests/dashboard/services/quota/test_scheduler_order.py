"""Issue 40, item 8: every change of a queue is ordered by the scheduler's clock alone.

With ykbox (yunikorn-core): root.parent.leaf's max was raised 8 -> 24, and 3.4 s later
lowered 24 -> 10; core logged the decrease 24 -> 10. The dashboard read the config of
10 next to the config of 8 it knew (the config of 24 lived between two of its polls):
it stored "8 -> 10: the max was raised, no timer starts". The scheduler's QUEUE_MAX
events say what was in force just before the lowering: 24.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from dashboard import models, services

T0 = datetime(2026, 11, 28, 22, 0, tzinfo=UTC)
LEAF = "root.parent.leaf"


def config(vcore: int) -> bytes:
    return f"""partitions:
  - name: default
    preemption:
      quotapreemptionenabled: true
    queues:
      - name: root
        queues:
          - name: parent
            parent: true
            queues:
              - name: leaf
                properties:
                  quota.preemption.delay: 8s
                resources:
                  guaranteed:
                    vcore: 2
                  max:
                    vcore: {vcore}
""".encode()


def queue_max_event(event_id: int, vcore: int, at: datetime, instance: str = "i-1") -> None:
    models.ObservedMaxChange.objects.create(
        partition=models.Partition.objects.get(name="default"),
        instance_uuid=instance,
        event_id=event_id,
        queue=LEAF,
        time=at,
        new_max={"vcore": vcore * 1000},
    )


@pytest.mark.django_db
def test_a_lowering_seconds_after_a_raise_counts_from_the_raised_max() -> None:
    services.import_config(config(8), filename="queues.yaml", now=T0)
    raised, lowered = T0 + timedelta(seconds=30), T0 + timedelta(seconds=33.4)
    queue_max_event(40, 24, raised)
    queue_max_event(45, 10, lowered)
    result = services.import_config(
        config(10), filename="queues.yaml", now=T0 + timedelta(seconds=35)
    )
    (change,) = result.changes
    assert (change.old_max, change.new_max) == ({"vcore": 24000}, {"vcore": 10000})
    assert change.changed_at == lowered
    assert change.clock_source == models.QuotaChange.ClockSource.EVENT


@pytest.mark.django_db
def test_an_event_of_an_earlier_instance_does_not_tell_the_max_before() -> None:
    """A new scheduler instance numbers its events from 0 and starts from its config:
    the previous instance's events say nothing of what was in force in the new one."""
    services.import_config(config(8), filename="queues.yaml", now=T0)
    queue_max_event(40, 24, T0 + timedelta(seconds=30), instance="i-1")
    queue_max_event(5, 10, T0 + timedelta(seconds=60), instance="i-2")
    result = services.import_config(
        config(10), filename="queues.yaml", now=T0 + timedelta(seconds=65)
    )
    (change,) = result.changes
    assert change.old_max == {"vcore": 8000}
