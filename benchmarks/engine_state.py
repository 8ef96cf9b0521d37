"""Benchmark: a stored snapshot's engine state, built from its rows once, then reused.

Stores a synthetic snapshot (the tree-page benchmark's cluster) in a throw-away
SQLite database through the import service, then prints how long the services
take for the first call on the snapshot in a process (the engine state is
built from the rows) and for later calls (the state is reused): the
preemptable view of every queue, the victim reasons of one queue, and a
what-if quota run.

    .venv/bin/python benchmarks/engine_state.py [--queues 1000] [--nodes 5000] [--repeat 5]

Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def timed(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000.0


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--queues", type=int, default=1000)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=5, help="reused calls to time")
    args = parser.parse_args()

    var = Path(tempfile.mkdtemp(prefix="engine-state-bench-"))
    os.environ.update(
        {
            "DASHBOARD_VAR_DIR": str(var),
            "DATABASE_URL": f"sqlite:///{var / 'bench.sqlite3'}",
            "DJANGO_SETTINGS_MODULE": "dashboard.settings",
        }
    )
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import django

    django.setup()
    from django.core.management import call_command
    from tree_page import build_scenario

    from dashboard import models, services
    from dashboard.services import engine_state_cache

    call_command("migrate", verbosity=0)
    snapshot = services.store_snapshot(
        partition_name="default",
        source_kind=models.ClusterSnapshot.Source.SCENARIO,
        captured_at=datetime(2026, 9, 1, 10, tzinfo=UTC),
        scenario=build_scenario(args.queues, args.nodes),
    )
    leaf = snapshot.queues.filter(is_leaf=True).exclude(usage={}).order_by("path").first()
    assert leaf is not None
    print(
        f"snapshot: {snapshot.queues.count()} queues, "
        f"{services.snapshot_nodes(snapshot).count()} nodes, "
        f"{services.snapshot_allocations(snapshot).count()} allocations; leaf {leaf.path}"
    )

    def run_whatif() -> None:
        run = services.create_run(
            kind=models.PreemptionRun.Kind.WHATIF_QUOTA,
            snapshot=snapshot,
            request={"queue": leaf.path, "new_max": {"vcore": 0}},
            enqueue=False,
        )
        services.execute_run(run.pk)

    calls: dict[str, Callable[[], object]] = {
        "preemptable of every queue": lambda: services.queue_preemptable(snapshot),
        "victim reasons of one leaf": lambda: services.explain_victims(snapshot, leaf.path),
        "what-if quota run": run_whatif,
    }
    for name, call in calls.items():
        engine_state_cache.forget_engine_states()  # as in a fresh process: nothing built yet
        first = timed(call)
        reused = [timed(call) for _ in range(args.repeat)]
        print(
            f"{name:28s} first call {first:8.1f} ms   reused state: median "
            f"{statistics.median(reused):8.1f} ms (of {args.repeat})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
