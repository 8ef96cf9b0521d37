"""Per-endpoint server cost of the load test's reads: SQL queries and time, in-process.

    DATABASE_URL=postgres://... .venv/bin/python loadtest/profile.py [--repeat 20]

Runs against the database in DATABASE_URL (e.g. one kept by ``run.py --keep-db``,
or any database with ``manage.py load_demo`` loaded) with Django's test client, so
no network or other process is involved: what it prints is the view's own cost.
For each endpoint group of the load test it prints the number of SQL queries
(``CaptureQueriesContext``), the time they took, and the median total time.
Repeated calls are answered from the per-process caches (``dashboard.pages.memo``:
per snapshot, per data version); ``--cold`` empties them before each call.

    .venv/bin/python loadtest/profile.py --partition large [--cold]

reads the newest snapshot of partition ``large`` (as ``run.py --large --keep-db``
leaves it) instead of the newest snapshot of all.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--partition", help="read this partition's newest snapshot")
    parser.add_argument("--show-sql", action="store_true", help="print the queries of each")
    parser.add_argument(
        "--cold",
        action="store_true",
        help="empty the per-process caches before each call (dashboard.pages.memo): the "
        "cost of a read nothing was kept for (a queue not read before, a list after a write)",
    )
    args = parser.parse_args(argv)

    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from dashboard import models, services
    from dashboard.pages import memo
    from loadtest.run import Target, read_paths

    settings.ALLOWED_HOSTS = ["*"]
    settings.SECURE_SSL_REDIRECT = False
    user = get_user_model().objects.filter(is_staff=True).first()
    if user is None:
        parser.error("no staff user: run manage.py load_demo on this database first")
    snapshots = models.ClusterSnapshot.objects.order_by("-captured_at", "-id")
    if args.partition:
        snapshots = snapshots.filter(partition__name=args.partition)
    snapshot = snapshots.first()
    assert snapshot is not None, "no snapshot: run manage.py load_demo first"
    queues = list(snapshot.queues.order_by("path").values_list("path", flat=True))
    leaves = list(snapshot.queues.filter(is_leaf=True).values_list("path", flat=True))
    target = Target(snapshot.partition.name, snapshot.pk, queues, leaves)
    client = Client()
    client.force_login(user)

    import random

    paths = read_paths(target, random.Random(0))
    # the busiest queue for the per-queue endpoints
    busiest = (
        services.snapshot_allocations(snapshot)
        .values_list("queue", flat=True)
        .order_by("queue")
        .first()
    )
    print(f"snapshot {snapshot.pk}: {len(queues)} queues, busiest leaf {busiest}")
    print(f"{'group':<14}{'path':<62}{'queries':>8}{'sql ms':>8}{'median ms':>10}")
    for group, path in paths:
        if busiest and "queue=" in path:
            path = path.split("queue=")[0] + f"queue={busiest}"
        client.get(path)  # warm up
        if args.cold:
            memo.clear_all()
        with CaptureQueriesContext(connection) as captured:
            response = client.get(path)
        assert response.status_code == 200, (path, response.status_code)
        # read now: every request (request_started) empties the connection's query log
        queries = list(captured.captured_queries)
        sql_ms = sum(float(q["time"]) for q in queries) * 1000
        times = []
        for _ in range(args.repeat):
            if args.cold:
                memo.clear_all()
            started = time.perf_counter()
            client.get(path)
            times.append((time.perf_counter() - started) * 1000)
        print(
            f"{group:<14}{path[:61]:<62}{len(queries):>8}{sql_ms:>8.1f}"
            f"{statistics.median(times):>10.1f}"
        )
        if args.show_sql:
            for q in queries:
                print(f"    {q['time']}s {q['sql'][:200]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
