"""Liveness of the Celery processes: a file each one touches while it works, and its check.

``deploy/entrypoint.sh`` sets ``DASHBOARD_HEARTBEAT_FILE`` for the worker, poller,
deliveries and beat commands. A worker touches it when it is ready and on every
heartbeat of its consumer (Celery's ``heartbeat_sent`` signal, every 2 s while its
event loop runs and its broker connection holds); beat touches it on every tick of its
scheduler (at least every ``beat_max_loop_interval``). The Kubernetes liveness probe
runs ``entrypoint.sh alive NAME``, which is this file run as a script: it exits 0 when
the file was touched within the maximum age, else 1 saying why.

Standard library only, and run by its path (``python -I dashboard/heartbeat.py``), so
a probe never imports Django or Celery.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

ENV = "DASHBOARD_HEARTBEAT_FILE"


def touch(path: str | None = None) -> None:
    """Mark this process alive now (nothing when no heartbeat file is configured)."""
    target = path if path is not None else os.environ.get(ENV, "")
    if not target:
        return
    try:
        Path(target).touch()
    except OSError as exc:  # a full or read-only /tmp must not stop the worker itself
        print(f"heartbeat: cannot touch {target}: {exc}", file=sys.stderr)


def age(path: str, now: float | None = None) -> float | None:
    """Seconds since *path* was last touched; None when it does not exist."""
    try:
        modified = os.stat(path).st_mtime
    except FileNotFoundError:
        return None
    return (time.time() if now is None else now) - modified


def check(path: str, max_age: float, now: float | None = None) -> tuple[bool, str]:
    """Whether the process that touches *path* is alive, and a line saying so."""
    seconds = age(path, now)
    if seconds is None:
        return False, f"not alive: {path} does not exist (the process never got ready)"
    if seconds > max_age:
        return False, f"not alive: {path} last touched {seconds:.0f} s ago (max {max_age:g} s)"
    return True, f"alive: {path} touched {seconds:.1f} s ago"


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: heartbeat.py FILE MAX_AGE_SECONDS", file=sys.stderr)
        return 64
    try:
        max_age = float(argv[1])
    except ValueError:
        print(f"MAX_AGE_SECONDS must be a number of seconds, not {argv[1]!r}", file=sys.stderr)
        return 64
    ok, line = check(argv[0], max_age)
    print(line, file=sys.stdout if ok else sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
