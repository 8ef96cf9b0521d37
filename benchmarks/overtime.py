"""Benchmark: one queue's month over time (usage against limits, preemptions by day and node).

Builds, once, a month of polls of the cluster of ``benchmarks/import_rest.py``
(default 5,000 nodes x 20 = 100,000 allocations in 10,000 applications) in its own
cluster (``bench-overtime``) of the database:

- the first poll is a real import (``import_snapshot`` of the REST answers);
- then one snapshot per ``--interval`` seconds (default 60: the poller's default)
  for ``--days`` days (default 30: 43,200 snapshots), each with its queue rows
  (every queue's used follows a daily cycle around what the first poll had, so
  that some hours are above the max; guaranteed and max change twice in the
  month, as config changes do), written directly into the tables rather than
  through ``import_snapshot`` (a month of real imports would take days);
- ``--churn`` of the pods replaced per poll (default 0.05 %: 50 allocation spans
  closed and 50 opened per poll, 2.2 million spans in the month);
- ``--runs-per-day`` finished preemption runs a day (default 200: half predicted
  quota enforcements, half observed scheduler preemptions), 5 victims each on
  the nodes of one leaf queue.

A later run finds the month built and reuses it (``--rebuild`` builds it again).
Then it times, ``--repeat`` times each, for a leaf queue and for ``root``:
``queue_over_time`` for the month (the service the API and the page call), its
three parts, and ``GET /api/queue-over-time/`` through the test client (JSON
included), and prints the median and least times beside the target (under 1 s for
one queue's month), and the query plan of the queue rows' query.

    .venv/bin/python benchmarks/overtime.py --database-url postgres://postgres@127.0.0.1:5432/NAME
        [--days 30] [--interval 60] [--churn 0.0005] [--runs-per-day 200] [--repeat 5]
        [--rebuild]

Without ``--database-url`` a throw-away SQLite file is used. Only the benchmark's
own cluster is deleted (``--rebuild``) or written. Figures are printed, never
asserted.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from import_rest import LIMIT, build_answers  # noqa: E402

CLUSTER = "bench-overtime"
#: The issue's target for one queue's month.
TARGET_S = 1.0
#: The first poll's capture time: a fixed month, so that reruns reuse it.
T0 = datetime(2026, 10, 1, tzinfo=UTC)
VICTIMS_PER_RUN = 5
SNAPSHOT_COLUMNS = (
    *("partition", "source_kind", "source_detail", "captured_at", "imported_at"),
    *("scenario", "warnings", "checksum", "scheduler_timers"),
)
QUEUE_COLUMNS = (
    *("snapshot", "path", "name", "parent_path", "depth", "is_leaf", "guaranteed", "max"),
    *("usage", "preempting", "pending", "properties", "allocated", "status", "dynamic"),
)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--per-node", type=int, default=20)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--interval", type=int, default=60, help="seconds between polls")
    parser.add_argument("--churn", type=float, default=0.0005, help="share of pods per poll")
    parser.add_argument("--runs-per-day", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--rebuild", action="store_true", help="delete the month and build it")
    parser.add_argument("--database-url", help="a PostgreSQL database (its other data is kept)")
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="bench-overtime-"))
    os.environ["DATABASE_URL"] = args.database_url or f"sqlite:///{workdir / 'bench.sqlite3'}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
    os.environ.setdefault("ALLOWED_HOSTS", "testserver,localhost")
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    from dashboard import models

    call_command("migrate", verbosity=0)
    polls = args.days * 86400 // args.interval
    partition = models.Partition.objects.filter(cluster__name=CLUSTER).first()
    have = partition.snapshots.count() if partition is not None else 0
    if args.rebuild or have != polls:
        if partition is not None:
            print(f"deleting the benchmark's cluster ({have} snapshots)")
            delete_cluster()
        t = time.perf_counter()
        build(args, polls)
        print(f"built in {time.perf_counter() - t:.0f} s")
    else:
        print(f"reusing the month already built ({have} snapshots)")
    partition = models.Partition.objects.get(cluster__name=CLUSTER)
    print(
        f"database {connection.vendor}; cluster {CLUSTER}: "
        f"{partition.snapshots.count()} snapshots, "
        f"{models.SnapshotQueue.objects.filter(snapshot__partition=partition).count()} queue rows, "
        f"{models.AllocationSpan.objects.filter(partition=partition).count()} allocation spans, "
        f"{models.PreemptionRun.objects.filter(partition=partition).count()} runs"
    )
    measure(partition, args, polls)
    return 0


def delete_cluster() -> None:
    from django.db import connection

    from dashboard import models
    from dashboard.services.snapshots.spans import SPAN_MODELS

    partitions = list(models.Partition.objects.filter(cluster__name=CLUSTER))
    for model in SPAN_MODELS:  # no foreign key cascade from snapshots: by partition
        model.objects.filter(partition__in=partitions).delete()
    for p in partitions:
        models.RunVictim.objects.filter(run__partition=p).delete()
        models.PreemptionRun.objects.filter(partition=p).delete()
        models.SnapshotQueue.objects.filter(snapshot__partition=p).delete()
        models.ClusterSnapshot.objects.filter(partition=p).delete()
    models.Cluster.objects.filter(name=CLUSTER).delete()
    if connection.vendor == "postgresql":
        with connection.cursor() as cur:
            cur.execute("VACUUM ANALYZE")


def cycle(at: datetime) -> float:
    """The share of the first poll's usage in use at *at*: a daily cycle, 0.5 to 1.3."""
    hours = (at - T0).total_seconds() / 3600
    return 0.9 + 0.4 * math.sin(2 * math.pi * hours / 24)


def limits(at: datetime, base: dict[str, int]) -> tuple[dict[str, int], dict[str, int]]:
    """Guaranteed and max in force at *at*: changed on day 10 and day 20."""
    day = (at - T0).days
    g, m = (0.6, 1.1) if day < 10 else (0.8, 1.2) if day < 20 else (0.5, 1.0)
    return {t: int(q * g) for t, q in base.items()}, {t: int(q * m) for t, q in base.items()}


def build(args: argparse.Namespace, polls: int) -> None:
    from django.db import connection, transaction

    from dashboard import models, services
    from dashboard.importers.snapshot import parse_snapshot

    files = build_answers(args.nodes, args.per_node)
    t = time.perf_counter()
    first = services.import_snapshot(
        files,
        cluster=CLUSTER,
        parsed=parse_snapshot(files, max_bytes=LIMIT),
        alert_warnings=False,
        max_bytes=(LIMIT, "SOURCES_MAX_ANSWER_BYTES"),
        captured_at=T0,
    )
    print(f"first poll imported in {time.perf_counter() - t:.0f} s (snapshot {first.pk})")
    partition = first.partition
    queues = list(
        models.SnapshotQueue.objects.filter(snapshot=first).values(
            "path", "name", "parent_path", "depth", "is_leaf", "usage", "properties"
        )
    )
    times = [T0 + timedelta(seconds=i * args.interval) for i in range(1, polls)]
    t = time.perf_counter()
    with transaction.atomic():
        services.insert_rows(
            models.ClusterSnapshot,
            SNAPSHOT_COLUMNS,
            (
                (partition.pk, "rest", "benchmark", at, at, first.scenario, [], f"bench{i}", {})
                for i, at in enumerate(times)
            ),
        )
    ids = list(
        models.ClusterSnapshot.objects.filter(partition=partition)
        .order_by("captured_at", "id")
        .values_list("id", "captured_at")
    )
    print(f"{len(ids)} snapshots written in {time.perf_counter() - t:.0f} s")

    def queue_rows() -> Iterator[tuple[object, ...]]:
        for snapshot_id, at in ids[1:]:
            share = cycle(at)
            for q in queues:
                base = q["usage"] or {}
                used = {rt: int(v * share) for rt, v in base.items()}
                guaranteed, maximum = limits(at, base)
                yield (
                    snapshot_id,
                    q["path"],
                    q["name"],
                    q["parent_path"],
                    q["depth"],
                    q["is_leaf"],
                    guaranteed,
                    maximum,
                    used,
                    {},
                    {},
                    q["properties"],
                    used,
                    "Active",
                    False,
                )

    t = time.perf_counter()
    with transaction.atomic():
        services.insert_rows(
            models.SnapshotQueue,
            QUEUE_COLUMNS,
            queue_rows(),
        )
    print(f"queue rows written in {time.perf_counter() - t:.0f} s")
    t = time.perf_counter()
    spans = churn_spans(partition, ids, args.churn)
    print(f"{spans} allocation spans written in {time.perf_counter() - t:.0f} s")
    t = time.perf_counter()
    runs = preemption_runs(partition, ids, args.runs_per_day)
    print(f"{runs} runs written in {time.perf_counter() - t:.0f} s")
    if connection.vendor == "postgresql":
        with connection.cursor() as cur:
            cur.execute("VACUUM ANALYZE")


def churn_spans(partition: Any, ids: list[tuple[int, datetime]], churn: float) -> int:
    """Replace the first import's open allocation spans by a month of them, *churn* of the
    pods replaced per poll (new keys, same resources, node and queue)."""
    from django.db import transaction

    from dashboard import models, services
    from dashboard.services.snapshots.spans import ALLOCATION_FIELDS

    columns = ("partition", "first_seen", "gone_in", "digest", *ALLOCATION_FIELDS)
    opening = list(
        models.AllocationSpan.objects.filter(partition=partition)
        .order_by("key")
        .values_list(*ALLOCATION_FIELDS)
    )
    per_poll = round(len(opening) * churn)
    rng = random.Random(27)
    written = 0

    def rows() -> Iterator[tuple[object, ...]]:
        nonlocal written
        current = [(ids[0][0], row) for row in opening]
        for generation, (snapshot_id, _) in enumerate(ids[1:], start=1):
            for slot in rng.sample(range(len(current)), per_poll):
                since, row = current[slot]
                yield (partition.pk, since, snapshot_id, f"{slot:08x}{generation:08x}", *row)
                key = f"{row[0].split('-g')[0]}-g{generation}"
                current[slot] = (snapshot_id, (key, *row[1:]))
                written += 1
        for since, row in current:
            yield (partition.pk, since, None, f"{since:016x}"[-16:], *row)
            written += 1

    with transaction.atomic():
        models.AllocationSpan.objects.filter(partition=partition).delete()
        services.insert_rows(models.AllocationSpan, columns, rows())
    return written


def preemption_runs(partition: Any, ids: list[tuple[int, datetime]], per_day: int) -> int:
    """*per_day* finished runs a day, predicted and observed in turn, 5 victims each."""
    from django.db import transaction

    from dashboard import models

    Run = models.PreemptionRun
    leaves = list(
        models.SnapshotQueue.objects.filter(snapshot_id=ids[0][0], is_leaf=True).values_list(
            "path", flat=True
        )
    )
    nodes = [f"worker-{i:05d}" for i in range(5000)]
    rng = random.Random(5)
    start, end = ids[0][1], ids[-1][1]
    count = int((end - start).total_seconds() / 86400 * per_day)
    step = (end - start) / max(count, 1)
    runs = []
    for i in range(count):
        at = start + step * i
        observed = i % 2 == 1
        runs.append(
            Run(
                partition=partition,
                kind=Run.Kind.QUOTA if observed else Run.Kind.QUOTA_ENFORCEMENT,
                trigger=Run.Trigger.OBSERVED if observed else Run.Trigger.TIMER,
                status=Run.Status.DONE,
                queue=rng.choice(leaves),
                queued_at=at,
                started_at=at,
                finished_at=at,
                outcome="done",
            )
        )
    with transaction.atomic():
        made = Run.objects.bulk_create(runs, batch_size=2000)
        models.RunVictim.objects.bulk_create(
            (
                models.RunVictim(
                    run=run,
                    position=v,
                    allocation_key=f"victim-{run.pk}-{v}",
                    queue=run.queue,
                    leaf=run.queue,
                    node=rng.choice(nodes),
                    resources={"vcore": 1000, "memory": 2**31, "pods": 1},
                )
                for run in made
                for v in range(VICTIMS_PER_RUN)
            ),
            batch_size=5000,
        )
    return len(made)


def timed(label: str, fn: Callable[[], object], repeat: int, target: float | None = None) -> None:
    times, cpu = [], []
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        fn()
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    median = statistics.median(times)
    verdict = ""
    if target is not None:
        verdict = f"   target < {target:g} s: {'met' if median < target else 'NOT met'}"
    print(
        f"  {label:<34} median {median * 1000:7.0f} ms   min {min(times) * 1000:7.0f} ms"
        f"   (CPU median {statistics.median(cpu) * 1000:.0f} ms){verdict}"
    )


def measure(partition: Any, args: argparse.Namespace, polls: int) -> None:
    from django.contrib.auth import get_user_model
    from django.db import connection
    from rest_framework.test import APIClient

    from dashboard import models
    from dashboard.services.history import overtime, overtime_preemptions, overtime_report

    last = partition.snapshots.order_by("-captured_at").values_list("captured_at", flat=True)[0]
    now = last + timedelta(seconds=args.interval)
    window = overtime.Window(now - timedelta(days=args.days), now)
    leaf = (
        models.SnapshotQueue.objects.filter(snapshot=partition.snapshots.order_by("id").first())
        .filter(is_leaf=True)
        .order_by("path")
        .values_list("path", flat=True)[0]
    )
    from django.contrib.auth.models import Permission

    # a reader of every queue, as the dashboard's viewers are (not a tenant)
    user, _ = get_user_model().objects.get_or_create(username="bench-overtime")
    user.user_permissions.add(
        Permission.objects.get(codename="view_every_queue", content_type__app_label="dashboard")
    )
    client = APIClient()
    client.force_authenticate(user)
    print(f"one queue's month: [{window.start:%Y-%m-%d %H:%M}, {window.end:%Y-%m-%d %H:%M}) UTC,")
    print(f"{args.repeat} runs each; load average {os.getloadavg()[0]:.1f} at start")
    for queue in (leaf, "root"):
        print(f"queue {queue}:")
        report = overtime_report.queue_over_time(
            queue=queue,
            partition=partition.name,
            cluster=CLUSTER,
            start=window.start,
            end=window.end,
            now=now,
        )
        usage = report.usage
        victims = sum(d.predicted.victims + d.observed.victims for d in report.days)
        print(
            f"  ({usage.snapshots} spans, {len(usage.series)} series points, resampled every "
            f"{usage.resampled_seconds or 0:.0f} s; above max "
            f"{usage.above_max_any_seconds / 3600:.1f} h; {victims} victims in the month, "
            f"{len(report.nodes)} nodes in the last 48 h)"
        )
        timed(
            "queue_over_time (all)",
            lambda q=queue: overtime_report.queue_over_time(
                queue=q,
                partition=partition.name,
                cluster=CLUSTER,
                start=window.start,
                end=window.end,
                now=now,
            ),
            args.repeat,
            TARGET_S,
        )
        timed(
            "  usage (queue rows + arithmetic)",
            lambda q=queue: overtime.queue_usage_over_time(partition, q, window, now),
            args.repeat,
        )
        timed(
            "  preemptions per day",
            lambda q=queue: overtime_preemptions.preemptions_per_day(partition, q, window),
            args.repeat,
        )
        timed(
            "  preemptions per node (48 h)",
            lambda q=queue: overtime_preemptions.preemptions_per_node(partition, q, now),
            args.repeat,
        )
        query = (
            f"/api/queue-over-time/?cluster={CLUSTER}&partition={partition.name}&queue={queue}"
            f"&start={window.start.isoformat().replace('+00:00', 'Z')}"
            f"&end={window.end.isoformat().replace('+00:00', 'Z')}"
        )

        def get(url: str = query) -> None:
            response = client.get(url, secure=True)
            assert response.status_code == 200, response.content[:300]

        timed("GET /api/queue-over-time/ (JSON)", get, args.repeat, TARGET_S)
    if connection.vendor == "postgresql":
        from django.test.utils import CaptureQueriesContext

        with CaptureQueriesContext(connection) as captured:
            overtime.queue_spans(partition, leaf, window)
        sql = next(q["sql"] for q in captured.captured_queries if "LEFT OUTER JOIN" in q["sql"])
        print(f"query plan of the month's queue rows of {leaf} (EXPLAIN ANALYZE):")
        with connection.cursor() as cur:
            cur.execute("EXPLAIN ANALYZE " + sql)
            for (line,) in cur.fetchall():
                print("  " + line)


if __name__ == "__main__":
    sys.exit(main())
