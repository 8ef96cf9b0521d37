"""Process control for the real stack on loopback: Redis, gunicorn, Celery worker and beat.

Used by the load test (``loadtest/run.py``) and by the fault tests
(``tests/reliability/test_faults.py``).  Every process is started in its own
session (process group) so that a prefork worker's children or gunicorn's
workers are signalled with it, logs go to files, and :meth:`Stack.stop_all`
stops exactly the processes this object started.  Nothing here touches the
machine's shared Redis on port 6379: :meth:`Stack.redis` starts a private
``redis-server`` on a free port.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class StackError(RuntimeError):
    """A process did not come up, or exited, within its bound."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


@dataclass
class Proc:
    """One started process, its log file and how to stop it."""

    name: str
    popen: subprocess.Popen[bytes]
    log: Path

    def text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    @property
    def alive(self) -> bool:
        return self.popen.poll() is None

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Signal the whole process group and reap it (SIGKILL after 30 s)."""
        if self.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, sig)
        try:
            self.popen.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait(timeout=10)


def wait_for(
    condition: Callable[[], object], seconds: float, what: str, proc: Proc | None = None
) -> None:
    """Poll *condition* until true; StackError after *seconds* or if *proc* exits."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        if proc is not None and not proc.alive:
            raise StackError(f"{proc.name} exited ({proc.popen.returncode}): {proc.text()[-3000:]}")
        time.sleep(0.2)
    tail = f"\n{proc.name} log:\n{proc.text()[-3000:]}" if proc is not None else ""
    raise StackError(f"timed out after {seconds:.0f}s waiting for {what}{tail}")


@dataclass
class Stack:
    """Starts stack processes with one base environment; stops all of them at the end."""

    workdir: Path
    env: dict[str, str]
    procs: list[Proc] = field(default_factory=list)

    @staticmethod
    def base_env(database_url: str, broker_url: str, **extra: str) -> dict[str, str]:
        """The environment of every process: the given database and broker, plain HTTP."""
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("PYTEST", "DJANGO_", "CELERY_", "DASHBOARD_"))
            or k == "DASHBOARD_FIXTURES_DIR"
        }
        env.update(
            {
                "DJANGO_SETTINGS_MODULE": "dashboard.settings",
                "DATABASE_URL": database_url,
                "CELERY_BROKER_URL": broker_url,
                "REDIS_URL": broker_url,
                "CELERY_TASK_ALWAYS_EAGER": "false",
                "PYTHONUNBUFFERED": "1",
                "DEBUG": "false",
                "ALLOWED_HOSTS": "127.0.0.1,localhost",
                # loopback only: plain HTTP, so no SSL redirect and no HTTPS-only cookies
                "SECURE_SSL_REDIRECT": "false",
                "SESSION_COOKIE_SECURE": "false",
                "CSRF_COOKIE_SECURE": "false",
                "SECURE_HSTS_SECONDS": "0",
            }
        )
        env.update(extra)
        return env

    def start(self, name: str, argv: list[str], **extra: str) -> Proc:
        log = self.workdir / f"{name}-{len(self.procs)}.log"
        env = {**self.env, **extra}
        with log.open("wb") as out:
            popen = subprocess.Popen(
                argv,
                cwd=ROOT,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        proc = Proc(name, popen, log)
        self.procs.append(proc)
        return proc

    def manage(self, *args: str, **extra: str) -> str:
        """Run ``manage.py ARGS`` to completion; its output (StackError on failure)."""
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env={**self.env, **extra},
            capture_output=True,
            text=True,
            timeout=600,
        )
        if done.returncode != 0:
            raise StackError(f"manage.py {' '.join(args)}: {done.stdout}{done.stderr}")
        return done.stdout

    def python(self, *args: str, **extra: str) -> str:
        """Run ``python ARGS`` in the stack's environment to completion; its output."""
        done = subprocess.run(
            [sys.executable, *args],
            cwd=ROOT,
            env={**self.env, **extra},
            capture_output=True,
            text=True,
            timeout=900,
        )
        if done.returncode != 0:
            raise StackError(f"python {' '.join(args)}: {done.stdout}{done.stderr}")
        return done.stdout

    def redis(self, port: int) -> Proc:
        """A private, memory-only redis-server on *port* (never the shared 6379)."""
        if port == 6379:
            raise StackError("the shared Redis on 6379 is not ours to start or stop")
        proc = self.start(
            "redis",
            [
                "redis-server",
                "--port",
                str(port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--daemonize",
                "no",
            ],
        )
        wait_for(lambda: port_open(port), 30, f"redis-server on {port}", proc)
        return proc

    def gunicorn(self, port: int, workers: int = 2, threads: int = 1, **extra: str) -> Proc:
        """gunicorn on *port*: *workers* processes of *threads* threads each (``gthread``
        workers when more than one; ``sync`` workers, as ``scripts/run`` starts them,
        otherwise)."""
        proc = self.start(
            "gunicorn",
            [
                sys.executable,
                "-m",
                "gunicorn",
                "dashboard.wsgi",
                "--bind",
                f"127.0.0.1:{port}",
                "--workers",
                str(workers),
                "--worker-class",
                "gthread" if threads > 1 else "sync",
                "--threads",
                str(threads),
                "--timeout",
                "120",
                "--graceful-timeout",
                "5",
                # no control socket: the default one is shared by every gunicorn of the user
                "--no-control-socket",
            ],
            **extra,
        )
        wait_for(lambda: port_open(port), 90, f"gunicorn on {port}", proc)
        return proc

    def worker(self, concurrency: int = 1, **extra: str) -> Proc:
        proc = self.start(
            "worker",
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "dashboard",
                "worker",
                "--loglevel=INFO",
                "--pool=prefork",
                f"--concurrency={concurrency}",
                "--without-gossip",
                "--without-mingle",
                f"--hostname=w{len(self.procs)}@%h",
            ],
            **extra,
        )
        wait_for(lambda: " ready." in proc.text(), 120, "the Celery worker", proc)
        return proc

    def beat(self, **extra: str) -> Proc:
        schedule = self.workdir / f"beat-schedule-{len(self.procs)}"
        proc = self.start(
            "beat",
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "dashboard",
                "beat",
                "--loglevel=INFO",
                f"--schedule={schedule}",
            ],
            **extra,
        )
        wait_for(lambda: "beat: Starting" in proc.text(), 60, "Celery beat", proc)
        return proc

    def stop_all(self, sig: int = signal.SIGTERM) -> None:
        for proc in reversed(self.procs):
            proc.kill(sig)
