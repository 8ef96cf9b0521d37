"""Benchmark: /login/ beside idle TCP connections, on gunicorn as the image runs it.

Starts ``deploy/entrypoint.sh web`` (gunicorn with deploy/gunicorn.conf.py: threaded
workers) on a throw-away SQLite database, opens N idle connections that send nothing
(nobody signed in), then times GET /login/ a few times.  Run it with
``--worker-class sync`` to see what the synchronous workers did: each idle
connection holds a whole worker process until gunicorn's timeout.

    .venv/bin/python benchmarks/idle_connections.py [--idle 50] [--requests 5]
    .venv/bin/python benchmarks/idle_connections.py --worker-class sync --idle 8

Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import http.client
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(port: int, path: str, timeout: float) -> tuple[int, float]:
    started = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path)
        status = conn.getresponse().status
    finally:
        conn.close()
    return status, time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--idle", type=int, default=50)
    parser.add_argument("--requests", type=int, default=5)
    parser.add_argument("--worker-class", default="", help="e.g. sync (default: the config's)")
    parser.add_argument("--timeout", type=float, default=120.0)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="idle-bench-"))
    port = _port()
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
        "PYTHON": sys.executable,
        "DATABASE_URL": f"sqlite:///{tmp / 'db.sqlite3'}",
        "DASHBOARD_VAR_DIR": str(tmp / "var"),
        "SECRET_KEY": "benchmark-only-" + "x" * 40,
        "DEBUG": "false",
        "SECURE_SSL_REDIRECT": "false",
        "PORT": str(port),
        "HOST": "127.0.0.1",
    }
    entry = str(ROOT / "deploy" / "entrypoint.sh")
    subprocess.run([entry, "manage", "migrate", "-v0"], env=env, cwd=ROOT, check=True)
    # one thread: gunicorn turns a sync worker with threads into gthread
    extra = ["--worker-class", args.worker_class, "--threads", "1"] if args.worker_class else []
    log = (tmp / "web.log").open("wb")
    web = subprocess.Popen(
        [entry, "web", *extra],
        env=env,
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        for _ in range(600):
            try:
                if _get(port, "/livez", 2)[0] == 200:
                    break
            except OSError:
                time.sleep(0.1)
        print(f"gunicorn up on {port} ({args.worker_class or 'gthread from the config'})")
        # every worker process warmed (its first page loads templates and modules)
        alone = [_get(port, "/login/", args.timeout)[1] for _ in range(args.requests * 2)]
        print(
            f"/login/ alone (cold start included): first {alone[0]:.3f} s, "
            f"median {statistics.median(alone):.3f} s over {len(alone)} requests"
        )
        idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(args.idle)]
        time.sleep(0.5)
        times = []
        for _ in range(args.requests):
            try:
                status, seconds = _get(port, "/login/", args.timeout)
            except TimeoutError:
                print(f"/login/ beside {args.idle} idle connections: no answer in {args.timeout} s")
                times.append(args.timeout)
                continue
            times.append(seconds)
            print(f"/login/ beside {args.idle} idle connections: {status} in {seconds:.3f} s")
        print(
            f"median {statistics.median(times):.3f} s, max {max(times):.3f} s "
            f"over {len(times)} requests"
        )
        for sock in idle:
            sock.close()
    finally:
        os.killpg(web.pid, signal.SIGTERM)
        web.wait(timeout=60)


if __name__ == "__main__":
    main()
