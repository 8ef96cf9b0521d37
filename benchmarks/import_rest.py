"""Benchmark: importing a big cluster's YuniKorn REST answers, as a poll or an upload does.

Scales the shared REST fixtures (partitions, queues, nodes, applications/active) up
to ``--nodes`` nodes with ``--per-node`` allocations each (default 5,000 x 20 =
100,000 allocations in 10,000 applications), every allocation listed twice as the
scheduler does (under its node and under its application), queue usage summed from
the allocations. Then, in a throw-away SQLite database, it times each step a
changed poll takes:

- ``parse``: ``parse_snapshot`` of the four answers (JSON, validation, scenario);
- ``fingerprint``: the poller's state fingerprint of that parse;
- ``store``: ``import_snapshot`` with the parse handed over (rows written);

and prints the answers' sizes and the parse's peak memory (``tracemalloc``).

Then the command line as an administrator runs it, beside the issue's targets, into
the emptied database: the first import, a poll with 1 % of the pods replaced
(``replace_pods``) and the same answers again (an unchanged
poll). Each is ``manage.py import_snapshot FOLDER`` run as its own process (wall time
including interpreter and Django start; peak memory as the process's maximum resident
set size from ``/usr/bin/time -v``, else ``getrusage`` of the children, in MB of 10^6
bytes: the 400 MB target is 381 MiB) against
``json.load`` of the same files in a fresh process (interpreter start not counted),
with the database's growth (the SQLite file, or ``pg_total_relation_size`` of the
tables on PostgreSQL). CPU seconds are printed beside the wall times: on a shared
machine they vary much less with the load. The three polls are run ``--rounds`` times
(the database emptied before each round), and the median of each figure is printed
beside the targets.

    .venv/bin/python benchmarks/import_rest.py [--nodes 5000] [--per-node 20] [--repeat 3]
        [--rounds 3] [--database-url postgres://postgres@127.0.0.1:5432/dash_bench]

A ``--database-url`` database is migrated, receives the benchmark's snapshots and is
flushed before the command runs (use a throw-away one).

Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
REST = (
    Path(os.environ.get("DASHBOARD_FIXTURES_DIR", ROOT.parent / "shared" / "fixtures" / "yunikorn"))
    / "rest"
)
FILES = (
    "partitions.json",
    "partition_queues.json",
    "partition_nodes.json",
    "partition_applications_active.json",
)
GIB = 2**30
#: No size limit here: the benchmark measures what a given size costs.
LIMIT = 2**40
#: One allocation: 1 core, 2 GiB, one pod.
ALLOC = {"memory": 2 * GIB, "pods": 1, "vcore": 1000}


def _leaves(queue: dict[str, Any]) -> list[str]:
    children = queue.get("children") or []
    if not children:
        return [queue["queuename"]]
    return [leaf for c in children for leaf in _leaves(c)]


def _add(into: dict[str, int], res: dict[str, int]) -> None:
    for t, q in res.items():
        into[t] = into.get(t, 0) + q


def build_answers(nodes: int, per_node: int) -> dict[str, bytes]:
    """The four REST answers of a cluster of *nodes* nodes, *per_node* allocations each."""
    source = {name: json.loads((REST / name).read_bytes()) for name in FILES}
    queues = source["partition_queues.json"]
    leaves = [q for q in _leaves(queues) if q != "root.monitoring"]
    node_template = next(n for n in source["partition_nodes.json"] if "gpu" not in n["nodeID"])
    app_template = source["partition_applications_active.json"][0]
    alloc_template = app_template["allocations"][0]
    t0 = alloc_template["allocationTime"]

    per_app = 10
    usage: dict[str, dict[str, int]] = defaultdict(dict)
    node_rows: list[dict[str, Any]] = []
    apps: dict[str, dict[str, Any]] = {}
    serial = 0
    for i in range(nodes):
        node_id = f"worker-{i:05d}"
        node = copy.deepcopy(node_template)
        node["nodeID"] = node_id
        node["attributes"]["si.io/hostname"] = node_id
        node["capacity"] = {
            "ephemeral-storage": 100 * GIB,
            "memory": 4 * GIB * per_node,
            "pods": 2 * per_node + 10,
            "vcore": 2000 * per_node,
        }
        node["foreignAllocations"] = []
        node["occupied"] = {}
        node_allocs = []
        for _ in range(per_node):
            app_id = f"app-{serial // per_app:06d}"
            queue = leaves[(serial // per_app) % len(leaves)]
            alloc = copy.deepcopy(alloc_template)
            alloc["allocationKey"] = f"alloc-{serial:07d}"
            alloc["applicationId"] = app_id
            alloc["nodeId"] = node_id
            alloc["resource"] = dict(ALLOC)
            alloc["priority"] = "0"
            alloc["allocationTime"] = alloc["requestTime"] = t0 + serial * 1_000_000
            tags = alloc["allocationTags"]
            tags["kubernetes.io/label/applicationId"] = app_id
            tags["kubernetes.io/label/queue"] = queue
            tags["kubernetes.io/meta/podName"] = f"{app_id}-pod-{serial:07d}"
            node_allocs.append(alloc)
            app = apps.get(app_id)
            if app is None:
                app = copy.deepcopy(app_template)
                app.update(applicationID=app_id, queueName=queue, allocations=[])
                app["usedResource"] = {}
                app["maxUsedResource"] = {}
                apps[app_id] = app
            app["allocations"].append(alloc)
            _add(app["usedResource"], ALLOC)
            parts = queue.split(".")
            for depth in range(1, len(parts) + 1):
                _add(usage[".".join(parts[:depth])], ALLOC)
            serial += 1
        allocated: dict[str, int] = {}
        for a in node_allocs:
            _add(allocated, a["resource"])
        node["allocations"] = node_allocs
        node["allocated"] = allocated
        node["available"] = {t: node["capacity"][t] - allocated.get(t, 0) for t in node["capacity"]}
        node_rows.append(node)

    def fix_queue(q: dict[str, Any]) -> None:
        q["allocatedResource"] = dict(usage.get(q["queuename"], {}))
        q["preemptingResource"] = {}
        q["pendingResource"] = {}
        # no limits: the usage of a scaled-up cluster is not compared with the fixture's
        q["maxResource"] = None
        q["guaranteedResource"] = None
        for c in q.get("children") or []:
            fix_queue(c)

    fix_queue(queues)
    partitions = source["partitions.json"]
    partitions[0]["totalNodes"] = nodes
    partitions[0]["totalContainers"] = serial
    answers = {
        "partitions.json": partitions,
        "partition_queues.json": queues,
        "partition_nodes.json": node_rows,
        "partition_applications_active.json": list(apps.values()),
    }
    # compact, as the scheduler's REST API answers
    return {name: json.dumps(doc, separators=(",", ":")).encode() for name, doc in answers.items()}


def replace_pods(files: dict[str, bytes], share: float, generation: int) -> dict[str, bytes]:
    """The answers with *share* of the allocations replaced by new pods (new keys)."""
    nodes = json.loads(files["partition_nodes.json"])
    apps = json.loads(files["partition_applications_active.json"])
    keys = sorted(a["allocationKey"] for n in nodes for a in n["allocations"])
    chosen = set(random.Random(generation).sample(keys, round(len(keys) * share)))

    def renew(a: dict[str, Any]) -> None:
        if a["allocationKey"] in chosen:
            a["allocationKey"] = f"{a['allocationKey']}-g{generation}"
            a["allocationTime"] += 1_000_000_000 * generation
            tags = a["allocationTags"]
            tags["kubernetes.io/meta/podName"] = (
                f"{tags['kubernetes.io/meta/podName']}-g{generation}"
            )

    for n in nodes:
        for a in n["allocations"]:
            renew(a)
    for app in apps:
        for a in app["allocations"]:
            renew(a)
    out = dict(files)
    out["partition_nodes.json"] = json.dumps(nodes, separators=(",", ":")).encode()
    out["partition_applications_active.json"] = json.dumps(apps, separators=(",", ":")).encode()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--per-node", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3, help="timed runs of each step")
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="rounds of the command line's three polls (medians printed when more than one)",
    )
    parser.add_argument(
        "--database-url",
        help="store into this (throw-away) database instead of a new SQLite file",
    )
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="bench-import-"))
    os.environ["DATABASE_URL"] = args.database_url or f"sqlite:///{workdir / 'bench.sqlite3'}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    from dashboard import models
    from dashboard import services as platform
    from dashboard.importers.snapshot import parse_snapshot
    from dashboard.sources.services import state_fingerprint

    call_command("migrate", verbosity=0)
    from django.db import connection

    print(f"database: {connection.vendor}")
    started = time.perf_counter()
    files = build_answers(args.nodes, args.per_node)
    print(
        f"cluster: {args.nodes} nodes, {args.nodes * args.per_node} allocations "
        f"(built in {time.perf_counter() - started:.1f} s)"
    )
    for name, data in files.items():
        print(f"  {name:<40} {len(data) / 2**20:8.1f} MiB")
    print(f"  {'all answers':<40} {sum(map(len, files.values())) / 2**20:8.1f} MiB")

    tracemalloc.start()
    parsed = parse_snapshot(files, max_bytes=LIMIT)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"parse peak memory (tracemalloc): {peak / 2**20:.0f} MiB")
    allocations = len(parsed.scenario["allocations"])
    print(f"parsed: {allocations} allocations, {len(parsed.warnings)} warning(s)")

    def timed(label: str, fn: Any) -> None:
        times, cpu = [], []
        for _ in range(args.repeat):
            t, c = time.perf_counter(), time.process_time()
            fn()
            times.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
        print(
            f"{label:<12} median {statistics.median(times) * 1000:8.0f} ms   "
            f"min {min(times) * 1000:8.0f} ms   (CPU median {statistics.median(cpu) * 1000:.0f} ms;"
            f" {args.repeat} runs)"
        )

    timed("parse", lambda: parse_snapshot(files, max_bytes=LIMIT))
    timed("fingerprint", lambda: state_fingerprint(parsed))
    timed(
        "store",
        lambda: platform.import_snapshot(
            files,
            partition="default",
            parsed=parsed,
            alert_warnings=False,
            max_bytes=(LIMIT, "SOURCES_MAX_ANSWER_BYTES"),
        ),
    )
    print(f"snapshots stored: {models.ClusterSnapshot.objects.count()}")
    command_figures(workdir, files, args.rounds)
    return 0


#: The issue's targets for ``manage.py import_snapshot FOLDER`` at this size.
TARGET_RATIO = 3.0
TARGET_UNCHANGED_RATIO = 1.0
TARGET_RSS_MB = 400
TARGET_GROWTH = 0.05


#: json.load of the given files, printing its wall and CPU seconds.
LOAD_JSON = """
import json, sys, time
t, cpu = time.perf_counter(), time.process_time()
for name in sys.argv[1:]:
    with open(name, "rb") as fh:
        json.load(fh)
print(time.perf_counter() - t, time.process_time() - cpu)
"""


def database_size() -> int:
    """The dashboard's tables in bytes: the SQLite file, or their PostgreSQL relations."""
    from django.db import connection

    if connection.vendor == "postgresql":
        with connection.cursor() as cur:
            cur.execute(
                "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                "JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE c.relkind = 'r' AND n.nspname = 'public'"
            )
            row = cur.fetchone()
            return int(row[0]) if row else 0
    name = str(connection.settings_dict["NAME"])
    connection.close()  # everything written back to the file
    return Path(name).stat().st_size


def empty_database() -> None:
    """No dashboard data left (and, on SQLite, no free page left to reuse)."""
    from django.core.management import call_command
    from django.db import connection

    call_command("flush", interactive=False, verbosity=0)
    if connection.vendor == "sqlite":
        with connection.cursor() as cur:
            cur.execute("VACUUM")
    connection.close()


def run_command(folder: Path) -> tuple[float, float, float, str]:
    """``manage.py import_snapshot FOLDER`` in its own process: wall s, CPU s, peak MB, output."""
    env = dict(os.environ, SOURCES_MAX_ANSWER_BYTES=str(LIMIT))
    cmd = [sys.executable, str(ROOT / "manage.py"), "import_snapshot", str(folder)]
    if Path("/usr/bin/time").exists():
        cmd = ["/usr/bin/time", "-v", *cmd]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT, check=False)
    wall_s = time.perf_counter() - t
    if done.returncode != 0:
        raise SystemExit(f"manage.py import_snapshot failed ({done.returncode}): {done.stderr}")
    rss_mb: float | None = None
    cpu_s = 0.0
    for line in done.stderr.splitlines():
        if "Maximum resident set size" in line:
            rss_mb = int(line.rsplit(":", 1)[1]) * 1024 / 1e6  # KiB -> MB
        if "User time (seconds)" in line or "System time (seconds)" in line:
            cpu_s += float(line.rsplit(":", 1)[1])
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if rss_mb is None:  # the largest child so far: a lower bound is not given
        rss_mb = after.ru_maxrss * 1024 / 1e6
    if not cpu_s:
        cpu_s = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    said = [ln for ln in done.stderr.splitlines() if ln.startswith("unchanged")]
    return wall_s, cpu_s, rss_mb, (said[0] if said else f"snapshot {done.stdout.strip()}")


def json_load_seconds(folder: Path) -> tuple[float, float]:
    """``json.load`` of the folder's files in a fresh process: wall s, CPU s."""
    # in a fresh process: this one holds the parsed snapshot, whose millions of objects
    # would slow json.load's garbage collections and flatter the ratio
    timed_load = subprocess.run(
        [sys.executable, "-c", LOAD_JSON, *(str(p) for p in sorted(folder.glob("*.json")))],
        capture_output=True,
        text=True,
        check=True,
    )
    load_s, load_cpu_s = map(float, timed_load.stdout.split())
    return load_s, load_cpu_s


def command_figures(workdir: Path, files: dict[str, bytes], rounds: int = 1) -> None:
    """``manage.py import_snapshot FOLDER`` (process start included) vs ``json.load``.

    Into an emptied database: the first import, a poll with 1 % of the pods replaced,
    and the same answers again (an unchanged poll), each beside the issue's targets.
    With *rounds* > 1 the three are run that many times (the database emptied before
    each round) and the median of each figure is printed below the rounds: on a
    shared machine one round can land on a busy moment.
    """
    polls = [
        ("first import", files, TARGET_RATIO),
        ("1 % churn", replace_pods(files, 0.01, 1), TARGET_RATIO),
        ("unchanged", None, TARGET_UNCHANGED_RATIO),
    ]
    folders: list[Path] = []
    folder = workdir / "answers"
    for i, (_, answers, _) in enumerate(polls):
        if answers is not None:
            folder = workdir / f"answers-{i}"
            folder.mkdir()
            for name, data in answers.items():
                (folder / name).write_bytes(data)
        folders.append(folder)
    # as installed: ./scripts/run byte-compiles the project once, as pip does the
    # libraries, so no start compiles its modules again (PYTHONDONTWRITEBYTECODE, set on
    # some machines, would else make every process compile them, a noticeable part of
    # each start)
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", "dashboard", "engine"], cwd=ROOT, check=True
    )
    print("project modules byte-compiled first (python -m compileall dashboard engine)")
    print("command line (manage.py import_snapshot FOLDER, its own process, process start")
    print("included; CPU = user + system seconds, steadier than wall time on a shared machine):")
    print(
        f"  {'poll':<16}{'json.load s':>12}{'command s':>10}{'ratio':>7}{'CPU ratio':>10}"
        f"{'target':>8}{'peak MB':>9}{'< 400':>6}{'growth MiB':>11}{'% of first':>11}"
    )
    figures: dict[str, list[tuple[float, ...]]] = defaultdict(list)
    for r in range(rounds):
        empty_database()
        first_growth = 0
        for (label, _, target), folder in zip(polls, folders, strict=True):
            load_s, load_cpu_s = json_load_seconds(folder)
            size = database_size()
            wall_s, cpu_s, rss_mb, said = run_command(folder)
            growth = database_size() - size
            first_growth = first_growth or growth
            row = (load_s, wall_s, wall_s / load_s, cpu_s / load_cpu_s, rss_mb, growth)
            figures[label].append(row)
            name = label if rounds == 1 else f"{label} #{r + 1}"
            print(_command_row(name, row, target, first_growth, said))
    if rounds > 1:
        print(f"  median of {rounds} rounds:")
        first = statistics.median(f[5] for f in figures[polls[0][0]])
        for label, _, target in polls:
            rows = figures[label]
            row = tuple(statistics.median(f[i] for f in rows) for i in range(6))
            print(_command_row(label, row, target, first, f"{rounds} rounds"))
    print(
        f"  (DB growth target of the 1 % poll: < {100 * TARGET_GROWTH:g} % of the first import's;"
        " peak MB: /usr/bin/time -v maximum resident set size, in MB of 10^6 bytes:"
        " 400 MB = 381 MiB)"
    )


def _command_row(
    label: str, row: tuple[float, ...], target: float, first_growth: float, said: str
) -> str:
    load_s, wall_s, ratio, cpu_ratio, rss_mb, growth = row
    return (
        f"  {label:<16}{load_s:12.2f}{wall_s:10.2f}{ratio:6.1f}x{cpu_ratio:9.1f}x"
        f"{f'<= {target:g}x':>8}{rss_mb:9.0f}{'met' if rss_mb < TARGET_RSS_MB else 'NOT':>6}"
        f"{growth / 2**20:11.2f}{100 * growth / first_growth if first_growth else 0:10.1f}%"
        f"  ratio {'met' if ratio <= target else 'NOT met'}; {said}"
    )


if __name__ == "__main__":
    sys.exit(main())
