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

import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from integration_support import SharedCluster
from integration_support import wait_for as wait_until
from ykbox import Ykbox, queues_yaml

from dashboard import models as dm
from dashboard import services
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


def leaf_config(
    vcore: int,
    *,
    delay: int = DELAY,
    memory_gi: int | None = None,
    gpu: int | None = None,
    guaranteed_gpu: int | None = None,
) -> str:
    """root.parent.leaf: max *vcore* (and memory, GPUs), guarantee 2 cores, *delay*."""
    resources: dict[str, int | str] = {"vcore": vcore}
    guaranteed: dict[str, int | str] = {"vcore": 2}
    if memory_gi is not None:
        resources["memory"] = f"{memory_gi}Gi"
    if gpu is not None:
        resources["nvidia.com/gpu"] = gpu
    if guaranteed_gpu is not None:
        guaranteed["nvidia.com/gpu"] = guaranteed_gpu
    return queues_yaml(
        {"parent.leaf": {"max": resources, "guaranteed": guaranteed, "delay": f"{delay}s"}}
    )


@pytest.fixture
def release_delay() -> str:
    """How long the shim takes to release a preempted pod back to core."""
    return "200ms"


@pytest.fixture
def ykbox(tmp_path: Path, release_delay: str) -> Iterator[Ykbox]:
    box = Ykbox(tmp_path / "ykbox", leaf_config(8), release_delay=release_delay)
    yield box
    box.stop()


@pytest.fixture
def follow(
    ykbox: Ykbox, shared_cluster: SharedCluster, request: pytest.FixtureRequest
) -> ClusterSource:
    """The cluster as a live source (polled, or following its event stream), with a
    worker and a beat (shared with the module's other cases: each case has its own
    source, rows and ykbox; see ``SharedCluster``)."""
    shared_cluster.ready(**FAST)
    stream = request.param == "stream"
    source = ClusterSource.objects.create(
        name=f"ykbox-{request.param}",
        base_url=ykbox.url,
        poll_interval=INTERVAL,
        follow_stream=stream,
        reconcile_interval=3600 if stream else INTERVAL,
    )
    return source


def record() -> str:
    """What the dashboard holds of the leaf's changes and observed runs (for a failure)."""
    lines = [
        f"change {c.pk} {c.state} {c.cause} old={c.old_max} new={c.new_max} "
        f"changed_at={c.changed_at} ({c.clock_source}) deadline={c.deadline} "
        f"run={c.run_id}: {c.reason}"
        for c in dm.QuotaChange.objects.filter(queue_path=LEAF).order_by("id")
    ]
    lines += [
        f"run {r.pk} {r.kind} {r.trigger} at {r.queued_at} predicted={r.predicted_id}"
        for r in dm.PreemptionRun.objects.filter(queue=LEAF).order_by("id")
    ]
    lines += [
        f"start {s.instance_uuid} at {s.started_at} ({s.source}) restart={s.is_restart} "
        f"awaiting={s.awaiting_recovery} recovered={s.recovered_at} rearmed={s.rearmed}"
        for s in dm.SchedulerStart.objects.order_by("id")
    ]
    lines += [
        f"snapshot {s.pk} captured {s.captured_at} root={s.queues.get(depth=0).allocated}"
        for s in dm.ClusterSnapshot.objects.order_by("id")
    ]
    return "\n".join(lines)


def wait_for(condition: Callable[[], object], seconds: float, what: str) -> None:
    """Poll *condition* until true; on a timeout the failure shows the dashboard's record."""
    try:
        wait_until(condition, seconds, what)
    except pytest.fail.Exception as e:
        pytest.fail(f"{e}\n--- the dashboard's record ---\n{record()}")


def seconds(a: datetime | None, b: datetime | None) -> float:
    assert a is not None, (a, b)
    assert b is not None, (a, b)
    return abs((a - b).total_seconds())


def leaf_changes() -> list[dm.QuotaChange]:
    return list(dm.QuotaChange.objects.filter(queue_path=LEAF).order_by("changed_at", "id"))


def lowered_to(vcore: int) -> list[dm.QuotaChange]:
    return [c for c in leaf_changes() if (c.new_max or {}).get("vcore") == vcore * 1000]


def latest_usage(path: str) -> dict[str, int]:
    """The usage (allocated) of *path* in the latest snapshot ({} before the first)."""
    snap = dm.ClusterSnapshot.objects.order_by("-captured_at", "-id").first()
    row = snap.queues.filter(path=path).first() if snap is not None else None
    return {k: int(v) for k, v in (row.allocated or {}).items()} if row is not None else {}


def first_showing(vcore: int) -> dm.ClusterSnapshot | None:
    """The first snapshot whose leaf has a max of *vcore* cores."""
    return (
        dm.ClusterSnapshot.objects.filter(queues__path=LEAF, queues__max__vcore=vcore * 1000)
        .order_by("captured_at", "id")
        .first()
    )


def open_changes() -> list[dm.QuotaChange]:
    """The leaf's changes still open: waiting, running, or fired here awaiting the
    scheduler."""
    return list(
        dm.QuotaChange.objects.filter(
            queue_path=LEAF,
            state__in=[*dm.QuotaChange.ACTIVE_STATES, dm.QuotaChange.State.FIRED],
        )
    )


class OpenWatch:
    """Samples the leaf's open changes at every check of a wait; :attr:`most` is the most
    seen at once."""

    def __init__(self) -> None:
        self.most = 0
        self.seen: list[str] = []

    def __call__(self, condition: Callable[[], object]) -> Callable[[], object]:
        def checked() -> object:
            found = open_changes()
            if len(found) > self.most:
                self.most = len(found)
                self.seen = [f"change {c.pk} {c.state} {c.cause}" for c in found]
            return condition()

        return checked


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

    applied = ykbox.config(leaf_config(4))
    wait_for(lambda: ykbox.deadline(LEAF) is not None, 10, "core's timer")
    core_deadline = ykbox.deadline(LEAF)

    # the snapshot that first shows the lowered max is stamped at or after core applied
    # it (in stream mode too: the event that caused the poll comes first), never before
    wait_for(lambda: first_showing(4) is not None, DELAY + 3 * INTERVAL, "a snapshot of max 4")
    shown = first_showing(4)
    assert shown is not None
    assert shown.captured_at >= applied - timedelta(milliseconds=1), (shown.captured_at, applied)

    # the dashboard learns the lowering while it waits, with core's deadline
    # (a bound, not a timing check: a loaded machine may take a few polls; the change may
    # have fired by then, which the state check below admits)
    wait_for(lambda: lowered_to(4), DELAY + 3 * INTERVAL, "the lowering learned")
    (change,) = lowered_to(4)
    assert change.learned
    # waiting; or, when the deadline passed first, its predicted run under way or fired
    assert change.state in (
        dm.QuotaChange.State.WAITING,
        dm.QuotaChange.State.RUNNING,
        dm.QuotaChange.State.FIRED,
    ), change.state
    assert seconds(change.deadline, core_deadline) <= 1.0, (change.deadline, core_deadline)
    # a change the cluster made says so, from the max it lowered, naming the type over
    # (item 6), whichever the dashboard read first: the config, the event or the snapshot
    assert change.cause == dm.QuotaChange.Cause.CHANGE, record()
    assert (change.old_max or {}).get("vcore") == 8000, record()
    assert "the cluster lowered the max of vcore" in change.reason, record()
    assert "usage over the max in vcore" in change.reason, record()

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


def active_changes() -> list[dm.QuotaChange]:
    return list(
        dm.QuotaChange.objects.filter(queue_path=LEAF, state__in=dm.QuotaChange.ACTIVE_STATES)
    )


@pytest.mark.parametrize("follow", MODES, indirect=True)
def test_usage_within_the_max_before_the_deadline_clears_and_a_later_timer_starts_anew(
    ykbox: Ykbox, follow: ClusterSource
) -> None:
    fill(ykbox)
    wait_for(lambda: latest_usage(LEAF).get("vcore") == 8000, 90, "8 cores used")
    ykbox.config(leaf_config(4, delay=20))
    wait_for(lambda: ykbox.deadline(LEAF) is not None, 10, "core's timer")
    wait_for(lambda: lowered_to(4) and active_changes(), 20, "the lowering waiting")
    (change,) = lowered_to(4)

    # pods complete: usage 4, within the max; core clears the timer at its next check
    # (silently: its quota check logs nothing then)
    ykbox.release("app-1", 4)
    wait_for(lambda: not active_changes(), 20, "the dashboard clearing the change")
    change.refresh_from_db()
    assert "cleared" in change.reason, record()
    assert change.run_id is None  # nothing predicted: core fires nothing
    assert not observed_quota()

    # usage goes over the max again (core lets no allocation past the max: a lowering
    # does it): core, its timer cleared, starts a new one from this change, not the
    # first one's deadline; so does the dashboard
    timers = len(ykbox.timers(LEAF))
    ykbox.config(leaf_config(3, delay=20))
    wait_for(lambda: len(ykbox.timers(LEAF)) > timers, 10, "core's new timer")
    core_deadline = ykbox.deadline(LEAF)
    assert core_deadline is not None
    assert abs(seconds(core_deadline, ykbox.timers(LEAF)[-1].logged_at) - 20) < 0.01
    wait_for(lambda: active_changes(), 20, "a new waiting change")
    (rise,) = active_changes()
    assert rise.pk != change.pk
    assert seconds(rise.deadline, core_deadline) <= 1.0, (rise.deadline, core_deadline)


@pytest.mark.parametrize("release_delay", ["30s"])
@pytest.mark.parametrize("follow", MODES, indirect=True)
def test_allocations_being_preempted_still_count_as_usage(
    ykbox: Ykbox, follow: ClusterSource
) -> None:
    """The victims of core's quota preemption stay allocated (preempting) until the shim
    releases them, 30 s later here: core's usage is allocated, with them. The dashboard's
    usage is core's, and the change is closed by core's run, not by a snapshot that
    counted the preempting as gone."""
    fill(ykbox)
    wait_for(lambda: latest_usage(LEAF).get("vcore") == 8000, 90, "8 cores used")
    ykbox.config(leaf_config(6, delay=3))
    wait_for(lambda: len(ykbox.victims(LEAF)) == 2, 20, "core's quota preemption")
    wait_for(lambda: observed_quota(), 30, "the observed quota preemption")
    (run,) = observed_quota()
    assert sorted(run.victims.values_list("allocation_key", flat=True)) == sorted(
        v.allocation_key for v in ykbox.victims(LEAF)
    )
    assert ykbox.usage(LEAF)["vcore"] == 8000  # still allocated, being preempted
    wait_for(
        lambda: not active_changes() and lowered_to(6)[0].state != dm.QuotaChange.State.FIRED,
        20,
        "the change settled",
    )
    assert latest_usage(LEAF)["vcore"] == 8000 == ykbox.usage(LEAF)["vcore"]
    (change,) = lowered_to(6)
    assert change.state == dm.QuotaChange.State.DONE
    assert f"observed run {run.pk}" in change.reason, record()
    assert "within the max" not in change.reason, record()


@pytest.mark.parametrize("follow", MODES, indirect=True)
def test_a_restart_with_a_recovery_delay_keeps_the_change_and_rearms_as_core(
    ykbox: Ykbox, follow: ClusterSource
) -> None:
    ykbox.config(leaf_config(8, delay=12))
    fill(ykbox)
    wait_for(lambda: latest_usage(LEAF).get("vcore") == 8000, 90, "8 cores used")
    ykbox.config(leaf_config(4, delay=12))
    wait_for(lambda: active_changes(), 20, "the lowering waiting")
    (change,) = active_changes()

    # core stops for 1 s, then answers an empty partition for 6 s before the shim
    # replays its pods; the recovered allocations re-arm the timer
    # the queue has one open change all along (never a waiting one beside a fired one)
    watch = OpenWatch()
    ykbox.restart(downtime="1s", recover_delay="6s")
    wait_for(watch(lambda: ykbox.usage(LEAF).get("vcore") == 8000), 10, "the pods recovered")
    core_deadline = ykbox.deadline(LEAF)
    assert core_deadline is not None
    wait_for(
        watch(lambda: dm.SchedulerStart.objects.filter(is_restart=True).exists()),
        30,
        "the restart",
    )
    wait_for(
        watch(
            lambda: any(
                seconds(c.deadline, core_deadline) <= 1.0 for c in active_changes() if c.deadline
            )
        ),
        20,
        "the deadline re-armed as core's",
    )
    (after,) = active_changes()
    change.refresh_from_db()
    # the same change re-armed; or, when the dashboard's timer fired before it saw the
    # restart (a loaded machine), that prediction closed, naming the change re-armed
    assert after.pk == change.pk or change.superseded_by_id == after.pk, record()
    assert seconds(after.deadline, core_deadline) <= 1.0, (after.deadline, core_deadline)

    wait_for(watch(lambda: len(ykbox.victims(LEAF)) == 4), 30, "core's quota preemption")
    wait_for(watch(lambda: observed_quota()), 30, "the observed quota preemption")
    assert watch.most <= 1, (watch.seen, record())
    (run,) = observed_quota()
    assert sorted(run.victims.values_list("allocation_key", flat=True)) == sorted(
        v.allocation_key for v in ykbox.victims(LEAF)
    )


@pytest.mark.parametrize("follow", MODES, indirect=True)
def test_a_lowering_seconds_after_a_raise_is_a_lowering_from_the_raised_max(
    ykbox: Ykbox, follow: ClusterSource
) -> None:
    ykbox.nodes(4)
    ykbox.app("app-1", LEAF, 8)
    wait_for(lambda: ykbox.bound() == 8, 30, "8 pods bound")
    wait_for(lambda: latest_usage(LEAF).get("vcore") == 8000, 90, "8 cores used")
    # the max raised to 24 and pods added (one poll sees both), lowered to 10 3.4 s later
    ykbox.config(leaf_config(24))
    ykbox.app("app-2", LEAF, 4)
    wait_for(lambda: ykbox.bound() == 12, 10, "12 pods bound")
    time.sleep(3.4)
    ykbox.config(leaf_config(10))
    wait_for(lambda: ykbox.deadline(LEAF) is not None, 10, "core's timer")
    core_deadline = ykbox.deadline(LEAF)
    wait_for(lambda: lowered_to(10), 20, "the lowering to 10 learned")
    (change,) = lowered_to(10)
    assert (change.old_max or {}).get("vcore") == 24000, record()
    # waiting; or, when the deadline passed first, its predicted run under way or fired
    assert change.state in (
        dm.QuotaChange.State.WAITING,
        dm.QuotaChange.State.RUNNING,
        dm.QuotaChange.State.FIRED,
    ), change.state
    assert seconds(change.deadline, core_deadline) <= 1.0, (change.deadline, core_deadline)


GPU = "nvidia.com/gpu"


@pytest.mark.parametrize("follow", MODES, indirect=True)
def test_a_vcore_lowering_where_the_gpu_max_is_the_guarantee_is_scheduled_and_enforced(
    ykbox: Ykbox, follow: ClusterSource
) -> None:
    # the cluster's own config: GPU max == GPU guarantee, accepted by core
    ykbox.config(leaf_config(8, gpu=2, guaranteed_gpu=2))
    ykbox.nodes(2, {"vcore": "4", "memory": "8Gi", GPU: "2"})
    ykbox.app("app-1", LEAF, 8)
    wait_for(lambda: ykbox.bound() == 8, 30, "8 pods bound")
    wait_for(lambda: latest_usage(LEAF).get("vcore") == 8000, 90, "8 cores used")
    wait_for(lambda: dm.ConfigVersion.objects.exists(), 30, "the config in force")
    partition = dm.Partition.objects.get(name="default")
    # the administrator plans vcore 8 -> 4, the GPU untouched
    change = services.schedule_quota_change(partition, LEAF, new_max={"vcore": 4000, GPU: 2})
    assert change.state == dm.QuotaChange.State.WAITING, change.reason
    # the cluster applies it; core starts its timer and enforces the vcore lowering
    ykbox.config(leaf_config(4, gpu=2, guaranteed_gpu=2))
    wait_for(lambda: ykbox.deadline(LEAF) is not None, 10, "core's timer")
    wait_for(lambda: len(ykbox.victims(LEAF)) == 4, 30, "core's quota preemption")
    wait_for(lambda: observed_quota(), 30, "the observed quota preemption")
