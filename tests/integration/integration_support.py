"""Helpers of the integration tests: a scenario, process control and bounded polling."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import scenarios
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]

T0 = scenarios.T0.timestamp()

# root.a (guaranteed 2 cores, 60 s quota delay) with leaves x and y holding eight
# 1-core allocations; root.b has a pending 3-core ask.
SCENARIO = scenarios.small_scenario(round_request=True)


def database_url() -> str:
    """A DATABASE_URL for the test database the test process is using now."""
    s = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{s['NAME']}"
    if connection.vendor == "postgresql":
        auth = s["USER"] or "postgres"
        if s.get("PASSWORD"):
            auth += f":{s['PASSWORD']}"
        return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"
    raise AssertionError(f"unsupported database vendor {connection.vendor}")


@dataclass
class Proc:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path

    def text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Signal the whole process group (a prefork worker's children too) and reap it."""
        if self.popen.poll() is None:
            os.killpg(self.popen.pid, sig)
        try:
            self.popen.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait(timeout=10)


@dataclass
class Cluster:
    """Starts worker and beat processes and stops every one of them at teardown."""

    tmp: Path
    broker: str
    procs: list[Proc] = field(default_factory=list)

    def _env(self, extra: dict[str, str]) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
        env.update(
            {
                "DJANGO_SETTINGS_MODULE": "dashboard.settings",
                "DATABASE_URL": database_url(),
                "CELERY_BROKER_URL": self.broker,
                "REDIS_URL": self.broker,
                "CELERY_TASK_ALWAYS_EAGER": "false",
                "PYTHONUNBUFFERED": "1",
            }
        )
        env.update(extra)
        return env

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
