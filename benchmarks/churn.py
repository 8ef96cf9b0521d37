"""Benchmark: what a poll of a big cluster costs in time and database growth, by churn.

Imports the cluster of ``benchmarks/import_rest.py`` (default 5,000 nodes x 20 =
100,000 allocations in 10,000 applications), then polls of the same cluster with
1 %, 10 % and 100 % of its pods replaced (new allocation keys, on the same nodes and
in the same applications) and one unchanged poll, each stored as a new snapshot by
``import_snapshot`` (the parse handed over, as the poller does). For each it prints
the time to store, the rows each table gained and the database's growth in bytes
(the SQLite file, or ``pg_total_relation_size`` of the dashboard's tables on
PostgreSQL), beside the issue's target: a 1 % poll grows the database by under 5 %
of what the first import did. The poller itself stores nothing for an unchanged
cluster (same fingerprint); the unchanged poll here is what an upload of the same
answers costs.

    .venv/bin/python benchmarks/churn.py [--nodes 5000] [--per-node 20]
        [--database-url postgres://postgres@127.0.0.1:5432/NAME]   # flushed first!

Without ``--database-url`` a throw-away SQLite file is used. Figures are printed,
never asserted.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from import_rest import LIMIT, build_answers, replace_pods  # noqa: E402

#: The issue's target: a poll with 1 % of the pods replaced grows the database by
#: under this share of the first import's growth.
TARGET_SHARE = 0.05


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--per-node", type=int, default=20)
    parser.add_argument(
        "--database-url", help="a PostgreSQL database to use (all its dashboard data is flushed)"
    )
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="bench-churn-"))
    sqlite_file = workdir / "bench.sqlite3"
    os.environ["DATABASE_URL"] = args.database_url or f"sqlite:///{sqlite_file}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
    import django

    django.setup()
    from django.apps import apps as django_apps
    from django.core.management import call_command
    from django.db import connection

    from dashboard import services as platform
    from dashboard.importers.snapshot import parse_snapshot

    call_command("migrate", verbosity=0)
    if args.database_url:
        call_command("flush", interactive=False, verbosity=0)
    tables = [m for m in django_apps.get_app_config("dashboard").get_models() if m._meta.db_table]

    def rows() -> dict[str, int]:
        return {m.__name__: m.objects.count() for m in tables}

    def size() -> int:
        if connection.vendor == "postgresql":
            with connection.cursor() as cur:
                cur.execute(
                    "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                    "JOIN pg_namespace n ON n.oid = c.relnamespace "
                    "WHERE c.relkind = 'r' AND n.nspname = 'public'"
                )
                return int(cur.fetchone()[0])
        connection.close()  # everything written back to the file
        return sqlite_file.stat().st_size

    how = "pg_total_relation_size" if connection.vendor == "postgresql" else "SQLite file size"
    files = build_answers(args.nodes, args.per_node)
    total = args.nodes * args.per_node
    print(f"cluster: {args.nodes} nodes, {total} allocations; database {connection.vendor}")

    first_growth = 0
    polls = [("first import", None), ("1 % churn", 0.01), ("10 % churn", 0.10)]
    polls += [("100 % churn", 1.0), ("unchanged", 0.0)]
    print(f"{'poll':<14}{'store s':>9}{'growth MiB':>12}{'% of first':>11}  rows gained")
    current = files
    for generation, (label, share) in enumerate(polls):
        if share:
            current = replace_pods(current, share, generation)
        parsed = parse_snapshot(current, max_bytes=LIMIT)
        before_rows, before_size = rows(), size()
        t = time.perf_counter()
        platform.import_snapshot(
            current,
            partition="default",
            parsed=parsed,
            alert_warnings=False,
            max_bytes=(LIMIT, "SOURCES_MAX_ANSWER_BYTES"),
        )
        took = time.perf_counter() - t
        after_rows, after_size = rows(), size()
        growth = after_size - before_size
        if share is None:
            first_growth = growth
        gained = {k: after_rows[k] - before_rows[k] for k in after_rows}
        shown = ", ".join(f"{k} {v:+d}" for k, v in gained.items() if v)
        share_txt = f"{100 * growth / first_growth:10.1f}%" if first_growth else f"{'':>11}"
        target = ""
        if share == 0.01:
            ok = growth < TARGET_SHARE * first_growth
            target = f"   target < {100 * TARGET_SHARE:g} %: {'met' if ok else 'NOT met'}"
        print(f"{label:<14}{took:9.2f}{growth / 2**20:12.2f}{share_txt}  {shown}{target}")
    print(f"(growth: {how}; SQLite grows by whole pages, PostgreSQL counts dead row versions too)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
