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
import cProfile
import json
import os
import pstats
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

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
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="config-reimport-"))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
    os.environ["DASHBOARD_VAR_DIR"] = str(workdir)
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
    try:
        for n in args.sizes:
            times: list[float] = []
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
                profiler = cProfile.Profile() if args.profile else None
                connection.queries_log.clear()  # the log keeps 9000 queries at most
                with CaptureQueriesContext(connection) as captured:
                    start = time.perf_counter()
                    if profiler is not None:
                        profiler.enable()
                    result = services.import_config(text, now=T0 + timedelta(minutes=3))
                    elapsed = time.perf_counter() - start
                    if profiler is not None:
                        profiler.disable()
                times.append(elapsed)
                queries = captured.final_queries - captured.initial_queries
                changes = len(result.changes)
                queue_count = result.versions[0].queues.count()
            if profiler is not None:
                stats = pstats.Stats(profiler).sort_stats("cumulative")
                stats.print_stats(25)
                stats.print_callers("query_utils.py:252")
            best = min(times)
            results[n] = best
            print(
                f"N={n:>5} queues={queue_count:>5}: re-import best {best:.2f} s, median "
                f"{statistics.median(times):.2f} s over {len(times)}; {queries} queries; "
                f"{changes} quota changes scheduled"
            )
    finally:
        teardown_databases(old, verbosity=0)
    smallest = min(results)
    for n, t in sorted(results.items()):
        print(f"N={n:>5}: {t / results[smallest]:.2f}x the N={smallest} time")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
