"""Benchmark: re-importing a big queue config into a partition that has history.

For each N (default 500, 1000, 2000 queues: a root, sqrt(N) parents, leaves under
them), in a throw-away database, it builds a partition with history:

1. config v1 with N queues (every leaf with a max, the parents with a delay);
2. a snapshot of the cluster with the same queues (usage in every leaf);
3. config v2 lowering the max of every tenth leaf (quota changes scheduled);

then times the import of config v3 - the same queues, every tenth leaf's max
changed again and a few queues added - which is what an administrator's re-upload
of a ConfigMap does.  It prints the time and the number of SQL queries of that
import, and the ratio to the smallest N.

    .venv/bin/python benchmarks/config_reimport.py [--sizes 500 1000 2000] [--repeat 3]
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/NAME .venv/bin/python \\
        benchmarks/config_reimport.py --database-url-from-env

SQLite by default (a file in a temporary directory); ``--database-url-from-env`` uses
``DATABASE_URL`` instead (the database is created, migrated and dropped by a
``test_`` prefix, as pytest-django does).  Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import json
import os
import pstats
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the generated configs are shared with the tests
from queue_configs import T0, config_yaml, scenario  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 1000, 2000])
    parser.add_argument("--repeat", type=int, default=3, help="timed imports per size")
    parser.add_argument("--database-url-from-env", action="store_true")
    parser.add_argument(
        "--profile", action="store_true", help="print cProfile's top functions of the last import"
    )
    parser.add_argument(
        "--phases",
        action="store_true",
        help="print the last import's time (under cProfile) and queries per phase: each "
        "function the import's two service functions call",
    )
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="config-reimport-"))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
    os.environ["DASHBOARD_VAR_DIR"] = str(workdir)
    # the sizes measured may exceed the default limit of queues (5,000)
    os.environ.setdefault("DASHBOARD_MAX_SNAPSHOT_QUEUES", str(max(5000, 2 * max(args.sizes))))
    if not args.database_url_from_env:
        os.environ["DATABASE_URL"] = f"sqlite:///{workdir / 'bench.sqlite3'}"
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.db import connection
    from django.test.utils import CaptureQueriesContext, setup_databases, teardown_databases

    from dashboard import models, services

    old = setup_databases(verbosity=0, interactive=False)
    print(f"database: {connection.vendor} {connection.settings_dict['NAME']}")
    results: dict[int, float] = {}
    cpu_results: dict[int, float] = {}
    try:
        for n in args.sizes:
            times: list[float] = []
            cpus: list[float] = []  # this process's CPU (not the database server's)
            queries = 0
            changes = 0
            for _attempt in range(args.repeat):
                # a fresh partition with history for every attempt
                for model in (models.Alert, models.QuotaChange, models.ConfigVersion):
                    model.objects.all().delete()
                models.ClusterSnapshot.objects.all().delete()
                models.Partition.objects.all().delete()
                services.import_config(config_yaml(n, 0).encode(), now=T0)
                services.import_snapshot(
                    {"scenario.json": json.dumps(scenario(n)).encode()},
                    now=T0 + timedelta(minutes=1),
                )
                services.import_config(config_yaml(n, 1).encode(), now=T0 + timedelta(minutes=2))
                text = config_yaml(n, 2, extra=5).encode()
                profiler = cProfile.Profile() if args.profile or args.phases else None
                per_phase: Counter[str] = Counter()
                connection.queries_log.clear()  # the log keeps 9000 queries at most
                with (
                    CaptureQueriesContext(connection) as captured,
                    connection.execute_wrapper(_count_by_phase(per_phase))
                    if args.phases
                    else contextlib.nullcontext(),
                ):
                    start = time.perf_counter()
                    start_cpu = time.process_time()
                    if profiler is not None:
                        profiler.enable()
                    result = services.import_config(text, now=T0 + timedelta(minutes=3))
                    elapsed = time.perf_counter() - start
                    cpu = time.process_time() - start_cpu
                    if profiler is not None:
                        profiler.disable()
                times.append(elapsed)
                cpus.append(cpu)
                queries = len(captured)
                changes = len(result.changes)
                queue_count = result.versions[0].queues.count()
            if profiler is not None and args.profile:
                stats = pstats.Stats(profiler).sort_stats("cumulative")
                stats.print_stats(25)
            if profiler is not None and args.phases:
                _print_phases(pstats.Stats(profiler), per_phase)
            best = min(times)
            results[n] = best
            cpu_results[n] = min(cpus)
            print(
                f"N={n:>5} queues={queue_count:>5}: re-import best {best:.2f} s, median "
                f"{statistics.median(times):.2f} s over {len(times)} (CPU of this process: "
                f"best {min(cpus):.2f} s); {queries} queries; {changes} quota changes scheduled"
            )
    finally:
        teardown_databases(old, verbosity=0)
    smallest = min(results)
    for n, t in sorted(results.items()):
        print(
            f"N={n:>5}: {t / results[smallest]:.2f}x the N={smallest} time "
            f"({cpu_results[n] / cpu_results[smallest]:.2f}x its CPU)"
        )
    return 0


#: the service functions whose callees are the import's phases
_PHASE_OF = {"import_config", "store_config_import"}


def _phase(frame: FrameType | None) -> str:
    """The function (a phase) that one of :data:`_PHASE_OF` called, up *frame*'s stack."""
    while frame is not None:
        caller = frame.f_back
        if caller is not None and caller.f_code.co_name in _PHASE_OF:
            return frame.f_code.co_name
        if frame.f_code.co_name in _PHASE_OF:
            return f"{frame.f_code.co_name} (itself)"
        frame = caller
    return "(outside)"


def _count_by_phase(counts: Counter[str]) -> Callable[..., Any]:
    def wrapper(execute: Callable[..., Any], sql: str, *args: Any) -> Any:
        counts[_phase(sys._getframe(1))] += 1
        return execute(sql, *args)

    return wrapper


def _print_phases(stats: pstats.Stats, queries: Counter[str]) -> None:
    """Cumulative time (under the profiler) and queries of each function the import's
    service functions call, the costliest first."""
    rows: dict[str, float] = {}
    table: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]  # pstats keeps it untyped
    for (_file, _line, name), (_cc, _nc, _tt, _ct, callers) in table.items():
        for (_cfile, _cline, caller), timing in callers.items():
            if caller in _PHASE_OF:
                rows[name] = rows.get(name, 0.0) + timing[3]
    print(f"{'phase (function called by the import)':<44} {'s (profiled)':>12} {'queries':>8}")
    for name in sorted(set(rows) | set(queries), key=lambda n: -rows.get(n, 0.0)):
        print(f"{name:<44} {rows.get(name, 0.0):>12.3f} {queries.get(name, 0):>8}")


if __name__ == "__main__":
    raise SystemExit(main())
