"""Benchmark: one worker pool following many clusters, each changing at every poll.

Starts ``--clusters`` fake YuniKorn schedulers in this process (one HTTP server each,
on 127.0.0.1), each serving a generated cluster of ``--allocations`` allocations (the
cluster of ``benchmarks/import_rest.py``, 20 per node) that changes at every poll: a
poll's first request (``/ws/v1/partitions``) moves the scheduler to its next state,
1 % of its pods replaced (``--states`` states made beforehand, served in a ring, each
differing from the one before), and the poll's other requests are answered from that
state. Each is added as a cluster source polled every ``--interval`` seconds.

Then it runs the real poller processes - a Celery beat (``dashboard.poll_cluster_sources``
every ``SOURCES_BEAT_SECONDS``) and ``--workers`` single-process Celery workers consuming
the poll queue (``SOURCES_POLL_QUEUE=polls``), each also its own queue (source affinity:
each source's polls go to one of them, docs/operations/sources.md), and the default
queue (the sweeps, any warm-up), as the documented poller deployment runs them; with
``--no-affinity``, one worker of ``--workers`` processes, any process taking any poll -
on the broker of ``CELERY_BROKER_URL`` for ``--duration`` seconds, and prints:

- per cluster, the staleness percentiles of its newest stored snapshot, sampled every
  second after the cluster's first snapshot: how old the state the dashboard shows is
  (the time since the scheduler moved to the state the newest snapshot holds);
- the polls stored, and the worker pool's CPU seconds per poll (user + system of the
  worker's processes, from /proc) beside the machine's load;
- the broker's queues (messages waiting, sampled every second: the median and the
  most), and the poll messages the workers ran against the polls they made: a message
  that finds its source claimed or not due any more does nothing but costs a task;
- the CPU of this process - the fake schedulers, which serve each state's answers as
  bytes encoded beforehand, and the sampler - per stored poll.

The issue's target: 20 clusters of 10,000 allocations followed by one 2-core pool,
every snapshot at most 30 s old.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/NAME \\
    CELERY_BROKER_URL=redis://127.0.0.1:6379/N \\
    .venv/bin/python benchmarks/fleet.py [--clusters 20] [--allocations 10000]
        [--workers 2] [--interval 10] [--duration 300] [--states 4] [--no-affinity]

The database is flushed first (use a throw-away one). Figures are printed, never
asserted.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from import_rest import build_answers, replace_pods  # noqa: E402

PER_NODE = 20
PATHS = {
    "/ws/v1/partitions": "partitions.json",
    "/ws/v1/partition/default/queues": "partition_queues.json",
    "/ws/v1/partition/default/nodes": "partition_nodes.json",
    "/ws/v1/partition/default/applications/active": "partition_applications_active.json",
}


@dataclass
class FakeScheduler:
    """One cluster: its states, the one served, and when each state began."""

    states: list[dict[str, bytes]]
    current: int = 0
    #: wall time at which the state served now began (the poll that moved it)
    since: float = field(default_factory=time.time)
    #: (start wall time, state number) of every state served, in order
    history: list[tuple[float, int]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, path: str) -> bytes | None:
        name = PATHS.get(path.split("?", 1)[0])
        if name is None:
            return None
        with self.lock:
            if name == "partitions.json":  # a poll begins: the cluster has changed
                self.current = (self.current + 1) % len(self.states)
                self.since = time.time()
                self.history.append((self.since, self.current))
            return self.states[self.current][name]


def _handler(fake: FakeScheduler) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = fake.answer(self.path)
            if body is None:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Handler


@contextmanager
def serving(fake: FakeScheduler) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _tree_cpu(pid: int) -> float:
    """CPU seconds (user + system) of *pid* and its live descendants, from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        parents[int(entry.name)] = int(fields[1])
        cpu[int(entry.name)] = (int(fields[11]) + int(fields[12])) / tick
    tree = {pid}
    grew = True
    while grew:
        more = {p for p, parent in parents.items() if parent in tree} - tree
        grew = bool(more)
        tree |= more
    return sum(cpu.get(p, 0.0) for p in tree)


def _tree_waits(pid: int) -> float:
    """Seconds *pid*'s process and its children spent runnable but waiting for a core
    (the scheduler's run-queue time, /proc/PID/schedstat), live processes only."""
    children = Path(f"/proc/{pid}/task/{pid}/children")
    pids = [pid, *(int(c) for c in children.read_text().split())] if children.exists() else [pid]
    waited = 0.0
    for p in pids:
        try:
            waited += int(Path(f"/proc/{p}/schedstat").read_text().split()[1]) / 1e9
        except (OSError, IndexError, ValueError):
            continue
    return waited


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clusters", type=int, default=20)
    parser.add_argument("--allocations", type=int, default=10_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--interval", type=int, default=10, help="each source's poll interval")
    parser.add_argument("--duration", type=float, default=300.0)
    parser.add_argument("--states", type=int, default=4)
    parser.add_argument(
        "--affinity",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="--workers single-process pollers, each source's polls to one of them (the "
        "documented poller); --no-affinity: one worker of --workers processes",
    )
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
    if "DATABASE_URL" not in os.environ or "CELERY_BROKER_URL" not in os.environ:
        parser.error("set DATABASE_URL (a throw-away database) and CELERY_BROKER_URL")
    import django

    django.setup()
    from django.core.management import call_command
    from django.db.models import Max

    from dashboard.models import Cluster
    from dashboard.sources.models import ClusterSource, SourceSnapshot

    call_command("migrate", verbosity=0)
    call_command("flush", interactive=False, verbosity=0)
    nodes = max(1, args.allocations // PER_NODE)
    started = time.perf_counter()
    base = build_answers(nodes, PER_NODE)
    ring = [base]
    for s in range(1, args.states):
        ring.append(replace_pods(ring[-1], 0.01, s))
    print(
        f"{'source affinity' if args.affinity else 'no affinity'}; "
        f"{args.clusters} clusters of {nodes * PER_NODE} allocations ({args.states} states "
        f"each, 1 % of the pods replaced from one to the next; made in "
        f"{time.perf_counter() - started:.0f} s); {args.workers} worker processes; poll "
        f"interval {args.interval} s; load average {os.getloadavg()}"
    )
    fakes = [FakeScheduler(states=ring, current=c % args.states) for c in range(args.clusters)]
    workdir = Path(tempfile.mkdtemp(prefix="bench-fleet-"))
    env = dict(
        os.environ,
        SOURCES_BEAT_SECONDS="2",
        SOURCES_PRUNE_SECONDS="0",
        SOURCES_POLL_QUEUE="polls",
        SOURCES_POLL_AFFINITY="1" if args.affinity else "0",
    )
    import redis

    broker = redis.Redis.from_url(os.environ["CELERY_BROKER_URL"])
    queues = ["celery", "polls", *(k.decode() for k in broker.scan_iter("polls.*"))]
    broker.delete(*queues)  # no message of an earlier run
    queues = ["celery", "polls"] + [
        f"polls.fleet{w}@{socket.gethostname()}" for w in range(args.workers)
    ]
    celery = [sys.executable, "-m", "celery", "-A", "dashboard"]
    with ExitStack() as stack:
        ids: dict[int, int] = {}
        for c, fake in enumerate(fakes):
            url = stack.enter_context(serving(fake))
            source = ClusterSource.objects.create(
                name=f"fleet-{c:02d}",
                base_url=url,
                poll_interval=args.interval,
                cluster=Cluster.objects.create(name=f"fleet-{c:02d}"),
            )
            ids[source.pk] = c
        host = socket.gethostname()
        if args.affinity:  # the documented poller: single-process workers, each its queue
            names = [f"fleet{w}@{host}" for w in range(args.workers)]
            pool = [(name, "1") for name in names]
        else:  # one worker of --workers processes, any process takes any poll
            names = [f"fleet@{host}"]
            pool = [(names[0], str(args.workers))]
        workers = []
        for w, (name, concurrency) in enumerate(pool):
            log = stack.enter_context(open(workdir / f"worker{w}.log", "w"))
            workers.append(
                subprocess.Popen(
                    [
                        *celery,
                        "worker",
                        "--queues",
                        "polls,celery",  # the polls, and the sweeps and any warm-up
                        "--concurrency",
                        concurrency,
                        "--hostname",
                        name,
                        "--loglevel",
                        "INFO",  # one line per task received and succeeded: counted below
                        "--without-gossip",
                        "--without-mingle",
                    ],
                    cwd=ROOT,
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=log,
                )
            )
        beat_log = stack.enter_context(open(workdir / "beat.log", "w"))
        beat = subprocess.Popen(
            [*celery, "beat", "--loglevel", "WARNING", "-s", str(workdir / "beat-schedule")],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=beat_log,
        )
        try:
            ages: dict[int, list[float]] = {c: [] for c in range(args.clusters)}
            t0 = time.time()
            cpu0 = sum(_tree_cpu(w.pid) for w in workers)
            waits0 = sum(_tree_waits(w.pid) for w in workers)
            own0 = time.process_time()
            stored0 = SourceSnapshot.objects.count()
            waiting: list[int] = []
            while time.time() - t0 < args.duration:
                time.sleep(1.0)
                waiting.append(sum(int(broker.llen(q)) for q in queues))
                now = time.time()
                newest = dict(
                    SourceSnapshot.objects.values("source")
                    .annotate(at=Max("fetched_at"))
                    .values_list("source", "at")
                )
                for source_id, at in newest.items():
                    c = ids[source_id]
                    # the state the newest snapshot holds began when its poll moved it:
                    # the last state change at or before the poll's claim (fetched_at)
                    began = [t for t, _ in fakes[c].history if t <= at.timestamp() + 1.0]
                    if began:
                        ages[c].append(now - began[-1])
            cpu = sum(_tree_cpu(w.pid) for w in workers) - cpu0
            waits = sum(_tree_waits(w.pid) for w in workers) - waits0
            own = time.process_time() - own0
            stored = SourceSnapshot.objects.count() - stored0
        finally:
            for proc in (beat, *workers):
                proc.send_signal(signal.SIGTERM)
            for proc in (beat, *workers):
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
    print(f"{'cluster':<10}{'samples':>8}{'p50 s':>8}{'p95 s':>8}{'max s':>8}  <= 30 s")
    worst = 0.0
    for c, values in ages.items():
        if not values:
            print(f"fleet-{c:02d}  no snapshot stored")
            worst = float("inf")
            continue
        values.sort()
        p50 = statistics.median(values)
        p95 = values[min(len(values) - 1, int(0.95 * len(values)))]
        worst = max(worst, values[-1])
        print(f"fleet-{c:02d}  {len(values):8d}{p50:8.1f}{p95:8.1f}{values[-1]:8.1f}  "
              f"{'met' if values[-1] <= 30 else 'NOT met'}")  # fmt: skip
    log = "\n".join(
        (workdir / f"worker{w}.log").read_text(errors="replace") for w in range(len(workers))
    )

    def received(task: str) -> int:
        return sum(
            1
            for line in log.splitlines()
            if f"{task}[" in line and line.rstrip().endswith("received")
        )

    messages = received("dashboard.poll_cluster_source")

    def held(task: str) -> list[float]:
        """Seconds each finished task named *task* (a pattern) held its process (the
        worker's "succeeded in")."""
        pattern = re.compile(rf"{task}\[[^\]]*\] succeeded in ([0-9.]+)s")
        return [float(m.group(1)) for m in pattern.finditer(log)]

    polls_held = held(r"dashboard\.poll_cluster_source")
    all_held = held(r"dashboard\.[a-z_.]+")
    waiting.sort()
    print(
        f"broker queue: median {statistics.median(waiting):.0f}, most {waiting[-1]} messages "
        f"waiting; poll messages received {messages} for {stored} polls stored; warm-ups "
        f"received {received('dashboard.warm_snapshot')}"
    )
    print(
        f"a poll held its process {statistics.mean(polls_held or [0.0]):.2f} s on average; "
        f"the pool's processes were in tasks {sum(all_held):.0f} of their "
        f"{args.workers * args.duration:.0f} s ({sum(polls_held):.0f} in polls), "
        f"{cpu:.0f} s on a core and {waits:.0f} s runnable, waiting for one (schedstat)"
    )
    print(
        f"the fake schedulers and this sampler: {own:.1f} s of CPU in this process "
        f"({own / max(stored, 1):.2f} s per stored poll)"
    )
    print(
        f"polls stored in {args.duration:.0f} s: {stored} ({stored / args.duration * 60:.1f} a "
        f"minute); worker CPU {cpu:.1f} s = {cpu / max(stored, 1):.2f} s per stored poll; "
        f"oldest snapshot seen {worst:.1f} s; load average {os.getloadavg()}; "
        f"at {datetime.now(UTC):%Y-%m-%d %H:%M} UTC"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
