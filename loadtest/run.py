"""Load test of the real stack on loopback: read latency under concurrent clients, no write lost.

    .venv/bin/python loadtest/run.py [--duration 60] [--clients 50] [--workers 2] [--threads 1]
                                     [--large]

It creates a dedicated PostgreSQL database (dropped at the end unless --keep-db),
starts a private redis-server on a free port, migrates, loads the demo data
(``manage.py load_demo``), starts gunicorn (``--workers`` sync processes as
``scripts/run`` does, or gthread processes of ``--threads`` threads), a Celery worker and
beat, then for ``--duration`` seconds drives ``--clients`` concurrent readers of
the tree, queue, history and alert endpoints (REST API and pages) while one
writer imports snapshots, schedules quota changes and submits what-ifs.  It prints
requests per second, p50 / p95 / p99 latency and errors per endpoint group, then
checks that every write the server accepted is there (and every accepted what-if
was evaluated), and stops everything it started.

With ``--large``, the 1,000-queue / 100,000-allocation cluster of the benchmarks is
also stored (partition ``large``, ``python -m loadtest.large``) before the web server
starts, and the readers, quota changes and what-ifs all go to it; the writer's
snapshot imports stay the demo cluster's (a 100,000-allocation scenario is larger
than the API's upload limit, and importing one is benchmarks/import_rest.py's job).

Readers wait ``--think`` seconds on average between requests (uniform 0..2x, as a
person or a polling page would); ``--think 0`` makes them hammer in a closed loop.
Exit status: 0 when the targets hold (no errors, read p99 < 300 ms, no write
lost), 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import re
import resource
import secrets
import signal
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import httpx
import psycopg

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from loadtest.stack import Stack, StackError, free_port, wait_for

READ_P99_TARGET_MS = 300.0
#: Threads per gunicorn worker, as ``scripts/run`` starts the web server (sync workers).
WEB_THREADS = 1
LARGE_PARTITION = "large"
PASSWORD = "load-" + secrets.token_urlsafe(12)


@dataclass
class Stats:
    """Latencies (ms) and failures of one endpoint group."""

    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    error_samples: list[str] = field(default_factory=list)

    def record(self, ms: float, ok: bool, what: str) -> None:
        self.latencies.append(ms)
        if not ok:
            self.errors += 1
            if len(self.error_samples) < 5:
                self.error_samples.append(what)


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100) of *values*."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


@dataclass
class Target:
    """What the readers know about the loaded cluster."""

    partition: str
    snapshot: int
    queues: list[str]
    leaves: list[str]
    #: the queue whose max the writer's what-ifs lower: root of the demo cluster; one
    #: leaf of the large one (lowering root's max to a few cores there plans the
    #: preemption of nearly all 100,000 allocations, which keeps a worker busy for long)
    whatif_queue: str = "root"


def read_paths(t: Target, rng: random.Random) -> list[tuple[str, str]]:
    """(group, path) for one round of reads over every group."""
    q = rng.choice(t.queues)
    scope = f"partition={t.partition}"
    return [
        ("api tree", f"/api/snapshots/{t.snapshot}/queues/?page_size=500"),
        ("api queue", f"/api/snapshots/{t.snapshot}/allocations/?queue={q}"),
        ("api history", "/api/runs/?page_size=50"),
        ("api history", f"/api/quota-changes/?partition={t.partition}"),
        ("api alerts", "/api/alerts/?acknowledged=false"),
        ("api alerts", "/api/alerts/unread/"),
        ("page tree", f"/queues/?{scope}"),
        ("page queue", f"/queues/detail/?{scope}&queue={q}"),
        ("page history", f"/history/?{scope}"),
        ("page alerts", f"/alerts/?{scope}"),
    ]


async def reader(
    base: str,
    cookie: str,
    target: Target,
    stats: dict[str, Stats],
    stop_at: float,
    think: float,
    seed: int,
) -> None:
    """One reader: a random read, then a random pause, until *stop_at*.

    Readers use aiohttp rather than httpx: on this 2-core machine the load generator
    shares the CPU with the stack it measures, and httpx costs it more CPU per request than
    aiohttp. The writer and the checks after the run keep httpx.
    """
    rng = random.Random(seed)
    async with aiohttp.ClientSession(
        base_url=base,
        headers={"Cookie": cookie},
        cookie_jar=aiohttp.DummyCookieJar(),
        timeout=aiohttp.ClientTimeout(total=30),
        connector=aiohttp.TCPConnector(limit=1),
    ) as client:
        await asyncio.sleep(rng.uniform(0, max(think, 0.05) * 2))  # spread the start
        while time.monotonic() < stop_at:
            paths = read_paths(target, rng)
            group, path = paths[rng.randrange(len(paths))]
            started = time.perf_counter()
            try:
                async with client.get(path, allow_redirects=False) as response:
                    await response.read()
                    ok = response.status == 200
                    what = f"GET {path}: {response.status}"
            except (aiohttp.ClientError, TimeoutError) as exc:
                ok, what = False, f"GET {path}: {type(exc).__name__}: {exc}"
            stats[group].record((time.perf_counter() - started) * 1000, ok, what)
            if think > 0:
                await asyncio.sleep(rng.uniform(0, 2 * think))


def machine_speed() -> float:
    """Milliseconds a fixed pure-Python loop takes here: the machine's speed right now.

    This shared virtual machine's speed varies from hour to hour (the same loop has taken
    much longer later the same day), and so do the latencies; printed before and after
    the run so that every run's figures can be read against it.
    """
    started = time.perf_counter()
    total = 0
    for i in range(5_000_000):
        total += i
    return (time.perf_counter() - started) * 1000


async def loop_lag(lags: list[float], stop_at: float, interval: float = 0.01) -> None:
    """How late the load generator's own event loop wakes up (ms), sampled every *interval*.

    Every reader shares one loop: a response that has arrived waits until the loop gets to
    it, and that wait is counted in the request's latency. This is its size.
    """
    while time.monotonic() < stop_at:
        started = time.perf_counter()
        await asyncio.sleep(interval)
        lags.append(max(0.0, (time.perf_counter() - started - interval) * 1000))


@dataclass
class Accepted:
    snapshots: list[int] = field(default_factory=list)
    changes: list[int] = field(default_factory=list)
    runs: list[int] = field(default_factory=list)


async def writer(
    base: str,
    token: str,
    target: Target,
    scenario: dict[str, object],
    stats: dict[str, Stats],
    accepted: Accepted,
    stop_at: float,
    pace: float,
) -> None:
    """Imports snapshots, schedules quota changes and submits what-ifs, one every *pace* s."""
    headers = {"Authorization": f"Token {token}"}
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=60) as client:
        n = 0
        while time.monotonic() < stop_at:
            kind = ("snapshot", "change", "whatif")[n % 3]
            started = time.perf_counter()
            try:
                if kind == "snapshot":
                    doc = dict(scenario)
                    base_now = doc.get("now")
                    start = float(base_now) if isinstance(base_now, int | float) else time.time()
                    doc["now"] = start + n  # a new state each time
                    response = await client.post("/api/snapshots/", json=doc)
                    ok = response.status_code == 201
                    if ok:
                        accepted.snapshots.append(int(response.json()["id"]))
                elif kind == "change":
                    leaf = target.leaves[(n // 3) % len(target.leaves)]
                    body = {
                        "partition": target.partition,
                        "queue_path": leaf,
                        # a new max each time (never "nothing changes"), far from firing
                        "new_max": {"pods": 1000 + n},
                        "new_delay": 3600,
                    }
                    response = await client.post("/api/quota-changes/", json=body)
                    ok = response.status_code == 201
                    if ok:
                        accepted.changes.append(int(response.json()["id"]))
                else:
                    body = {
                        "snapshot": target.snapshot,
                        "queue": target.whatif_queue,
                        "new_max": {"vcore": 1000 + n},
                    }
                    response = await client.post("/api/whatif/quota/", json=body)
                    ok = response.status_code == 202
                    if ok:
                        accepted.runs.append(int(response.json()["id"]))
                what = f"POST {kind}: {response.status_code} {response.text[:200]}"
            except httpx.HTTPError as exc:
                ok, what = False, f"POST {kind}: {type(exc).__name__}: {exc}"
            stats[f"write {kind}"].record((time.perf_counter() - started) * 1000, ok, what)
            n += 1
            await asyncio.sleep(pace)


def verify(base: str, token: str, accepted: Accepted) -> list[str]:
    """Every accepted write is found; every accepted what-if is evaluated (bounded wait)."""
    lost: list[str] = []
    with httpx.Client(
        base_url=base, headers={"Authorization": f"Token {token}"}, timeout=30
    ) as client:
        for sid in accepted.snapshots:
            if client.get(f"/api/snapshots/{sid}/").status_code != 200:
                lost.append(f"snapshot {sid}")
        for cid in accepted.changes:
            if client.get(f"/api/quota-changes/{cid}/").status_code != 200:
                lost.append(f"quota change {cid}")
        deadline = time.monotonic() + 120
        pending = list(accepted.runs)
        while pending and time.monotonic() < deadline:
            still = []
            for rid in pending:
                answer = client.get(f"/api/runs/{rid}/")
                if answer.status_code != 200:
                    lost.append(f"run {rid}")
                elif answer.json()["status"] not in ("done", "failed"):
                    still.append(rid)
            pending = still
            if pending:
                time.sleep(1)
        lost += [f"run {rid} never evaluated" for rid in pending]
    return lost


def sign_in(base: str, username: str, password: str) -> httpx.Cookies:
    """A session cookie from the pages' sign-in form (CSRF token included)."""
    with httpx.Client(base_url=base, timeout=30, follow_redirects=False) as client:
        client.get("/login/")
        csrf = client.cookies.get("csrftoken") or ""
        answer = client.post(
            "/login/",
            data={"username": username, "password": password, "csrfmiddlewaretoken": csrf},
        )
        if answer.status_code != 302:
            raise StackError(f"sign-in failed: {answer.status_code}")
        return client.cookies


def discover(base: str, token: str, large: bool = False) -> tuple[Target, dict[str, object]]:
    """The partition read (the demo's, or ``large``), its latest snapshot and queue paths,
    and the demo's latest snapshot as a scenario (what the writer imports)."""
    with httpx.Client(
        base_url=base, headers={"Authorization": f"Token {token}"}, timeout=60
    ) as client:
        partitions = client.get("/api/partitions/").json()["results"]
        demo = next(p for p in partitions if p["name"] != LARGE_PARTITION)
        partition = next(p for p in partitions if p["name"] == LARGE_PARTITION) if large else demo
        sid = int(partition["latest_snapshot"])
        rows: list[dict[str, object]] = []
        url: str | None = f"/api/snapshots/{sid}/queues/?page_size=500"
        while url:
            answer = client.get(url).json()
            rows += answer["results"]
            url = answer.get("next")
        scenario = client.get(f"/api/snapshots/{int(demo['latest_snapshot'])}/export/").json()
    scenario.pop("request", None)
    queues = [str(r["path"]) for r in rows]
    leaves = [str(r["path"]) for r in rows if r["is_leaf"]]
    whatif_queue = leaves[len(leaves) // 2] if large else queues[0]
    return Target(partition["name"], sid, queues, leaves, whatif_queue), scenario


def summary(stats: dict[str, Stats], seconds: float, lost: list[str]) -> dict[str, object]:
    """The figures of a run as JSON (for ``--summary`` and the smoke test)."""
    reads = [ms for g, s in stats.items() if not g.startswith("write") for ms in s.latencies]
    return {
        "seconds": seconds,
        "requests": sum(len(s.latencies) for s in stats.values()),
        "errors": sum(s.errors for s in stats.values()),
        "error_samples": [e for s in stats.values() for e in s.error_samples],
        "read_requests": len(reads),
        "read_p50_ms": percentile(reads, 50),
        "read_p95_ms": percentile(reads, 95),
        "read_p99_ms": percentile(reads, 99),
        "groups": {
            g: {
                "requests": len(s.latencies),
                "p50_ms": percentile(s.latencies, 50),
                "p95_ms": percentile(s.latencies, 95),
                "p99_ms": percentile(s.latencies, 99),
                "errors": s.errors,
            }
            for g, s in sorted(stats.items())
        },
        "lost": lost,
    }


def report(
    stats: dict[str, Stats], seconds: float, lost: list[str], clients: int, think: float
) -> bool:
    print(f"\nload test: {clients} readers (think {think:g}s avg) + 1 writer for {seconds:.1f} s")
    header = f"{'group':<16}{'requests':>9}{'req/s':>8}{'p50 ms':>9}{'p95 ms':>9}"
    print(header + f"{'p99 ms':>9}{'max ms':>9}{'errors':>8}")
    total = 0
    errors = 0
    reads: list[float] = []
    for group in sorted(stats):
        s = stats[group]
        total += len(s.latencies)
        errors += s.errors
        if not group.startswith("write"):
            reads += s.latencies
        print(
            f"{group:<16}{len(s.latencies):>9}{len(s.latencies) / seconds:>8.1f}"
            f"{percentile(s.latencies, 50):>9.1f}{percentile(s.latencies, 95):>9.1f}"
            f"{percentile(s.latencies, 99):>9.1f}{max(s.latencies, default=0):>9.1f}"
            f"{s.errors:>8}"
        )
    read_p99 = percentile(reads, 99)
    print(
        f"{'all reads':<16}{len(reads):>9}{len(reads) / seconds:>8.1f}"
        f"{percentile(reads, 50):>9.1f}{percentile(reads, 95):>9.1f}{read_p99:>9.1f}"
        f"{max(reads, default=0):>9.1f}"
    )
    print(f"total: {total} requests, {total / seconds:.1f} req/s, {errors} errors")
    for group, s in sorted(stats.items()):
        for sample in s.error_samples:
            print(f"  error ({group}): {sample}")
    print(f"writes lost: {len(lost)}" + (f" {lost[:10]}" if lost else ""))
    checks = {
        "zero errors": errors == 0,
        f"read p99 < {READ_P99_TARGET_MS:.0f} ms ({read_p99:.1f} ms)": read_p99
        < READ_P99_TARGET_MS,
        "no write lost": not lost,
    }
    for name, ok in checks.items():
        print(f"target {name}: {'PASS' if ok else 'FAIL'}")
    return all(checks.values())


def _database(admin_url: str, name: str, create: bool) -> None:
    with psycopg.connect(admin_url, autocommit=True) as conn:
        if create:
            conn.execute(f'CREATE DATABASE "{name}"')
        else:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


async def drive(args: argparse.Namespace, base: str, token: str, cookies: httpx.Cookies) -> bool:
    target, scenario = discover(base, token, args.large)
    print(
        f"cluster read: partition {target.partition}, snapshot {target.snapshot}, "
        f"{len(target.queues)} queues"
    )
    stats: dict[str, Stats] = defaultdict(Stats)
    accepted = Accepted()
    cookie = "; ".join(f"{c.name}={c.value}" for c in cookies.jar)
    print("machine load average before: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    print(f"machine speed before: a fixed Python loop takes {machine_speed():.0f} ms")
    own_cpu = resource.getrusage(resource.RUSAGE_SELF)
    started = time.monotonic()
    stop_at = started + args.duration
    tasks = [
        reader(base, cookie, target, stats, stop_at, args.think, seed)
        for seed in range(args.clients)
    ]
    tasks.append(writer(base, token, target, scenario, stats, accepted, stop_at, args.pace))
    lags: list[float] = []
    tasks.append(loop_lag(lags, stop_at))
    await asyncio.gather(*tasks)
    elapsed = time.monotonic() - started
    used = resource.getrusage(resource.RUSAGE_SELF)
    client_cpu = used.ru_utime + used.ru_stime - own_cpu.ru_utime - own_cpu.ru_stime
    print("machine load average after: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    print(f"machine speed after: a fixed Python loop takes {machine_speed():.0f} ms")
    print(f"load generator CPU: {client_cpu:.1f} s over {elapsed:.1f} s")
    print(
        f"load generator event-loop lag (part of every latency below): p50 "
        f"{percentile(lags, 50):.1f} ms, p99 {percentile(lags, 99):.1f} ms, "
        f"max {max(lags, default=0):.1f} ms"
    )
    args.requests_sent = sum(len(s.latencies) for s in stats.values())
    lost = verify(base, token, accepted)
    print(
        f"accepted writes: {len(accepted.snapshots)} snapshots, {len(accepted.changes)} "
        f"quota changes, {len(accepted.runs)} what-ifs"
    )
    if args.summary is not None:
        args.summary.write_text(json.dumps(summary(stats, elapsed, lost), indent=2))
    return report(stats, elapsed, lost, args.clients, args.think)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of load")
    parser.add_argument("--clients", type=int, default=50, help="concurrent readers")
    parser.add_argument("--think", type=float, default=0.5, help="mean reader pause (s)")
    parser.add_argument("--pace", type=float, default=0.5, help="writer pause (s)")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers (>= 2)")
    parser.add_argument(
        "--threads",
        type=int,
        default=WEB_THREADS,
        help=f"threads per gunicorn worker (gthread workers when > 1; default {WEB_THREADS}: "
        "sync workers, as scripts/run starts them)",
    )
    parser.add_argument(
        "--admin-database-url",
        default="postgresql://postgres@127.0.0.1:5432/postgres",
        help="a PostgreSQL connection allowed to create and drop databases",
    )
    parser.add_argument(
        "--conn-max-age",
        type=int,
        default=None,
        help="add ?conn_max_age=N to DATABASE_URL (0 = a connection per request; "
        "default: the product's, DB_CONN_MAX_AGE or 60)",
    )
    parser.add_argument(
        "--large",
        action="store_true",
        help="also store the 1,000-queue / 100,000-allocation cluster and read it",
    )
    parser.add_argument("--keep-db", action="store_true", help="do not drop the database")
    parser.add_argument("--summary", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    if args.workers < 2:
        parser.error("--workers must be at least 2")

    name = f"dashboard_load_{int(time.time())}_{secrets.token_hex(3)}"
    admin = args.admin_database_url
    database_url = re.sub(r"/[^/]*$", f"/{name}", admin).replace("postgresql://", "postgres://")
    if args.conn_max_age is not None:
        database_url += f"?conn_max_age={args.conn_max_age}"
    workdir = Path(tempfile.mkdtemp(prefix="loadtest-"))
    _database(admin, name, create=True)
    stack = Stack(workdir, {})
    ok = False
    args.requests_sent = 0
    children_before = 0.0
    try:
        redis_port = free_port()
        broker = f"redis://127.0.0.1:{redis_port}/0"
        stack.env = Stack.base_env(
            database_url,
            broker,
            SECRET_KEY=secrets.token_urlsafe(50),
            DASHBOARD_SWEEP_SECONDS="2",
            LOG_LEVEL="WARNING",
        )
        stack.redis(redis_port)
        t = time.perf_counter()
        stack.manage("migrate", "--noinput")
        print(stack.manage("load_demo", "--username", "loadtest", "--password", PASSWORD).strip())
        if args.large:
            print(stack.python("-m", "loadtest.large").strip())
        print(f"database {name}: migrated and loaded in {time.perf_counter() - t:.1f} s")
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        children_before = kids.ru_utime + kids.ru_stime
        port = free_port()
        web = stack.gunicorn(port, workers=args.workers, threads=args.threads)
        stack.worker()
        stack.beat()
        base = f"http://127.0.0.1:{port}"
        wait_for(lambda: httpx.get(f"{base}/login/").status_code == 200, 60, "the login page", web)
        cookies = sign_in(base, "loadtest", PASSWORD)
        token = httpx.post(
            f"{base}/api/auth/token/", data={"username": "loadtest", "password": PASSWORD}
        ).json()["token"]
        print(
            f"stack up: gunicorn x{args.workers} (threads {args.threads}) on {port}, "
            f"redis on {redis_port}, logs {workdir}"
        )
        ok = asyncio.run(drive(args, base, token, cookies))
    finally:
        stack.stop_all(signal.SIGTERM)
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        stack_cpu = kids.ru_utime + kids.ru_stime - children_before
        per = stack_cpu * 1000 / args.requests_sent if args.requests_sent else float("nan")
        print(
            f"stack CPU (gunicorn, worker, beat, redis; start to stop): {stack_cpu:.1f} s, "
            f"{per:.1f} ms per request sent"
        )
        if not args.keep_db:
            _database(admin, name, create=False)
        print(
            f"stopped {len(stack.procs)} processes" + ("" if args.keep_db else f", dropped {name}")
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
