"""Benchmark: a changed poll of a big cluster against ``json.load`` of the same answers.

Builds the cluster of ``benchmarks/import_rest.py`` (default 5,000 nodes x 20 =
100,000 allocations), adds it as a cluster source and polls it through the real
``poll_source`` (claim, parse, fingerprint, store, record) in this process, as a
poller worker does: a first poll, then ``--repeat`` rounds of

- ``1 % churn``: 1 % of the pods replaced (new allocation keys);
- ``usage only``: no allocation changed, only figures the scheduler reports beside
  them (every node's ``utilized`` share and the partition's last state change);

each a real change against the poll before it.  For each poll it prints the wall and
CPU seconds beside ``json.load`` of the same answers (in a fresh process, as in
``import_rest.py``), and the ratio of the two: the issue's targets are <= 2x for the
1 % poll and <= 1.2x for the usage-only one.  The load average is printed with them.

    .venv/bin/python benchmarks/changed_poll.py [--nodes 5000] [--per-node 20] [--repeat 3]
        [--database-url postgres://postgres@127.0.0.1:5432/NAME]   # flushed first!
        [--profile FILE.pstats]   # cProfile of the last 1 % poll, top functions printed
        [--py-spy FILE.txt]       # py-spy's samples of the last poll of each kind (collapsed
                                  # stacks, FILE.txt.churn and FILE.txt.usage), needs py-spy

Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from import_rest import LIMIT, LOAD_JSON, build_answers, replace_pods  # noqa: E402

TARGETS = {"1 % churn": 2.0, "usage only": 1.2}


def usage_only(files: dict[str, bytes], generation: int) -> dict[str, bytes]:
    """The answers with only reported figures changed: each node's ``utilized`` and the
    partition's ``lastStateTransitionTime``; no allocation, node capacity or queue."""
    nodes = json.loads(files["partition_nodes.json"])
    for i, n in enumerate(nodes):
        n["utilized"] = {"memory": (i + generation) % 100, "vcore": (i * 7 + generation) % 100}
    partitions = json.loads(files["partitions.json"])
    partitions[0]["lastStateTransitionTime"] = 1_700_000_000_000_000_000 + generation
    out = dict(files)
    out["partition_nodes.json"] = json.dumps(nodes, separators=(",", ":")).encode()
    out["partitions.json"] = json.dumps(partitions, separators=(",", ":")).encode()
    return out


def json_load_floor(files: dict[str, bytes], folder: Path) -> tuple[float, float]:
    """``json.load`` of *files* in a fresh process: wall s, CPU s."""
    folder.mkdir(exist_ok=True)
    for old in folder.glob("*.json"):
        old.unlink()
    for name, data in files.items():
        (folder / name).write_bytes(data)
    done = subprocess.run(
        [sys.executable, "-c", LOAD_JSON, *(str(p) for p in sorted(folder.glob("*.json")))],
        capture_output=True,
        text=True,
        check=True,
    )
    wall, cpu = map(float, done.stdout.split())
    return wall, cpu


def _start_py_spy(out: str) -> subprocess.Popen[bytes]:
    """py-spy sampling this process (collapsed stacks into *out*) until sent SIGINT."""
    spy = Path(sys.executable).with_name("py-spy")
    sampler = subprocess.Popen(
        [
            str(spy),
            "record",
            "--pid",
            str(os.getpid()),
            "--rate",
            "250",
            "--format",
            "raw",
            "--output",
            out,
            "--nonblocking",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(1.0)  # attached before the poll begins
    return sampler


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--per-node", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--database-url", help="a throw-away database (flushed first)")
    parser.add_argument("--profile", help="write the last 1 % poll's cProfile here")
    parser.add_argument("--py-spy", help="sample the last poll of each kind with py-spy")
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="bench-changed-poll-"))
    os.environ["DATABASE_URL"] = args.database_url or f"sqlite:///{workdir / 'bench.sqlite3'}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
    os.environ["SOURCES_MAX_ANSWER_BYTES"] = str(LIMIT)
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    from dashboard.sources import services
    from dashboard.sources.client import FetchError, FetchResult
    from dashboard.sources.models import ClusterSource

    call_command("migrate", verbosity=0)
    call_command("flush", interactive=False, verbosity=0)
    print(f"database: {connection.vendor}; load average {os.getloadavg()}")
    files = build_answers(args.nodes, args.per_node)
    print(
        f"cluster: {args.nodes} nodes, {args.nodes * args.per_node} allocations, "
        f"{sum(map(len, files.values())) / 2**20:.0f} MiB of answers"
    )
    source = ClusterSource.objects.create(name="bench", base_url="http://127.0.0.1:9")
    current: dict[str, Any] = {"files": files}

    def fetch(_source: ClusterSource) -> FetchResult:
        return FetchResult(files=dict(current["files"]))

    def no_events(_source: ClusterSource, _start: int) -> bytes:
        raise FetchError("events", "not served by the benchmark")

    def no_config(_source: ClusterSource) -> bytes:
        raise FetchError("config", "not served by the benchmark")

    def poll(
        profiler: cProfile.Profile | None = None, spy: str | None = None
    ) -> tuple[float, float, str]:
        sampler = _start_py_spy(spy) if spy else None
        t, c = time.perf_counter(), time.process_time()
        if profiler is not None:
            profiler.enable()
        outcome = services.poll_source(
            source.pk, force=True, fetch=fetch, events=no_events, config=no_config
        )
        if profiler is not None:
            profiler.disable()
        wall, cpu = time.perf_counter() - t, time.process_time() - c
        if sampler is not None:
            sampler.send_signal(signal.SIGINT)
            sampler.wait()
        return wall, cpu, outcome.status

    wall, cpu, status = poll()
    print(f"first poll: {wall:.2f} s wall, {cpu:.2f} s CPU ({status})")
    print(
        f"{'poll':<14}{'json.load s':>12}{'poll s':>8}{'ratio':>7}{'CPU s':>7}"
        f"{'CPU ratio':>10}{'target':>8}  load"
    )
    ratios: dict[str, list[tuple[float, float]]] = {k: [] for k in TARGETS}
    generation = 1
    profiler: cProfile.Profile | None = None
    for r in range(args.repeat):
        for label in TARGETS:
            generation += 1
            if label == "1 % churn":
                current["files"] = replace_pods(current["files"], 0.01, generation)
            else:
                current["files"] = usage_only(current["files"], generation)
            load_wall, load_cpu = json_load_floor(current["files"], workdir / "answers")
            last = r == args.repeat - 1 and label == "1 % churn"
            profiler = cProfile.Profile() if args.profile and last else profiler
            kind = "churn" if label == "1 % churn" else "usage"
            spy = f"{args.py_spy}.{kind}" if args.py_spy and r == args.repeat - 1 else None
            wall, cpu, status = poll(profiler if last else None, spy)
            ratio, cpu_ratio = wall / load_wall, cpu / load_cpu
            ratios[label].append((ratio, cpu_ratio))
            print(
                f"{label:<14}{load_wall:12.2f}{wall:8.2f}{ratio:6.2f}x{cpu:7.2f}"
                f"{cpu_ratio:9.2f}x{'<= ' + format(TARGETS[label], 'g') + 'x':>8}  "
                f"{os.getloadavg()[0]:.1f} ({status})"
            )
    print("medians:")
    for label, rows in ratios.items():
        wall_r = statistics.median(r[0] for r in rows)
        cpu_r = statistics.median(r[1] for r in rows)
        met = "met" if min(wall_r, cpu_r) <= TARGETS[label] else "NOT met"
        print(
            f"  {label:<12} wall {wall_r:.2f}x  CPU {cpu_r:.2f}x  target <= "
            f"{TARGETS[label]:g}x: {met}"
        )
    if profiler is not None and args.profile:
        profiler.dump_stats(args.profile)
        out = io.StringIO()
        stats = pstats.Stats(profiler, stream=out)
        stats.sort_stats("tottime").print_stats(25)
        stats.sort_stats("cumulative").print_stats(40)
        print(out.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())
