"""Benchmark: what a Prometheus scrape of ``/metrics`` costs at 1,000 queues (or more),
with a long history of observed preemptions linked to predictions.

Stores a 1,000-queue snapshot (the queue tree of ``benchmarks/tree_page.py``), a
running quota timer on every leaf queue, finished runs of every kind (what-if,
predicted quota preemptions, observed quota and inter-queue preemptions linked to
predictions, with victims) and cluster sources with poll totals, then scrapes
``GET /metrics`` through Django's full request path (middleware, token check) and
prints the time per scrape (median and slowest of the repeats), the answer's size and
its number of samples, with the CPU time the scraping process spent (the database
server's is not in it).  Every figure is read from the database at each scrape
(dashboard/metrics/collector.py; the run history's counts from the tallies the
database keeps, dashboard/metrics/counts.py), so this is the cost on each of
Prometheus' scrape intervals.

    .venv/bin/python benchmarks/metrics_endpoint.py [--queues 1000] [--runs 5000]
        [--linked 0] [--repeats 20] [--profile]
        [--database-url postgres://postgres@127.0.0.1:5432/NAME]  # flushed!

``--linked N`` adds N predicted quota preemptions and N observed ones linked to them
(three victims each, one in seven differing), stored in bulk: the history a year of
polling leaves.  ``--tallies-off`` stores it all with the tally triggers (migration
0034) disabled and recounts the tallies afterwards: against a run without it, what the
triggers add to the writes.  ``--profile`` prints where one scrape spends its time (cProfile).

Without ``--database-url`` a throw-away SQLite file is used.  Figures are printed,
never asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from tree_page import build_scenario  # noqa: E402

T0 = datetime(2026, 9, 1, 10, tzinfo=UTC)
TOKEN = "benchmark-token"


def populate(queues: int, runs: int, sources: int) -> dict[str, int]:
    from dashboard import models, services
    from dashboard.metrics.polls import record_poll
    from dashboard.sources.models import ClusterSource

    scenario = build_scenario(queues, nodes=500)
    snapshot = services.store_snapshot(
        partition_name="default",
        source_kind=models.ClusterSnapshot.Source.SCENARIO,
        captured_at=T0,
        scenario=scenario,
    )
    partition = snapshot.partition
    leaves = list(snapshot.queues.filter(is_leaf=True).values_list("path", flat=True))
    models.QuotaChange.objects.bulk_create(
        models.QuotaChange(
            partition=partition,
            queue_path=path,
            state=models.QuotaChange.State.WAITING,
            changed_at=T0,
            deadline=T0 + timedelta(seconds=300 + i),
        )
        for i, path in enumerate(leaves)
    )
    Run = models.PreemptionRun
    kinds = [
        (Run.Kind.WHATIF_PREEMPT, Run.Trigger.API),
        (Run.Kind.WHATIF_QUOTA, Run.Trigger.API),
        (Run.Kind.QUOTA_ENFORCEMENT, Run.Trigger.TIMER),
        (Run.Kind.QUOTA, Run.Trigger.OBSERVED),
        (Run.Kind.PREEMPT, Run.Trigger.OBSERVED),
    ]
    rows = [
        Run(
            partition=partition,
            snapshot=snapshot,
            kind=kinds[i % len(kinds)][0],
            trigger=kinds[i % len(kinds)][1],
            status=Run.Status.DONE,
            queue=leaves[i % len(leaves)],
            queued_at=T0 + timedelta(seconds=i),
            finished_at=T0 + timedelta(seconds=i + (i % 40) / 10),
        )
        for i in range(runs)
    ]
    Run.objects.bulk_create(rows, batch_size=1000)
    stored = list(Run.objects.order_by("id").values_list("id", "kind"))
    predicted = [pk for pk, kind in stored if kind == Run.Kind.QUOTA_ENFORCEMENT]
    victims = []
    for n, (pk, kind) in enumerate(stored):
        if kind in (Run.Kind.QUOTA_ENFORCEMENT, Run.Kind.QUOTA, Run.Kind.PREEMPT):
            victims += [
                models.RunVictim(run_id=pk, position=j, allocation_key=f"a-{n % 97}-{j}")
                for j in range(3)
            ]
    models.RunVictim.objects.bulk_create(victims, batch_size=2000)
    observed = [pk for pk, kind in stored if kind == Run.Kind.QUOTA]
    for pk, link in zip(observed, predicted, strict=False):
        Run.objects.filter(pk=pk).update(predicted_id=link)
    for s in range(sources):
        cluster = models.Cluster.objects.get_or_create(name=f"cluster-{s}")[0]
        source = ClusterSource.objects.create(
            name=f"source-{s}", base_url=f"http://yunikorn-{s}.example.test:9080", cluster=cluster
        )
        for k in range(10):
            record_poll(source.pk, 0.1 * k, failed=k % 4 == 0)
    return {"leaves": len(leaves), "runs": len(stored), "victims": len(victims)}


def add_linked_history(linked: int, batch: int = 5000) -> int:
    """*linked* predicted quota preemptions and as many observed ones linked to them,
    three victims each (one observed run in seven took a different third victim)."""
    from dashboard import models

    Run = models.PreemptionRun
    snapshot = models.ClusterSnapshot.objects.order_by("id").first()
    assert snapshot is not None
    leaves = list(snapshot.queues.filter(is_leaf=True).values_list("path", flat=True))
    victims = 0
    for start in range(0, linked, batch):
        size = min(batch, linked - start)

        def run(i: int, kind: str, trigger: str, predicted: int | None = None) -> Any:
            return Run(
                partition=snapshot.partition,
                snapshot=snapshot,
                kind=kind,
                trigger=trigger,
                status=Run.Status.DONE,
                queue=leaves[i % len(leaves)],
                queued_at=T0 + timedelta(seconds=i),
                finished_at=T0 + timedelta(seconds=i + (i % 40) / 10),
                predicted_id=predicted,
            )

        made = Run.objects.bulk_create(
            [
                run(i, Run.Kind.QUOTA_ENFORCEMENT, Run.Trigger.TIMER)
                for i in range(start, start + size)
            ]
        )
        seen = Run.objects.bulk_create(
            [
                run(i, Run.Kind.QUOTA, Run.Trigger.OBSERVED, predicted.pk)
                for i, predicted in zip(range(start, start + size), made, strict=True)
            ]
        )
        rows = []
        for i, (predicted, observed) in enumerate(zip(made, seen, strict=True), start):
            for j in range(3):
                rows.append(
                    models.RunVictim(run_id=predicted.pk, position=j, allocation_key=f"h-{i}-{j}")
                )
                other = f"h-{i}-x" if j == 2 and i % 7 == 0 else f"h-{i}-{j}"
                rows.append(models.RunVictim(run_id=observed.pk, position=j, allocation_key=other))
        models.RunVictim.objects.bulk_create(rows, batch_size=batch)
        victims += len(rows)
    return victims


def tally_triggers(state: str) -> None:
    """ENABLE or DISABLE migration 0034's triggers on runs and victims."""
    from django.db import connection

    with connection.cursor() as cursor:
        for table in ("dashboard_preemptionrun", "dashboard_runvictim"):
            for op in ("insert", "update", "delete", "truncate"):
                cursor.execute(f"ALTER TABLE {table} {state} TRIGGER dashboard_tally_{op}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queues", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5000)
    parser.add_argument("--sources", type=int, default=5)
    parser.add_argument("--linked", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--profile", action="store_true", help="print one scrape's profile")
    parser.add_argument(
        "--reuse", action="store_true", help="scrape the data a previous run left (no flush)"
    )
    parser.add_argument(
        "--tallies-off",
        action="store_true",
        help="store the data with the tally triggers disabled (PostgreSQL), then recount: "
        "what the triggers add to the writes",
    )
    parser.add_argument(
        "--database-url", help="a PostgreSQL database to use (all its dashboard data is flushed)"
    )
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="metrics-bench-"))
    os.environ["DATABASE_URL"] = args.database_url or f"sqlite:///{tmp / 'bench.sqlite3'}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
    os.environ["DASHBOARD_VAR_DIR"] = str(tmp)
    os.environ["METRICS_TOKEN"] = TOKEN
    os.environ["SECURE_SSL_REDIRECT"] = "false"
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client

    call_command("migrate", verbosity=0)
    print("machine load average before: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    if args.reuse:
        from dashboard import models

        print(
            f"reusing {models.PreemptionRun.objects.count()} runs, "
            f"{models.SnapshotQueue.objects.count()} queues on {connection.vendor}"
        )
        args.linked = 0
        made = {}
    else:
        if args.database_url:
            call_command("flush", interactive=False, verbosity=0)
        if args.tallies_off:
            tally_triggers("DISABLE")
        t0 = time.perf_counter()
        made = populate(args.queues, args.runs, args.sources)
    if made:
        print(
            f"stored in {time.perf_counter() - t0:.1f} s on {connection.vendor}: {args.queues} "
            f"queues, {made['leaves']} running timers, {made['runs']} runs, "
            f"{made['victims']} victims, {args.sources} sources"
        )
    if args.linked:
        t0 = time.perf_counter()
        history = add_linked_history(args.linked)
        print(
            f"history stored in {time.perf_counter() - t0:.1f} s: {args.linked} observed runs "
            f"linked to as many predictions, {history} victims"
        )
    if args.tallies_off:
        tally_triggers("ENABLE")
        t0 = time.perf_counter()
        from dashboard.metrics.counts import recount

        recount()
        print(f"tallies recounted from the history in {time.perf_counter() - t0:.1f} s")
    if args.linked and connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    client = Client(HTTP_HOST="localhost")
    times = []
    cpu = []
    body = b""
    for i in range(args.repeats + 1):
        start, start_cpu = time.perf_counter(), time.process_time()
        answer = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
        took, took_cpu = time.perf_counter() - start, time.process_time() - start_cpu
        assert answer.status_code == 200, answer.status_code
        body = answer.content
        if i:  # the first scrape also loads prometheus_client and the URL conf
            times.append(took)
            cpu.append(took_cpu)
    if args.profile:
        import cProfile
        import pstats

        profile = cProfile.Profile()
        profile.enable()
        client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
        profile.disable()
        pstats.Stats(profile).sort_stats("cumulative").print_stats(25)
    samples = sum(1 for line in body.splitlines() if line and not line.startswith(b"#"))
    print(
        f"GET /metrics x{len(times)}: median {statistics.median(times) * 1000:.0f} ms, "
        f"slowest {max(times) * 1000:.0f} ms (this process's CPU: median "
        f"{statistics.median(cpu) * 1000:.0f} ms, most {max(cpu) * 1000:.0f} ms); "
        f"answer {len(body) / 1e6:.2f} MB, {samples} samples"
    )
    print("machine load average after: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
