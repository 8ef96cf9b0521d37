"""Benchmark: one cycle of a live source on an unchanged big cluster, full poll vs stream.

Serves the cluster of ``benchmarks/import_rest.py`` (default 5,000 nodes x 20 =
100,000 allocations) from a local scheduler stand-in in its own process: the four
REST answers, ``/ws/v1/events/batch`` (an event buffer with nothing new) and
``/ws/v1/events/stream`` (the ``InstanceUUID`` line, then silence, as an idle
yunikorn-core stream). A source polls it once (the first, stored, snapshot), then:

- ``full poll``: a source that does not follow the stream polls the unchanged
  cluster: every answer fetched, parsed and fingerprinted, nothing stored;
- ``stream cycle``: the same source following the stream: the stream read for
  ``--window`` seconds, then the events batch from its position, nothing else.

For each it prints the wall time, the worker's CPU time (this process; the
stand-in runs in another) and the bytes the scheduler sent, beside the target
"an unchanged cluster costs next to nothing". A stream cycle's wall time is the
window it waits on an open connection; its CPU time and bytes are its cost.

    .venv/bin/python benchmarks/stream_cycle.py [--nodes 5000] [--per-node 20]
        [--window 2] [--repeat 3]

A throw-away SQLite database is used. Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from import_rest import LIMIT, build_answers

UUID = "8e4cef37-9d9e-50c7-83c1-37235e42adbf"
PATHS = {
    "/ws/v1/partitions": "partitions.json",
    "/ws/v1/partition/default/queues": "partition_queues.json",
    "/ws/v1/partition/default/nodes": "partition_nodes.json",
    "/ws/v1/partition/default/applications/active": "partition_applications_active.json",
}


def serve(files: dict[str, bytes], port: Any, sent: Any, hold: float) -> None:
    """The scheduler stand-in (run in a child process); counts the bytes it sends."""
    batch = json.dumps(
        {"InstanceUUID": UUID, "LowestID": 0, "HighestID": 0, "EventRecords": None}
    ).encode()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def _send(self, body: bytes) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            with sent.get_lock():
                sent.value += len(body)

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path in PATHS:
                self._send(files[PATHS[path]])
            elif path == "/ws/v1/events/batch":
                self._send(batch)
            elif path == "/ws/v1/events/stream":
                first = json.dumps({"InstanceUUID": UUID}).encode() + b"\n"
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(first)
                self.wfile.flush()
                with sent.get_lock():
                    sent.value += len(first)
                time.sleep(hold)  # an idle stream: nothing happens in the cluster
            else:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    port.value = server.server_address[1]
    server.serve_forever()


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--per-node", type=int, default=20)
    parser.add_argument("--window", type=float, default=2.0, help="seconds the stream is read")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    files = build_answers(args.nodes, args.per_node)
    total = sum(len(b) for b in files.values())
    ctx = multiprocessing.get_context("fork")
    port, sent = ctx.Value("i", 0), ctx.Value("q", 0)
    child = ctx.Process(target=serve, args=(files, port, sent, args.window * 3), daemon=True)
    child.start()
    while not port.value:
        time.sleep(0.05)
    del files

    workdir = Path(tempfile.mkdtemp(prefix="bench-stream-"))
    os.environ["DATABASE_URL"] = f"sqlite:///{workdir / 'bench.sqlite3'}"
    os.environ["SOURCES_ALLOWED_NETWORKS"] = "127.0.0.0/8"
    os.environ["SOURCES_MAX_ANSWER_BYTES"] = str(LIMIT)
    os.environ["SOURCES_STREAM_WINDOW_SECONDS"] = str(args.window)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
    import django

    django.setup()
    from django.core.management import call_command

    from dashboard import services as platform
    from dashboard.sources import services
    from dashboard.sources.models import ClusterSource

    call_command("migrate", verbosity=0)
    source = ClusterSource.objects.create(
        name="bench", base_url=f"http://127.0.0.1:{port.value}", follow_stream=True
    )
    now = platform.utcnow()
    print(
        f"cluster: {args.nodes} nodes, {args.nodes * args.per_node} allocations, "
        f"{total / 2**20:.1f} MiB of REST answers; stream window {args.window:g} s"
    )
    first = services.poll_source(source.pk, now=now, force=True)
    print(f"first poll: {first.status}")

    def cycle(follow: bool, at: Any) -> tuple[float, float, int, str]:
        ClusterSource.objects.filter(pk=source.pk).update(follow_stream=follow)
        before = sent.value
        wall, cpu = time.perf_counter(), time.process_time()
        outcome = services.poll_source(source.pk, now=at, force=True)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        note = ClusterSource.objects.get(pk=source.pk).last_cycle if follow else "full poll"
        assert outcome.status == "unchanged", outcome
        return wall, cpu, sent.value - before, note

    rows: dict[str, list[tuple[float, float, int, str]]] = {"full poll": [], "stream cycle": []}
    for i in range(args.repeat):
        at = now + timedelta(seconds=10 * (i + 1))
        rows["full poll"].append(cycle(False, at))
        rows["stream cycle"].append(cycle(True, at + timedelta(seconds=5)))
    print(f"{'unchanged cycle':<16}{'wall s':>9}{'cpu s':>9}{'bytes read':>14}  last cycle")
    for label, runs in rows.items():
        wall = statistics.median(r[0] for r in runs)
        cpu = statistics.median(r[1] for r in runs)
        read = int(statistics.median(r[2] for r in runs))
        print(f"{label:<16}{wall:9.2f}{cpu:9.3f}{read:14,d}  {runs[-1][3]}")
    full_cpu = statistics.median(r[1] for r in rows["full poll"])
    stream_cpu = statistics.median(r[1] for r in rows["stream cycle"])
    stream_bytes = statistics.median(r[2] for r in rows["stream cycle"])
    print(
        f"target: an unchanged cluster costs next to nothing -> stream cycle "
        f"{stream_cpu:.3f} s CPU and {stream_bytes:,.0f} bytes "
        f"({100 * stream_cpu / full_cpu:.2f} % of a full poll's CPU, "
        f"{100 * stream_bytes / total:.4f} % of its bytes); its wall time is the window "
        "spent waiting on the open stream"
    )
    child.terminate()
    return 0


if __name__ == "__main__":
    sys.exit(main())
