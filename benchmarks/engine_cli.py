"""Benchmark: ``python -m engine FILE`` against ``json.load`` of the same file.

Writes the largest synthetic cluster of ``engine.bench`` (5,000 nodes, 100,000
allocations, about 1,000 queues) twice, once with its ``preempt`` request and once with
a ``quota_change`` of the department ``engine.bench`` uses (a quarter of its vcore and
memory to go), then runs, alternating and ``--repeat`` times each, three processes:
``python -c 'json.load(...)'``, ``python -m engine FILE`` and an empty ``python -c
pass`` (the interpreter's start, subtracted from both).  It prints the medians and the
ratio of the engine's time to ``json.load``'s (the issue's target: <= 2x, that is the
time beyond ``json.load`` within 1x of it), with the load average.  ``--profile`` also
prints cProfile's top functions of one in-process ``engine.__main__.main`` per request.

    .venv/bin/python benchmarks/engine_cli.py [--size large] [--repeat 5] [--profile]

Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import json
import os
import pstats
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.bench import SIZES, _tree, generate  # noqa: E402
from engine.queues import build_snapshot  # noqa: E402
from engine.scenario import parse_scenario  # noqa: E402

TARGET = 2.0


def quota_change_doc(doc: dict[str, object], size_name: str) -> dict[str, object]:
    """*doc* with engine.bench's quota_change request instead of its preempt."""
    _, _, _, dept = _tree(random.Random(7), SIZES[size_name])
    usage = build_snapshot(parse_scenario(doc).cluster).usage(dept)
    new_max = {t: q * 3 // 4 for t, q in usage.items() if t in ("vcore", "memory")}
    return {**doc, "request": {"type": "quota_change", "queue": dept, "new_max": new_max}}


def _wall(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", default="large", choices=sorted(SIZES))
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    doc = generate(SIZES[args.size])
    docs = {"preempt": doc, "quota_change": quota_change_doc(doc, args.size)}
    workdir = Path(tempfile.mkdtemp(prefix="bench-engine-cli-"))
    py = sys.executable
    print(f"size {args.size}; load average before {os.getloadavg()}")
    for name, d in docs.items():
        path = workdir / f"{name}.json"
        path.write_text(json.dumps(d))
        load = [py, "-c", f"import json; json.load(open({str(path)!r}, 'rb'))"]
        cli = [py, "-m", "engine", str(path)]
        empty = [py, "-c", "pass"]
        times: dict[str, list[float]] = {"load": [], "cli": [], "start": []}
        for _ in range(args.repeat):
            times["start"].append(_wall(empty))
            times["load"].append(_wall(load))
            times["cli"].append(_wall(cli))
        start, load_s, cli_s = (statistics.median(times[k]) for k in ("start", "load", "cli"))
        ratio = (cli_s - start) / (load_s - start)
        print(
            f"{name:<13} {path.stat().st_size / 2**20:6.1f} MB  interpreter start "
            f"{start * 1000:5.0f} ms  json.load {(load_s - start) * 1000:6.0f} ms  "
            f"python -m engine {(cli_s - start) * 1000:6.0f} ms  ratio {ratio:.2f}x "
            f"(target <= {TARGET:g}x: {'met' if ratio <= TARGET else 'NOT met'}); "
            f"load {os.getloadavg()[0]:.1f}"
        )
        if args.profile:
            from engine.__main__ import main as engine_main

            profiler = cProfile.Profile()
            with contextlib.redirect_stdout(io.StringIO()):
                profiler.enable()
                engine_main([str(path)])
                profiler.disable()
            out = io.StringIO()
            stats = pstats.Stats(profiler, stream=out)
            stats.sort_stats("tottime").print_stats(20)
            stats.sort_stats("cumulative").print_stats(30)
            print(out.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())
