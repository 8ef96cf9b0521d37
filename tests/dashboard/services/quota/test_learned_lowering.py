"""Issue 40 item 6 for changes learned from a config read from the cluster (an import or a
poll of ``/ws/v1/config``): a max the cluster lowered says so, names the types it lowered
and the types usage is over (only those), and where the previous max came from; never
"usage rose" with the max "unchanged".

root.a holds eight allocations of 1 core and 1 GPU each (:mod:`quota_snapshots`'
cluster with a GPU on every allocation).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from quota_snapshots import T, scenario, store

from dashboard import models, services
from dashboard.services.quota.enforcement import retime_from_cluster

GPU = "nvidia.com/gpu"
Cause = models.QuotaChange.Cause
State = models.QuotaChange.State

pytestmark = pytest.mark.django_db


def config(vcore: int, gpu: int) -> bytes:
    return f"""partitions:
  - name: default
    preemption:
      quotapreemptionenabled: true
    queues:
      - name: root
        queues:
          - name: a
            parent: true
            properties:
              quota.preemption.delay: 60s
            resources:
              guaranteed:
                vcore: 2
              max:
                vcore: {vcore}
                {GPU}: {gpu}
            queues:
              - name: x
              - name: y
          - name: b
            resources:
              guaranteed:
                vcore: 5
""".encode()


def with_gpus(doc: dict[str, Any]) -> dict[str, Any]:
    doc["nodes"][0]["capacity"][GPU] = 16
    for a in doc["allocations"]:
        a["resources"] = {**a["resources"], GPU: 1}
    doc["queues"]["children"][0]["max"] = {"vcore": 12000, GPU: 10}
    return doc


def test_a_lowering_learned_from_a_config_names_the_types_lowered_and_over() -> None:
    """The cluster lowers root.a from 12 cores and 10 GPUs to 10 cores and 6 GPUs, with
    8 of each in use: both types were lowered, only the GPUs are over."""
    store(with_gpus(scenario(8)), 0)
    services.import_config(config(12, 10), filename="queues.yaml", now=T + timedelta(seconds=1))
    result = services.import_config(
        config(10, 6), filename="queues.yaml", now=T + timedelta(seconds=10)
    )
    (change,) = result.changes
    assert (change.cause, change.learned, change.state) == (Cause.CHANGE, True, State.WAITING)
    assert change.old_max == {"vcore": 12000, GPU: 10}
    assert change.new_max == {"vcore": 10000, GPU: 6}
    assert f"the cluster lowered the max of {GPU}, vcore" in change.reason, change.reason
    assert "the config in force before" in change.reason, change.reason
    assert f"usage over the max in {GPU} ({GPU} 8 against {GPU} 6)" in change.reason
    assert "usage over the max in vcore" not in change.reason
    assert "usage rose" not in change.reason
    assert "unchanged" not in change.reason


def test_a_lowering_of_one_type_names_only_that_type() -> None:
    store(with_gpus(scenario(8)), 0)
    services.import_config(config(12, 10), filename="queues.yaml", now=T + timedelta(seconds=1))
    result = services.import_config(
        config(12, 6), filename="queues.yaml", now=T + timedelta(seconds=10)
    )
    (change,) = result.changes
    assert f"the cluster lowered the max of {GPU} (" in change.reason, change.reason


def test_the_words_stay_when_the_schedulers_clock_retimes_the_change() -> None:
    """The config came before the scheduler's QUEUE_MAX event that times it: once the event
    is read, the change's timer counts from it, and its reason still says what the cluster
    lowered."""
    store(with_gpus(scenario(8)), 0)
    services.import_config(config(12, 10), filename="queues.yaml", now=T + timedelta(seconds=1))
    (change,) = services.import_config(
        config(10, 6), filename="queues.yaml", now=T + timedelta(seconds=10)
    ).changes
    assert change.clock_source == models.QuotaChange.ClockSource.CONFIG_IMPORT
    models.ObservedMaxChange.objects.create(
        partition=change.partition,
        event_id=7,
        queue="root.a",
        time=T + timedelta(seconds=5),
        new_max={"vcore": 10000, GPU: 6},
    )
    retime_from_cluster(change.partition, now=T + timedelta(seconds=20))
    change.refresh_from_db()
    assert change.clock_source == models.QuotaChange.ClockSource.EVENT
    assert change.deadline == T + timedelta(seconds=65)
    assert f"the cluster lowered the max of {GPU}, vcore" in change.reason, change.reason
    assert f"usage over the max in {GPU}" in change.reason
    assert "the scheduler's timer: started" in change.reason
    # fired in the dashboard (a prediction): still says what the cluster did
    assert services.sweep_due_changes(T + timedelta(seconds=65)).fired == (change.pk,)
    change.refresh_from_db()
    assert change.state == State.FIRED
    assert f"the cluster lowered the max of {GPU}, vcore" in change.reason, change.reason
    assert "timer fired in the dashboard" in change.reason
