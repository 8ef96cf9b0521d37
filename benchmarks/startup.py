"""Benchmark: the CPU a process of the product spends starting (importing the project).

Runs each command several times, alternating them so that all meet the same machine
load, and prints the median CPU (user + sys, of the process and the children it
reaped) of each:

- ``manage.py check`` (every ``manage.py`` job, and the URL conf and admin loaded);
- ``python -c "import django; django.setup()"`` (what every process sets up);
- ``python -c "import dashboard.wsgi"`` (a gunicorn worker before its first request);
- a Celery worker (``--pool solo``) and beat, each from its start until it is ready:
  its CPU is read from ``/proc`` once it has written ``worker.ready`` or ``beat.ready``
  (``DASHBOARD_READY_DIR``), and it is stopped then. They need the broker of
  ``CELERY_BROKER_URL`` (Redis) or the SQLite default.

    .venv/bin/python benchmarks/startup.py [--runs 5] [--compare ../other-checkout]

With ``--compare``, every command also runs in the other checkout (the same
interpreter, its code), alternating with this one's, so that a before and an after
meet the same load.

Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
TICKS = os.sysconf("SC_CLK_TCK")
COMMANDS = {
    "manage.py check": [PYTHON, "manage.py", "check"],
    "django.setup()": [PYTHON, "-c", "import django; django.setup()"],
    "import dashboard.wsgi": [PYTHON, "-c", "import dashboard.wsgi"],
}


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
    return env


def _command_cpu(argv: list[str], root: Path) -> float:
    """User + sys seconds of one run of ``argv`` in *root* (its children included)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, cwd=root, env=_env(), check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _celery_cpu(root: Path, kind: str) -> float:
    """User + sys seconds of a Celery *kind* (``worker``, solo pool, or ``beat``) from its
    start until it is ready (it leaves ``<kind>.ready``)."""
    with tempfile.TemporaryDirectory() as folder:
        env = _env() | {"DASHBOARD_READY_DIR": folder}
        argv = [PYTHON, "-m", "celery", "-A", "dashboard", kind, "--loglevel", "WARNING"]
        if kind == "worker":
            argv += ["--pool", "solo"]
        else:
            argv += ["--schedule", str(Path(folder) / "schedule")]
        proc = subprocess.Popen(
            argv, cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            ready = Path(folder) / f"{kind}.ready"
            deadline = time.monotonic() + 120
            while not ready.exists():
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the {kind} did not become ready")
                time.sleep(0.02)
            fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
            # utime, stime, cutime, cstime: fields 14-17 of proc(5), 12-15 after the name
            return sum(int(x) for x in fields[11:15]) / TICKS
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-celery", action="store_true", help="skip the worker and beat")
    parser.add_argument("--compare", type=Path, help="another checkout, run alternately")
    args = parser.parse_args()
    print(f"machine load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    celery = {"celery worker to ready": "worker", "celery beat to ready": "beat"}
    names = [*COMMANDS, *([] if args.no_celery else celery)]
    roots = [ROOT, *([args.compare.resolve()] if args.compare else [])]
    cpu: dict[tuple[str, Path], list[float]] = {(n, r): [] for n in names for r in roots}
    for _ in range(args.runs):
        for name in names:
            for root in roots:
                run = COMMANDS.get(name)
                cpu[name, root].append(
                    _command_cpu(run, root) if run else _celery_cpu(root, celery[name])
                )
    for root in roots:
        print(root)
        for name in names:
            runs = ", ".join(f"{x:.2f}" for x in cpu[name, root])
            print(f"  {name:24s} median {statistics.median(cpu[name, root]):.2f} s CPU  ({runs})")
    print(f"machine load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
