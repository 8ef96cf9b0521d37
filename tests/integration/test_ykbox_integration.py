"""A quota change's life held against the real scheduler (ykbox), with a real Celery
worker and beat on PostgreSQL and Redis, in polling and in stream mode.

ykbox runs apache/yunikorn-core in-process (:mod:`ykbox`); the dashboard follows it as
a live source.  Every case compares what the dashboard stored with what core did: the
deadline with the one core logs (within a second), the observed quota preemption and
its victims with the victims core logged, the usage with core's ``allocatedResource``.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/wt_NAME REDIS_URL=redis://127.0.0.1:6379/N \\
      .venv/bin/pytest -m ykbox tests/integration/test_ykbox_integration.py

Waits are bounds, not timing assertions.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
from integration_support import Cluster, wait_for
from ykbox import Ykbox, queues_yaml

from dashboard import models as dm
from dashboard.sources.models import ClusterSource

pytestmark = [
    pytest.mark.integration,
    pytest.mark.ykbox,
    pytest.mark.subprocess,
    pytest.mark.django_db(transaction=True),
]

LEAF = "root.parent.leaf"
DELAY = 8  # seconds: more than a poll interval, so a poll sees the change waiting
INTERVAL = 5
MODES = ["poll", "stream"]

# the environment of the worker and beat: the beat tick and the sweep every second
FAST = {
    "SOURCES_BEAT_SECONDS": "1",
    "SOURCES_HTTP_TIMEOUT": "5",
    "SOURCES_HTTP_BACKOFF": "0.1",
    "SOURCES_STREAM_WINDOW_SECONDS": "2",
    "DASHBOARD_SWEEP_SECONDS": "1",
}


def leaf_config(vcore: int, *, delay: int = DELAY, gpu: int | None = None, **more: int) -> str:
    resources = {"vcore": vcore, **more}
    guaranteed: dict[str, int] = {"vcore": 2}
    if gpu is not None:
        resources["nvidia.com/gpu"] = gpu
    return queues_yaml(
        {"parent.leaf": {"max": resources, "guaranteed": guaranteed, "delay": f"{delay}s"}}
    )


@pytest.fixture
def ykbox(tmp_path: Path) -> Iterator[Ykbox]:
    box = Ykbox(tmp_path, leaf_config(8))
    yield box
    box.stop()


@pytest.fixture
def follow(ykbox: Ykbox, cluster: Cluster, request: pytest.FixtureRequest) -> ClusterSource:
    """The cluster as a live source (polled, or following its event stream), with a
    worker and a beat."""
    stream = request.param == "stream"
    source = ClusterSource.objects.create(
        name=f"ykbox-{request.param}",
        base_url=ykbox.url,
        poll_interval=INTERVAL,
        follow_stream=stream,
        reconcile_interval=3600 if stream else INTERVAL,
    )
    cluster.worker(**FAST)
    cluster.beat(**FAST)
    return source


def seconds(a: datetime | None, b: datetime | None) -> float:
    assert a is not None and b is not None, (a, b)
    return abs((a - b).total_seconds())


def leaf_changes() -> list[dm.QuotaChange]:
    return list(dm.QuotaChange.objects.filter(queue_path=LEAF).order_by("changed_at", "id"))


def lowered_to(vcore: int) -> list[dm.QuotaChange]:
    return [c for c in leaf_changes() if (c.new_max or {}).get("vcore") == vcore * 1000]


def latest_usage(path: str) -> dict[str, int]:
    snap = dm.ClusterSnapshot.objects.order_by("-captured_at", "-id").first()
    assert snap is not None
    return {k: int(v) for k, v in (snap.queues.get(path=path).allocated or {}).items()}


def observed_quota() -> list[dm.PreemptionRun]:
    return list(
        dm.PreemptionRun.objects.filter(trigger="observed", kind="quota", queue=LEAF).order_by(
            "queued_at"
        )
    )


def fill(ykbox: Ykbox, asks: int = 8) -> None:
    ykbox.nodes(2)
    ykbox.app("app-1", LEAF, asks)
    wait_for(lambda: ykbox.bound() == asks, 30, f"{asks} pods bound")


@pytest.mark.parametrize("follow", MODES, indirect=True)
def test_a_lowering_above_usage_waits_fires_and_is_enforced_as_core_did(
    ykbox: Ykbox, follow: ClusterSource
) -> None:
    fill(ykbox)
    wait_for(lambda: dm.ClusterSnapshot.objects.exists(), 90, "the first snapshot")
    wait_for(lambda: latest_usage(LEAF).get("vcore") == 8000, 30, "8 cores used")

    ykbox.config(leaf_config(4))
    wait_for(lambda: ykbox.deadline(LEAF) is not None, 10, "core's timer")
    core_deadline = ykbox.deadline(LEAF)

    # the dashboard learns the lowering while it waits, with core's deadline
    wait_for(lambda: lowered_to(4), DELAY, "the lowering learned while it waits")
    (change,) = lowered_to(4)
    assert change.learned
    assert change.state in (dm.QuotaChange.State.WAITING, dm.QuotaChange.State.FIRED)
    assert seconds(change.deadline, core_deadline) <= 1.0, (change.deadline, core_deadline)

    # core preempts 4 one-core pods; the dashboard observes that run, with core's victims,
    # linked to the change
    wait_for(lambda: len(ykbox.victims(LEAF)) == 4, 30, "core's quota preemption")
    wait_for(lambda: observed_quota(), 60, "the observed quota preemption")
    (run,) = observed_quota()
    assert sorted(run.victims.values_list("allocation_key", flat=True)) == sorted(
        v.allocation_key for v in ykbox.victims(LEAF)
    )
    wait_for(
        lambda: latest_usage(LEAF).get("vcore") == ykbox.usage(LEAF).get("vcore") == 4000,
        30,
        "the usage after the preemption",
    )
    assert latest_usage(LEAF) == ykbox.usage(LEAF)
    change.refresh_from_db()
    assert change.state == dm.QuotaChange.State.DONE, change.reason
    assert change.run_id is not None
    assert run.predicted_id is None or run.predicted_id == change.run_id
    assert not dm.QuotaChange.objects.filter(
        queue_path=LEAF, state__in=dm.QuotaChange.ACTIVE_STATES
    ).exists()
