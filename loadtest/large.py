"""Store the benchmarks' 1,000-queue / 100,000-allocation cluster as partition ``large``.

Run by ``loadtest/run.py --large`` in the stack's environment (its database), before
the web server starts:

    python -m loadtest.large [--queues 1000] [--nodes 5000] [--per-node 20]

Prints the stored snapshot's id and how long storing it took.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PARTITION = "large"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queues", type=int, default=1000)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--per-node", type=int, default=20)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
    django.setup()
    # the benchmarks' generator (benchmarks/ is a folder of scripts, not a package)
    build_scenario = importlib.import_module("tree_page").build_scenario

    from dashboard import models, services

    scenario = build_scenario(args.queues, args.nodes, per_node=args.per_node)
    started = time.perf_counter()
    snapshot = services.store_snapshot(
        partition_name=PARTITION,
        source_kind=models.ClusterSnapshot.Source.SCENARIO,
        captured_at=datetime.now(UTC),
        scenario=scenario,
    )
    print(
        f"partition {PARTITION}: snapshot {snapshot.pk}, {args.queues} queues, "
        f"{len(scenario['allocations'])} allocations, stored in "
        f"{time.perf_counter() - started:.1f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
