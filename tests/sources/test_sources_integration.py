"""Real Celery beat and worker processes against real Redis poll the test YuniKorn server.

Two beats and two workers run at once: the beat schedule in settings sends
``dashboard.poll_cluster_sources`` every second, the workers run the polls, and the
due check in the database lets exactly one poll through per interval.  An
unchanged scheduler stores one snapshot; a changed limit stores the second.

Needs Redis (``redis_url`` of the shared plugin: this xdist worker's own database of
REDIS_URL); with CI=true an unreachable Redis fails the test, elsewhere it is skipped
with the reason.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis
from sources_helpers import FakeYuniKorn
from support.processes import child_env

from dashboard import models as dm
from dashboard.sources.models import ClusterSource, SourceSnapshot

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]
INTERVAL = 5


@pytest.fixture
def broker(redis_url: str) -> Iterator[str]:
    redis.Redis.from_url(redis_url).flushdb()
    yield redis_url
    redis.Redis.from_url(redis_url).flushdb()


class Processes:
    """Celery processes of one test; every one is stopped (process group) at teardown."""

    def __init__(self, tmp: Path, broker: str) -> None:
        self.tmp = tmp
        self.broker = broker
        self.procs: list[tuple[subprocess.Popen[bytes], Path]] = []
        self.started = 0  # processes started so far (their logs' numbers)

    def start(self, *args: str) -> tuple[subprocess.Popen[bytes], Path]:
        env = child_env(
            self.broker,
            SOURCES_BEAT_SECONDS="1",
            SOURCES_HTTP_TIMEOUT="5",
            SOURCES_HTTP_BACKOFF="0.1",
            DASHBOARD_SWEEP_SECONDS="60",
        )
        log = self.tmp / f"{args[0]}-{self.started}.log"
        self.started += 1
        with log.open("wb") as out:
            popen = subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "dashboard", *args],
                cwd=ROOT,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.procs.append((popen, log))
        return popen, log

    def worker(self) -> None:
        n = self.started
        self.start(
            "worker",
            "--loglevel=INFO",
            "--pool=solo",
            "--without-gossip",
            "--without-mingle",
            f"--hostname=sources{n}@%h",
        )

    def beat(self) -> None:
        self.start("beat", "--loglevel=INFO", f"--schedule={self.tmp / f'beat-{self.started}'}")

    def logs(self) -> str:
        return "\n".join(
            f"== {log.name}\n{log.read_text(errors='replace')[-2000:]}" for _, log in self.procs
        )

    def check_alive(self) -> None:
        for popen, log in self.procs:
            if popen.poll() is not None:
                pytest.fail(f"{log.name} exited with {popen.returncode}:\n{self.logs()}")

    def running(self) -> bool:
        """Whether it has started processes and every one of them still runs."""
        return bool(self.procs) and all(popen.poll() is None for popen, _ in self.procs)

    def retire(self) -> None:
        """Stop every process and forget them (the next start is a new set)."""
        self.stop()
        self.procs.clear()

    def stop(self) -> None:
        for popen, _ in self.procs:
            if popen.poll() is None:
                os.killpg(popen.pid, signal.SIGTERM)
        for popen, _ in self.procs:
            try:
                popen.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(popen.pid, signal.SIGKILL)
                popen.wait(timeout=10)


@pytest.fixture
def processes(broker: str, tmp_path: Path) -> Iterator[Processes]:
    procs = Processes(tmp_path, broker)
    yield procs
    procs.stop()


def wait_for(condition: Callable[[], object], seconds: float, what: str, procs: Processes) -> None:
    """Poll *condition* until true; fail after *seconds* (a bound, not a timing assertion)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        procs.check_alive()
        time.sleep(0.25)
    pytest.fail(f"timed out after {seconds}s waiting for {what}\n{procs.logs()}")


def test_two_beats_and_two_workers_poll_once_per_interval_and_store_on_change(
    yunikorn: FakeYuniKorn, processes: Processes
) -> None:
    source = ClusterSource.objects.create(
        name="acme-ml", base_url=yunikorn.url, poll_interval=INTERVAL
    )
    for _ in range(2):
        processes.worker()
        processes.beat()

    wait_for(
        lambda: SourceSnapshot.objects.filter(source=source).count() == 1,
        180,
        "the first poll to store a snapshot",
        processes,
    )
    wait_for(
        lambda: yunikorn.requests_to("/ws/v1/partitions") >= 3,
        120,
        "two more polls",
        processes,
    )
    assert dm.ClusterSnapshot.objects.count() == 1  # unchanged state: nothing more stored

    tree = json.loads(yunikorn.bodies["/ws/v1/partition/default/queues"])
    batch = next(c for c in tree["children"] if c["queuename"] == "root.batch")
    batch["maxResource"]["vcore"] = 12000
    yunikorn.set_json("/ws/v1/partition/default/queues", tree)
    wait_for(
        lambda: SourceSnapshot.objects.filter(source=source).count() == 2,
        120,
        "the changed state to be stored",
        processes,
    )
    processes.stop()

    newest = SourceSnapshot.objects.filter(source=source).order_by("-fetched_at").first()
    assert newest is not None
    assert newest.snapshot.queues.get(path="root.batch").max == {
        "vcore": 12000,
        "memory": 48 * 1024**3,
    }
    source.refresh_from_db()
    assert source.status == ClusterSource.Status.HEALTHY
    assert source.last_snapshot_id == newest.snapshot_id
    # every poll read the four endpoints and then the events, the config, the
    # scheduler's health, its users' usage and its completed applications in order, never
    # interleaved with another poll
    paths = [s.path for s in yunikorn.seen]
    polls = [paths[i : i + 9] for i in range(0, len(paths), 9)]
    assert all(
        p
        == [
            "/ws/v1/partitions",
            "/ws/v1/partition/default/queues",
            "/ws/v1/partition/default/nodes",
            "/ws/v1/partition/default/applications/active",
            "/ws/v1/events/batch",
            "/ws/v1/config",
            "/ws/v1/scheduler/healthcheck",
            "/ws/v1/partition/default/usage/users",
            "/ws/v1/partition/default/applications/completed",
        ]
        for p in polls
    ), paths
    # one poll per interval, although two beats tick every second: the next due time is
    # set in the database when a poll is claimed (a small margin for the request path)
    starts = [s.at for s in yunikorn.seen if s.path == "/ws/v1/partitions"]
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert gaps, starts
    assert min(gaps) > INTERVAL - 1.0, gaps
