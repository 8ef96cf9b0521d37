"""Benchmark: planning a whole proposed config on a big cluster (the config rollout plan).

Builds the engine benchmark's synthetic packed cluster (``engine.bench``: by default
the ``large`` size, 1,000 queues, 5,000 nodes, 100,000 allocations), writes the
config in force for it as queues.yaml (quota preemption on, a 10m delay on every
department) and a proposed config that lowers ``--lowered`` maxes (default 100:
90 leaves and 10 teams, so leaves and parents fire on the same deadline), then
times :func:`dashboard.planning.plan_config` end to end (YAML parse and checks of
the proposed config, diff, timers, chained firings with victims) and prints the
median beside the 3 s target.

    .venv/bin/python benchmarks/plan_config.py [--size large] [--lowered 100] [--repeat 3]

Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from dashboard.importers.config import parse_config  # noqa: E402
from dashboard.importers.quantities import format_quantity  # noqa: E402
from dashboard.planning import in_force_from_spec, plan_config  # noqa: E402
from engine.bench import SIZES, generate  # noqa: E402
from engine.model import Cluster  # noqa: E402
from engine.queues import build_snapshot  # noqa: E402
from engine.scenario import parse_scenario  # noqa: E402

TARGET_SECONDS = 3.0
DELAY = "10m"


def _quantities(resource: Mapping[str, int]) -> str:
    return "{" + ", ".join(f"{t}: {format_quantity(q, t)}" for t, q in resource.items()) + "}"


def _queue_yaml(
    node: Mapping[str, Any], path: str, maxes: Mapping[str, Mapping[str, int]], indent: int
) -> list[str]:
    pad = " " * indent
    lines = [f"{pad}- name: {node['name']}"]
    resources = []
    if node.get("guaranteed"):
        resources.append(f"{pad}    guaranteed: {_quantities(node['guaranteed'])}")
    limit = maxes.get(path, node.get("max"))
    if limit:
        resources.append(f"{pad}    max: {_quantities(limit)}")
    if resources:
        lines.append(f"{pad}  resources:")
        lines.extend(resources)
    props = dict(node.get("properties") or {})
    if path.count(".") == 1:
        props["quota.preemption.delay"] = DELAY
    if props:
        lines.append(f"{pad}  properties:")
        lines.extend(f'{pad}    {k}: "{v}"' for k, v in props.items())
    children = node.get("children") or []
    if children:
        lines.append(f"{pad}  queues:")
        for c in children:
            lines.extend(_queue_yaml(c, f"{path}.{c['name']}", maxes, indent + 4))
    return lines


def config_yaml(tree: Mapping[str, Any], maxes: Mapping[str, Mapping[str, int]]) -> str:
    """queues.yaml for the synthetic tree, with *maxes* (path -> max) set."""
    lines = [
        "partitions:",
        "  - name: default",
        "    preemption:",
        "      quotapreemptionenabled: true",
        "    queues:",
        "      - name: root",
        "        queues:",
    ]
    for c in tree.get("children") or []:
        lines.extend(_queue_yaml(c, f"root.{c['name']}", maxes, 10))
    return "\n".join(lines) + "\n"


def synthetic(
    size: str = "large", lowered: int = 100, seed: int = 5
) -> tuple[str, str, Cluster, dict[str, object]]:
    """(config in force, proposed config, cluster, scenario) for the benchmark and its test.

    The proposed config lowers the vcore max of *lowered* queues (nine leaves for
    every team) to 70 % of their usage, never below their children's guarantees.
    """
    doc = generate(SIZES[size])
    cluster = parse_scenario(doc).cluster
    snap = build_snapshot(cluster)
    rng = random.Random(seed)
    teams = sorted(
        info.path
        for info in snap
        if info.depth == 2 and not info.is_leaf and info.usage.get("vcore", 0) > 0
    )
    leaves = [info.path for info in snap if info.is_leaf and info.usage.get("vcore", 0) > 0]
    n_teams = max(1, lowered // 10)
    chosen_teams = rng.sample(teams, min(n_teams, len(teams)))
    free_leaves = [p for p in leaves if not any(p.startswith(t + ".") for t in chosen_teams)]
    chosen_leaves = rng.sample(free_leaves, min(lowered - len(chosen_teams), len(free_leaves)))
    current: dict[str, dict[str, int]] = {}
    proposed: dict[str, dict[str, int]] = {}
    for path in [*chosen_teams, *chosen_leaves]:
        info = snap.queue(path)
        used = info.usage.get("vcore", 0)
        own = (info.guaranteed or {}).get("vcore", 0)
        kids = sum((snap.queue(c).guaranteed or {}).get("vcore", 0) for c in info.children)
        floor = own + kids
        current[path] = {"vcore": (used * 2 // 1000 + 1) * 1000}
        proposed[path] = {"vcore": max(used * 7 // 10 // 1000, floor // 1000 + 1) * 1000}
    tree = doc["queues"]
    assert isinstance(tree, dict)
    del doc["request"]
    return config_yaml(tree, current), config_yaml(tree, proposed), cluster, doc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="large", choices=sorted(SIZES))
    parser.add_argument("--lowered", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--database",
        action="store_true",
        help="also time the whole service (config in force and snapshot read from a "
        "throw-away SQLite database)",
    )
    args = parser.parse_args(argv)

    started = time.perf_counter()
    current_text, proposed_text, cluster, doc = synthetic(args.size, args.lowered)
    in_force = in_force_from_spec(parse_config(current_text).partition())
    print(
        f"cluster: {len(cluster.nodes)} nodes, {len(cluster.allocations)} allocations, "
        f"{len(in_force)} queues; proposed config {len(proposed_text) / 1024:.0f} KiB "
        f"(built in {time.perf_counter() - started:.1f} s)"
    )
    now = 1_700_000_000.0
    times: list[float] = []
    plan = None
    for _ in range(args.repeat):
        gc.collect()
        t = time.perf_counter()
        plan = plan_config(proposed_text, in_force=in_force, cluster=cluster, now=now)
        times.append(time.perf_counter() - t)
    assert plan is not None
    decreases = [c for c in plan.changes if c.is_decrease]
    totals = plan.totals()
    print(
        f"plan: {len(plan.changes)} changes ({len(decreases)} lowered maxes), "
        f"{len(plan.firings)} firings, {totals.allocations} victims in "
        f"{totals.applications} applications, {len(plan.warnings)} warning(s)"
    )
    median = statistics.median(times)
    print(
        f"plan_config  median {median:6.2f} s   min {min(times):6.2f} s   "
        f"({args.repeat} runs)   target {TARGET_SECONDS:.0f} s: "
        f"{'met' if median < TARGET_SECONDS else 'MISSED'}"
    )
    if args.database:
        _time_service(current_text, proposed_text, doc, now, args.repeat)
    return 0


def _time_service(
    current_text: str, proposed_text: str, doc: dict[str, object], now: float, repeat: int
) -> None:
    """The plan through the service: rows read from SQLite, then the same core."""
    workdir = Path(tempfile.mkdtemp(prefix="bench-plan-"))
    os.environ["DATABASE_URL"] = f"sqlite:///{workdir / 'bench.sqlite3'}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
    import django

    django.setup()
    from django.core.management import call_command

    from dashboard import models, services

    call_command("migrate", verbosity=0)
    at = datetime.fromtimestamp(now, UTC)
    t = time.perf_counter()
    services.import_config(current_text.encode(), now=at)
    services.store_snapshot(
        partition_name="default",
        source_kind=models.ClusterSnapshot.Source.SCENARIO,
        captured_at=at,
        scenario=doc,
        alert_warnings=False,
    )
    print(f"stored the config and the snapshot in {time.perf_counter() - t:.1f} s")
    from dashboard.services import engine_state_cache

    for label, cold in (("service plan, rows read", True), ("service plan, state cached", False)):
        times = []
        for _ in range(repeat):
            if cold:  # forget the process's engine states: read the snapshot's rows again
                engine_state_cache._states.clear()
            gc.collect()
            t = time.perf_counter()
            services.plan_proposed_config(proposed_text, now=at)
            times.append(time.perf_counter() - t)
        median = statistics.median(times)
        print(
            f"{label:<27} median {median:6.2f} s   min {min(times):6.2f} s   ({repeat} runs)   "
            f"target {TARGET_SECONDS:.0f} s: {'met' if median < TARGET_SECONDS else 'MISSED'}"
        )
    print(f"allocation rows in the snapshot: {models.AllocationSpan.objects.count()}")


if __name__ == "__main__":
    sys.exit(main())
