"""Helpers of the integration tests: a scenario, process control and bounded polling."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import scenarios
from support.processes import Proc, child_env
from support.processes import database_url as database_url  # re-exported

ROOT = Path(__file__).resolve().parents[2]

T0 = scenarios.T0.timestamp()

# root.a (guaranteed 2 cores, 60 s quota delay) with leaves x and y holding eight
# 1-core allocations; root.b has a pending 3-core ask.
SCENARIO = scenarios.small_scenario(round_request=True)


@dataclass
class Cluster:
    """Starts worker and beat processes and stops every one of them at teardown."""

    tmp: Path
    broker: str
    procs: list[Proc] = field(default_factory=list)

    def _env(self, extra: dict[str, str]) -> dict[str, str]:
        return child_env(self.broker, **extra)

    def _start(self, name: str, args: list[str], env: dict[str, str]) -> Proc:
        log = self.tmp / f"{name}-{len(self.procs)}.log"
        with log.open("wb") as out:
            popen = subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "dashboard", *args],
                cwd=ROOT,
                env=self._env(env),
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        proc = Proc(name, popen, log)
        self.procs.append(proc)
        return proc

    def worker(self, **env: str) -> Proc:
        proc = self._start(
            "worker",
            [
                "worker",
                "--loglevel=INFO",
                "--pool=prefork",
                "--concurrency=1",
                "--without-gossip",
                "--without-mingle",
                f"--hostname=test{len(self.procs)}@%h",
            ],
            env,
        )
        wait_for(lambda: " ready." in proc.text(), 90, f"worker start\n{proc.text()}", proc)
        return proc

    def beat(self, **env: str) -> Proc:
        schedule = self.tmp / f"beat-schedule-{len(self.procs)}"
        proc = self._start("beat", ["beat", "--loglevel=INFO", f"--schedule={schedule}"], env)
        wait_for(lambda: "beat: Starting" in proc.text(), 60, f"beat start\n{proc.text()}", proc)
        return proc

    def stop_all(self) -> None:
        for proc in self.procs:
            proc.kill(signal.SIGTERM)

    def running(self) -> bool:
        """Whether it has started processes and every one of them still runs."""
        return bool(self.procs) and all(p.popen.poll() is None for p in self.procs)


class SharedCluster:
    """One worker and one beat shared by the tests of a module in one test process
    (a module-scoped fixture): each Celery process costs its Django start-up (about as
    much CPU as ``manage.py check``), and the tests following a cluster need the same
    pair with the same environment, not a pair of their own.

    What keeps the tests apart: each test has its own database rows (pytest-django
    empties the tables after each; the ids go on, so a row's id is never another test's)
    and its own source; the end of a test disables its sources (:meth:`quiesce`), so no
    new poll of them starts, and a poll already under way stores nothing once its
    source's row is gone (every write of a poll checks the source's lease on the locked
    row). The processes keep nothing of a test but their caches, keyed by row id.
    A test that failed, or a process that died, retires the pair; the next test
    starts a new one (:meth:`ready`).
    """

    def __init__(self, tmp: Path, broker: str) -> None:
        self.tmp = tmp
        self.broker = broker
        self.env: dict[str, str] | None = None
        self.cluster: Cluster | None = None
        self.starts = 0

    def ready(self, **env: str) -> Cluster:
        """A worker and a beat with *env*, running: the same as the last test's when they
        still run with the same environment, else new ones."""
        if self.cluster is not None and (self.env != env or not self.cluster.running()):
            self.retire()
        if self.cluster is None:
            self.starts += 1
            cluster = Cluster(self.tmp / f"pair-{self.starts}", self.broker)
            cluster.tmp.mkdir(parents=True)
            self.cluster, self.env = cluster, dict(env)
            cluster.worker(**env)
            cluster.beat(**env)
        return self.cluster

    def quiesce(self, failed: bool) -> None:
        """The end of a test: its sources polled no more; the pair retired when the test
        failed (whatever it left behind goes with them)."""
        from dashboard.sources.models import ClusterSource

        ClusterSource.objects.update(enabled=False)
        if failed:
            self.retire()

    def retire(self) -> None:
        if self.cluster is not None:
            self.cluster.stop_all()
        self.cluster, self.env = None, None


def wait_for(
    condition: Callable[[], object], seconds: float, what: str, proc: Proc | None = None
) -> None:
    """Poll *condition* until true; fail after *seconds* (a bound, not a timing assertion)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        if proc is not None and proc.popen.poll() is not None:
            pytest.fail(f"{proc.name} exited with {proc.popen.returncode}: {proc.text()[-3000:]}")
        time.sleep(0.2)
    log = f"\n--- {proc.name} log ---\n{proc.text()[-4000:]}" if proc is not None else ""
    pytest.fail(f"timed out after {seconds}s waiting for {what}{log}")
