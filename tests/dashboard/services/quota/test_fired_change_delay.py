"""Issue 37, item 11: a change that sets its own quota preemption delay fires with that
delay, not the snapshot's: its predicted run's alerts never say the delay "is 0"."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from scenarios import T0, small_scenario

from dashboard import models, services

pytestmark = pytest.mark.django_db


def at(seconds: float) -> Any:
    return T0 + timedelta(seconds=seconds)


def test_a_change_with_a_45_s_delay_fires_with_it() -> None:
    doc = small_scenario(delay=0)  # the snapshot's root.a has no delay yet
    doc["queues"]["children"][0]["max"] = {"vcore": 12000}
    services.store_snapshot(
        partition_name="default",
        source_kind=models.ClusterSnapshot.Source.SCENARIO,
        captured_at=at(0),
        scenario=doc,
        now=at(0),
    )
    partition = models.Partition.objects.get(name="default")
    change = services.schedule_quota_change(
        partition, "root.a", new_max={"vcore": 6000}, new_delay=45, now=at(10)
    )
    assert change.deadline == at(55)
    assert services.sweep_due_changes(at(55)).fired == (change.pk,)
    change.refresh_from_db()
    assert change.run is not None
    texts = list(models.Alert.objects.filter(run=change.run).values_list("message", flat=True))
    assert texts, "the fired timer raised its alert"
    assert not [t for t in texts if "is 0" in t], texts
    assert change.run.result is not None
    assert change.run.result["start_at"] == pytest.approx(at(55).timestamp() + 45)
